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
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

// layoutSpec reads a stack's components from lines "d NAME DEP...",
// "c NAME DEP..." and "a NAME DEP...", a database, a cache and an app with
// their dependsOn; an app's "db=REF" and "cache=REF" are its bindings, and
// a line "config" adds spec.config. Names are kept as written, but a
// component whose name is empty, "config" or taken is left out, as the
// schema refuses it; so are components beyond the schema's maximums.
func layoutSpec(layout string) *v1alpha1.AppStackSpec {
	spec := &v1alpha1.AppStackSpec{Environment: v1alpha1.StackDevelopment}
	taken := map[string]bool{}
	for _, line := range strings.Split(layout, "\n") {
		f := strings.Fields(line)
		if len(f) == 1 && f[0] == "config" {
			spec.Config = &v1alpha1.StackConfig{Data: map[string]string{"LOG_LEVEL": "info"}}
			continue
		}
		if len(f) < 2 || taken[f[1]] || f[1] == appstack.ConfigComponent {
			continue
		}
		name, deps := f[1], f[2:]
		switch f[0] {
		case "d":
			if len(spec.Databases) == 8 {
				continue
			}
			spec.Databases = append(spec.Databases, v1alpha1.StackDatabase{Name: name, DependsOn: deps})
		case "c":
			if len(spec.Caches) == 8 {
				continue
			}
			spec.Caches = append(spec.Caches, v1alpha1.StackCache{Name: name, DependsOn: deps})
		case "a":
			if len(spec.Apps) == 32 {
				continue
			}
			a := v1alpha1.StackApp{Name: name, WebAppSpec: v1alpha1.WebAppSpec{Image: name + ":1"}}
			for _, d := range deps {
				switch {
				case strings.HasPrefix(d, "db="):
					a.Database = &v1alpha1.WebAppBinding{Ref: strings.TrimPrefix(d, "db=")}
				case strings.HasPrefix(d, "cache="):
					a.Cache = &v1alpha1.WebAppBinding{Ref: strings.TrimPrefix(d, "cache=")}
				default:
					a.DependsOn = append(a.DependsOn, d)
				}
			}
			spec.Apps = append(spec.Apps, a)
		default:
			continue
		}
		taken[name] = true
	}
	return spec
}

// model is a spec's graph worked out independently of NewGraph: each
// component's kind, and the components it refers to, explicitly and
// implicitly.
type model struct {
	kinds map[string]string
	refs  map[string][]string
}

func modelOf(spec *v1alpha1.AppStackSpec) model {
	m := model{kinds: map[string]string{}, refs: map[string][]string{}}
	for _, d := range spec.Databases {
		m.kinds[d.Name], m.refs[d.Name] = appstack.KindDatabase, d.DependsOn
	}
	for _, c := range spec.Caches {
		m.kinds[c.Name], m.refs[c.Name] = appstack.KindCache, c.DependsOn
	}
	if spec.Config != nil {
		m.kinds[appstack.ConfigComponent] = appstack.KindAppConfig
	}
	for _, a := range spec.Apps {
		refs := slices.Clone(a.DependsOn)
		if a.Database != nil {
			refs = append(refs, a.Database.Ref)
		}
		if a.Cache != nil {
			refs = append(refs, a.Cache.Ref)
		}
		if spec.Config != nil {
			refs = append(refs, appstack.ConfigComponent)
		}
		m.kinds[a.Name], m.refs[a.Name] = appstack.KindWebApp, refs
	}
	return m
}

// unknown reports whether a component refers to one the stack lacks.
func (m model) unknown() bool {
	for _, refs := range m.refs {
		for _, r := range refs {
			if _, ok := m.kinds[r]; !ok {
				return true
			}
		}
	}
	return false
}

