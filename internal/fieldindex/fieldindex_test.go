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

package fieldindex

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// TestRegisteredOnFirstLookup: against a real API server, an index first
// looked up after its kind's informer has started and synced (as a
// controller's watch starts it) indexes the objects the informer already
// holds, and those that come after; eight first lookups at once register
// it once, and each finds the same objects.
func TestRegisteredOnFirstLookup(t *testing.T) {
	env, err := apitest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := apitest.Namespace(t, k8s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create := func(name, db string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"db": db}}
		if err := k8s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	create("a", "orders")
	create("b", "users")
	create("c", "orders")

	c, err := cache.New(env.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	byDB := New(c, &corev1.ConfigMap{}, "data.db", func(o client.Object) []string {
		if db := o.(*corev1.ConfigMap).Data["db"]; db != "" {
			return []string{db}
		}
		return nil
	})
	names := func(value string) ([]string, error) {
		list := &corev1.ConfigMapList{}
		if err := byDB.List(ctx, c, list, ns, value); err != nil {
			return nil, err
		}
		var out []string
		for _, cm := range list.Items {
			out = append(out, cm.Name)
		}
		slices.Sort(out)
		return out, nil
	}

	var wg sync.WaitGroup
	found := make([][]string, 8)
	errs := make([]error, 8)
	for i := range found {
		wg.Go(func() { found[i], errs[i] = names("orders") })
	}
	wg.Wait()
	for i := range found {
		if errs[i] != nil || !slices.Equal(found[i], []string{"a", "c"}) {
			t.Errorf("first lookup %d: %q, %v: want [a c]", i, found[i], errs[i])
		}
	}

	create("d", "orders")
	apitest.Eventually(t, time.Minute, func() error {
		got, err := names("orders")
		if err != nil || !slices.Equal(got, []string{"a", "c", "d"}) {
			return fmt.Errorf("%q, %w: want [a c d]", got, err)
		}
		return nil
	})
	if got, err := names("users"); err != nil || !slices.Equal(got, []string{"b"}) {
		t.Errorf("users: %q, %v: want [b]", got, err)
	}
}
