/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package appstack_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// shop is the e-commerce stack: a database and a cache, a backend bound to
// both, a frontend that depends on the backend, and shared configuration.
func shop() *v1alpha1.AppStackSpec {
	return &v1alpha1.AppStackSpec{
		Environment: v1alpha1.StackProduction,
		Databases:   []v1alpha1.StackDatabase{{Name: "db"}},
		Caches:      []v1alpha1.StackCache{{Name: "cache"}},
		Apps: []v1alpha1.StackApp{
			// The frontend comes first in the spec: the order must not
			// follow the spec.
			{Name: "frontend", DependsOn: []string{"backend"}, WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/frontend:1"}},
			{Name: "backend", WebAppSpec: v1alpha1.WebAppSpec{
				Image:    "shop/backend:1",
				Database: &v1alpha1.WebAppBinding{Ref: "db"},
				Cache:    &v1alpha1.WebAppBinding{Ref: "cache"},
			}},
		},
		Config: &v1alpha1.StackConfig{Data: map[string]string{"LOG_LEVEL": "info"}},
	}
}

func app(name string, dependsOn ...string) v1alpha1.StackApp {
	return v1alpha1.StackApp{Name: name, DependsOn: dependsOn, WebAppSpec: v1alpha1.WebAppSpec{Image: name + ":1"}}
}

func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *v1alpha1.AppStackSpec
		want []string
	}{
		{name: "e-commerce stack", spec: shop(),
			want: []string{"db", "cache", "config", "backend", "frontend"}},
		{name: "independent components by kind, then name", spec: &v1alpha1.AppStackSpec{
			Apps:      []v1alpha1.StackApp{app("web"), app("api"), app("admin")},
			Caches:    []v1alpha1.StackCache{{Name: "sessions"}, {Name: "pages"}},
			Databases: []v1alpha1.StackDatabase{{Name: "orders"}, {Name: "accounts"}},
			Config:    &v1alpha1.StackConfig{},
		}, want: []string{"accounts", "orders", "pages", "sessions", "config", "admin", "api", "web"}},
		{name: "a dependency wins over kind and name", spec: &v1alpha1.AppStackSpec{
			Databases: []v1alpha1.StackDatabase{{Name: "a", DependsOn: []string{"z"}}},
			Apps:      []v1alpha1.StackApp{app("z")},
		}, want: []string{"z", "a"}},
		{name: "chain against the name order", spec: &v1alpha1.AppStackSpec{
			Apps: []v1alpha1.StackApp{app("a", "b"), app("b", "c"), app("c")},
		}, want: []string{"c", "b", "a"}},
		{name: "empty", spec: &v1alpha1.AppStackSpec{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := appstack.NewGraph(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Order(); !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOrderIsDeterministic builds the graph many times: map iteration order
// is random, the order must not be.
func TestOrderIsDeterministic(t *testing.T) {
	spec := &v1alpha1.AppStackSpec{
		Databases: []v1alpha1.StackDatabase{{Name: "d1"}, {Name: "d2"}, {Name: "d3"}},
		Caches:    []v1alpha1.StackCache{{Name: "c1"}, {Name: "c2"}},
		Apps:      []v1alpha1.StackApp{app("a1"), app("a2", "d3"), app("a3", "c2"), app("a4"), app("a5", "a1", "a4")},
		Config:    &v1alpha1.StackConfig{},
	}
	want := []string{"d1", "d2", "d3", "c1", "c2", "config", "a1", "a2", "a3", "a4", "a5"}
	for range 200 {
		g, err := appstack.NewGraph(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Order(); !slices.Equal(got, want) {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestNeeds(t *testing.T) {
	g, err := appstack.NewGraph(shop())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind string
		needs      []string
	}{
		{"db", appstack.KindDatabase, nil},
		{"cache", appstack.KindCache, nil},
		{"config", appstack.KindAppConfig, nil},
		// Implied by the bindings and the configuration.
		{"backend", appstack.KindWebApp, []string{"cache", "config", "db"}},
		{"frontend", appstack.KindWebApp, []string{"backend", "config"}},
	} {
		n := g.Node(tc.name)
		if n == nil {
			t.Errorf("no node %s", tc.name)
			continue
		}
		if n.Kind != tc.kind || !slices.Equal(n.Needs, tc.needs) {
			t.Errorf("%s: kind %s needs %v, want kind %s needs %v", tc.name, n.Kind, n.Needs, tc.kind, tc.needs)
		}
	}
	if n := g.Node("missing"); n != nil {
		t.Errorf("Node(missing) = %+v, want nil", n)
	}

	// Without spec.config there is no config component and no edge to it.
	spec := shop()
	spec.Config = nil
	g, err = appstack.NewGraph(spec)
	if err != nil {
		t.Fatal(err)
	}
	if g.Node(appstack.ConfigComponent) != nil {
		t.Error("a config component without spec.config")
	}
	if got := g.Node("frontend").Needs; !slices.Equal(got, []string{"backend"}) {
		t.Errorf("frontend needs %v, want [backend]", got)
	}
	if got := g.Order(); !slices.Equal(got, []string{"db", "cache", "backend", "frontend"}) {
		t.Errorf("order %v", got)
	}
}

func TestNeedsAreDeduplicated(t *testing.T) {
	spec := shop()
	// backend already depends on db through its binding.
	spec.Apps[1].DependsOn = []string{"db", "cache"}
	g, err := appstack.NewGraph(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Node("backend").Needs; !slices.Equal(got, []string{"cache", "config", "db"}) {
		t.Errorf("backend needs %v", got)
	}
}

func TestDependents(t *testing.T) {
	g, err := appstack.NewGraph(shop())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"db":       {"backend"},
		"cache":    {"backend"},
		"config":   {"backend", "frontend"},
		"backend":  {"frontend"},
		"frontend": nil,
		"missing":  nil,
	} {
		if got := g.Dependents(name); !slices.Equal(got, want) {
			t.Errorf("Dependents(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestCycles(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *v1alpha1.AppStackSpec
		want string
	}{
		{name: "two apps", spec: &v1alpha1.AppStackSpec{
			Apps: []v1alpha1.StackApp{app("frontend", "backend"), app("backend", "frontend")},
		}, want: "dependency cycle: backend -> frontend -> backend"},
		{name: "three apps", spec: &v1alpha1.AppStackSpec{
			Apps: []v1alpha1.StackApp{app("a", "b"), app("b", "c"), app("c", "a")},
		}, want: "dependency cycle: a -> b -> c -> a"},
		{name: "three apps, the least depending the other way", spec: &v1alpha1.AppStackSpec{
			Apps: []v1alpha1.StackApp{app("a", "c"), app("b", "a"), app("c", "b")},
		}, want: "dependency cycle: a -> c -> b -> a"},
		{name: "self", spec: &v1alpha1.AppStackSpec{
			Apps: []v1alpha1.StackApp{app("api", "api")},
		}, want: "dependency cycle: api -> api"},
		{name: "through a binding", spec: func() *v1alpha1.AppStackSpec {
			s := shop()
			s.Databases[0].DependsOn = []string{"backend"}
			return s
		}(), want: "dependency cycle: db -> backend -> db"},
		{name: "behind a component that is not in it", spec: &v1alpha1.AppStackSpec{
			Caches: []v1alpha1.StackCache{{Name: "c", DependsOn: []string{"x"}}},
			Apps:   []v1alpha1.StackApp{app("x", "y"), app("y", "x"), app("z")},
		}, want: "dependency cycle: x -> y -> x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 {
				g, err := appstack.NewGraph(tc.spec)
				var cycle *appstack.CycleError
				if !errors.As(err, &cycle) {
					t.Fatalf("got %v, %v, want a *CycleError", g, err)
				}
				if err.Error() != tc.want {
					t.Fatalf("got %q, want %q", err, tc.want)
				}
				if cycle.Cycle[0] != cycle.Cycle[len(cycle.Cycle)-1] {
					t.Errorf("cycle %v does not end where it starts", cycle.Cycle)
				}
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      *v1alpha1.AppStackSpec
		wantField string
		wantName  string
	}{
		{name: "app dependsOn", spec: &v1alpha1.AppStackSpec{Apps: []v1alpha1.StackApp{app("frontend", "bakend")}},
			wantField: "apps[frontend].dependsOn", wantName: "bakend"},
		{name: "database dependsOn", spec: &v1alpha1.AppStackSpec{Databases: []v1alpha1.StackDatabase{{Name: "db", DependsOn: []string{"vault"}}}},
			wantField: "databases[db].dependsOn", wantName: "vault"},
		{name: "cache dependsOn", spec: &v1alpha1.AppStackSpec{Caches: []v1alpha1.StackCache{{Name: "c", DependsOn: []string{"vault"}}}},
			wantField: "caches[c].dependsOn", wantName: "vault"},
		{name: "database binding", spec: func() *v1alpha1.AppStackSpec {
			s := shop()
			s.Apps[1].Database.Ref = "orders"
			return s
		}(), wantField: "apps[backend].database.ref", wantName: "orders"},
		{name: "cache binding", spec: func() *v1alpha1.AppStackSpec {
			s := shop()
			s.Apps[1].Cache.Ref = "sessions"
			return s
		}(), wantField: "apps[backend].cache.ref", wantName: "sessions"},
		{name: "config without spec.config", spec: &v1alpha1.AppStackSpec{Apps: []v1alpha1.StackApp{app("web", "config")}},
			wantField: "apps[web].dependsOn", wantName: "config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := appstack.NewGraph(tc.spec)
			var unknown *appstack.UnknownError
			if !errors.As(err, &unknown) {
				t.Fatalf("got %v, want an *UnknownError", err)
			}
			if unknown.Field != tc.wantField || unknown.Name != tc.wantName {
				t.Errorf("field %q name %q, want %q %q", unknown.Field, unknown.Name, tc.wantField, tc.wantName)
			}
			if !strings.HasPrefix(err.Error(), tc.wantField+": ") || !strings.Contains(err.Error(), `"`+tc.wantName+`"`) {
				t.Errorf("message %q", err)
			}
		})
	}
}

// TestErrorIsDeterministic checks that a spec with several problems reports
// the same one every time, so that admission answers do not change from one
// try to the next.
func TestErrorIsDeterministic(t *testing.T) {
	spec := &v1alpha1.AppStackSpec{
		Databases: []v1alpha1.StackDatabase{{Name: "db", DependsOn: []string{"nope"}}},
		Caches:    []v1alpha1.StackCache{{Name: "cache", DependsOn: []string{"cache"}}},
		Apps:      []v1alpha1.StackApp{app("a", "missing"), app("b", "b"), app("c", "gone")},
	}
	_, first := appstack.NewGraph(spec)
	if first == nil {
		t.Fatal("no error")
	}
	for range 200 {
		if _, err := appstack.NewGraph(spec); err.Error() != first.Error() {
			t.Fatalf("got %q, then %q", first, err)
		}
	}
	if want := `databases[db].dependsOn: db depends on "nope", which is not a component of the stack`; first.Error() != want {
		t.Errorf("got %q, want the first problem in spec order, %q", first, want)
	}
}
