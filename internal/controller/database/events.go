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

package database

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/metrics"
)

// announce emits events and metrics for the transition from the current
// status to next.
func (r *Reconciler) announce(db *v1alpha1.Database, next *v1alpha1.DatabaseStatus) {
	prev := &db.Status
	r.announceStorageGrowthBlocked(db, next)
	if prev.Phase == next.Phase {
		if next.Phase == v1alpha1.DatabaseDegraded {
			r.announceNewCause(db, next)
		}
		return
	}
	ready := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	switch next.Phase {
	case v1alpha1.DatabaseRunning:
		if !everReady(db) {
			metrics.ObserveFirstReady("Database", db.CreationTimestamp.Time)
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventAvailable, "Deploy",
			"Database %s %s is available at %s: %s", db.Spec.Engine, next.Version, next.Endpoint, ready.Message)
	case v1alpha1.DatabaseDegraded, v1alpha1.DatabaseBlocked:
		degraded := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionDegraded)
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, degraded.Reason, "Deploy", "%s", degraded.Message)
	case v1alpha1.DatabaseUpdating:
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, ready.Reason, "Deploy", "%s", ready.Message)
	}
}

// announceNewCause emits a Warning event when a Database that is Degraded
// already is Degraded for another reason: a pod that cannot start, or a
// setting the servers refused, found once the earlier problem cleared. The
// phase does not change, so no transition announces it.
func (r *Reconciler) announceNewCause(db *v1alpha1.Database, next *v1alpha1.DatabaseStatus) {
	before := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionDegraded)
	d := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue || (before != nil && before.Status == metav1.ConditionTrue && before.Reason == d.Reason) {
		return
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, d.Reason, "Deploy", "%s", d.Message)
}

// announceStorageGrowthBlocked emits a Warning event when volumes over the
// autoGrow threshold cannot grow, or cannot for another reason than before.
func (r *Reconciler) announceStorageGrowthBlocked(db *v1alpha1.Database, next *v1alpha1.DatabaseStatus) {
	c := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionStorageGrowthBlocked)
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	if p := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionStorageGrowthBlocked); p != nil && p.Status == metav1.ConditionTrue && p.Reason == c.Reason {
		return
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, v1alpha1.EventStorageGrowthBlocked, "Grow", "%s: %s", c.Reason, c.Message)
}
