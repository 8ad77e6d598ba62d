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

// Package database reconciles Databases: credentials Secrets, a rendered
// configuration, three Services, a StatefulSet of instances run by Steward's
// instance manager, and a PodDisruptionBudget; and it keeps data on deletion
// unless the deletion policy says otherwise.
package database

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/priority"
	"github.com/steward-dev/steward/internal/status"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// phases are the values of status.phase, in the order metrics list them;
// the first, Pending, also counts the objects with no status yet.
var phases = []string{
	string(v1alpha1.DatabasePending), string(v1alpha1.DatabaseCreating), string(v1alpha1.DatabaseRunning),
	string(v1alpha1.DatabaseUpdating), string(v1alpha1.DatabaseDegraded), string(v1alpha1.DatabaseBlocked),
}

// retryUserError is how long to wait before looking again at a problem the
// user must fix that no watch event may announce (a Secret Steward does not
// watch, a storage class).
const retryUserError = time.Minute

// stallReconcile, set only by tests, is called at the start of every
// reconcile: it holds a reconcile as a long wait behind busy workers would.
var stallReconcile atomic.Pointer[func(context.Context, ctrl.Request)]

// conflictRetry is how soon a reconcile that wrote on a stale copy looks
// again.
const conflictRetry = 200 * time.Millisecond

// Reconciler makes a Database's children match its spec and reports their state.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events on state transitions.
	Recorder events.EventRecorder
	// InstanceImage is Steward's own image; its binary is copied into every
	// database pod to run the instance manager.
	InstanceImage string
	// StuckPodTimeout is how long an instance's pod may be unable to start
	// before the Database is Degraded; zero means stuckpods.DefaultTimeout.
	StuckPodTimeout time.Duration

	// Instances reaches the instance managers; nil means HTTPInstances.
	Instances InstanceClient

	// labelled remembers the role label last patched onto each pod, by
	// pod UID, until the cache shows it (a labelPatch).
	labelled sync.Map
	// memories are the *memory of each Database, by UID.
	memories sync.Map
	// renewals are the *renewal of each Database, by UID; none starts once
	// renewalsStopped.
	renewals        sync.Map
	renewalsMu      sync.RWMutex
	renewalsStopped bool
	startOnce       sync.Once
	started         time.Time
}

