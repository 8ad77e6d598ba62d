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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/rollout"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// observed is what a reconcile saw of a Cache's children.
type observed struct {
	// workload is the Deployment or StatefulSet, nil when it does not exist yet.
	workload *rollout.State
	// workloadCreated is when the workload was created, zero when it does
	// not exist yet.
	workloadCreated metav1.Time
	// nodes are the names of the memcached pods, sorted.
	nodes []string
	// problem is something the user must fix, such as a name conflict, or nil.
	problem *conditions.Problem
	// scaledFrom is the workload's replica count before this reconcile
	// changed it, or nil when it did not.
	scaledFrom *int32
	// stuck is a pod that has been unable to start for the stuck pod
	// timeout, or nil.
	stuck *stuckpods.Problem
	// recheck is when a pod that cannot start reaches that timeout, or 0.
	recheck time.Duration
}

// computeStatus derives a Cache's status from its spec, its previous status
// and its children. It is pure: the conditions keep their transition times
// when their status does not change.
func computeStatus(c *v1alpha1.Cache, obs observed) v1alpha1.CacheStatus {
	st := *c.Status.DeepCopy()
	st.Selector = k8slabels.SelectorFromSet(SelectorLabels(c)).String()
	st.Endpoint = c.Endpoint()
	st.Version = Version(c)
	st.CredentialsSecret = ""
	if c.RedisAuthEnabled() {
		st.CredentialsSecret = c.CredentialsName()
	}
	gen := c.Generation
	if c.EffectiveEngine() == v1alpha1.EngineMemcached {
		st.Nodes = obs.nodes
	}

	// The generation was looked at, even when it cannot be used: the
	// conditions say why, for this generation.
	st.ObservedGeneration = gen
	if p := obs.problem; p != nil {
		st.Phase = v1alpha1.CacheDegraded
		conditions.SetProblem(&st.Conditions, gen, *p)
		return st
	}

	w := obs.workload
	if w == nil {
		st.Phase = v1alpha1.CachePending
		st.Replicas, st.ReadyReplicas = 0, 0
		reason := notReadyReason(c)
		conditions.Set(&st.Conditions, gen,
			conditions.False(reason, "Waiting for the workload to be created"),
			conditions.True(reason, "Creating the workload"),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}
	st.Replicas, st.ReadyReplicas = w.Replicas, w.Ready
	rolledOut, available := w.RolledOut, w.Healthy

	// A pod that cannot start says more than the workload's deadline.
	if p := obs.stuck; p != nil && !available {
		st.Phase = v1alpha1.CacheDegraded
		conditions.SetProblem(&st.Conditions, gen, *p)
		return st
	}

	if w.Failed() {
		msg := fmt.Sprintf("%s %s: %s", w.Kind, w.Name, w.Failure)
		st.Phase = v1alpha1.CacheDegraded
		conditions.Set(&st.Conditions, gen, conditions.False(w.FailureReason, msg), conditions.False(w.FailureReason, msg), conditions.True(w.FailureReason, msg))
		return st
	}

	switch {
	case available:
		st.Phase = v1alpha1.CacheRunning
		conditions.Set(&st.Conditions, gen,
			conditions.True(v1alpha1.ReasonAvailable, fmt.Sprintf("%d/%d nodes ready", w.Ready, w.Want)),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.False(v1alpha1.ReasonHealthy, ""))
	case rolledOut && (w.Complete || c.Status.Phase == v1alpha1.CacheRunning || c.Status.Phase == v1alpha1.CacheDegraded) && w.Ready < w.Want && !scalingUp(c, w):
		// Every node runs the current spec, yet some are not ready: they
		// crashed or fail their probes after the rollout finished. Nodes
		// ready and not yet available wait out minReadySeconds: progress.
		msg := fmt.Sprintf("%d of %d nodes available", w.Available, w.Want)
		st.Phase = v1alpha1.CacheDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonUnavailable, msg),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.True(v1alpha1.ReasonUnavailable, msg))
	default:
		reason := notReadyReason(c)
		progress := w.Progress("nodes")
		st.Phase = v1alpha1.CacheDeploying
		conditions.Set(&st.Conditions, gen, conditions.False(reason, progress), conditions.True(reason, progress), conditions.False(v1alpha1.ReasonHealthy, ""))
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

// scalingUp reports whether a Cache that is not Degraded lacks ready nodes
// only because more were asked for.
func scalingUp(c *v1alpha1.Cache, w *rollout.State) bool {
	return c.Status.Phase != v1alpha1.CacheDegraded && rollout.ScalingUp(c.Status.ReadyReplicas, w.Ready, w.Want)
}
