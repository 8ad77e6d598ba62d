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

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
)

// shopStack is the e-commerce sample (config/samples/appstack_ecommerce.yaml)
// in production, with a backup destination that needs no credentials: kwok
// runs no backup, the test finishes the final backup's pod itself.
const shopStack = `
apiVersion: steward.dev/v1alpha1
kind: AppStack
metadata:
  name: shop
  namespace: e2e-appstack
spec:
  environment: production
  databases:
    - name: orders
      engine: postgres
      version: "16"
      databaseName: orders
      owner: shop
  caches:
    - name: sessions
      engine: redis
      version: "7.4"
      memory: 256Mi
  apps:
    - name: backend
      image: nginxinc/nginx-unprivileged:1.27
      port: 8080
      database: {ref: orders}
      cache: {ref: sessions}
      healthCheck: {path: /}
      expose: {path: /api}
    - name: frontend
      dependsOn: [backend]
      image: nginxinc/nginx-unprivileged:1.27
      port: 8080
      configKeys: [PUBLIC_URL, API_URL]
      expose: {path: /}
  config:
    data:
      LOG_LEVEL: info
      PUBLIC_URL: https://shop.example.com
      API_URL: ${PUBLIC_URL}/api
  ingress:
    host: shop.example.com
  monitoring:
    enabled: true
  backup:
    destination:
      type: s3
      bucket: backups
      endpoint: http://s3.e2e-appstack.svc:9000
      allowInsecureEndpoint: true
`

// stackChild is the part of a stack's child object the test reads.
type stackChild struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name              string      `json:"name"`
		CreationTimestamp metav1.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// readySince is when the child's Ready condition last became True.
func (c stackChild) readySince(t *testing.T) time.Time {
	t.Helper()
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Ready" && cond.Status == metav1.ConditionTrue {
			return cond.LastTransitionTime.Time
		}
	}
	t.Fatalf("%s %s is not Ready: %+v", c.Kind, c.Metadata.Name, c.Status.Conditions)
	return time.Time{}
}

