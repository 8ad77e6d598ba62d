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
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The kstatus tests hold every kind to the conventions of kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus/status), which Flux and kubectl-based
// tools use to wait for an applied object: a new or edited object is
// InProgress until it is Ready, then Current; an object that cannot
// progress without the user is Failed, with its real reason.

const (
	// kstatusPoll is how often a recorder reads its object.
	kstatusPoll = 150 * time.Millisecond
	// kstatusTimeout bounds each wait for a state (Ready and Current,
	// Failed): generous, since the machine may be loaded.
	kstatusTimeout = 3 * time.Minute
	// updateFixtures, set to 1, saves objects as the Argo CD health
	// check's test data (internal/health/argocd/testdata).
	updateFixtures = "STEWARD_UPDATE_FIXTURES"
)

const kstatusWebApp = `
apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata: {name: web}
spec:
  image: nginxinc/nginx-unprivileged:1.27
  replicas: 2
`

const kstatusDatabase = `
apiVersion: steward.dev/v1alpha1
kind: Database
metadata: {name: orders}
spec:
  engine: postgres
  version: "16"
  storage: {size: 1Gi}
`

const kstatusCache = `
apiVersion: steward.dev/v1alpha1
kind: Cache
metadata: {name: sessions}
spec:
  engine: memcached
  replicas: 1
`

// kstatusBackup dumps kstatusDatabase; kwok runs no dump nor check, the
// test finishes their pods.
const kstatusBackup = `
apiVersion: steward.dev/v1alpha1
kind: Backup
metadata: {name: nightly}
spec:
  source:
    type: postgresql
    databaseRef: {name: orders}
  destination:
    type: s3
    bucket: backups
    endpoint: http://s3.example.test:9000
    allowInsecureEndpoint: true
  schedule: "0 3 * * *"
`

// kstatusRestore restores the dump KEY of kstatusBackup into
// kstatusDatabase.
const kstatusRestore = `
apiVersion: steward.dev/v1alpha1
kind: Restore
metadata: {name: NAME}
spec:
  source:
    backupRef: {name: nightly}
    object: KEY
  target:
    type: postgresql
    databaseRef: {name: orders}
  overwrite: true
`

const kstatusAppConfig = `
apiVersion: steward.dev/v1alpha1
kind: AppConfig
metadata: {name: settings}
spec:
  application: shop
  environment: dev
  data:
    LOG_LEVEL: info
    GREETING: hello
`

// kstatusConsumer is a WebApp that uses kstatusAppConfig.
const kstatusConsumer = `
apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata: {name: consumer}
spec:
  image: nginxinc/nginx-unprivileged:1.27
  config:
    - appConfig: settings
      keys: [LOG_LEVEL]
`

const kstatusAppStack = `
apiVersion: steward.dev/v1alpha1
kind: AppStack
metadata: {name: tiny}
spec:
  environment: development
  caches:
    - name: sessions
      engine: memcached
  apps:
    - name: web
      image: nginxinc/nginx-unprivileged:1.27
      port: 8080
      cache: {ref: sessions}
`

// kstatusKind says how to bring up one object of a kind on kwok's cluster.
type kstatusKind struct {
	kind string
	// before is applied first: what the object needs (nil: nothing).
	before func(t *testing.T, ns string)
	// manifest is the object under test, created without a namespace.
	manifest func(t *testing.T, ns string) string
	// drive does, while the recorder watches, what kwok's kubelet does not
	// (finish a Job's pod); nil when the controllers get there alone.
	drive func(t *testing.T, r *kstatusRecorder)
	// edit is a merge patch that changes the spec of the Ready object and
	// that it gets over by itself; empty when the spec is immutable.
	edit string
}

func fixed(manifest string) func(*testing.T, string) string {
	return func(*testing.T, string) string { return manifest }
}

