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

package backup

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/metrics"
)

// observed is what a reconcile saw and did.
type observed struct {
	schedule  schedule
	cronJob   *batchv1.CronJob
	manualRun string
	// sourceDatabase is the resolved source's database name.
	sourceDatabase string
	// src is the resolved source, when it could be resolved.
	src     *source
	problem *conditions.Problem
}

// finishedRuns reads the results of the Backup's finished Jobs that status
// does not list yet, oldest first.
func (r *Reconciler) finishedRuns(ctx context.Context, b *v1alpha1.Backup) ([]v1alpha1.BackupRun, error) {
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{v1alpha1.LabelBackup: b.Name}); err != nil {
		return nil, fmt.Errorf("listing Jobs: %w", err)
	}
	known := map[string]bool{}
	var oldest time.Time
	for _, h := range b.Status.History {
		known[h.Job] = true
		if h.CompletionTime != nil && (oldest.IsZero() || h.CompletionTime.Time.Before(oldest)) {
			oldest = h.CompletionTime.Time
		}
	}
	full := len(b.Status.History) >= historyLimit
	var runs []v1alpha1.BackupRun
	for i := range list.Items {
		job := &list.Items[i]
		done, failed, when, msg := finished(job)
		if !done || known[job.Name] || (full && !when.After(oldest)) {
			continue
		}
		run := v1alpha1.BackupRun{Job: job.Name, StartTime: job.Status.StartTime, CompletionTime: metav1Time(when)}
		res, ok, err := r.result(ctx, job)
		switch {
		case ok:
			run.Succeeded = res.Succeeded
			run.Object, run.Size, run.SHA256 = res.Key, res.Size, res.SHA256
			run.DurationSeconds = int64(res.DurationSeconds + 0.5)
			run.Message = res.Error
			if run.Succeeded && res.PruneError != "" {
				run.Message = "Pruning old backups failed: " + res.PruneError
			} else if run.Succeeded && res.Pruned > 0 {
				run.Message = fmt.Sprintf("Pruned %d old backups", res.Pruned)
			}
			if !res.CompletionTime.IsZero() {
				run.CompletionTime = metav1Time(res.CompletionTime)
			}
		case err != nil:
			run.Message = err.Error()
		case failed:
			run.Message = "The Job failed without a result: " + msg
		default:
			run.Succeeded = false
			run.Message = "The Job finished but its pod and result are gone"
		}
		if failed {
			run.Succeeded = false
		}
		runs = append(runs, run)
	}
	slices.SortFunc(runs, func(a, c v1alpha1.BackupRun) int {
		return a.CompletionTime.Compare(c.CompletionTime.Time)
	})
	return runs, nil
}

// finished reports whether a Job has ended, whether it failed, when, and
// its condition's message.
func finished(job *batchv1.Job) (done, failed bool, when time.Time, msg string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false, c.LastTransitionTime.Time, c.Message
		case batchv1.JobFailed:
			return true, true, c.LastTransitionTime.Time, c.Message
		}
	}
	return false, false, time.Time{}, ""
}

// result reads a finished Job's result from its pod.
func (r *Reconciler) result(ctx context.Context, job *batchv1.Job) (res dumpcmd.Result, ok bool, err error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return res, false, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
	}
	var lastErr error
	for i := range pods.Items {
		res, ok, err := jobs.Result(&pods.Items[i])
		if ok {
			return res, true, nil
		}
		if err != nil {
			lastErr = err
		}
	}
	return res, false, lastErr
}

