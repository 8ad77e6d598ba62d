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

package argocd

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// fixtureName is <kind>-<health>-<case>.yaml.
var fixtureName = regexp.MustCompile(`^([a-z]+)-(healthy|progressing|degraded|suspended)-([a-z0-9-]+)\.yaml$`)

// fixture is an object of testdata and the health its file name expects.
type fixture struct {
	file, kind, health string
	obj                *unstructured.Unstructured
}

// fixtures reads testdata.
func fixtures(t *testing.T) []fixture {
	t.Helper()
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata")
	}
	var all []fixture
	for _, file := range files {
		name := filepath.Base(file)
		m := fixtureName.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("%s: the name is not <kind>-<healthy|progressing|degraded|suspended>-<case>.yaml", name)
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		obj := &unstructured.Unstructured{}
		// As the API server's JSON reaches Argo CD: integers as int64.
		if err := obj.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if obj.GetAPIVersion() != "steward.dev/v1alpha1" || strings.ToLower(obj.GetKind()) != m[1] || !slices.Contains(kinds, obj.GetKind()) {
			t.Fatalf("%s holds a %s %s, not a steward.dev/v1alpha1 object of the kind its name says", name, obj.GetAPIVersion(), obj.GetKind())
		}
		all = append(all, fixture{file: name, kind: obj.GetKind(), health: strings.ToUpper(m[2][:1]) + m[2][1:], obj: obj})
	}
	return all
}

// TestHealth runs the script of each fixture's kind, as the chart puts it
// into argocd-cm, and expects the health its file name says.
func TestHealth(t *testing.T) {
	scripts := scripts(t)
	for _, f := range fixtures(t) {
		t.Run(strings.TrimSuffix(f.file, ".yaml"), func(t *testing.T) {
			script, ok := scripts[healthKey(f.kind)]
			if !ok {
				t.Fatalf("argocd-cm has no %s", healthKey(f.kind))
			}
			got, err := evaluate(script, f.obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != f.health {
				t.Errorf("health = %s (%q), want %s", got.Status, got.Message, f.health)
			}
			if got.Message == "" {
				t.Errorf("health %s has no message", got.Status)
			}
		})
	}
}

// TestFixturesCover fails when testdata lacks a case for a kind: Healthy;
// Progressing as a new object, with a generation Steward has not observed
// yet (except Restores, whose spec cannot change) and while Reconciling;
// Degraded through Stalled; a suspended Backup.
func TestFixturesCover(t *testing.T) {
	type kindCases struct {
		healthy, unobserved, behind, reconciling, stalled, suspended bool
	}
	cases := map[string]*kindCases{}
	for _, kind := range kinds {
		cases[kind] = &kindCases{}
	}
	for _, f := range fixtures(t) {
		c := cases[f.kind]
		observed, hasObserved, _ := unstructured.NestedInt64(f.obj.Object, "status", "observedGeneration")
		switch f.health {
		case "Healthy":
			c.healthy = true
		case "Progressing":
			switch {
			case !hasObserved:
				c.unobserved = true
			case observed < f.obj.GetGeneration():
				c.behind = true
			case conditionTrue(f.obj, "Reconciling"):
				c.reconciling = true
			}
		case "Degraded":
			c.stalled = c.stalled || conditionTrue(f.obj, "Stalled")
		case "Suspended":
			c.suspended = true
		}
	}
	for _, kind := range kinds {
		c := cases[kind]
		want := kindCases{healthy: true, unobserved: true, behind: kind != "Restore", reconciling: true, stalled: true, suspended: kind == "Backup"}
		if *c != want {
			t.Errorf("%s: the fixtures cover %+v, want %+v", kind, *c, want)
		}
	}
}

// conditionTrue reports whether the object's condition of type t is True.
func conditionTrue(obj *unstructured.Unstructured, t string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == t {
			return c["status"] == "True"
		}
	}
	return false
}

