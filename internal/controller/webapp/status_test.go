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

package webapp

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/priority"
	"github.com/steward-dev/steward/internal/stuckpods"
)

func deployment(spec, observedGen, gen int64, replicas, updated, ready, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(spec))},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: observedGen, Replicas: replicas, UpdatedReplicas: updated,
			ReadyReplicas: ready, AvailableReplicas: available, Conditions: conds,
		},
	}
}

func readyBefore(a *v1alpha1.WebApp) {
	a.Status.Phase = v1alpha1.WebAppRunning
	a.Status.Replicas, a.Status.ReadyReplicas = 1, 1
	a.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAvailable}}
}

// stuckBefore makes a WebApp Degraded by a pod that could not start.
func stuckBefore(a *v1alpha1.WebApp) {
	a.Status.Phase = v1alpha1.WebAppDegraded
	a.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCrashLooping},
		{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCrashLooping},
	}
}

var (
	crashLooping = &stuckpods.Problem{
		Reason: v1alpha1.ReasonCrashLooping, Message: "pod shop-5d9f-abc container app: CrashLoopBackOff: panic: no config (exit code 2)",
	}
	unschedulable = &stuckpods.Problem{
		Reason: v1alpha1.ReasonPodsUnschedulable, Message: "pod shop-5d9f-abc: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.",
	}
)

