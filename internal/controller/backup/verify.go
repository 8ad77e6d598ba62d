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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/metrics"
)

const (
	// verifyDeadline bounds a verification Job, its image's pull, the
	// restore and the comparison included.
	verifyDeadline = 6 * time.Hour
)

// verification is what a reconcile saw and did of the Backup's
// verifications.
type verification struct {
	// schedule is spec.verify's, when it is set and valid.
	schedule *schedule
	// problem is an invalid verify schedule.
	problem *conditions.Problem
	// manual is the verify-now value a Job was started for.
	manual string
	// finished are verifications that ended since status was written,
	// oldest first.
	finished []v1alpha1.BackupVerification
	// done are finished verification Jobs whose outcome the next status
	// holds; they are deleted, with their pods, once it is written.
	done []*batchv1.Job
}

// reconcileVerify applies the CronJob of scheduled verifications (or
// removes it without spec.verify), starts the on-demand verification the
// verify-now annotation asks for, and reads the outcomes of finished
// verification Jobs. Without a resolved source (obs.src) nothing is
// started: what to verify and in which image are not known.
func (r *Reconciler) reconcileVerify(ctx context.Context, b *v1alpha1.Backup, obs observed) (verification, error) {
	var ver verification
	if v := b.Spec.Verify; v != nil {
		s, p := parseSchedule(v.Schedule, b.Spec.TimeZone)
		if p != nil {
			p.Message = "verify: " + p.Message
			ver.problem = p
		} else {
			ver.schedule = &s
		}
	}
	if obs.src != nil {
		if err := r.applyVerifyCronJob(ctx, b, *obs.src, ver.schedule != nil); err != nil {
			return ver, err
		}
		if want := b.Annotations[v1alpha1.AnnotationVerifyNow]; want != "" && want != b.Status.LastManualVerification {
			job := &batchv1.Job{}
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.ManualVerifyJobName(want)}, job)
			if apierrors.IsNotFound(err) {
				// Not started yet, or finished, recorded and deleted: the
				// Backup as the API server holds it tells which.
				err = r.current(ctx, b)
			}
			if err != nil {
				return ver, err
			}
			if err := r.applier().Apply(ctx, ManualVerifyJob(b, *obs.src, r.InstanceImage, want), job, b.UID); err != nil {
				return ver, fmt.Errorf("starting the verification asked for: %w", err)
			}
			ver.manual = want
			r.event(b, job, corev1.EventTypeNormal, v1alpha1.EventVerificationRequested, "Verify",
				"Started Job %s as the %s annotation asks", job.Name, v1alpha1.AnnotationVerifyNow)
		}
	}
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{v1alpha1.LabelBackupVerify: b.Name}); err != nil {
		return ver, fmt.Errorf("listing the verification Jobs: %w", err)
	}
	last := b.Status.LastVerified
	for i := range list.Items {
		job := &list.Items[i]
		done, _, when, _ := finished(job)
		if !done {
			continue
		}
		ver.done = append(ver.done, job)
		if last != nil && last.Job == job.Name {
			continue // recorded; its deletion did not go through yet
		}
		v, err := r.verificationOutcome(ctx, job, finishTime(job, when))
		if err != nil {
			return ver, err
		}
		ver.finished = append(ver.finished, v)
	}
	slices.SortFunc(ver.finished, func(a, c v1alpha1.BackupVerification) int {
		return a.Time.Compare(c.Time.Time)
	})
	return ver, nil
}

// applyVerifyCronJob applies the verification CronJob when spec.verify
// schedules verifications, and deletes it otherwise.
func (r *Reconciler) applyVerifyCronJob(ctx context.Context, b *v1alpha1.Backup, src source, scheduled bool) error {
	cj := &batchv1.CronJob{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.VerifyCronJobName()}, cj)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading CronJob %s: %w", b.VerifyCronJobName(), err)
	}
	if !scheduled {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return r.applier().Delete(ctx, cj, b.UID)
	}
	if err := r.applier().Apply(ctx, VerifyCronJob(b, src, r.InstanceImage), cj, b.UID); err != nil {
		return fmt.Errorf("applying CronJob %s: %w", b.VerifyCronJobName(), err)
	}
	return nil
}

