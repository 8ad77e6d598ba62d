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

package appconfig_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func newAppConfig(ns string, data map[string]string, mutate ...func(*v1alpha1.AppConfig)) *v1alpha1.AppConfig {
	ac := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: v1alpha1.AppConfigSpec{
			Application: "shop", Environment: "dev", Data: data,
			Rollout: &v1alpha1.ConfigRollout{DebounceSeconds: new(int32(0))},
		},
	}
	for _, m := range mutate {
		m(ac)
	}
	return ac
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func webApp(ns, name string, uses ...v1alpha1.ConfigUse) *v1alpha1.WebApp {
	return &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.WebAppSpec{Image: "nginx:1.27", Config: uses},
	}
}

func uses(keys ...string) v1alpha1.ConfigUse {
	return v1alpha1.ConfigUse{AppConfig: "shop", Keys: keys}
}

// edit changes the AppConfig, retrying on conflicts.
func edit(t *testing.T, ns string, change func(*v1alpha1.AppConfig)) {
	t.Helper()
	eventually(t, func() error {
		ac := &v1alpha1.AppConfig{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop"}, ac); err != nil {
			return err
		}
		change(ac)
		return k8s.Update(context.Background(), ac)
	})
}

// settled waits until the AppConfig is Ready for its current generation
// with every consumer up to date, and returns it.
func settled(t *testing.T, ns string) *v1alpha1.AppConfig {
	t.Helper()
	ac := &v1alpha1.AppConfig{}
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop"}, ac); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionReady)
		switch {
		case ac.Status.ObservedGeneration != ac.Generation:
			return fmt.Errorf("status is for generation %d, not %d", ac.Status.ObservedGeneration, ac.Generation)
		case c == nil || c.Status != metav1.ConditionTrue:
			return fmt.Errorf("not Ready: %+v", c)
		}
		for _, cons := range ac.Status.Consumers {
			if cons.State != v1alpha1.ConsumerUpToDate {
				return fmt.Errorf("consumer %s is %s", cons.Name, cons.State)
			}
		}
		return allListed(ns, ac)
	})
	return ac
}

// allListed says which consumer of the AppConfig in the namespace its
// status does not list yet: a status written before the operator saw a
// consumer is true for that moment, but not settled.
func allListed(ns string, ac *v1alpha1.AppConfig) error {
	listed := map[string]bool{}
	for _, c := range ac.Status.Consumers {
		listed[c.Kind+"/"+c.Name] = true
	}
	var want []string
	webApps := &v1alpha1.WebAppList{}
	if err := k8s.List(context.Background(), webApps, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, w := range webApps.Items {
		if slices.ContainsFunc(w.Spec.Config, func(u v1alpha1.ConfigUse) bool { return u.AppConfig == ac.Name }) {
			want = append(want, v1alpha1.ConsumerKindWebApp+"/"+w.Name)
		}
	}
	optedIn := func(o metav1.Object) bool {
		return slices.Contains(strings.Split(o.GetAnnotations()[v1alpha1.AnnotationAppConfigConsumer], ","), ac.Name)
	}
	deployments := &appsv1.DeploymentList{}
	if err := k8s.List(context.Background(), deployments, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, d := range deployments.Items {
		if optedIn(&d) {
			want = append(want, v1alpha1.ConsumerKindDeployment+"/"+d.Name)
		}
	}
	sets := &appsv1.StatefulSetList{}
	if err := k8s.List(context.Background(), sets, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, s := range sets.Items {
		if optedIn(&s) {
			want = append(want, v1alpha1.ConsumerKindStatefulSet+"/"+s.Name)
		}
	}
	for _, w := range want {
		if !listed[w] {
			return fmt.Errorf("consumer %s is not listed yet", w)
		}
	}
	return nil
}

func deployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	eventually(t, func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d)
	})
	return d
}

