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

package cache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestImagePullFailureDegradesAndRecovers: a memcached image that cannot
// be pulled for ten minutes makes the Cache Degraded with the kubelet's
// message and a Warning event; once the pod runs, the Cache is Running
// again. Envtest runs no ReplicaSet controller and no kubelet: the test
// creates the pod and writes its status.
func TestImagePullFailureDegradesAndRecovers(t *testing.T) {
	ns := namespace(t)
	c := createCache(t, ns, "sessions", v1alpha1.EngineMemcached, func(c *v1alpha1.Cache) { c.Spec.Version = "1.6" })
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "sessions"), nil)
	if p := dep.Spec.Template.Spec.Containers[0].TerminationMessagePolicy; p != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy %q, want FallbackToLogsOnError", p)
	}
	createPod(t, dep, "sessions-7b9c-abc")
	since := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	setPodStatus(t, ns, "sessions-7b9c-abc", corev1.PodStatus{
		Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: since},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: dep.Spec.Template.Spec.Containers[0].Name, Image: "memcached:1.6",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImagePull", Message: `failed to pull image "memcached:1.6": connection refused`,
			}},
		}},
	})

	waitFor(t, c, func(c *v1alpha1.Cache) error {
		d := condition(c, v1alpha1.ConditionDegraded)
		r := condition(c, v1alpha1.ConditionReady)
		want := `pod sessions-7b9c-abc container ` + dep.Spec.Template.Spec.Containers[0].Name +
			`: ErrImagePull: failed to pull image "memcached:1.6": connection refused`
		if c.Status.Phase != v1alpha1.CacheDegraded || d == nil || d.Status != metav1.ConditionTrue ||
			d.Reason != v1alpha1.ReasonImagePullFailing || d.Message != want || r.Status != metav1.ConditionFalse {
			return fmt.Errorf("phase %s, Degraded %+v, Ready %+v; want Degraded by ImagePullFailing: %s", c.Status.Phase, d, r, want)
		}
		return nil
	})
	expectWarning(t, ns, "sessions", v1alpha1.ReasonImagePullFailing)

	setPodStatus(t, ns, "sessions-7b9c-abc", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
	}})
	markDeploymentReady(t, dep)
	waitFor(t, c, ready)
}

func condition(c *v1alpha1.Cache, t string) *metav1.Condition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == t {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// setPodStatus writes a pod's status as the scheduler and kubelet would.
func setPodStatus(t *testing.T, ns, name string, status corev1.PodStatus) {
	t.Helper()
	eventually(t, func() error {
		pod := named(&corev1.Pod{}, ns, name)
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status = status
		return k8s.Status().Update(context.Background(), pod)
	})
}

// expectWarning waits for a Warning event with the reason about the named
// Cache.
func expectWarning(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Cache" && e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no Warning %s event for Cache %s among %d events", reason, name, len(list.Items))
	})
}
