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

package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// shop is an AppStack whose cache cannot start, which blocks the backend,
// which blocks the frontend.
func (h *harness) shop(name, environment string) *v1alpha1.AppStack {
	h.t.Helper()
	stack := decode[v1alpha1.AppStack](h.t, `
metadata: {name: `+name+`}
spec:
  environment: `+environment+`
  databases:
    - {name: orders, engine: postgres, version: "16"}
  caches:
    - {name: sessions, engine: redis, version: "7.4"}
  apps:
    - {name: backend, image: "shop/backend:1.4", database: {ref: orders}, cache: {ref: sessions}}
    - {name: frontend, dependsOn: [backend], image: "shop/frontend:2.0"}
  config:
    data: {LOG_LEVEL: info}
`)
	stack.Status = v1alpha1.AppStackStatus{
		ObservedGeneration: 1, Phase: v1alpha1.AppStackDeploying,
		Components: []v1alpha1.StackComponentStatus{
			{Name: "orders", Kind: "Database", Object: "shop-orders", Ready: true, Reason: "Available"},
			{Name: "sessions", Kind: "Cache", Object: "shop-sessions", Ready: false, Reason: "PodsUnschedulable"},
			{Name: "config", Kind: "AppConfig", Object: "shop-config", Ready: true, Reason: "Ready"},
			{Name: "backend", Kind: "WebApp", Object: "shop-backend", Ready: false, Reason: "Blocked",
				Message: "waiting for cache shop-sessions: PodsUnschedulable", Since: ptr.To(at(-time.Hour))},
		},
	}
	h.create(stack)
	return stack
}

func TestStackGraph(t *testing.T) {
	h := newHarness(t)
	h.shop("shop", "staging")
	golden(t, "stack-graph.dot.golden", h.run("stack", "graph", "shop", "-o", "dot").ok(t))

	out := h.run("stack", "graph", "appstack/shop").ok(t)
	for _, want := range []string{
		"appstack/shop: 5 components, in the order the operator creates them",
		"orders     Database   shop-orders    yes",
		"backend    WebApp     shop-backend   no (Blocked)            config, orders, sessions",
		"frontend   WebApp     shop-frontend  no (NotCreated)         backend, config",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	var rows []componentRow
	if err := json.Unmarshal([]byte(h.run("stack", "graph", "shop", "-o", "json").ok(t)), &rows); err != nil || len(rows) != 5 {
		t.Fatalf("-o json: %v, %v", rows, err)
	}
	if got := rows[1]; got.Name != "sessions" || strings.Join(got.Blocks, ",") != "backend" {
		t.Errorf("sessions: %+v", got)
	}
	h.run("stack", "graph", "nope").fails(t, `appstack "nope" not found in namespace "`+h.ns+`"`)
	h.run("stack", "graph", "database/orders").fails(t, "this command takes a appstack, not a database")
}

// TestStackWithoutStatusYet: while a new stack's first status is held
// back, status and stack graph read its components themselves, instead of
// calling them all NotCreated.
func TestStackWithoutStatusYet(t *testing.T) {
	h := newHarness(t)
	stack := decode[v1alpha1.AppStack](t, `
metadata: {name: fresh}
spec:
  environment: development
  databases:
    - {name: orders, engine: postgres, version: "16"}
  caches:
    - {name: sessions, engine: redis, version: "7.4"}
  apps:
    - {name: backend, image: "shop/backend:1.4", database: {ref: orders}, cache: {ref: sessions}}
  config:
    data: {LOG_LEVEL: info}
`)
	h.create(stack)
	// The configuration is rolling out to apps, and counts as Ready for the
	// stack: it has rendered its revision.
	config := decode[v1alpha1.AppConfig](t, `
metadata: {name: fresh-config}
spec: {application: fresh, environment: dev, data: {LOG_LEVEL: info}}
`)
	config.Status = v1alpha1.AppConfigStatus{ObservedGeneration: 1, CurrentRevision: "0123456789", Conditions: []metav1.Condition{{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "RollingOut",
		Message: "0 of 1 consumers run revision 0123456789", ObservedGeneration: 1, LastTransitionTime: at(-time.Minute),
	}}}
	h.create(config)
	db := decode[v1alpha1.Database](t, `
metadata: {name: fresh-orders}
spec: {engine: postgres, version: "16"}
`)
	db.Status = v1alpha1.DatabaseStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable,
		Message: "1 of 1 instances are ready", ObservedGeneration: 1, LastTransitionTime: at(-time.Minute),
	}}}
	h.create(db, decode[v1alpha1.Cache](t, `
metadata: {name: fresh-sessions}
spec: {engine: redis, version: "7.4"}
`))
	h.now = stack.CreationTimestamp.Add(10 * time.Second)

	graph := h.run("stack", "graph", "fresh").ok(t)
	status := h.run("status", "appstack/fresh").ok(t)
	for out, wants := range map[string][]string{
		graph: {
			"orders     Database   fresh-orders    yes              -",
			"sessions   Cache      fresh-sessions  no (Pending)     -",
			"config     AppConfig  fresh-config    yes              -",
			"backend    WebApp     fresh-backend   no (NotCreated)  config, orders, sessions",
		},
		status: {
			"No status yet, 10s after its creation: Steward writes a new AppStack's first status",
			"orders     Database   database/fresh-orders   yes    Available   -                       -            1 of 1 instances are ready",
			"sessions   Cache      cache/fresh-sessions    no     Pending     -                       -            Cache fresh-sessions has no status yet",
			"config     AppConfig  appconfig/fresh-config  yes    RollingOut  -                       -            revision 0123456789 rendered",
			"backend    WebApp     webapp/fresh-backend    no     NotCreated  config,orders,sessions  sessions     -",
		},
	} {
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	}
}

