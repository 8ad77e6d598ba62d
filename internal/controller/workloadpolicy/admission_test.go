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

package workloadpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// The policies of the admission tests, one per environment, and the
// namespaces of each environment. development has no policy.
var (
	production = &v1alpha1.WorkloadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "production"},
		Spec: v1alpha1.WorkloadPolicySpec{
			Environment: "production",
			MaxReplicas: ptr.To[int32](10),
			AllowedImages: []v1alpha1.ImageRule{
				{Prefix: "registry.acme.com/"},
				{Pattern: `^ghcr\.io/acme/[a-z-]+@sha256:[0-9a-f]{64}$`},
			},
			RequireResources: &v1alpha1.ResourceRule{
				Requests: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
				Limits:   []corev1.ResourceName{corev1.ResourceMemory},
			},
			RunAsNonRoot: ptr.To(true),
		},
	}
	staging = &v1alpha1.WorkloadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "staging"},
		Spec:       v1alpha1.WorkloadPolicySpec{Environment: "staging", MaxReplicas: ptr.To[int32](2)},
	}
	// critical reads a label of its own.
	critical = &v1alpha1.WorkloadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "critical"},
		Spec: v1alpha1.WorkloadPolicySpec{
			EnvironmentLabel: "acme.com/tier",
			Environment:      "critical",
			RequireResources: &v1alpha1.ResourceRule{Limits: []corev1.ResourceName{corev1.ResourceCPU}},
		},
	}

	prodNS     = "prod"
	stagingNS  = "staging"
	criticalNS = "critical"
	devNS      = "dev"

	// policyOf is the policy of each namespace.
	policyOf = map[string]*v1alpha1.WorkloadPolicy{prodNS: production, stagingNS: staging, criticalNS: critical}

	setupOnce sync.Once
)

// setup creates the policies and the namespaces once, and waits until the
// API server enforces each policy.
func setup(t *testing.T) {
	t.Helper()
	setupOnce.Do(func() {
		ctx := context.Background()
		for _, p := range []*v1alpha1.WorkloadPolicy{production, staging, critical} {
			if err := k8s.Create(ctx, p.DeepCopy()); err != nil {
				t.Fatalf("creating policy %s: %v", p.Name, err)
			}
		}
		namespace(t, prodNS, map[string]string{v1alpha1.DefaultEnvironmentLabel: "production"})
		namespace(t, stagingNS, map[string]string{v1alpha1.DefaultEnvironmentLabel: "staging"})
		namespace(t, criticalNS, map[string]string{"acme.com/tier": "critical"})
		namespace(t, devNS, map[string]string{v1alpha1.DefaultEnvironmentLabel: "development"})
		waitEnforced(t, "production", webApp(prodNS, "probe", func(w *v1alpha1.WebApp) { w.Spec.Replicas = ptr.To[int32](11) }))
		waitEnforced(t, "staging", webApp(stagingNS, "probe", func(w *v1alpha1.WebApp) { w.Spec.Replicas = ptr.To[int32](3) }))
		waitEnforced(t, "critical", cache(criticalNS, "probe"))
		waitDefaulted(t, prodNS)
	})
}

func quantities(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// goodApp is a WebApp spec production allows.
func goodApp() v1alpha1.WebAppSpec {
	return v1alpha1.WebAppSpec{
		Image:    "registry.acme.com/shop:1.4.2",
		Replicas: ptr.To[int32](2),
		Resources: &corev1.ResourceRequirements{
			Requests: quantities("cpu", "100m", "memory", "64Mi"),
			Limits:   quantities("memory", "128Mi", "cpu", "1"),
		},
		SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
	}
}

func webApp(ns, name string, mutate ...func(*v1alpha1.WebApp)) *v1alpha1.WebApp {
	w := &v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: goodApp()}
	for _, m := range mutate {
		m(w)
	}
	return w
}

