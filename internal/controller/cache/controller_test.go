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

package cache_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/cache"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

func createCache(t *testing.T, ns, name string, engine v1alpha1.CacheEngine, mutate ...func(*v1alpha1.Cache)) *v1alpha1.Cache {
	t.Helper()
	c := &v1alpha1.Cache{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.CacheSpec{Engine: engine},
	}
	for _, m := range mutate {
		m(c)
	}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatalf("creating Cache: %v", err)
	}
	return c
}

// waitFor gets obj until it exists and check passes.
func waitFor[T client.Object](t *testing.T, obj T, check func(T) error) T {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), key, obj); err != nil {
			return err
		}
		if check == nil {
			return nil
		}
		return check(obj)
	})
	return obj
}

func named[T client.Object](obj T, ns, name string) T {
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

func controlledBy(obj client.Object, c *v1alpha1.Cache) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != c.UID || ref.Kind != "Cache" {
		return fmt.Errorf("%s is not controlled by Cache %s: %+v", obj.GetName(), c.Name, ref)
	}
	return nil
}

func ready(c *v1alpha1.Cache) error {
	r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
	if r == nil || r.Status != metav1.ConditionTrue || c.Status.Phase != v1alpha1.CacheRunning {
		return fmt.Errorf("not ready: phase %q, Ready %+v", c.Status.Phase, r)
	}
	if c.Status.ObservedGeneration != c.Generation {
		return fmt.Errorf("observedGeneration %d, generation %d", c.Status.ObservedGeneration, c.Generation)
	}
	return nil
}

// markDeploymentReady plays kube-controller-manager's part: the Deployment's
// pods are all up to date and ready.
func markDeploymentReady(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		n := *dep.Spec.Replicas
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		return k8s.Status().Update(context.Background(), dep)
	})
}

// createPod plays the ReplicaSet controller's part: a pod with the
// Deployment's template labels.
func createPod(t *testing.T, dep *appsv1.Deployment, name string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: name, Labels: dep.Spec.Template.Labels},
		Spec:       corev1.PodSpec{Containers: dep.Spec.Template.Spec.Containers},
	}
	if err := k8s.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	pod := named(&corev1.Pod{}, ns, name)
	if err := k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
}

func scale(t *testing.T, c *v1alpha1.Cache, n int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatalf("scaling Cache to %d: %v", n, err)
	}
}

func nodesAre(want ...string) func(*v1alpha1.Cache) error {
	return func(c *v1alpha1.Cache) error {
		if !slices.Equal(c.Status.Nodes, want) {
			return fmt.Errorf("status.nodes = %q, want %q", c.Status.Nodes, want)
		}
		return nil
	}
}

