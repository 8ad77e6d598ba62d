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

package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/steward-dev/steward/api/v1alpha1"
)

var testDesc = prometheus.NewDesc("steward_condition_true_since_timestamp_seconds", "h",
	[]string{"kind", "namespace", "name", "condition", "reason"}, nil)

// fakeCache lists a fake client's objects and hands out fake informers,
// whose events the test sends. While notCached, it answers as the
// operator's cache does for a kind no controller watches yet.
type fakeCache struct {
	client.Reader
	informers *informertest.FakeInformers
	notCached bool
	// listErr, when set, is what every list answers.
	listErr error
}

func (c *fakeCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if c.listErr != nil {
		return c.listErr
	}
	if c.notCached {
		gvk, err := kindOfList(list)
		if err != nil {
			return err
		}
		return fmt.Errorf("listing: %w", &cache.ErrResourceNotCached{GVK: gvk})
	}
	return c.Reader.List(ctx, list, opts...)
}

func (c *fakeCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if c.notCached {
		return nil, errors.New("an informer was asked for while the kind is not cached: it would start one")
	}
	return c.informers.GetInformerForKind(ctx, gvk, opts...)
}

// elected is the channel of a manager already elected.
func elected() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestConditionsFollowTheInformer: while the kind is not cached (the leader
// before its controllers started), a scrape succeeds with no series of it
// and starts no informer; another failure of the list fails the scrape;
// once the controllers' informer exists, scrapes list until it has
// delivered its objects, then read what its events said (adds, updates,
// deletes, deletes seen late).
func TestConditionsFollowTheInformer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	since := metav1.NewTime(time.Unix(1_800_000_000, 0))
	app := func(name, degraded string) *v1alpha1.WebApp {
		return &v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "a"}, Status: v1alpha1.WebAppStatus{Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionStatus(degraded), Reason: "CrashLooping", Message: "m", LastTransitionTime: since},
		}}}
	}
	series := func(names ...string) string {
		out := "# HELP steward_condition_true_since_timestamp_seconds h\n# TYPE steward_condition_true_since_timestamp_seconds gauge\n"
		for _, n := range names {
			out += `steward_condition_true_since_timestamp_seconds{condition="Degraded",kind="WebApp",name="` + n + `",namespace="a",reason="CrashLooping"} 1.8e+09` + "\n"
		}
		return out
	}
	// The fake client keeps "listed" Degraded throughout: a series for it
	// after the informer synced would come from a list.
	c := &fakeCache{
		Reader:    fake.NewClientBuilder().WithScheme(scheme).WithObjects(app("listed", "True")).Build(),
		informers: &informertest.FakeInformers{Scheme: scheme},
		notCached: true,
	}
	collector := newConditionsCollector(c, elected(), testDesc)
	if err := testutil.CollectAndCompare(collector, strings.NewReader("")); err != nil {
		t.Errorf("a scrape of kinds not cached: %v, want no series and no error", err)
	}
	c.listErr = errors.New("the API server is gone")
	if err := testutil.CollectAndCompare(collector, strings.NewReader("")); err == nil || !strings.Contains(err.Error(), c.listErr.Error()) {
		t.Errorf("a scrape whose list failed: %v, want the list's error", err)
	}
	c.listErr = nil

	c.notCached = false
	informer := controllertest.NewFakeInformer() // started, not synced
	c.informers.InformersByGVK = map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		v1alpha1.GroupVersion.WithKind("WebApp"): informer,
	}
	if err := testutil.CollectAndCompare(collector, strings.NewReader(series("listed"))); err != nil {
		t.Errorf("before the informer synced: %v", err)
	}

	informer.Add(app("listed", "True"))
	informer.Add(app("other", "True"))
	informer.Synced()
	if err := testutil.CollectAndCompare(collector, strings.NewReader(series("listed", "other"))); err != nil {
		t.Errorf("after the informer synced: %v", err)
	}
	informer.Update(app("listed", "True"), app("listed", "False"))
	if err := testutil.CollectAndCompare(collector, strings.NewReader(series("other"))); err != nil {
		t.Errorf("after a problem ended: %v", err)
	}
	informer.Add(app("third", "True"))
	informer.Add(app("fourth", "True"))
	informer.Delete(app("other", "True"))
	// A delete the informer learned of late comes as a tombstone.
	var webapps *follower[troubled]
	for _, k := range collector.kinds {
		if k.name == "WebApp" {
			webapps = k.objects
		}
	}
	webapps.handler().OnDelete(toolscache.DeletedFinalStateUnknown{Key: "a/fourth", Obj: app("fourth", "True")})
	if err := testutil.CollectAndCompare(collector, strings.NewReader(series("third"))); err != nil {
		t.Errorf("after deletes: %v", err)
	}
}

// TestPhasesOnlyFromTheLeader: a replica waiting for the leadership reports
// no phase series even of a kind it caches (a sum over the replicas would
// count the objects twice); the leader, while it watches no such kind yet,
// reports none either rather than zeros it does not know, and its scrape
// succeeds; once the kind is cached, every phase is reported, zero or not;
// a list that fails otherwise fails the scrape. An object without a phase
// yet, whose first status is not written, counts as Pending.
func TestPhasesOnlyFromTheLeader(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := &fakeCache{
		Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(
			&v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "a"},
				Status: v1alpha1.WebAppStatus{Phase: v1alpha1.WebAppRunning}},
			&v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "a"}}).Build(),
		informers: &informertest.FakeInformers{Scheme: scheme},
	}
	leading := make(chan struct{})
	collector := newListPhaseCollector(c, leading, func() client.ObjectList { return &v1alpha1.WebAppList{} },
		"webapps", "WebApp", []string{"Pending", "Running"},
		func(o client.Object) string { return string(o.(*v1alpha1.WebApp).Status.Phase) })
	if err := testutil.CollectAndCompare(collector, strings.NewReader("")); err != nil {
		t.Errorf("a scrape of a replica not elected: %v, want no series and no error", err)
	}

	close(leading)
	c.notCached = true
	if err := testutil.CollectAndCompare(collector, strings.NewReader("")); err != nil {
		t.Errorf("a scrape of a kind not cached: %v, want no series and no error", err)
	}
	c.notCached = false
	// The controllers' informer exists, not synced yet: the scrape lists.
	c.informers.InformersByGVK = map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		v1alpha1.GroupVersion.WithKind("WebApp"): controllertest.NewFakeInformer(),
	}
	want := "# HELP steward_webapps Number of WebApp objects in each phase.\n# TYPE steward_webapps gauge\n" +
		`steward_webapps{phase="Pending"} 1` + "\n" + `steward_webapps{phase="Running"} 1` + "\n"
	if err := testutil.CollectAndCompare(collector, strings.NewReader(want)); err != nil {
		t.Errorf("a scrape of a kind cached: %v", err)
	}
	c.listErr = errors.New("the API server is gone")
	if err := testutil.CollectAndCompare(collector, strings.NewReader("")); err == nil || !strings.Contains(err.Error(), c.listErr.Error()) {
		t.Errorf("a scrape whose list failed: %v, want the list's error", err)
	}
}