func cache(ns, name string, mutate ...func(*v1alpha1.Cache)) *v1alpha1.Cache {
	c := &v1alpha1.Cache{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.CacheSpec{Engine: v1alpha1.EngineMemcached, Replicas: ptr.To[int32](2)}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func database(ns, name string, mutate ...func(*v1alpha1.Database)) *v1alpha1.Database {
	d := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DatabaseSpec{Engine: v1alpha1.EnginePostgres, Version: "16", Size: v1alpha1.SizeSmall}}
	for _, m := range mutate {
		m(d)
	}
	return d
}

func appStack(ns, name string, mutate ...func(*v1alpha1.AppStack)) *v1alpha1.AppStack {
	s := &v1alpha1.AppStack{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AppStackSpec{
			Environment: v1alpha1.StackProduction,
			Databases:   []v1alpha1.StackDatabase{{Name: "db"}},
			Caches:      []v1alpha1.StackCache{{Name: "cache"}},
			Apps: []v1alpha1.StackApp{
				{Name: "api", WebAppSpec: goodApp()},
				{Name: "web", WebAppSpec: goodApp()},
			},
		}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// admissionCase is an object created in a namespace, and the message it is
// refused with ("" for admitted), as the API server says it and as
// WorkloadPolicy.Check says it.
type admissionCase struct {
	name string
	obj  client.Object
	want string
}

const (
	prodImages = `production allows only images matching registry.acme.com/*, ^ghcr\.io/acme/[a-z-]+@sha256:[0-9a-f]{64}$ (policy production)`
	prodRes    = "production requires requests.cpu, requests.memory, limits.memory (policy production)"
	critRes    = "critical requires limits.cpu (policy critical)"
	nonRoot    = "production runs containers as non-root only: set runAsNonRoot to true (policy production)"
)

// admissionCases covers every rule of a WorkloadPolicy, for every kind it
// reads, both admitted and refused.
func admissionCases() []admissionCase {
	replicas := func(n int32) func(*v1alpha1.WebApp) { return func(w *v1alpha1.WebApp) { w.Spec.Replicas = &n } }
	image := func(img string) func(*v1alpha1.WebApp) { return func(w *v1alpha1.WebApp) { w.Spec.Image = img } }
	return []admissionCase{
		// maxReplicas
		{"webapp at the maximum", webApp(prodNS, "r1", replicas(10)), ""},
		{"webapp above the maximum", webApp(prodNS, "r2", replicas(50)),
			"spec.replicas: Invalid value: 50: production allows at most 10 (policy production)"},
		{"webapp above staging's maximum", webApp(stagingNS, "r3", replicas(3)),
			"spec.replicas: Invalid value: 3: staging allows at most 2 (policy staging)"},
		{"webapp without a policy", webApp(devNS, "r4", replicas(500)), ""},
		{"webapp autoscaling at the maximum", webApp(prodNS, "r5", func(w *v1alpha1.WebApp) {
			w.Spec.Replicas = nil
			w.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 10}
		}), ""},
		{"webapp autoscaling above the maximum", webApp(prodNS, "r6", func(w *v1alpha1.WebApp) {
			w.Spec.Replicas = nil
			w.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 20}
		}), "spec.autoscaling.maxReplicas: Invalid value: 20: production allows at most 10 (policy production)"},
		{"cache at the maximum", cache(stagingNS, "r7", func(c *v1alpha1.Cache) { c.Spec.Replicas = ptr.To[int32](2) }), ""},
		{"cache above the maximum", cache(stagingNS, "r8", func(c *v1alpha1.Cache) { c.Spec.Replicas = ptr.To[int32](5) }),
			"spec.replicas: Invalid value: 5: staging allows at most 2 (policy staging)"},
		{"database above the maximum", database(stagingNS, "r9", func(d *v1alpha1.Database) { d.Spec.Replicas = ptr.To[int32](3) }),
			"spec.replicas: Invalid value: 3: staging allows at most 2 (policy staging)"},
		{"database preset at the maximum", database(stagingNS, "r10", func(d *v1alpha1.Database) { d.Spec.Size = v1alpha1.SizeMedium }), ""},
		{"database preset above the maximum", database(stagingNS, "r11", func(d *v1alpha1.Database) { d.Spec.Size = v1alpha1.SizeLarge }),
			`spec.size: Invalid value: "large": 3 replicas, staging allows at most 2 (policy staging)`},
		{"database replicas below its preset's", database(stagingNS, "r12", func(d *v1alpha1.Database) {
			d.Spec.Size = v1alpha1.SizeLarge
			d.Spec.Replicas = ptr.To[int32](1)
		}), ""},
		{"appstack within the maximum", appStack(stagingNS, "r13", func(s *v1alpha1.AppStack) {
			s.Spec.Databases[0].Replicas = ptr.To[int32](2)
		}), ""},
		{"appstack app above the maximum", appStack(prodNS, "r14", func(s *v1alpha1.AppStack) { s.Spec.Apps[1].Replicas = ptr.To[int32](20) }),
			"spec.apps[web].replicas: Invalid value: 20: production allows at most 10 (policy production)"},
		{"appstack app autoscaling above the maximum", appStack(prodNS, "r15", func(s *v1alpha1.AppStack) {
			s.Spec.Apps[0].Replicas = nil
			s.Spec.Apps[0].Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 11}
		}), "spec.apps[api].autoscaling.maxReplicas: Invalid value: 11: production allows at most 10 (policy production)"},
		{"appstack cache above the maximum", appStack(stagingNS, "r16", func(s *v1alpha1.AppStack) {
			s.Spec.Caches[0].Replicas = ptr.To[int32](3)
		}), "spec.caches[cache].replicas: Invalid value: 3: staging allows at most 2 (policy staging)"},
		{"appstack database above the maximum", appStack(stagingNS, "r17", func(s *v1alpha1.AppStack) {
			s.Spec.Databases[0].Replicas = ptr.To[int32](3)
		}), "spec.databases[db].replicas: Invalid value: 3: staging allows at most 2 (policy staging)"},

		// allowedImages
		{"webapp image under an allowed prefix", webApp(prodNS, "i1"), ""},
		{"webapp image matching an allowed pattern", webApp(prodNS, "i2", image("ghcr.io/acme/shop@sha256:"+digest)), ""},
		{"webapp image from another registry", webApp(prodNS, "i3", image("docker.io/library/nginx:1.27")),
			`spec.image: Invalid value: "docker.io/library/nginx:1.27": ` + prodImages},
		{"webapp image not matching the pattern", webApp(prodNS, "i4", image("ghcr.io/acme/shop:1.4.2")),
			`spec.image: Invalid value: "ghcr.io/acme/shop:1.4.2": ` + prodImages},
		{"webapp image on a host that only starts like an allowed one", webApp(prodNS, "i5", image("registry.acme.com.evil.io/shop:1")),
			`spec.image: Invalid value: "registry.acme.com.evil.io/shop:1": ` + prodImages},
		{"webapp image in an environment without an image rule", webApp(stagingNS, "i6", image("nginx:1.27")), ""},
		{"cache with Steward's image", cache(prodNS, "i7"), ""},
		{"cache image override allowed", cache(prodNS, "i8", func(c *v1alpha1.Cache) { c.Spec.Image = "registry.acme.com/memcached:1.6" }), ""},
		{"cache image override refused", cache(prodNS, "i9", func(c *v1alpha1.Cache) { c.Spec.Image = "memcached:1.6" }),
			`spec.image: Invalid value: "memcached:1.6": ` + prodImages},
		{"database with Steward's image", database(prodNS, "i10"), ""},
		{"database image override refused", database(prodNS, "i11", func(d *v1alpha1.Database) { d.Spec.Image = "postgres:16" }),
			`spec.image: Invalid value: "postgres:16": ` + prodImages},
		{"appstack images allowed", appStack(prodNS, "i12", func(s *v1alpha1.AppStack) {
			s.Spec.Caches[0].Image = "registry.acme.com/memcached:1.6"
		}), ""},
		{"appstack app image refused", appStack(prodNS, "i13", func(s *v1alpha1.AppStack) { s.Spec.Apps[1].Image = "acme/web:2" }),
			`spec.apps[web].image: Invalid value: "acme/web:2": ` + prodImages},
		{"appstack cache image refused", appStack(prodNS, "i14", func(s *v1alpha1.AppStack) { s.Spec.Caches[0].Image = "redis:7.4" }),
			`spec.caches[cache].image: Invalid value: "redis:7.4": ` + prodImages},

		// requireResources
		{"webapp without resources", webApp(prodNS, "c1", func(w *v1alpha1.WebApp) { w.Spec.Resources = nil }),
			"spec.resources.requests.cpu: Required value: " + prodRes},
		{"webapp without a memory limit", webApp(prodNS, "c2", func(w *v1alpha1.WebApp) {
			w.Spec.Resources.Limits = quantities("cpu", "1")
		}), "spec.resources.limits.memory: Required value: " + prodRes},
		{"cache with Steward's resources", cache(prodNS, "c3"), ""},
		{"cache without the CPU limit critical requires", cache(criticalNS, "c4"),
			"spec.resources.limits.cpu: Required value: " + critRes},
		{"cache with a CPU limit", cache(criticalNS, "c5", func(c *v1alpha1.Cache) {
			c.Spec.Resources = &corev1.ResourceRequirements{Limits: quantities("cpu", "500m")}
		}), ""},
		{"database with its preset's resources", database(criticalNS, "c6"), ""},
		{"database with partial resources", database(prodNS, "c7", func(d *v1alpha1.Database) {
			d.Spec.Resources = &corev1.ResourceRequirements{Requests: quantities("cpu", "1"), Limits: quantities("memory", "1Gi")}
		}), "spec.resources.requests.memory: Required value: " + prodRes},
		{"database with resources lacking the CPU limit", database(criticalNS, "c8", func(d *v1alpha1.Database) {
			d.Spec.Resources = &corev1.ResourceRequirements{Requests: quantities("cpu", "1", "memory", "1Gi")}
		}), "spec.resources.limits.cpu: Required value: " + critRes},
		{"webapp with a CPU limit under critical", webApp(criticalNS, "c9"), ""},
		{"appstack app without resources", appStack(prodNS, "c10", func(s *v1alpha1.AppStack) { s.Spec.Apps[0].Resources = nil }),
			"spec.apps[api].resources.requests.cpu: Required value: " + prodRes},
		{"appstack cache without the CPU limit", appStack(criticalNS, "c11"),
			"spec.caches[cache].resources.limits.cpu: Required value: " + critRes},
		{"appstack database with partial resources", appStack(prodNS, "c12", func(s *v1alpha1.AppStack) {
			s.Spec.Databases[0].Resources = &corev1.ResourceRequirements{Requests: quantities("cpu", "1", "memory", "1Gi")}
		}), "spec.databases[db].resources.limits.memory: Required value: " + prodRes},

		// runAsNonRoot
		{"webapp without a security context, defaulted to non-root", webApp(prodNS, "n1", func(w *v1alpha1.WebApp) { w.Spec.SecurityContext = nil }), ""},
		{"webapp without runAsNonRoot in its security contexts, defaulted", webApp(prodNS, "n7", func(w *v1alpha1.WebApp) {
			w.Spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
			w.Spec.PodSecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
		}), ""},
		{"webapp non-root by its pod's context", webApp(prodNS, "n2", func(w *v1alpha1.WebApp) {
			w.Spec.SecurityContext = nil
			w.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
		}), ""},
		{"webapp whose container overrides its pod's non-root", webApp(prodNS, "n3", func(w *v1alpha1.WebApp) {
			w.Spec.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}
			w.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
		}), "spec.securityContext.runAsNonRoot: Invalid value: false: " + nonRoot},
		{"webapp whose pod may run as root", webApp(prodNS, "n4", func(w *v1alpha1.WebApp) {
			w.Spec.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
			w.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}
		}), "spec.podSecurityContext.runAsNonRoot: Invalid value: false: " + nonRoot},
		{"webapp as root where non-root is not required", webApp(stagingNS, "n5", func(w *v1alpha1.WebApp) { w.Spec.SecurityContext = nil }), ""},
		{"appstack app without a security context, defaulted", appStack(prodNS, "n6", func(s *v1alpha1.AppStack) { s.Spec.Apps[1].SecurityContext = nil }), ""},
		{"appstack app as root beside one defaulted", appStack(prodNS, "n8", func(s *v1alpha1.AppStack) {
			s.Spec.Apps[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}
			s.Spec.Apps[1].SecurityContext = nil
		}), "spec.apps[api].securityContext.runAsNonRoot: Invalid value: false: " + nonRoot},

		// The first rule broken is reported: replicas before images.
		{"webapp breaking two rules", webApp(prodNS, "x1", replicas(11), image("nginx")),
			"spec.replicas: Invalid value: 11: production allows at most 10 (policy production)"},
	}
}

