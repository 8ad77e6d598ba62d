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

package webapp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/fieldindex"
)

// configIndex indexes WebApps by the AppConfigs their spec.config names.
const configIndex = "webapp:spec.config.appConfig"

// configUse is one spec.config entry resolved to the revision the WebApp runs.
type configUse struct {
	use v1alpha1.ConfigUse
	// name is the revision's ConfigMap, and Secret when it has secret keys.
	name string
	rev  appconfig.Revision
	// hash goes into the pod template annotation.
	hash string
}

// resolveConfig reads, for each AppConfig the WebApp uses, the revision the
// AppConfig assigns it. It returns what the WebApp waits for when an
// AppConfig does not exist, has no revision yet, or lacks a key the WebApp
// uses; the Deployment is then left as it is.
func (r *Reconciler) resolveConfig(ctx context.Context, app *v1alpha1.WebApp) ([]configUse, *conditions.Problem, error) {
	var uses []configUse
	for _, use := range app.Spec.Config {
		ac := &v1alpha1.AppConfig{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: use.AppConfig}, ac)
		switch {
		case apierrors.IsNotFound(err):
			return nil, &conditions.Problem{
				Reason:  v1alpha1.ReasonAppConfigNotFound,
				Message: fmt.Sprintf("AppConfig %s does not exist", use.AppConfig),
			}, nil
		case err != nil:
			return nil, nil, fmt.Errorf("reading AppConfig %s: %w", use.AppConfig, err)
		}
		rev := ac.AssignedRevision(v1alpha1.ConsumerKindWebApp, app.Name)
		if rev == "" {
			why := "it has no revision yet"
			if c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != "True" {
				why = c.Message
			}
			return nil, &conditions.Problem{
				Reason:  v1alpha1.ReasonWaitingForAppConfig,
				Message: fmt.Sprintf("Waiting for AppConfig %s: %s", use.AppConfig, why),
			}, nil
		}
		name := ac.RevisionName(rev)
		cm := &corev1.ConfigMap{}
		key := client.ObjectKey{Namespace: app.Namespace, Name: name}
		err = r.Client.Get(ctx, key, cm)
		if apierrors.IsNotFound(err) {
			// Just rendered, and not in the cache yet.
			err = r.APIReader.Get(ctx, key, cm)
		}
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, nil, fmt.Errorf("reading ConfigMap %s: %w", name, err)
			}
			return nil, &conditions.Problem{
				Reason:  v1alpha1.ReasonWaitingForAppConfig,
				Message: fmt.Sprintf("Waiting for AppConfig %s: revision %s is not rendered yet", use.AppConfig, rev),
			}, nil
		}
		cu := configUse{use: use, name: name, rev: appconfig.ReadRevision(cm)}
		var missing []string
		for _, k := range use.Keys {
			if !cu.rev.Has(k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return nil, &conditions.Problem{
				Reason:  v1alpha1.ReasonMissingConfigKey,
				Message: fmt.Sprintf("AppConfig %s (revision %s) has no key %s", use.AppConfig, rev, strings.Join(missing, ", ")),
			}, nil
		}
		cu.hash = cu.rev.Hash(use.Keys)
		uses = append(uses, cu)
	}
	return uses, nil, nil
}

// configEnv lists the environment the WebApp's config uses give its
// container: one variable per used key, a configMapKeyRef or secretKeyRef
// to the revision, never the value; or, when a use lists no keys, an
// envFrom of the revision's ConfigMap and Secret. A variable spec.env also
// sets is left out: spec.env wins.
func configEnv(app *v1alpha1.WebApp, uses []configUse) ([]*corev1ac.EnvVarApplyConfiguration, []*corev1ac.EnvFromSourceApplyConfiguration) {
	own := map[string]bool{}
	for _, e := range app.Spec.Env {
		own[e.Name] = true
	}
	var env []*corev1ac.EnvVarApplyConfiguration
	var from []*corev1ac.EnvFromSourceApplyConfiguration
	for _, u := range uses {
		if u.use.As == v1alpha1.ConfigAsFiles {
			continue
		}
		if len(u.use.Keys) == 0 {
			from = append(from, corev1ac.EnvFromSource().WithConfigMapRef(corev1ac.ConfigMapEnvSource().WithName(u.name)))
			if len(u.rev.SecretKeys) > 0 {
				from = append(from, corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(u.name)))
			}
			continue
		}
		for _, k := range slices.Sorted(slices.Values(u.use.Keys)) {
			if own[k] {
				continue
			}
			src := corev1ac.EnvVarSource().WithConfigMapKeyRef(corev1ac.ConfigMapKeySelector().WithName(u.name).WithKey(k))
			if u.rev.IsSecret(k) {
				src = corev1ac.EnvVarSource().WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(u.name).WithKey(k))
			}
			env = append(env, corev1ac.EnvVar().WithName(k).WithValueFrom(src))
		}
	}
	return env, from
}