// generations reads the generation of each named Deployment, once each
// exists and its WebApp's config is applied.
func generations(t *testing.T, ns string, names ...string) map[string]int64 {
	t.Helper()
	g := map[string]int64{}
	for _, n := range names {
		g[n] = deployment(t, ns, n).Generation
	}
	return g
}

// consumer returns the AppConfig's status entry for a WebApp.
func consumer(ac *v1alpha1.AppConfig, name string) v1alpha1.ConfigConsumer {
	for _, c := range ac.Status.Consumers {
		if c.Kind == v1alpha1.ConsumerKindWebApp && c.Name == name {
			return c
		}
	}
	return v1alpha1.ConfigConsumer{}
}

func envOf(d *appsv1.Deployment, name string) *corev1.EnvVar {
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return &e
		}
	}
	return nil
}

func TestOnlyConsumersOfAChangedKeyRollOut(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"DB_HOST": "db", "LOG_LEVEL": "info", "UNUSED": "1"}))
	create(t, webApp(ns, "a", uses("LOG_LEVEL")))
	create(t, webApp(ns, "b", uses("DB_HOST")))
	first := settled(t, ns)
	if len(first.Status.Consumers) != 2 {
		t.Fatalf("consumers = %+v, want a and b", first.Status.Consumers)
	}
	before := generations(t, ns, "a", "b")

	// The env is a reference to the revision's ConfigMap, not the value.
	a := deployment(t, ns, "a")
	e := envOf(a, "LOG_LEVEL")
	want := "shop-config-" + first.Status.CurrentRevision
	if e == nil || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil || e.ValueFrom.ConfigMapKeyRef.Name != want || e.Value != "" {
		t.Fatalf("LOG_LEVEL = %+v, want a configMapKeyRef to %s", e, want)
	}
	if envOf(a, "DB_HOST") != nil {
		t.Error("a got DB_HOST, which it does not use")
	}

	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["LOG_LEVEL"] = "debug" })
	second := settled(t, ns)
	if second.Status.CurrentRevision == first.Status.CurrentRevision {
		t.Fatal("the current revision did not move")
	}
	after := generations(t, ns, "a", "b")
	if after["a"] != before["a"]+1 {
		t.Errorf("a's Deployment went from generation %d to %d, want one rollout", before["a"], after["a"])
	}
	if after["b"] != before["b"] {
		t.Errorf("b's Deployment went from generation %d to %d, want none: DB_HOST did not change", before["b"], after["b"])
	}
	// An event names what was rolled out and why.
	eventually(t, func() error {
		want := fmt.Sprintf("Rolling out revision %s to WebApp a: keys LOG_LEVEL changed", second.Status.CurrentRevision)
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "AppConfig" && e.Note == want {
				return nil
			}
		}
		return fmt.Errorf("no event %q", want)
	})
	if got := consumer(second, "b").Revision; got != first.Status.CurrentRevision {
		t.Errorf("b runs revision %s, want %s, equal in the keys it uses", got, first.Status.CurrentRevision)
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-config"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["LOG_LEVEL"] != "debug" {
		t.Errorf("shop-config has LOG_LEVEL %q, want debug", cm.Data["LOG_LEVEL"])
	}

	// A key nobody uses: no rollout at all.
	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["UNUSED"] = "2" })
	third := settled(t, ns)
	if third.Status.CurrentRevision == second.Status.CurrentRevision {
		t.Fatal("the current revision did not move")
	}
	if got := generations(t, ns, "a", "b"); got["a"] != after["a"] || got["b"] != after["b"] {
		t.Errorf("a change of an unused key rolled out: generations %v, then %v", after, got)
	}
}