// goVerdict is the first violation WorkloadPolicy.Check finds in obj (old
// before an update), with the policy of ns, once WorkloadPolicy.Default
// has set the policy's defaults on obj, as admission does; "" for none.
// obj is left with the defaults.
func goVerdict(ns string, obj, old client.Object) string {
	p, ok := policyOf[ns]
	if !ok {
		return ""
	}
	p.Default(obj, old)
	if errs := p.Check(obj, old); len(errs) > 0 {
		return errs[0].Error()
	}
	return ""
}

// securityContexts are the security contexts of a WebApp, or of each app
// of an AppStack, by app name ("" for a WebApp).
func securityContexts(obj client.Object) map[string][2]any {
	m := map[string][2]any{}
	switch o := obj.(type) {
	case *v1alpha1.WebApp:
		m[""] = [2]any{o.Spec.SecurityContext, o.Spec.PodSecurityContext}
	case *v1alpha1.AppStack:
		for _, a := range o.Spec.Apps {
			m[a.Name] = [2]any{a.SecurityContext, a.PodSecurityContext}
		}
	}
	return m
}

// expectStored checks that the object the API server stored under want's
// name has the security contexts of want, which WorkloadPolicy.Default
// set: the MutatingAdmissionPolicy and Default agree.
func expectStored(t *testing.T, want client.Object) {
	t.Helper()
	if len(securityContexts(want)) == 0 {
		return
	}
	stored := want.DeepCopyObject().(client.Object)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(want), stored); err != nil {
		t.Fatal(err)
	}
	if got, w := securityContexts(stored), securityContexts(want); !equality.Semantic.DeepEqual(got, w) {
		t.Errorf("stored security contexts\n%s\nwant, as WorkloadPolicy.Default sets them,\n%s", describe(got), describe(w))
	}
}

