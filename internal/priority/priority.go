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

// Package priority puts a user's edits ahead of the rest of a controller's
// work queue.
package priority

import (
	"context"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// SpecChange is the queue priority of an object whose spec changed. A
// user's edit then overtakes the flood of child status updates and new
// objects of a bulk create, so it is rolled out within seconds.
const SpecChange = 10

// SpecChangesFirst enqueues objects whose spec (generation) changed at
// SpecChange. Watch the kind with it beside For: the For watch enqueues
// every event at the default priority, and the queue keeps the higher.
func SpecChangesFirst() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() {
				return
			}
			enqueueAt(q, e.ObjectNew, SpecChange)
		},
	}
}

// Recheck is the priority of a look again, without a watch event, at an
// object that waits on its user (an invalid spec, a Secret that does not
// exist): below new objects, spec changes and every other event, so that
// a thousand broken objects do not delay a valid one.
const Recheck = -10

// MaxRecheck bounds the delay between looks at an object that waits on its
// user: the delay grows with the wait up to it.
const MaxRecheck = 5 * time.Minute

// RecheckAfter looks again at an object that has waited on its user for
// waited: after as long again, between lo and hi, at priority Recheck. The
// checks thin out as the wait goes on (1, 2, 4 minutes ... after the problem
// began, for lo one minute), and any change to the object is still seen at
// once through its watch.
func RecheckAfter(waited, lo, hi time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: min(max(waited, lo), hi), Priority: new(Recheck)}
}

// Echo is the queue priority of an update that changed nothing the
// controllers act on, only an object's status or its finalizers: most often
// the echo of the operator's own writes (a first reconcile adds the
// finalizer and writes the status, which comes back as two updates). It is
// below new objects, spec changes and child events, above rechecks: the
// next reconcile of such an object has nothing new to do in most cases, and
// a thousand of them (the echoes of a bulk create) would otherwise hold a
// new object back behind them.
const Echo = -1

// NotEcho is the For watch's predicate that leaves an echo (see Echo) to
// EchoesLast.
func NotEcho() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !echo(e.ObjectOld, e.ObjectNew) }}
}

// EchoesLast enqueues an echo (an update that changed only the status or
// the finalizers) at Echo. Watch the kind with it beside a For watch
// filtered by NotEcho.
func EchoesLast() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if echo(e.ObjectOld, e.ObjectNew) {
				enqueueAt(q, e.ObjectNew, Echo)
			}
		},
	}
}

// echo reports whether an update left the object's spec (its generation)
// and the metadata the controllers act on (labels, annotations, deletion,
// owners) as they were. A finalizer added or removed is not acted on: the
// deletion is, which sets the deletion timestamp.
func echo(old, obj client.Object) bool {
	return old.GetGeneration() == obj.GetGeneration() &&
		old.GetDeletionTimestamp().Equal(obj.GetDeletionTimestamp()) &&
		maps.Equal(old.GetLabels(), obj.GetLabels()) &&
		maps.Equal(old.GetAnnotations(), obj.GetAnnotations()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), obj.GetOwnerReferences())
}

// enqueueAt adds obj to q at priority prio, or plainly to a queue without
// priorities.
func enqueueAt(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, prio int) {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(prio)}, req)
		return
	}
	q.Add(req)
}
