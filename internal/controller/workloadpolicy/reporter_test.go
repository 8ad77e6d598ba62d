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
	"reflect"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/workloadpolicy"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// countingRecorder counts the events of each reason and object, and
// passes them on.
type countingRecorder struct {
	events.EventRecorder
	mu     sync.Mutex
	counts map[string]int
}

func (r *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.mu.Lock()
	r.counts[fmt.Sprintf("%s %s", reason, regarding.(client.Object).GetName())]++
	r.mu.Unlock()
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r *countingRecorder) count(reason, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[reason+" "+name]
}

// startReporter runs the WorkloadPolicy reconciler until the test ends,
// watching only the namespaces watch if any, as the operator with
// --watch-namespaces does.
func startReporter(t *testing.T, watch ...string) *countingRecorder {
	t.Helper()
	opts := ctrl.Options{Scheme: k8s.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}}
	if len(watch) > 0 {
		opts.Cache.DefaultNamespaces = map[string]ctrlcache.Config{}
		for _, ns := range watch {
			opts.Cache.DefaultNamespaces[ns] = ctrlcache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := &countingRecorder{EventRecorder: mgr.GetEventRecorder("steward"), counts: map[string]int{}}
	r := &workloadpolicy.Reconciler{Client: mgr.GetClient(), Recorder: rec, Namespaces: watch}
	if err := r.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return rec
}

// expectStatus waits until the policy's status reports the violators,
// with the Compliant condition's status and message.
func expectStatus(t *testing.T, p *v1alpha1.WorkloadPolicy, violators []v1alpha1.PolicyViolator, compliant metav1.ConditionStatus, msg string) {
	t.Helper()
	apitest.Eventually(t, enforceTimeout, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		st := p.Status
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCompliant)
		switch {
		case st.ObservedGeneration != p.Generation:
			return fmt.Errorf("status of generation %d, want %d", st.ObservedGeneration, p.Generation)
		case !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady):
			return fmt.Errorf("not Ready: %+v", st.Conditions)
		case st.Violations != int32(len(violators)) || !reflect.DeepEqual(st.Violators, violators):
			return fmt.Errorf("%d violations %+v, want %+v", st.Violations, st.Violators, violators)
		case c == nil || c.Status != compliant || c.Message != msg:
			return fmt.Errorf("Compliant condition %+v, want %s with %q", c, compliant, msg)
		}
		return nil
	})
}

// TestReportsExistingViolators: objects that break a policy because their
// namespace joined its environment after them are listed in the policy's
// status and announced once with a Warning event each; they stay as they
// are, and leave the report once they comply or are deleted.
func TestReportsExistingViolators(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "reported", nil)
	tooMany := webApp(ns, "too-many", func(w *v1alpha1.WebApp) { w.Spec.Replicas = ptr.To[int32](50) })
	mirror := database(ns, "mirror", func(d *v1alpha1.Database) { d.Spec.Image = "postgres:16" })
	for _, o := range []client.Object{tooMany, mirror, webApp(ns, "fine")} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	p := &v1alpha1.WorkloadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "reporting"},
		Spec: v1alpha1.WorkloadPolicySpec{Environment: "reporting", MaxReplicas: ptr.To[int32](5),
			AllowedImages: []v1alpha1.ImageRule{{Prefix: "registry.acme.com/"}}},
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	rec := startReporter(t)
	expectStatus(t, p, nil, metav1.ConditionTrue, "No object breaks the policy")

	var nsObj corev1.Namespace
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{v1alpha1.DefaultEnvironmentLabel: "reporting"}
	if err := k8s.Update(ctx, &nsObj); err != nil {
		t.Fatal(err)
	}
	dbMsg := `spec.image: Invalid value: "postgres:16": reporting allows only images matching registry.acme.com/* (policy reporting)`
	appMsg := "spec.replicas: Invalid value: 50: reporting allows at most 5 (policy reporting)"
	expectStatus(t, p, []v1alpha1.PolicyViolator{
		{Kind: "Database", Namespace: ns, Name: "mirror", Message: dbMsg},
		{Kind: "WebApp", Namespace: ns, Name: "too-many", Message: appMsg},
	}, metav1.ConditionFalse, "2 objects break the policy: Database reported/mirror: "+dbMsg+"; WebApp reported/too-many: "+appMsg)

	// Each is announced once, with an event the API server stored.
	apitest.Eventually(t, enforceTimeout, func() error {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == v1alpha1.EventPolicyViolation && e.Regarding.Name == "too-many" && e.Type == corev1.EventTypeWarning &&
				e.Note == "Breaks WorkloadPolicy reporting, made after it or after its namespace's label: "+appMsg {
				return nil
			}
		}
		return fmt.Errorf("no PolicyViolation event on too-many among %d events", len(list.Items))
	})

	// Compliance takes an object off the report; a new object that
	// complies, a reconcile more, announces nothing again.
	tooMany.Spec.Replicas = ptr.To[int32](3)
	if err := k8s.Update(ctx, tooMany); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, webApp(ns, "fine-too")); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, p, []v1alpha1.PolicyViolator{{Kind: "Database", Namespace: ns, Name: "mirror", Message: dbMsg}},
		metav1.ConditionFalse, "1 object breaks the policy: Database reported/mirror: "+dbMsg)
	if err := k8s.Delete(ctx, mirror); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, p, nil, metav1.ConditionTrue, "No object breaks the policy")
	for _, name := range []string{"too-many", "mirror"} {
		if n := rec.count(v1alpha1.EventPolicyViolation, name); n != 1 {
			t.Errorf("%d PolicyViolation events on %s, want 1", n, name)
		}
	}
}

// TestReportsWatchedNamespacesOnly: an operator that watches some
// namespaces only (--watch-namespaces) reports the violators of those, and
// the policy's status names the namespaces of its environment it could not
// check, instead of failing or claiming they comply.
func TestReportsWatchedNamespacesOnly(t *testing.T) {
	ctx := context.Background()
	in, out := namespace(t, "scoped-in", nil), namespace(t, "scoped-out", nil)
	for _, ns := range []string{in, out} {
		if err := k8s.Create(ctx, webApp(ns, "too-many", func(w *v1alpha1.WebApp) { w.Spec.Replicas = ptr.To[int32](50) })); err != nil {
			t.Fatal(err)
		}
	}
	p := &v1alpha1.WorkloadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scoped"},
		Spec:       v1alpha1.WorkloadPolicySpec{Environment: "scoped", MaxReplicas: ptr.To[int32](5)},
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{in, out} {
		var nsObj corev1.Namespace
		if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
			t.Fatal(err)
		}
		nsObj.Labels = map[string]string{v1alpha1.DefaultEnvironmentLabel: "scoped"}
		if err := k8s.Update(ctx, &nsObj); err != nil {
			t.Fatal(err)
		}
	}
	startReporter(t, in)
	msg := "spec.replicas: Invalid value: 50: scoped allows at most 5 (policy scoped)"
	expectStatus(t, p, []v1alpha1.PolicyViolator{{Kind: "WebApp", Namespace: in, Name: "too-many", Message: msg}},
		metav1.ConditionFalse, "1 object breaks the policy: WebApp scoped-in/too-many: "+msg)
	ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
	want := "Checked the objects of the namespaces labelled " + v1alpha1.DefaultEnvironmentLabel +
		"=scoped; not those of scoped-out, which the operator does not watch (--watch-namespaces)"
	if ready.Message != want {
		t.Errorf("Ready message %q, want %q", ready.Message, want)
	}
}
