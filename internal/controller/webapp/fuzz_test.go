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
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

// dnsLabel turns s into a DNS label of at most max characters that starts
// with a letter: the names the schema admits, or that the children's kinds
// need.
func dnsLabel(s string, max int) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	out := strings.TrimLeft(string(b), "-0123456789")
	if len(out) > max {
		out = out[:max]
	}
	out = strings.TrimRight(out, "-")
	if out == "" {
		return "x"
	}
	return out
}

// envName is the schema's pattern of a binding's prefix and a config key.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fuzzKeys are the comma-separated names in s that the schema admits as
// config keys, at most max of them.
func fuzzKeys(s string, max int) []string {
	var keys []string
	seen := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		if envName.MatchString(k) && len(k) <= 253 && !seen[k] && len(keys) < max {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	return keys
}

// fuzzWebApp is a WebApp the schema admits, named after name, running
// image, with env from "NAME=VALUE" lines, and the optional settings k
// chooses: replicas or autoscaling, health check, ingress, bindings,
// annotations, pull secrets and uses of AppConfigs with keys. It returns
// what the bindings resolve to.
func fuzzWebApp(name, image string, replicas, port int32, env, keys string, k fuzzcheck.Knobs) (*v1alpha1.WebApp, Bindings) {
	if image = strings.ReplaceAll(strings.ToValidUTF8(image, "?"), " ", ""); image == "" || len(image) > 1024 {
		image = "nginxinc/nginx-unprivileged:1.27"
	}
	app := &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: dnsLabel(name, 63), UID: "uid-webapp"},
		Spec:       v1alpha1.WebAppSpec{Image: image, Port: 1 + abs(port)%65535},
	}
	seen := map[string]bool{}
	// Text the API carries, as JSON, is UTF-8.
	for _, line := range strings.Split(strings.ToValidUTF8(env, "?"), "\n") {
		if n, v, ok := strings.Cut(line, "="); ok && n != "" && !seen[n] {
			app.Spec.Env = append(app.Spec.Env, corev1.EnvVar{Name: n, Value: v})
			seen[n] = true
		}
	}
	switch b := k.Next(); b % 3 {
	case 1:
		app.Spec.Replicas = new(abs(replicas) % 10001)
	case 2:
		low := 1 + abs(replicas)%10000
		app.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: low, MaxReplicas: low + int32(b)%16,
			TargetCPUUtilizationPercentage: 1 + int32(b)%100}
		app.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	}
	if b := k.Next(); b%2 == 1 {
		app.Spec.HealthCheck = &v1alpha1.HealthCheck{Path: "/healthz", InitialDelaySeconds: int32(b) % 3601,
			PeriodSeconds: 1 + int32(b)%3600, FailureThreshold: 1 + int32(b)%100}
	}
	if b := k.Next(); b%2 == 1 {
		app.Spec.Ingress = &v1alpha1.WebAppIngress{Host: app.Name + ".example.com", Path: []string{"", "/", "/api"}[b%3]}
		if b&4 != 0 {
			app.Spec.Ingress.TLSSecretName = app.Name + "-tls"
		}
		if b&8 != 0 {
			app.Spec.Ingress.ClassName = new("nginx")
		}
	}
	if b := k.Next(); b%2 == 1 {
		app.Spec.PodAnnotations = map[string]string{"prometheus.io/scrape": "true"}
	}
	if b := k.Next(); b%2 == 1 {
		app.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	}
	var b Bindings
	prefixes := fuzzKeys(keys, 2)
	prefix := func(i byte) string {
		if int(i) < len(prefixes) {
			return prefixes[i] + "_"
		}
		return ""
	}
	if c := k.Next(); c%2 == 1 {
		app.Spec.Database = &v1alpha1.WebAppBinding{Ref: "orders", Prefix: prefix(c / 2 % 3)}
	}
	if c := k.Next(); c%2 == 1 {
		app.Spec.Cache = &v1alpha1.WebAppBinding{Ref: "sessions", Prefix: prefix(c / 2 % 3)}
		b.Cache = &v1alpha1.Cache{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "sessions"},
			Spec: v1alpha1.CacheSpec{Engine: []v1alpha1.CacheEngine{"", v1alpha1.EngineMemcached, v1alpha1.EngineRedis}[c/8%3]}}
	}
	for i := range int(k.Next() % 4) {
		c := k.Next()
		use := v1alpha1.ConfigUse{AppConfig: fmt.Sprintf("config-%d", i), As: v1alpha1.ConfigAsEnv}
		if c%2 == 1 {
			use.As = v1alpha1.ConfigAsFiles
			if c&2 != 0 {
				use.MountPath = []string{"/etc/config", "/etc/steward/config-0"}[c/16%2]
			}
		}
		if c&4 != 0 {
			use.Keys = fuzzKeys(keys, 256)
		}
		data := map[string]string{"LOG_LEVEL": "info"}
		tokens := map[string]string{}
		for j, key := range use.Keys {
			if c&8 != 0 && j%2 == 1 {
				tokens[key] = "token"
			} else {
				data[key] = "value"
			}
		}
		rev := appconfig.NewRevision(data, tokens)
		name := fmt.Sprintf("%s-config-%s", use.AppConfig, rev.Hash(nil)[:10])
		app.Spec.Config = append(app.Spec.Config, use)
		b.Config = append(b.Config, configUse{use: use, name: name, rev: rev, hash: rev.Hash(use.Keys)})
	}
	return app, b
}