func TestRestartingTheOperatorRollsNothingOut(t *testing.T) {
	stop := startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"LOG_LEVEL": "info", "OTHER": "x"}))
	create(t, webApp(ns, "a", uses("LOG_LEVEL")))
	create(t, webApp(ns, "all", v1alpha1.ConfigUse{AppConfig: "shop"}))
	create(t, webApp(ns, "files", v1alpha1.ConfigUse{AppConfig: "shop", As: v1alpha1.ConfigAsFiles}))
	settled(t, ns)
	// One edit, so that the consumers run different revisions.
	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["OTHER"] = "y" })
	before := settled(t, ns)
	gens := generations(t, ns, "a", "all", "files")

	// Every key as env: an envFrom of the revision; as files: a projected
	// volume of it, mounted read-only.
	rev := "shop-config-" + consumer(before, "all").Revision
	all := deployment(t, ns, "all").Spec.Template.Spec
	if from := all.Containers[0].EnvFrom; len(from) != 1 || from[0].ConfigMapRef == nil || from[0].ConfigMapRef.Name != rev {
		t.Errorf("envFrom = %+v, want the ConfigMap %s", from, rev)
	}
	files := deployment(t, ns, "files").Spec.Template.Spec
	if len(files.Volumes) != 1 || files.Volumes[0].Projected == nil ||
		files.Volumes[0].Projected.Sources[0].ConfigMap.Name != "shop-config-"+consumer(before, "files").Revision {
		t.Errorf("volumes = %+v, want a projected volume of the revision", files.Volumes)
	}
	if m := files.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/etc/steward/shop" || !m[0].ReadOnly {
		t.Errorf("volume mounts = %+v, want /etc/steward/shop read-only", m)
	}
	stop()

	startOperator(t)
	// The new operator has looked at everything once it reports the
	// consumers again; wait past a few resyncs too.
	time.Sleep(3 * time.Second)
	after := settled(t, ns)
	if got := generations(t, ns, "a", "all", "files"); !equalMaps(got, gens) {
		t.Errorf("restarting the operator rolled out: generations %v, then %v", gens, got)
	}
	if after.Status.CurrentRevision != before.Status.CurrentRevision {
		t.Errorf("current revision moved from %s to %s", before.Status.CurrentRevision, after.Status.CurrentRevision)
	}
}

func equalMaps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestABurstOfEditsRollsOutOnce(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"LOG_LEVEL": "v0"}, func(ac *v1alpha1.AppConfig) {
		ac.Spec.Rollout.DebounceSeconds = new(int32(3))
	}))
	create(t, webApp(ns, "a", uses("LOG_LEVEL")))
	settled(t, ns)
	before := generations(t, ns, "a")["a"]

	for i := 1; i <= 10; i++ {
		edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["LOG_LEVEL"] = fmt.Sprintf("v%d", i) })
		time.Sleep(100 * time.Millisecond)
	}
	var ac *v1alpha1.AppConfig
	eventually(t, func() error {
		ac = settled(t, ns)
		if ac.Status.CurrentRevision != ac.Status.LatestRevision {
			return fmt.Errorf("current revision %s is not the latest, %s", ac.Status.CurrentRevision, ac.Status.LatestRevision)
		}
		return nil
	})
	d := deployment(t, ns, "a")
	if d.Generation != before+1 {
		t.Errorf("ten edits gave %d rollouts, want 1", d.Generation-before)
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-config-" + ac.Status.CurrentRevision}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["LOG_LEVEL"] != "v10" {
		t.Errorf("the rolled-out revision has LOG_LEVEL %q, want the last edit's v10", cm.Data["LOG_LEVEL"])
	}
}