// describe prints security contexts for a failure message.
func describe(m map[string][2]any) string {
	var b strings.Builder
	for name, c := range m {
		fmt.Fprintf(&b, "%q: container %+v, pod %+v\n", name, deref(c[0]), deref(c[1]))
	}
	return b.String()
}

func deref(v any) any {
	switch c := v.(type) {
	case *corev1.SecurityContext:
		if c != nil {
			return *c
		}
	case *corev1.PodSecurityContext:
		if c != nil {
			return *c
		}
	}
	return nil
}

// expectVerdict checks the API server's answer err against want, and
// WorkloadPolicy.Check's verdict against the same.
func expectVerdict(t *testing.T, err error, want, goSays string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && err == nil:
		t.Errorf("admitted, want refused with %q", want)
	case want != "":
		if got := refusal(err); got != want {
			t.Errorf("refused with\n%v\nwant the message\n%s", err, want)
		}
		// Forbidden, as Pod Security admission answers: the object is
		// valid, the policy forbids it. kubectl prints "Error from server
		// (Forbidden): ... is forbidden: ValidatingAdmissionPolicy ...".
		if !apierrors.IsForbidden(err) {
			t.Errorf("reason %s, want Forbidden", apierrors.ReasonForError(err))
		}
	}
	if goSays != want {
		t.Errorf("WorkloadPolicy.Check says %q, the API server %q", goSays, want)
	}
}

