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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func newApp(mutate ...func(*v1alpha1.WebApp)) *v1alpha1.WebApp {
	app := &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "prod", UID: "uid-1", Generation: 1},
		Spec:       v1alpha1.WebAppSpec{Image: "shop:1", Port: 8080},
	}
	for _, m := range mutate {
		m(app)
	}
	return app
}

func TestDeployment(t *testing.T) {
	tests := []struct {
		name  string
		app   *v1alpha1.WebApp
		check func(t *testing.T, app *v1alpha1.WebApp)
	}{
		{
			name: "defaults",
			app:  newApp(),
			check: func(t *testing.T, app *v1alpha1.WebApp) {
				d := Deployment(app, Bindings{})
				if got := *d.Spec.Replicas; got != 1 {
					t.Errorf("replicas = %d, want 1", got)
				}
				c := d.Spec.Template.Spec.Containers[0]
				if *c.Image != "shop:1" || *c.Ports[0].ContainerPort != 8080 || *c.Ports[0].Name != "http" {
					t.Errorf("container = %+v", c)
				}
				if c.LivenessProbe != nil || c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil ||
					c.ReadinessProbe.TCPSocket.Port.StrVal != "http" {
					t.Errorf("without a health check: readiness %+v, liveness %+v; want a TCP readiness probe on http and no liveness probe",
						c.ReadinessProbe, c.LivenessProbe)
				}
				if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || *c.Lifecycle.PreStop.Sleep.Seconds != drainSeconds {
					t.Errorf("lifecycle = %+v, want a preStop sleep of %ds so that the pod serves while its endpoints go", c.Lifecycle, drainSeconds)
				}
				if *c.SecurityContext.AllowPrivilegeEscalation {
					t.Errorf("privilege escalation allowed by default")
				}
				if got := c.SecurityContext.Capabilities.Drop; len(got) != 1 || got[0] != "ALL" {
					t.Errorf("capabilities dropped = %v, want [ALL]", got)
				}
				if got := *d.Spec.Template.Spec.SecurityContext.SeccompProfile.Type; got != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("seccomp = %s", got)
				}
				ref := d.OwnerReferences[0]
				if *ref.Kind != "WebApp" || *ref.Name != "shop" || *ref.UID != "uid-1" || !*ref.Controller {
					t.Errorf("owner reference = %+v", ref)
				}
				if d.Labels["app.kubernetes.io/managed-by"] != "steward" || d.Labels["steward.dev/webapp"] != "shop" {
					t.Errorf("labels = %v", d.Labels)
				}
				if d.Spec.Selector.MatchLabels["steward.dev/webapp"] != "shop" || len(d.Spec.Selector.MatchLabels) != 1 {
					t.Errorf("selector = %v", d.Spec.Selector.MatchLabels)
				}
			},
		},
		{
			name: "explicit replicas, env, resources and health check",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.Replicas = new(int32(4))
				a.Spec.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}
				a.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}
				a.Spec.HealthCheck = &v1alpha1.HealthCheck{Path: "/healthz", InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 3}
			}),
			check: func(t *testing.T, app *v1alpha1.WebApp) {
				d := Deployment(app, Bindings{})
				c := d.Spec.Template.Spec.Containers[0]
				if *d.Spec.Replicas != 4 {
					t.Errorf("replicas = %d", *d.Spec.Replicas)
				}
				if len(c.Env) != 1 || *c.Env[0].Name != "LOG_LEVEL" || *c.Env[0].Value != "debug" {
					t.Errorf("env = %+v", c.Env)
				}
				if got := (*c.Resources.Requests)[corev1.ResourceCPU]; got.String() != "250m" {
					t.Errorf("cpu request = %s", got.String())
				}
				if *c.ReadinessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.InitialDelaySeconds != nil {
					t.Errorf("readiness probe = %+v", c.ReadinessProbe)
				}
				if *c.LivenessProbe.InitialDelaySeconds != 5 || c.LivenessProbe.HTTPGet.Port.StrVal != "http" {
					t.Errorf("liveness probe = %+v", c.LivenessProbe)
				}
			},
		},
		{
			name: "autoscaling leaves replicas to the HPA",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 5, TargetCPUUtilizationPercentage: 70}
			}),
			check: func(t *testing.T, app *v1alpha1.WebApp) {
				if d := Deployment(app, Bindings{}); d.Spec.Replicas != nil {
					t.Errorf("replicas = %d, want unset", *d.Spec.Replicas)
				}
			},
		},
		{
			name: "security overrides win field by field",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true)}
				a.Spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true)}
			}),
			check: func(t *testing.T, app *v1alpha1.WebApp) {
				d := Deployment(app, Bindings{})
				pod := d.Spec.Template.Spec.SecurityContext
				if !*pod.RunAsNonRoot || *pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod security context = %+v", pod)
				}
				c := d.Spec.Template.Spec.Containers[0].SecurityContext
				if !*c.ReadOnlyRootFilesystem || *c.AllowPrivilegeEscalation {
					t.Errorf("container security context = %+v", c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tt.app) })
	}
}

