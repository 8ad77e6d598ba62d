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

// Package apply writes child objects, and only when they need it: a
// reconcile that changes nothing sends nothing. A new child is created with
// one Create; a child that needs a change is changed with server-side apply.
//
// Two checks decide whether a child needs a change:
//   - the hash of the desired configuration, stored in an annotation on the
//     live object, catches every change Steward itself makes, including fields
//     it stops setting (which server-side apply then removes);
//   - a subset comparison of the desired configuration against the live
//     object catches drift: someone else changed a field Steward sets.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// HashAnnotation holds the hash of the configuration Steward last applied.
const HashAnnotation = "steward.dev/applied-hash"

// FieldOwner is the field manager of every server-side apply Steward makes.
const FieldOwner = "steward"

// Conflict is returned when an object with the child's name exists but is not
// controlled by the owner: Steward never takes over objects it did not create,
// nor the children of another of its objects (a Cache and a Database of the
// same name both want a StatefulSet of that name).
type Conflict struct {
	Kind, Name string
	// Owner is the kind and name of the object that controls it, such as
	// "Database orders", when it has a controller.
	Owner string
}

func (e *Conflict) Error() string {
	if e.Owner != "" {
		return fmt.Sprintf("a %s named %q already exists and belongs to %s; rename one of them", e.Kind, e.Name, e.Owner)
	}
	return fmt.Sprintf("a %s named %q already exists and is not managed by Steward; rename or delete one of them", e.Kind, e.Name)
}

// conflict is the Conflict of desired's kind and name with obj.
func conflict(kind string, obj client.Object) *Conflict {
	c := &Conflict{Kind: kind, Name: obj.GetName()}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		c.Owner = ref.Kind + " " + ref.Name
	}
	return c
}

// CreateFieldOwner is the field manager of the Create that makes a child
// the cache does not have. Before the first apply of a changed
// configuration to that child, its fields are handed over to FieldOwner
// (upgradeCreated), so that an apply which stops setting a field removes it.
const CreateFieldOwner = "steward-create"

// Applier applies child objects of one owner kind.
type Applier struct {
	// Client writes, and reads from the cache.
	Client client.Client
	// Reader reads from the API server, bypassing the cache. It is used for a
	// child that needs a change: the cache strips the managed fields, may lag
	// behind Steward's own writes, and holds only objects labelled as
	// Steward's.
	Reader client.Reader
}

// Apply makes the live object match desired. current holds the live object as
// read from the cache, or is zero (no UID) when the cache does not have it;
// afterwards it holds the live object. desired must carry its apiVersion,
// kind, name and namespace. ownerUID is the UID of the owner that controls
// the child.
//
// A child the cache does not have is created with one Create, which fails
// when an object of that name exists: Steward's own not yet cached, or
// someone else's, which is never overwritten. Only then is it read from the
// API server. A child that needs a change is read from the API server and
// changed with server-side apply.
func (a Applier) Apply(ctx context.Context, desired runtime.ApplyConfiguration, current client.Object, ownerUID types.UID) error {
	want, err := toMap(desired)
	if err != nil {
		return err
	}
	hash, err := hashOf(want)
	if err != nil {
		return err
	}
	setAnnotation(want, HashAnnotation, hash)
	u := &unstructured.Unstructured{Object: want}

	if current.GetUID() != "" {
		if ref := metav1.GetControllerOfNoCopy(current); ref != nil && ref.UID != ownerUID {
			// The cache holds every object labelled as Steward's, the
			// children of other Steward objects too. One without a
			// controller was released by an earlier owner of the same name
			// (a Database's kept Secrets) for the caller to adopt.
			return conflict(u.GetKind(), current)
		}
		if ok, err := upToDate(current, want, hash); ok || err != nil {
			return err
		}
		return a.update(ctx, u, hash, current, ownerUID, true)
	}

	created, err := createObject(u, current)
	if err != nil {
		return err
	}
	err = a.Client.Create(ctx, created, client.FieldOwner(CreateFieldOwner))
	switch {
	case err == nil:
		return setCreated(created, current)
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return a.update(ctx, u, hash, current, ownerUID, false)
}

// update reads the child from the API server and applies u to it unless it
// is up to date there. An object of the child's name that another owner
// controls is a Conflict; so is one without a controller, unless adopt
// (the cache has it: it is labelled as Steward's, released by an earlier
// owner of the same name).
func (a Applier) update(ctx context.Context, u *unstructured.Unstructured, hash string, current client.Object, ownerUID types.UID, adopt bool) error {
	exists, err := a.lookUp(ctx, u, current, ownerUID, adopt)
	if err != nil {
		return err
	}
	if exists {
		if ok, err := upToDate(current, u.Object, hash); ok || err != nil {
			return err
		}
		// A field leaves only with a change of the desired configuration,
		// which changes its hash; drift alone needs no hand-over.
		if current.GetAnnotations()[HashAnnotation] != hash {
			if err := a.upgradeCreated(ctx, current); err != nil {
				return err
			}
		}
	}
	// An object deleted since the cache saw it is created again by the apply.
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return decode(u, current)
}

// upgradeCreated hands the fields that the Create of live set over to
// FieldOwner's apply, once per child, before the first apply of a changed
// configuration. Without it, an apply that stops setting one of them would
// leave it in place: server-side apply removes only the fields that no
// other field manager owns. live must be read from the API server (the
// cache strips managed fields). The patch carries live's resourceVersion:
// a concurrent change fails it, and the reconcile is retried.
func (a Applier) upgradeCreated(ctx context.Context, live client.Object) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(CreateFieldOwner), FieldOwner)
	if err != nil || patch == nil {
		return err
	}
	if err := a.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("handing the fields of %s over to server-side apply: %w", live.GetName(), err)
	}
	return nil
}

