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

// Package restore reconciles Restores: once the dump's source and the
// target database resolve, it runs one Job that verifies the dump and
// restores it, and reports the result the Job's pod left in its
// termination message. A restore that failed is final: it is never retried.
package restore

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/status"
)

// retryWaiting is how long to wait before looking again at a source or
// target that does not resolve, besides the watches.
const retryWaiting = 30 * time.Second

// Reconciler runs Restores.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events on state transitions.
	Recorder events.EventRecorder
	// InstanceImage is Steward's own image; its binary is copied into the
	// restore pod.
	InstanceImage string
}

// +kubebuilder:rbac:groups=steward.dev,resources=restores,verbs=get;list;watch
// +kubebuilder:rbac:groups=steward.dev,resources=restores/status,verbs=get;patch
// +kubebuilder:rbac:groups=steward.dev,resources=backups;databases,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile starts one Restore's Job once its source and target resolve,
// then follows the Job to its end and writes the status if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &v1alpha1.Restore{}
	if err := r.Client.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rs.DeletionTimestamp.IsZero() || final(rs) {
		// The Job carries an owner reference; a finished restore is final.
		return ctrl.Result{}, nil
	}

	obs, err := r.observe(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := computeStatus(rs, obs)
	r.announce(rs, &next)
	if err := status.Write(ctx, r.Client, rs, &rs.Status, next); err != nil {
		return ctrl.Result{}, err
	}
	if obs.waiting != nil {
		return ctrl.Result{RequeueAfter: retryWaiting}, nil
	}
	return ctrl.Result{}, nil
}

// observe reads the Restore's Job and, before it exists, resolves the
// source and target and creates it; then reads the result of its pod.
func (r *Reconciler) observe(ctx context.Context, rs *v1alpha1.Restore) (observed, error) {
	job := &batchv1.Job{}
	key := client.ObjectKey{Namespace: rs.Namespace, Name: JobName(rs)}
	if err := r.Client.Get(ctx, key, job); client.IgnoreNotFound(err) != nil {
		return observed{}, fmt.Errorf("reading Job %s: %w", key.Name, err)
	}
	if job.UID == "" {
		// The Job is created once: what it restores from and into is
		// fixed when it starts, whatever happens to the source and target.
		run, obs, err := r.resolve(ctx, rs)
		if err != nil || obs.waiting != nil || obs.refused != nil {
			return obs, err
		}
		applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
		if err := applier.Apply(ctx, Job(rs, run), job, rs.UID); err != nil {
			var conflict *apply.Conflict
			if errors.As(err, &conflict) {
				return observed{refused: &conditions.Problem{Reason: v1alpha1.ReasonApplyFailed, Message: err.Error()}}, nil
			}
			return observed{}, err
		}
		log.FromContext(ctx).Info("Restore started", "job", job.Name, "object", Key(rs))
	}
	obs := observed{job: job}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(rs.Namespace), client.MatchingLabels{v1alpha1.LabelRestore: rs.Name}); err != nil {
		return obs, fmt.Errorf("listing the pods of Restore %s: %w", rs.Name, err)
	}
	for i := range pods.Items {
		res, ok, err := jobs.RestoreResult(&pods.Items[i])
		switch {
		case ok:
			obs.result = &res
			return obs, nil
		case err != nil:
			obs.podEnded = err
		}
	}
	return obs, nil
}

