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
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/status"
)

// retryDelete is how long after a failed delete Job it is tried again.
const retryDelete = time.Minute

// finalize carries out the deletion policy on the stored dumps, then lets
// the Backup go. Retain (the default) keeps them. Delete runs a Job in the
// Backup's namespace, with the destination's credentials Secret, that
// deletes the dumps and manifests of this Backup's database under the
// destination's prefix: the operator itself never contacts the store. The
// Backup stays until that Job succeeded, or the policy is changed to
// Retain; a failure is a Warning event and the Ready condition, and the
// Job is tried again after retryDelete.
func (r *Reconciler) finalize(ctx context.Context, b *v1alpha1.Backup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, v1alpha1.BackupFinalizer) {
		return ctrl.Result{}, nil
	}
	// The archiver stops first: it would upload again what a deletion
	// removes.
	if stopped, err := r.stopArchiver(ctx, b); err != nil || !stopped {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, err
	}
	if b.Spec.DeletionPolicy == v1alpha1.DeletionDelete {
		del, err := r.deleteDumps(ctx, b, r.now())
		if err != nil {
			return ctrl.Result{}, err
		}
		if !del.done {
			return ctrl.Result{RequeueAfter: del.requeue}, r.reportDeletion(ctx, b, del)
		}
		count := fmt.Sprintf("%d stored dumps", del.deleted)
		if del.deleted < 0 {
			count = "the stored dumps (its pod, with the count, is gone)"
		}
		r.event(b, related(del.job), corev1.EventTypeNormal, v1alpha1.EventDumpsDeleted, "Delete",
			"Job %s deleted %s, as deletionPolicy Delete asks", del.job.Name, count)
	} else {
		// A deletion that started before the policy changed stops.
		job := &batchv1.Job{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.DeleteJobName()}, job)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("reading Job %s: %w", b.DeleteJobName(), err)
		}
		if err := r.applier().Delete(ctx, job, b.UID); err != nil {
			return ctrl.Result{}, err
		}
		r.event(b, nil, corev1.EventTypeNormal, v1alpha1.EventDumpsRetained, "Delete",
			"Kept the stored dumps in %s %s, as deletionPolicy Retain asks", b.Spec.Destination.Type, b.Spec.Destination.Bucket)
	}
	metrics.ForgetBackup(b.Namespace, b.Name)
	metrics.ForgetVerification(b.Namespace, b.Name)
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, v1alpha1.BackupFinalizer)
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// deletion is how the deletion of the dumps goes.
type deletion struct {
	// done: the delete Job succeeded, having deleted that many dumps (-1:
	// its result is gone).
	done    bool
	deleted int
	job     *batchv1.Job
	// problem is why the dumps are not deleted; nil while the Job runs.
	problem *conditions.Problem
	// requeue is when to look again without an event.
	requeue time.Duration
}