func abs(n int32) int32 {
	if n < 0 {
		return -(n + 1)
	}
	return n
}

// FuzzChildren checks the children a WebApp the schema admits asks for:
// the same every time; named after the WebApp, with valid labels, owned by
// it; a pod whose one container takes spec.env as written and has no two
// variables, volumes or mount paths alike, which server-side apply would
// refuse; a Service, Ingress, autoscaler and disruption budget exactly
// where the spec asks for them.
func FuzzChildren(f *testing.F) {
	f.Add("hello", "nginxinc/nginx-unprivileged:1.27", int32(1), int32(8080), "", "", []byte{})
	f.Add("shop", "nginxinc/nginx-unprivileged:1.27", int32(3), int32(8080), "LOG_LEVEL=info", "", []byte{1, 1, 5, 0, 0})
	f.Add("storefront", "nginxinc/nginx-unprivileged:1.27", int32(0), int32(8080), "", "DB_URL,PAYMENTS_TOKEN", []byte{0, 0, 0, 0, 0, 0, 0, 1, 12})
	f.Add("storefront-worker", "nginxinc/nginx-unprivileged:1.27", int32(0), int32(8080), "", "", []byte{0, 0, 0, 0, 0, 0, 0, 1, 3})
	f.Add("api", "ghcr.io/acme/api:2", int32(4), int32(9000), "DB_HOST=override", "ORDERS,SESSIONS",
		[]byte{2, 1, 13, 1, 1, 3, 19, 2, 12, 5})
	f.Add("Bad Name!", "", int32(-7), int32(-1), "A=1\nA=2\n=3", "A,B,C", []byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, name, image string, replicas, port int32, env, keys string, settings []byte) {
		app, b := fuzzWebApp(name, image, replicas, port, env, keys, fuzzcheck.Knobs(settings))
		build := func() []any {
			return []any{Deployment(app, b), Service(app), Ingress(app), HorizontalPodAutoscaler(app), PodDisruptionBudget(app), URL(app)}
		}
		first := build()
		if again := build(); !equality.Semantic.DeepEqual(first, again) {
			t.Fatalf("the children differ from one build to the next:\n%+v\n%+v", first, again)
		}
		if mountConflict(app) == nil {
			checkDeployment(t, app, b)
		}

		svc := Service(app)
		checkMeta(t, app, *svc.Name, *svc.Namespace, svc.Labels, svc.OwnerReferences)
		if !equality.Semantic.DeepEqual(svc.Spec.Selector, SelectorLabels(app)) {
			t.Fatalf("Service selector %v", svc.Spec.Selector)
		}
		if in := Ingress(app); (in != nil) != (app.Spec.Ingress != nil) {
			t.Fatalf("Ingress %v for spec.ingress %v", in, app.Spec.Ingress)
		} else if in != nil {
			checkMeta(t, app, *in.Name, *in.Namespace, in.Labels, in.OwnerReferences)
			backend := in.Spec.Rules[0].HTTP.Paths[0].Backend.Service
			if *backend.Name != *svc.Name || *backend.Port.Name != *svc.Spec.Ports[0].Name {
				t.Fatalf("Ingress backend %s:%s, not the Service", *backend.Name, *backend.Port.Name)
			}
		}
		if hpa := HorizontalPodAutoscaler(app); (hpa != nil) != (app.Spec.Autoscaling != nil) {
			t.Fatalf("HorizontalPodAutoscaler %v for spec.autoscaling %v", hpa, app.Spec.Autoscaling)
		} else if hpa != nil {
			checkMeta(t, app, *hpa.Name, *hpa.Namespace, hpa.Labels, hpa.OwnerReferences)
			if *hpa.Spec.MinReplicas < 1 || *hpa.Spec.MinReplicas > *hpa.Spec.MaxReplicas || *hpa.Spec.ScaleTargetRef.Name != app.Name {
				t.Fatalf("HorizontalPodAutoscaler spec %+v", hpa.Spec)
			}
		}
		lowest := DesiredReplicas(app)
		if as := app.Spec.Autoscaling; as != nil {
			lowest = as.MinReplicas
		}
		if pdb := PodDisruptionBudget(app); (pdb != nil) != (lowest > 1) {
			t.Fatalf("PodDisruptionBudget %v for at least %d replicas", pdb, lowest)
		} else if pdb != nil {
			checkMeta(t, app, *pdb.Name, *pdb.Namespace, pdb.Labels, pdb.OwnerReferences)
		}
	})
}