// computeStatus derives the status from the previous one, what the
// reconcile saw of the runs and of the destination, and the newly finished
// runs. It is pure.
func computeStatus(b *v1alpha1.Backup, obs observed, dest destination, runs []v1alpha1.BackupRun, now time.Time) v1alpha1.BackupStatus {
	st := *b.Status.DeepCopy()
	gen := b.Generation
	for _, run := range runs {
		st.History = append([]v1alpha1.BackupRun{run}, st.History...)
		if run.Succeeded {
			st.LastBackup = run.DeepCopy()
		}
	}
	if len(st.History) > historyLimit {
		st.History = st.History[:historyLimit]
	}
	if obs.manualRun != "" {
		st.LastManualRun = obs.manualRun
	}
	if obs.sourceDatabase != "" {
		st.SourceDatabase = obs.sourceDatabase
	}

	switch {
	case len(st.History) == 0:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionLastBackupSucceeded, conditions.Cond{
			Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonNoRunYet, Message: "No run has finished yet"})
	case st.History[0].Succeeded:
		h := st.History[0]
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionLastBackupSucceeded, conditions.True(v1alpha1.ReasonSucceeded,
			fmt.Sprintf("%s: %d bytes, sha256 %s", h.Object, h.Size, h.SHA256)))
	default:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionLastBackupSucceeded, conditions.False(v1alpha1.ReasonFailed,
			fmt.Sprintf("Job %s: %s", st.History[0].Job, st.History[0].Message)))
	}
	setDestination(&st, gen, b, dest)

	// The generation was looked at, even when it cannot be used: the
	// conditions say why, for this generation.
	st.ObservedGeneration = gen
	p, dp := obs.problem, dest.problem
	switch {
	case p != nil && !waitReasons[p.Reason]:
		summarize(&st, gen, v1alpha1.BackupFailed, conditions.False(p.Reason, p.Message))
		return st
	case dp != nil && !waitReasons[dp.Reason]:
		summarize(&st, gen, v1alpha1.BackupFailed, conditions.False(dp.Reason, dp.Message))
	case p != nil:
		summarize(&st, gen, v1alpha1.BackupPending, conditions.False(p.Reason, p.Message))
		return st
	case dp != nil:
		summarize(&st, gen, v1alpha1.BackupPending, conditions.False(dp.Reason, dp.Message))
	}
	// The schedule is valid and its CronJob in place: its times and the
	// freshness hold whatever the destination's check says.
	next := obs.schedule.next(now)
	st.NextScheduleTime = metav1Time(next)
	if b.Spec.Suspend {
		st.NextScheduleTime = nil
	}

	interval := obs.schedule.interval(now)
	stale := !now.Before(staleTime(b, &st, obs.schedule, now))
	if stale {
		last := "none yet"
		if st.LastBackup != nil {
			last = st.LastBackup.CompletionTime.UTC().Format(time.RFC3339)
		}
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionBackupStale, conditions.True(v1alpha1.ReasonStale, fmt.Sprintf(
			"No successful backup within %s, twice the schedule's interval; last success: %s", 2*interval, last)))
	} else {
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionBackupStale, conditions.False(v1alpha1.ReasonFresh, ""))
	}
	if dp != nil {
		return st
	}

	last := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionLastBackupSucceeded)
	switch {
	case stale:
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBackupStale)
		summarize(&st, gen, v1alpha1.BackupFailed, conditions.False(v1alpha1.ReasonBackupStale, c.Message))
	case last.Status == metav1.ConditionFalse:
		summarize(&st, gen, v1alpha1.BackupFailed, conditions.False(last.Reason, last.Message))
	case dest.checking:
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDestinationChecked)
		summarize(&st, gen, v1alpha1.BackupPending, conditions.False(v1alpha1.ReasonCheckingDestination, c.Message))
	case b.Spec.Suspend:
		summarize(&st, gen, v1alpha1.BackupSuspended, conditions.True(v1alpha1.ReasonScheduled, "Suspended"))
	default:
		summarize(&st, gen, v1alpha1.BackupScheduled, conditions.True(v1alpha1.ReasonScheduled, "Next run at "+next.UTC().Format(time.RFC3339)))
	}
	return st
}

// setDestination records a newly finished check and sets the
// DestinationChecked and InsecureEndpoint conditions. A request Steward
// retries leaves DestinationChecked as it was.
func setDestination(st *v1alpha1.BackupStatus, gen int64, b *v1alpha1.Backup, dest destination) {
	if dest.checked != nil {
		st.DestinationCheck = dest.checked
	}
	d := b.Spec.Destination
	if dest.insecure {
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionInsecureEndpoint, conditions.True(v1alpha1.ReasonInsecureEndpoint, fmt.Sprintf(
			"destination.endpoint %s is plain http://, allowed by allowInsecureEndpoint: the dumps and the store's tokens cross the network unencrypted",
			redact.URL(d.Endpoint))))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionInsecureEndpoint)
	}
	switch p := dest.problem; {
	case p != nil && p.Reason == v1alpha1.ReasonReconcileError:
	case p != nil:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionDestinationChecked, conditions.False(p.Reason, p.Message))
	case dest.checking:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionDestinationChecked, conditions.Cond{Status: metav1.ConditionUnknown,
			Reason: v1alpha1.ReasonCheckingDestination, Message: fmt.Sprintf("Job %s checks the destination", b.CheckJobName(dest.hash))})
	case st.DestinationCheck != nil:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionDestinationChecked, conditions.True(v1alpha1.ReasonCheckPassed, st.DestinationCheck.Message))
	}
}