// cyclic reports whether the references between known components, a
// component referring to itself included, form a cycle (depth-first
// search, gray nodes on the stack).
func (m model) cyclic() bool {
	const (
		white = iota
		gray
		black
	)
	color := map[string]int{}
	var visit func(string) bool
	visit = func(n string) bool {
		color[n] = gray
		for _, r := range m.refs[n] {
			if _, ok := m.kinds[r]; !ok {
				continue
			}
			if color[r] == gray || (color[r] == white && visit(r)) {
				return true
			}
		}
		color[n] = black
		return false
	}
	for _, n := range slices.Sorted(maps.Keys(m.kinds)) {
		if color[n] == white && visit(n) {
			return true
		}
	}
	return false
}

// FuzzGraph checks NewGraph against the model: it fails exactly when a
// reference is unknown or the references form a cycle, names a real
// problem, and otherwise orders every component after those it needs.
func FuzzGraph(f *testing.F) {
	f.Add("d orders\nc sessions\na backend db=orders cache=sessions\na frontend backend\nconfig")
	f.Add("a a b\na b c\na c")
	f.Add("a a b\na b a")
	f.Add("a api api")
	f.Add("d db backend\nc cache\na backend db=db cache=cache\nconfig")
	f.Add("c c x\na x y\na y x\na z")
	f.Add("a web config")
	f.Add("d db nope\nc cache cache\na a missing\na b b")
	f.Add("d d1\nd d2\nd d3\nc c1\nc c2\na a1\na a2 d3\na a3 c2\na a4\na a5 a1 a4\nconfig")
	f.Add("a x db=y\nd y")
	f.Fuzz(func(t *testing.T, layout string) {
		spec := layoutSpec(layout)
		before := spec.DeepCopy()
		g, err := appstack.NewGraph(spec)
		if !equality.Semantic.DeepEqual(before, spec) {
			t.Fatal("NewGraph changed the spec")
		}
		m := modelOf(spec)
		unknown, cyclic := m.unknown(), m.cyclic()
		if (err != nil) != (unknown || cyclic) {
			t.Fatalf("NewGraph returned %v; unknown reference %v, cycle %v", err, unknown, cyclic)
		}
		g2, err2 := appstack.NewGraph(spec)
		if fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("NewGraph is not deterministic: %v, then %v", err, err2)
		}
		if err != nil {
			checkGraphError(t, m, err)
			return
		}
		if !slices.Equal(g.Order(), g2.Order()) {
			t.Fatalf("order %v, then %v", g.Order(), g2.Order())
		}
		checkOrder(t, m, g)
	})
}

// checkGraphError checks that err names a real problem of m.
func checkGraphError(t *testing.T, m model, err error) {
	t.Helper()
	var cycle *appstack.CycleError
	var unknown *appstack.UnknownError
	switch {
	case errors.As(err, &cycle):
		c := cycle.Cycle
		if len(c) < 2 || c[0] != c[len(c)-1] {
			t.Fatalf("cycle %v does not end where it starts", c)
		}
		for i := 0; i+1 < len(c); i++ {
			if _, ok := m.kinds[c[i+1]]; !ok || !slices.Contains(m.refs[c[i]], c[i+1]) {
				t.Fatalf("cycle %v: %s does not depend on %s", c, c[i], c[i+1])
			}
		}
	case errors.As(err, &unknown):
		if _, ok := m.kinds[unknown.Name]; ok {
			t.Fatalf("%v: %q is a component", err, unknown.Name)
		}
		if !slices.Contains(m.refs[unknown.Component], unknown.Name) {
			t.Fatalf("%v: %s does not refer to %q", err, unknown.Component, unknown.Name)
		}
		if want := "[" + unknown.Component + "]"; !strings.Contains(unknown.Field, want) {
			t.Fatalf("%v: field %q does not name %s", err, unknown.Field, want)
		}
	default:
		t.Fatalf("error %v is neither a *CycleError nor an *UnknownError", err)
	}
}