// TestMessages checks the order of the rules and what each says, on
// objects cut down to what the script reads.
func TestMessages(t *testing.T) {
	script := scripts(t)[healthKey("WebApp")]
	cond := func(t, status, reason, message string) map[string]any {
		return map[string]any{"type": t, "status": status, "reason": reason, "message": message}
	}
	object := func(kind string, generation int64, spec, status map[string]any) map[string]any {
		o := map[string]any{
			"apiVersion": "steward.dev/v1alpha1", "kind": kind,
			"metadata": map[string]any{"name": "x", "namespace": "y", "generation": generation},
		}
		if spec != nil {
			o["spec"] = spec
		}
		if status != nil {
			o["status"] = status
		}
		return o
	}
	status := func(observed int64, conds ...any) map[string]any {
		return map[string]any{"observedGeneration": observed, "conditions": conds}
	}
	readyTrue := cond("Ready", "True", "Available", "2/2 pods ready")
	stalled := cond("Stalled", "True", "CredentialsNotFound", "Secret orders-admin does not exist")
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want health
	}{
		{"no status", object("Database", 1, nil, nil),
			health{"Progressing", "Waiting for Steward to observe generation 1"}},
		{"status without observedGeneration", object("Cache", 2, nil, map[string]any{"phase": "Pending"}),
			health{"Progressing", "Waiting for Steward to observe generation 2"}},
		{"generation not observed yet, though Ready and Stalled", object("WebApp", 12, nil, status(11, readyTrue, stalled)),
			health{"Progressing", "Waiting for Steward to observe generation 12"}},
		{"Stalled before Ready", object("Database", 3, nil, status(3, readyTrue, stalled)),
			health{"Degraded", "CredentialsNotFound: Secret orders-admin does not exist"}},
		{"Stalled without a message", object("AppStack", 3, nil, status(3, cond("Stalled", "True", "InvalidSpec", ""))),
			health{"Degraded", "InvalidSpec"}},
		{"Stalled False", object("WebApp", 3, nil, status(3, readyTrue, cond("Stalled", "False", "Healthy", ""))),
			health{"Healthy", "2/2 pods ready"}},
		{"Ready before Reconciling", object("WebApp", 3, nil, status(3, readyTrue, cond("Reconciling", "True", "Scaling", "3 of 4 pods ready"))),
			health{"Healthy", "2/2 pods ready"}},
		{"Ready without a message", object("AppConfig", 3, nil, status(3, cond("Ready", "True", "RolledOut", ""))),
			health{"Healthy", "RolledOut"}},
		{"Reconciling", object("Cache", 3, nil, status(3, cond("Ready", "False", "RollingOut", "waiting"), cond("Reconciling", "True", "RollingOut", "1 of 3 pods updated"))),
			health{"Progressing", "1 of 3 pods updated"}},
		{"Ready False without Reconciling", object("AppConfig", 3, nil, status(3, cond("Ready", "False", "Debouncing", "Revision b41e rolls out later"))),
			health{"Progressing", "Revision b41e rolls out later"}},
		{"Ready Unknown", object("AppStack", 3, nil, status(3, cond("Ready", "Unknown", "Deploying", "Not Ready yet: backend"))),
			health{"Progressing", "Not Ready yet: backend"}},
		{"no conditions", object("WebApp", 3, nil, status(3)),
			health{"Progressing", "Waiting for Steward to report the object's conditions"}},
		{"suspended Backup, Ready", object("Backup", 3, map[string]any{"suspend": true}, status(3, cond("Ready", "True", "Scheduled", "Suspended"))),
			health{"Suspended", "The schedule is suspended (spec.suspend)"}},
		{"suspended Backup, Stalled", object("Backup", 3, map[string]any{"suspend": true}, status(3, cond("Stalled", "True", "InvalidSchedule", "spec.schedule: bad"))),
			health{"Degraded", "InvalidSchedule: spec.schedule: bad"}},
		{"Backup with suspend false", object("Backup", 3, map[string]any{"suspend": false}, status(3, cond("Ready", "True", "Scheduled", "Next run at 2026-03-03T02:00:00Z"))),
			health{"Healthy", "Next run at 2026-03-03T02:00:00Z"}},
		{"suspend means nothing to other kinds", object("WebApp", 3, map[string]any{"suspend": true}, status(3, readyTrue)),
			health{"Healthy", "2/2 pods ready"}},
		{"Restore Succeeded without conditions", object("Restore", 1, nil, map[string]any{"observedGeneration": int64(1), "phase": "Succeeded"}),
			health{"Healthy", "Restore succeeded"}},
		{"Restore Failed without Stalled", object("Restore", 1, nil, map[string]any{"observedGeneration": int64(1), "phase": "Failed", "message": "Job r failed: BackoffLimitExceeded",
			"conditions": []any{cond("Ready", "False", "RestoreFailed", "Job r failed: BackoffLimitExceeded")}}),
			health{"Degraded", "Job r failed: BackoffLimitExceeded"}},
		{"Restore Running", object("Restore", 1, nil, map[string]any{"observedGeneration": int64(1), "phase": "Running",
			"conditions": []any{cond("Ready", "False", "Running", "Job r restores k"), cond("Reconciling", "True", "Running", "Job r restores k")}}),
			health{"Progressing", "Job r restores k"}},
		{"phase Failed means nothing to other kinds", object("WebApp", 3, nil, map[string]any{"observedGeneration": int64(3), "phase": "Failed",
			"conditions": []any{readyTrue}}),
			health{"Healthy", "2/2 pods ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evaluate(script, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("health = %+v, want %+v", got, tc.want)
			}
		})
	}
}