// waitReasons are the reasons a Backup is not Ready that need no user: it
// waits for its Database, or Steward retries a request.
var waitReasons = map[string]bool{
	v1alpha1.ReasonWaitingForDatabase: true,
	v1alpha1.ReasonReconcileError:     true,
}

// summarize sets the phase, Ready, and the kstatus conditions that follow
// from them: Reconciling while the Backup waits (Pending), Stalled when it
// needs the user (Failed).
func summarize(st *v1alpha1.BackupStatus, gen int64, phase v1alpha1.BackupPhase, ready conditions.Cond) {
	st.Phase = phase
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionReady, ready)
	reconciling, stalled := conditions.False(v1alpha1.ReasonReconciled, ""), conditions.False(v1alpha1.ReasonHealthy, "")
	switch phase {
	case v1alpha1.BackupPending:
		reconciling = conditions.True(ready.Reason, ready.Message)
	case v1alpha1.BackupFailed:
		stalled = conditions.True(ready.Reason, ready.Message)
	}
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionReconciling, reconciling)
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionStalled, stalled)
}

// staleTime is when the Backup is stale without a new success: twice the
// schedule's interval after the last success or, before the first, after
// creation.
func staleTime(b *v1alpha1.Backup, st *v1alpha1.BackupStatus, s schedule, now time.Time) time.Time {
	since := b.CreationTimestamp.Time
	if st.LastBackup != nil && st.LastBackup.CompletionTime != nil {
		since = st.LastBackup.CompletionTime.Time
	}
	return since.Add(2 * s.interval(now))
}

// announce emits an event per newly finished run, when the Backup turns
// stale, and when the outcome of its destination's check or the state of
// its endpoint changes.
func (r *Reconciler) announce(b *v1alpha1.Backup, prev *v1alpha1.BackupStatus, runs []v1alpha1.BackupRun, next *v1alpha1.BackupStatus) {
	changed := func(t string) *metav1.Condition {
		before, after := meta.FindStatusCondition(prev.Conditions, t), meta.FindStatusCondition(next.Conditions, t)
		if after == nil || (before != nil && before.Status == after.Status && before.Reason == after.Reason && before.Message == after.Message) {
			return nil
		}
		return after
	}
	if c := changed(v1alpha1.ConditionDestinationChecked); c != nil && c.Status == metav1.ConditionTrue {
		r.event(b, nil, corev1.EventTypeNormal, v1alpha1.EventDestinationChecked, "Check", "%s", c.Message)
	} else if c != nil && c.Status == metav1.ConditionFalse && c.Reason != v1alpha1.ReasonInsecureEndpoint {
		r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventDestinationCheckFailed, "Check", "%s", c.Message)
	}
	if c := changed(v1alpha1.ConditionInsecureEndpoint); c != nil {
		r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventInsecureEndpoint, "Check", "%s", c.Message)
	}
	if c := changed(v1alpha1.ConditionReady); c != nil && c.Reason == v1alpha1.ReasonInsecureEndpoint {
		r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventInsecureEndpoint, "Check", "%s", c.Message)
	}
	for _, run := range runs {
		if run.Succeeded {
			r.event(b, nil, corev1.EventTypeNormal, v1alpha1.EventBackupSucceeded, "Backup",
				"Job %s stored %s (%d bytes, sha256 %s) in %ds", run.Job, run.Object, run.Size, run.SHA256, run.DurationSeconds)
		} else {
			metrics.BackupFailures.WithLabelValues(b.Namespace, b.Name).Inc()
			r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventBackupFailed, "Backup", "Job %s failed: %s", run.Job, run.Message)
		}
	}
	was := meta.IsStatusConditionTrue(prev.Conditions, v1alpha1.ConditionBackupStale)
	if c := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionBackupStale); c != nil && c.Status == metav1.ConditionTrue && !was {
		r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventBackupStale, "Backup", "%s", c.Message)
	}
}

// observeMetrics sets the per-Backup gauges from status, so they are right
// after an operator restart too.
func observeMetrics(b *v1alpha1.Backup, st *v1alpha1.BackupStatus) {
	metrics.BackupFailures.WithLabelValues(b.Namespace, b.Name).Add(0)
	last := st.LastBackup
	if last == nil || last.CompletionTime == nil {
		return
	}
	metrics.BackupLastSuccess.WithLabelValues(b.Namespace, b.Name).Set(float64(last.CompletionTime.Unix()))
	metrics.BackupDuration.WithLabelValues(b.Namespace, b.Name).Set(float64(last.DurationSeconds))
	metrics.BackupBytes.WithLabelValues(b.Namespace, b.Name).Set(float64(last.Size))
}