// checkOrder checks that g's order lists every component of m once, each
// after the components it needs, and that needs and dependents are m's.
func checkOrder(t *testing.T, m model, g *appstack.Graph) {
	t.Helper()
	order := g.Order()
	if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(maps.Keys(m.kinds))) {
		t.Fatalf("order %v is not every component once", order)
	}
	at := map[string]int{}
	for i, n := range order {
		at[n] = i
	}
	for name, kind := range m.kinds {
		n := g.Node(name)
		if n == nil || n.Kind != kind {
			t.Fatalf("node %s: %+v, want kind %s", name, n, kind)
		}
		want := slices.Compact(slices.Sorted(slices.Values(m.refs[name])))
		if !slices.Equal(n.Needs, want) {
			t.Fatalf("%s needs %v, want %v", name, n.Needs, want)
		}
		for _, need := range n.Needs {
			if at[need] >= at[name] {
				t.Fatalf("order %v: %s comes before %s, which it needs", order, name, need)
			}
		}
		var dependents []string
		for other, refs := range m.refs {
			if slices.Contains(refs, name) {
				dependents = append(dependents, other)
			}
		}
		slices.Sort(dependents)
		if got := g.Dependents(name); !slices.Equal(got, dependents) {
			t.Fatalf("Dependents(%s) = %v, want %v", name, got, dependents)
		}
	}
}

// fuzzStack is a valid stack of the layout's components, with optional
// settings chosen by k: the environment, each database's engine, version,
// replicas, volume and backups, each app's replicas or autoscaling and
// configuration keys, and the stack's backup destination and monitoring.
func fuzzStack(layout string, k fuzzcheck.Knobs) *v1alpha1.AppStack {
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop", UID: "uid-shop"},
		Spec:       *layoutSpec(layout),
	}
	s.Spec.Environment = []v1alpha1.StackEnvironment{
		v1alpha1.StackDevelopment, v1alpha1.StackStaging, v1alpha1.StackProduction,
	}[k.Next()%3]
	if k.Next()%2 == 1 {
		s.Spec.Backup = &v1alpha1.StackBackup{Destination: v1alpha1.BackupDestination{
			Type: v1alpha1.DestinationS3, Bucket: "backups", Prefix: []string{"", "prod"}[k.Next()%2]}}
	}
	if b := k.Next(); b%3 > 0 {
		s.Spec.Monitoring = &v1alpha1.StackMonitoring{Enabled: b%3 == 1, Path: []string{"", "/stats"}[b%2]}
	}
	for i := range s.Spec.Databases {
		d := &s.Spec.Databases[i]
		d.Engine = []v1alpha1.DatabaseEngine{"", v1alpha1.EnginePostgres, v1alpha1.EngineMySQL, v1alpha1.EngineMariaDB}[k.Next()%4]
		if k.Next()%2 == 1 {
			d.Version = map[v1alpha1.DatabaseEngine]string{"": "16", v1alpha1.EnginePostgres: "15.4",
				v1alpha1.EngineMySQL: "8.0", v1alpha1.EngineMariaDB: "10.11"}[d.Engine]
		}
		if r := k.Next() % 10; r > 0 {
			d.Replicas = new(int32(r))
		}
		if k.Next()%2 == 1 {
			d.StorageSize = new(resource.MustParse("3Gi"))
		}
		if b := k.Next(); b%4 > 0 {
			d.Backups = &v1alpha1.StackDatabaseBackups{Schedule: []string{"", "*/15 * * * *"}[b%2]}
			if b%4 != 3 {
				d.Backups.Enabled = new(b%4 == 1)
			}
			if b&4 != 0 {
				d.Backups.Retention = &v1alpha1.BackupRetention{KeepLast: new(int32(b >> 3))}
			}
		}
	}
	for i := range s.Spec.Apps {
		a := &s.Spec.Apps[i]
		switch b := k.Next(); b % 3 {
		case 1:
			a.Replicas = new(int32(b >> 2))
		case 2:
			low := int32(b>>2)%8 + 1
			a.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: low, MaxReplicas: low + 2, TargetCPUUtilizationPercentage: 80}
		}
		if k.Next()%2 == 1 {
			a.ConfigKeys = []string{"LOG_LEVEL"}
		}
		if k.Next()%2 == 1 {
			a.Expose = &v1alpha1.StackExpose{Path: "/" + a.Name}
		}
	}
	return s
}