// configVolumes lists the volumes and mounts of the uses delivered as
// files: a projected volume of the revision's ConfigMap and Secret, one
// file per used key.
func configVolumes(uses []configUse) ([]*corev1ac.VolumeApplyConfiguration, []*corev1ac.VolumeMountApplyConfiguration) {
	var vols []*corev1ac.VolumeApplyConfiguration
	var mounts []*corev1ac.VolumeMountApplyConfiguration
	for _, u := range uses {
		if u.use.As != v1alpha1.ConfigAsFiles {
			continue
		}
		cm := corev1ac.ConfigMapProjection().WithName(u.name)
		secret := corev1ac.SecretProjection().WithName(u.name)
		hasData, hasSecret := len(u.use.Keys) == 0 && len(u.rev.Data) > 0, len(u.use.Keys) == 0 && len(u.rev.SecretKeys) > 0
		for _, k := range slices.Sorted(slices.Values(u.use.Keys)) {
			if u.rev.IsSecret(k) {
				secret.WithItems(corev1ac.KeyToPath().WithKey(k).WithPath(k))
				hasSecret = true
			} else {
				cm.WithItems(corev1ac.KeyToPath().WithKey(k).WithPath(k))
				hasData = true
			}
		}
		proj := corev1ac.ProjectedVolumeSource()
		if hasData {
			proj.WithSources(corev1ac.VolumeProjection().WithConfigMap(cm))
		}
		if hasSecret {
			proj.WithSources(corev1ac.VolumeProjection().WithSecret(secret))
		}
		name := configVolumeName(u.use.AppConfig)
		vols = append(vols, corev1ac.Volume().WithName(name).WithProjected(proj))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(name).WithMountPath(mountPath(u.use)).WithReadOnly(true))
	}
	return vols, mounts
}

// mountPath is where a use delivered as files is mounted.
func mountPath(use v1alpha1.ConfigUse) string {
	if use.MountPath != "" {
		return use.MountPath
	}
	return "/etc/steward/" + use.AppConfig
}

// mountConflict is the problem of two uses delivered as files at one path,
// or nil: no container mounts two volumes at one path, and server-side
// apply refuses such a Deployment with an internal error.
func mountConflict(app *v1alpha1.WebApp) *conditions.Problem {
	at := map[string]string{}
	for _, use := range app.Spec.Config {
		if use.As != v1alpha1.ConfigAsFiles {
			continue
		}
		path := mountPath(use)
		if other, ok := at[path]; ok {
			return &conditions.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf(
				"spec.config: AppConfigs %s and %s are both mounted at %s; give one of them another mountPath", other, use.AppConfig, path)}
		}
		at[path] = use.AppConfig
	}
	return nil
}

// configVolumeName is a volume name, a DNS label, derived from the AppConfig's name.
func configVolumeName(appConfig string) string {
	sum := sha256.Sum256([]byte(appConfig))
	return "appconfig-" + hex.EncodeToString(sum[:5])
}

// configAnnotations are the pod template annotations that carry the hash
// of the keys used from each AppConfig: a change of a used key changes the
// template, which rolls the Deployment out.
func configAnnotations(uses []configUse) map[string]string {
	if len(uses) == 0 {
		return nil
	}
	a := make(map[string]string, len(uses))
	for _, u := range uses {
		a[v1alpha1.AppConfigAnnotation(u.use.AppConfig)] = u.hash
	}
	return a
}

// consumersOf enqueues the WebApps an AppConfig change concerns: on
// creation and deletion every WebApp that uses it; on update those whose
// assigned revision changed, and, when the current revision moved, those
// the AppConfig has not assigned one yet.
func consumersOf(reader client.Reader, uses *fieldindex.Index) handler.TypedEventHandler[client.Object, reconcile.Request] {
	all := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		list := &v1alpha1.WebAppList{}
		if err := uses.List(ctx, reader, list, obj.GetNamespace(), obj.GetName()); err != nil {
			log.FromContext(ctx).Error(err, "Listing the WebApps that use an AppConfig", "appConfig", obj.GetName())
			return
		}
		for i := range list.Items {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*v1alpha1.AppConfig)
			n, ok2 := e.ObjectNew.(*v1alpha1.AppConfig)
			if !ok1 || !ok2 {
				return
			}
			if o.Status.CurrentRevision != n.Status.CurrentRevision {
				all(ctx, n, q)
				return
			}
			before := map[string]string{}
			for _, c := range o.Status.Consumers {
				if c.Kind == v1alpha1.ConsumerKindWebApp {
					before[c.Name] = c.Revision
				}
			}
			for _, c := range n.Status.Consumers {
				if c.Kind == v1alpha1.ConsumerKindWebApp && before[c.Name] != c.Revision {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: n.Namespace, Name: c.Name}})
				}
			}
		},
	}
}