var kstatusKinds = []kstatusKind{{
	kind:     "WebApp",
	manifest: fixed(kstatusWebApp),
	edit:     `{"spec":{"image":"nginxinc/nginx-unprivileged:1.28"}}`,
}, {
	kind:     "Database",
	manifest: fixed(kstatusDatabase),
	edit:     `{"spec":{"deletionPolicy":"Delete"}}`,
}, {
	kind:     "Cache",
	manifest: fixed(kstatusCache),
	edit:     `{"spec":{"replicas":2}}`,
}, {
	// Created while its Database is not Ready yet: a wait, InProgress.
	kind:     "Backup",
	before:   func(t *testing.T, ns string) { kubectl(t, kstatusDatabase, "--namespace="+ns, "apply", "-f", "-") },
	manifest: fixed(kstatusBackup),
	drive:    func(t *testing.T, r *kstatusRecorder) { passDestinationCheck(t, r.ns, r.name) },
	edit:     `{"spec":{"schedule":"0 4 * * *"}}`,
}, {
	kind: "Restore",
	manifest: func(t *testing.T, ns string) string {
		return restoreManifest("copy", backupRun(t, ns))
	},
	drive: func(t *testing.T, r *kstatusRecorder) {
		finishRestore(t, r, dumpcmd.Result{Succeeded: true})
	},
	// A Restore cannot be changed (spec: self == oldSelf).
}, {
	// Its consumer exists first (and waits for it): the AppConfig is
	// Ready once its first revision reached the consumer.
	kind:     "AppConfig",
	before:   func(t *testing.T, ns string) { kubectl(t, kstatusConsumer, "--namespace="+ns, "apply", "-f", "-") },
	manifest: fixed(kstatusAppConfig),
	edit:     `{"spec":{"data":{"LOG_LEVEL":"debug"}}}`,
}, {
	kind:     "AppStack",
	manifest: fixed(kstatusAppStack),
	edit: `{"spec":{"apps":[{"name":"web","image":"nginxinc/nginx-unprivileged:1.28","port":8080,` +
		`"cache":{"ref":"sessions"}}]}}`,
}}

// TestKstatusNewAndEdited: for every kind, a new object is InProgress
// from its creation until its Ready condition is True (never Current on an
// empty status), then Current; an edit is InProgress at once, with the
// unobserved generation, and Current again once done.
func TestKstatusNewAndEdited(t *testing.T) {
	t.Parallel()
	for _, k := range kstatusKinds {
		t.Run(k.kind, func(t *testing.T) {
			t.Parallel()
			ns := kstatusNamespace(t, strings.ToLower(k.kind))
			if k.before != nil {
				k.before(t, ns)
			}
			manifest := k.manifest(t, ns)
			r := createRecorded(t, manifest, ns, "new")
			if k.drive != nil {
				k.drive(t, r)
			}
			r.untilCurrent()
			r.neverCurrentBeforeReady()
			r.never(status.FailedStatus, "on its way to Ready")
			if k.edit == "" {
				return
			}

			// The update's answer has the new generation and the old status.
			e := r.followOn("edit")
			before := r.last()
			after := e.patch(k.edit)
			want := fmt.Sprintf("%s generation is %d, but latest observed generation is %d", k.kind, after.generation, before.generation)
			if after.result.Status != status.InProgressStatus || after.result.Message != want {
				t.Errorf("right after the edit: %s: %q, want InProgress: %q", after.result.Status, after.result.Message, want)
			}
			e.untilCurrent()
			e.never(status.FailedStatus, "after a harmless edit")
		})
	}
}

