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

package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func stackApp(name string, dependsOn ...string) v1alpha1.StackApp {
	return v1alpha1.StackApp{Name: name, DependsOn: dependsOn, WebAppSpec: v1alpha1.WebAppSpec{Image: name + ":1"}}
}

// appStack is the e-commerce stack: a database and a cache, a backend bound
// to both, a frontend that depends on the backend, and shared configuration.
func appStack(mutate ...func(*v1alpha1.AppStackSpec)) *v1alpha1.AppStack {
	backend := stackApp("backend")
	backend.Database = &v1alpha1.WebAppBinding{Ref: "db"}
	backend.Cache = &v1alpha1.WebAppBinding{Ref: "cache"}
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop"},
		Spec: v1alpha1.AppStackSpec{
			Environment: v1alpha1.StackProduction,
			Databases:   []v1alpha1.StackDatabase{{Name: "db"}},
			Caches:      []v1alpha1.StackCache{{Name: "cache"}},
			Apps:        []v1alpha1.StackApp{backend, stackApp("frontend", "backend")},
			Config: &v1alpha1.StackConfig{Data: map[string]string{
				"HOST": "${application}.${namespace}.svc", "URL": "https://${HOST}/", "ENV": "${environment}",
			}},
		},
	}
	for _, m := range mutate {
		m(&s.Spec)
	}
	return s
}

func TestStackProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.AppStackSpec)
		want   []string
	}{
		{name: "valid"},
		{name: "valid without config", mutate: func(s *v1alpha1.AppStackSpec) { s.Config = nil }},
		{name: "two apps", mutate: func(s *v1alpha1.AppStackSpec) { s.Apps[0].DependsOn = []string{"frontend"} },
			want: []string{`spec.apps[backend].dependsOn: Invalid value: "frontend": dependency cycle: backend -> frontend -> backend`}},
		{name: "through a binding", mutate: func(s *v1alpha1.AppStackSpec) { s.Databases[0].DependsOn = []string{"frontend"} },
			want: []string{`spec.databases[db].dependsOn: Invalid value: "frontend": dependency cycle: db -> frontend -> backend -> db`}},
		{name: "closed by a binding", mutate: func(s *v1alpha1.AppStackSpec) {
			// a0 waits on the cycle without being in it; the cycle is
			// named from where the walk from a0 enters it, x.
			x := stackApp("x")
			x.Database = &v1alpha1.WebAppBinding{Ref: "d"}
			s.Databases = []v1alpha1.StackDatabase{{Name: "a0", DependsOn: []string{"x"}}, {Name: "d", DependsOn: []string{"y"}}}
			s.Apps = []v1alpha1.StackApp{x, stackApp("y", "x")}
			s.Caches, s.Config = nil, nil
		}, want: []string{`spec.apps[x].database.ref: Invalid value: "d": dependency cycle: x -> d -> y -> x`}},
		{name: "self", mutate: func(s *v1alpha1.AppStackSpec) { s.Caches[0].DependsOn = []string{"cache"} },
			want: []string{`spec.caches[cache].dependsOn: Invalid value: "cache": dependency cycle: cache -> cache`}},
		{name: "config without spec.config", mutate: func(s *v1alpha1.AppStackSpec) {
			s.Config = nil
			s.Apps[1].DependsOn = []string{"config"}
		}, want: []string{`spec.apps[frontend].dependsOn: Invalid value: "config": frontend depends on "config", which is not a component of the stack`}},
		{name: "unknown config reference", mutate: func(s *v1alpha1.AppStackSpec) { s.Config.Data["URL"] = "https://${HOSTT}/" },
			want: []string{`spec.config.data: Invalid value: key "URL", position 9: unknown reference ${HOSTT} (did you mean ${HOST}?)`}},
		{name: "config cycle", mutate: func(s *v1alpha1.AppStackSpec) { s.Config.Data["HOST"] = "${URL}" },
			want: []string{`spec.config.data: Invalid value: key "HOST", position 1: reference cycle HOST -> URL -> HOST`}},
		{name: "reference to a secret key", mutate: func(s *v1alpha1.AppStackSpec) {
			s.Config.SecretData = map[string]v1alpha1.SecretValueRef{"TOKEN": {SecretName: "api", Key: "token"}}
			s.Config.Data["AUTH"] = "Bearer ${TOKEN}"
		}, want: []string{`spec.config.data: Forbidden: key "AUTH", position 8: ${TOKEN} refers to a secretData key: secret values are never rendered into the ConfigMap, so data cannot refer to them`}},
		{name: "database parameters", mutate: func(s *v1alpha1.AppStackSpec) {
			s.Databases[0].Parameters = map[string]string{"work_mem": "lots", "max_connections": "0", "custom.setting": "x"}
		}, want: []string{
			`spec.databases[db].parameters.max_connections: Invalid value: 0 is out of range: between 1 and 262143`,
			`spec.databases[db].parameters.work_mem: Invalid value: "lots" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`,
		}},
		{name: "mariadb parameters", mutate: func(s *v1alpha1.AppStackSpec) {
			s.Databases[0].Engine = v1alpha1.EngineMariaDB
			s.Databases[0].Parameters = map[string]string{"slow_query_log": "yes", "work_mem": "lots"}
		}, want: []string{
			`spec.databases[db].parameters.slow_query_log: Invalid value: "yes" is not a boolean: use ON, OFF, 1 or 0`,
		}},
		{name: "graph and config", mutate: func(s *v1alpha1.AppStackSpec) {
			s.Apps[0].DependsOn = []string{"frontend"}
			s.Config.Data["1ST"] = "x"
		}, want: []string{
			`spec.apps[backend].dependsOn: Invalid value: "frontend": dependency cycle: backend -> frontend -> backend`,
			`spec.config.data: Invalid value: key "1ST", position 1: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mutate []func(*v1alpha1.AppStackSpec)
			if tc.mutate != nil {
				mutate = append(mutate, tc.mutate)
			}
			var got []string
			for _, e := range StackProblems(appStack(mutate...)) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestStackConfigEnvironment checks that spec.config is validated in the
// AppConfig environment the stack's maps to.
func TestStackConfigEnvironment(t *testing.T) {
	for _, env := range []v1alpha1.StackEnvironment{v1alpha1.StackDevelopment, v1alpha1.StackStaging, v1alpha1.StackProduction} {
		s := appStack(func(s *v1alpha1.AppStackSpec) { s.Environment = env })
		if errs := StackProblems(s); len(errs) != 0 {
			t.Errorf("%s: %v", env, errs)
		}
	}
}

func TestValidateStackUpdateAdmitsUnchangedInvalidSpec(t *testing.T) {
	ctx := context.Background()
	old := appStack(func(s *v1alpha1.AppStackSpec) { s.Apps[0].DependsOn = []string{"frontend"} })
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"team": "shop"}
	if _, err := appStackValidator.ValidateUpdate(ctx, old, labelled); err != nil {
		t.Errorf("a metadata-only update of a spec that predates the webhook was rejected: %v", err)
	}
	changed := labelled.DeepCopy()
	changed.Spec.Environment = v1alpha1.StackStaging
	if _, err := appStackValidator.ValidateUpdate(ctx, old, changed); err == nil {
		t.Error("a change to an invalid spec was admitted")
	}
	if _, err := appStackValidator.ValidateCreate(ctx, old); err == nil {
		t.Error("an invalid stack was admitted on create")
	}
	if _, err := appStackValidator.ValidateDelete(ctx, old); err != nil {
		t.Errorf("a deletion was rejected: %v", err)
	}
}
