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

package database

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// orders is a one-instance PostgreSQL Database with the status status.
func orders(status *v1alpha1.DatabaseStatus) *v1alpha1.Database {
	db := &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", Generation: 1},
		Spec: v1alpha1.DatabaseSpec{
			Engine: v1alpha1.EnginePostgres, Version: "16", Replicas: new(int32(1)),
			Storage: v1alpha1.DatabaseStorage{Size: new(resource.MustParse("1Gi"))},
		},
	}
	if status != nil {
		db.Status = *status
	}
	return db
}

// instances is the StatefulSet with ready of its one instance ready.
func instances(ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Generation: 1},
		Spec:       appsv1.StatefulSetSpec{Replicas: new(int32(1))},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: ready,
			CurrentRevision: "r1", UpdateRevision: "r1",
		},
	}
}

// instancePod is orders-0, whose postgres container crash-loops with a
// server that refuses its configuration, not ready for notReadyFor; or
// ready when notReadyFor is 0.
func instancePod(now time.Time, notReadyFor time.Duration) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	if notReadyFor == 0 {
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}}
		return pod
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-notReadyFor))},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "postgres", RestartCount: 4,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error",
				Message: `FATAL:  invalid value for parameter "shared_buffers": "lots"` + "\n",
			}},
		}},
	}
	return pod
}

// TestStuckPodsDegradeTheDatabase follows a crash-looping instance from
// its pod's status to the Database's: Creating within the timeout,
// Degraded with the server's own error after it, Running once it starts.
func TestStuckPodsDegradeTheDatabase(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	observe := func(pod corev1.Pod, ready int32) observed {
		obs := observed{statefulSet: instances(ready)}
		obs.stuck, obs.recheck = stuckpods.Find([]corev1.Pod{pod}, 2*time.Minute, now)
		return obs
	}

	obs := observe(instancePod(now, time.Minute), 0)
	st := computeStatus(orders(nil), obs)
	if st.Phase != v1alpha1.DatabaseCreating || obs.recheck <= 0 {
		t.Fatalf("within the timeout: phase %s, recheck after %v; want Creating and a recheck", st.Phase, obs.recheck)
	}

	st = computeStatus(orders(&st), observe(instancePod(now, 3*time.Minute), 0))
	d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	r := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	want := `pod orders-0 container postgres: CrashLoopBackOff: FATAL:  invalid value for parameter "shared_buffers": "lots" (exit code 1)`
	if st.Phase != v1alpha1.DatabaseDegraded || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonCrashLooping ||
		r.Status != metav1.ConditionFalse || d.Message != want {
		t.Fatalf("after the timeout: phase %s, Degraded %s/%s %q, Ready %s; want Degraded, CrashLooping %q, Ready False",
			st.Phase, d.Status, d.Reason, d.Message, r.Status, want)
	}

	st = computeStatus(orders(&st), observe(instancePod(now, 0), 1))
	if d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); st.Phase != v1alpha1.DatabaseRunning || d.Status != metav1.ConditionFalse {
		t.Errorf("once the instance started: phase %s, Degraded %+v", st.Phase, d)
	}
}

// TestRefusedSettingsDegradeTheDatabase: a setting the running servers
// refused at reload makes a serving Database Degraded (still Ready) with
// each refusal once, naming the instances; none refused, it is Running.
func TestRefusedSettingsDegradeTheDatabase(t *testing.T) {
	running := func(name string, refused ...engine.RefusedSetting) member {
		return member{name: name, report: &instance.Report{Phase: instance.PhaseRunning, Status: engine.Status{Ready: true, Refused: refused}}}
	}
	mode := engine.RefusedSetting{Name: "sql_mode", Reason: "Variable 'sql_mode' can't be set to the value of 'NOT_A_MODE'"}
	timeout := engine.RefusedSetting{Name: "statement_timeout", Reason: `invalid value for parameter "statement_timeout": "soon"`}
	v := view{members: []member{
		running("orders-0", mode, timeout),
		running("orders-1", mode),
		{name: "orders-2", report: &instance.Report{Phase: instance.PhaseStarting, Status: engine.Status{Refused: []engine.RefusedSetting{timeout}}}},
		{name: "orders-3", err: "no answer"},
	}}
	got := refusedSettings(v)
	want := `sql_mode on orders-0, orders-1: Variable 'sql_mode' can't be set to the value of 'NOT_A_MODE'; ` +
		`statement_timeout on orders-0: invalid value for parameter "statement_timeout": "soon"`
	if got != want {
		t.Errorf("refusedSettings:\n got %s\nwant %s", got, want)
	}
	if got := refusedSettings(view{members: []member{running("orders-0")}}); got != "" {
		t.Errorf("refusedSettings with none refused: %q", got)
	}

	st := computeStatus(orders(nil), observed{statefulSet: instances(1), roles: &roleState{refused: want}})
	d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	r := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if st.Phase != v1alpha1.DatabaseDegraded || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonParameterRefused ||
		!strings.HasSuffix(d.Message, want) || r.Status != metav1.ConditionTrue || st.Version != "16" {
		t.Errorf("with refused settings: phase %s, Degraded %+v, Ready %s, version %q; want Degraded with the refusals, Ready, 16", st.Phase, d, r.Status, st.Version)
	}
	st = computeStatus(orders(&st), observed{statefulSet: instances(1), roles: &roleState{}})
	if d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); st.Phase != v1alpha1.DatabaseRunning || d.Status != metav1.ConditionFalse {
		t.Errorf("once fixed: phase %s, Degraded %+v", st.Phase, d)
	}
}

