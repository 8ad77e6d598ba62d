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