// verificationOutcome reads a finished verification Job's result. A
// result not read because the API server could not list the Job's pods is
// an error, tried again, not a failed verification.
func (r *Reconciler) verificationOutcome(ctx context.Context, job *batchv1.Job, when time.Time) (v1alpha1.BackupVerification, error) {
	v := v1alpha1.BackupVerification{Job: job.Name, Time: metav1Time(when.Truncate(time.Second)), Reason: v1alpha1.ReasonVerificationFailed}
	_, failed, _, msg := finished(job)
	res, ok, err := r.taskResult(ctx, job)
	if unread(ok, err) {
		return v, err
	}
	switch {
	case ok:
		v.Passed = res.Succeeded && !failed
		v.Backup = res.Key
		v.DurationSeconds = int64(res.DurationSeconds + 0.5)
		v.TablesChecked = int32(res.TablesChecked)
		if res.Reason != "" {
			v.Reason = res.Reason
		}
		v.Message = res.Message
		if !v.Passed {
			v.Message = res.Error
		}
		if !res.CompletionTime.IsZero() {
			v.Time = metav1Time(res.CompletionTime.Truncate(time.Second))
		}
	case err != nil:
		v.Message = err.Error()
	case failed:
		v.Message = "The Job failed without a result: " + msg
	default:
		v.Message = "The Job finished but its pod and result are gone"
	}
	r.pointInTimeOutcome(ctx, job, &v)
	return v, nil
}

// verifyLabels are put on a Backup's verification CronJob, Jobs and pods.
func verifyLabels(b *v1alpha1.Backup) map[string]string {
	return taskLabels(b, v1alpha1.LabelBackupVerify)
}

// verifyJobSpec runs one verification of the newest backup of src's
// database, once: a failure is reported, not retried.
func verifyJobSpec(b *v1alpha1.Backup, src source, instanceImage string) *batchv1ac.JobSpecApplyConfiguration {
	return batchv1ac.JobSpec().
		WithBackoffLimit(0).
		WithActiveDeadlineSeconds(int64(verifyDeadline.Seconds())).
		// The operator deletes a finished Job once its result is in
		// status; this is for when the operator does not run.
		WithTTLSecondsAfterFinished(int32(taskTTL.Seconds())).
		WithTemplate(jobs.VerifyPodTemplate(jobs.Verification{
			Image: src.image, InstanceImage: instanceImage,
			Type: src.conn.Type, Database: src.conn.Database,
			Destination: b.Spec.Destination, Labels: verifyLabels(b),
			PointInTime: verifyPointInTime(b, src),
		}))
}

// VerifyCronJob runs verifications on spec.verify's schedule, one at a
// time.
func VerifyCronJob(b *v1alpha1.Backup, src source, instanceImage string) *batchv1ac.CronJobApplyConfiguration {
	suspend := b.Spec.Suspend || (b.Spec.Verify != nil && b.Spec.Verify.Suspend)
	schedule := ""
	if b.Spec.Verify != nil {
		schedule = b.Spec.Verify.Schedule
	}
	return batchv1ac.CronJob(b.VerifyCronJobName(), b.Namespace).
		WithLabels(verifyLabels(b)).
		WithOwnerReferences(ownerReference(b)).
		WithSpec(batchv1ac.CronJobSpec().
			WithSchedule(schedule).
			WithTimeZone(timeZone(b)).
			WithSuspend(suspend).
			WithConcurrencyPolicy(batchv1.ForbidConcurrent).
			WithStartingDeadlineSeconds(3600).
			WithSuccessfulJobsHistoryLimit(1).
			WithFailedJobsHistoryLimit(1).
			WithJobTemplate(batchv1ac.JobTemplateSpec().
				WithLabels(verifyLabels(b)).
				WithSpec(verifyJobSpec(b, src, instanceImage))))
}

// ManualVerifyJob is an on-demand verification, asked for with
// v1alpha1.AnnotationVerifyNow.
func ManualVerifyJob(b *v1alpha1.Backup, src source, instanceImage, value string) *batchv1ac.JobApplyConfiguration {
	return batchv1ac.Job(b.ManualVerifyJobName(value), b.Namespace).
		WithLabels(verifyLabels(b)).
		WithOwnerReferences(ownerReference(b)).
		WithSpec(verifyJobSpec(b, src, instanceImage))
}

