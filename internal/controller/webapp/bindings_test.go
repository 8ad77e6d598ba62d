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

package webapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

func createDatabase(t *testing.T, ns, name string) *v1alpha1.Database {
	t.Helper()
	db := &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DatabaseSpec{
			Engine:  v1alpha1.EnginePostgres,
			Version: "16",
			Storage: v1alpha1.DatabaseStorage{Size: new(resource.MustParse("1Gi"))},
		},
	}
	if err := k8s.Create(context.Background(), db); err != nil {
		t.Fatalf("creating Database: %v", err)
	}
	return db
}

// markDatabaseReady makes the Database Ready through its StatefulSet.
func markDatabaseReady(t *testing.T, db *v1alpha1.Database) {
	t.Helper()
	apitest.MarkDatabaseReady(t, k8s, timeout, client.ObjectKeyFromObject(db))
}

func createCache(t *testing.T, ns, name string) *v1alpha1.Cache {
	t.Helper()
	c := &v1alpha1.Cache{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.CacheSpec{Engine: v1alpha1.EngineMemcached},
	}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatalf("creating Cache: %v", err)
	}
	return c
}

// markCacheReady plays kube-controller-manager's part for a memcached
// Cache: its Deployment is ready and has a pod.
func markCacheReady(t *testing.T, c *v1alpha1.Cache) {
	t.Helper()
	dep := waitFor(t, named(&appsv1.Deployment{}, c.Namespace, c.Name), nil)
	markDeploymentReady(t, dep)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name + "-a", Labels: dep.Spec.Template.Labels},
		Spec:       corev1.PodSpec{Containers: dep.Spec.Template.Spec.Containers},
	}
	if err := k8s.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	waitFor(t, c, func(c *v1alpha1.Cache) error {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("Cache %s is not Ready: %+v", c.Name, c.Status.Conditions)
		}
		return nil
	})
}

// waitsWith waits until the WebApp is Pending, Progressing, not Ready, for reason.
func waitsWith(t *testing.T, app *v1alpha1.WebApp, reason string, mentions ...string) {
	t.Helper()
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		r, p := condition(a, v1alpha1.ConditionReady), condition(a, v1alpha1.ConditionProgressing)
		if a.Status.Phase != v1alpha1.WebAppPending || r == nil || p == nil ||
			r.Status != metav1.ConditionFalse || r.Reason != reason ||
			p.Status != metav1.ConditionTrue || p.Reason != reason {
			return fmt.Errorf("phase %s, Ready %+v, Progressing %+v", a.Status.Phase, r, p)
		}
		for _, m := range mentions {
			if !strings.Contains(r.Message, m) {
				return fmt.Errorf("message %q does not mention %q", r.Message, m)
			}
		}
		return nil
	})
}

func noDeployment(t *testing.T, ns, name string) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment exists before its binding is Ready: %v", err)
	}
}

func envByName(dep *appsv1.Deployment) map[string]corev1.EnvVar {
	env := map[string]corev1.EnvVar{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	return env
}

func TestDatabaseBinding(t *testing.T) {
	ns := namespace(t)
	db := createDatabase(t, ns, "orders-db")
	app := createApp(t, ns, "orders", func(a *v1alpha1.WebApp) {
		a.Spec.Database = &v1alpha1.WebAppBinding{Ref: "orders-db"}
	})
	// A new Database has no status until it is Ready (or 30 s old).
	waitsWith(t, app, v1alpha1.ReasonWaitingForDatabase, "orders-db", "no Ready condition yet")
	noDeployment(t, ns, "orders")

	markDatabaseReady(t, db)
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "orders"), nil)
	env := envByName(dep)
	want := map[string]string{
		"DATABASE_URL": "uri", "DB_HOST": "host", "DB_PORT": "port",
		"DB_USER": "username", "DB_PASSWORD": "password", "DB_NAME": "database",
	}
	for name, key := range want {
		e, ok := env[name]
		if !ok {
			t.Errorf("%s missing from %v", name, env)
			continue
		}
		ref := e.ValueFrom
		if e.Value != "" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "orders-db-credentials" || ref.SecretKeyRef.Key != key {
			t.Errorf("%s = %+v, want a secretKeyRef to orders-db-credentials/%s", name, e, key)
		}
	}

	// No credential value appears in the Deployment or the WebApp.
	secret := waitFor(t, named(&corev1.Secret{}, ns, "orders-db-credentials"), nil)
	depJSON, err := json.Marshal(dep.Spec)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.Phase == v1alpha1.WebAppPending {
			return fmt.Errorf("still %s", a.Status.Phase)
		}
		return nil
	})
	appJSON, err := json.Marshal(app)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"password", "uri"} {
		value := string(secret.Data[key])
		if value == "" {
			t.Fatalf("credentials Secret has no %s", key)
		}
		if strings.Contains(string(depJSON), value) || strings.Contains(string(appJSON), value) {
			t.Errorf("the %s appears in the Deployment or WebApp", key)
		}
	}
	if strings.Contains(strings.Join(eventReasons(t, ns, "orders"), " "), "Warning") {
		t.Errorf("warning events: %v", eventReasons(t, ns, "orders"))
	}
	hasEvent(t, ns, "orders", "Normal/WaitingForDatabase")
}

