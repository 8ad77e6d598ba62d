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

package priority

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestSpecChangesGoFirst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := SpecChangesFirst()

	// A status-only update: generation unchanged, nothing enqueued here.
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "shop", Generation: 1}}
	statusOnly := old.DeepCopy()
	statusOnly.Labels = map[string]string{"touched": "yes"}
	h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: statusOnly}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("an update without a spec change enqueued %d items", n)
	}

	// Another object waits at the default priority; the edited one overtakes it.
	q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "prod", Name: "other"}})
	edited := old.DeepCopy()
	edited.Generation++
	h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: edited}, q)

	item, prio, _ := q.GetWithPriority()
	if item.Name != "shop" || prio != SpecChange {
		t.Errorf("first out: %s at priority %d, want shop at %d", item.Name, prio, SpecChange)
	}
}

// TestEchoesLast: an update that changed only the status or the
// finalizers waits behind an object at the default priority (a new one, a
// child's event), and the For watch's predicate leaves it out; any other
// update is the For watch's.
func TestEchoesLast(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h, pred := EchoesLast(), NotEcho()

	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "echo", Generation: 1}}
	status := old.DeepCopy()
	status.Status.Phase = corev1.PodRunning
	finalizer := old.DeepCopy()
	finalizer.Name = "finalizer"
	finalizer.Finalizers = []string{"steward.dev/finalizer"}
	for _, e := range []event.UpdateEvent{{ObjectOld: old, ObjectNew: status}, {ObjectOld: old, ObjectNew: finalizer}} {
		if pred.Update(e) {
			t.Errorf("the For watch's predicate lets an echo through: %s", e.ObjectNew.GetName())
		}
		h.Update(context.Background(), e, q)
	}
	q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "prod", Name: "new"}})

	for _, want := range []struct {
		name string
		prio int
	}{{"new", 0}, {"echo", Echo}, {"finalizer", Echo}} {
		item, prio, _ := q.GetWithPriority()
		if item.Name != want.name || prio != want.prio {
			t.Errorf("out: %s at priority %d, want %s at %d", item.Name, prio, want.name, want.prio)
		}
		q.Done(item)
	}

	for what, change := range map[string]func(*corev1.Pod){
		"spec":       func(p *corev1.Pod) { p.Generation++ },
		"label":      func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} },
		"annotation": func(p *corev1.Pod) { p.Annotations = map[string]string{"steward.dev/switchover": "any"} },
		"deletion":   func(p *corev1.Pod) { p.DeletionTimestamp = new(metav1.Now()) },
	} {
		upd := old.DeepCopy()
		change(upd)
		if !pred.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: upd}) {
			t.Errorf("a %s change is left out of the For watch", what)
		}
		h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: upd}, q)
		if n := q.Len(); n != 0 {
			t.Errorf("a %s change was enqueued at Echo too", what)
		}
	}
}
