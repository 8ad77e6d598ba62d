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

// Package status writes a Steward object's status subresource: once per
// reconcile, and only when it changed.
package status

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Write patches obj's status subresource to next, where current points at
// obj's status field, and writes nothing when next equals it. On success
// obj holds next. opts go to the merge patch, for example
// client.MergeFromWithOptimisticLock{} where a concurrent writer's change
// must not be overwritten.
//
// A reconcile that reads obj from a cache which has not seen the last write
// yet would write the same status again; Write remembers, per object, the
// version it last wrote on top of and what it wrote, and skips that repeat,
// or, with an optimistic lock, returns a Conflict as the server would have.
func Write[S any](ctx context.Context, c client.Client, obj client.Object, current *S, next S, opts ...client.MergeFromOption) error {
	if equality.Semantic.DeepEqual(*current, next) {
		return nil
	}
	sum, err := digest(next)
	if err != nil {
		return fmt.Errorf("writing status of %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	if written.repeats(obj, sum) {
		if optimistic(opts) {
			// The caller acts on a successful write (counts, announces):
			// a repeat from a stale copy is the conflict the lock would
			// have given, so that it does not act twice.
			return apierrors.NewConflict(schema.GroupResource{Resource: kindOf(obj)}, obj.GetName(),
				errors.New("the cached copy predates this process' last status write"))
		}
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	base := obj.GetResourceVersion()
	*current = next
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(orig, opts...)); err != nil {
		return fmt.Errorf("writing status of %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	written.remember(obj.GetUID(), base, obj.GetResourceVersion(), sum)
	log.FromContext(ctx).V(1).Info("Status updated")
	return nil
}

// optimistic reports whether the write asks for an optimistic lock.
func optimistic(opts []client.MergeFromOption) bool {
	for _, o := range opts {
		if _, ok := o.(client.MergeFromWithOptimisticLock); ok {
			return true
		}
	}
	return false
}

// lastWrite is the status last written for an object: on top of which
// resourceVersion, the resourceVersion it made, and its digest.
type lastWrite struct {
	base   string
	result string
	sum    [sha256.Size]byte
}

// writeLog remembers the last status write of each object.
type writeLog struct {
	mu     sync.Mutex
	byUID  map[types.UID]lastWrite
	maxLen int
}

// written is the process' log of status writes. It forgets everything when
// it holds more than maxLen objects: a forgotten object at worst has one
// status written twice.
var written = &writeLog{byUID: map[types.UID]lastWrite{}, maxLen: 100000}

// repeats reports whether writing a status with digest sum over obj as read
// would repeat the last write: obj is still the version that write was made
// on top of, and the status is the same.
func (l *writeLog) repeats(obj client.Object, sum [sha256.Size]byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.byUID[obj.GetUID()]
	return ok && obj.GetResourceVersion() != "" && last.base == obj.GetResourceVersion() && last.sum == sum
}

// remember records a status write made on top of resourceVersion base,
// which made resourceVersion result.
func (l *writeLog) remember(uid types.UID, base, result string, sum [sha256.Size]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.byUID) >= l.maxLen {
		clear(l.byUID)
	}
	l.byUID[uid] = lastWrite{base: base, result: result, sum: sum}
}

// OwnEcho reports whether obj, as a watch brings it, is the version that
// this process' last status write of it made: the echo of that write,
// which holds nothing its writer did not know. A version anyone else made,
// later or earlier, is not; neither is one of an object whose write the
// log forgot.
func OwnEcho(obj client.Object) bool { return written.made(obj) }

// made reports whether obj is the version the last status write of it
// made.
func (l *writeLog) made(obj client.Object) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.byUID[obj.GetUID()]
	return ok && obj.GetResourceVersion() != "" && last.result == obj.GetResourceVersion()
}

// digest is the SHA-256 of a status' JSON without its conditions'
// lastTransitionTime: a reconcile that computes the status again from a
// stale copy stamps a transition with its own time, yet writes the same
// status.
func digest(st any) ([sha256.Size]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return [sha256.Size]byte{}, err
	}
	if b, err = json.Marshal(withoutTransitionTimes(v)); err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// withoutTransitionTimes removes every lastTransitionTime key from v.
func withoutTransitionTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "lastTransitionTime")
		for k, e := range x {
			x[k] = withoutTransitionTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withoutTransitionTimes(e)
		}
	}
	return v
}

// kindOf is obj's kind: from its type, as typed objects read from a cache
// carry no kind.
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
