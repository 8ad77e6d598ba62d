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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// announce emits events and metrics for the transition from the WebApp's
// current status to next.
func (r *Reconciler) announce(app *v1alpha1.WebApp, next *v1alpha1.WebAppStatus) {
	prev := &app.Status
	if prev.DesiredReplicas != 0 && prev.DesiredReplicas != next.DesiredReplicas {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, v1alpha1.EventScaled, "Scale",
			"Scaled from %d to %d replicas", prev.DesiredReplicas, next.DesiredReplicas)
	}
	if prev.Phase == next.Phase {
		if next.Phase == v1alpha1.WebAppDegraded {
			r.announceStuckPods(app, next)
		}
		return
	}
	ready := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	switch next.Phase {
	case v1alpha1.WebAppRunning:
		if neverReady(app) {
			metrics.ObserveFirstReady("WebApp", app.CreationTimestamp.Time)
		}
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, v1alpha1.EventAvailable, "Deploy",
			"WebApp is available at %s: %s", next.URL, ready.Message)
	case v1alpha1.WebAppDegraded:
		degraded := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionDegraded)
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, degraded.Reason, "Deploy", "%s", degraded.Message)
	case v1alpha1.WebAppPending:
		switch ready.Reason {
		case v1alpha1.ReasonWaitingForPullSecret, v1alpha1.ReasonDatabaseNotFound, v1alpha1.ReasonCacheNotFound,
			v1alpha1.ReasonAppConfigNotFound, v1alpha1.ReasonMissingConfigKey:
			r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, ready.Reason, "Deploy", "%s", ready.Message)
		case v1alpha1.ReasonWaitingForDatabase, v1alpha1.ReasonWaitingForCache, v1alpha1.ReasonWaitingForAppConfig:
			r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, ready.Reason, "Deploy", "%s", ready.Message)
		}
	case v1alpha1.WebAppDeploying:
		if prev.Phase == v1alpha1.WebAppRunning {
			r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, v1alpha1.EventRollingOut, "Deploy", "%s", ready.Message)
		}
	}
}

// announceStuckPods emits a Warning event when a WebApp that is Degraded
// already is found to have a pod that cannot start, or a different such
// cause.
func (r *Reconciler) announceStuckPods(app *v1alpha1.WebApp, next *v1alpha1.WebAppStatus) {
	if d := stuckpods.NewlyStuck(app.Status.Conditions, next.Conditions); d != nil {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, d.Reason, "Deploy", "%s", d.Message)
	}
}
