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
	"cmp"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/instance"
)

// A Database whose engine can fail over rolls its pods itself (the
// StatefulSet's OnDelete strategy): replicas first, one at a time, each
// once every instance is ready; the primary last, after a switchover to a
// replica that runs the new revision, so that it restarts as a replica and
// writes pause only for the switchover.

// updateStrategy is OnDelete where Steward rolls the pods itself.
func updateStrategy(db *v1alpha1.Database) appsv1.StatefulSetUpdateStrategyType {
	if db.Spec.Engine.CanFailOver() {
		return appsv1.OnDeleteStatefulSetStrategyType
	}
	return appsv1.RollingUpdateStatefulSetStrategyType
}

// outdated reports whether a pod runs an older revision of the StatefulSet.
func outdated(pod *corev1.Pod, sts *appsv1.StatefulSet) bool {
	return pod.Labels[appsv1.ControllerRevisionHashLabelKey] != sts.Status.UpdateRevision
}

// memberReady is an instance's readiness: its pod's (which its Services
// and PodDisruptionBudget go by) and, where instances are contacted, its
// report's.
func memberReady(m member, reports bool) bool {
	if m.pod == nil || !m.pod.DeletionTimestamp.IsZero() {
		return false
	}
	if reports && (m.report == nil || !m.report.Ready || m.report.Phase != instance.PhaseRunning) {
		return false
	}
	for _, c := range m.pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rollInstances replaces the next outdated instance: the highest outdated
// replica, or, when only the primary is outdated, returns the replica to
// switch over to first. A single instance, or one whose instances do not
// answer, has its primary replaced in place.
func (r *Reconciler) rollInstances(ctx context.Context, sts *appsv1.StatefulSet, v view) (member, bool, error) {
	if sts == nil || sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType ||
		sts.Status.ObservedGeneration < sts.Generation || sts.Status.UpdateRevision == "" {
		return member{}, false, nil
	}
	reports := anyAnswered(v)
	var old []member
	for _, m := range v.members {
		if !memberReady(m, reports) {
			return member{}, false, nil // one at a time, each ready before the next
		}
		if outdated(m.pod, sts) {
			old = append(old, m)
		}
	}
	slices.SortFunc(old, func(a, b member) int {
		oa, _ := instance.Ordinal(a.name)
		ob, _ := instance.Ordinal(b.name)
		return cmp.Compare(ob, oa)
	})
	for _, m := range old {
		if m.name != v.primary {
			return member{}, false, r.replacePod(ctx, m.pod)
		}
	}
	if len(old) == 0 {
		return member{}, false, nil
	}
	if len(v.members) > 1 && reports {
		c, why := candidate(v)
		if why == "" && !outdated(c.pod, sts) {
			return c, true, nil
		}
		return member{}, false, nil // waits for a replica to switch over to
	}
	return member{}, false, r.replacePod(ctx, old[0].pod)
}

// replacePod deletes an outdated instance pod; the StatefulSet creates it
// again from the current revision, on the same volume.
func (r *Reconciler) replacePod(ctx context.Context, pod *corev1.Pod) error {
	uid := pod.UID
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replacing %s with the current revision: %w", pod.Name, err)
	}
	return nil
}
