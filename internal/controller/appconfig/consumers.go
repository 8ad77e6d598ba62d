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
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/rollout"
)

// configIndex indexes WebApps by the AppConfigs their spec.config names.
const configIndex = "appconfig:spec.config.appConfig"

// consumer is one workload found using the AppConfig.
type consumer struct {
	kind, name string
	keys       []string
	// hash is the annotation its pod template carries now.
	hash string
	// healthy: its rollout is complete and its pods are available.
	healthy bool
	// failed says why its rollout failed, when it did.
	failed string
	// plain is a Deployment or StatefulSet opted in by annotation.
	plain client.Object
	// absent: a WebApp without a Deployment yet, which has nothing to roll.
	absent bool
}

// consumers finds the Deployments and StatefulSets whose
// steward.dev/appconfig annotation names the AppConfig, from the API
// server, and the WebApps whose spec.config does, from the cache: WebApps
// by name, then the others by kind and name. The WebApps are read last, so
// that the cache has had the longest time to see those created with the
// AppConfig.
func (r *Reconciler) consumers(ctx context.Context, ac *v1alpha1.AppConfig) ([]consumer, error) {
	var plain []consumer
	for _, kind := range []string{v1alpha1.ConsumerKindDeployment, v1alpha1.ConsumerKindStatefulSet} {
		found, err := r.plainConsumers(ctx, ac, kind)
		if err != nil {
			return nil, err
		}
		plain = append(plain, found...)
	}
	slices.SortFunc(plain, func(a, b consumer) int {
		return strings.Compare(a.kind+"/"+a.name, b.kind+"/"+b.name)
	})
	apps, err := r.webAppConsumers(ctx, ac)
	if err != nil {
		return nil, err
	}
	return append(apps, plain...), nil
}

// webAppConsumers finds the WebApps that use the AppConfig and reads the
// rollout state of their Deployments, sorted by name.
func (r *Reconciler) webAppConsumers(ctx context.Context, ac *v1alpha1.AppConfig) ([]consumer, error) {
	apps := &v1alpha1.WebAppList{}
	if err := r.uses.List(ctx, r.Client, apps, ac.Namespace, ac.Name); err != nil {
		return nil, fmt.Errorf("listing WebApps that use AppConfig %s: %w", ac.Name, err)
	}
	var out []consumer
	for i := range apps.Items {
		app := &apps.Items[i]
		if !app.DeletionTimestamp.IsZero() {
			continue
		}
		c := consumer{kind: v1alpha1.ConsumerKindWebApp, name: app.Name}
		for _, use := range app.Spec.Config {
			if use.AppConfig == ac.Name {
				c.keys = slices.Sorted(slices.Values(use.Keys))
			}
		}
		dep := &appsv1.Deployment{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(app), dep)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading the Deployment of WebApp %s: %w", app.Name, err)
		}
		if err == nil && metav1.IsControlledBy(dep, app) {
			c.hash = dep.Spec.Template.Annotations[v1alpha1.AppConfigAnnotation(ac.Name)]
			c.healthy, c.failed = rolloutOf(rollout.OfDeployment(dep))
		} else {
			c.absent = true
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b consumer) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// plainConsumers finds the Deployments or StatefulSets (kind) that opt in
// to the AppConfig by annotation. Only the metadata of every one is
// listed; the few that opt in are then read whole.
func (r *Reconciler) plainConsumers(ctx context.Context, ac *v1alpha1.AppConfig, kind string) ([]consumer, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(kind + "List"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(ac.Namespace)); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind, err)
	}
	var out []consumer
	for i := range list.Items {
		keys, ok := optedIn(&list.Items[i], ac.Name)
		if !ok {
			continue
		}
		c, err := r.readPlain(ctx, ac, consumer{kind: kind, name: list.Items[i].Name, keys: keys})
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// readPlain reads a plain consumer's workload and the state of its
// rollout. It returns nil when the workload was deleted since the list.
func (r *Reconciler) readPlain(ctx context.Context, ac *v1alpha1.AppConfig, c consumer) (*consumer, error) {
	c.plain = &appsv1.StatefulSet{}
	if c.kind == v1alpha1.ConsumerKindDeployment {
		c.plain = &appsv1.Deployment{}
	}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: c.name}, c.plain)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", c.kind, c.name, err)
	}
	var tmpl *corev1.PodTemplateSpec
	var state rollout.State
	switch w := c.plain.(type) {
	case *appsv1.Deployment:
		tmpl, state = &w.Spec.Template, rollout.OfDeployment(w)
	case *appsv1.StatefulSet:
		tmpl, state = &w.Spec.Template, rollout.OfStatefulSet(w)
	}
	c.hash = tmpl.Annotations[v1alpha1.AppConfigAnnotation(ac.Name)]
	c.healthy, c.failed = rolloutOf(state)
	return &c, nil
}

// rolloutOf tells from a workload's rollout state whether it is healthy,
// and why its rollout failed, when it did.
func rolloutOf(s rollout.State) (healthy bool, failed string) {
	if s.Failed() {
		failed = fmt.Sprintf("%s %s: %s", s.Kind, s.Name, s.Failure)
	}
	return s.Healthy, failed
}

// optedIn reports whether the workload's steward.dev/appconfig annotation
// names the AppConfig, and the keys it uses.
func optedIn(obj client.Object, appConfig string) ([]string, bool) {
	names, ok := obj.GetAnnotations()[v1alpha1.AnnotationAppConfigConsumer]
	if !ok || !slices.Contains(splitList(names), appConfig) {
		return nil, false
	}
	keys := splitList(obj.GetAnnotations()[v1alpha1.AnnotationAppConfigKeys])
	slices.Sort(keys)
	return slices.Compact(keys), true
}

// splitList splits a comma-separated annotation into its non-empty,
// trimmed items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
