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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// announce emits events and metrics for the transition from the Cache's
// current status to next.
func (r *Reconciler) announce(c *v1alpha1.Cache, obs observed, next *v1alpha1.CacheStatus) {
	prev := &c.Status
	if from := obs.scaledFrom; from != nil {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, v1alpha1.EventScaled, "Scale",
			"Scaled from %d to %d nodes", *from, DesiredReplicas(c))
	}
	if prev.Phase == next.Phase {
		if next.Phase == v1alpha1.CacheDegraded {
			r.announceStuckPods(c, next)
		}
		return
	}
	ready := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	switch next.Phase {
	case v1alpha1.CacheRunning:
		if neverReady(c) {
			metrics.ObserveFirstReady("Cache", c.CreationTimestamp.Time)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, v1alpha1.EventAvailable, "Deploy",
			"Cache is available at %s: %s", next.Endpoint, ready.Message)
	case v1alpha1.CacheDegraded:
		degraded := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionDegraded)
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, degraded.Reason, "Deploy", "%s", degraded.Message)
	case v1alpha1.CacheDeploying:
		if prev.Phase == v1alpha1.CacheRunning {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, v1alpha1.EventRollingOut, "Deploy", "%s", ready.Message)
		}
	}
}

// announceStuckPods emits a Warning event when a Cache that is Degraded
// already is found to have a pod that cannot start, or a different such
// cause.
func (r *Reconciler) announceStuckPods(c *v1alpha1.Cache, next *v1alpha1.CacheStatus) {
	if d := stuckpods.NewlyStuck(c.Status.Conditions, next.Conditions); d != nil {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, d.Reason, "Deploy", "%s", d.Message)
	}
}
