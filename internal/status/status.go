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
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Write patches obj's status subresource to next, where current points at
// obj's status field, and writes nothing when next equals it. On success
// obj holds next. opts go to the merge patch, for example
// client.MergeFromWithOptimisticLock{} where a concurrent writer's change
// must not be overwritten.
func Write[S any](ctx context.Context, c client.Client, obj client.Object, current *S, next S, opts ...client.MergeFromOption) error {
	if equality.Semantic.DeepEqual(*current, next) {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	*current = next
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(orig, opts...)); err != nil {
		return fmt.Errorf("writing status of %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	log.FromContext(ctx).V(1).Info("Status updated")
	return nil
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
