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

// Package backup reconciles Backups: a CronJob whose pods dump a database
// to an object store, the results of its runs read from their pods'
// termination messages, freshness, metrics, on-demand runs, a check of the
// destination, and the deletion policy of the stored dumps. Whatever
// touches a store runs as a Job in the Backup's namespace with the
// Backup's credentials Secret; the operator reads only the Jobs' results,
// and never reads a credential.
package backup

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/fieldindex"
	"github.com/steward-dev/steward/internal/priority"
	"github.com/steward-dev/steward/internal/status"
)

const (

	// historyLimit is how many runs status.history keeps.
	historyLimit = 10
	// manualRunTTL is how long a finished on-demand Job stays for its
	// result to be read.
	manualRunTTL = 24 * time.Hour
	// retryUserError is how long to wait before looking again at a problem
	// the user must fix that no watch event announces.
	retryUserError = time.Minute
	// credentialsResync is how often a Backup with a credentials Secret is
	// looked at, at least: Secrets are not watched, and a changed Secret
	// is checked again.
	credentialsResync = 10 * time.Minute
)

// Reconciler reconciles Backups.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events.
	Recorder events.EventRecorder
	// InstanceImage is Steward's own image, copied into backup pods.
	InstanceImage string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=steward.dev,resources=backups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=backups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=backups/finalizers,verbs=update