func TestIsInstancePod(t *testing.T) {
	db := orders(nil)
	for name, want := range map[string]bool{
		"orders-0": true, "orders-12": true, "orders-backup-x1": false, "orders": false, "orders-": false, "other-0": false,
	} {
		if got := isInstancePod(db, name); got != want {
			t.Errorf("isInstancePod(%q) = %t, want %t", name, got, want)
		}
	}
}

// TestSettleDelay holds back the status of a new Database until Ready, its
// first write included, but not a change of the term it remembers, not a
// problem, and not Ready.
func TestSettleDelay(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	db := orders(nil)
	db.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
	first := computeStatus(db, observed{statefulSet: instances(0)})
	// Before its first write the status is the CRD's default.
	db.Status.ObservedGeneration = -1
	if got := settleDelay(db, nil, first, now); got != v1alpha1.DatabaseFirstRolloutSettle-time.Second {
		t.Errorf("no status yet, creating: delay %s, want %s", got, v1alpha1.DatabaseFirstRolloutSettle-time.Second)
	}
	if got := settleDelay(db, nil, first, now.Add(v1alpha1.DatabaseFirstRolloutSettle)); got > 0 {
		t.Errorf("no status yet, past the settle time: delay %s, want none", got)
	}
	// A Database first reconciled long after its creation (a bulk create's
	// queue) has the whole settle time from its StatefulSet's creation.
	late := now.Add(10 * time.Minute)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(late)}}
	if got := settleDelay(db, sts, first, late.Add(time.Second)); got != v1alpha1.DatabaseFirstRolloutSettle-time.Second {
		t.Errorf("no status yet, StatefulSet created 10 min after the Database: delay %s, want %s", got, v1alpha1.DatabaseFirstRolloutSettle-time.Second)
	}
	if got := settleDelay(db, sts, first, late.Add(v1alpha1.DatabaseFirstRolloutSettle)); got > 0 {
		t.Errorf("no status yet, past the settle time from the StatefulSet's creation: delay %s, want none", got)
	}
	broken := computeStatus(db, observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonCredentialsNotFound, Message: "no Secret"}})
	if got := settleDelay(db, nil, broken, now); got != 0 {
		t.Errorf("no status yet, a problem: delay %s, want none", got)
	}
	db.Status = *first.DeepCopy()
	later := *first.DeepCopy()
	later.ReadyReplicas = 0
	later.Instances = []v1alpha1.DatabaseInstance{{Name: "orders-0"}}
	if got := settleDelay(db, nil, later, now); got != v1alpha1.DatabaseFirstRolloutSettle-time.Second {
		t.Errorf("creating, 1 s old: delay %s, want %s", got, v1alpha1.DatabaseFirstRolloutSettle-time.Second)
	}
	served := *later.DeepCopy()
	served.Term = 1
	if got := settleDelay(db, nil, served, now); got != 0 {
		t.Errorf("the first primary served (term 1): delay %s, want none", got)
	}
	if got := settleDelay(db, nil, later, now.Add(v1alpha1.DatabaseFirstRolloutSettle)); got > 0 {
		t.Errorf("past the settle time: delay %s, want none", got)
	}
	ready := computeStatus(db, observed{statefulSet: instances(1)})
	if c := meta.FindStatusCondition(ready.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("one ready instance: Ready = %+v, want True", c)
	}
	if got := settleDelay(db, nil, ready, now); got != 0 {
		t.Errorf("ready: delay %s, want none", got)
	}
}

// TestNewCauseWhileDegradedIsAnnounced: a Database Degraded already that is
// Degraded for another reason gets a Warning event with it; the same
// reason again, with another message, gets none.
func TestNewCauseWhileDegradedIsAnnounced(t *testing.T) {
	degraded := func(reason, msg string) *v1alpha1.DatabaseStatus {
		return &v1alpha1.DatabaseStatus{Phase: v1alpha1.DatabaseDegraded, Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg},
		}}
	}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	r.announce(orders(degraded(v1alpha1.ReasonUnavailable, "1 of 2 instances ready")),
		degraded(v1alpha1.ReasonParameterRefused, "timezone on orders-0: invalid value"))
	r.announce(orders(degraded(v1alpha1.ReasonParameterRefused, "timezone on orders-0: invalid value")),
		degraded(v1alpha1.ReasonParameterRefused, "timezone on orders-0, orders-1: invalid value"))
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 || !strings.Contains(got[0], "Warning ParameterRefused") || !strings.Contains(got[0], "timezone on orders-0") {
		t.Errorf("events = %q, want one Warning ParameterRefused", got)
	}
}

// TestConfigBehind: a running instance whose server loaded another
// configuration than the ConfigMap's is behind; one that reports none, or
// does not run, is not counted.
func TestConfigBehind(t *testing.T) {
	running := func(config string) member {
		return member{name: "orders-0", report: &instance.Report{Phase: instance.PhaseRunning, Config: config}}
	}
	for _, tc := range []struct {
		name    string
		members []member
		want    bool
	}{
		{"loaded the ConfigMap's", []member{running("new")}, false},
		{"loaded an older one", []member{running("new"), running("old")}, true},
		{"reports none", []member{running("")}, false},
		{"not running", []member{{name: "orders-1", report: &instance.Report{Phase: instance.PhaseStarting, Config: "old"}}}, false},
		{"no report", []member{{name: "orders-1", err: "no answer"}}, false},
	} {
		if got := configBehind(view{members: tc.members}, "new"); got != tc.want {
			t.Errorf("%s: configBehind = %t, want %t", tc.name, got, tc.want)
		}
	}
}