// TestAdmission creates objects of every kind a WorkloadPolicy reads, in
// namespaces of several environments, and checks that the API server
// admits or refuses each with the expected message, and that
// WorkloadPolicy.Check, which reports the objects that break a policy made
// after them, agrees with it word for word.
//
// No operator runs against this API server: the ValidatingAdmissionPolicy
// alone enforces the policies, which therefore hold while Steward is down.
func TestAdmission(t *testing.T) {
	setup(t)
	for _, tc := range admissionCases() {
		t.Run(tc.name, func(t *testing.T) {
			sent := tc.obj.DeepCopyObject().(client.Object)
			err := k8s.Create(context.Background(), tc.obj)
			expectVerdict(t, err, tc.want, goVerdict(sent.GetNamespace(), sent, nil))
			if err == nil {
				expectStored(t, sent)
			}
		})
	}
}

// TestAdmissionOfScale scales a WebApp and a Cache through their scale
// subresource, as kubectl scale and autoscalers do.
func TestAdmissionOfScale(t *testing.T) {
	setup(t)
	ctx := context.Background()
	for _, obj := range []client.Object{webApp(prodNS, "scaled"), cache(prodNS, "scaled")} {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				replicas int32
				want     string
			}{
				{10, ""},
				{50, "spec.replicas: Invalid value: 50: production allows at most 10 (policy production)"},
				{1, ""},
			} {
				scale := &autoscalingv1.Scale{}
				if err := k8s.SubResource("scale").Get(ctx, obj, scale); err != nil {
					t.Fatal(err)
				}
				old := scale.DeepCopy()
				scale.Spec.Replicas = tc.replicas
				goSays := goVerdict(prodNS, scale, old)
				err := k8s.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(scale))
				expectVerdict(t, err, tc.want, goSays)
			}
		})
	}
}