// Conditions of a Deployment's status.
var (
	progressDeadline = appsv1.DeploymentCondition{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "shop-1" has timed out progressing.`,
	}
	rolloutDone = appsv1.DeploymentCondition{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
	}
)

func TestComputeStatus(t *testing.T) {
	replicaFailure := appsv1.DeploymentCondition{
		Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: "exceeded quota",
	}

	tests := []struct {
		name        string
		app         *v1alpha1.WebApp
		obs         observed
		phase       v1alpha1.WebAppPhase
		ready       metav1.ConditionStatus
		reason      string // of Ready
		degraded    metav1.ConditionStatus
		observedGen int64
		desired     int32
	}{
		{
			name: "no deployment yet", app: newApp(), obs: observed{},
			phase: v1alpha1.WebAppPending, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonCreating,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "first rollout in progress", app: newApp(),
			obs:   observed{deployment: deployment(1, 1, 1, 1, 1, 0, 0)},
			phase: v1alpha1.WebAppDeploying, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonCreating,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "deployment not yet observed its new spec", app: newApp(readyBefore),
			obs:   observed{deployment: deployment(1, 1, 2, 1, 1, 1, 1)},
			phase: v1alpha1.WebAppDeploying, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonRollingOut,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "all ready", app: newApp(),
			obs:   observed{deployment: deployment(1, 1, 1, 1, 1, 1, 1, rolloutDone)},
			phase: v1alpha1.WebAppRunning, ready: metav1.ConditionTrue, reason: v1alpha1.ReasonAvailable,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "old pods still running", app: newApp(readyBefore),
			obs:   observed{deployment: deployment(3, 2, 2, 4, 3, 3, 3)},
			phase: v1alpha1.WebAppDeploying, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonRollingOut,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "progress deadline exceeded", app: newApp(readyBefore),
			obs:   observed{deployment: deployment(1, 2, 2, 2, 1, 1, 1, progressDeadline)},
			phase: v1alpha1.WebAppDegraded, ready: metav1.ConditionFalse, reason: "ProgressDeadlineExceeded",
			degraded: metav1.ConditionTrue, observedGen: 1, desired: 1,
		},
		{
			name: "pods cannot be created", app: newApp(),
			obs:   observed{deployment: deployment(1, 1, 1, 0, 0, 0, 0, replicaFailure)},
			phase: v1alpha1.WebAppDegraded, ready: metav1.ConditionFalse, reason: "FailedCreate",
			degraded: metav1.ConditionTrue, observedGen: 1, desired: 1,
		},
		{
			name: "pods lost after a complete rollout", app: newApp(readyBefore),
			obs:   observed{deployment: deployment(1, 1, 1, 1, 1, 0, 0, rolloutDone)},
			phase: v1alpha1.WebAppDegraded, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonUnavailable,
			degraded: metav1.ConditionTrue, observedGen: 1, desired: 1,
		},
		{
			name: "scaled up from 2 to 3, the new pod not ready yet", app: newApp(readyBefore, func(a *v1alpha1.WebApp) {
				a.Spec.Replicas = new(int32(3))
				a.Status.Replicas, a.Status.ReadyReplicas = 2, 2
			}),
			obs:   observed{deployment: deployment(3, 1, 1, 3, 3, 2, 2, rolloutDone)},
			phase: v1alpha1.WebAppDeploying, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonRollingOut,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 3,
		},
		{
			// The status written when the new pod turned ready already
			// counts it: the scale-up's start is no longer known.
			name: "scaled up from 2 to 3, every pod ready, the new one not yet available", app: newApp(readyBefore, func(a *v1alpha1.WebApp) {
				a.Spec.Replicas = new(int32(3))
				a.Status.Phase, a.Status.Replicas, a.Status.ReadyReplicas = v1alpha1.WebAppDeploying, 3, 3
			}),
			obs:   observed{deployment: deployment(3, 1, 1, 3, 3, 3, 2, rolloutDone)},
			phase: v1alpha1.WebAppDeploying, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonRollingOut,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 3,
		},
		{
			name: "scaled to zero", app: newApp(func(a *v1alpha1.WebApp) { a.Spec.Replicas = new(int32(0)) }),
			obs:   observed{deployment: deployment(0, 1, 1, 0, 0, 0, 0, rolloutDone)},
			phase: v1alpha1.WebAppRunning, ready: metav1.ConditionTrue, reason: v1alpha1.ReasonAvailable,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 0,
		},
		{
			name: "autoscaler's choice is the desired count",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 9}
			}),
			obs: observed{
				deployment: deployment(5, 1, 1, 5, 5, 5, 5, rolloutDone),
				hpa:        &autoscalingv2.HorizontalPodAutoscaler{Status: autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: 5}},
			},
			phase: v1alpha1.WebAppRunning, ready: metav1.ConditionTrue, reason: v1alpha1.ReasonAvailable,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 5,
		},
		{
			name:  "waiting for a pull secret",
			app:   newApp(),
			obs:   observed{waiting: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForPullSecret, Message: "Waiting for image pull Secret registry to exist"}},
			phase: v1alpha1.WebAppPending, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonWaitingForPullSecret,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "a pod cannot start during the first rollout", app: newApp(),
			obs:   observed{deployment: deployment(1, 1, 1, 1, 1, 0, 0), stuck: crashLooping},
			phase: v1alpha1.WebAppDegraded, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonCrashLooping,
			degraded: metav1.ConditionTrue, observedGen: 1, desired: 1,
		},
		{
			name: "a pod that cannot start says more than the progress deadline", app: newApp(readyBefore),
			obs:   observed{deployment: deployment(1, 2, 2, 2, 1, 1, 1, progressDeadline), stuck: unschedulable},
			phase: v1alpha1.WebAppDegraded, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonPodsUnschedulable,
			degraded: metav1.ConditionTrue, observedGen: 1, desired: 1,
		},
		{
			name: "a pod that cannot start is ignored while every pod wanted is available", app: newApp(readyBefore),
			obs:   observed{deployment: deployment(1, 1, 1, 1, 1, 1, 1, rolloutDone), stuck: unschedulable},
			phase: v1alpha1.WebAppRunning, ready: metav1.ConditionTrue, reason: v1alpha1.ReasonAvailable,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "recovers once its pods start", app: newApp(stuckBefore),
			obs:   observed{deployment: deployment(1, 1, 1, 1, 1, 1, 1, rolloutDone)},
			phase: v1alpha1.WebAppRunning, ready: metav1.ConditionTrue, reason: v1alpha1.ReasonAvailable,
			degraded: metav1.ConditionFalse, observedGen: 1, desired: 1,
		},
		{
			name: "a user error records the generation it was found in",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Generation = 2
				a.Status.ObservedGeneration = 1
			}),
			obs:   observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonNameConflict, Message: "a Deployment named shop already exists"}},
			phase: v1alpha1.WebAppDegraded, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonNameConflict,
			degraded: metav1.ConditionTrue, observedGen: 2, desired: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := computeStatus(tt.app, tt.obs)
			if st.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.phase)
			}
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if ready == nil || ready.Status != tt.ready || ready.Reason != tt.reason {
				t.Errorf("Ready = %+v, want %s/%s", ready, tt.ready, tt.reason)
			}
			if d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != tt.degraded {
				t.Errorf("Degraded = %+v, want %s", d, tt.degraded)
			}
			if p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); p == nil {
				t.Errorf("Progressing missing")
			}
			if st.ObservedGeneration != tt.observedGen {
				t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, tt.observedGen)
			}
			if st.DesiredReplicas != tt.desired {
				t.Errorf("desiredReplicas = %d, want %d", st.DesiredReplicas, tt.desired)
			}
			if st.Selector != "steward.dev/webapp=shop" {
				t.Errorf("selector = %q", st.Selector)
			}
		})
	}
}

func TestComputeStatusKeepsTransitionTimes(t *testing.T) {
	app := newApp()
	dep := deployment(1, 1, 1, 1, 1, 1, 1)
	first := computeStatus(app, observed{deployment: dep})
	app.Status = first
	past := metav1.NewTime(first.Conditions[0].LastTransitionTime.Add(-3600e9))
	for i := range app.Status.Conditions {
		app.Status.Conditions[i].LastTransitionTime = past
	}
	second := computeStatus(app, observed{deployment: dep})
	for _, c := range second.Conditions {
		if !c.LastTransitionTime.Equal(&past) {
			t.Errorf("%s transition time moved though its status did not change", c.Type)
		}
	}
}

func TestSettleDelay(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	app := newApp(func(a *v1alpha1.WebApp) { a.CreationTimestamp = metav1.NewTime(created) })
	creating := computeStatus(app, observed{deployment: deployment(1, 1, 1, 1, 1, 0, 0)})
	running := computeStatus(app, observed{deployment: deployment(1, 1, 1, 1, 1, 1, 1)})
	waiting := computeStatus(app, observed{waiting: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForPullSecret, Message: "Waiting"}})

	// Before its first write the status is the CRD's default.
	app.Status.ObservedGeneration = -1
	if got := settleDelay(app, nil, creating, created.Add(100*time.Millisecond)); got != v1alpha1.FirstRolloutSettle-100*time.Millisecond {
		t.Errorf("no status yet, creating: delay %s, want %s", got, v1alpha1.FirstRolloutSettle-100*time.Millisecond)
	}
	if got := settleDelay(app, nil, waiting, created.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("no status yet, waiting for a Secret: delay %s, want none", got)
	}
	if got := settleDelay(app, nil, running, created.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("no status yet, ready: delay %s, want none", got)
	}
	// A WebApp first reconciled long after its creation (a bulk create's
	// queue) has the whole settle time from its Deployment's creation.
	late := created.Add(10 * time.Minute)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(late)}}
	if got := settleDelay(app, dep, creating, late.Add(time.Second)); got != v1alpha1.FirstRolloutSettle-time.Second {
		t.Errorf("no status yet, Deployment created 10 min after the WebApp: delay %s, want %s", got, v1alpha1.FirstRolloutSettle-time.Second)
	}
	if got := settleDelay(app, dep, creating, late.Add(v1alpha1.FirstRolloutSettle)); got > 0 {
		t.Errorf("no status yet, past the settle time from the Deployment's creation: delay %s, want none", got)
	}
	if got := settleDelay(app, dep, running, late.Add(time.Second)); got != 0 {
		t.Errorf("no status yet, ready, Deployment created late: delay %s, want none", got)
	}
	app.Status = *creating.DeepCopy()
	if got := settleDelay(app, nil, creating, created.Add(500*time.Millisecond)); got != v1alpha1.FirstRolloutSettle-500*time.Millisecond {
		t.Errorf("creating, 0.5 s old: delay %s, want %s", got, v1alpha1.FirstRolloutSettle-500*time.Millisecond)
	}
	if got := settleDelay(app, nil, creating, created.Add(v1alpha1.FirstRolloutSettle+time.Second)); got > 0 {
		t.Errorf("creating, past the settle time: delay %s, want none", got)
	}
	if got := settleDelay(app, nil, running, created.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("ready: delay %s, want none", got)
	}
	if got := settleDelay(app, nil, waiting, created.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("waiting for a Secret: delay %s, want none", got)
	}
	edited := *creating.DeepCopy()
	edited.ObservedGeneration = 2
	if got := settleDelay(app, nil, edited, created.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("spec changed: delay %s, want none", got)
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	waitingSince := func(d time.Duration) v1alpha1.WebAppStatus {
		return v1alpha1.WebAppStatus{Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-d)),
		}}}
	}
	degradedSince := func(d time.Duration) v1alpha1.WebAppStatus {
		return v1alpha1.WebAppStatus{Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-d)),
		}}}
	}
	w := observed{waiting: &conditions.Problem{}}
	for _, tt := range []struct {
		obs    observed
		status v1alpha1.WebAppStatus
		want   time.Duration
	}{
		{observed{}, v1alpha1.WebAppStatus{}, 0},
		{observed{problem: &conditions.Problem{}}, v1alpha1.WebAppStatus{}, retryUserError},
		{observed{problem: &conditions.Problem{}}, degradedSince(3 * time.Minute), 3 * time.Minute},
		{observed{problem: &conditions.Problem{}}, degradedSince(time.Hour), priority.MaxRecheck},
		{w, waitingSince(0), minWaitRetry},
		{w, waitingSince(40 * time.Second), 40 * time.Second},
		{w, waitingSince(time.Hour), priority.MaxRecheck},
		{observed{recheck: 42 * time.Second}, v1alpha1.WebAppStatus{}, 42 * time.Second},
	} {
		got := retryAfter(tt.obs, tt.status, now)
		if got.RequeueAfter != tt.want {
			t.Errorf("retryAfter(%+v) = %s, want %s", tt.obs, got.RequeueAfter, tt.want)
		}
		if recheck := tt.obs.problem != nil || tt.obs.waiting != nil; recheck != (got.Priority != nil && *got.Priority == priority.Recheck) {
			t.Errorf("retryAfter(%+v): priority %v, want priority.Recheck only for a problem or a wait", tt.obs, got.Priority)
		}
	}
}

// TestStuckPodsDegradeAfterTheTimeout follows an unschedulable pod from
// its status to the WebApp's: not Degraded within the timeout, Degraded
// with the scheduler's message after it, and Running again once it starts.
func TestStuckPodsDegradeAfterTheTimeout(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(unschedulableFor time.Duration) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-5d9f-abc", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/1 nodes are available: 1 Insufficient memory.", LastTransitionTime: metav1.NewTime(now.Add(-unschedulableFor)),
			}}},
		}
	}
	observe := func(pods ...corev1.Pod) observed {
		obs := observed{deployment: deployment(1, 1, 1, 1, 1, 0, 0)}
		obs.stuck, obs.recheck = stuckpods.Find(pods, 2*time.Minute, now)
		if obs.stuck == nil && len(pods) > 0 && pods[0].Status.Phase == corev1.PodRunning {
			obs.deployment = deployment(1, 1, 1, 1, 1, 1, 1)
		}
		return obs
	}
	app := newApp()

	obs := observe(pod(time.Minute))
	st := computeStatus(app, obs)
	if st.Phase != v1alpha1.WebAppDeploying || obs.recheck <= 0 || obs.recheck > time.Minute+2*time.Second {
		t.Fatalf("within the timeout: phase %s, recheck after %v; want Deploying and a recheck in about a minute", st.Phase, obs.recheck)
	}
	if got := retryAfter(obs, st, now).RequeueAfter; got != obs.recheck {
		t.Errorf("retry after %v, want the recheck %v", got, obs.recheck)
	}

	app.Status = st
	st = computeStatus(app, observe(pod(3*time.Minute)))
	d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	want := "pod shop-5d9f-abc: Unschedulable: 0/1 nodes are available: 1 Insufficient memory."
	if st.Phase != v1alpha1.WebAppDegraded || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonPodsUnschedulable || d.Message != want {
		t.Fatalf("after the timeout: phase %s, Degraded %+v", st.Phase, d)
	}

	app.Status = st
	started := pod(time.Hour)
	started.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}}
	st = computeStatus(app, observe(started))
	if d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); st.Phase != v1alpha1.WebAppRunning || d.Status != metav1.ConditionFalse {
		t.Errorf("after the pod started: phase %s, Degraded %+v", st.Phase, d)
	}
}

// TestStuckPodsAreLookedForOnlyWhereTheyMatter: the reconcile skips the
// pod list (mayHaveStuckPods) only where a pod that cannot start would not
// change the status.
func TestStuckPodsAreLookedForOnlyWhereTheyMatter(t *testing.T) {
	tests := []struct {
		name string
		dep  *appsv1.Deployment
		look bool
	}{
		{"not seen by its controller yet", deployment(1, 0, 1, 0, 0, 0, 0), true},
		{"first rollout", deployment(1, 1, 1, 1, 1, 0, 0), true},
		{"a pod became unavailable", deployment(2, 1, 1, 2, 2, 1, 1, rolloutDone), true},
		{"past its progress deadline", deployment(1, 2, 2, 2, 1, 1, 1, progressDeadline), true},
		{"a new generation not rolled out", deployment(1, 1, 2, 1, 1, 1, 1, rolloutDone), true},
		{"every pod wanted available", deployment(1, 1, 1, 1, 1, 1, 1, rolloutDone), false},
		{"scaled to zero", deployment(0, 1, 1, 0, 0, 0, 0, rolloutDone), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mayHaveStuckPods(tt.dep); got != tt.look {
				t.Fatalf("mayHaveStuckPods = %v, want %v", got, tt.look)
			}
			if tt.look {
				return
			}
			for _, before := range []func(*v1alpha1.WebApp){readyBefore, stuckBefore} {
				without := computeStatus(newApp(before), observed{deployment: tt.dep})
				with := computeStatus(newApp(before), observed{deployment: tt.dep, stuck: crashLooping})
				for _, st := range []*v1alpha1.WebAppStatus{&with, &without} {
					for i := range st.Conditions {
						st.Conditions[i].LastTransitionTime = metav1.Time{}
					}
				}
				if !reflect.DeepEqual(with, without) {
					t.Errorf("a stuck pod changes the status of a WebApp whose pods are not looked at:\n%+v\nagainst\n%+v", with, without)
				}
			}
		})
	}
}

// TestStatusOfItsOwnEchoIsTheSame checks what leaving the echo of the
// operator's own status write unreconciled (notOwnStatusEcho) rests on: a
// status computed again from the status just written, with the same
// children, is the same status. computeStatus reads two things from the
// status it had: whether the WebApp was ever Ready (the reason of a first
// rollout) and the ready count a scale-up started from.
func TestStatusOfItsOwnEchoIsTheSame(t *testing.T) {
	before := map[string]func(*v1alpha1.WebApp){
		"new":     func(*v1alpha1.WebApp) {},
		"running": readyBefore,
		"stuck":   stuckBefore,
		"deploying 1 ready": func(a *v1alpha1.WebApp) {
			readyBefore(a)
			a.Status.Phase = v1alpha1.WebAppDeploying
			a.Status.Conditions[0].Status, a.Status.Conditions[0].Reason = metav1.ConditionFalse, v1alpha1.ReasonRollingOut
		},
		"creating": func(a *v1alpha1.WebApp) {
			a.Status.Phase = v1alpha1.WebAppDeploying
			a.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCreating}}
		},
	}
	sameBut := func(a, b v1alpha1.WebAppStatus) bool {
		for _, st := range []*v1alpha1.WebAppStatus{&a, &b} {
			for i := range st.Conditions {
				st.Conditions[i].LastTransitionTime = metav1.Time{}
			}
		}
		return reflect.DeepEqual(a, b)
	}
	checked := 0
	for name, mutate := range before {
		for want := int32(1); want <= 3; want++ {
			for ready := int32(0); ready <= want; ready++ {
				for available := int32(0); available <= ready; available++ {
					for _, observedGen := range []int64{1, 2} {
						for _, conds := range [][]appsv1.DeploymentCondition{nil, {rolloutDone}, {progressDeadline}} {
							dep := deployment(int64(want), observedGen, 2, want, want, ready, available, conds...)
							for _, stuck := range []*stuckpods.Problem{nil, crashLooping} {
								obs := observed{deployment: dep, stuck: stuck}
								app := newApp(mutate)
								first := computeStatus(app, obs)
								echo := app.DeepCopy()
								echo.Status = *first.DeepCopy()
								second := computeStatus(echo, obs)
								checked++
								if !sameBut(first, second) {
									t.Errorf("%s, want %d, ready %d, available %d, observed generation %d, conditions %v, stuck %v: computed again from its own status it changes\nfirst:  %+v\nsecond: %+v",
										name, want, ready, available, observedGen, conds, stuck != nil, first, second)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d states", checked)
}
