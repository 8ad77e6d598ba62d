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

package appstack

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// recalled is what this process last computed of one stack's status: its
// component lines, written or held back, and whether it wrote a status of
// the stack. It only makes up for a status the API server does not have
// yet (held back during the first rollout, or written a moment ago and not
// in the cache): a process that has none, after a restart or on another
// replica, reads the written status and loses at most the precision of the
// since of lines changed during a hold.
type recalled struct {
	uid   types.UID
	lines map[string]v1alpha1.StackComponentStatus
	wrote bool
}

// recall returns what this process last computed of the stack's status,
// empty for a stack it has not reconciled, or one of the same name
// recreated since.
func (r *Reconciler) recall(stack *v1alpha1.AppStack) recalled {
	v, ok := r.recalled.Load(client.ObjectKeyFromObject(stack))
	if !ok || v.(recalled).uid != stack.UID {
		return recalled{uid: stack.UID}
	}
	return v.(recalled)
}

// remember keeps the status lines just computed for the stack, and whether
// the status was written.
func (r *Reconciler) remember(stack *v1alpha1.AppStack, lines []v1alpha1.StackComponentStatus, wrote bool) {
	rec := recalled{uid: stack.UID, lines: make(map[string]v1alpha1.StackComponentStatus, len(lines)), wrote: wrote || r.recall(stack).wrote}
	for _, l := range lines {
		rec.lines[l.Name] = l
	}
	r.recalled.Store(client.ObjectKeyFromObject(stack), rec)
}

// forgetStack drops what was recalled of a stack that is gone or being
// deleted.
func (r *Reconciler) forgetStack(key client.ObjectKey) {
	r.recalled.Delete(key)
}

// previous are the stack's status lines by component: the written ones,
// except where the line this process computed last differs in readiness or
// reason, because the status was held back or the cache has not seen the
// write yet. That line's since, when the change was first seen, is then
// the truth a status write made now would have lost.
func previous(stack *v1alpha1.AppStack, rec recalled) map[string]v1alpha1.StackComponentStatus {
	prev := map[string]v1alpha1.StackComponentStatus{}
	for _, cs := range stack.Status.Components {
		prev[cs.Name] = cs
	}
	for name, l := range rec.lines {
		if w, ok := prev[name]; !ok || w.Ready != l.Ready || w.Reason != l.Reason {
			prev[name] = l
		}
	}
	return prev
}

// statusWritten reports whether the stack has a status written by the
// operator, as read or as this process remembers writing it.
func statusWritten(stack *v1alpha1.AppStack, rec recalled) bool {
	return rec.wrote || v1alpha1.StatusWritten(stack.Status.ObservedGeneration, stack.Status.Conditions)
}