func TestConsumersRollOutOneAtATime(t *testing.T) {
	startOperator(t)
	ns := namespace(t, false)
	create(t, newAppConfig(ns, map[string]string{"K": "1"}, func(ac *v1alpha1.AppConfig) {
		ac.Spec.Rollout.MaxConcurrent = new(int32(1))
	}))
	names := []string{"c1", "c2", "c3"}
	for _, n := range names {
		create(t, webApp(ns, n, uses("K")))
	}
	for _, n := range names {
		deployment(t, ns, n)
		markRolledOut(t, ns, n)
	}
	settled(t, ns)
	before := generations(t, ns, names...)

	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["K"] = "2" })
	var order []string
	for range names {
		// Exactly one more consumer starts; the others wait for it.
		var started string
		eventually(t, func() error {
			g := generations(t, ns, names...)
			var moved []string
			for _, n := range names {
				if g[n] != before[n] {
					moved = append(moved, n)
				}
			}
			if len(moved) != len(order)+1 {
				return fmt.Errorf("%d consumers rolling or rolled out, want %d", len(moved), len(order)+1)
			}
			for _, n := range moved {
				if !slices.Contains(order, n) {
					started = n
				}
			}
			return nil
		})
		// Nothing else starts while it rolls out.
		time.Sleep(1500 * time.Millisecond)
		g := generations(t, ns, names...)
		for _, n := range names {
			if n != started && !slices.Contains(order, n) && g[n] != before[n] {
				t.Fatalf("%s started while %s was rolling out", n, started)
			}
		}
		order = append(order, started)
		markRolledOut(t, ns, started)
	}
	settled(t, ns)
	if !slices.Equal(order, names) {
		t.Errorf("rolled out in order %v, want %v", order, names)
	}
}

func TestRollbackToAPinnedRevision(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"LOG_LEVEL": "info"}))
	create(t, webApp(ns, "a", uses("LOG_LEVEL")))
	good := settled(t, ns).Status.CurrentRevision
	goodHash := deployment(t, ns, "a").Spec.Template.Annotations[v1alpha1.AppConfigAnnotation("shop")]

	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["LOG_LEVEL"] = "trace" })
	bad := settled(t, ns).Status.CurrentRevision
	if bad == good {
		t.Fatal("the edit made no new revision")
	}

	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Revision = good })
	ac := settled(t, ns)
	if ac.Status.CurrentRevision != good || ac.Status.LatestRevision != bad {
		t.Errorf("current %s latest %s, want current %s (pinned), latest %s", ac.Status.CurrentRevision, ac.Status.LatestRevision, good, bad)
	}
	if c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionReady); c.Reason != v1alpha1.ReasonPinned {
		t.Errorf("Ready reason %s, want %s", c.Reason, v1alpha1.ReasonPinned)
	}
	d := deployment(t, ns, "a")
	if got := d.Spec.Template.Annotations[v1alpha1.AppConfigAnnotation("shop")]; got != goodHash {
		t.Errorf("after the rollback the template hash is %s, want the good revision's %s", got, goodHash)
	}
	if e := envOf(d, "LOG_LEVEL"); e.ValueFrom.ConfigMapKeyRef.Name != "shop-config-"+good {
		t.Errorf("LOG_LEVEL comes from %s, want shop-config-%s", e.ValueFrom.ConfigMapKeyRef.Name, good)
	}

	// A pin to a revision that is not kept is a clear condition; nothing moves.
	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Revision = "0123456789" })
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ac), ac); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonRevisionNotFound || ac.Status.ObservedGeneration != ac.Generation {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	if ac.Status.CurrentRevision != good {
		t.Errorf("current revision moved to %s on a bad pin", ac.Status.CurrentRevision)
	}
}

func TestOverridesRenderPerEnvironment(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{
		"LOG_LEVEL": "debug",
		"HOST":      "${application}.${namespace}.svc",
		"URL":       "https://${HOST}/${environment}",
	}, func(ac *v1alpha1.AppConfig) {
		ac.Spec.Environment = "prod"
		ac.Spec.Overrides = map[string]map[string]string{
			"prod":    {"LOG_LEVEL": "warn", "REPLICAS": "3"},
			"staging": {"LOG_LEVEL": "info"},
		}
	}))
	settled(t, ns)
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-config"}, cm); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"LOG_LEVEL": "warn", "REPLICAS": "3",
		"HOST": "shop." + ns + ".svc", "URL": "https://shop." + ns + ".svc/prod",
	}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("%s = %q, want %q", k, cm.Data[k], v)
		}
	}
	if len(cm.Data) != len(want) {
		t.Errorf("data = %v, want %v", cm.Data, want)
	}
}

