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

package database_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestCrashLoopingInstanceDegradesAndRecovers: the server refuses its
// configuration at every start. Envtest runs no StatefulSet controller and
// no kubelet, so the test creates the instance's pod and writes the status
// a kubelet would: CrashLoopBackOff, not ready for ten minutes, the last
// termination message being the end of the server's log (the container
// asks for FallbackToLogsOnError). The Database turns Degraded with the
// server's own error and a Warning event, and Running once the pod is
// ready.
func TestCrashLoopingInstanceDegradesAndRecovers(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "orders"))
	sts := statefulSet(t, ns, "orders")
	tmpl := sts.Spec.Template.Spec
	for _, c := range append(tmpl.InitContainers, tmpl.Containers...) {
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("container %s: terminationMessagePolicy %q, want FallbackToLogsOnError", c.Name, c.TerminationMessagePolicy)
		}
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: ns, Labels: sts.Spec.Template.Labels},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: tmpl.InitContainers[0].Name, Image: tmpl.InitContainers[0].Image}},
			Containers:     []corev1.Container{{Name: tmpl.Containers[0].Name, Image: tmpl.Containers[0].Image}},
		},
	}
	create(t, pod)
	since := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	log := "2026-11-25 10:00:00.000 UTC [7] LOG:  starting PostgreSQL 16.4\n" +
		"2026-11-25 10:00:00.001 UTC [7] FATAL:  invalid value for parameter \"shared_buffers\": \"lots\"\n" +
		`{"level":"ERROR","msg":"instance failed","error":"starting the server: exit status 1"}` + "\n"
	setPodStatus(t, pod, corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: since},
		},
		InitContainerStatuses: []corev1.ContainerStatus{{
			Name: pod.Spec.InitContainers[0].Name, Image: pod.Spec.InitContainers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
		}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "postgres", Image: pod.Spec.Containers[0].Image, RestartCount: 6,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: log,
			}},
		}},
	})

	db := waitFor(t, ns, "orders", "Degraded by CrashLooping", func(db *v1alpha1.Database) bool {
		d := condition(db, v1alpha1.ConditionDegraded)
		return db.Status.Phase == v1alpha1.DatabaseDegraded && d != nil && d.Status == metav1.ConditionTrue &&
			d.Reason == v1alpha1.ReasonCrashLooping
	})
	msg := condition(db, v1alpha1.ConditionDegraded).Message
	if !strings.HasPrefix(msg, "pod orders-0 container postgres: CrashLoopBackOff: ") ||
		!strings.Contains(msg, `FATAL:  invalid value for parameter "shared_buffers": "lots"`) || !strings.HasSuffix(msg, "(exit code 1)") {
		t.Errorf("message %q does not carry the server's error", msg)
	}
	if r := condition(db, v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonCrashLooping {
		t.Errorf("Ready = %+v, want False for CrashLooping", r)
	}
	expectWarning(t, ns, "orders", v1alpha1.ReasonCrashLooping)

	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
	}})
	markRolledOut(t, ns, "orders", 1)
	waitFor(t, ns, "orders", "Running and not Degraded", func(db *v1alpha1.Database) bool {
		d := condition(db, v1alpha1.ConditionDegraded)
		return isReady(db) && db.Status.Phase == v1alpha1.DatabaseRunning && d.Status == metav1.ConditionFalse
	})
}

// setPodStatus writes a pod's status as the scheduler and kubelet would.
func setPodStatus(t *testing.T, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	eventually(t, func() error {
		if err := get(t, pod.Namespace, pod.Name, pod); err != nil {
			return err
		}
		pod.Status = status
		return k8s.Status().Update(context.Background(), pod)
	})
}

// expectWarning waits for a Warning event with the reason about the named
// Database.
func expectWarning(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no Warning %s event for %s among %d events", reason, name, len(list.Items))
	})
}

// TestPodStuckOnAnEarlierSpecIsReplaced: an instance that cannot be
// scheduled keeps its pod of the earlier revision after the spec is fixed,
// since an ordered StatefulSet replaces a pod only once it was ready.
// Steward deletes that pod (the StatefulSet creates it again from the
// current revision) and says so in an event; a stuck pod of the current
// revision, and a ready pod of an earlier one, are left alone.
func TestPodStuckOnAnEarlierSpecIsReplaced(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "orders"))
	sts := statefulSet(t, ns, "orders")
	eventually(t, func() error {
		if err := get(t, ns, "orders", sts); err != nil {
			return err
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1,
			CurrentRevision: "orders-old", UpdateRevision: "orders-new"}
		return k8s.Status().Update(context.Background(), sts)
	})
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/2 nodes are available: 2 Insufficient cpu.", LastTransitionTime: metav1.Now(),
	}}}
	newPod := func(name, revision string) *corev1.Pod {
		labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: revision}
		for k, v := range sts.Spec.Template.Labels {
			labels[k] = v
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:16"}}},
		}
	}
	// A stuck pod of the current revision: the StatefulSet's to handle.
	current := newPod("orders-1", "orders-new")
	create(t, current)
	setPodStatus(t, current, unschedulable)
	// A ready pod of the earlier revision: the rollout's to replace.
	ready := newPod("orders-2", "orders-old")
	create(t, ready)
	setPodStatus(t, ready, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}})
	stuck := newPod("orders-0", "orders-old")
	create(t, stuck)
	setPodStatus(t, stuck, unschedulable)

	eventually(t, func() error {
		err := get(t, ns, "orders-0", &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("orders-0, stuck on the earlier revision, is still there (%w)", err)
	})
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == "orders" && e.Reason == "ReplacedPod" && strings.Contains(e.Note, "orders-0") &&
				strings.Contains(e.Note, "Insufficient cpu") {
				return nil
			}
		}
		return fmt.Errorf("no ReplacedPod event naming orders-0 and its reason")
	})
	for _, name := range []string{"orders-1", "orders-2"} {
		if err := get(t, ns, name, &corev1.Pod{}); err != nil {
			t.Errorf("%s was deleted: %v", name, err)
		}
	}
}