func TestDatabaseBindingWithPrefix(t *testing.T) {
	ns := namespace(t)
	db := createDatabase(t, ns, "billing-db")
	markDatabaseReady(t, db)
	createApp(t, ns, "billing", func(a *v1alpha1.WebApp) {
		a.Spec.Database = &v1alpha1.WebAppBinding{Ref: "billing-db", Prefix: "BILLING_"}
		a.Spec.Env = []corev1.EnvVar{{Name: "BILLING_DB_HOST", Value: "pgbouncer"}}
	})
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "billing"), nil)
	env := envByName(dep)
	for _, name := range []string{"BILLING_DATABASE_URL", "BILLING_DB_PORT", "BILLING_DB_USER", "BILLING_DB_PASSWORD", "BILLING_DB_NAME"} {
		if e, ok := env[name]; !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "billing-db-credentials" {
			t.Errorf("%s = %+v", name, e)
		}
	}
	if e := env["BILLING_DB_HOST"]; e.Value != "pgbouncer" || e.ValueFrom != nil {
		t.Errorf("spec.env does not take precedence: BILLING_DB_HOST = %+v", e)
	}
	if _, ok := env["DATABASE_URL"]; ok {
		t.Errorf("unprefixed DATABASE_URL set: %v", env)
	}
}

func TestMissingDatabase(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "lost", func(a *v1alpha1.WebApp) {
		a.Spec.Database = &v1alpha1.WebAppBinding{Ref: "nowhere"}
	})
	waitsWith(t, app, v1alpha1.ReasonDatabaseNotFound, "nowhere")
	noDeployment(t, ns, "lost")
	hasEvent(t, ns, "lost", "Warning/DatabaseNotFound")

	// Not an error loop: the WebApp is looked at again after a delay, or
	// when the Database appears.
	// The reconcile count is the controller's, across WebApps: earlier
	// tests' waiting WebApps may be looked at again meanwhile too.
	before := reconciles(t)
	mark := requests.mark()
	time.Sleep(2 * time.Second)
	if n := reconciles(t) - before; n > 5 {
		t.Errorf("%v reconciles in 2s while the Database is missing", n)
	}
	if w := requests.writesSince(mark, ns); len(w) != 0 {
		t.Errorf("writes while waiting: %v", w)
	}

	db := createDatabase(t, ns, "nowhere")
	waitsWith(t, app, v1alpha1.ReasonWaitingForDatabase, "nowhere")
	markDatabaseReady(t, db)
	waitFor(t, named(&appsv1.Deployment{}, ns, "lost"), nil)
}

func TestCacheBinding(t *testing.T) {
	ns := namespace(t)
	c := createCache(t, ns, "sessions")
	app := createApp(t, ns, "web", func(a *v1alpha1.WebApp) {
		a.Spec.Cache = &v1alpha1.WebAppBinding{Ref: "sessions", Prefix: "STORE_"}
	})
	waitsWith(t, app, v1alpha1.ReasonWaitingForCache, "sessions")
	noDeployment(t, ns, "web")

	markCacheReady(t, c)
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "web"), nil)
	env := envByName(dep)
	if got := env["STORE_CACHE_HOST"].Value; got != "sessions."+ns+".svc" {
		t.Errorf("STORE_CACHE_HOST = %q", got)
	}
	if got := env["STORE_CACHE_PORT"].Value; got != "11211" {
		t.Errorf("STORE_CACHE_PORT = %q", got)
	}
	if _, ok := env["STORE_CACHE_PASSWORD"]; ok {
		t.Errorf("a memcached binding has a password")
	}
}

// TestRedisCacheBinding binds a WebApp to a redis Cache, which asks for a
// password: the container gets it, and a redis:// uri with it, as
// secretKeyRefs to the Cache's credentials Secret, never as values.
func TestRedisCacheBinding(t *testing.T) {
	ns := namespace(t)
	c := &v1alpha1.Cache{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store"},
		Spec:       v1alpha1.CacheSpec{Engine: v1alpha1.EngineRedis},
	}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatalf("creating Cache: %v", err)
	}
	app := createApp(t, ns, "web", func(a *v1alpha1.WebApp) {
		a.Spec.Cache = &v1alpha1.WebAppBinding{Ref: "store"}
	})
	waitsWith(t, app, v1alpha1.ReasonWaitingForCache, "store")
	apitest.RollOutStatefulSet(t, k8s, timeout, client.ObjectKey{Namespace: ns, Name: "store"}, -1)
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "web"), nil)
	env := envByName(dep)
	if got := env["CACHE_PORT"].Value; got != "6379" {
		t.Errorf("CACHE_PORT = %q", got)
	}
	for name, key := range map[string]string{"CACHE_PASSWORD": "password", "CACHE_URL": "uri"} {
		e := env[name]
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != "store-credentials" || e.ValueFrom.SecretKeyRef.Key != key {
			t.Errorf("%s is not a secretKeyRef to store-credentials, key %s: %+v", name, key, e)
		}
	}
}

func TestMissingCache(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "web", func(a *v1alpha1.WebApp) {
		a.Spec.Cache = &v1alpha1.WebAppBinding{Ref: "absent"}
	})
	waitsWith(t, app, v1alpha1.ReasonCacheNotFound, "absent")
	noDeployment(t, ns, "web")
}
