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

package manager

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// TestCacheNamespaces: the cache's DefaultNamespaces in each mode.
func TestCacheNamespaces(t *testing.T) {
	protected := DefaultProtectedNamespaces()

	// Cluster-wide: every namespace, by a field selector that leaves the
	// protected ones out.
	got, err := cacheNamespaces(Options{ProtectedNamespaces: protected})
	if err != nil {
		t.Fatal(err)
	}
	if keys := slices.Collect(maps.Keys(got)); len(keys) != 1 || keys[0] != cache.AllNamespaces {
		t.Fatalf("cluster-wide: namespaces %q, want only AllNamespaces", keys)
	}
	sel := got[cache.AllNamespaces].FieldSelector
	if want := "metadata.namespace!=kube-node-lease,metadata.namespace!=kube-public,metadata.namespace!=kube-system"; sel.String() != want {
		t.Errorf("cluster-wide: field selector %q, want %q", sel, want)
	}
	for ns, want := range map[string]bool{"kube-system": false, "kube-public": false, "kube-node-lease": false, "default": true, "shop": true} {
		if sel.Matches(fields.Set{"metadata.namespace": ns}) != want {
			t.Errorf("cluster-wide: namespace %s watched: %v, want %v", ns, !want, want)
		}
	}

	// Namespaced: those namespaces, without selectors.
	got, err = cacheNamespaces(Options{WatchNamespaces: []string{"team-a", "team-b"}, ProtectedNamespaces: protected})
	if err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"team-a", "team-b"}) {
		t.Errorf("namespaced: namespaces %q, want team-a, team-b", keys)
	}
	for ns, c := range got {
		if c.FieldSelector != nil || c.LabelSelector != nil {
			t.Errorf("namespaced: %s has selectors %+v", ns, c)
		}
	}

	// Nothing protected: every namespace, as controller-runtime's default.
	if got, err = cacheNamespaces(Options{}); err != nil || got != nil {
		t.Errorf("nothing protected: %v, %v; want nil", got, err)
	}

	for _, bad := range []struct {
		opts Options
		want string
	}{
		{Options{WatchNamespaces: []string{"team-a", "kube-system"}, ProtectedNamespaces: protected},
			"--watch-namespaces lists kube-system, which --protected-namespaces protects"},
		{Options{WatchNamespaces: []string{"Team_A"}}, `--watch-namespaces: "Team_A" is not a namespace name`},
		{Options{WatchNamespaces: []string{"a", "a"}}, "--watch-namespaces lists a twice"},
		{Options{ProtectedNamespaces: []string{"kube-system", ""}}, `--protected-namespaces: "" is not a namespace name`},
	} {
		if _, err := cacheNamespaces(bad.opts); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want %q", bad.opts, err, bad.want)
		}
	}
}

func TestSplitNamespaces(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{{"", nil}, {"a", []string{"a"}}, {"a,b", []string{"a", "b"}}, {" a , ,b,", []string{"a", "b"}}} {
		if got := SplitNamespaces(c.in); !slices.Equal(got, c.want) {
			t.Errorf("SplitNamespaces(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCacheWatchesItsNamespaces builds caches as New does, against a real
// API server, with Steward's Secrets in a watched, an unwatched and a
// protected namespace: each mode's cache holds exactly its namespaces'
// (the API server accepts the field selector), and Namespaces, being
// cluster-scoped, are listed in full in both.
func TestCacheWatchesItsNamespaces(t *testing.T) {
	env, err := apitest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	k8s, err := client.New(env.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b", "other", "kube-system"} {
		if ns != "kube-system" {
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steward-owned",
			Labels: map[string]string{labels.ManagedByKey: labels.ManagedBy}}}
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	for _, mode := range []struct {
		name string
		opts Options
		want []string
	}{
		{"cluster-wide", Options{ProtectedNamespaces: DefaultProtectedNamespaces()}, []string{"other", "team-a", "team-b"}},
		{"namespaced", Options{WatchNamespaces: []string{"team-a", "team-b"}, ProtectedNamespaces: DefaultProtectedNamespaces()}, []string{"team-a", "team-b"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			namespaces, err := cacheNamespaces(mode.opts)
			if err != nil {
				t.Fatal(err)
			}
			c, err := cache.New(env.Config, cache.Options{
				Scheme:            Scheme(),
				ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: labels.ManagedSelector()}},
				DefaultNamespaces: namespaces,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			go func() { _ = c.Start(ctx) }()
			if !c.WaitForCacheSync(ctx) {
				t.Fatal("the cache did not start")
			}
			var secrets corev1.SecretList
			if err := c.List(ctx, &secrets); err != nil {
				t.Fatal(err)
			}
			var seen []string
			for _, s := range secrets.Items {
				seen = append(seen, s.Namespace)
			}
			slices.Sort(seen)
			if !slices.Equal(seen, mode.want) {
				t.Errorf("the cache holds Secrets of %q, want %q", seen, mode.want)
			}
			var all corev1.NamespaceList
			if err := c.List(ctx, &all); err != nil {
				t.Fatal(err)
			}
			if len(all.Items) < 4 {
				t.Errorf("the cache lists %d Namespaces, want every one", len(all.Items))
			}
		})
	}
}