// FuzzRender checks the rendering of a stack's components from its
// profile: deterministic, leaving the stack as it is, with a spec for every
// component, the component's own settings winning over the profile, and
// what the rendered objects' schemas ask for (a version, a volume size, a
// WebApp that does not set both replicas and autoscaling).
func FuzzRender(f *testing.F) {
	f.Add("d orders\nc sessions\na backend db=orders cache=sessions\na frontend backend\nconfig", []byte{2, 1, 0, 1, 1, 3, 1, 1, 0, 1, 1, 2, 0, 1})
	f.Add("d db\na web db=db", []byte{0, 0, 0, 2, 0, 0, 0, 0, 5, 1})
	f.Add("d a\nd b\nd c\na x db=a\na y db=b\nconfig", []byte{1, 1, 1, 0, 3, 1, 5, 1, 6, 2, 1, 0, 9, 0, 7, 2, 0, 1, 13, 1, 0, 255, 1, 1})
	f.Add("c cache\na api cache=cache", []byte{255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, layout string, settings []byte) {
		stack := fuzzStack(layout, fuzzcheck.Knobs(settings))
		if _, err := appstack.NewGraph(&stack.Spec); err != nil {
			t.Skip("refused at admission:", err)
		}
		before := stack.DeepCopy()
		d := appstack.Render(stack)
		if !equality.Semantic.DeepEqual(before, stack) {
			t.Fatal("Render changed the stack")
		}
		if again := appstack.Render(stack); !equality.Semantic.DeepEqual(d, again) {
			t.Fatalf("Render is not deterministic:\n%+v\n%+v", d, again)
		}
		p := appstack.Profiles[stack.Spec.Environment]
		var components []string
		for _, db := range stack.Spec.Databases {
			components = append(components, db.Name)
			checkDatabase(t, stack, db, d.Databases[db.Name], p)
		}
		for _, c := range stack.Spec.Caches {
			if !equality.Semantic.DeepEqual(d.Caches[c.Name], c.CacheSpec) {
				t.Fatalf("cache %s: %+v, want its own spec %+v", c.Name, d.Caches[c.Name], c.CacheSpec)
			}
		}
		for _, a := range stack.Spec.Apps {
			components = append(components, a.Name)
			checkApp(t, stack, a, d.Apps[a.Name], p)
		}
		if len(d.Databases) != len(stack.Spec.Databases) || len(d.Caches) != len(stack.Spec.Caches) || len(d.Apps) != len(stack.Spec.Apps) {
			t.Fatalf("rendered %d databases, %d caches, %d apps", len(d.Databases), len(d.Caches), len(d.Apps))
		}
		if (d.Config != nil) != (stack.Spec.Config != nil) {
			t.Fatalf("config %+v for spec.config %+v", d.Config, stack.Spec.Config)
		}
		var effective []string
		for _, e := range d.Effective {
			effective = append(effective, e.Component)
			for _, s := range e.Settings {
				if !slices.Contains([]string{appstack.SourceSpec, appstack.SourceProfile, appstack.SourceDefault}, s.Source) || s.Value == "" {
					t.Fatalf("%s: setting %+v", e.Component, s)
				}
			}
		}
		if !slices.Equal(effective, components) {
			t.Fatalf("effective settings of %v, want the databases and apps in spec order %v", effective, components)
		}
		for _, n := range components {
			if errs := validation.IsDNS1123Label(appstack.ObjectName(stack, n)); len(errs) > 0 && validation.IsDNS1123Label(n) == nil {
				t.Fatalf("object name of %s: %v", n, errs)
			}
		}
	})
}