// TestAdmissionOfExistingObjects labels a namespace production after
// objects that break the policy were created in it: they stay, updates
// that add nothing to what breaks the policy pass (a label, a finalizer,
// fewer replicas), and updates that add to it are refused. Check agrees,
// given the object before the update.
func TestAdmissionOfExistingObjects(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(t, "legacy", nil)
	bad := func(w *v1alpha1.WebApp) {
		w.Spec.Replicas = ptr.To[int32](50)
		w.Spec.Image = "nginx:1.27"
		w.Spec.Resources = nil
		w.Spec.SecurityContext = nil
	}
	app := webApp(ns, "legacy", bad)
	stack := appStack(ns, "legacy", func(s *v1alpha1.AppStack) {
		s.Spec.Apps[0].Replicas = ptr.To[int32](30)
		s.Spec.Apps[0].Image = "nginx:1.27"
		s.Spec.Apps[0].Resources = nil
		s.Spec.Apps[0].SecurityContext = nil
	})
	db := database(ns, "legacy", func(d *v1alpha1.Database) { d.Spec.Size = v1alpha1.SizeLarge; d.Spec.Image = "postgres:16" })
	for _, o := range []client.Object{app, stack, db} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %T before the policy: %v", o, err)
		}
	}
	var nsObj corev1.Namespace
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{v1alpha1.DefaultEnvironmentLabel: "production"}
	if err := k8s.Update(ctx, &nsObj); err != nil {
		t.Fatal(err)
	}
	policyOf[ns] = production
	waitEnforced(t, "production", webApp(ns, "probe", bad))

	steps := []struct {
		name   string
		obj    client.Object
		change func(client.Object)
		want   string
	}{
		{"webapp label", app, func(o client.Object) { o.SetLabels(map[string]string{"team": "shop"}) }, ""},
		{"webapp finalizer", app, func(o client.Object) { o.SetFinalizers([]string{"example.com/hold"}) }, ""},
		{"webapp finalizer removed", app, func(o client.Object) { o.SetFinalizers(nil) }, ""},
		{"webapp fewer replicas, still too many", app, func(o client.Object) { o.(*v1alpha1.WebApp).Spec.Replicas = ptr.To[int32](40) }, ""},
		{"webapp more replicas", app, func(o client.Object) { o.(*v1alpha1.WebApp).Spec.Replicas = ptr.To[int32](41) },
			"spec.replicas: Invalid value: 41: production allows at most 10 (policy production)"},
		{"webapp another refused image", app, func(o client.Object) { o.(*v1alpha1.WebApp).Spec.Image = "nginx:1.28" },
			`spec.image: Invalid value: "nginx:1.28": ` + prodImages},
		{"webapp resources changed, still lacking", app, func(o client.Object) {
			o.(*v1alpha1.WebApp).Spec.Resources = &corev1.ResourceRequirements{Requests: quantities("cpu", "1")}
		}, "spec.resources.requests.memory: Required value: " + prodRes},
		{"webapp security context changed to root", app, func(o client.Object) {
			o.(*v1alpha1.WebApp).Spec.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}
		}, "spec.securityContext.runAsNonRoot: Invalid value: false: " + nonRoot},
		// Its security context changes: it gets the default, as a new
		// object would.
		{"webapp security context changed, defaulted to non-root", app, func(o client.Object) {
			o.(*v1alpha1.WebApp).Spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
		}, ""},
		{"webapp brought within the policy", app, func(o client.Object) { o.(*v1alpha1.WebApp).Spec = goodApp() }, ""},
		{"appstack new app within the policy", stack, func(o client.Object) {
			s := o.(*v1alpha1.AppStack)
			s.Spec.Apps = append(s.Spec.Apps, v1alpha1.StackApp{Name: "admin", WebAppSpec: goodApp()})
		}, ""},
		{"appstack app grows", stack, func(o client.Object) { o.(*v1alpha1.AppStack).Spec.Apps[0].Replicas = ptr.To[int32](31) },
			"spec.apps[api].replicas: Invalid value: 31: production allows at most 10 (policy production)"},
		{"appstack new app breaking the policy", stack, func(o client.Object) {
			s := o.(*v1alpha1.AppStack)
			a := goodApp()
			a.Image = "nginx:1.27"
			s.Spec.Apps = append(s.Spec.Apps, v1alpha1.StackApp{Name: "other", WebAppSpec: a})
		}, `spec.apps[other].image: Invalid value: "nginx:1.27": ` + prodImages},
		{"database label", db, func(o client.Object) { o.SetLabels(map[string]string{"team": "shop"}) }, ""},
		{"database another refused image", db, func(o client.Object) { o.(*v1alpha1.Database).Spec.Image = "postgres:16.4" },
			`spec.image: Invalid value: "postgres:16.4": ` + prodImages},
		{"database image override removed", db, func(o client.Object) { o.(*v1alpha1.Database).Spec.Image = "" }, ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(s.obj), s.obj); err != nil {
				t.Fatal(err)
			}
			old := s.obj.DeepCopyObject().(client.Object)
			s.change(s.obj)
			sent := s.obj.DeepCopyObject().(client.Object)
			goSays := goVerdict(ns, sent, old)
			err := k8s.Update(ctx, s.obj)
			expectVerdict(t, err, s.want, goSays)
			if err == nil {
				// An update that leaves the security contexts alone
				// is not defaulted: the object made before the
				// policy keeps running as it did.
				expectStored(t, sent)
			}
		})
	}
	if t.Failed() {
		return
	}
	// The AppStack that broke the policy before it applied is still there,
	// and still breaks it.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stack), stack); err != nil {
		t.Fatal(err)
	}
	want := "spec.apps[api].replicas: Invalid value: 30: production allows at most 10 (policy production)"
	if errs := production.Check(stack, nil); len(errs) == 0 || errs[0].Error() != want {
		t.Errorf("the AppStack as it stands breaks %v, want first %s", errs, want)
	}
}
