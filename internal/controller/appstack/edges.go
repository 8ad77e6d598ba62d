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

package appstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/labels"
)

// serviceMonitorGVK is the Prometheus Operator's ServiceMonitor.
var serviceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// hasKind reports whether the API server serves the kind, asking the
// mapper, which looks the group up again when it does not know it.
func hasKind(mapper meta.RESTMapper, gvk schema.GroupVersionKind) bool {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// cachedFor remembers what check answers for ttl, so that a kind that is
// not installed costs a discovery request at most once per ttl.
func cachedFor(ttl time.Duration, check func() bool) func() bool {
	var mu sync.Mutex
	var at time.Time
	var last bool
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) > ttl {
			last, at = check(), time.Now()
		}
		return last
	}
}

// Scrape annotations, the convention Prometheus' kubernetes-pods job reads.
const (
	annotationScrape = "prometheus.io/scrape"
	annotationPort   = "prometheus.io/port"
	annotationPath   = "prometheus.io/path"
)

func metricsPath(stack *v1alpha1.AppStack) string {
	if p := stack.Spec.Monitoring.Path; p != "" {
		return p
	}
	return "/metrics"
}

// addScrapeAnnotations puts prometheus.io annotations on the apps' pods
// when monitoring is on and the cluster has no ServiceMonitor kind. An
// annotation the app sets wins.
func (r *Reconciler) addScrapeAnnotations(stack *v1alpha1.AppStack, d appstack.Desired) {
	if m := stack.Spec.Monitoring; m == nil || !m.Enabled || r.HasServiceMonitors() {
		return
	}
	for name, spec := range d.Apps {
		a := map[string]string{annotationScrape: "true", annotationPath: metricsPath(stack)}
		port := spec.Port
		if port == 0 {
			port = 8080
		}
		a[annotationPort] = fmt.Sprint(port)
		for k, v := range spec.PodAnnotations {
			a[k] = v
		}
		spec.PodAnnotations = a
		d.Apps[name] = spec
	}
}