func checkDatabase(t *testing.T, stack *v1alpha1.AppStack, db v1alpha1.StackDatabase, spec v1alpha1.DatabaseSpec, p appstack.Profile) {
	t.Helper()
	wantReplicas := p.DatabaseReplicas
	if db.Replicas != nil {
		wantReplicas = *db.Replicas
	}
	if spec.Replicas == nil || *spec.Replicas != wantReplicas {
		t.Fatalf("database %s: replicas %v, want %d", db.Name, spec.Replicas, wantReplicas)
	}
	if spec.Engine == "" || spec.Version == "" || spec.Storage.Size == nil || spec.Storage.Size.Sign() <= 0 {
		t.Fatalf("database %s: engine %q, version %q, size %v", db.Name, spec.Engine, spec.Version, spec.Storage.Size)
	}
	if db.Version != "" && spec.Version != db.Version {
		t.Fatalf("database %s: version %q, want its own %q", db.Name, spec.Version, db.Version)
	}
	if db.StorageSize != nil && spec.Storage.Size.Cmp(*db.StorageSize) != 0 {
		t.Fatalf("database %s: size %v, want its own %v", db.Name, spec.Storage.Size, db.StorageSize)
	}
	on := p.Backups
	if db.Backups != nil && db.Backups.Enabled != nil {
		on = *db.Backups.Enabled
	}
	if want := on && stack.Spec.Backup != nil; (spec.Backup != nil) != want {
		t.Fatalf("database %s: backup %+v, want one: %v", db.Name, spec.Backup, want)
	}
	if b := spec.Backup; b != nil {
		if b.Schedule == "" || b.Retention == nil || b.Destination.Prefix == "" {
			t.Fatalf("database %s: backup %+v", db.Name, b)
		}
		if db.Backups != nil && db.Backups.Schedule != "" && b.Schedule != db.Backups.Schedule {
			t.Fatalf("database %s: schedule %q, want its own %q", db.Name, b.Schedule, db.Backups.Schedule)
		}
	}
}

func checkApp(t *testing.T, stack *v1alpha1.AppStack, a v1alpha1.StackApp, spec v1alpha1.WebAppSpec, p appstack.Profile) {
	t.Helper()
	if spec.Autoscaling != nil && spec.Replicas != nil {
		t.Fatalf("app %s: replicas %d with autoscaling, which the WebApp schema refuses", a.Name, *spec.Replicas)
	}
	switch {
	case a.Autoscaling != nil:
		if !equality.Semantic.DeepEqual(spec.Autoscaling, a.Autoscaling) {
			t.Fatalf("app %s: autoscaling %+v, want its own", a.Name, spec.Autoscaling)
		}
	case a.Replicas != nil:
		if spec.Replicas == nil || *spec.Replicas != *a.Replicas {
			t.Fatalf("app %s: replicas %v, want its own %d", a.Name, spec.Replicas, *a.Replicas)
		}
	case p.AppReplicas > 0:
		if spec.Replicas == nil || *spec.Replicas != p.AppReplicas {
			t.Fatalf("app %s: replicas %v, want the profile's %d", a.Name, spec.Replicas, p.AppReplicas)
		}
	}
	if a.Database != nil && spec.Database.Ref != appstack.ObjectName(stack, a.Database.Ref) {
		t.Fatalf("app %s: database %q", a.Name, spec.Database.Ref)
	}
	if a.Cache != nil && spec.Cache.Ref != appstack.ObjectName(stack, a.Cache.Ref) {
		t.Fatalf("app %s: cache %q", a.Name, spec.Cache.Ref)
	}
	config := appstack.ObjectName(stack, appstack.ConfigComponent)
	uses := 0
	for _, u := range spec.Config {
		if u.AppConfig == config {
			uses++
		}
	}
	if want := map[bool]int{true: 1}[stack.Spec.Config != nil]; uses != want {
		t.Fatalf("app %s uses %s %d times, want %d", a.Name, config, uses, want)
	}
}