// deleteDumps drives the Job that deletes the dumps of the Backup's
// database: it starts it, reads its result, and starts it again after
// retryDelete when it failed, or at once when the destination, its
// credentials or the database changed. No Job starts when the dumped
// database's name is unknown: nothing could tell which dumps are the
// Backup's.
func (r *Reconciler) deleteDumps(ctx context.Context, b *v1alpha1.Backup, now time.Time) (deletion, error) {
	d := b.Spec.Destination
	if p := refusedEndpoint(d); p != nil {
		return deletion{problem: p, requeue: retryUserError}, nil
	}
	name := r.sourceDatabase(ctx, b)
	if name == "" {
		return deletion{requeue: retryUserError, problem: &conditions.Problem{Reason: v1alpha1.ReasonDeleteFailed, Message: "The dumped database's name is unknown " +
			"(its Database is gone and no run resolved it), so no dump can be told to be this Backup's; nothing was deleted: " +
			"set deletionPolicy Retain to let the Backup go"}}, nil
	}
	version, p, err := r.credentialsVersion(ctx, b)
	if p != nil || err != nil {
		if p != nil {
			p.Message += "; the dumps cannot be deleted without it: create it, or set deletionPolicy Retain to let the Backup go"
		}
		return deletion{problem: p, requeue: retryUserError}, err
	}
	hash := destinationHash(d, version, name)
	job := &batchv1.Job{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.DeleteJobName()}, job)
	switch {
	case apierrors.IsNotFound(err):
		job = &batchv1.Job{}
		if err := r.applier().Apply(ctx, DeleteJob(b, hash, name, r.InstanceImage), job, b.UID); err != nil {
			return deletion{}, fmt.Errorf("starting the deletion of the dumps: %w", err)
		}
		return deletion{job: job}, nil
	case err != nil:
		return deletion{}, fmt.Errorf("reading Job %s: %w", b.DeleteJobName(), err)
	}
	del := deletion{job: job}
	done, failed, when, msg := finished(job)
	stale := job.Annotations[v1alpha1.AnnotationDestinationHash] != hash
	switch {
	case stale && (!done || !failed):
		// Started for another destination, credentials or database: the
		// dumps of this one may be left. Its deletion brings a new one.
		return del, r.applier().Delete(ctx, job, b.UID)
	case !done:
		return del, nil
	}
	res, ok, rerr := r.taskResult(ctx, job)
	if !failed {
		// A Job completes only when its container exited 0. Its pod and
		// the count it holds are gone only when the API server says so:
		// a failed read is tried again, as the event would say otherwise.
		if unread(ok, rerr) {
			return del, rerr
		}
		del.done, del.deleted = true, res.Deleted
		if !ok {
			del.deleted = -1
		}
		return del, nil
	}
	why := "failed without a result: " + msg
	switch {
	case ok:
		why = res.Error
	case rerr != nil:
		why = rerr.Error()
	}
	del.problem = &conditions.Problem{Reason: v1alpha1.ReasonDeleteFailed, Message: fmt.Sprintf(
		"Job %s could not delete the stored dumps: %s; the Backup stays until they are deleted (tried again every %s) or deletionPolicy is Retain",
		job.Name, why, retryDelete)}
	retryAt := finishTime(job, when).Add(retryDelete)
	if stale || !now.Before(retryAt) {
		return del, r.applier().Delete(ctx, job, b.UID)
	}
	del.requeue = retryAt.Sub(now)
	return del, nil
}

// reportDeletion writes why the Backup is not gone yet into Ready, and
// announces a new problem with a Warning event.
func (r *Reconciler) reportDeletion(ctx context.Context, b *v1alpha1.Backup, del deletion) error {
	st := *b.Status.DeepCopy()
	prev := meta.FindStatusCondition(b.Status.DeepCopy().Conditions, v1alpha1.ConditionReady)
	if p := del.problem; p != nil {
		summarize(&st, b.Generation, v1alpha1.BackupFailed, conditions.False(p.Reason, p.Message))
	} else {
		summarize(&st, b.Generation, v1alpha1.BackupPending, conditions.False(v1alpha1.ReasonDeletingDumps,
			fmt.Sprintf("Job %s deletes the stored dumps, as deletionPolicy Delete asks", del.job.Name)))
	}
	if err := status.Write(ctx, r.Client, b, &b.Status, st, client.MergeFromWithOptimisticLock{}); err != nil {
		return err
	}
	if p := del.problem; p != nil && (prev == nil || prev.Reason != p.Reason || prev.Message != p.Message) {
		r.event(b, related(del.job), corev1.EventTypeWarning, v1alpha1.EventDumpsDeleteFailed, "Delete",
			"Cannot delete the stored dumps as deletionPolicy Delete asks: %s", p.Message)
	}
	return nil
}

// sourceDatabase is the name of the dumped database, or "" when unknown.
func (r *Reconciler) sourceDatabase(ctx context.Context, b *v1alpha1.Backup) string {
	if c := b.Spec.Source.Connection; c != nil {
		return c.Database
	}
	db := &v1alpha1.Database{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Source.DatabaseRef.Name}, db); err == nil {
		return db.Spec.DatabaseName
	}
	return b.Status.SourceDatabase
}

// related is job as an event's related object: nil without a Job.
func related(job *batchv1.Job) runtime.Object {
	if job == nil {
		return nil
	}
	return job
}