func TestMemcached(t *testing.T) {
	ns := namespace(t)
	c := createCache(t, ns, "sessions", v1alpha1.EngineMemcached)

	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "sessions"), func(d *appsv1.Deployment) error {
		return controlledBy(d, c)
	})
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "memcached:1.6" {
		t.Errorf("image = %q", got)
	}
	svc := waitFor(t, named(&corev1.Service{}, ns, "sessions"), func(s *corev1.Service) error { return controlledBy(s, c) })
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Ports[0].Port != 11211 {
		t.Errorf("service is not headless on 11211: %+v", svc.Spec)
	}
	// While the Deployment has no ready pods the status is held back
	// (v1alpha1.SettleDelay): the CRD's default says "not observed yet".
	held := &v1alpha1.Cache{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(c), held); err != nil {
		t.Fatal(err)
	}
	if age := time.Since(held.CreationTimestamp.Time); age < v1alpha1.FirstRolloutSettle-5*time.Second &&
		(held.Status.ObservedGeneration != -1 || len(held.Status.Conditions) > 0) {
		t.Errorf("deploying, %v old: status %+v, want the CRD's default (observedGeneration -1) until Ready", age, held.Status)
	}

	markDeploymentReady(t, dep)
	createPod(t, dep, "sessions-a")
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if err := ready(c); err != nil {
			return err
		}
		if c.Status.Endpoint != "sessions."+ns+".svc:11211" || c.Status.Version != "1.6" || c.Status.ReadyReplicas != 1 {
			return fmt.Errorf("status = %+v", c.Status)
		}
		return nodesAre("sessions-a")(c)
	})

	// Scale up: the Deployment follows, and status.nodes lists the new pods, sorted.
	scale(t, c, 3)
	waitFor(t, dep, func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("deployment replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	waitFor(t, named(&policyv1.PodDisruptionBudget{}, ns, "sessions"), nil)
	createPod(t, dep, "sessions-c")
	createPod(t, dep, "sessions-b")
	markDeploymentReady(t, dep)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if err := ready(c); err != nil {
			return err
		}
		return nodesAre("sessions-a", "sessions-b", "sessions-c")(c)
	})

	// Scale down.
	scale(t, c, 1)
	waitFor(t, dep, func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 1 {
			return fmt.Errorf("deployment replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	deletePod(t, ns, "sessions-a")
	deletePod(t, ns, "sessions-c")
	markDeploymentReady(t, dep)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if err := ready(c); err != nil {
			return err
		}
		return nodesAre("sessions-b")(c)
	})
	eventually(t, func() error {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sessions"}, &policyv1.PodDisruptionBudget{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("PodDisruptionBudget still exists for one node (get: %w)", err)
	})

	// A pod of another Cache does not appear.
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-x", Labels: cache.Labels(named(&v1alpha1.Cache{}, ns, "other"))},
		Spec:       dep.Spec.Template.Spec,
	}
	if err := k8s.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	createPod(t, dep, "sessions-d")
	waitFor(t, c, nodesAre("sessions-b", "sessions-d"))
}