// reconcileMonitoring applies a ServiceMonitor per existing app when
// monitoring is on and the cluster has the kind, and deletes the stack's
// ServiceMonitors otherwise.
func (r *Reconciler) reconcileMonitoring(ctx context.Context, stack *v1alpha1.AppStack, comps []*component) error {
	if !r.HasServiceMonitors() {
		return nil
	}
	on := stack.Spec.Monitoring != nil && stack.Spec.Monitoring.Enabled
	want := map[string]bool{}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	for _, c := range comps {
		if c.kind != appstack.KindWebApp || !c.exists || !on {
			continue
		}
		want[c.object()] = true
		sm := &unstructured.Unstructured{}
		sm.SetGroupVersionKind(serviceMonitorGVK)
		sm.SetName(c.object())
		sm.SetNamespace(stack.Namespace)
		l := labels.Common(c.object(), "monitoring")
		l[v1alpha1.LabelAppStack] = stack.Name
		sm.SetLabels(l)
		sm.SetOwnerReferences(objectMeta(stack, c.name, c.kind).OwnerReferences)
		sm.Object["spec"] = map[string]any{
			"selector":  map[string]any{"matchLabels": map[string]any{labels.WebApp: c.object()}},
			"endpoints": []any{map[string]any{"port": "http", "path": metricsPath(stack)}},
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(serviceMonitorGVK)
		if err := applier.Apply(ctx, apply.Typed{Object: sm}, live, stack.UID); err != nil {
			return err
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(serviceMonitorGVK.GroupVersion().WithKind("ServiceMonitorList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(stack.Namespace), client.MatchingLabels{v1alpha1.LabelAppStack: stack.Name}); err != nil {
		return fmt.Errorf("listing ServiceMonitors: %w", err)
	}
	for i := range list.Items {
		if !want[list.Items[i].GetName()] {
			if err := applier.Delete(ctx, &list.Items[i], stack.UID); err != nil {
				return err
			}
		}
	}
	return nil
}

// ingressName is the stack's Ingress.
func ingressName(stack *v1alpha1.AppStack) string { return stack.Name }

// reconcileIngress applies the Ingress once every exposed app is Ready (it
// comes last), and keeps it in step afterwards; it deletes it when the spec
// has none. It returns the Ingress's status entry, or nil without one.
func (r *Reconciler) reconcileIngress(ctx context.Context, stack *v1alpha1.AppStack, byName map[string]*component, readiness map[string]entry) (*entry, error) {
	live := &networkingv1.Ingress{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: stack.Namespace, Name: ingressName(stack)}, live)
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	exists := err == nil
	if !exists && stack.Spec.Ingress != nil {
		// The cache may not have the Ingress created a moment ago.
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: stack.Namespace, Name: ingressName(stack)}, live)
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		exists = err == nil
	}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	in := stack.Spec.Ingress
	if in == nil {
		if exists {
			return nil, applier.Delete(ctx, live, stack.UID)
		}
		return nil, nil
	}
	c := &component{name: "ingress", kind: "Ingress", live: live, exists: exists}
	live.SetName(ingressName(stack))
	e := entry{c: c}
	var exposed []v1alpha1.StackApp
	for _, a := range stack.Spec.Apps {
		if a.Expose != nil {
			exposed = append(exposed, a)
		}
	}
	if !exists {
		for _, a := range exposed {
			if dep := readiness[a.Name]; !dep.ready {
				e.block(a.Name, dep.c, fmt.Sprintf("waiting for webapp %s: %s", a.Name, dep.reason))
				return &e, nil
			}
		}
	}
	// Longest paths first, so that /api wins over /.
	slices.SortStableFunc(exposed, func(a, b v1alpha1.StackApp) int { return len(b.Expose.Path) - len(a.Expose.Path) })
	http := networkingv1ac.HTTPIngressRuleValue()
	for _, a := range exposed {
		http.WithPaths(networkingv1ac.HTTPIngressPath().
			WithPath(a.Expose.Path).
			WithPathType(networkingv1.PathTypePrefix).
			WithBackend(networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().
				WithName(byName[a.Name].object()).
				WithPort(networkingv1ac.ServiceBackendPort().WithName("http")))))
	}
	l := labels.Common(ingressName(stack), "ingress")
	l[v1alpha1.LabelAppStack] = stack.Name
	spec := networkingv1ac.IngressSpec().WithRules(networkingv1ac.IngressRule().WithHost(in.Host).WithHTTP(http))
	if in.ClassName != nil {
		spec.WithIngressClassName(*in.ClassName)
	}
	if in.TLSSecretName != "" {
		spec.WithTLS(networkingv1ac.IngressTLS().WithHosts(in.Host).WithSecretName(in.TLSSecretName))
	}
	om := objectMeta(stack, "ingress", "Ingress").OwnerReferences[0]
	desired := networkingv1ac.Ingress(ingressName(stack), stack.Namespace).
		WithLabels(l).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(om.APIVersion).WithKind(om.Kind).
			WithName(om.Name).WithUID(om.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(spec)
	if err := applier.Apply(ctx, desired, live, stack.UID); err != nil {
		if reason, ok := apply.UserError(err); ok {
			e.reason, e.message, e.degraded = reason, err.Error(), true
			return &e, nil
		}
		return nil, err
	}
	if !exists {
		r.Recorder.Eventf(stack, live, corev1.EventTypeNormal, v1alpha1.EventComponentCreated, "Create",
			"Created Ingress %s: the exposed apps are Ready", live.Name)
	}
	c.exists = true
	paths := make([]string, 0, len(exposed))
	for _, a := range exposed {
		paths = append(paths, a.Expose.Path+" -> "+a.Name)
	}
	e.ready, e.reason, e.message = true, "Routed", fmt.Sprintf("%s routes %s", in.Host, strings.Join(paths, ", "))
	return &e, nil
}
