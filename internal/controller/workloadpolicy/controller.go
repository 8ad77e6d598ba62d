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

package workloadpolicy

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/status"
)

// Reconciler reports the objects that break a WorkloadPolicy as they
// stand, in the policy's status and with an event on each. It never
// changes them: admission refuses what breaks a policy, and an object
// found breaking one was there before the policy or its namespace's label.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// Recorder emits an event on each object found breaking a policy.
	Recorder events.EventRecorder
	// Namespaces are the namespaces the operator watches (its
	// --watch-namespaces); empty means all. Objects elsewhere are not in
	// the cache: a policy's status names the namespaces of its environment
	// that were not checked.
	Namespaces []string

	announced announced
}

// +kubebuilder:rbac:groups=steward.dev,resources=workloadpolicies,verbs=get;list;watch,roleName=steward-manager-cluster
// +kubebuilder:rbac:groups=steward.dev,resources=workloadpolicies/status,verbs=get;update;patch,roleName=steward-manager-cluster
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch,roleName=steward-manager-cluster
// +kubebuilder:rbac:groups=steward.dev,resources=webapps;caches;databases;appstacks,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile checks every object of one policy's environment against it,
// announces the objects newly found breaking it, and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &v1alpha1.WorkloadPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); apierrors.IsNotFound(err) {
		r.forget(req.Name)
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	found, unwatched, err := r.violators(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := computeStatus(p, found, unwatched)
	r.announce(p, found)
	return ctrl.Result{}, status.Write(ctx, r.Client, p, &p.Status, next)
}

// kinds are the lists of the kinds a WorkloadPolicy reads.
var kinds = []func() client.ObjectList{
	func() client.ObjectList { return &v1alpha1.WebAppList{} },
	func() client.ObjectList { return &v1alpha1.CacheList{} },
	func() client.ObjectList { return &v1alpha1.DatabaseList{} },
	func() client.ObjectList { return &v1alpha1.AppStackList{} },
}

// violators lists the objects of the namespaces p governs that break it,
// and the namespaces it governs that the operator does not watch.
func (r *Reconciler) violators(ctx context.Context, p *v1alpha1.WorkloadPolicy) (found []violator, unwatched []string, err error) {
	var namespaces corev1.NamespaceList
	if err := r.Client.List(ctx, &namespaces, client.MatchingLabels{p.EnvironmentLabel(): p.Spec.Environment}); err != nil {
		return nil, nil, fmt.Errorf("listing the namespaces of environment %s: %w", p.Spec.Environment, err)
	}
	for _, ns := range namespaces.Items {
		if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, ns.Name) {
			unwatched = append(unwatched, ns.Name)
			continue
		}
		for _, newList := range kinds {
			list := newList()
			if err := r.Client.List(ctx, list, client.InNamespace(ns.Name)); err != nil {
				return nil, nil, fmt.Errorf("listing the objects of namespace %s: %w", ns.Name, err)
			}
			objs, err := itemsOf(list)
			if err != nil {
				return nil, nil, err
			}
			found = append(found, check(p, objs)...)
		}
	}
	return found, unwatched, nil
}

// SetupWithManager registers the reconciler: a policy is checked again
// when it changes, when a namespace's labels change, and when an object
// of a kind it reads is created, deleted or changes its spec.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	everyPolicy := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var policies v1alpha1.WorkloadPolicyList
		if err := mgr.GetClient().List(ctx, &policies); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing WorkloadPolicies")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(policies.Items))
		for _, p := range policies.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
		return reqs
	})
	specs := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.WorkloadPolicy{}, specs).
		Watches(&corev1.Namespace{}, everyPolicy, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&v1alpha1.WebApp{}, everyPolicy, specs).
		Watches(&v1alpha1.Cache{}, everyPolicy, specs).
		Watches(&v1alpha1.Database{}, everyPolicy, specs).
		Watches(&v1alpha1.AppStack{}, everyPolicy, specs).
		WithOptions(opts).
		Complete(r)
}