// +kubebuilder:rbac:groups=steward.dev,resources=databases,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=databases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get,roleName=steward-manager-cluster
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=steward.dev,resources=backups;restores,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Database's children in line with its spec, then
// writes its status if that changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if stall := stallReconcile.Load(); stall != nil {
		(*stall)(ctx, req)
	}
	db := &v1alpha1.Database{}
	if err := r.Client.Get(ctx, req.NamespacedName, db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !db.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, db)
	}
	if !controllerutil.ContainsFinalizer(db, v1alpha1.DatabaseFinalizer) {
		orig := db.DeepCopy()
		controllerutil.AddFinalizer(db, v1alpha1.DatabaseFinalizer)
		if err := r.Client.Patch(ctx, db, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}

	obs, err := r.reconcileChildren(ctx, db)
	if apierrors.IsConflict(err) {
		// A write on a copy older than the API server's: the cache has
		// not caught up with a write of this operator's yet. Soon, without
		// the backoff of an error, which would slow a failover down.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if err != nil {
		// Retried with backoff; meanwhile the status says what fails.
		obs.problem = &conditions.Problem{Reason: v1alpha1.ReasonReconcileError, Message: err.Error()}
	}
	next := computeStatus(db, obs)
	if wait := settleDelay(db, obs.statefulSet, next, time.Now()); wait > 0 && err == nil {
		if obs.recheck > 0 {
			wait = min(wait, obs.recheck)
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.announce(db, &next)
	if werr := status.Write(ctx, r.Client, db, &db.Status, next); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if obs.problem != nil {
		return priority.RecheckAfter(conditions.TrueFor(next.Conditions, v1alpha1.ConditionDegraded, time.Now()), retryUserError, priority.MaxRecheck), nil
	}
	// A pod that cannot start yet is looked at again when it reaches the
	// stuck pod timeout: the passing of time sends no event.
	return ctrl.Result{RequeueAfter: obs.recheck}, nil
}

// reconcileChildren applies every child in order: credentials first (the
// pods read them), configuration, Services, the StatefulSet, the
// PodDisruptionBudget; then labels the pods with their roles and grows
// volumes. A major version change stops it before anything is written.
func (r *Reconciler) reconcileChildren(ctx context.Context, db *v1alpha1.Database) (observed, error) {
	eng, engErr := engine.Get(string(db.Spec.Engine))
	if p := userProblem(v1alpha1.ReasonInvalidSpec, engErr); p != nil {
		return observed{problem: p}, nil
	}
	if p := validate(db, eng); p != nil {
		return observed{problem: p}, nil
	}
	if p := invalidParameters(db, eng); p != nil {
		return observed{problem: p}, nil
	}
	key := client.ObjectKeyFromObject(db)
	sts := &appsv1.StatefulSet{}
	if err := r.get(ctx, key, sts); err != nil {
		return observed{}, err
	}
	obs := observed{}
	if sts.UID != "" {
		obs.statefulSet = sts
	}
	if p := upgradeBlocked(db, obs.statefulSet); p != nil {
		obs.blocked = p
		return obs, nil
	}

	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	p, err := r.reconcileCredentials(ctx, db, applier)
	if p != nil || err != nil {
		obs.problem = p
		return obs, err
	}
	files, renderErr := eng.Render(Tuning(db))
	if p := userProblem(v1alpha1.ReasonInvalidParameters, renderErr); p != nil {
		// The engine refused a parameter: the user's to fix.
		obs.problem = p
		return obs, nil
	}
	claims, err := r.volumeClaims(ctx, db)
	if err != nil {
		return obs, err
	}
	// A new StatefulSet's claims ask for the size the volumes have; an
	// existing one's claim template cannot change (see recreateForTemplate).
	claimSize := storageSize(db, nil, claims)
	if obs.statefulSet != nil {
		claimSize = templateClaimSize(obs.statefulSet, claimSize)
	}
	// The configuration and the Services do not depend on each other: they
	// are applied at once, so that a new Database's first reconcile waits
	// for one lookup and one apply there instead of four of each. The
	// StatefulSet follows, so that its pods find their configuration.
	first := []child{{ConfigMap(db, files), &corev1.ConfigMap{}}}
	for _, svc := range Services(db) {
		first = append(first, child{svc, &corev1.Service{}})
	}
	var then []child
	if obs.statefulSet == nil || obs.statefulSet.DeletionTimestamp.IsZero() {
		then = append(then, child{StatefulSet(db, eng, r.InstanceImage, claimSize), sts})
	} else {
		// Deleted with its pods orphaned to grow its claim template: it is
		// created again once the garbage collector has let it go.
		obs.recheck = time.Second
	}
	then = append(then, child{apply.Optional(PodDisruptionBudget(db)), &policyv1.PodDisruptionBudget{}})
	fns := make([]func() error, len(first))
	for i, c := range first {
		fns[i] = func() error { return r.applyChild(ctx, db, applier, c) }
	}
	if p, err := conditions.Split(apply.Together(fns...)); p != nil || err != nil {
		obs.problem = p
		return obs, err
	}
	for _, c := range then {
		if p, err := conditions.Split(r.applyChild(ctx, db, applier, c)); p != nil || err != nil {
			obs.problem = p
			return obs, err
		}
	}
	obs.statefulSet = sts

	pods, err := r.instancePods(ctx, db)
	if err != nil {
		return obs, err
	}
	roles, err := r.manageRoles(ctx, db, sts, pods, instance.ConfigHash(files))
	if err != nil {
		return obs, fmt.Errorf("managing the instances' roles: %w", err)
	}
	obs.roles = &roles
	if err := r.labelRoles(ctx, db, pods); err != nil {
		return obs, err
	}
	if err := r.replaceStuckPods(ctx, db, sts, pods); err != nil {
		return obs, err
	}
	recheck := obs.recheck
	obs.stuck, obs.recheck = stuckpods.Find(pods, stuckpods.OrDefault(r.StuckPodTimeout), time.Now())
	for _, d := range []time.Duration{roles.requeue, recheck} {
		if d > 0 && (obs.recheck == 0 || d < obs.recheck) {
			obs.recheck = d
		}
	}
	obs.storage, err = r.growVolumes(ctx, db, sts, claims, roles.instances)
	if err != nil {
		return obs, err
	}
	if db.Spec.Storage.AutoGrow != nil && (obs.recheck == 0 || obs.recheck > storagePollInterval) {
		// A filling volume sends no event: its usage is read this often.
		obs.recheck = storagePollInterval
	}
	if obs.storage != nil && obs.storage.problem != nil {
		obs.problem = obs.storage.problem
	}
	if obs.bootstrap, p, err = r.reconcileBootstrap(ctx, db, applier, sts); p != nil || err != nil {
		obs.problem = p
		return obs, err
	}
	if obs.backup, p, err = r.reconcileBackup(ctx, db, applier); p != nil || err != nil {
		obs.problem = p
		return obs, err
	}
	return obs, nil
}

// child pairs the desired state of one child with its live object.
type child struct {
	// desired is nil when the spec no longer asks for the child.
	desired runtime.ApplyConfiguration
	// live is an empty object of the child's type, or the child read already.
	live client.Object
}

// applyChild applies (or deletes) one child; a problem only the user can
// fix is a *conditions.ProblemError.
func (r *Reconciler) applyChild(ctx context.Context, db *v1alpha1.Database, applier apply.Applier, c child) error {
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.Name}
	if named, ok := c.desired.(interface{ GetName() *string }); ok && named.GetName() != nil {
		key.Name = *named.GetName()
	}
	if c.live.GetUID() == "" {
		if err := r.Client.Get(ctx, key, c.live); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("reading %T %s: %w", c.live, key, err)
		}
	}
	if c.desired == nil {
		return applier.Delete(ctx, c.live, db.UID)
	}
	err := applier.Apply(ctx, c.desired, c.live, db.UID)
	if reason, ok := apply.UserError(err); ok {
		return &conditions.ProblemError{Problem: conditions.Problem{Reason: reason, Message: err.Error()}}
	}
	return err
}