// resolve turns the Restore's source and target into a run, or says what
// it waits for or why it can never run.
func (r *Reconciler) resolve(ctx context.Context, rs *v1alpha1.Restore) (jobs.Run, observed, error) {
	run := jobs.Run{InstanceImage: r.InstanceImage, Key: Key(rs), Overwrite: rs.Spec.Overwrite}

	src := rs.Spec.Source
	switch {
	case src.BackupRef != nil:
		b := &v1alpha1.Backup{}
		found, err := r.get(ctx, rs.Namespace, src.BackupRef.Name, b)
		if err != nil || !found {
			return run, observed{waiting: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForBackup, Message: fmt.Sprintf("Waiting for Backup %s, which does not exist", src.BackupRef.Name)}}, err
		}
		run.Destination = b.Spec.Destination
		if p := src.PointInTime; p != nil {
			if b.Spec.PointInTime == nil {
				return run, observed{refused: &conditions.Problem{Reason: v1alpha1.ReasonPointInTimeUnavailable, Message: fmt.Sprintf(
					"Backup %s does not archive the log: set its spec.pointInTime, then recover to times after its next base backup", b.Name)}}, nil
			}
			if b.Status.SourceDatabase == "" {
				return run, observed{waiting: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForBackup, Message: fmt.Sprintf(
					"Waiting for Backup %s to resolve its Database", b.Name)}}, nil
			}
			run.PointInTime = &jobs.PointInTime{Archive: b.Status.SourceDatabase, TargetTime: p.TargetString()}
		}
	case src.Destination != nil:
		run.Destination = *src.Destination
	}

	tgt := rs.Spec.Target
	switch {
	case tgt.DatabaseRef != nil:
		db := &v1alpha1.Database{}
		found, err := r.get(ctx, rs.Namespace, tgt.DatabaseRef.Name, db)
		if err != nil || !found {
			return run, observed{waiting: &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase, Message: fmt.Sprintf("Waiting for Database %s, which does not exist", tgt.DatabaseRef.Name)}}, err
		}
		if p := refusal(CheckType(rs, db)); p != nil {
			return run, observed{refused: p}, nil
		}
		if p := notReady(rs, db); p != nil {
			return run, observed{waiting: p}, nil
		}
		eng, engErr := engine.Get(string(db.Spec.Engine))
		if p := refusal(engErr); p != nil {
			return run, observed{refused: p}, nil
		}
		run.Conn = jobs.Connection{
			Type:              tgt.Type,
			Host:              db.Host(),
			Port:              db.Port(),
			Database:          db.Spec.DatabaseName,
			CredentialsSecret: db.CredentialsName(),
		}
		run.Image = engine.ImageFor(db, eng)
	case tgt.Connection != nil:
		c := tgt.Connection
		run.Conn = jobs.Connection{Type: tgt.Type, Host: c.Host, Port: c.Port, Database: c.Database,
			CredentialsSecret: c.CredentialsSecretRef.Name}
		run.Image = jobs.DefaultImage(tgt.Type)
	}
	if rs.Spec.Image != "" {
		run.Image = rs.Spec.Image
	}
	return run, observed{}, nil
}

// refusal turns a target the Restore can never write into a problem, and
// nil into nil.
func refusal(err error) *conditions.Problem {
	if err == nil {
		return nil
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonTargetMismatch, Message: err.Error()}
}

// notReady says why a Database cannot take the restore yet. A Database
// takes restores once Ready, except its own bootstrap restore: that one
// runs as soon as an instance is up, since the Database only becomes Ready
// after it.
func notReady(rs *v1alpha1.Restore, db *v1alpha1.Database) *conditions.Problem {
	ready := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue {
		return nil
	}
	if db.IsBootstrapRestore(rs) {
		if db.Status.ReadyReplicas >= 1 {
			return nil
		}
		return &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase, Message: fmt.Sprintf("Waiting for an instance of Database %s to be ready", db.Name)}
	}
	why := "it has no status yet"
	if ready != nil {
		why = fmt.Sprintf("it is %s", ready.Reason)
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase, Message: fmt.Sprintf("Waiting for Database %s to be Ready: %s", db.Name, why)}
}

// get reads from the cache and reports whether the object exists.
func (r *Reconciler) get(ctx context.Context, ns, name string, obj client.Object) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("reading %T %s: %w", obj, name, err)
	}
	return err == nil, nil
}

// byRestoreLabel maps a restore pod to its Restore.
func byRestoreLabel(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[v1alpha1.LabelRestore]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// waitingOn maps a Backup or Database to the unfinished Restores of its
// namespace that name it.
func (r *Reconciler) waitingOn(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &v1alpha1.RestoreList{}
		if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			log.FromContext(ctx).Error(err, "Listing Restores", "namespace", obj.GetNamespace())
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			rs := &list.Items[i]
			ref := rs.Spec.Target.DatabaseRef
			if kind == "Backup" {
				ref = rs.Spec.Source.BackupRef
			}
			if !final(rs) && ref != nil && ref.Name == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rs)})
			}
		}
		return reqs
	}
}

// SetupWithManager registers the reconciler, watching Restores, their Jobs
// and pods, and the Backups and Databases they wait for.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Restore{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(byRestoreLabel)).
		Watches(&v1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.waitingOn("Backup"))).
		Watches(&v1alpha1.Database{}, handler.EnqueueRequestsFromMapFunc(r.waitingOn("Database"))).
		WithOptions(opts).
		Complete(r)
}