// createObject is the object that creates u: for a Kubernetes kind, a
// typed object of current's type, which the client sends and receives as
// protobuf, cheaper for the API server and for Steward than the JSON of an
// unstructured object; for any other kind, a copy of u. (A typed custom
// resource would encode its empty fields too, and the API server would
// record them as set by the create.) Either way the API server decodes the
// same object and records the same fields.
func createObject(u *unstructured.Unstructured, current client.Object) (client.Object, error) {
	if _, ok := current.(runtime.Unstructured); ok || !clientgoscheme.Scheme.Recognizes(u.GroupVersionKind()) {
		return u.DeepCopy(), nil
	}
	obj := reflect.New(reflect.TypeOf(current).Elem()).Interface().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return obj, nil
}

// setCreated copies the object created, as the API server returned it, into
// current.
func setCreated(created, current client.Object) error {
	if u, ok := created.(*unstructured.Unstructured); ok {
		return decode(u, current)
	}
	reflect.ValueOf(current).Elem().Set(reflect.ValueOf(created).Elem())
	return nil
}

// decode copies the object the API server returned into current.
func decode(u *unstructured.Unstructured, current client.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, current); err != nil {
		return fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// upToDate reports whether the live object carries hash, the desired
// configuration's, and every field want sets. Typed objects read from the
// API server have no apiVersion and kind; they are the desired ones by
// construction.
func upToDate(current client.Object, want map[string]any, hash string) (bool, error) {
	if current.GetAnnotations()[HashAnnotation] != hash {
		return false, nil
	}
	live, err := toMap(current)
	if err != nil {
		return false, err
	}
	live["apiVersion"], live["kind"] = want["apiVersion"], want["kind"]
	return Contains(live, want), nil
}

// lookUp reads the child from the API server into current, and reports
// whether it exists. An object of the child's name that the owner does not
// control is a Conflict, except, when adopt, one without a controller.
func (a Applier) lookUp(ctx context.Context, u *unstructured.Unstructured, current client.Object, ownerUID types.UID, adopt bool) (bool, error) {
	err := a.Reader.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, current)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking up %s %s: %w", u.GetKind(), u.GetName(), err)
	case controlledBy(current, ownerUID), adopt && metav1.GetControllerOfNoCopy(current) == nil:
		return true, nil
	default:
		return false, conflict(u.GetKind(), current)
	}
}

// Delete removes obj when it exists (has a UID) and is controlled by the
// object with ownerUID. Objects that Steward does not control are left alone.
func (a Applier) Delete(ctx context.Context, obj client.Object, ownerUID types.UID) error {
	if obj.GetUID() == "" || !controlledBy(obj, ownerUID) {
		return nil
	}
	uid := obj.GetUID()
	err := a.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy("Background"))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s: %w", obj.GetName(), err)
	}
	return nil
}

func controlledBy(obj client.Object, ownerUID types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == ownerUID {
			return true
		}
	}
	return false
}

// Contains reports whether every field set in want has the same value in
// live. Maps may hold extra keys; each element of a list in want must match
// some element of the live list, so items added by other field managers are
// tolerated, as server-side apply itself tolerates them.
func Contains(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			lv, ok := l[k]
			if !ok {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !Contains(lv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return len(w) == 0 && live == nil
		}
		for _, wv := range w {
			found := false
			for _, lv := range l {
				if Contains(lv, wv) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(live, want)
	}
}

// isEmpty reports values a live object read into its Go type leaves out:
// what the API server drops when it stores an object, and the empty string,
// which a typed field omits (an env var's `value: ""` reads back without
// `value`). false and 0 are not empty: a pointer field that held them and
// is gone (an unset allowPrivilegeEscalation) is drift.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case string:
		return t == ""
	}
	return false
}

func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding object: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	return m, nil
}

func hashOf(m map[string]any) (string, error) {
	raw, err := json.Marshal(m) // map keys are sorted: the encoding is stable
	if err != nil {
		return "", fmt.Errorf("hashing object: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]), nil
}

func setAnnotation(m map[string]any, key, value string) {
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[key] = value
}

// Optional turns a nil builder result into a nil interface, so a child the
// spec does not ask for can be told from one it does.
func Optional[T any, P interface {
	*T
	runtime.ApplyConfiguration
}](p P) runtime.ApplyConfiguration {
	if p == nil {
		return nil
	}
	return p
}

// UserError tells an apply's problems that only the user can fix, with the
// condition reason to report, from transient ones worth a retry.
func UserError(err error) (reason string, ok bool) {
	var conflict *Conflict
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &conflict):
		return v1alpha1.ReasonNameConflict, true
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return v1alpha1.ReasonApplyFailed, true
	}
	return "", false
}

// Convert turns an API value into its apply configuration. Both share one
// JSON form, so the round trip is exact.
func Convert[T any](v any) *T {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", v, err)) // API types always encode
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		panic(fmt.Sprintf("decoding into %T: %v", out, err))
	}
	return out
}

// ControllerReference is the owner reference that makes owner, of kind gvk,
// the controller of a child applied with server-side apply: deleting the
// owner deletes the child, and the owner's watch sees the child's changes.
func ControllerReference(gvk schema.GroupVersionKind, owner metav1.Object) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(owner.GetName()).
		WithUID(owner.GetUID()).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