// get reads from the cache and treats NotFound as an empty object.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	if err := r.Client.Get(ctx, key, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return nil
}

// templateClaimSize is the storage request of the StatefulSet's volume
// claim template, which cannot change after creation.
func templateClaimSize(sts *appsv1.StatefulSet, fallback resource.Quantity) resource.Quantity {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == dataVolume {
			if q, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				return q
			}
		}
	}
	return fallback
}

// userProblem turns an error the user must fix into a problem with the
// reason, and nil into nil.
func userProblem(reason string, err error) *conditions.Problem {
	if err == nil {
		return nil
	}
	return &conditions.Problem{Reason: reason, Message: err.Error()}
}

// byDatabaseLabel maps a pod or volume claim to the Database it belongs to.
func byDatabaseLabel(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[v1alpha1.LabelDatabase]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// SetupWithManager registers the reconciler, watching Databases, their
// children (the Backup and bootstrap Restore among them), pods and volume
// claims, and the steward_databases{phase} metric.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	reader := mgr.GetCache()
	err := metrics.RegisterListPhases(reader, mgr.Elected(), func() client.ObjectList { return &v1alpha1.DatabaseList{} },
		"databases", "Database", phases, func(o client.Object) string { return string(o.(*v1alpha1.Database).Status.Phase) })
	if err != nil {
		return err
	}
	// The renewals between reconciles end with the manager, before it
	// gives up the leadership.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.stopAllRenewals()
		return nil
	}))
	if err != nil {
		return fmt.Errorf("adding the lease renewals: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Database{}, builder.WithPredicates(priority.NotEcho())).
		Watches(&v1alpha1.Database{}, priority.SpecChangesFirst()).
		Watches(&v1alpha1.Database{}, priority.EchoesLast()).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&v1alpha1.Backup{}).
		Owns(&v1alpha1.Restore{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(byDatabaseLabel)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(byDatabaseLabel)).
		WithOptions(opts).
		Complete(r)
}