// TestKstatusBrokenEdit: an edit the controller cannot carry out is
// Failed (Stalled) with its real reason, for the generation it was made
// in, not InProgress on an unobserved generation.
func TestKstatusBrokenEdit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, manifest, patch, reason, fixture string
		before                                 func(t *testing.T, ns string)
		drive                                  func(t *testing.T, r *kstatusRecorder)
	}{{
		kind: "Database", manifest: kstatusDatabase,
		patch:  `{"spec":{"credentialsSecretRef":{"name":"no-such-secret"}}}`,
		reason: "CredentialsNotFound", fixture: "credentials-not-found",
	}, {
		kind: "Backup", manifest: kstatusBackup,
		// Five fields, so the schema takes it; no minute 61 nor hour 25.
		patch:  `{"spec":{"schedule":"61 25 * * *"}}`,
		reason: "InvalidSchedule", fixture: "invalid-schedule",
		before: func(t *testing.T, ns string) { kubectl(t, kstatusDatabase, "--namespace="+ns, "apply", "-f", "-") },
		drive:  func(t *testing.T, r *kstatusRecorder) { passDestinationCheck(t, r.ns, r.name) },
	}} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			ns := kstatusNamespace(t, "broken-"+strings.ToLower(tc.kind))
			if tc.before != nil {
				tc.before(t, ns)
			}
			ready := createRecorded(t, tc.manifest, ns, "") // TestKstatusNewAndEdited saves these
			if tc.drive != nil {
				tc.drive(t, ready)
			}
			ready.untilCurrent()

			r := ready.followOn(tc.fixture)
			r.patch(tc.patch)
			got := r.until("Failed (Stalled) with reason "+tc.reason, func(o kstatusObservation) bool {
				return o.result.Status == status.FailedStatus
			})
			if !stalledFor(got.result, tc.reason) {
				t.Errorf("Failed for the wrong reason: %q, conditions %+v, want Stalled %s\n%s", got.result.Message, got.result.Conditions, tc.reason, r.history())
			}
			if !got.observed || got.observedGeneration != got.generation {
				t.Errorf("status.observedGeneration %d (set: %v), want the generation %d", got.observedGeneration, got.observed, got.generation)
			}
			// It stays so: a Stalled object is not retried into another state.
			r.during(3 * time.Second)
			if now := kstatusOf(t, tc.kind, ns, got.name); now.Status != status.FailedStatus || !stalledFor(now, tc.reason) {
				t.Errorf("a few seconds later: %s: %q\n%s", now.Status, now.Message, r.history())
			}
		})
	}
}

// TestKstatusFinalFailure: a final failure is Failed, and an object that
// cannot start is InProgress, never Current, while it waits.
func TestKstatusFinalFailure(t *testing.T) {
	t.Parallel()

	t.Run("RestoreFailed", func(t *testing.T) {
		t.Parallel()
		ns := kstatusNamespace(t, "restore-failed")
		r := createRecorded(t, restoreManifest("broken", backupRun(t, ns)), ns, "restore-failed")
		finishRestore(t, r, dumpcmd.Result{Succeeded: false, Error: "pg_restore: checksum mismatch"})
		got := r.until("Failed", func(o kstatusObservation) bool { return o.result.Status == status.FailedStatus })
		if !stalledFor(got.result, "RestoreFailed") || !strings.Contains(got.result.Message, "checksum mismatch") {
			t.Errorf("Failed: %q, conditions %+v, want Stalled RestoreFailed saying why\n%s", got.result.Message, got.result.Conditions, r.history())
		}
		r.never(status.CurrentStatus, "for a restore that failed")
	})

	t.Run("WebAppUnschedulable", func(t *testing.T) {
		t.Parallel()
		ns := kstatusNamespace(t, "unschedulable")
		// More CPU than any kwok node has (1000): the scheduler keeps the
		// pods Pending, Unschedulable ("Insufficient cpu").
		r := createRecorded(t, `
apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata: {name: greedy}
spec:
  image: nginxinc/nginx-unprivileged:1.27
  resources:
    requests: {cpu: "5000"}
`, ns, "unschedulable")
		r.during(10 * time.Second)
		r.never(status.CurrentStatus, "while its pods cannot be scheduled")
		r.never(status.FailedStatus, "before the stuck pod timeout")
		// Failed with PodsUnschedulable comes after --stuck-pod-timeout,
		// which the e2e operator leaves at its default, two minutes
		// (stuckpods.DefaultTimeout; e2e_test.go sets no flag): too long
		// to wait for here. The WebApp controller's envtest covers the
		// conditions it turns to (internal/controller/webapp/stuck_test.go).
	})
}