// +kubebuilder:rbac:groups=steward.dev,resources=databases,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=cronjobs;jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Backup's CronJob in line with its spec, checks its
// destination, records the results of finished runs, and writes the status
// if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.Backup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, b)
	}
	if !controllerutil.ContainsFinalizer(b, v1alpha1.BackupFinalizer) {
		orig := b.DeepCopy()
		controllerutil.AddFinalizer(b, v1alpha1.BackupFinalizer)
		if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	now := r.now()

	dest, err := r.reconcileDestination(ctx, b, now)
	if err != nil {
		dest.problem = &conditions.Problem{Reason: v1alpha1.ReasonReconcileError, Message: err.Error()}
	}
	obs, err2 := r.reconcileRuns(ctx, b)
	if err2 != nil {
		obs.problem = &conditions.Problem{Reason: v1alpha1.ReasonReconcileError, Message: err2.Error()}
	}
	runs, err3 := r.finishedRuns(ctx, b)
	err = errors.Join(err, err2, err3)
	ver, err4 := r.reconcileVerify(ctx, b, obs)
	err = errors.Join(err, err4)
	if errors.Is(err, errBehind) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	next := computeStatus(b, obs, dest, runs, now)
	setVerification(b, &next, ver, now)
	err = errors.Join(err, r.reconcilePointInTime(ctx, b, &next, now))
	prev := b.Status.DeepCopy()
	// The write is conditional on the Backup not having changed since it
	// was read: a reconcile from a stale cache fails here and is retried,
	// instead of recording, announcing and counting a run a second time.
	if werr := status.Write(ctx, r.Client, b, &b.Status, next, client.MergeFromWithOptimisticLock{}); werr != nil {
		if err == nil && apierrors.IsConflict(werr) {
			// The cache has not caught up with a write of this operator's
			// yet: again soon, without an error's log and backoff.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, errors.Join(err, werr)
	}
	r.announce(b, prev, runs, &next)
	r.announceVerification(b, prev, ver, &next)
	observeMetrics(b, &next)
	observeVerification(b, &next)
	// The outcomes of these checks and verifications are in status now.
	for _, job := range dest.done {
		err = errors.Join(err, r.applier().Delete(ctx, job, b.UID))
	}
	err = errors.Join(err, r.deleteVerifyJobs(ctx, ver.done))
	if err != nil {
		return ctrl.Result{}, err
	}
	after := requeueAfter(b, obs, dest, &next, now)
	if v := verifyRequeueAfter(&next, ver, now); v > 0 && (after == 0 || v < after) {
		after = v
	}
	if b.Spec.PointInTime != nil && (after == 0 || after > archiverPoll) {
		after = archiverPoll
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// maxNote is the most bytes an event's note may have: the API server
// refuses a longer one, and the event would be lost.
const maxNote = 1024

// event emits an event whose note is shortened to maxNote bytes. A store's
// error can be longer: it quotes requests and responses.
func (r *Reconciler) event(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	msg := fmt.Sprintf(note, args...)
	if len(msg) > maxNote {
		cut := maxNote - len("…")
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	r.Recorder.Eventf(regarding, related, eventtype, reason, action, "%s", msg)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// reconcileRuns resolves the source, applies the CronJob and starts an
// on-demand run when the annotation asks for one.
func (r *Reconciler) reconcileRuns(ctx context.Context, b *v1alpha1.Backup) (observed, error) {
	obs := observed{}
	if p := refusedEndpoint(b.Spec.Destination); p != nil {
		obs.problem = p
		return obs, r.suspendCronJob(ctx, b)
	}
	sched, p := parseSchedule(b.Spec.Schedule, b.Spec.TimeZone)
	if p != nil {
		obs.problem = p
		return obs, nil
	}
	obs.schedule = sched
	src, p, err := r.resolveSource(ctx, b)
	if p != nil || err != nil {
		obs.problem = p
		return obs, err
	}
	applier := r.applier()
	cj := &batchv1.CronJob{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(b), cj); client.IgnoreNotFound(err) != nil {
		return obs, fmt.Errorf("reading CronJob %s: %w", b.Name, err)
	}
	if err := applier.Apply(ctx, CronJob(b, src, r.InstanceImage), cj, b.UID); err != nil {
		var conflict *apply.Conflict
		if errors.As(err, &conflict) || apierrors.IsInvalid(err) {
			obs.problem = &conditions.Problem{Reason: v1alpha1.ReasonApplyFailed, Message: err.Error()}
			return obs, nil
		}
		return obs, err
	}
	obs.cronJob = cj
	obs.sourceDatabase = src.conn.Database
	obs.src = &src

	if want := b.Annotations[v1alpha1.AnnotationBackupNow]; want != "" && want != b.Status.LastManualRun {
		job := &batchv1.Job{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.ManualJobName(want)}, job); client.IgnoreNotFound(err) != nil {
			return obs, err
		}
		if err := applier.Apply(ctx, ManualJob(b, src, r.InstanceImage, want), job, b.UID); err != nil {
			return obs, err
		}
		obs.manualRun = want
		r.event(b, job, corev1.EventTypeNormal, v1alpha1.EventBackupRequested, "Backup",
			"Started Job %s as the %s annotation asks", job.Name, v1alpha1.AnnotationBackupNow)
	}
	return obs, nil
}

// suspendCronJob suspends the Backup's CronJob, made before its
// destination was refused, so that no run goes to that destination. The
// next apply sets spec.suspend as the Backup says.
func (r *Reconciler) suspendCronJob(ctx context.Context, b *v1alpha1.Backup) error {
	cj := &batchv1.CronJob{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(b), cj)
	if apierrors.IsNotFound(err) || (err == nil && (!metav1.IsControlledBy(cj, b) || ptr.Deref(cj.Spec.Suspend, false))) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading CronJob %s: %w", b.Name, err)
	}
	orig := cj.DeepCopy()
	cj.Spec.Suspend = ptr.To(true)
	if err := r.Client.Patch(ctx, cj, client.MergeFrom(orig), client.FieldOwner(apply.FieldOwner)); err != nil {
		return fmt.Errorf("suspending CronJob %s: %w", b.Name, err)
	}
	return nil
}

// requeueAfter is when to look again without an event: when the Backup
// would turn stale, after a problem the user must fix, when a failed check
// is due again, and at least every credentialsResync with a credentials
// Secret.
func requeueAfter(b *v1alpha1.Backup, obs observed, dest destination, st *v1alpha1.BackupStatus, now time.Time) time.Duration {
	if obs.problem != nil {
		return retryUserError
	}
	if dest.problem != nil {
		if dest.retryAt.After(now) {
			return dest.retryAt.Sub(now) + time.Second
		}
		return retryUserError
	}
	var after time.Duration
	switch at := staleTime(b, st, obs.schedule, now); {
	case at.After(now):
		after = at.Sub(now) + time.Second
	case st.NextScheduleTime != nil && st.NextScheduleTime.After(now):
		after = st.NextScheduleTime.Sub(now) + time.Minute
	}
	if b.Spec.Destination.CredentialsSecretRef != nil && (after == 0 || after > credentialsResync) {
		after = credentialsResync
	}
	return after
}

// SetupWithManager registers the reconciler, watching Backups, their
// CronJobs and Jobs (runs, checks, deletes and verifications), and the
// pods of those Jobs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []ctrl.Request {
		for _, label := range []string{v1alpha1.LabelBackup, v1alpha1.LabelBackupCheck, v1alpha1.LabelBackupDelete, v1alpha1.LabelBackupVerify} {
			if name := obj.GetLabels()[label]; name != "" {
				return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
			}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Backup{}).
		Watches(&v1alpha1.Backup{}, priority.SpecChangesFirst()).
		Owns(&batchv1.CronJob{}).
		Owns(&appsv1.Deployment{}).
		Watches(&batchv1.Job{}, byLabel).
		Watches(&corev1.Pod{}, byLabel).
		Watches(&v1alpha1.Database{}, handler.EnqueueRequestsFromMapFunc(backupsOf(mgr.GetCache(), databaseBackups(mgr.GetFieldIndexer()))),
			builder.WithPredicates(databaseAppearedOrReady())).
		WithOptions(opts).
		Complete(r)
}

// databaseBackups is the field index of Backups by the Database their
// source names.
func databaseBackups(indexer client.FieldIndexer) *fieldindex.Index {
	return fieldindex.New(indexer, &v1alpha1.Backup{}, "spec.source.databaseRef.name", func(o client.Object) []string {
		if ref := o.(*v1alpha1.Backup).Spec.Source.DatabaseRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	})
}

// backupsOf maps a Database to the Backups of it, so that a Backup that
// waits for its Database goes on as soon as the Database exists or is
// Ready, instead of at its next retry.
func backupsOf(reader client.Reader, byDatabase *fieldindex.Index) handler.MapFunc {
	return func(ctx context.Context, db client.Object) []ctrl.Request {
		list := &v1alpha1.BackupList{}
		if err := byDatabase.List(ctx, reader, list, db.GetNamespace(), db.GetName()); err != nil {
			log.FromContext(ctx).Error(err, "Listing the Backups of a Database", "database", db.GetName())
			return nil
		}
		reqs := make([]ctrl.Request, 0, len(list.Items))
		for _, b := range list.Items {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
		return reqs
	}
}

// databaseAppearedOrReady passes a Database's creation, deletion, and a
// change of its Ready condition: what a Backup of it waits for.
func databaseAppearedOrReady() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*v1alpha1.Database)
			after, ok2 := e.ObjectNew.(*v1alpha1.Database)
			return ok1 && ok2 && meta.IsStatusConditionTrue(before.Status.Conditions, v1alpha1.ConditionReady) !=
				meta.IsStatusConditionTrue(after.Status.Conditions, v1alpha1.ConditionReady)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// metav1Time returns a pointer to a metav1.Time, or nil for the zero time.
func metav1Time(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}
