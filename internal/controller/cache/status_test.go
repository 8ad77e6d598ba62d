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

package cache

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/rollout"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// statefulSet is a three-node StatefulSet's status.
func statefulSet(replicas, updated, ready int32) *rollout.State {
	const want int32 = 3
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "store", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: new(want)},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 2, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready, AvailableReplicas: ready,
		},
	}
	return new(rollout.OfStatefulSet(sts))
}

func TestComputeStatus(t *testing.T) {
	running := func(c *v1alpha1.Cache) {
		c.Status.Phase = v1alpha1.CacheRunning
		c.Status.Replicas, c.Status.ReadyReplicas = 3, 3
		conditions.Set(&c.Status.Conditions, 1, conditions.True(v1alpha1.ReasonAvailable, ""), conditions.False(v1alpha1.ReasonRolloutComplete, ""), conditions.False(v1alpha1.ReasonHealthy, ""))
	}
	imagePull := &stuckpods.Problem{Reason: v1alpha1.ReasonImagePullFailing, Message: `pod store-0 container redis: ImagePullBackOff: Back-off pulling image "redis:nope"`}
	stuck := func(c *v1alpha1.Cache) {
		c.Status.Phase = v1alpha1.CacheDegraded
		conditions.Set(&c.Status.Conditions, 1, conditions.False(imagePull.Reason, imagePull.Message), conditions.False(imagePull.Reason, imagePull.Message), conditions.True(imagePull.Reason, imagePull.Message))
	}
	tests := []struct {
		name   string
		cache  *v1alpha1.Cache
		obs    observed
		phase  v1alpha1.CachePhase
		ready  metav1.ConditionStatus
		reason string
	}{
		{"no workload yet", newCache(v1alpha1.EngineRedis), observed{}, v1alpha1.CachePending, metav1.ConditionFalse, v1alpha1.ReasonCreating},
		{"first rollout", newCache(v1alpha1.EngineRedis), observed{workload: statefulSet(3, 3, 1)}, v1alpha1.CacheDeploying, metav1.ConditionFalse, v1alpha1.ReasonCreating},
		{"all ready", newCache(v1alpha1.EngineRedis), observed{workload: statefulSet(3, 3, 3)}, v1alpha1.CacheRunning, metav1.ConditionTrue, v1alpha1.ReasonAvailable},
		{"node lost after ready", newCache(v1alpha1.EngineRedis, running), observed{workload: statefulSet(3, 3, 2)}, v1alpha1.CacheDegraded, metav1.ConditionFalse, v1alpha1.ReasonUnavailable},
		{"scaled up from 2 to 3 nodes, the new one not ready yet", newCache(v1alpha1.EngineRedis, running, func(c *v1alpha1.Cache) { c.Status.Replicas, c.Status.ReadyReplicas = 2, 2 }),
			observed{workload: statefulSet(3, 3, 2)}, v1alpha1.CacheDeploying, metav1.ConditionFalse, v1alpha1.ReasonRollingOut},
		{"scaled up from 1 to 3 memcached nodes, all ready, one not yet available", newCache(v1alpha1.EngineMemcached, running),
			observed{workload: new(rollout.OfDeployment(&appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "sessions", Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: new(int32(3))},
				Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 2,
					Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}},
			}))}, v1alpha1.CacheDeploying, metav1.ConditionFalse, v1alpha1.ReasonRollingOut},
		{"rolling out after ready", newCache(v1alpha1.EngineRedis, running), observed{workload: statefulSet(3, 1, 3)}, v1alpha1.CacheDeploying, metav1.ConditionFalse, v1alpha1.ReasonRollingOut},
		{"scaling up after ready", newCache(v1alpha1.EngineRedis, running), observed{workload: statefulSet(2, 2, 2)}, v1alpha1.CacheDeploying, metav1.ConditionFalse, v1alpha1.ReasonRollingOut},
		{"problem", newCache(v1alpha1.EngineRedis, running), observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonNameConflict, Message: "taken"}}, v1alpha1.CacheDegraded, metav1.ConditionFalse, v1alpha1.ReasonNameConflict},
		{"a pod cannot start in the first rollout", newCache(v1alpha1.EngineRedis), observed{workload: statefulSet(1, 1, 0), stuck: imagePull},
			v1alpha1.CacheDegraded, metav1.ConditionFalse, v1alpha1.ReasonImagePullFailing},
		{"a pod cannot start after ready", newCache(v1alpha1.EngineRedis, running), observed{workload: statefulSet(3, 3, 2), stuck: imagePull},
			v1alpha1.CacheDegraded, metav1.ConditionFalse, v1alpha1.ReasonImagePullFailing},
		{"a pod that cannot start is ignored while every node is ready", newCache(v1alpha1.EngineRedis, running), observed{workload: statefulSet(3, 3, 3), stuck: imagePull},
			v1alpha1.CacheRunning, metav1.ConditionTrue, v1alpha1.ReasonAvailable},
		{"recovers once its pods start", newCache(v1alpha1.EngineRedis, stuck), observed{workload: statefulSet(3, 3, 3)},
			v1alpha1.CacheRunning, metav1.ConditionTrue, v1alpha1.ReasonAvailable},
		{"memcached stalled", newCache(v1alpha1.EngineMemcached), observed{workload: new(rollout.OfDeployment(&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "sessions", Generation: 1},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "too slow"},
			}},
		}))}, v1alpha1.CacheDegraded, metav1.ConditionFalse, "ProgressDeadlineExceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := computeStatus(tt.cache, tt.obs)
			r := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if st.Phase != tt.phase || r.Status != tt.ready || r.Reason != tt.reason {
				t.Errorf("phase %q, Ready %s/%s; want %q, %s/%s", st.Phase, r.Status, r.Reason, tt.phase, tt.ready, tt.reason)
			}
			if len(st.Conditions) != 5 {
				t.Errorf("conditions = %d, want Ready, Progressing, Degraded, Reconciling and Stalled", len(st.Conditions))
			}
			if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReconciling) && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionStalled) {
				t.Error("Reconciling and Stalled are both True")
			}
		})
	}
}

func TestStatusNodesOnlyForMemcached(t *testing.T) {
	obs := observed{nodes: []string{"a", "b"}}
	if st := computeStatus(newCache(v1alpha1.EngineMemcached), obs); len(st.Nodes) != 2 {
		t.Errorf("memcached nodes = %v", st.Nodes)
	}
	if st := computeStatus(newCache(v1alpha1.EngineRedis), obs); st.Nodes != nil {
		t.Errorf("redis nodes = %v", st.Nodes)
	}
	st := computeStatus(newCache(v1alpha1.EngineMemcached), observed{})
	if st.Endpoint != "sessions.prod.svc:11211" || st.Selector != "steward.dev/cache=sessions" || st.Version != "1.6" {
		t.Errorf("status = %+v", st)
	}
}

func TestComputeStatusCarriesThePodsMessage(t *testing.T) {
	p := &stuckpods.Problem{Reason: v1alpha1.ReasonCrashLooping, Message: "pod store-0 container redis: CrashLoopBackOff: Bad directive or wrong number of arguments (exit code 1)"}
	st := computeStatus(newCache(v1alpha1.EngineRedis), observed{workload: statefulSet(1, 1, 0), stuck: p})
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionDegraded} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c.Reason != p.Reason || c.Message != p.Message {
			t.Errorf("%s = %s: %q, want %s: %q", typ, c.Reason, c.Message, p.Reason, p.Message)
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionTrue {
		t.Errorf("Degraded = %s", c.Status)
	}
}