// TestKstatusScaleUp: scaling a Ready WebApp from 2 to 3 goes through
// InProgress back to Current, never Degraded and without a Warning event,
// even in the moment the new pod is not ready yet.
func TestKstatusScaleUp(t *testing.T) {
	t.Parallel()
	ns := kstatusNamespace(t, "scale")
	r := createRecorded(t, kstatusWebApp, ns, "") // TestKstatusNewAndEdited saves these
	r.untilCurrent()

	// Transition times are whole seconds: let one pass, so that a change
	// of Degraded while scaling shows in its time.
	r.during(1100 * time.Millisecond)
	s := r.followOn("scale-up")
	degradedBefore := condition(r.last().obj, "Degraded")
	writes := r.watchFrom("scale-up, every write")
	kubectl(t, "", "--namespace="+ns, "scale", "webapp", "web", "--replicas=3")
	s.until("3 ready replicas, Ready and Current", func(o kstatusObservation) bool {
		return o.readyReplicas == 3 && o.current()
	})
	// Events are written a moment later; a late Degraded would show too.
	s.during(2 * time.Second)
	w := writes()
	for _, rec := range []*kstatusRecorder{s, w} {
		rec.never(status.FailedStatus, "while scaling up")
		for _, o := range rec.seen {
			if o.degraded || o.phase == "Degraded" {
				t.Errorf("Degraded while scaling up at +%s (%s):\n%s", o.after.Round(time.Millisecond), o.source, rec.history())
				break
			}
		}
	}
	// A blip shorter than a poll still moves the condition's transition time.
	if c := condition(s.last().obj, "Degraded"); c != nil && degradedBefore != nil && !c.LastTransitionTime.Equal(&degradedBefore.LastTransitionTime) {
		t.Errorf("Degraded changed while scaling up: it was %s since %s, it is %s since %s (%s: %s)", degradedBefore.Status,
			degradedBefore.LastTransitionTime.Format(time.RFC3339), c.Status, c.LastTransitionTime.Format(time.RFC3339), c.Reason, c.Message)
	}

	events, err := kstatusClients(t).events.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the events of %s: %v", ns, err)
	}
	for _, e := range events.Items {
		if e.Regarding.Kind == "WebApp" && e.Regarding.Name == "web" && e.Type == corev1.EventTypeWarning {
			t.Errorf("Warning event for the WebApp: %s: %s", e.Reason, e.Note)
		}
	}
}

// kstatusNamespace creates the namespace e2e-kstatus-<suffix>.
func kstatusNamespace(t *testing.T, suffix string) string {
	t.Helper()
	ns := "e2e-kstatus-" + suffix
	kubectl(t, "", "create", "namespace", ns)
	return ns
}

// backupRun makes kstatusDatabase and kstatusBackup Ready in ns, runs
// the Backup once as kwok's kubelet would, and returns the dump's key.
func backupRun(t *testing.T, ns string) string {
	t.Helper()
	kubectl(t, kstatusDatabase+"---"+kstatusBackup, "--namespace="+ns, "apply", "-f", "-")
	passDestinationCheck(t, ns, "nightly")
	kubectl(t, "", "--namespace="+ns, "wait", "--for=condition=Ready", "database/orders", "backup/nightly", "--timeout=180s")
	kubectl(t, "", "--namespace="+ns, "annotate", "backup", "nightly", "steward.dev/backup-now=kstatus")
	var job string
	eventually(t, 60*time.Second, func() error {
		// {.items[*]} prints nothing, where {.items[0]} fails, before the Job exists.
		names := strings.Fields(kubectl(t, "", "--namespace="+ns, "get", "jobs", "-l", "steward.dev/backup=nightly", "-o", "jsonpath={.items[*].metadata.name}"))
		if len(names) == 0 {
			return fmt.Errorf("no backup Job in %s yet", ns)
		}
		job = names[0]
		return nil
	})
	key := "2026/11/22/20261122T030000.000Z-app.pgdump"
	start := time.Now().Add(-5 * time.Second).UTC()
	finishPod(t, ns, jobPod(t, ns, job), dumpcmd.Result{Succeeded: true, Key: key, Size: 2048, SHA256: strings.Repeat("0f", 32),
		StartTime: start, CompletionTime: start.Add(4 * time.Second), DurationSeconds: 4})
	eventually(t, 60*time.Second, func() error {
		if got := kubectl(t, "", "--namespace="+ns, "get", "backup", "nightly", "-o", "jsonpath={.status.lastBackup.object}"); got != key {
			return fmt.Errorf("lastBackup.object of Backup nightly: %q", got)
		}
		return nil
	})
	return key
}

