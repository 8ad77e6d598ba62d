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

package appconfig

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/priority"
)

// phases are the values of status.phase, in the order metrics list them;
// the first, Pending, also counts the objects with no status yet.
var phases = []string{
	string(v1alpha1.AppConfigPending), string(v1alpha1.AppConfigRollingOut),
	string(v1alpha1.AppConfigReady), string(v1alpha1.AppConfigDegraded),
}

// SetupWithManager registers the reconciler. It watches AppConfigs, the
// WebApps that use them, and those WebApps' Deployments, whose rollouts it
// waits for.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	reader := mgr.GetCache()
	r.uses = appconfig.WebAppUses(mgr.GetFieldIndexer(), configIndex)
	err := metrics.RegisterListPhases(reader, mgr.Elected(), func() client.ObjectList { return &v1alpha1.AppConfigList{} },
		"appconfigs", "AppConfig", phases, func(o client.Object) string { return string(o.(*v1alpha1.AppConfig).Status.Phase) })
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.AppConfig{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.AppConfig{}, priority.SpecChangesFirst()).
		Watches(&v1alpha1.WebApp{}, handler.EnqueueRequestsFromMapFunc(usedAppConfigs),
			builder.WithPredicates(configUseChanged())).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.deploymentAppConfigs(reader)),
			builder.WithPredicates(rolloutChanged())).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		WithOptions(opts).
		Complete(r)
}

// usedAppConfigs maps a WebApp to the AppConfigs its spec.config names.
func usedAppConfigs(_ context.Context, obj client.Object) []reconcile.Request {
	app, ok := obj.(*v1alpha1.WebApp)
	if !ok {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(app.Spec.Config))
	for _, use := range app.Spec.Config {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: app.Namespace, Name: use.AppConfig}})
	}
	return reqs
}

// configUseChanged lets through WebApp creations and deletions and changes
// of spec.config.
func configUseChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.WebApp)
			n, ok2 := e.ObjectNew.(*v1alpha1.WebApp)
			return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Spec.Config, n.Spec.Config) ||
				o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
		},
	}
}

// deploymentAppConfigs maps a WebApp's Deployment to the AppConfigs the
// WebApp uses.
func (r *Reconciler) deploymentAppConfigs(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		owner := metav1.GetControllerOf(obj)
		if owner == nil || owner.Kind != "WebApp" || owner.APIVersion != v1alpha1.GroupVersion.String() {
			return nil
		}
		app := &v1alpha1.WebApp{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}, app); err != nil {
			return nil
		}
		return usedAppConfigs(ctx, app)
	}
}

// rolloutChanged lets through the Deployment updates that can end or fail
// a rollout, or start one: a change of generation or status.
func rolloutChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*appsv1.Deployment)
			n, ok2 := e.ObjectNew.(*appsv1.Deployment)
			return !ok1 || !ok2 || o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status, n.Status)
		},
	}
}
