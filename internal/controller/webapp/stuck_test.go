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

package webapp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/manager"
)

// mgrStuckPodTimeout is the stuck pod timeout of the manager under test.
var mgrStuckPodTimeout = manager.DefaultOptions().StuckPodTimeout

// createPod plays the ReplicaSet controller's part, which envtest does not
// run: a pod with the Deployment's template labels, owned by it.
func createPod(t *testing.T, dep *appsv1.Deployment, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: dep.Namespace, Name: name, Labels: dep.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: new(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: dep.Spec.Template.Spec.Containers[0].Image}}},
	}
	if err := k8s.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
}

// setPodStatus plays the scheduler's and kubelet's part.
func setPodStatus(t *testing.T, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status = status
		return k8s.Status().Update(context.Background(), pod)
	})
}

// unschedulableSince is the status the scheduler writes when no node fits.
func unschedulableSince(at time.Time) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient memory.", LastTransitionTime: metav1.NewTime(at),
	}}}
}

func degradedBy(reason, message string) func(*v1alpha1.WebApp) error {
	return func(a *v1alpha1.WebApp) error {
		d, r := condition(a, v1alpha1.ConditionDegraded), condition(a, v1alpha1.ConditionReady)
		if a.Status.Phase != v1alpha1.WebAppDegraded || d == nil || d.Status != metav1.ConditionTrue || d.Reason != reason ||
			r == nil || r.Status != metav1.ConditionFalse {
			return fmt.Errorf("phase %s, Degraded %+v, Ready %+v; want Degraded by %s", a.Status.Phase, d, r, reason)
		}
		if d.Message != message {
			return fmt.Errorf("message %q, want %q", d.Message, message)
		}
		return nil
	}
}

// TestUnschedulablePodDegradesAndRecovers: a pod the scheduler has not
// placed for longer than the stuck pod timeout (its lastTransitionTime is
// ten minutes old) makes the WebApp Degraded with the scheduler's message
// and a Warning event; once the pod runs, the WebApp is Running again.
func TestUnschedulablePodDegradesAndRecovers(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "cramped")
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "cramped"), nil)
	pod := createPod(t, dep, "cramped-5d9f-abc")
	setPodStatus(t, pod, unschedulableSince(time.Now().Add(-10*time.Minute)))

	waitFor(t, app, degradedBy(v1alpha1.ReasonPodsUnschedulable,
		"pod cramped-5d9f-abc: Unschedulable: 0/1 nodes are available: 1 Insufficient memory."))
	hasEvent(t, ns, "cramped", "Warning/"+v1alpha1.ReasonPodsUnschedulable)

	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
	}})
	markDeploymentReady(t, dep)
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if d := condition(a, v1alpha1.ConditionDegraded); a.Status.Phase != v1alpha1.WebAppRunning || d.Status != metav1.ConditionFalse {
			return fmt.Errorf("phase %s, Degraded %+v; want Running and not Degraded", a.Status.Phase, d)
		}
		return nil
	})
}

// TestImagePullFailureIsReportedWhenTheTimeoutPasses: the pod's problem
// has lasted a little less than the stuck pod timeout when Steward first
// sees it, and nothing changes after: the reconcile Steward asked to be
// requeued for reports it.
func TestImagePullFailureIsReportedWhenTheTimeoutPasses(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "typo", func(a *v1alpha1.WebApp) { a.Spec.Image = "registry.example/shpo:1" })
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "typo"), nil)
	pod := createPod(t, dep, "typo-7c4b-xyz")
	since := metav1.NewTime(time.Now().Add(-mgrStuckPodTimeout + 3*time.Second))
	setPodStatus(t, pod, corev1.PodStatus{
		Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: since},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Image: "registry.example/shpo:1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/shpo:1"`,
			}},
		}},
	})

	waitFor(t, app, degradedBy(v1alpha1.ReasonImagePullFailing,
		`pod typo-7c4b-xyz container app: ImagePullBackOff: Back-off pulling image "registry.example/shpo:1"`))
	hasEvent(t, ns, "typo", "Warning/"+v1alpha1.ReasonImagePullFailing)
}

// TestCrashLoopAfterReadyIsReported: a Running WebApp whose pod starts
// crash-looping is Degraded at once as Unavailable (the Deployment counts
// too few available pods), and once the crash loop has lasted the stuck
// pod timeout, by the reconcile Steward asked to be requeued for, as
// CrashLooping with the container's last words and a Warning event of its
// own.
func TestCrashLoopAfterReadyIsReported(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "flaky")
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "flaky"), nil)
	markDeploymentReady(t, dep)
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.Phase != v1alpha1.WebAppRunning {
			return fmt.Errorf("phase %s, want Running", a.Status.Phase)
		}
		return nil
	})

	pod := createPod(t, dep, "flaky-6f7d-qrs")
	since := metav1.NewTime(time.Now().Add(-mgrStuckPodTimeout + 3*time.Second))
	setPodStatus(t, pod, corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: since},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Image: "registry.example/shop:1", RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 2, Reason: "Error", Message: "listening on :8080\npanic: DATABASE_URL is not set\n",
			}},
		}},
	})
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 0, 0
		return k8s.Status().Update(context.Background(), dep)
	})

	waitFor(t, app, degradedBy(v1alpha1.ReasonCrashLooping,
		"pod flaky-6f7d-qrs container app: CrashLoopBackOff: listening on :8080 | panic: DATABASE_URL is not set (exit code 2)"))
	hasEvent(t, ns, "flaky", "Warning/"+v1alpha1.ReasonCrashLooping)
}