func TestSecretValuesStayInSecrets(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Data:       map[string][]byte{"password": []byte("s3cret-1")},
	})
	create(t, newAppConfig(ns, map[string]string{"DB_USER": "shop"}, func(ac *v1alpha1.AppConfig) {
		ac.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"DB_PASSWORD": {SecretName: "db", Key: "password"}}
	}))
	create(t, webApp(ns, "a", uses("DB_PASSWORD")))
	create(t, webApp(ns, "b", uses("DB_USER")))
	first := settled(t, ns)

	rendered := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-config"}, rendered); err != nil {
		t.Fatal(err)
	}
	if string(rendered.Data["DB_PASSWORD"]) != "s3cret-1" {
		t.Errorf("rendered Secret has DB_PASSWORD %q", rendered.Data["DB_PASSWORD"])
	}
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(context.Background(), cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			if k == "DB_PASSWORD" || v == "s3cret-1" {
				t.Errorf("ConfigMap %s holds the secret value under %s", cm.Name, k)
			}
		}
		for k, v := range cm.Annotations {
			if v == "s3cret-1" {
				t.Errorf("ConfigMap %s annotation %s holds the secret value", cm.Name, k)
			}
		}
	}
	e := envOf(deployment(t, ns, "a"), "DB_PASSWORD")
	if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "shop-config-"+first.Status.CurrentRevision {
		t.Fatalf("DB_PASSWORD = %+v, want a secretKeyRef to the revision's Secret", e)
	}
	before := generations(t, ns, "a", "b")

	// Rotating the password rolls out the consumer that uses it only.
	eventually(t, func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, s); err != nil {
			return err
		}
		s.Data["password"] = []byte("s3cret-2")
		return k8s.Update(context.Background(), s)
	})
	eventually(t, func() error {
		ac := settled(t, ns)
		if ac.Status.CurrentRevision == first.Status.CurrentRevision {
			return fmt.Errorf("still on revision %s", ac.Status.CurrentRevision)
		}
		return nil
	})
	after := generations(t, ns, "a", "b")
	if after["a"] != before["a"]+1 || after["b"] != before["b"] {
		t.Errorf("generations %v, then %v: want a rolled out once and b not at all", before, after)
	}

	// Rotated back, the value renders the first revision again: tokens
	// depend on the value only.
	eventually(t, func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, s); err != nil {
			return err
		}
		s.Data["password"] = []byte("s3cret-1")
		return k8s.Update(context.Background(), s)
	})
	eventually(t, func() error {
		if ac := settled(t, ns); ac.Status.CurrentRevision != first.Status.CurrentRevision {
			return fmt.Errorf("on revision %s, want the first, %s", ac.Status.CurrentRevision, first.Status.CurrentRevision)
		}
		return nil
	})
}

