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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// orders is a PostgreSQL Database of three instances whose third one does
// not stream, as the operator would report it, with its Backup.
func (h *harness) orders() (*v1alpha1.Database, *v1alpha1.Backup) {
	h.t.Helper()
	db := decode[v1alpha1.Database](h.t, `
metadata: {name: orders}
spec:
  engine: postgres
  version: "16"
  replicas: 3
  backup:
    schedule: "0 2 * * *"
    destination: {type: s3, bucket: backups, endpoint: "https://minio.example:9000"}
`)
	db.Status = v1alpha1.DatabaseStatus{
		ObservedGeneration: 1, Phase: v1alpha1.DatabaseDegraded, Version: "16.4",
		Replicas: 3, ReadyReplicas: 2, Primary: "orders-0", Term: 4,
		Endpoint: "orders." + h.ns + ".svc:5432", ReadEndpoint: "orders-ro." + h.ns + ".svc:5432",
		CredentialsSecret: "orders-credentials",
		Instances: []v1alpha1.DatabaseInstance{
			{Name: "orders-2", Role: "replica", Ready: false, LagBytes: ptr.To[int64](50 << 20), Message: "not streaming from orders-0: connection refused"},
			{Name: "orders-0", Role: "primary", Ready: true},
			{Name: "orders-1", Role: "replica", Ready: true, LagBytes: ptr.To[int64](0)},
		},
		LastRoleChange: &v1alpha1.DatabaseRoleChange{
			Type: v1alpha1.RoleChangeSwitchover, From: "orders-1", To: "orders-0", Term: 4,
			Reason: "requested with the steward.dev/switchover-to annotation", StartedAt: at(-2*time.Hour - 2*time.Second),
			FinishedAt: ptr.To(at(-2 * time.Hour)), WriteGapMilliseconds: 1240,
		},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnavailable,
				Message: "2 of 3 instances are ready: orders-2 is not streaming", LastTransitionTime: at(-5 * time.Minute)},
			{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRolloutComplete,
				Message: "Every instance runs the current spec", LastTransitionTime: at(-3 * time.Hour)},
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUnavailable,
				Message: "orders-2 is not streaming from orders-0: connection refused", LastTransitionTime: at(-5 * time.Minute)},
		},
	}
	b := decode[v1alpha1.Backup](h.t, `
metadata: {name: orders-backup}
spec:
  source: {type: postgresql, databaseRef: {name: orders}}
  destination: {type: s3, bucket: backups, endpoint: "https://minio.example:9000"}
  schedule: "0 2 * * *"
`)
	last := v1alpha1.BackupRun{Job: "orders-backup-29412120", StartTime: ptr.To(at(-10*time.Hour - time.Minute)),
		CompletionTime: ptr.To(at(-10 * time.Hour)), Succeeded: true, Object: "orders/2026-12-01T020000Z.dump",
		Size: 12 << 20, DurationSeconds: 41}
	b.Status = v1alpha1.BackupStatus{
		ObservedGeneration: 1, Phase: v1alpha1.BackupScheduled, LastBackup: &last, History: []v1alpha1.BackupRun{last},
		NextScheduleTime: ptr.To(at(14 * time.Hour)), SourceDatabase: "orders",
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonScheduled, Message: "Scheduled", LastTransitionTime: at(-24 * time.Hour)}},
	}
	h.create(db, b)
	return db, b
}

