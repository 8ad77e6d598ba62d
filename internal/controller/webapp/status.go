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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/rollout"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// observed is what a reconcile saw of a WebApp's children.
type observed struct {
	// deployment is nil when it does not exist yet.
	deployment *appsv1.Deployment
	// hpa is nil when the WebApp does not autoscale or it does not exist yet.
	hpa *autoscalingv2.HorizontalPodAutoscaler
	// problem is something the user must fix, such as a name conflict, or nil.
	problem *conditions.Problem
	// waiting is an object the WebApp needs that does not exist yet, or nil.
	waiting *conditions.Problem
	// stuck is a pod that has been unable to start for the stuck pod
	// timeout, or nil.
	stuck *stuckpods.Problem
	// recheck is when a pod that cannot start reaches that timeout, or 0.
	recheck time.Duration
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

	// The generation was looked at, even when it cannot be used: the
	// conditions say why, for this generation.
	st.ObservedGeneration = gen
	if p := obs.problem; p != nil {
		st.Phase = v1alpha1.WebAppDegraded
		conditions.SetProblem(&st.Conditions, gen, *p)
		return st
	}

	if w := obs.waiting; w != nil {
		st.Phase = v1alpha1.WebAppPending
		conditions.Set(&st.Conditions, gen,
			conditions.False(w.Reason, w.Message),
			conditions.True(w.Reason, w.Message),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}

	dep := obs.deployment
	if dep == nil {
		st.Phase = v1alpha1.WebAppPending
		st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = 0, 0, 0
		reason := notReadyReason(app)
		conditions.Set(&st.Conditions, gen,
			conditions.False(reason, "Waiting for the Deployment to be created"),
			conditions.True(reason, "Creating the Deployment"),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}

	s := rollout.OfDeployment(dep)
	st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = s.Replicas, s.Ready, s.Updated
	want := s.Want
	rolledOut, available := s.RolledOut, s.Healthy

	// A pod that cannot start says more than the Deployment's deadline.
	if p := obs.stuck; p != nil && !available {
		st.Phase = v1alpha1.WebAppDegraded
		conditions.SetProblem(&st.Conditions, gen, *p)
		return st
	}

	if s.Failed() {
		msg := fmt.Sprintf("Deployment %s: %s", dep.Name, s.Failure)
		st.Phase = v1alpha1.WebAppDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(s.FailureReason, msg),
			conditions.False(s.FailureReason, msg),
			conditions.True(s.FailureReason, msg))
		return st
	}

	progress := s.Progress("pods")
	switch {
	case available:
		st.Phase = v1alpha1.WebAppRunning
		conditions.Set(&st.Conditions, gen,
			conditions.True(v1alpha1.ReasonAvailable, fmt.Sprintf("%d/%d pods ready", s.Ready, want)),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.False(v1alpha1.ReasonHealthy, ""))
	case rolledOut && s.Complete && s.Ready < want && !scalingUp(app, s):
		// Every pod runs the current spec, yet some are not ready: they
		// crashed or fail their probes after the rollout finished. Pods
		// ready and not yet available wait out minReadySeconds: progress.
		msg := fmt.Sprintf("%d of %d pods available", s.Available, want)
		st.Phase = v1alpha1.WebAppDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonUnavailable, msg),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.True(v1alpha1.ReasonUnavailable, msg))
	default:
		reason := notReadyReason(app)
		st.Phase = v1alpha1.WebAppDeploying
		conditions.Set(&st.Conditions, gen,
			conditions.False(reason, progress),
			conditions.True(reason, progress),
			conditions.False(v1alpha1.ReasonHealthy, ""))
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

// scalingUp reports whether a WebApp that is not Degraded lacks available
// pods only because more were asked for. The reconcile that scales a
// Running WebApp already makes it Deploying, so the phase before is not
// Running when the new pods are counted.
func scalingUp(app *v1alpha1.WebApp, s rollout.State) bool {
	return app.Status.Phase != v1alpha1.WebAppDegraded && rollout.ScalingUp(app.Status.ReadyReplicas, s.Ready, s.Want)
}
