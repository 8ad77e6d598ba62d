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
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/labels"
)

// serviceMonitorGVK is the Prometheus Operator's ServiceMonitor.
var serviceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// Scrape annotations, the convention Prometheus' kubernetes-pods job reads.
const (
	annotationScrape = "prometheus.io/scrape"
	annotationPort   = "prometheus.io/port"
	annotationPath   = "prometheus.io/path"
)

// defaultAppPort is the port a WebApp serves on when its spec sets none.
const defaultAppPort = 8080

// Render is the spec of every component the stack asks for, from its
// environment's profile. When monitoring is on and the cluster has no
// ServiceMonitor kind (serviceMonitors is false), the apps' pods carry
// prometheus.io scrape annotations; an annotation the app sets wins.
func Render(stack *v1alpha1.AppStack, serviceMonitors bool) appstack.Desired {
	d := appstack.Render(stack)
	if !monitoringOn(stack) || serviceMonitors {
		return d
	}
	for name, spec := range d.Apps {
		port := spec.Port
		if port == 0 {
			port = defaultAppPort
		}
		a := map[string]string{annotationScrape: "true", annotationPath: metricsPath(stack), annotationPort: fmt.Sprint(port)}
		maps.Copy(a, spec.PodAnnotations)
		spec.PodAnnotations = a
		d.Apps[name] = spec
	}
	return d
}

// monitoringOn reports whether the stack asks for its apps to be scraped.
func monitoringOn(stack *v1alpha1.AppStack) bool {
	return stack.Spec.Monitoring != nil && stack.Spec.Monitoring.Enabled
}

// metricsPath is where the stack's apps serve metrics.
func metricsPath(stack *v1alpha1.AppStack) string {
	if m := stack.Spec.Monitoring; m != nil && m.Path != "" {
		return m.Path
	}
	return "/metrics"
}

// ownerReference makes the stack the controller of one of its objects.
func ownerReference(stack *v1alpha1.AppStack) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "AppStack", Name: stack.Name, UID: stack.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

// stackLabels are the labels of an object of the stack: Steward's common
// ones and the stack's name.
func stackLabels(stack *v1alpha1.AppStack, name, component string) map[string]string {
	l := labels.Common(name, component)
	l[v1alpha1.LabelAppStack] = stack.Name
	return l
}

// objectMeta is the metadata of a stack's component object.
func objectMeta(stack *v1alpha1.AppStack, component, kind string) metav1.ObjectMeta {
	name := appstack.ObjectName(stack, component)
	return metav1.ObjectMeta{
		Name: name, Namespace: stack.Namespace, Labels: stackLabels(stack, name, strings.ToLower(kind)),
		OwnerReferences: []metav1.OwnerReference{ownerReference(stack)},
	}
}

// typeMeta is the apiVersion and kind of a Steward kind.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

// Component is the Steward object of one component of the stack, of the
// node's kind, with the spec d renders for it.
func Component(stack *v1alpha1.AppStack, node *appstack.Node, d appstack.Desired) client.Object {
	om := objectMeta(stack, node.Name, node.Kind)
	tm := typeMeta(node.Kind)
	switch node.Kind {
	case appstack.KindDatabase:
		return &v1alpha1.Database{TypeMeta: tm, ObjectMeta: om, Spec: d.Databases[node.Name]}
	case appstack.KindCache:
		return &v1alpha1.Cache{TypeMeta: tm, ObjectMeta: om, Spec: d.Caches[node.Name]}
	case appstack.KindWebApp:
		return &v1alpha1.WebApp{TypeMeta: tm, ObjectMeta: om, Spec: d.Apps[node.Name]}
	default:
		return &v1alpha1.AppConfig{TypeMeta: tm, ObjectMeta: om, Spec: *d.Config}
	}
}

