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

package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// These tests send Caches to a real API server with the generated CRD, so
// they check the admission rules as the cluster enforces them.

var k8s client.Client

const ns = "validation"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := apitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

var names int

func newCache(engine v1alpha1.CacheEngine, mutate ...func(*v1alpha1.Cache)) *v1alpha1.Cache {
	names++
	c := &v1alpha1.Cache{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", names)},
		Spec:       v1alpha1.CacheSpec{Engine: engine},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// expectInvalid checks that err is an Invalid error whose message contains want.
func expectInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want Invalid with %q", err, want)
	}
}

// TestVersionsAgree proves that the admission rule accepts exactly the
// versions in v1alpha1.CacheVersions: every listed version of an engine is
// accepted, and every other candidate, including the other engine's
// versions, is rejected.
func TestVersionsAgree(t *testing.T) {
	candidates := []string{"1.4", "1.5", "1.6", "1.6.38", "1.7", "6.2", "7.0", "7.2", "7.4", "7.4.2", "8.0", "latest", "x"}
	for engine, listed := range v1alpha1.CacheVersions {
		for _, v := range append(slices.Clone(listed), candidates...) {
			err := k8s.Create(context.Background(), newCache(engine, func(c *v1alpha1.Cache) { c.Spec.Version = v }))
			switch {
			case slices.Contains(listed, v) && err != nil:
				t.Errorf("%s %s is listed in Go but rejected: %v", engine, v, err)
			case !slices.Contains(listed, v) && err == nil:
				t.Errorf("%s %s is not listed in Go but admitted", engine, v)
			case !slices.Contains(listed, v):
				expectInvalid(t, err, "unsupported version")
			}
		}
	}
}

func TestEngineImmutable(t *testing.T) {
	c := newCache(v1alpha1.EngineMemcached)
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Engine = v1alpha1.EngineRedis
	expectInvalid(t, k8s.Update(context.Background(), c), "engine is immutable")
}

func TestDefaults(t *testing.T) {
	c := &v1alpha1.Cache{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"}}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.Engine != v1alpha1.EngineMemcached || *c.Spec.Replicas != 1 || c.Spec.Memory.String() != "64Mi" {
		t.Errorf("defaults: engine %q replicas %d memory %s", c.Spec.Engine, *c.Spec.Replicas, c.Spec.Memory)
	}
}

func TestRedisSettingsOnlyForRedis(t *testing.T) {
	err := k8s.Create(context.Background(), newCache(v1alpha1.EngineMemcached, func(c *v1alpha1.Cache) {
		c.Spec.Redis = &v1alpha1.RedisSettings{Persistence: &v1alpha1.RedisPersistence{Enabled: true}}
	}))
	expectInvalid(t, err, "apply only to engine redis")

	ok := newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) {
		c.Spec.Redis = &v1alpha1.RedisSettings{Persistence: &v1alpha1.RedisPersistence{Enabled: true}}
	})
	if err := k8s.Create(context.Background(), ok); err != nil {
		t.Fatalf("redis with persistence: %v", err)
	}
	if got := ok.Spec.Redis.Persistence.Size; got == nil || got.String() != "1Gi" {
		t.Errorf("persistence size default = %v", got)
	}
}

func TestPersistenceFixedAtCreation(t *testing.T) {
	c := newCache(v1alpha1.EngineRedis)
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Redis = &v1alpha1.RedisSettings{Persistence: &v1alpha1.RedisPersistence{Enabled: true}}
	expectInvalid(t, k8s.Update(context.Background(), c), "cannot be added or removed")

	p := newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) {
		c.Spec.Redis = &v1alpha1.RedisSettings{Persistence: &v1alpha1.RedisPersistence{Enabled: true}}
	})
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Redis.Persistence.Size = new(resource.MustParse("5Gi"))
	expectInvalid(t, k8s.Update(context.Background(), p), "redis.persistence is immutable")
	p.Spec.Redis.Persistence.Size = new(resource.MustParse("1Gi"))
	p.Spec.Redis.MaxMemoryPolicy = "allkeys-lfu"
	if err := k8s.Update(context.Background(), p); err != nil {
		t.Errorf("changing the eviction policy of a persistent redis: %v", err)
	}
}

func TestMemoryMinimum(t *testing.T) {
	err := k8s.Create(context.Background(), newCache(v1alpha1.EngineMemcached, func(c *v1alpha1.Cache) {
		c.Spec.Memory = new(resource.MustParse("8Mi"))
	}))
	expectInvalid(t, err, "memory must be at least 16Mi")
}

func TestName(t *testing.T) {
	c := newCache(v1alpha1.EngineMemcached)
	c.Name = "a-name-that-is-too-long-for-the-headless-service-of-redis"
	expectInvalid(t, k8s.Create(context.Background(), c), "at most 54 characters")
	c.Name = "9lives"
	expectInvalid(t, k8s.Create(context.Background(), c), "starts with a letter")
}
