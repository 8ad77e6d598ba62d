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

package appstack_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/appstack"
	"github.com/steward-dev/steward/internal/metrics"
)

// TestANewStackWritesItsStatusOnceWhenReady runs a reconciler that holds
// a new stack's status back, as the operator's does, one reconcile at a
// time: while the components are created in order and start, nothing is
// written to the stack and kstatus reads it as in progress; the status is
// written once, at Ready, with each line dated from when its change was
// seen, not from the write; one event names the components created, in
// order; after that, each creation has its own event again.
func TestANewStackWritesItsStatusOnceWhenReady(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) {
		s.Labels = map[string]string{ownReconciler: "true"}
	}))
	r := &appstack.Reconciler{
		Client: k8s, APIReader: k8s, Recorder: recorder,
		HasServiceMonitors: func() bool { return false }, StatusSettle: time.Hour,
	}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: stackKey(ns)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	db := named(&v1alpha1.Database{}, ns, "shop-db")
	cache := named(&v1alpha1.Cache{}, ns, "shop-cache")
	config := named(&v1alpha1.AppConfig{}, ns, "shop-config")
	backend := named(&v1alpha1.WebApp{}, ns, "shop-backend")
	frontend := named(&v1alpha1.WebApp{}, ns, "shop-frontend")

	// 1. What depends on nothing is created; the stack gets its finalizer
	// and no status.
	if res := reconcile(); res.RequeueAfter <= 0 {
		t.Errorf("held without a requeue: %+v", res)
	}
	for _, obj := range []client.Object{db, cache, config} {
		if !exists(t, obj) {
			t.Fatalf("%s not created by the first reconcile", obj.GetName())
		}
	}
	rv := heldStack(t, ns, "after the first reconcile").ResourceVersion

	// 2. Each step of the rollout writes nothing to the stack.
	setReady(t, config, true, "RolledOut")
	setReady(t, db, true, "Available")
	setReady(t, cache, true, "Available")
	reconcile()
	if !exists(t, backend) {
		t.Fatal("the backend was not created once its dependencies were Ready")
	}
	setReady(t, backend, true, "Available")
	reconcile()
	if !exists(t, frontend) {
		t.Fatal("the frontend was not created once the backend was Ready")
	}
	if got := heldStack(t, ns, "while the apps are created").ResourceVersion; got != rv {
		t.Errorf("the stack was written while its status was held: resourceVersion %s, then %s", rv, got)
	}
	if created := stackEvents(t, ns, v1alpha1.EventComponentCreated); len(created) != 0 {
		t.Errorf("Created events while the status is held: %v", created)
	}
	seen := time.Now()
	time.Sleep(2 * time.Second) // the since of a line is in whole seconds

	// 3. Ready: the status is written, its lines dated when the reconciler
	// saw them change, and the stack's time to its first Ready observed
	// once.
	setReady(t, frontend, true, "Available")
	observed := firstReadyObservations(t)
	reconcile()
	if n := firstReadyObservations(t) - observed; n != 1 {
		t.Errorf("steward_time_to_first_ready_seconds{kind=AppStack}: %d observations at the first Ready, want 1", n)
	}
	if !exists(t, named(&networkingv1.Ingress{}, ns, "shop")) {
		t.Fatal("no Ingress once the apps were Ready")
	}
	s := &v1alpha1.AppStack{}
	if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
	if s.Status.Phase != v1alpha1.AppStackReady || ready == nil || ready.Status != metav1.ConditionTrue || s.Status.ObservedGeneration != s.Generation {
		t.Fatalf("phase %s, Ready %+v, observedGeneration %d; want Ready at generation %d", s.Status.Phase, ready, s.Status.ObservedGeneration, s.Generation)
	}
	if got := kstatusOf(t, ns); got != kstatus.CurrentStatus {
		t.Errorf("kstatus %s once Ready, want Current", got)
	}
	if s.Status.FirstReadyTime == nil || !s.Status.FirstReadyTime.Equal(&ready.LastTransitionTime) {
		t.Errorf("firstReadyTime %v, want the time it became Ready, %v", s.Status.FirstReadyTime, ready.LastTransitionTime)
	}
	for _, line := range s.Status.Components {
		if line.Name == "frontend" || line.Name == "ingress" {
			continue // Ready at the write
		}
		if !line.Ready || line.Since == nil || line.Since.After(seen) || ready.LastTransitionTime.Sub(line.Since.Time) < 2*time.Second {
			t.Errorf("%s: ready %v since %v; want Ready since it was seen so, before %s, not at the write %s",
				line.Name, line.Ready, line.Since, seen.Format(time.RFC3339Nano), ready.LastTransitionTime.Format(time.RFC3339))
		}
	}

	// 4. One event names what was created, in dependency order.
	want := "Created Database shop-db, Cache shop-cache, AppConfig shop-config, WebApp shop-backend, WebApp shop-frontend, Ingress shop, in dependency order"
	eventually(t, func() error {
		if got := stackEvents(t, ns, v1alpha1.EventComponentCreated); !slices.Equal(got, []string{want}) {
			return fmt.Errorf("Created events %q, want one: %q", got, want)
		}
		return nil
	})
	rv = s.ResourceVersion
	reconcile()
	if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
		t.Fatal(err)
	}
	if s.ResourceVersion != rv {
		t.Errorf("a Ready stack was written again with nothing changed")
	}
	if n := firstReadyObservations(t) - observed; n != 1 {
		t.Errorf("steward_time_to_first_ready_seconds{kind=AppStack}: %d observations after a second reconcile, want still 1", n)
	}

	// 5. After the first write, each creation has its own event at once.
	s.Spec.Apps = append(s.Spec.Apps, v1alpha1.StackApp{Name: "worker", WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/worker:1.0"}})
	if err := k8s.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	reconcile()
	eventually(t, func() error {
		if got := events(t, ns, v1alpha1.EventComponentCreated); !slices.Equal(got, []string{"shop-worker"}) {
			return fmt.Errorf("Created events about %v, want shop-worker", got)
		}
		return nil
	})
}

// firstReadyObservations is how many AppStacks this process saw Ready for
// the first time.
func firstReadyObservations(t *testing.T) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := metrics.TimeToFirstReady.WithLabelValues("AppStack").(prometheus.Histogram).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// heldStack reads the stack, whose status must not be written yet: it
// holds only the CRD's default, which kstatus reads as in progress.
func heldStack(t *testing.T, ns, when string) *v1alpha1.AppStack {
	t.Helper()
	s := &v1alpha1.AppStack{}
	if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
		t.Fatal(err)
	}
	if s.Status.ObservedGeneration != -1 || len(s.Status.Conditions) != 0 || len(s.Status.Components) != 0 {
		t.Errorf("%s: status written: %+v", when, s.Status)
	}
	if got := kstatusOf(t, ns); got != kstatus.InProgressStatus {
		t.Errorf("%s: kstatus %s, want InProgress", when, got)
	}
	return s
}

// kstatusOf is what kstatus reads of the test's stack.
func kstatusOf(t *testing.T, ns string) kstatus.Status {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AppStack"))
	if err := k8s.Get(context.Background(), stackKey(ns), u); err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// stackEvents are the notes of the stack's events with reason, in order.
func stackEvents(t *testing.T, ns, reason string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "AppStack" {
			out = append(out, e.Note)
		}
	}
	return out
}
