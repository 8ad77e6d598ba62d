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

package backup

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/conditions"
)

// TestStatusOfTheDestination: what Ready, the phase and DestinationChecked
// say for each state of the destination, beside the runs' own problems.
func TestStatusOfTheDestination(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	sched, p := parseSchedule("0 2 * * *", nil)
	if p != nil {
		t.Fatal(p)
	}
	passed := &v1alpha1.DestinationCheck{Hash: "h", Job: "shop-check-h", Passed: true, Reason: v1alpha1.ReasonCheckPassed, Message: "fine"}
	refused := &conditions.Problem{Reason: v1alpha1.ReasonCredentialsRefused, Message: "SignatureDoesNotMatch"}
	for _, tc := range []struct {
		name        string
		obs         observed
		dest        destination
		status      v1alpha1.BackupStatus
		ready       string
		phase       v1alpha1.BackupPhase
		checked     metav1.ConditionStatus
		checkReason string
	}{
		{"first check runs", observed{}, destination{hash: "h", checking: true}, v1alpha1.BackupStatus{},
			v1alpha1.ReasonCheckingDestination, v1alpha1.BackupPending, metav1.ConditionUnknown, v1alpha1.ReasonCheckingDestination},
		{"check passed now", observed{}, destination{hash: "h", checked: passed}, v1alpha1.BackupStatus{},
			v1alpha1.ReasonScheduled, v1alpha1.BackupScheduled, metav1.ConditionTrue, v1alpha1.ReasonCheckPassed},
		{"check passed before", observed{}, destination{hash: "h"}, v1alpha1.BackupStatus{DestinationCheck: passed},
			v1alpha1.ReasonScheduled, v1alpha1.BackupScheduled, metav1.ConditionTrue, v1alpha1.ReasonCheckPassed},
		{"check failed", observed{}, destination{hash: "h", problem: refused}, v1alpha1.BackupStatus{},
			v1alpha1.ReasonCredentialsRefused, v1alpha1.BackupFailed, metav1.ConditionFalse, v1alpha1.ReasonCredentialsRefused},
		{"check failed, the Database is awaited", observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase}},
			destination{hash: "h", problem: refused}, v1alpha1.BackupStatus{},
			v1alpha1.ReasonCredentialsRefused, v1alpha1.BackupFailed, metav1.ConditionFalse, v1alpha1.ReasonCredentialsRefused},
		{"the Database is awaited while the check runs", observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase}},
			destination{hash: "h", checking: true}, v1alpha1.BackupStatus{},
			v1alpha1.ReasonWaitingForDatabase, v1alpha1.BackupPending, metav1.ConditionUnknown, v1alpha1.ReasonCheckingDestination},
		{"an invalid schedule first", observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonInvalidSchedule}},
			destination{hash: "h", problem: refused}, v1alpha1.BackupStatus{},
			v1alpha1.ReasonInvalidSchedule, v1alpha1.BackupFailed, metav1.ConditionFalse, v1alpha1.ReasonCredentialsRefused},
		{"a request to retry leaves the check's condition", observed{}, destination{problem: &conditions.Problem{Reason: v1alpha1.ReasonReconcileError}},
			v1alpha1.BackupStatus{DestinationCheck: passed, Conditions: []metav1.Condition{{Type: v1alpha1.ConditionDestinationChecked,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCheckPassed}}},
			v1alpha1.ReasonReconcileError, v1alpha1.BackupPending, metav1.ConditionTrue, v1alpha1.ReasonCheckPassed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 2, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
				Status: tc.status}
			if tc.obs.problem == nil || tc.obs.problem.Reason != v1alpha1.ReasonInvalidSchedule {
				tc.obs.schedule = sched
			}
			st := computeStatus(b, tc.obs, tc.dest, nil, now)
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			checked := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDestinationChecked)
			if ready == nil || ready.Reason != tc.ready || st.Phase != tc.phase {
				t.Errorf("Ready %+v, phase %s; want reason %s, phase %s", ready, st.Phase, tc.ready, tc.phase)
			}
			if checked == nil || checked.Status != tc.checked || checked.Reason != tc.checkReason {
				t.Errorf("DestinationChecked %+v, want %s %s", checked, tc.checked, tc.checkReason)
			}
			if tc.ready == v1alpha1.ReasonCredentialsRefused && st.NextScheduleTime == nil {
				t.Error("no nextScheduleTime: the runs go on while the destination fails its check")
			}
		})
	}
}