func TestStatusDatabase(t *testing.T) {
	h := newHarness(t)
	db, _ := h.orders()
	// A Backup of another database is no backup of this one.
	other := decode[v1alpha1.Backup](t, `
metadata: {name: payments-backup}
spec:
  source: {type: postgresql, databaseRef: {name: payments}}
  destination: {type: s3, bucket: backups}
  schedule: "@daily"
`)
	h.create(other)
	h.event(db, "Database", "Unavailable", "orders-2 is not streaming from orders-0: connection refused", -5*time.Minute, 3)
	h.event(db, "Database", v1alpha1.EventSwitchoverRefused, "Switchover to orders-2 refused: orders-2 is not ready", -time.Hour, 1)

	golden(t, "status-database.golden", h.run("status", "database/orders").ok(t))

	var rep report
	if err := json.Unmarshal([]byte(h.run("status", "db/orders", "-o", "json").ok(t)), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Ready != "False" || len(rep.Database.Instances) != 3 || rep.Database.Instances[0].Name != "orders-0" ||
		len(rep.Database.Backups) != 1 || rep.Database.LastBackup.Backup != "orders-backup" || len(rep.Events) != 2 {
		t.Errorf("-o json: %+v", rep)
	}
	if !strings.Contains(h.run("status", "database/orders", "-o", "yaml").ok(t), "lastBackup:") {
		t.Error("-o yaml has no lastBackup")
	}
}

// TestStatusDatabaseNewFields shows status fields this plugin does not
// know, such as a recoverability window, when the operator reports them,
// and nothing of them when it does not (TestStatusDatabase).
func TestStatusDatabaseNewFields(t *testing.T) {
	// This operator's CRD has no such fields, and its API server prunes
	// them: the object is given to extraStatus as a newer API server would
	// return it.
	u := decode[map[string]any](t, `
status:
  phase: Running
  recoverabilityWindow: {from: "2026-11-01T02:00:00Z", to: "2026-12-01T02:00:00Z"}
  lastVerification: {time: "2026-12-01T03:00:00Z", succeeded: true}
`)
	fields := extraStatus(&unstructured.Unstructured{Object: *u}, v1alpha1.DatabaseStatus{})
	want := []field{
		{"Last verification", `{"succeeded":true,"time":"2026-12-01T03:00:00Z"}`},
		{"Recoverability window", `{"from":"2026-11-01T02:00:00Z","to":"2026-12-01T02:00:00Z"}`},
	}
	if len(fields) != len(want) || fields[0] != want[0] || fields[1] != want[1] {
		t.Errorf("extraStatus = %v, want %v", fields, want)
	}
}

func TestStatusAppStack(t *testing.T) {
	h := newHarness(t)
	stack := decode[v1alpha1.AppStack](t, `
metadata: {name: shop}
spec:
  environment: staging
  databases:
    - name: orders
      engine: postgres
      version: "16"
  caches:
    - name: sessions
      engine: redis
      version: "7.4"
  apps:
    - name: backend
      image: shop/backend:1.4
      database: {ref: orders}
      cache: {ref: sessions}
    - name: frontend
      dependsOn: [backend]
      image: shop/frontend:2.0
  config:
    data: {LOG_LEVEL: info}
`)
	stack.Status = v1alpha1.AppStackStatus{
		ObservedGeneration: 1, Phase: v1alpha1.AppStackDeploying,
		Components: []v1alpha1.StackComponentStatus{
			{Name: "orders", Kind: "Database", Object: "shop-orders", Ready: true, Reason: "Available", Since: ptr.To(at(-time.Hour))},
			{Name: "sessions", Kind: "Cache", Object: "shop-sessions", Ready: false, Reason: "PodsUnschedulable",
				Message: "shop-sessions-0: 0/3 nodes are available: 3 Insufficient memory.", Since: ptr.To(at(-20 * time.Minute))},
			{Name: "config", Kind: "AppConfig", Object: "shop-config", Ready: true, Reason: "Ready", Since: ptr.To(at(-time.Hour))},
			{Name: "backend", Kind: "WebApp", Object: "shop-backend", Ready: false, Reason: "Blocked",
				Message: "waiting for cache shop-sessions: PodsUnschedulable", Since: ptr.To(at(-time.Hour))},
		},
		Endpoints: []v1alpha1.StackEndpoint{{Name: "frontend", URL: "http://shop-frontend." + h.ns + ".svc"}},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Deploying",
				Message: "2 of 5 components are Ready; waiting for sessions", LastTransitionTime: at(-time.Hour)},
		},
	}
	h.create(stack)
	golden(t, "status-appstack.golden", h.run("status", "appstack/shop").ok(t))
}

// A stack that has been Ready says when, and how long after its creation:
// how long the whole application took to come up.
func TestStatusAppStackFirstReady(t *testing.T) {
	h := newHarness(t)
	stack := decode[v1alpha1.AppStack](t, `
metadata: {name: blog}
spec:
  environment: development
  apps:
    - name: web
      image: blog/web:1.0
`)
	h.create(stack)
	if out := h.run("status", "appstack/blog").ok(t); strings.Contains(out, "First Ready") {
		t.Errorf("status of a stack never Ready has a First Ready line:\n%s", out)
	}
	created := stack.CreationTimestamp.Time
	want := stack.DeepCopy()
	want.Status = v1alpha1.AppStackStatus{
		ObservedGeneration: stack.Generation, Phase: v1alpha1.AppStackReady,
		FirstReadyTime: ptr.To(metav1.NewTime(created.Add(95 * time.Second))),
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
			Message: "1 of 1 components are Ready", LastTransitionTime: metav1.NewTime(created.Add(95 * time.Second))}},
	}
	h.writeStatus(stack, want)
	h.now = created.Add(time.Hour)

	out := h.run("status", "appstack/blog").ok(t)
	line := "First Ready:  " + created.Add(95*time.Second).UTC().Format(time.RFC3339) + " (58m ago), 1m35s after creation"
	if !strings.Contains(out, line) {
		t.Errorf("status of a stack first Ready 95 s after its creation, an hour ago: no line %q in\n%s", line, out)
	}
}