func TestPlainDeploymentsOptIn(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"LOG_LEVEL": "info", "OTHER": "x"}))
	labels := map[string]string{"app": "legacy"}
	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy", Annotations: map[string]string{
			v1alpha1.AnnotationAppConfigConsumer: "shop", v1alpha1.AnnotationAppConfigKeys: "LOG_LEVEL",
		}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	})
	settled(t, ns)
	d := deployment(t, ns, "legacy")
	hash := d.Spec.Template.Annotations[v1alpha1.AppConfigAnnotation("shop")]
	if hash == "" {
		t.Fatal("opting in did not set the hash annotation")
	}
	gen := d.Generation

	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["OTHER"] = "y" })
	settled(t, ns)
	if d = deployment(t, ns, "legacy"); d.Generation != gen {
		t.Errorf("a change of a key it does not use rolled the Deployment out")
	}
	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["LOG_LEVEL"] = "warn" })
	settled(t, ns)
	d = deployment(t, ns, "legacy")
	if d.Generation != gen+1 || d.Spec.Template.Annotations[v1alpha1.AppConfigAnnotation("shop")] == hash {
		t.Errorf("a change of LOG_LEVEL: generation %d (was %d), hash %s (was %s)", d.Generation, gen,
			d.Spec.Template.Annotations[v1alpha1.AppConfigAnnotation("shop")], hash)
	}

	// Using one more key rolls it out once, and the rollout completes.
	eventually(t, func() error {
		d := deployment(t, ns, "legacy")
		d.Annotations[v1alpha1.AnnotationAppConfigKeys] = "LOG_LEVEL,OTHER"
		return k8s.Update(context.Background(), d)
	})
	gen = deployment(t, ns, "legacy").Generation
	eventually(t, func() error {
		if d := deployment(t, ns, "legacy"); d.Generation != gen+1 {
			return fmt.Errorf("generation %d, want %d", d.Generation, gen+1)
		}
		return nil
	})
	settled(t, ns)
}

func TestInvalidConfigurationIsAConditionAndChangesNothing(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"A": "1"}))
	create(t, webApp(ns, "a", uses("A")))
	good := settled(t, ns).Status.CurrentRevision
	gen := generations(t, ns, "a")["a"]

	// Without the admission webhook, a cycle reaches the controller.
	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data = map[string]string{"A": "${B}", "B": "${A}"} })
	ac := &v1alpha1.AppConfig{}
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop"}, ac); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonInvalidSpec || ac.Status.ObservedGeneration != ac.Generation {
			return fmt.Errorf("Ready = %+v", c)
		}
		if want := "reference cycle A -> B -> A"; !contains(c.Message, want) {
			return fmt.Errorf("message %q does not name the cycle %q", c.Message, want)
		}
		return nil
	})
	if ac.Status.CurrentRevision != good || generations(t, ns, "a")["a"] != gen {
		t.Error("an invalid configuration moved the revision or rolled out")
	}
}