// TestRefusedEndpoint: a plain http:// endpoint is refused unless allowed,
// and the message never quotes the endpoint's user information or query.
func TestRefusedEndpoint(t *testing.T) {
	d := v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b", Endpoint: "http://KEYID:SECRETKEY@minio.shop.svc:9000/?token=TOKEN"}
	p := refusedEndpoint(d)
	if p == nil || p.Reason != v1alpha1.ReasonInsecureEndpoint || !strings.Contains(p.Message, "http://minio.shop.svc:9000/") {
		t.Fatalf("refusedEndpoint = %+v", p)
	}
	for _, secret := range []string{"KEYID", "SECRETKEY", "TOKEN"} {
		if strings.Contains(p.Message, secret) {
			t.Errorf("the message quotes %s: %s", secret, p.Message)
		}
	}
	d.AllowInsecureEndpoint = true
	if p := refusedEndpoint(d); p != nil {
		t.Errorf("allowed, refusedEndpoint = %+v", p)
	}
	for _, e := range []string{"https://minio.shop.svc:9000", ""} {
		if p := refusedEndpoint(v1alpha1.BackupDestination{Endpoint: e}); p != nil {
			t.Errorf("%q refused: %+v", e, p)
		}
	}
	b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: v1alpha1.BackupSpec{Destination: d}}
	d.AllowInsecureEndpoint = false
	st := computeStatus(b, observed{problem: refusedEndpoint(d)}, destination{problem: refusedEndpoint(d)}, nil, time.Now())
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c.Reason != v1alpha1.ReasonInsecureEndpoint || st.Phase != v1alpha1.BackupFailed {
		t.Errorf("Ready %+v, phase %s: want InsecureEndpoint, Failed", c, st.Phase)
	}
}

// TestDestinationHash: what starts a new check, and what does not.
func TestDestinationHash(t *testing.T) {
	d := v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b", Endpoint: "https://s3.example"}
	base := destinationHash(d, "uid/1", "")
	other := d
	other.Bucket = "c"
	for name, h := range map[string]string{
		"another bucket":           destinationHash(other, "uid/1", ""),
		"another Secret version":   destinationHash(d, "uid/2", ""),
		"a delete of a database":   destinationHash(d, "uid/1", "shop"),
		"no Secret":                destinationHash(d, "", ""),
		"another Secret, same rev": destinationHash(d, "uid2/1", ""),
	} {
		if h == base {
			t.Errorf("%s: the same hash", name)
		}
	}
	if destinationHash(d, "uid/1", "") != base {
		t.Error("the hash is not stable")
	}
	if n := len((&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 50)}}).CheckJobName(base)); n > 63 {
		t.Errorf("a check Job's name has %d characters, more than a label value may", n)
	}
}

// TestRefusedEndpointSuspendsTheCronJob: the CronJob of a Backup stored
// with a plain http:// endpoint before the rule (admission refuses a new
// one) is suspended, and nothing else is applied.
func TestRefusedEndpointSuspendsTheCronJob(t *testing.T) {
	scheme := testScheme(t)
	b := &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "shop", UID: "backup-uid"},
		Spec: v1alpha1.BackupSpec{Schedule: "0 2 * * *",
			Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b", Endpoint: "http://minio.shop.svc:9000"}},
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "shop", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Backup", Name: "old", UID: "backup-uid", Controller: ptr.To(true)}}},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(b, cj).Build()
	r := &Reconciler{Client: c, APIReader: c}
	obs, err := r.reconcileRuns(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if obs.problem == nil || obs.problem.Reason != v1alpha1.ReasonInsecureEndpoint || obs.cronJob != nil {
		t.Errorf("observed %+v: want the InsecureEndpoint problem and no CronJob applied", obs)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cj), cj); err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(cj.Spec.Suspend, false) {
		t.Error("the CronJob still runs against the refused endpoint")
	}
}