func TestStatusAppConfig(t *testing.T) {
	h := newHarness(t)
	ac := decode[v1alpha1.AppConfig](t, `
metadata: {name: shop-config}
spec:
  application: shop
  environment: prod
  data: {LOG_LEVEL: info, API_URL: "https://shop.example.com/api"}
`)
	ac.Status = v1alpha1.AppConfigStatus{
		ObservedGeneration: 1, Phase: v1alpha1.AppConfigDegraded,
		CurrentRevision: "7c1e0d9a44", LatestRevision: "7c1e0d9a44", LatestRevisionTime: ptr.To(at(-30 * time.Minute)),
		Revisions: []v1alpha1.ConfigRevision{
			{Name: "7c1e0d9a44", Created: at(-30 * time.Minute), Keys: 2},
			{Name: "3f5b2a8e10", Created: at(-48 * time.Hour), Keys: 2},
		},
		Consumers: []v1alpha1.ConfigConsumer{
			{Kind: "WebApp", Name: "shop-frontend", Keys: []string{"API_URL"}, Revision: "3f5b2a8e10", State: v1alpha1.ConsumerUpToDate, Since: ptr.To(at(-30 * time.Minute))},
			{Kind: "WebApp", Name: "shop-backend", Revision: "7c1e0d9a44", State: v1alpha1.ConsumerFailed,
				Message: "Deployment shop-backend: ProgressDeadlineExceeded", Since: ptr.To(at(-20 * time.Minute))},
			{Kind: "Deployment", Name: "reports", Keys: []string{"DB_URL"}, Revision: "3f5b2a8e10", State: v1alpha1.ConsumerBlocked,
				Message: "uses DB_URL, which revision 7c1e0d9a44 does not have", Since: ptr.To(at(-30 * time.Minute))},
		},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "RolloutFailed",
				Message: "WebApp shop-backend: Deployment shop-backend: ProgressDeadlineExceeded", LastTransitionTime: at(-20 * time.Minute)},
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "RolloutFailed",
				Message: "WebApp shop-backend: Deployment shop-backend: ProgressDeadlineExceeded", LastTransitionTime: at(-20 * time.Minute)},
		},
	}
	h.create(ac)
	golden(t, "status-appconfig.golden", h.run("status", "appconfig/shop-config").ok(t))
}

func TestStatusOtherKinds(t *testing.T) {
	h := newHarness(t)
	_, b := h.orders()
	out := h.run("status", "backup/"+b.Name).ok(t)
	for _, want := range []string{"Backup " + h.ns + "/orders-backup", "postgresql database/orders", "s3 backups/",
		"job orders-backup-29412120", "12.0 MiB in 41s", "No Warning events."} {
		if !strings.Contains(out, want) {
			t.Errorf("status backup: no %q in\n%s", want, out)
		}
	}
	app := decode[v1alpha1.WebApp](t, `
metadata: {name: web}
spec: {image: "nginx:1.27", config: [{appConfig: shop-config, keys: [LOG_LEVEL]}]}
`)
	h.create(app) // no status
	// A moment later, the operator may be holding its first status back;
	// ten minutes later, it has not looked at it.
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{5 * time.Second, "No status yet, 5s after its creation: Steward writes a new WebApp's first status once it is Ready, runs into a problem, or has been rolling out for 30s"},
		{10 * time.Minute, "Steward has not looked at it yet: is the operator running?"},
	} {
		h.now = app.CreationTimestamp.Add(tc.after)
		out = h.run("status", "wa/web").ok(t)
		for _, want := range []string{"Ready:     Unknown", tc.want, "appconfig/shop-config (LOG_LEVEL)"} {
			if !strings.Contains(out, want) {
				t.Errorf("status webapp, %s old: no %q in\n%s", tc.after, want, out)
			}
		}
	}
}

