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
	"maps"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/labels"
)

// newStack is a development stack named shop: a database, a backend bound
// to it and exposed at /api, and a frontend exposed at /.
func newStack(mutate ...func(*v1alpha1.AppStack)) *v1alpha1.AppStack {
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "prod", UID: "uid-1", Generation: 1},
		Spec: v1alpha1.AppStackSpec{
			Environment: v1alpha1.StackDevelopment,
			Databases:   []v1alpha1.StackDatabase{{Name: "db", Engine: v1alpha1.EnginePostgres, Version: "16"}},
			Apps: []v1alpha1.StackApp{
				{Name: "frontend", Expose: &v1alpha1.StackExpose{Path: "/"}, WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/frontend:2"}},
				{Name: "backend", Expose: &v1alpha1.StackExpose{Path: "/api"}, WebAppSpec: v1alpha1.WebAppSpec{
					Image: "shop/backend:1", Port: 9000, Database: &v1alpha1.WebAppBinding{Ref: "db"},
					PodAnnotations: map[string]string{"prometheus.io/path": "/custom"},
				}},
				{Name: "worker", WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/worker:1"}},
			},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// checkOwned checks that an object belongs to the stack newStack makes.
func checkOwned(t *testing.T, name string, l map[string]string, refs []metav1.OwnerReference, component string) {
	t.Helper()
	if l[v1alpha1.LabelAppStack] != "shop" || l[labels.ManagedByKey] != labels.ManagedBy || l[labels.Name] != name || l[labels.Component] != component {
		t.Errorf("labels = %v, want those of %s, a %s of stack shop", l, name, component)
	}
	if len(refs) != 1 || refs[0].Kind != "AppStack" || refs[0].Name != "shop" || refs[0].UID != "uid-1" ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("owner references = %+v, want the stack as controller", refs)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name            string
		monitoring      *v1alpha1.StackMonitoring
		serviceMonitors bool
		// want are the pod annotations of each app; nil for none.
		want map[string]map[string]string
	}{
		{name: "monitoring off", want: map[string]map[string]string{"frontend": nil, "backend": {"prometheus.io/path": "/custom"}, "worker": nil}},
		{
			name:       "disabled",
			monitoring: &v1alpha1.StackMonitoring{Enabled: false},
			want:       map[string]map[string]string{"frontend": nil, "backend": {"prometheus.io/path": "/custom"}, "worker": nil},
		},
		{
			name: "ServiceMonitors served", monitoring: &v1alpha1.StackMonitoring{Enabled: true}, serviceMonitors: true,
			want: map[string]map[string]string{"frontend": nil, "backend": {"prometheus.io/path": "/custom"}, "worker": nil},
		},
		{
			name: "scrape annotations, the app's own winning", monitoring: &v1alpha1.StackMonitoring{Enabled: true},
			want: map[string]map[string]string{
				"frontend": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics"},
				"backend":  {"prometheus.io/scrape": "true", "prometheus.io/port": "9000", "prometheus.io/path": "/custom"},
				"worker":   {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics"},
			},
		},
		{
			name: "the stack's metrics path", monitoring: &v1alpha1.StackMonitoring{Enabled: true, Path: "/m"},
			want: map[string]map[string]string{
				"frontend": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/m"},
				"backend":  {"prometheus.io/scrape": "true", "prometheus.io/port": "9000", "prometheus.io/path": "/custom"},
				"worker":   {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/m"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack(func(s *v1alpha1.AppStack) { s.Spec.Monitoring = tc.monitoring })
			d := Render(stack, tc.serviceMonitors)
			for app, want := range tc.want {
				if got := d.Apps[app].PodAnnotations; !maps.Equal(got, want) {
					t.Errorf("%s: pod annotations = %v, want %v", app, got, want)
				}
			}
			if stack.Spec.Apps[1].PodAnnotations["prometheus.io/scrape"] != "" {
				t.Errorf("the stack's spec was changed: %v", stack.Spec.Apps[1].PodAnnotations)
			}
		})
	}
}

func TestComponent(t *testing.T) {
	stack := newStack(func(s *v1alpha1.AppStack) {
		s.Spec.Caches = []v1alpha1.StackCache{{Name: "cache", CacheSpec: v1alpha1.CacheSpec{Engine: v1alpha1.EngineRedis}}}
		s.Spec.Config = &v1alpha1.StackConfig{Data: map[string]string{"LOG_LEVEL": "info"}}
	})
	d := Render(stack, false)
	tests := []struct {
		node  appstack.Node
		check func(t *testing.T, obj any)
	}{
		{appstack.Node{Name: "db", Kind: appstack.KindDatabase}, func(t *testing.T, obj any) {
			if db, ok := obj.(*v1alpha1.Database); !ok || db.Spec.Version != "16" {
				t.Errorf("got %T %+v, want the rendered Database", obj, obj)
			}
		}},
		{appstack.Node{Name: "cache", Kind: appstack.KindCache}, func(t *testing.T, obj any) {
			if c, ok := obj.(*v1alpha1.Cache); !ok || c.Spec.Engine != v1alpha1.EngineRedis {
				t.Errorf("got %T %+v, want the rendered Cache", obj, obj)
			}
		}},
		{appstack.Node{Name: "backend", Kind: appstack.KindWebApp}, func(t *testing.T, obj any) {
			if app, ok := obj.(*v1alpha1.WebApp); !ok || app.Spec.Image != "shop/backend:1" || app.Spec.Database.Ref != "shop-db" {
				t.Errorf("got %T %+v, want the rendered WebApp, bound to shop-db", obj, obj)
			}
		}},
		{appstack.Node{Name: appstack.ConfigComponent, Kind: appstack.KindAppConfig}, func(t *testing.T, obj any) {
			if ac, ok := obj.(*v1alpha1.AppConfig); !ok || ac.Spec.Application != "shop" || ac.Spec.Data["LOG_LEVEL"] != "info" {
				t.Errorf("got %T %+v, want the rendered AppConfig", obj, obj)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.node.Kind, func(t *testing.T) {
			obj := Component(stack, &tc.node, d)
			name := "shop-" + tc.node.Name
			if obj.GetName() != name || obj.GetNamespace() != "prod" {
				t.Errorf("object %s/%s, want prod/%s", obj.GetNamespace(), obj.GetName(), name)
			}
			gvk := obj.GetObjectKind().GroupVersionKind()
			if gvk.GroupVersion() != v1alpha1.GroupVersion || gvk.Kind != tc.node.Kind {
				t.Errorf("type %s, want %s %s: server-side apply needs it", gvk, v1alpha1.GroupVersion, tc.node.Kind)
			}
			checkOwned(t, name, obj.GetLabels(), obj.GetOwnerReferences(), map[string]string{
				appstack.KindDatabase: "database", appstack.KindCache: "cache", appstack.KindWebApp: "webapp", appstack.KindAppConfig: "appconfig",
			}[tc.node.Kind])
			tc.check(t, obj)
		})
	}
}

func TestIngress(t *testing.T) {
	tests := []struct {
		name    string
		ingress *v1alpha1.StackIngress
		check   func(t *testing.T, stack *v1alpha1.AppStack)
	}{
		{name: "none", check: func(t *testing.T, stack *v1alpha1.AppStack) {
			if in := Ingress(stack); in != nil {
				t.Errorf("Ingress = %+v, want none without spec.ingress", in)
			}
		}},
		{name: "longest path first", ingress: &v1alpha1.StackIngress{Host: "shop.example.com"}, check: func(t *testing.T, stack *v1alpha1.AppStack) {
			in := Ingress(stack)
			if *in.Name != "shop" || *in.Namespace != "prod" {
				t.Errorf("Ingress %s/%s, want prod/shop", *in.Namespace, *in.Name)
			}
			if in.Spec.IngressClassName != nil || len(in.Spec.TLS) != 0 {
				t.Errorf("class %v, TLS %+v; want neither", in.Spec.IngressClassName, in.Spec.TLS)
			}
			rule := in.Spec.Rules[0]
			var got []string
			for _, p := range rule.HTTP.Paths {
				if *p.PathType != networkingv1.PathTypePrefix || *p.Backend.Service.Port.Name != "http" {
					t.Errorf("path %s: type %s, port %v; want Prefix, http", *p.Path, *p.PathType, p.Backend.Service.Port)
				}
				got = append(got, *p.Path+" "+*p.Backend.Service.Name)
			}
			if *rule.Host != "shop.example.com" || len(got) != 2 || got[0] != "/api shop-backend" || got[1] != "/ shop-frontend" {
				t.Errorf("host %s routes %v, want /api to shop-backend before / to shop-frontend", *rule.Host, got)
			}
			ref := in.OwnerReferences[0]
			checkOwned(t, "shop", in.Labels, []metav1.OwnerReference{{
				APIVersion: *ref.APIVersion, Kind: *ref.Kind, Name: *ref.Name, UID: *ref.UID, Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion,
			}}, "ingress")
			if got, want := routes(stack), "shop.example.com routes /api -> backend, / -> frontend"; got != want {
				t.Errorf("routes = %q, want %q", got, want)
			}
		}},
		{
			name:    "TLS and class",
			ingress: &v1alpha1.StackIngress{Host: "shop.example.com", TLSSecretName: "shop-tls", ClassName: new("nginx")},
			check: func(t *testing.T, stack *v1alpha1.AppStack) {
				in := Ingress(stack)
				if in.Spec.IngressClassName == nil || *in.Spec.IngressClassName != "nginx" {
					t.Errorf("class = %v, want nginx", in.Spec.IngressClassName)
				}
				if len(in.Spec.TLS) != 1 || *in.Spec.TLS[0].SecretName != "shop-tls" || in.Spec.TLS[0].Hosts[0] != "shop.example.com" {
					t.Errorf("TLS = %+v, want shop-tls for the host", in.Spec.TLS)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, newStack(func(s *v1alpha1.AppStack) { s.Spec.Ingress = tc.ingress }))
		})
	}
}

func TestServiceMonitor(t *testing.T) {
	tests := []struct {
		name       string
		monitoring *v1alpha1.StackMonitoring
		wantPath   string
	}{
		{name: "default path", monitoring: &v1alpha1.StackMonitoring{Enabled: true}, wantPath: "/metrics"},
		{name: "the stack's path", monitoring: &v1alpha1.StackMonitoring{Enabled: true, Path: "/m"}, wantPath: "/m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sm := ServiceMonitor(newStack(func(s *v1alpha1.AppStack) { s.Spec.Monitoring = tc.monitoring }), "shop-backend")
			if sm.GroupVersionKind() != serviceMonitorGVK || sm.GetName() != "shop-backend" || sm.GetNamespace() != "prod" {
				t.Errorf("%s %s/%s, want a ServiceMonitor prod/shop-backend", sm.GroupVersionKind(), sm.GetNamespace(), sm.GetName())
			}
			sel, _, _ := unstructured.NestedString(sm.Object, "spec", "selector", "matchLabels", labels.WebApp)
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			if sel != "shop-backend" || len(eps) != 1 || eps[0].(map[string]any)["port"] != "http" || eps[0].(map[string]any)["path"] != tc.wantPath {
				t.Errorf("selector %q, endpoints %v; want the pods of shop-backend on http at %s", sel, eps, tc.wantPath)
			}
			checkOwned(t, "shop-backend", sm.GetLabels(), sm.GetOwnerReferences(), "monitoring")
		})
	}
}