func TestStackGraphCycle(t *testing.T) {
	h := newHarness(t)
	stack := decode[v1alpha1.AppStack](t, `
metadata: {name: loop}
spec:
  environment: development
  apps:
    - {name: a, dependsOn: [b], image: "a:1"}
    - {name: b, dependsOn: [a], image: "b:1"}
`)
	h.create(stack)
	h.now = stack.CreationTimestamp.Add(10 * time.Second) // its status may still be held back
	h.run("stack", "graph", "loop").fails(t, `appstack "loop": dependency cycle: a -> b -> a`)
	out := h.run("status", "appstack/loop").ok(t)
	for _, want := range []string{"The dependency graph cannot be built: dependency cycle: a -> b -> a", "No status yet, 10s after its creation"} {
		if !strings.Contains(out, want) {
			t.Errorf("status of a new stack with a cycle: no %q in\n%s", want, out)
		}
	}
}

func TestRetryFinalBackup(t *testing.T) {
	h := newHarness(t)
	stack := h.shop("shop", "production")
	h.run("retry-final-backup", "shop").fails(t, `appstack "shop" is not being deleted`)

	// Deleted, it is held by the operator's finalizer while the final
	// backup failed.
	stack.Finalizers = []string{v1alpha1.AppStackFinalizer}
	if err := k8s.Update(context.Background(), stack); err != nil {
		t.Fatal(err)
	}
	stack.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Deleting",
		Message: "The final backup of Database shop-orders failed (upload: access denied), so it is not deleted", LastTransitionTime: at(-time.Minute)}}
	if err := k8s.Status().Update(context.Background(), stack); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), stack); err != nil {
		t.Fatal(err)
	}
	out := h.run("retry-final-backup", "shop").ok(t)
	if !strings.Contains(out, "asked for its final backups again") || !strings.Contains(out, "access denied") {
		t.Errorf("output:\n%s", out)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(stack), stack); err != nil {
		t.Fatal(err)
	}
	first := stack.Annotations[v1alpha1.AnnotationRetryFinalBackup]
	if first == "" {
		t.Fatalf("no %s annotation: %v", v1alpha1.AnnotationRetryFinalBackup, stack.Annotations)
	}
	// Each retry is a new value: the operator asks for a new final backup.
	h.run("retry-final-backup", "appstack/shop").ok(t)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(stack), stack); err != nil {
		t.Fatal(err)
	}
	if stack.Annotations[v1alpha1.AnnotationRetryFinalBackup] == first {
		t.Errorf("the second retry did not change the annotation")
	}
	stack.Finalizers = nil
	if err := k8s.Update(context.Background(), stack); err != nil {
		t.Fatal(err)
	}

	h.shop("test", "staging")
	h.run("retry-final-backup", "test").fails(t, `appstack "test" is a staging stack: only production stacks take final backups`)
}
