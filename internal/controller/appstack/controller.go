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

// Package appstack reconciles AppStacks: it creates the stack's Databases,
// Caches, AppConfig and WebApps in dependency order, each only once what it
// depends on is Ready, routes an Ingress to the exposed apps, sets up
// monitoring, and on deletion removes the components in reverse order, after
// a final backup of production databases.
package appstack

import (
	"context"
	"fmt"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/priority"
	"github.com/steward-dev/steward/internal/status"
)

// poll is how often a stack is looked at while it waits on something no
// watch reports: a final backup, or a dependency's timeout.
const poll = 5 * time.Second

// Reconciler makes an AppStack's components match its spec.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events.
	Recorder events.EventRecorder
	// HasServiceMonitors reports whether the Prometheus Operator's
	// ServiceMonitor kind is served; looked up at run time.
	HasServiceMonitors func() bool

	// StatusSettle is how long a new stack's status may be held back while
	// its components are created in order and start
	// (v1alpha1.AppStackFirstStatusSettle in the operator); zero writes every
	// change at once.
	StatusSettle time.Duration

	// announced holds, per stack component, the wait last announced by an
	// event, so that a reconcile reading a stale status does not repeat it.
	announced sync.Map
	// recalled holds, per stack, what this process last computed of its
	// status (recalled).
	recalled sync.Map
}

// +kubebuilder:rbac:groups=steward.dev,resources=appstacks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=appstacks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=appstacks/finalizers,verbs=update
// +kubebuilder:rbac:groups=steward.dev,resources=databases;caches;webapps;appconfigs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=steward.dev,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile moves one AppStack towards its spec: it observes the stack's
// objects, plans what to do without a client, carries the plan out,
// announces what that did, and writes the status that follows, once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	stack := &v1alpha1.AppStack{}
	if err := r.Client.Get(ctx, req.NamespacedName, stack); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetStack(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !stack.DeletionTimestamp.IsZero() {
		r.forgetStack(req.NamespacedName)
		return r.tearDown(ctx, stack)
	}
	if controllerutil.AddFinalizer(stack, v1alpha1.AppStackFinalizer) {
		if err := r.Client.Update(ctx, stack); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer to AppStack %s: %w", stack.Name, err)
		}
	}

	obs, err := r.observe(ctx, stack)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	rec := r.recall(stack)
	prev := previous(stack, rec)
	p := planDeploy(stack, obs, prev, now)
	out, err := r.carryOut(ctx, stack, obs, &p, prev, now)
	written := statusWritten(stack, rec)
	r.announce(stack, p, out, err == nil, written)
	if err != nil {
		// Retried with backoff. The status, observedGeneration included,
		// stays that of the last plan carried out.
		return ctrl.Result{}, err
	}
	return r.writeStatus(ctx, stack, p, computeStatus(stack, obs, p, prev, now), written, now)
}

// writeStatus writes next, the status that follows the plan p carried out,
// unless it is a new stack's and may be held back (holdFor), and remembers
// its lines either way. The first write announces the components created
// while it was held back.
func (r *Reconciler) writeStatus(ctx context.Context, stack *v1alpha1.AppStack, p plan, next v1alpha1.AppStackStatus, written bool, now time.Time) (ctrl.Result, error) {
	// The first write included: until then the CRD's default tells
	// kstatus the stack is in progress.
	if wait := holdFor(stack, next, r.StatusSettle, now); wait > 0 && !written {
		r.remember(stack, next.Components, false)
		return ctrl.Result{RequeueAfter: minPositive(wait, p.requeue)}, nil
	}
	var opts []client.MergeFromOption
	first := firstReady(stack, next)
	if !written || first {
		// A stale copy of the stack must not announce the components, or
		// count its first Ready, a second time.
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	if err := status.Write(ctx, r.Client, stack, &stack.Status, next, opts...); err != nil {
		r.remember(stack, next.Components, false)
		return ctrl.Result{}, err
	}
	r.remember(stack, next.Components, true)
	if !written {
		r.announceFirstWrite(stack, p)
	}
	if first {
		metrics.ObserveFirstReady("AppStack", stack.CreationTimestamp.Time)
	}
	return ctrl.Result{RequeueAfter: p.requeue}, nil
}

// phases are the values of status.phase, in the order metrics list them;
// the first, Pending, also counts the objects with no status yet.
var phases = []string{
	string(v1alpha1.AppStackPending), string(v1alpha1.AppStackDeploying), string(v1alpha1.AppStackReady),
	string(v1alpha1.AppStackDegraded), string(v1alpha1.AppStackDeleting),
}

// SetupWithManager registers the reconciler: it watches AppStacks and the
// components and Ingresses they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	reader := mgr.GetCache()
	err := metrics.RegisterListPhases(reader, mgr.Elected(), func() client.ObjectList { return &v1alpha1.AppStackList{} },
		"appstacks", "AppStack", phases, func(o client.Object) string { return string(o.(*v1alpha1.AppStack).Status.Phase) })
	if err != nil {
		return err
	}
	if r.HasServiceMonitors == nil {
		r.HasServiceMonitors = cachedFor(time.Minute, func() bool { return hasKind(mgr.GetRESTMapper(), serviceMonitorGVK) })
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.AppStack{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletionStarted()))).
		Watches(&v1alpha1.AppStack{}, priority.SpecChangesFirst()).
		Owns(&v1alpha1.Database{}).
		Owns(&v1alpha1.Cache{}).
		Owns(&v1alpha1.WebApp{}).
		Owns(&v1alpha1.AppConfig{}).
		Owns(&networkingv1.Ingress{}).
		WithOptions(opts).
		Complete(r)
}

// deletionStarted lets through the update that marks an AppStack deleted.
func deletionStarted() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}