func restoreManifest(name, key string) string {
	return strings.NewReplacer("NAME", name, "KEY", key).Replace(kstatusRestore)
}

// finishRestore waits, recording, for the Restore's Job to run, then
// finishes its pod with res, as a kubelet would.
func finishRestore(t *testing.T, r *kstatusRecorder, res dumpcmd.Result) {
	t.Helper()
	r.until("status.phase Running", func(o kstatusObservation) bool { return o.phase == "Running" })
	res.Key = fieldString(r.last().obj, "spec", "source", "object")
	res.StartTime, res.CompletionTime = time.Now().Add(-2*time.Second).UTC(), time.Now().UTC()
	if res.Succeeded {
		res.Size, res.SHA256 = 2048, strings.Repeat("0f", 32)
	}
	finishPod(t, r.ns, jobPod(t, r.ns, r.name+"-restore"), res)
}

// stalledFor reports whether res is Failed for a Stalled condition with
// reason, or whose message names it.
func stalledFor(res status.Result, reason string) bool {
	for _, c := range res.Conditions {
		if c.Type == status.ConditionStalled && c.Status == corev1.ConditionTrue && (c.Reason == reason || strings.Contains(c.Message, reason)) {
			return true
		}
	}
	return strings.Contains(res.Message, reason)
}

// kstatusClientSet reaches the cluster without kubectl, so that polls are cheap and
// an update's answer can be read.
type kstatusClientSet struct {
	dynamic dynamic.Interface
	events  kubernetes.Interface
}

var (
	kstatusClientsOnce sync.Once
	kstatusClientsVal  kstatusClientSet
	kstatusClientsErr  error
)

func kstatusClients(t *testing.T) kstatusClientSet {
	t.Helper()
	kstatusClientsOnce.Do(func() {
		cfg := rest.CopyConfig(cluster.RESTConfig())
		cfg.QPS = -1 // no client-side throttling of the polls
		if kstatusClientsVal.dynamic, kstatusClientsErr = dynamic.NewForConfig(cfg); kstatusClientsErr != nil {
			return
		}
		kstatusClientsVal.events, kstatusClientsErr = kubernetes.NewForConfig(cfg)
	})
	if kstatusClientsErr != nil {
		t.Fatalf("making clients for the cluster: %v", kstatusClientsErr)
	}
	return kstatusClientsVal
}

// resource is the API resource of one of Steward's kinds.
func resource(t *testing.T, kind, ns string) dynamic.ResourceInterface {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "steward.dev", Version: "v1alpha1", Resource: strings.ToLower(kind) + "s"}
	return kstatusClients(t).dynamic.Resource(gvr).Namespace(ns)
}

// kstatusOf reads an object from the API server and computes its kstatus.
func kstatusOf(t *testing.T, kind, ns, name string) status.Result {
	t.Helper()
	u, err := resource(t, kind, ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s %s/%s: %v", kind, ns, name, err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("computing the kstatus of %s %s/%s: %v", kind, ns, name, err)
	}
	return *res
}

// kstatusObservation is one state an object was seen in.
type kstatusObservation struct {
	// after is the time since the recorder started; source says where
	// the object came from: create, update (the API server's answers) or
	// poll.
	after  time.Duration
	source string
	name   string
	result status.Result
	obj    *unstructured.Unstructured
	// Read from obj.
	generation, observedGeneration int64
	observed                       bool // status.observedGeneration is set
	ready, degraded                bool // conditions Ready and Degraded are True
	phase                          string
	readyReplicas                  int64
	summary                        string
}

// current reports whether the object is Ready and kstatus Current for its
// latest generation.
func (o kstatusObservation) current() bool {
	return o.ready && o.result.Status == status.CurrentStatus && o.observed && o.observedGeneration == o.generation
}

