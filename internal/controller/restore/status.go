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

package restore

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/conditions"
)

// observed is what a reconcile saw of a Restore's source, target and Job.
type observed struct {
	// waiting is set while the source or target does not resolve yet.
	waiting *conditions.Problem
	// refused is set when the spec can never succeed.
	refused *conditions.Problem
	// job is the restore Job, nil before it exists.
	job *batchv1.Job
	// result is the run's result, once its pod reported one; a
	// point-in-time restore's has its recovery point too.
	result *pitrcmd.Result
	// podEnded is set when the pod ended without a readable result.
	podEnded error
}

// computeStatus derives a Restore's status from its previous status and
// what was observed. It is pure.
func computeStatus(r *v1alpha1.Restore, obs observed) v1alpha1.RestoreStatus {
	st := *r.Status.DeepCopy()
	gen := r.Generation
	st.ObservedGeneration = gen
	if final(r) {
		return st
	}
	failed := func(reason, msg string, at *metav1.Time) v1alpha1.RestoreStatus {
		st.Phase = v1alpha1.RestoreFailed
		st.Message = msg
		if st.CompletionTime == nil {
			st.CompletionTime = at
		}
		conditions.Set(&st.Conditions, gen,
			conditions.False(reason, msg),
			conditions.False(reason, msg),
			conditions.True(reason, msg))
		return st
	}
	if p := obs.refused; p != nil {
		return failed(p.Reason, p.Message, nil)
	}
	if p := obs.waiting; p != nil {
		st.Phase = v1alpha1.RestorePending
		conditions.Set(&st.Conditions, gen,
			conditions.False(p.Reason, p.Message),
			conditions.True(p.Reason, p.Message),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}
	job := obs.job
	if job == nil {
		return st
	}
	st.Job = job.Name
	if st.StartTime == nil {
		start := job.CreationTimestamp
		if job.Status.StartTime != nil {
			start = *job.Status.StartTime
		}
		st.StartTime = &start
	}
	if res := obs.result; res != nil {
		st.Object = res.Key
		st.BaseBackup = res.BaseKey
		if res.RecoveryPoint != nil {
			st.RecoveryPoint = &metav1.Time{Time: *res.RecoveryPoint}
		}
		var end *metav1.Time
		if !res.CompletionTime.IsZero() {
			end = &metav1.Time{Time: res.CompletionTime}
		}
		if !res.Succeeded {
			return failed(v1alpha1.ReasonRestoreFailed, res.Error, end)
		}
		st.Phase = v1alpha1.RestoreSucceeded
		st.CompletionTime = end
		st.Message = ""
		msg := fmt.Sprintf("Restored %s", res.Key)
		conditions.Set(&st.Conditions, gen,
			conditions.True(v1alpha1.ReasonRestored, msg),
			conditions.False(v1alpha1.ReasonRestored, ""),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}
	if obs.podEnded != nil {
		return failed(v1alpha1.ReasonRestoreFailed, obs.podEnded.Error(), nil)
	}
	if c := jobFailed(job); c != nil {
		msg := fmt.Sprintf("Job %s failed: %s", job.Name, c.Message)
		return failed(v1alpha1.ReasonRestoreFailed, msg, &c.LastTransitionTime)
	}
	st.Phase = v1alpha1.RestoreRunning
	msg := fmt.Sprintf("Job %s restores %s", job.Name, Key(r))
	conditions.Set(&st.Conditions, gen,
		conditions.False(v1alpha1.ReasonRestoreRunning, msg),
		conditions.True(v1alpha1.ReasonRestoreRunning, msg),
		conditions.False(v1alpha1.ReasonHealthy, ""))
	return st
}

// final reports whether the Restore ended: it is never run again.
func final(r *v1alpha1.Restore) bool {
	return r.Status.Phase == v1alpha1.RestoreSucceeded || r.Status.Phase == v1alpha1.RestoreFailed
}

// jobFailed is the Job's Failed condition when it holds.
func jobFailed(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// announce emits an event for the transition from the Restore's current
// status to next.
func (rc *Reconciler) announce(r *v1alpha1.Restore, next *v1alpha1.RestoreStatus) {
	prev := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionReady)
	ready := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	if ready == nil || (r.Status.Phase == next.Phase && prev != nil && prev.Reason == ready.Reason) {
		return
	}
	switch next.Phase {
	case v1alpha1.RestorePending:
		rc.Recorder.Eventf(r, nil, corev1.EventTypeNormal, ready.Reason, "Restore", "%s", ready.Message)
	case v1alpha1.RestoreRunning:
		rc.Recorder.Eventf(r, nil, corev1.EventTypeNormal, v1alpha1.EventRestoreStarted, "Restore", "%s", ready.Message)
	case v1alpha1.RestoreSucceeded:
		rc.Recorder.Eventf(r, nil, corev1.EventTypeNormal, v1alpha1.EventRestoreSucceeded, "Restore", "%s", ready.Message)
	case v1alpha1.RestoreFailed:
		rc.Recorder.Eventf(r, nil, corev1.EventTypeWarning, v1alpha1.EventRestoreFailed, "Restore", "%s", next.Message)
	}
}