func TestWebAppWaitsForItsAppConfig(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, webApp(ns, "a", uses("LOG_LEVEL")))
	waitReason := func(reason string) {
		t.Helper()
		eventually(t, func() error {
			app := &v1alpha1.WebApp{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, app); err != nil {
				return err
			}
			c := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.ConditionReady)
			if c == nil || c.Reason != reason {
				return fmt.Errorf("Ready = %+v, want reason %s", c, reason)
			}
			return nil
		})
	}
	waitReason(v1alpha1.ReasonAppConfigNotFound)
	create(t, newAppConfig(ns, map[string]string{"OTHER": "x"}))
	waitReason(v1alpha1.ReasonMissingConfigKey)
	eventually(t, func() error {
		ac := &v1alpha1.AppConfig{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop"}, ac); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionDegraded)
		if got := consumer(ac, "a"); got.State != v1alpha1.ConsumerBlocked || c == nil || c.Reason != v1alpha1.ReasonConsumerBlocked {
			return fmt.Errorf("consumer a = %+v, Degraded = %+v", got, c)
		}
		return nil
	})
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, &appsv1.Deployment{}); err == nil {
		t.Error("a Deployment was created without the key it uses")
	}
	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["LOG_LEVEL"] = "info" })
	settled(t, ns)
	deployment(t, ns, "a")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestAFailedRolloutStopsTheRest(t *testing.T) {
	startOperator(t)
	ns := namespace(t, false)
	create(t, newAppConfig(ns, map[string]string{"K": "1"}, func(ac *v1alpha1.AppConfig) {
		ac.Spec.Rollout.MaxConcurrent = new(int32(1))
	}))
	names := []string{"c1", "c2"}
	for _, n := range names {
		create(t, webApp(ns, n, uses("K")))
	}
	for _, n := range names {
		deployment(t, ns, n)
		markRolledOut(t, ns, n)
	}
	settled(t, ns)
	before := generations(t, ns, names...)

	edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["K"] = "2" })
	eventually(t, func() error {
		if g := deployment(t, ns, "c1").Generation; g == before["c1"] {
			return fmt.Errorf("c1 has not started")
		}
		return nil
	})
	// c1's new pods never become available.
	eventually(t, func() error {
		d := deployment(t, ns, "c1")
		d.Status.ObservedGeneration = d.Generation
		d.Status.Conditions = []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message: `ReplicaSet "c1-7d9" has timed out progressing.`,
		}}
		return k8s.Status().Update(context.Background(), d)
	})
	ac := &v1alpha1.AppConfig{}
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop"}, ac); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ac.Status.Conditions, v1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRolloutFailed || !strings.Contains(c.Message, "WebApp c1") {
			return fmt.Errorf("Degraded = %+v", c)
		}
		return nil
	})
	if got := consumer(ac, "c1").State; got != v1alpha1.ConsumerFailed {
		t.Errorf("c1 is %s, want Failed", got)
	}
	if got := consumer(ac, "c2").State; got != v1alpha1.ConsumerPending {
		t.Errorf("c2 is %s, want Pending", got)
	}
	time.Sleep(1500 * time.Millisecond)
	if g := deployment(t, ns, "c2").Generation; g != before["c2"] {
		t.Error("c2 rolled out after c1 failed")
	}

	// Once c1 recovers, the rollout goes on.
	markRolledOut(t, ns, "c1")
	eventually(t, func() error {
		if g := deployment(t, ns, "c2").Generation; g == before["c2"] {
			return fmt.Errorf("c2 has not started")
		}
		return nil
	})
}

func TestOldRevisionsArePrunedButNotOnesInUse(t *testing.T) {
	startOperator(t)
	ns := namespace(t, true)
	create(t, newAppConfig(ns, map[string]string{"A": "0", "B": "b"}, func(ac *v1alpha1.AppConfig) {
		ac.Spec.RevisionHistoryLimit = new(int32(2))
	}))
	create(t, webApp(ns, "b", uses("B")))
	first := settled(t, ns).Status.CurrentRevision
	for i := 1; i <= 4; i++ {
		edit(t, ns, func(ac *v1alpha1.AppConfig) { ac.Spec.Data["A"] = fmt.Sprint(i) })
		eventually(t, func() error {
			ac := settled(t, ns)
			if ac.Status.CurrentRevision != ac.Status.LatestRevision || ac.Status.ObservedGeneration != ac.Generation {
				return fmt.Errorf("edit %d not rolled out yet", i)
			}
			return nil
		})
	}
	ac := settled(t, ns)
	// The two newest, and the first, which b still runs: A is not its key.
	want := []string{ac.Status.Revisions[0].Name, ac.Status.Revisions[1].Name, first}
	var got []string
	for _, r := range ac.Status.Revisions {
		got = append(got, r.Name)
	}
	if !slices.Equal(got, want) || consumer(ac, "b").Revision != first {
		t.Errorf("kept revisions %v, b runs %s; want %v with b on %s", got, consumer(ac, "b").Revision, want, first)
	}
	eventually(t, func() error {
		cms := &corev1.ConfigMapList{}
		if err := k8s.List(context.Background(), cms, client.InNamespace(ns)); err != nil {
			return err
		}
		var names []string
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, "shop-config-") {
				names = append(names, strings.TrimPrefix(cm.Name, "shop-config-"))
			}
		}
		slices.Sort(names)
		w := slices.Sorted(slices.Values(want))
		if !slices.Equal(names, w) {
			return fmt.Errorf("revision ConfigMaps %v, want %v", names, w)
		}
		return nil
	})
}