// why explains a Current computed on an object that has no status yet:
// no controller has seen it.
func (o kstatusObservation) why() string {
	if _, hasStatus := o.obj.Object["status"]; hasStatus {
		return ""
	}
	return " (no status yet: before the first reconcile only a default status in the CRD, " +
		`such as Flux's +kubebuilder:default={"observedGeneration":-1}, makes kstatus say InProgress)`
}

func (o kstatusObservation) String() string {
	return fmt.Sprintf("+%5.1fs %-6s %s", o.after.Seconds(), o.source, o.summary)
}

// kstatusRecorder records the distinct states one object goes through.
type kstatusRecorder struct {
	t              *testing.T
	kind, ns, name string
	// fixture names the case in the names of the fixtures it saves
	// (empty: none); label names the recorder in the test's log.
	fixture, label string
	start          time.Time
	seen           []kstatusObservation
	saved          map[status.Status]bool
}

// newRecorder returns a recorder that logs what it saw at the test's end.
func newRecorder(t *testing.T, kind, ns, name, fixture, label string) *kstatusRecorder {
	r := &kstatusRecorder{t: t, kind: kind, ns: ns, name: name, fixture: fixture, label: label, start: time.Now(), saved: map[status.Status]bool{}}
	t.Cleanup(func() {
		if len(r.seen) > 0 {
			t.Logf("%s %s/%s (%s):\n%s", r.kind, r.ns, r.name, r.label, r.history())
		}
	})
	return r
}

// createRecorded creates the object in manifest in ns and returns a
// recorder that has seen the API server's answer to the create.
func createRecorded(t *testing.T, manifest, ns, fixture string) *kstatusRecorder {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("reading the manifest: %v\n%s", err, manifest)
	}
	r := newRecorder(t, u.GetKind(), ns, u.GetName(), fixture, cmp.Or(fixture, "set-up"))
	created, err := resource(t, r.kind, ns).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s/%s: %v", r.kind, ns, r.name, err)
	}
	r.observe("create", created)
	return r
}

// followOn returns a new recorder of the same object, for what comes next.
func (r *kstatusRecorder) followOn(fixture string) *kstatusRecorder {
	return newRecorder(r.t, r.kind, r.ns, r.name, fixture, fixture)
}

// watchFrom watches the object's writes after the state r saw last: a
// state that lasts a few milliseconds escapes the polls, not a watch. The
// function it returns stops watching a second later and returns a
// recorder of the writes.
func (r *kstatusRecorder) watchFrom(label string) func() *kstatusRecorder {
	r.t.Helper()
	w, err := resource(r.t, r.kind, r.ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + r.name, ResourceVersion: r.last().obj.GetResourceVersion(),
	})
	if err != nil {
		r.t.Fatalf("watching %s %s/%s: %v", r.kind, r.ns, r.name, err)
	}
	type write struct {
		at time.Time
		u  *unstructured.Unstructured
	}
	n := newRecorder(r.t, r.kind, r.ns, r.name, "", label)
	var writes []write
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				writes = append(writes, write{time.Now(), u})
			}
		}
	}()
	return func() *kstatusRecorder {
		time.Sleep(time.Second)
		w.Stop()
		<-done
		for _, wr := range writes {
			n.observeAt("watch", wr.u, wr.at)
		}
		return n
	}
}