// TestTaskResultReadsPastALaggingCache: a finished delete Job whose pod the
// cache still holds as running (its final status not arrived yet) has its
// result read from the API server, not reported as gone.
func TestTaskResultReadsPastALaggingCache(t *testing.T) {
	scheme := testScheme(t)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "gone-delete", Namespace: "shop", UID: "job-uid"}}
	pod := func(terminated *corev1.ContainerStateTerminated) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone-delete-x", Namespace: "shop",
			Labels: map[string]string{batchv1.JobNameLabel: job.Name, batchv1.ControllerUidLabel: string(job.UID)}}}
		cs := corev1.ContainerStatus{Name: jobs.Container, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if terminated != nil {
			cs.State = corev1.ContainerState{Terminated: terminated}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	msg := string(dumpcmd.Result{Succeeded: true, Deleted: 2}.Marshal())
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job.DeepCopy(), pod(nil)).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job.DeepCopy(), pod(&corev1.ContainerStateTerminated{Message: msg})).Build()

	r := &Reconciler{Client: cached, APIReader: live}
	res, ok, err := r.taskResult(context.Background(), job)
	if !ok || err != nil || res.Deleted != 2 {
		t.Errorf("result %+v, found %v (%v): want the 2 deletions the pod reported", res, ok, err)
	}

	// Gone from both: no result, and no error.
	empty := fake.NewClientBuilder().WithScheme(scheme).Build()
	r = &Reconciler{Client: empty, APIReader: empty}
	if res, ok, err := r.taskResult(context.Background(), job); ok || err != nil {
		t.Errorf("result %+v, found %v (%v): want none", res, ok, err)
	}
}

// TestResultsAreReadBeforeTheyAreJudged: the result of a finished Job whose
// pod the cache does not hold is judged only once the API server answered.
// While it cannot list the pods, a succeeded delete Job is not done (no
// event says the count is gone, the Backup keeps its finalizer), and a
// check or a verification records no outcome (no failure for a transient
// read error): each returns the error, to be tried again. Once it answers,
// the delete counts what the pod reported, or -1 when the pod is really
// gone.
func TestResultsAreReadBeforeTheyAreJudged(t *testing.T) {
	scheme := testScheme(t)
	b := &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop", UID: "backup-uid"},
		Spec: v1alpha1.BackupSpec{
			Source: v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL,
				Connection: &v1alpha1.DatabaseConnection{Host: "pg.shop.svc", Database: "orders"}},
			Destination:    v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b"},
			DeletionPolicy: v1alpha1.DeletionDelete,
		},
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: b.DeleteJobName(), Namespace: "shop", UID: "job-uid",
			Annotations: map[string]string{v1alpha1.AnnotationDestinationHash: destinationHash(b.Spec.Destination, "", "orders")}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x", Namespace: "shop",
		Labels: map[string]string{batchv1.JobNameLabel: job.Name, batchv1.ControllerUidLabel: string(job.UID)}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: jobs.Container, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{Message: string(dumpcmd.Result{Succeeded: true, Deleted: 3}.Marshal())}}}}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job.DeepCopy()).Build()
	unreachable := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod.DeepCopy()).Build(), interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("connection refused")
		},
	})

	r := &Reconciler{Client: cached, APIReader: unreachable}
	del, err := r.deleteDumps(context.Background(), b, time.Now())
	if err == nil || del.done {
		t.Errorf("with the pods unreadable: done %v, deleted %d, error %v: want not done, and the error", del.done, del.deleted, err)
	}

	if c, err := r.checkOutcome(context.Background(), job, "h", time.Now()); err == nil {
		t.Errorf("a check with its pods unreadable: outcome %+v, no error: want the error", c)
	}
	if v, err := r.verificationOutcome(context.Background(), job, time.Now()); err == nil {
		t.Errorf("a verification with its pods unreadable: outcome %+v, no error: want the error", v)
	}

	r.APIReader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod.DeepCopy()).Build()
	if del, err := r.deleteDumps(context.Background(), b, time.Now()); err != nil || !del.done || del.deleted != 3 {
		t.Errorf("with the pod readable: done %v, deleted %d, error %v: want done, 3", del.done, del.deleted, err)
	}

	r.APIReader = fake.NewClientBuilder().WithScheme(scheme).Build()
	if del, err := r.deleteDumps(context.Background(), b, time.Now()); err != nil || !del.done || del.deleted != -1 {
		t.Errorf("with the pod gone: done %v, deleted %d, error %v: want done, -1", del.done, del.deleted, err)
	}
	if c, err := r.checkOutcome(context.Background(), job, "h", time.Now()); err != nil || c == nil || !c.Passed {
		t.Errorf("a check that completed, its pod gone: outcome %+v, error %v: want passed", c, err)
	}
	if v, err := r.verificationOutcome(context.Background(), job, time.Now()); err != nil || v.Passed || v.Message == "" {
		t.Errorf("a verification that completed, its pod gone: outcome %+v, error %v: want not passed, saying why", v, err)
	}
}