// setVerification records newly finished verifications and sets the
// Verified and VerificationStale conditions and the next verification's
// time. It is pure.
func setVerification(b *v1alpha1.Backup, st *v1alpha1.BackupStatus, ver verification, now time.Time) {
	gen := b.Generation
	for _, v := range ver.finished {
		st.LastVerified = v.DeepCopy()
	}
	if ver.manual != "" {
		st.LastManualVerification = ver.manual
	}
	v := b.Spec.Verify
	last := st.LastVerified
	switch {
	case v == nil && last == nil:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionVerified)
	case ver.problem != nil:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionVerified, conditions.False(ver.problem.Reason, ver.problem.Message))
	case last == nil:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionVerified, conditions.Cond{Status: metav1.ConditionUnknown,
			Reason: v1alpha1.ReasonNoVerificationYet, Message: "No verification has finished yet"})
	case last.Passed:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionVerified, conditions.True(last.Reason, fmt.Sprintf("Job %s: %s", last.Job, last.Message)))
	default:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionVerified, conditions.False(last.Reason, fmt.Sprintf("Job %s: %s", last.Job, last.Message)))
	}

	if ver.schedule == nil || v.Suspend || b.Spec.Suspend {
		st.NextVerificationTime = nil
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionVerificationStale)
		return
	}
	st.NextVerificationTime = metav1Time(ver.schedule.next(now))
	interval := ver.schedule.interval(now)
	if now.Before(verificationStaleTime(st, *ver.schedule, now)) {
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionVerificationStale, conditions.False(v1alpha1.ReasonVerificationFresh, ""))
		return
	}
	lastTime := "none yet"
	if last != nil && last.Time != nil {
		lastTime = last.Time.UTC().Format(time.RFC3339)
	}
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionVerificationStale, conditions.True(v1alpha1.ReasonNoRecentVerification, fmt.Sprintf(
		"No verification ended within %s, twice the verify schedule's interval; last: %s", 2*interval, lastTime)))
}

// verificationStaleTime is when verifications are stale without a new
// one: twice the verify schedule's interval after the last ended or,
// before the first, after the Verified condition first said none had.
func verificationStaleTime(st *v1alpha1.BackupStatus, s schedule, now time.Time) time.Time {
	since := now
	if st.LastVerified != nil && st.LastVerified.Time != nil {
		since = st.LastVerified.Time.Time
	} else if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionVerified); c != nil {
		since = c.LastTransitionTime.Time
	}
	return since.Add(2 * s.interval(now))
}

// verifyRequeueAfter is when to look again for the verifications: when
// they would turn stale. Zero when nothing is due.
func verifyRequeueAfter(st *v1alpha1.BackupStatus, ver verification, now time.Time) time.Duration {
	if ver.schedule == nil || st.NextVerificationTime == nil {
		return 0
	}
	if at := verificationStaleTime(st, *ver.schedule, now); at.After(now) {
		return at.Sub(now) + time.Second
	}
	return 0
}

// announceVerification emits an event per newly finished verification,
// and when verifications turn stale.
func (r *Reconciler) announceVerification(b *v1alpha1.Backup, prev *v1alpha1.BackupStatus, ver verification, next *v1alpha1.BackupStatus) {
	for _, v := range ver.finished {
		if v.Passed {
			r.event(b, nil, corev1.EventTypeNormal, v1alpha1.EventVerificationPassed, "Verify",
				"Job %s verified %s in %ds: %s", v.Job, v.Backup, v.DurationSeconds, v.Message)
		} else {
			r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventVerificationFailed, "Verify",
				"Job %s: %s: %s", v.Job, v.Reason, v.Message)
		}
	}
	was := meta.IsStatusConditionTrue(prev.Conditions, v1alpha1.ConditionVerificationStale)
	if c := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionVerificationStale); c != nil && c.Status == metav1.ConditionTrue && !was {
		r.event(b, nil, corev1.EventTypeWarning, v1alpha1.EventVerificationStale, "Verify", "%s", c.Message)
	}
}

// observeVerification sets the verification gauges from status.
func observeVerification(b *v1alpha1.Backup, st *v1alpha1.BackupStatus) {
	last := st.LastVerified
	if last == nil || last.Time == nil {
		metrics.ForgetVerification(b.Namespace, b.Name)
		return
	}
	metrics.VerificationLast.WithLabelValues(b.Namespace, b.Name).Set(float64(last.Time.Unix()))
	metrics.VerificationDuration.WithLabelValues(b.Namespace, b.Name).Set(float64(last.DurationSeconds))
	ok := 0.0
	if last.Passed {
		ok = 1
	}
	metrics.VerificationSuccess.WithLabelValues(b.Namespace, b.Name).Set(ok)
}

// deleteVerifyJobs deletes finished verification Jobs, with their pods,
// whose outcome status holds. Scheduled ones belong to the CronJob, not
// to the Backup: the label and the UID say which to delete.
func (r *Reconciler) deleteVerifyJobs(ctx context.Context, done []*batchv1.Job) error {
	for _, job := range done {
		uid := job.UID
		err := r.Client.Delete(ctx, job, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Job %s: %w", job.Name, err)
		}
	}
	return nil
}