// patch applies a merge patch to the object's spec and observes the API
// server's answer.
func (r *kstatusRecorder) patch(p string) kstatusObservation {
	r.t.Helper()
	u, err := resource(r.t, r.kind, r.ns).Patch(context.Background(), r.name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
	if err != nil {
		r.t.Fatalf("patching %s %s/%s with %s: %v", r.kind, r.ns, r.name, p, err)
	}
	return r.observe("update", u)
}

// poll reads the object and observes it. A failed read is recorded and
// retried by the caller: the API server may be slow on a loaded machine.
func (r *kstatusRecorder) poll() (kstatusObservation, bool) {
	u, err := resource(r.t, r.kind, r.ns).Get(context.Background(), r.name, metav1.GetOptions{})
	if err != nil {
		r.note(fmt.Sprintf("reading it: %v", err))
		return kstatusObservation{}, false
	}
	return r.observe("poll", u), true
}

// observe computes the kstatus of u and records it when its state is new.
func (r *kstatusRecorder) observe(source string, u *unstructured.Unstructured) kstatusObservation {
	r.t.Helper()
	return r.observeAt(source, u, time.Now())
}

// observeAt is observe of u as it was at a time.
func (r *kstatusRecorder) observeAt(source string, u *unstructured.Unstructured, at time.Time) kstatusObservation {
	r.t.Helper()
	res, err := status.Compute(u)
	if err != nil {
		r.t.Fatalf("computing the kstatus of %s %s/%s: %v", r.kind, r.ns, r.name, err)
	}
	o := kstatusObservation{after: at.Sub(r.start), source: source, name: r.name, result: *res, obj: u, generation: u.GetGeneration()}
	o.observedGeneration, o.observed, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	o.readyReplicas, _, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	o.phase = fieldString(u, "status", "phase")
	conds := []string{}
	for _, typ := range []string{"Ready", "Reconciling", "Stalled", "Degraded"} {
		c := condition(u, typ)
		if c == nil {
			continue
		}
		conds = append(conds, fmt.Sprintf("%s=%s(%s)", typ, c.Status, c.Reason))
		o.ready = o.ready || (typ == "Ready" && c.Status == metav1.ConditionTrue)
		o.degraded = o.degraded || (typ == "Degraded" && c.Status == metav1.ConditionTrue)
	}
	obsGen := "-"
	if o.observed {
		obsGen = fmt.Sprint(o.observedGeneration)
	}
	o.summary = fmt.Sprintf("gen %d/%s %s: %q | phase %q ready replicas %d %s",
		o.generation, obsGen, res.Status, res.Message, o.phase, o.readyReplicas, strings.Join(conds, " "))
	// The first poll is kept apart from the answer to the create.
	if len(r.seen) == 0 || r.seen[len(r.seen)-1].summary != o.summary || r.seen[len(r.seen)-1].source != source {
		r.seen = append(r.seen, o)
	}
	r.saveFixture(o)
	return o
}

// note records something that is not a state of the object.
func (r *kstatusRecorder) note(s string) {
	if len(r.seen) > 0 && r.seen[len(r.seen)-1].summary == s {
		return
	}
	r.seen = append(r.seen, kstatusObservation{after: time.Since(r.start), source: "note", summary: s})
}

func (r *kstatusRecorder) last() kstatusObservation {
	for i := len(r.seen) - 1; i >= 0; i-- {
		if r.seen[i].obj != nil {
			return r.seen[i]
		}
	}
	r.t.Fatalf("%s %s/%s was never read", r.kind, r.ns, r.name)
	return kstatusObservation{}
}

// until polls until done holds and returns that observation; it fails
// the test after kstatusTimeout.
func (r *kstatusRecorder) until(what string, done func(kstatusObservation) bool) kstatusObservation {
	r.t.Helper()
	deadline := time.Now().Add(kstatusTimeout)
	for {
		if o, ok := r.poll(); ok && done(o) {
			return o
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s %s/%s: not %s after %s (%s); it went through:\n%s", r.kind, r.ns, r.name, what, kstatusTimeout,
				localcluster.LoadAverage(), r.history())
		}
		time.Sleep(kstatusPoll)
	}
}

// untilCurrent polls until the object is Ready and Current for its
// latest generation.
func (r *kstatusRecorder) untilCurrent() {
	r.t.Helper()
	r.until("Ready and Current", kstatusObservation.current)
}

// during polls for d.
func (r *kstatusRecorder) during(d time.Duration) {
	r.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		r.poll()
		time.Sleep(kstatusPoll)
	}
}

// neverCurrentBeforeReady checks that kstatus did not say Current before
// the Ready condition was True: a tool waiting on kstatus would have
// stopped waiting too early.
func (r *kstatusRecorder) neverCurrentBeforeReady() {
	r.t.Helper()
	notReady := r.seen
	for i, o := range r.seen {
		if o.ready {
			notReady = r.seen[:i]
			break
		}
	}
	r.check(notReady, status.CurrentStatus, "before it was Ready")
}