// emptyObject is an empty object of a component's kind, named.
func emptyObject(kind, name string) client.Object {
	var obj client.Object
	switch kind {
	case appstack.KindDatabase:
		obj = &v1alpha1.Database{}
	case appstack.KindCache:
		obj = &v1alpha1.Cache{}
	case appstack.KindWebApp:
		obj = &v1alpha1.WebApp{}
	case kindIngress:
		obj = &networkingv1.Ingress{}
	default:
		obj = &v1alpha1.AppConfig{}
	}
	obj.SetName(name)
	return obj
}

// ingressName is the stack's Ingress.
func ingressName(stack *v1alpha1.AppStack) string { return stack.Name }

// exposedApps are the apps the stack's Ingress routes to, in the spec's
// order.
func exposedApps(stack *v1alpha1.AppStack) []v1alpha1.StackApp {
	var out []v1alpha1.StackApp
	for _, a := range stack.Spec.Apps {
		if a.Expose != nil {
			out = append(out, a)
		}
	}
	return out
}

// routedApps are the exposed apps, longest path first, so that /api wins
// over /.
func routedApps(stack *v1alpha1.AppStack) []v1alpha1.StackApp {
	exposed := exposedApps(stack)
	slices.SortStableFunc(exposed, func(a, b v1alpha1.StackApp) int { return len(b.Expose.Path) - len(a.Expose.Path) })
	return exposed
}

// Ingress is the stack's Ingress: one rule for its host, routing each
// exposed app's path to the app's Service, longest path first. It is nil
// when the spec has no ingress.
func Ingress(stack *v1alpha1.AppStack) *networkingv1ac.IngressApplyConfiguration {
	in := stack.Spec.Ingress
	if in == nil {
		return nil
	}
	http := networkingv1ac.HTTPIngressRuleValue()
	for _, a := range routedApps(stack) {
		http.WithPaths(networkingv1ac.HTTPIngressPath().
			WithPath(a.Expose.Path).
			WithPathType(networkingv1.PathTypePrefix).
			WithBackend(networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().
				WithName(appstack.ObjectName(stack, a.Name)).
				WithPort(networkingv1ac.ServiceBackendPort().WithName("http")))))
	}
	spec := networkingv1ac.IngressSpec().WithRules(networkingv1ac.IngressRule().WithHost(in.Host).WithHTTP(http))
	if in.ClassName != nil {
		spec.WithIngressClassName(*in.ClassName)
	}
	if in.TLSSecretName != "" {
		spec.WithTLS(networkingv1ac.IngressTLS().WithHosts(in.Host).WithSecretName(in.TLSSecretName))
	}
	ref := ownerReference(stack)
	return networkingv1ac.Ingress(ingressName(stack), stack.Namespace).
		WithLabels(stackLabels(stack, ingressName(stack), "ingress")).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(ref.APIVersion).WithKind(ref.Kind).
			WithName(ref.Name).WithUID(ref.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(spec)
}

// routes describes what the stack's Ingress routes, for its status line.
func routes(stack *v1alpha1.AppStack) string {
	apps := routedApps(stack)
	paths := make([]string, 0, len(apps))
	for _, a := range apps {
		paths = append(paths, a.Expose.Path+" -> "+a.Name)
	}
	return fmt.Sprintf("%s routes %s", stack.Spec.Ingress.Host, strings.Join(paths, ", "))
}

// ServiceMonitor is the Prometheus Operator's ServiceMonitor of one of the
// stack's apps: it scrapes the pods of the WebApp, named object, on its
// http port at the stack's metrics path.
func ServiceMonitor(stack *v1alpha1.AppStack, object string) *unstructured.Unstructured {
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(serviceMonitorGVK)
	sm.SetName(object)
	sm.SetNamespace(stack.Namespace)
	sm.SetLabels(stackLabels(stack, object, "monitoring"))
	sm.SetOwnerReferences([]metav1.OwnerReference{ownerReference(stack)})
	sm.Object["spec"] = map[string]any{
		"selector":  map[string]any{"matchLabels": map[string]any{labels.WebApp: object}},
		"endpoints": []any{map[string]any{"port": "http", "path": metricsPath(stack)}},
	}
	return sm
}
