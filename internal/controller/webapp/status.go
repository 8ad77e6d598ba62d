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
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// Reasons a Deployment gives in its conditions that Steward passes on.
const (
	deploymentNewRSAvailable = "NewReplicaSetAvailable"
)

// observed is what a reconcile saw of a WebApp's children.
type observed struct {
	// deployment is nil when it does not exist yet.
	deployment *appsv1.Deployment
	// hpa is nil when the WebApp does not autoscale or it does not exist yet.
	hpa *autoscalingv2.HorizontalPodAutoscaler
	// problem is something the user must fix, such as a name conflict, or nil.
	problem *problem
	// waiting is an object the WebApp needs that does not exist yet, or nil.
	waiting *problem
	// stuck is a pod that has been unable to start for the stuck pod
	// timeout, or nil.
	stuck *stuckpods.Problem
	// recheck is when a pod that cannot start reaches that timeout, or 0.
	recheck time.Duration
}

// problem is a condition reason and message for something the user must fix.
type problem struct {
	reason, message string
}

// computeStatus derives a WebApp's status from its spec, its previous status
// and its children. It is pure: the conditions keep their transition times
// when their status does not change.
func computeStatus(app *v1alpha1.WebApp, obs observed) v1alpha1.WebAppStatus {
	st := *app.Status.DeepCopy()
	st.Selector = k8slabels.SelectorFromSet(SelectorLabels(app)).String()
	st.URL = URL(app)
	st.DesiredReplicas = desiredReplicas(app, obs)
	gen := app.Generation

	if p := obs.problem; p != nil {
		st.Phase = v1alpha1.WebAppDegraded
		setConditions(&st, gen,
			isFalse(p.reason, p.message),
			isFalse(p.reason, p.message),
			isTrue(p.reason, p.message))
		return st
	}
	st.ObservedGeneration = gen

	if w := obs.waiting; w != nil {
		st.Phase = v1alpha1.WebAppPending
		setConditions(&st, gen,
			isFalse(w.reason, w.message),
			isTrue(w.reason, w.message),
			isFalse(v1alpha1.ReasonHealthy, ""))
		return st
	}

	dep := obs.deployment
	if dep == nil {
		st.Phase = v1alpha1.WebAppPending
		st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = 0, 0, 0
		reason := notReadyReason(app)
		setConditions(&st, gen,
			isFalse(reason, "Waiting for the Deployment to be created"),
			isTrue(reason, "Creating the Deployment"),
			isFalse(v1alpha1.ReasonHealthy, ""))
		return st
	}

	st.Replicas = dep.Status.Replicas
	st.ReadyReplicas = dep.Status.ReadyReplicas
	st.UpdatedReplicas = dep.Status.UpdatedReplicas
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}

	s := dep.Status
	rolledOut := s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == want && s.Replicas == want
	available := rolledOut && s.AvailableReplicas >= want && s.ReadyReplicas >= want

	// A pod that cannot start says more than the Deployment's deadline.
	if p := obs.stuck; p != nil && !available {
		st.Phase = v1alpha1.WebAppDegraded
		setConditions(&st, gen,
			isFalse(p.Reason, p.Message),
			isFalse(p.Reason, p.Message),
			isTrue(p.Reason, p.Message))
		return st
	}

	if c := failedDeploymentCondition(dep); c != nil {
		msg := fmt.Sprintf("Deployment %s: %s", dep.Name, c.Message)
		st.Phase = v1alpha1.WebAppDegraded
		setConditions(&st, gen,
			isFalse(c.Reason, msg),
			isFalse(c.Reason, msg),
			isTrue(c.Reason, msg))
		return st
	}

	progress := fmt.Sprintf("%d of %d pods updated, %d ready", s.UpdatedReplicas, want, s.ReadyReplicas)
	switch {
	case available:
		st.Phase = v1alpha1.WebAppRunning
		setConditions(&st, gen,
			isTrue(v1alpha1.ReasonAvailable, fmt.Sprintf("%d/%d pods ready", s.ReadyReplicas, want)),
			isFalse(v1alpha1.ReasonRolloutComplete, ""),
			isFalse(v1alpha1.ReasonHealthy, ""))
	case rolledOut && rolloutWasComplete(dep):
		// Every pod runs the current spec, yet some are not available: they
		// crashed or fail their probes after the rollout finished.
		msg := fmt.Sprintf("%d of %d pods available", s.AvailableReplicas, want)
		st.Phase = v1alpha1.WebAppDegraded
		setConditions(&st, gen,
			isFalse(v1alpha1.ReasonUnavailable, msg),
			isFalse(v1alpha1.ReasonRolloutComplete, ""),
			isTrue(v1alpha1.ReasonUnavailable, msg))
	default:
		reason := notReadyReason(app)
		st.Phase = v1alpha1.WebAppDeploying
		setConditions(&st, gen,
			isFalse(reason, progress),
			isTrue(reason, progress),
			isFalse(v1alpha1.ReasonHealthy, ""))
	}
	return st
}

// desiredReplicas is the count Steward converges to: the spec's, or the
// autoscaler's current choice.
func desiredReplicas(app *v1alpha1.WebApp, obs observed) int32 {
	as := app.Spec.Autoscaling
	if as == nil {
		return DesiredReplicas(app)
	}
	if obs.hpa != nil && obs.hpa.Status.DesiredReplicas > 0 {
		return obs.hpa.Status.DesiredReplicas
	}
	if d := obs.deployment; d != nil && d.Spec.Replicas != nil {
		return *d.Spec.Replicas
	}
	return max(as.MinReplicas, 1)
}

// failedDeploymentCondition returns the Deployment condition that says its
// rollout has failed: the progress deadline passed, or pods cannot be created.
func failedDeploymentCondition(dep *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i := range dep.Status.Conditions {
		c := &dep.Status.Conditions[i]
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse:
			return c
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			return c
		}
	}
	return nil
}

// rolloutWasComplete reports whether the Deployment itself says its newest
// ReplicaSet finished rolling out.
func rolloutWasComplete(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == deploymentNewRSAvailable {
			return true
		}
	}
	return false
}

// notReadyReason tells a first rollout (Creating) from a later one (RollingOut).
func notReadyReason(app *v1alpha1.WebApp) string {
	if neverReady(app) {
		return v1alpha1.ReasonCreating
	}
	return v1alpha1.ReasonRollingOut
}

// neverReady reports whether the WebApp has not yet been Ready once.
func neverReady(app *v1alpha1.WebApp) bool {
	c := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.ConditionReady)
	return c == nil || (c.Status != metav1.ConditionTrue && c.Reason == v1alpha1.ReasonCreating)
}

var (
	isTrue  = conditions.True
	isFalse = conditions.False
)

func setConditions(st *v1alpha1.WebAppStatus, gen int64, ready, progressing, degraded conditions.Cond) {
	conditions.Set(&st.Conditions, gen, ready, progressing, degraded)
}