// never checks that kstatus never said s.
func (r *kstatusRecorder) never(s status.Status, when string) {
	r.t.Helper()
	r.check(r.seen, s, when)
}

// check reports, in one error, the states of seen in which kstatus said s.
func (r *kstatusRecorder) check(seen []kstatusObservation, s status.Status, when string) {
	r.t.Helper()
	var bad []string
	for _, o := range seen {
		if o.obj != nil && o.result.Status == s {
			bad = append(bad, fmt.Sprintf("  at +%.1fs (%s): %q%s", o.after.Seconds(), o.source, o.result.Message, o.why()))
		}
	}
	if len(bad) > 0 {
		r.t.Errorf("%s %s/%s was %s %s:\n%s\nit went through:\n%s", r.kind, r.ns, r.name, s, when, strings.Join(bad, "\n"), r.history())
	}
}

func (r *kstatusRecorder) history() string {
	lines := make([]string, len(r.seen))
	for i, o := range r.seen {
		lines[i] = "  " + o.String()
	}
	return strings.Join(lines, "\n")
}

// fixtureHealth is the Argo CD health a kstatus status stands for.
var fixtureHealth = map[status.Status]string{
	status.InProgressStatus: "progressing",
	status.CurrentStatus:    "healthy",
	status.FailedStatus:     "degraded",
}

// saveFixture writes the first object with conditions seen in each
// health to internal/health/argocd/testdata, when STEWARD_UPDATE_FIXTURES
// is 1: the Argo CD health check's test reads them.
func (r *kstatusRecorder) saveFixture(o kstatusObservation) {
	r.t.Helper()
	health, ok := fixtureHealth[o.result.Status]
	if os.Getenv(updateFixtures) != "1" || r.fixture == "" || !ok || r.saved[o.result.Status] {
		return
	}
	if conds, _, _ := unstructured.NestedSlice(o.obj.Object, "status", "conditions"); len(conds) == 0 {
		return
	}
	r.saved[o.result.Status] = true
	root, err := localcluster.RepoRoot()
	if err != nil {
		r.t.Fatalf("finding the repository for the fixtures: %v", err)
	}
	dir := filepath.Join(root, "internal", "health", "argocd", "testdata")
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-real-%s.yaml", strings.ToLower(r.kind), health, r.fixture))
	out, err := yaml.Marshal(stable(o.obj).Object)
	if err != nil {
		r.t.Fatalf("writing %s as YAML: %v", path, err)
	}
	header := fmt.Sprintf("# Recorded by test/e2e/kstatus_test.go (%s=1): kstatus %s: %s\n", updateFixtures, o.result.Status, o.result.Message)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatalf("creating %s: %v", dir, err)
	}
	if err := os.WriteFile(path, append([]byte(header), out...), 0o644); err != nil {
		r.t.Fatalf("writing the fixture: %v", err)
	}
}

// fixtureTime replaces every time in a fixture's status.
const fixtureTime = "2026-01-01T00:00:00Z"

// stable is a copy of u without what differs from run to run: server
// bookkeeping and times. It keeps the generation and the status.
func stable(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	if st, ok := c.Object["status"]; ok {
		c.Object["status"] = stableTimes(st)
	}
	return c
}

func stableTimes(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = stableTimes(e)
		}
	case []any:
		for i, e := range v {
			v[i] = stableTimes(e)
		}
	case string:
		if _, err := time.Parse(time.RFC3339, v); err == nil {
			return fixtureTime
		}
	}
	return v
}

// condition is the condition of type t in u's status, or nil.
func condition(u *unstructured.Unstructured, t string) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		cond := &metav1.Condition{Type: t}
		cond.Status = metav1.ConditionStatus(fmt.Sprint(m["status"]))
		cond.Reason, _ = m["reason"].(string)
		cond.Message, _ = m["message"].(string)
		if s, ok := m["lastTransitionTime"].(string); ok {
			if at, err := time.Parse(time.RFC3339, s); err == nil {
				cond.LastTransitionTime = metav1.NewTime(at)
			}
		}
		return cond
	}
	return nil
}

func fieldString(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}
