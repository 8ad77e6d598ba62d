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
	"errors"
	"fmt"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/priority"
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

	// announced holds, per stack component, the wait last announced by an
	// event, so that a reconcile reading a stale status does not repeat it.
	announced sync.Map
}

// announce reports whether message is new for the component, and
// remembers it.
func (r *Reconciler) announce(stack *v1alpha1.AppStack, component, message string) bool {
	key := string(stack.UID) + "/" + component
	prev, loaded := r.announced.Swap(key, message)
	return !loaded || prev.(string) != message
}

// forget drops what was announced for a component that no longer waits.
func (r *Reconciler) forget(stack *v1alpha1.AppStack, component string) {
	r.announced.Delete(string(stack.UID) + "/" + component)
	r.announced.Delete(string(stack.UID) + "/" + component + "/timeout")
}

// +kubebuilder:rbac:groups=steward.dev,resources=appstacks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=appstacks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=steward.dev,resources=appstacks/finalizers,verbs=update
// +kubebuilder:rbac:groups=steward.dev,resources=databases;caches;webapps;appconfigs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=steward.dev,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile moves one AppStack towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	stack := &v1alpha1.AppStack{}
	if err := r.Client.Get(ctx, req.NamespacedName, stack); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := stack.Status.DeepCopy()
	st.ObservedGeneration = stack.Generation
	var res ctrl.Result
	var err error
	if !stack.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(stack, v1alpha1.AppStackFinalizer) {
			return ctrl.Result{}, nil
		}
		var done bool
		done, res, err = r.tearDown(ctx, stack, st)
		if err == nil && done {
			controllerutil.RemoveFinalizer(stack, v1alpha1.AppStackFinalizer)
			return ctrl.Result{}, r.Client.Update(ctx, stack)
		}
	} else {
		if controllerutil.AddFinalizer(stack, v1alpha1.AppStackFinalizer) {
			if err := r.Client.Update(ctx, stack); err != nil {
				return ctrl.Result{}, err
			}
		}
		res, err = r.deploy(ctx, stack, st)
	}
	if werr := r.writeStatus(ctx, stack, st); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	return res, err
}

// writeStatus patches the status subresource when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus) error {
	if equality.Semantic.DeepEqual(stack.Status, *st) {
		return nil
	}
	orig := stack.DeepCopy()
	stack.Status = *st
	if err := r.Client.Status().Patch(ctx, stack, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing status of AppStack %s: %w", stack.Name, err)
	}
	return nil
}

// setInvalid reports a spec the graph cannot order.
func setInvalid(stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus, err error) {
	st.Phase = v1alpha1.AppStackDegraded
	conditions.Set(&st.Conditions, stack.Generation,
		conditions.False(v1alpha1.ReasonInvalidSpec, err.Error()),
		conditions.False(v1alpha1.ReasonInvalidSpec, "Nothing is created until the spec is fixed"),
		conditions.True(v1alpha1.ReasonInvalidSpec, err.Error()))
}

var phases = []string{
	string(v1alpha1.AppStackPending), string(v1alpha1.AppStackDeploying), string(v1alpha1.AppStackReady),
	string(v1alpha1.AppStackDegraded), string(v1alpha1.AppStackDeleting),
}

// SetupWithManager registers the reconciler: it watches AppStacks and the
// components and Ingresses they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	reader := mgr.GetCache()
	err := metrics.RegisterListPhases(reader, func() client.ObjectList { return &v1alpha1.AppStackList{} },
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
		UpdateFunc: func(e updateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}
