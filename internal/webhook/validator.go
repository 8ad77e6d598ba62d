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

package webhook

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// specValidator admits or refuses the objects of one kind by the problems
// it finds in their spec. A new object is checked. An update is checked
// only when it changes the spec of an object that is not being deleted: a
// stored spec that is invalid can only predate the webhook, and labels,
// annotations, finalizers and deletion must never be held up by it. A
// deletion is always admitted.
type specValidator[T client.Object] struct {
	// kind names the kind in the Invalid error.
	kind string
	// problems lists what is wrong with an object's spec.
	problems func(T) field.ErrorList
	// spec is the part of an object whose change is checked.
	spec func(T) any
}

// ValidateCreate checks a new object.
func (v specValidator[T]) ValidateCreate(_ context.Context, obj T) (admission.Warnings, error) {
	return nil, v.validate(obj)
}

// ValidateUpdate checks a changed spec.
func (v specValidator[T]) ValidateUpdate(_ context.Context, oldObj, newObj T) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(v.spec(oldObj), v.spec(newObj)) || !newObj.GetDeletionTimestamp().IsZero() {
		return nil, nil
	}
	return nil, v.validate(newObj)
}

// ValidateDelete admits every deletion.
func (specValidator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// validate returns an Invalid API error listing every problem, or nil.
func (v specValidator[T]) validate(obj T) error {
	errs := v.problems(obj)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind(v.kind).GroupKind(), obj.GetName(), errs)
}

// register serves v on the manager's webhook server at path.
func register[T client.Object](mgr ctrl.Manager, obj T, path string, v specValidator[T]) error {
	return ctrl.NewWebhookManagedBy(mgr, obj).
		WithValidator(v).
		WithValidatorCustomPath(path).
		Complete()
}