func TestNoStatusYet(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	held := "Steward writes a new"
	for _, tc := range []struct {
		kind  string
		age   time.Duration
		wants string
	}{
		{"WebApp", 10 * time.Second, "No status yet, 10s after its creation: Steward writes a new WebApp's first status once it is Ready, runs into a problem, or has been rolling out for 30s"},
		{"AppStack", 110 * time.Second, held},
		{"Cache", 5 * time.Minute, "is the operator running?"},
		{"Database", 110 * time.Second, held},
		{"Database", 3 * time.Minute, "is the operator running?"},
		{"Backup", 5 * time.Second, "is the operator running?"},
		// A client whose clock is behind the API server's.
		{"WebApp", -2 * time.Second, "No status yet, 0s after its creation"},
	} {
		if got := noStatusYet(tc.kind, created, created.Add(tc.age)); !strings.Contains(got, tc.wants) {
			t.Errorf("%s, %s old: %q, want %q", tc.kind, tc.age, got, tc.wants)
		}
	}
}

func TestStatusCacheRestorePolicy(t *testing.T) {
	h := newHarness(t)
	cache := decode[v1alpha1.Cache](t, `
metadata: {name: sessions}
spec: {engine: redis, version: "7.4", replicas: 2}
`)
	cache.Status = v1alpha1.CacheStatus{ObservedGeneration: 1, Phase: "Running", Version: "7.4.1", Replicas: 2, ReadyReplicas: 2,
		Endpoint: "sessions." + h.ns + ".svc:6379",
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable,
			Message: "2 of 2 ready", LastTransitionTime: at(-time.Hour)}}}
	rs := decode[v1alpha1.Restore](t, `
metadata: {name: orders-restore-x1}
spec:
  source: {backupRef: {name: orders-backup}}
  target: {type: postgresql, databaseRef: {name: orders}}
`)
	rs.Status = v1alpha1.RestoreStatus{ObservedGeneration: 1, Phase: v1alpha1.RestoreFailed, Job: "orders-restore-x1-restore",
		Object: "orders/2026-12-01T020000Z.dump", StartTime: ptr.To(at(-3 * time.Minute)), CompletionTime: ptr.To(at(-2 * time.Minute)),
		Message: "checksum mismatch: the dump is not the one the backup stored; the target is unchanged",
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Failed",
			Message: "checksum mismatch", LastTransitionTime: at(-2 * time.Minute)}}}
	policy := decode[v1alpha1.WorkloadPolicy](t, `
metadata: {name: `+h.ns+`}
spec: {environment: production, maxReplicas: 10}
`)
	policy.Status = v1alpha1.WorkloadPolicyStatus{ObservedGeneration: 1, Violations: 1,
		Violators: []v1alpha1.PolicyViolator{{Kind: "Deployment", Namespace: "shop", Name: "api", Message: "12 replicas, more than maxReplicas 10"}}}
	h.create(cache, rs)
	// Cluster-scoped, so not through h.create, which sets the namespace.
	status := policy.Status
	if err := k8s.Create(context.Background(), policy); err != nil {
		t.Fatal(err)
	}
	policy.Status = status
	if err := k8s.Status().Update(context.Background(), policy); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k8s.Delete(context.Background(), policy) }()

	for args, wants := range map[string][]string{
		"cache/sessions": {"Ready:     True", "Engine:    redis 7.4.1", "Replicas:  2 ready of 2", "sessions." + h.ns + ".svc:6379"},
		"restore/orders-restore-x1": {"Phase:            Failed", "Source:           backup/orders-backup, object latest",
			"Target:           database/orders", "Completed:        2026-12-01T11:58:00Z (2m ago)",
			"Message:          checksum mismatch: the dump is not the one the backup stored; the target is unchanged"},
		"wlp/" + h.ns: {"WorkloadPolicy " + h.ns, "Violations:   1", "Violator:     Deployment shop/api: 12 replicas, more than maxReplicas 10",
			"- 1 workloads violate the policy"},
	} {
		out := h.run("status", args).ok(t)
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("status %s: no %q in\n%s", args, want, out)
			}
		}
	}
}

func TestStatusOverview(t *testing.T) {
	h := newHarness(t)
	h.orders()
	out := h.run("status").ok(t)
	for _, want := range []string{
		"Namespace " + h.ns + ": 2 Steward objects, 1 not Ready.",
		"Database  orders         False  Degraded   Unavailable  2 of 3 instances are ready: orders-2 is not streaming",
		"Backup    orders-backup  True   Scheduled  -",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	var ov overview
	if err := json.Unmarshal([]byte(h.run("status", "-o", "json").ok(t)), &ov); err != nil || len(ov.Objects) != 2 {
		t.Errorf("-o json: %+v, %v", ov, err)
	}
	t.Run("empty", func(t *testing.T) {
		if out := newHarness(t).run("status").ok(t); !strings.Contains(out, "No Steward objects in namespace") {
			t.Errorf("empty namespace: %s", out)
		}
	})
	h.run("status", "-o", "wide").fails(t, "-o wide: this command prints json or yaml")
}