func TestService(t *testing.T) {
	s := Service(newApp())
	p := s.Spec.Ports[0]
	if *p.Port != 80 || p.TargetPort.StrVal != "http" || *p.Name != "http" {
		t.Errorf("port = %+v", p)
	}
	if s.Spec.Selector["steward.dev/webapp"] != "shop" {
		t.Errorf("selector = %v", s.Spec.Selector)
	}
}

func TestOptionalChildren(t *testing.T) {
	tests := []struct {
		name                   string
		app                    *v1alpha1.WebApp
		ingress, hpa, pdb      bool
		url                    string
		pdbMaxUnavailable, min int32
	}{
		{name: "plain", app: newApp(), url: "http://shop.prod.svc"},
		{
			name: "two replicas get a PDB",
			app:  newApp(func(a *v1alpha1.WebApp) { a.Spec.Replicas = new(int32(2)) }),
			pdb:  true, url: "http://shop.prod.svc",
		},
		{
			name: "ingress with TLS",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.Ingress = &v1alpha1.WebAppIngress{Host: "shop.example.com", Path: "/api", TLSSecretName: "shop-tls"}
			}),
			ingress: true, url: "https://shop.example.com/api",
		},
		{
			name: "autoscaling from 1 has no PDB",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 3, TargetCPUUtilizationPercentage: 80}
			}),
			hpa: true, url: "http://shop.prod.svc", min: 1,
		},
		{
			name: "autoscaling from 3 has a PDB",
			app: newApp(func(a *v1alpha1.WebApp) {
				a.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 3, MaxReplicas: 6, TargetCPUUtilizationPercentage: 60}
			}),
			hpa: true, pdb: true, url: "http://shop.prod.svc", min: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Ingress(tt.app) != nil; got != tt.ingress {
				t.Errorf("ingress present = %v, want %v", got, tt.ingress)
			}
			hpa := HorizontalPodAutoscaler(tt.app)
			if got := hpa != nil; got != tt.hpa {
				t.Errorf("hpa present = %v, want %v", got, tt.hpa)
			}
			if hpa != nil {
				if *hpa.Spec.MinReplicas != tt.min || *hpa.Spec.ScaleTargetRef.Kind != "Deployment" {
					t.Errorf("hpa spec = %+v", hpa.Spec)
				}
				if got := *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization; got != tt.app.Spec.Autoscaling.TargetCPUUtilizationPercentage {
					t.Errorf("hpa target = %d", got)
				}
			}
			pdb := PodDisruptionBudget(tt.app)
			if got := pdb != nil; got != tt.pdb {
				t.Errorf("pdb present = %v, want %v", got, tt.pdb)
			}
			if pdb != nil && pdb.Spec.MaxUnavailable.IntVal != 1 {
				t.Errorf("pdb maxUnavailable = %v", pdb.Spec.MaxUnavailable)
			}
			if got := URL(tt.app); got != tt.url {
				t.Errorf("URL = %q, want %q", got, tt.url)
			}
		})
	}
}

func TestIngressRoutesToService(t *testing.T) {
	app := newApp(func(a *v1alpha1.WebApp) {
		a.Spec.Ingress = &v1alpha1.WebAppIngress{Host: "shop.example.com", ClassName: new("nginx")}
	})
	in := Ingress(app)
	rule := in.Spec.Rules[0]
	path := rule.HTTP.Paths[0]
	if *rule.Host != "shop.example.com" || *path.Path != "/" || *path.Backend.Service.Name != "shop" || *path.Backend.Service.Port.Name != "http" {
		t.Errorf("rule = %+v", rule)
	}
	if *in.Spec.IngressClassName != "nginx" || in.Spec.TLS != nil {
		t.Errorf("spec = %+v", in.Spec)
	}
}