func checkDeployment(t *testing.T, app *v1alpha1.WebApp, b Bindings) {
	t.Helper()
	dep := Deployment(app, b)
	checkMeta(t, app, *dep.Name, *dep.Namespace, dep.Labels, dep.OwnerReferences)
	spec := dep.Spec
	if (spec.Replicas == nil) != (app.Spec.Autoscaling != nil) || (spec.Replicas != nil && *spec.Replicas != DesiredReplicas(app)) {
		t.Fatalf("Deployment replicas %v with autoscaling %v", spec.Replicas, app.Spec.Autoscaling)
	}
	tmpl := spec.Template
	if err := fuzzcheck.Labels(tmpl.Labels); err != nil {
		t.Fatalf("pod labels: %v", err)
	}
	for k, v := range spec.Selector.MatchLabels {
		if tmpl.Labels[k] != v {
			t.Fatalf("selector %v does not select the pods' labels %v", spec.Selector.MatchLabels, tmpl.Labels)
		}
	}
	for k := range tmpl.Annotations {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Fatalf("pod annotation %q: %v", k, errs)
		}
	}
	for _, u := range b.Config {
		if tmpl.Annotations[v1alpha1.AppConfigAnnotation(u.use.AppConfig)] != u.hash {
			t.Fatalf("pod annotations %v lack the hash of %s", tmpl.Annotations, u.use.AppConfig)
		}
	}
	if len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(tmpl.Spec.Containers))
	}
	c := tmpl.Spec.Containers[0]
	if *c.Image != app.Spec.Image || *c.Ports[0].ContainerPort != app.Spec.Port {
		t.Fatalf("container image %s port %d", *c.Image, *c.Ports[0].ContainerPort)
	}
	env := map[string]int{}
	for i, e := range c.Env {
		if _, dup := env[*e.Name]; dup {
			t.Fatalf("the container has two variables %s", *e.Name)
		}
		env[*e.Name] = i
	}
	for _, e := range app.Spec.Env {
		i, ok := env[e.Name]
		if !ok || ptr.Deref(c.Env[i].Value, "") != e.Value || c.Env[i].ValueFrom != nil {
			t.Fatalf("spec.env %s=%q is not the container's", e.Name, e.Value)
		}
	}
	volumes := map[string]bool{}
	for _, v := range tmpl.Spec.Volumes {
		if volumes[*v.Name] || len(validation.IsDNS1123Label(*v.Name)) > 0 {
			t.Fatalf("volume %q is invalid or not unique", *v.Name)
		}
		volumes[*v.Name] = true
	}
	paths := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if !volumes[*m.Name] || paths[*m.MountPath] {
			t.Fatalf("mount of %s at %s: no such volume, or the path is taken", *m.Name, *m.MountPath)
		}
		paths[*m.MountPath] = true
	}
}

// checkMeta checks a child's name, namespace, labels and controller.
func checkMeta(t *testing.T, app *v1alpha1.WebApp, name, namespace string, labels map[string]string, refs []metav1ac.OwnerReferenceApplyConfiguration) {
	t.Helper()
	if name != app.Name || namespace != app.Namespace {
		t.Fatalf("child %s/%s of WebApp %s/%s", namespace, name, app.Namespace, app.Name)
	}
	if err := fuzzcheck.Labels(labels); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(refs) != 1 || *refs[0].UID != app.UID || !*refs[0].Controller || *refs[0].Kind != "WebApp" {
		t.Fatalf("%s: owner references %+v", name, refs)
	}
}