func TestRedis(t *testing.T) {
	ns := namespace(t)
	c := createCache(t, ns, "store", v1alpha1.EngineRedis, func(c *v1alpha1.Cache) {
		c.Spec.Replicas = new(int32(2))
		c.Spec.Version = "7.2"
	})

	sts := waitFor(t, named(&appsv1.StatefulSet{}, ns, "store"), func(s *appsv1.StatefulSet) error { return controlledBy(s, c) })
	if got := sts.Spec.Template.Spec.Containers[0].Image; got != "redis:7.2" {
		t.Errorf("image = %q", got)
	}
	if sts.Spec.ServiceName != "store-headless" || *sts.Spec.Replicas != 2 {
		t.Errorf("statefulset spec = %+v", sts.Spec)
	}
	cm := waitFor(t, named(&corev1.ConfigMap{}, ns, "store"), func(m *corev1.ConfigMap) error { return controlledBy(m, c) })
	if cm.Data["redis.conf"] == "" {
		t.Errorf("ConfigMap has no redis.conf")
	}
	primary := waitFor(t, named(&corev1.Service{}, ns, "store"), nil)
	if primary.Spec.Selector["statefulset.kubernetes.io/pod-name"] != "store-0" {
		t.Errorf("client Service does not select the primary: %v", primary.Spec.Selector)
	}
	waitFor(t, named(&corev1.Service{}, ns, "store-ro"), nil)
	headless := waitFor(t, named(&corev1.Service{}, ns, "store-headless"), nil)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("store-headless has cluster IP %q", headless.Spec.ClusterIP)
	}
	waitFor(t, named(&policyv1.PodDisruptionBudget{}, ns, "store"), func(p *policyv1.PodDisruptionBudget) error { return controlledBy(p, c) })
	if _, err := cacheReadyNow(c); err == nil {
		t.Errorf("Ready before the StatefulSet is")
	}

	apitest.RollOutStatefulSet(t, k8s, timeout, client.ObjectKeyFromObject(sts), -1)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if err := ready(c); err != nil {
			return err
		}
		if c.Status.Endpoint != "store."+ns+".svc:6379" || c.Status.ReadyReplicas != 2 {
			return fmt.Errorf("status = %+v", c.Status)
		}
		return nil
	})

	// A change of memory re-renders redis.conf and rolls the pods.
	hash := sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"memory":"128Mi"}}`))
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sts, func(s *appsv1.StatefulSet) error {
		if s.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash] == hash {
			return fmt.Errorf("config hash unchanged")
		}
		return nil
	})
	waitFor(t, cm, func(m *corev1.ConfigMap) error {
		if !slices.Contains(strings.Split(m.Data["redis.conf"], "\n"), "maxmemory 100663296") {
			return fmt.Errorf("redis.conf not re-rendered:\n%s", m.Data["redis.conf"])
		}
		return nil
	})
}

// TestRedisPassword follows a redis Cache's password: generated once into
// the credentials Secret the nodes mount, kept across reconciles, taken
// from the Secret when the user changes it, and the Secret kept when auth
// is turned off.
func TestRedisPassword(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	c := createCache(t, ns, "vault", v1alpha1.EngineRedis)
	secret := waitFor(t, named(&corev1.Secret{}, ns, "vault-credentials"), func(s *corev1.Secret) error { return controlledBy(s, c) })
	first := string(secret.Data["password"])
	if len(first) != 32 || string(secret.Data["redis-auth.conf"]) != cache.RedisAuthConfig(first) ||
		string(secret.Data["uri"]) != "redis://default:"+first+"@vault."+ns+".svc:6379" {
		t.Fatalf("Secret keys %v: a 32-character password %t, redis-auth.conf and uri from it", slices.Sorted(maps.Keys(secret.Data)), len(first) == 32)
	}
	sts := waitFor(t, named(&appsv1.StatefulSet{}, ns, "vault"), func(s *appsv1.StatefulSet) error { return controlledBy(s, c) })
	apitest.RollOutStatefulSet(t, k8s, timeout, client.ObjectKeyFromObject(sts), -1)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if err := ready(c); err != nil {
			return err
		}
		if c.Status.CredentialsSecret != "vault-credentials" {
			return fmt.Errorf("status.credentialsSecret = %q", c.Status.CredentialsSecret)
		}
		return nil
	})

	// A change of the spec reconciles again: the password stays.
	if err := k8s.Patch(ctx, c, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"memory":"96Mi"}}`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, named(&corev1.ConfigMap{}, ns, "vault"), func(m *corev1.ConfigMap) error {
		if !strings.Contains(m.Data["redis.conf"], "maxmemory 75497472") {
			return errors.New("redis.conf not re-rendered")
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil || string(secret.Data["password"]) != first {
		t.Fatalf("the password changed on a reconcile (%v)", err)
	}

	// The user's own password: the settings the nodes include follow.
	mine := `my "own" pass\word`
	secret.Data["password"] = []byte(mine)
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitFor(t, secret, func(s *corev1.Secret) error {
		if string(s.Data["password"]) != mine || string(s.Data["redis-auth.conf"]) != cache.RedisAuthConfig(mine) ||
			!strings.HasPrefix(string(s.Data["uri"]), "redis://default:my%20%22own%22%20pass%5Cword@") {
			return errors.New("redis-auth.conf and uri do not follow the new password")
		}
		return nil
	})

	// Auth turned off: no include, no mount, the Secret kept as it is.
	if err := k8s.Patch(ctx, c, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"redis":{"auth":{"enabled":false}}}}`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sts, func(s *appsv1.StatefulSet) error {
		for _, v := range s.Spec.Template.Spec.Volumes {
			if v.Name == "auth" {
				return errors.New("the auth volume is still mounted")
			}
		}
		return nil
	})
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if c.Status.ObservedGeneration != c.Generation || c.Status.CredentialsSecret != "" {
			return fmt.Errorf("generation %d observed %d, credentialsSecret %q", c.Generation, c.Status.ObservedGeneration, c.Status.CredentialsSecret)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil || string(secret.Data["password"]) != mine {
		t.Errorf("auth turned off, the Secret is not kept as it was (%v)", err)
	}
}

// TestCredentialsSecretTaken gives a redis Cache a name whose credentials
// Secret exists and is not Steward's: the Cache says so, and the Secret is
// neither changed nor claimed.
func TestCredentialsSecretTaken(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-credentials"},
		Data: map[string][]byte{"password": []byte("theirs")}}
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	c := createCache(t, ns, "kept", v1alpha1.EngineRedis)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		if c.Status.Phase != v1alpha1.CacheDegraded || d == nil || d.Reason != v1alpha1.ReasonNameConflict ||
			!strings.Contains(d.Message, "kept-credentials") || strings.Contains(d.Message, "theirs") {
			return fmt.Errorf("phase %q, Degraded %+v", c.Status.Phase, d)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil || metav1.GetControllerOf(foreign) != nil ||
		len(foreign.Data) != 1 || string(foreign.Data["password"]) != "theirs" {
		t.Errorf("the foreign Secret was changed or taken over: %v, owners %+v, keys %d", err, foreign.OwnerReferences, len(foreign.Data))
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a StatefulSet was created without its credentials Secret: %v", err)
	}
}

func TestNameConflict(t *testing.T) {
	ns := namespace(t)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	if err := k8s.Create(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	c := createCache(t, ns, "taken", v1alpha1.EngineRedis)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		if c.Status.Phase != v1alpha1.CacheDegraded || d == nil || d.Reason != v1alpha1.ReasonNameConflict {
			return fmt.Errorf("phase %q, Degraded %+v", c.Status.Phase, d)
		}
		return nil
	})
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), foreign); err != nil || metav1.GetControllerOf(foreign) != nil {
		t.Errorf("the foreign ConfigMap was taken over: %v %+v", err, foreign.OwnerReferences)
	}
}

// TestNameTakenByAnotherStewardObject gives a Cache the name of a
// Database: the Database's StatefulSet, labelled as Steward's like every
// child, is in the operator's cache, and the Cache must neither apply over
// it nor claim it, but say whose it is.
func TestNameTakenByAnotherStewardObject(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	labels := map[string]string{"app.kubernetes.io/managed-by": "steward", "steward.dev/database": "twin"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twin", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "steward.dev/v1alpha1", Kind: "Database", Name: "twin",
				UID: "0b7a5c3e-0000-4000-8000-000000000001", Controller: ptr(true)}}},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:15"}}},
			},
		},
	}
	if err := k8s.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	c := createCache(t, ns, "twin", v1alpha1.EngineRedis)
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		if c.Status.Phase != v1alpha1.CacheDegraded || d == nil || d.Reason != v1alpha1.ReasonNameConflict ||
			!strings.Contains(d.Message, `a StatefulSet named "twin" already exists and belongs to Database twin`) {
			return fmt.Errorf("phase %q, Degraded %+v", c.Status.Phase, d)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Spec.Containers; len(got) != 1 || got[0].Name != "postgres" || got[0].Image != "postgres:15" {
		t.Errorf("the Database's StatefulSet was changed by the Cache: containers %+v", got)
	}
	if ref := metav1.GetControllerOf(sts); ref == nil || ref.Kind != "Database" {
		t.Errorf("the Database's StatefulSet changed hands: %+v", sts.OwnerReferences)
	}
}

func ptr[T any](v T) *T { return &v }

// cacheReadyNow reads the Cache once and reports whether it is Ready.
func cacheReadyNow(c *v1alpha1.Cache) (*v1alpha1.Cache, error) {
	got := &v1alpha1.Cache{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(c), got); err != nil {
		return nil, err
	}
	return got, ready(got)
}
