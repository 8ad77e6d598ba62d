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
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// observed is what a reconcile saw of a Cache's children.
type observed struct {
	// workload is the Deployment or StatefulSet, nil when it does not exist yet.
	workload *workload
	// nodes are the names of the memcached pods, sorted.
	nodes []string
	// problem is something the user must fix, such as a name conflict, or nil.
	problem *problem
	// scaledFrom is the workload's replica count before this reconcile
	// changed it, or nil when it did not.
	scaledFrom *int32
	// stuck is a pod that has been unable to start for the stuck pod
	// timeout, or nil.
	stuck *stuckpods.Problem
	// recheck is when a pod that cannot start reaches that timeout, or 0.
	recheck time.Duration
}

// problem is a condition reason and message for something the user must fix
// or a request that failed.
type problem struct {
	reason, message string
}

// workload is what status needs of a Deployment or a StatefulSet.
type workload struct {
	kind, name string
	// want is the workload's desired replica count.
	want int32
	// current is true once the workload's controller has seen its latest spec.
	current                             bool
	replicas, updated, ready, available int32
	// failure is the workload's own report of a failed rollout, or "".
	failure, failureReason string
	// complete is true when the workload itself says its rollout completed.
	complete bool
}

// fromDeployment reads a Deployment's status.
func fromDeployment(dep *appsv1.Deployment) *workload {
	w := &workload{
		kind: "Deployment", name: dep.Name, want: 1,
		current:  dep.Status.ObservedGeneration >= dep.Generation,
		replicas: dep.Status.Replicas, updated: dep.Status.UpdatedReplicas,
		ready: dep.Status.ReadyReplicas, available: dep.Status.AvailableReplicas,
	}
	if dep.Spec.Replicas != nil {
		w.want = *dep.Spec.Replicas
	}
	for _, c := range dep.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse,
			c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			w.failure, w.failureReason = c.Message, c.Reason
		case c.Type == appsv1.DeploymentProgressing && c.Reason == "NewReplicaSetAvailable":
			w.complete = true
		}
	}
	return w
}

// fromStatefulSet reads a StatefulSet's status.
func fromStatefulSet(sts *appsv1.StatefulSet) *workload {
	w := &workload{
		kind: "StatefulSet", name: sts.Name, want: 1,
		current:  sts.Status.ObservedGeneration >= sts.Generation,
		replicas: sts.Status.Replicas, updated: sts.Status.UpdatedReplicas,
		ready: sts.Status.ReadyReplicas, available: sts.Status.AvailableReplicas,
	}
	if sts.Spec.Replicas != nil {
		w.want = *sts.Spec.Replicas
	}
	return w
}

// computeStatus derives a Cache's status from its spec, its previous status
// and its children. It is pure: the conditions keep their transition times
// when their status does not change.
func computeStatus(c *v1alpha1.Cache, obs observed) v1alpha1.CacheStatus {
	st := *c.Status.DeepCopy()
	st.Selector = k8slabels.SelectorFromSet(SelectorLabels(c)).String()
	st.Endpoint = c.Endpoint()
	st.Version = Version(c)
	gen := c.Generation
	if c.EffectiveEngine() == v1alpha1.EngineMemcached {
		st.Nodes = obs.nodes
	}

	if p := obs.problem; p != nil {
		st.Phase = v1alpha1.CacheDegraded
		setConditions(&st, gen, isFalse(p.reason, p.message), isFalse(p.reason, p.message), isTrue(p.reason, p.message))
		return st
	}
	st.ObservedGeneration = gen

	w := obs.workload
	if w == nil {
		st.Phase = v1alpha1.CachePending
		st.Replicas, st.ReadyReplicas = 0, 0
		reason := notReadyReason(c)
		setConditions(&st, gen,
			isFalse(reason, "Waiting for the workload to be created"),
			isTrue(reason, "Creating the workload"),
			isFalse(v1alpha1.ReasonHealthy, ""))
		return st
	}
	st.Replicas, st.ReadyReplicas = w.replicas, w.ready
	rolledOut := w.current && w.updated == w.want && w.replicas == w.want
	available := rolledOut && w.ready >= w.want && w.available >= w.want

	// A pod that cannot start says more than the workload's deadline.
	if p := obs.stuck; p != nil && !available {
		st.Phase = v1alpha1.CacheDegraded
		setConditions(&st, gen, isFalse(p.Reason, p.Message), isFalse(p.Reason, p.Message), isTrue(p.Reason, p.Message))
		return st
	}

	if w.failure != "" {
		msg := fmt.Sprintf("%s %s: %s", w.kind, w.name, w.failure)
		st.Phase = v1alpha1.CacheDegraded
		setConditions(&st, gen, isFalse(w.failureReason, msg), isFalse(w.failureReason, msg), isTrue(w.failureReason, msg))
		return st
	}

	switch {
	case available:
		st.Phase = v1alpha1.CacheRunning
		setConditions(&st, gen,
			isTrue(v1alpha1.ReasonAvailable, fmt.Sprintf("%d/%d nodes ready", w.ready, w.want)),
			isFalse(v1alpha1.ReasonRolloutComplete, ""),
			isFalse(v1alpha1.ReasonHealthy, ""))
	case rolledOut && (w.complete || c.Status.Phase == v1alpha1.CacheRunning || c.Status.Phase == v1alpha1.CacheDegraded):
		// Every node runs the current spec, yet some are not available: they
		// crashed or fail their probes after the rollout finished.
		msg := fmt.Sprintf("%d of %d nodes available", w.available, w.want)
		st.Phase = v1alpha1.CacheDegraded
		setConditions(&st, gen,
			isFalse(v1alpha1.ReasonUnavailable, msg),
			isFalse(v1alpha1.ReasonRolloutComplete, ""),
			isTrue(v1alpha1.ReasonUnavailable, msg))
	default:
		reason := notReadyReason(c)
		progress := fmt.Sprintf("%d of %d nodes updated, %d ready", w.updated, w.want, w.ready)
		st.Phase = v1alpha1.CacheDeploying
		setConditions(&st, gen, isFalse(reason, progress), isTrue(reason, progress), isFalse(v1alpha1.ReasonHealthy, ""))
	}
	return st
}

// notReadyReason tells a first rollout (Creating) from a later one (RollingOut).
func notReadyReason(c *v1alpha1.Cache) string {
	if neverReady(c) {
		return v1alpha1.ReasonCreating
	}
	return v1alpha1.ReasonRollingOut
}

// neverReady reports whether the Cache has not yet been Ready once.
func neverReady(c *v1alpha1.Cache) bool {
	r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
	return r == nil || (r.Status != metav1.ConditionTrue && r.Reason == v1alpha1.ReasonCreating)
}

// cond is the status, reason and message of one condition.
type cond struct {
	status          metav1.ConditionStatus
	reason, message string
}

func isTrue(reason, msg string) cond  { return cond{metav1.ConditionTrue, reason, msg} }
func isFalse(reason, msg string) cond { return cond{metav1.ConditionFalse, reason, msg} }

// setConditions sets Ready, Progressing and Degraded in one go, so no code
// path can forget one of them.
func setConditions(st *v1alpha1.CacheStatus, gen int64, ready, progressing, degraded cond) {
	for _, c := range []struct {
		t string
		cond
	}{
		{v1alpha1.ConditionReady, ready},
		{v1alpha1.ConditionProgressing, progressing},
		{v1alpha1.ConditionDegraded, degraded},
	} {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: c.t, Status: c.status, Reason: c.reason, Message: c.message, ObservedGeneration: gen,
		})
	}
}