// TestNoJobStartsOnAStaleBackup: the cache can show a finished check or
// verification Job deleted before it shows the status write that recorded
// its outcome. A reconcile of that older Backup starts no Job, which would
// run the check or the verification a second time, but waits for the cache
// (errBehind); on the Backup the API server holds, the Job starts.
func TestNoJobStartsOnAStaleBackup(t *testing.T) {
	scheme := testScheme(t)
	stale := &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop", UID: "backup-uid", ResourceVersion: "10",
			Annotations: map[string]string{v1alpha1.AnnotationVerifyNow: "now"}},
		Spec: v1alpha1.BackupSpec{Schedule: "0 2 * * *",
			Source: v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL,
				Connection: &v1alpha1.DatabaseConnection{Host: "pg.shop.svc", Database: "orders"}},
			Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b"}},
	}
	hash := destinationHash(stale.Spec.Destination, "", "")
	recorded := stale.DeepCopy()
	recorded.ResourceVersion = "11"
	recorded.Status.DestinationCheck = &v1alpha1.DestinationCheck{Hash: hash, Job: stale.CheckJobName(hash), Passed: true,
		Reason: v1alpha1.ReasonCheckPassed, CompletionTime: metav1Time(time.Now().Truncate(time.Second))}
	recorded.Status.LastManualVerification = "now"
	src := source{conn: jobs.Connection{Host: "pg.shop.svc", Database: "orders"}, image: "postgres:17"}

	jobsIn := func(c client.Client) []string {
		t.Helper()
		list := &batchv1.JobList{}
		if err := c.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range list.Items {
			names = append(names, j.Name)
		}
		return names
	}

	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(recorded.DeepCopy()).Build()
	r := &Reconciler{Client: live, APIReader: live, InstanceImage: "steward:test", Recorder: events.NewFakeRecorder(10)}
	b := stale.DeepCopy()
	if _, err := r.reconcileDestination(context.Background(), b, time.Now()); !errors.Is(err, errBehind) {
		t.Errorf("the check on a stale Backup: %v, want errBehind", err)
	}
	if _, err := r.reconcileVerify(context.Background(), b, observed{src: &src}); !errors.Is(err, errBehind) {
		t.Errorf("the verification on a stale Backup: %v, want errBehind", err)
	}
	if names := jobsIn(live); len(names) > 0 {
		t.Errorf("Jobs %v started on a stale Backup", names)
	}

	// The same Backup, as the API server holds it: both Jobs start.
	fresh := stale.DeepCopy()
	fresh.ResourceVersion = ""
	live = fake.NewClientBuilder().WithScheme(scheme).WithObjects(fresh).Build()
	r = &Reconciler{Client: live, APIReader: live, InstanceImage: "steward:test", Recorder: events.NewFakeRecorder(10)}
	b = &v1alpha1.Backup{}
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(stale), b); err != nil {
		t.Fatal(err)
	}
	if dest, err := r.reconcileDestination(context.Background(), b, time.Now()); err != nil || !dest.checking {
		t.Errorf("the check on a current Backup: checking %v, %v", dest.checking, err)
	}
	if ver, err := r.reconcileVerify(context.Background(), b, observed{src: &src}); err != nil || ver.manual != "now" {
		t.Errorf("the verification on a current Backup: started %q, %v", ver.manual, err)
	}
	if names := jobsIn(live); len(names) != 2 {
		t.Errorf("Jobs %v, want the check and the verification", names)
	}
}

// testScheme knows the built-in kinds and Steward's, for fake clients.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}