// stackEvents lists the events of the namespace whose reason is reason,
// oldest first, by the name of the object they regard.
func stackEvents(t *testing.T, ns, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := json.Unmarshal([]byte(kubectl(t, "", ns, "get", "events.v1.events.k8s.io", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	return out
}

// related lists the objects the AppStack's events name, in their order,
// and fails on an object named twice.
func related(t *testing.T, events []eventsv1.Event) ([]string, map[string]time.Time) {
	t.Helper()
	var names []string
	at := map[string]time.Time{}
	for _, e := range events {
		if e.Regarding.Kind != "AppStack" || e.Regarding.Name != "shop" || e.Related == nil {
			continue
		}
		if _, twice := at[e.Related.Name]; twice {
			t.Errorf("%s %s twice: %s", e.Reason, e.Related.Name, e.Note)
		}
		names = append(names, e.Related.Name)
		at[e.Related.Name] = e.EventTime.Time
	}
	return names, at
}

// createdNames lists the objects the AppStack's Created events name, in
// their order: the first one may name several ("Created Database
// shop-orders, Cache shop-sessions, in dependency order"), each later one
// names its object.
func createdNames(t *testing.T, events []eventsv1.Event) []string {
	t.Helper()
	var names []string
	for _, e := range events {
		if e.Regarding.Kind != "AppStack" || e.Regarding.Name != "shop" {
			continue
		}
		if e.Related != nil {
			names = append(names, e.Related.Name)
			continue
		}
		list, ok := strings.CutSuffix(strings.TrimPrefix(e.Note, "Created "), ", in dependency order")
		if !ok {
			t.Fatalf("a Created event without an object that lists none: %q", e.Note)
		}
		for _, kindName := range strings.Split(list, ", ") {
			_, name, _ := strings.Cut(kindName, " ")
			names = append(names, name)
		}
	}
	return names
}

// TestAppStackOnTheCluster deploys the e-commerce stack on the full local
// cluster, where the Database, Cache, AppConfig and WebApp controllers do the
// real work: it converges in dependency order, each component created only
// once what it depends on is Ready, and deleting it removes the components
// in reverse order, after the database's final backup.
func TestAppStackOnTheCluster(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-appstack")
	ns := "--namespace=e2e-appstack"
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubectlMayFail(ns, "get", "events.v1.events.k8s.io", "--sort-by=.eventTime",
				"-o", "custom-columns=TIME:.eventTime,REASON:.reason,REGARDING:.regarding.name,RELATED:.related.name,NOTE:.note")
			t.Logf("events:\n%s", out)
		}
	})

	// 1. Apply and wait, as a user would.
	kubectl(t, shopStack, "apply", "-f", "-")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "appstack/shop", "--timeout=90s")
	// Ready, with every component in dependency order.
	eventually(t, 30*time.Second, func() error {
		if got := kubectl(t, "", ns, "get", "appstack", "shop", "-o", "jsonpath={.status.phase} {.status.components[*].name}"); got != "Ready orders sessions config backend frontend ingress" {
			return fmt.Errorf("phase and components: %q", got)
		}
		return nil
	})

	// 2. The creation timestamps (whole seconds) agree with the order: each
	// object is created no earlier than what it depends on became Ready.
	// (Not the AppConfig: its Ready follows its consumers' rollouts, so it
	// turns False and True again when the backend starts using it; the
	// events below show it was rendered first.)
	var children struct {
		Items []stackChild `json:"items"`
	}
	out := kubectl(t, "", ns, "get", "databases,caches,appconfigs,webapps,ingresses", "-l", "steward.dev/appstack=shop", "-o", "json")
	if err := json.Unmarshal([]byte(out), &children); err != nil {
		t.Fatal(err)
	}
	byName := map[string]stackChild{}
	for _, c := range children.Items {
		byName[c.Metadata.Name] = c
	}
	for _, name := range []string{"shop-orders", "shop-sessions", "shop-config", "shop-backend", "shop-frontend", "shop"} {
		if _, ok := byName[name]; !ok {
			t.Fatalf("no %s among the stack's objects: %s", name, out)
		}
	}
	created := func(name string) time.Time { return byName[name].Metadata.CreationTimestamp.Time }
	for _, after := range []struct {
		object string
		ready  []string
	}{
		{"shop-backend", []string{"shop-orders", "shop-sessions"}},
		{"shop-frontend", []string{"shop-backend"}},
		{"shop", []string{"shop-backend", "shop-frontend"}},
	} {
		for _, dep := range after.ready {
			if created(after.object).Before(byName[dep].readySince(t)) {
				t.Errorf("%s was created at %s, before %s was Ready at %s", after.object,
					created(after.object).Format(time.RFC3339), dep, byName[dep].readySince(t).Format(time.RFC3339))
			}
		}
	}

	// 3. The stack's Created events name the six objects, each once, in
	// dependency order: one event, with the stack's first status write,
	// names those created while it was held back (usually all of them);
	// any created after it has an event of its own.
	if names := createdNames(t, stackEvents(t, ns, "Created")); !slices.Equal(names, []string{
		"shop-orders", "shop-sessions", "shop-config", "shop-backend", "shop-frontend", "shop",
	}) {
		t.Errorf("Created events name %v, want the five components in dependency order, then the Ingress", names)
	}

	// The production profile reached the objects.
	if got := kubectl(t, "", ns, "get", "database", "shop-orders", "-o", "jsonpath={.spec.replicas} {.spec.storage.size} {.spec.backup.retention.keepDaily} {.status.readyReplicas}"); got != "3 100Gi 30 3" {
		t.Errorf("database replicas, storage, keepDaily, ready replicas: %q, want 3 100Gi 30 3", got)
	}
	if got := kubectl(t, "", ns, "get", "deployment", "shop-backend", "-o", "jsonpath={.status.readyReplicas}"); got != "2" {
		t.Errorf("backend ready replicas %q, want the profile's 2", got)
	}
	kubectl(t, "", ns, "get", "pdb", "shop-backend", "shop-frontend")
	if got := kubectl(t, "", ns, "get", "ingress", "shop", "-o", `jsonpath={range .spec.rules[0].http.paths[*]}{.path}={.backend.service.name} {end}`); strings.TrimSpace(got) != "/api=shop-backend /=shop-frontend" {
		t.Errorf("ingress paths: %q", got)
	}

	// 4. Delete: the apps go first; the database waits for its final
	// backup, whose pod the test finishes as a kubelet would.
	kubectl(t, "", ns, "delete", "appstack", "shop", "--wait=false")
	job := ""
	eventually(t, 60*time.Second, func() error {
		job = strings.TrimSpace(kubectl(t, "", ns, "get", "jobs", "-l", "steward.dev/backup=shop-orders-backup", "-o", "jsonpath={.items[*].metadata.name}"))
		if job == "" {
			return fmt.Errorf("no final backup Job yet")
		}
		return nil
	})
	if left := kubectl(t, "", ns, "get", "webapps", "-o", "name"); strings.TrimSpace(left) != "" {
		t.Errorf("the final backup runs while apps are left: %s", left)
	}
	if got := kubectl(t, "", ns, "get", "database", "shop-orders", "-o", "jsonpath={.metadata.deletionTimestamp}"); got != "" {
		t.Errorf("the database is being deleted before its final backup: %s", got)
	}
	start := time.Now().Add(-3 * time.Second).UTC()
	finishPod(t, "e2e-appstack", jobPod(t, "e2e-appstack", job), dumpcmd.Result{Succeeded: true, Key: "final.pgdump",
		Size: 2048, SHA256: strings.Repeat("0f", 32), StartTime: start, CompletionTime: start.Add(2 * time.Second), DurationSeconds: 2})
	kubectl(t, "", ns, "wait", "--for=delete", "appstack/shop", "--timeout=60s")

	// 5. The Deleted events run in reverse order, and nothing is left.
	deleted, _ := related(t, stackEvents(t, ns, "Deleted"))
	pos := map[string]int{}
	for i, name := range deleted {
		pos[name] = i
	}
	if len(deleted) != 5 {
		t.Fatalf("Deleted events for %v, want the five components", deleted)
	}
	for _, order := range [][2]string{
		{"shop-frontend", "shop-backend"}, {"shop-backend", "shop-orders"}, {"shop-backend", "shop-sessions"}, {"shop-backend", "shop-config"},
	} {
		if pos[order[0]] > pos[order[1]] {
			t.Errorf("%s was deleted after %s: %v", order[0], order[1], deleted)
		}
	}
	eventually(t, 30*time.Second, func() error {
		left := kubectl(t, "", ns, "get", "databases,caches,appconfigs,webapps,ingresses", "-o", "name")
		if strings.TrimSpace(left) != "" {
			return fmt.Errorf("still present: %s", strings.Join(strings.Fields(left), ", "))
		}
		return nil
	})
}
