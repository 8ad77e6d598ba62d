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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// announce emits the events of a reconcile, in the order of the plan: what
// carrying it out did (Deleted, FinalBackup, Created) and, when it was
// carried out in full, the waits it reports (Blocked, DependencyTimeout).
// A component created before the stack's first status write has no event
// of its own: announceFirstWrite names it with the others.
func (r *Reconciler) announce(stack *v1alpha1.AppStack, p plan, out outcome, complete, written bool) {
	r.announceRemoval(stack, out.removed)
	for _, s := range p.steps {
		if written && slices.Contains(out.created, s.c) {
			r.Recorder.Eventf(stack, s.c.live, corev1.EventTypeNormal, v1alpha1.EventComponentCreated, "Create",
				"Created %s %s: %s", s.c.kind, s.c.object(), s.why)
		}
		if complete {
			r.announceWait(stack, s)
		}
	}
}

// announceFirstWrite emits, with the stack's first status write, one
// Created event that names the components created so far, in dependency
// order. A new stack's status is held back while its components are
// created and start (holdFor), and so are the events that would tell each
// step: this one says what was done, and the status lines say since when.
func (r *Reconciler) announceFirstWrite(stack *v1alpha1.AppStack, p plan) {
	var names []string
	for _, s := range p.steps {
		if s.c.exists && metav1.IsControlledBy(s.c.live, stack) {
			names = append(names, s.c.kind+" "+s.c.object())
		}
	}
	if len(names) == 0 {
		return
	}
	r.Recorder.Eventf(stack, nil, corev1.EventTypeNormal, v1alpha1.EventComponentCreated, "Create",
		"Created %s, in dependency order", strings.Join(names, ", "))
}

// announceRemoval emits an event for each removal step done: a final
// backup asked for, or a component deleted.
func (r *Reconciler) announceRemoval(stack *v1alpha1.AppStack, removed []removeStep) {
	for _, s := range removed {
		if s.backup != nil {
			r.Recorder.Eventf(stack, s.backup, corev1.EventTypeNormal, v1alpha1.ReasonFinalBackup, "Delete",
				"Taking the final backup of Database %s before deleting it", s.c.object())
			continue
		}
		r.Recorder.Eventf(stack, s.c.live, corev1.EventTypeNormal, v1alpha1.EventComponentDeleted, "Delete",
			"Deleted %s %s", s.c.kind, s.c.object())
	}
}

// announceWait emits the events of a held step: Blocked once per
// dependency it waits for, for a component that exists (a change to it is
// held), and DependencyTimeout once that wait is too long. A component not
// created yet waits as the dependency order says: its status line says so,
// and its Created event says why now. The reason of the wait changes as the dependency progresses, and
// the status may be read from a cache that has not seen the last write:
// what was announced is remembered instead. A step not held forgets it.
func (r *Reconciler) announceWait(stack *v1alpha1.AppStack, s step) {
	if !s.blocked {
		r.forget(stack, s.c.name)
		return
	}
	if s.c.exists && r.firstNotice(stack, s.c.name, s.waitsFor) {
		r.Recorder.Eventf(stack, s.waitsForObject(), corev1.EventTypeNormal, v1alpha1.EventBlocked, "Deploy",
			"%s %s is held: %s", s.c.kind, s.c.name, s.held)
	}
	if s.timedOut && r.firstNotice(stack, s.c.name+"/timeout", s.waitsFor) {
		r.Recorder.Eventf(stack, s.waitsForObject(), corev1.EventTypeWarning, v1alpha1.ReasonDependencyTimeout, "Deploy",
			"%s %s: %s", s.c.kind, s.c.name, s.message)
	}
}

// firstNotice reports whether the wait, what the component waits for, is
// new for it, and remembers it.
func (r *Reconciler) firstNotice(stack *v1alpha1.AppStack, component, wait string) bool {
	key := string(stack.UID) + "/" + component
	prev, loaded := r.announced.Swap(key, wait)
	return !loaded || prev.(string) != wait
}

// forget drops what was announced for a component that no longer waits.
func (r *Reconciler) forget(stack *v1alpha1.AppStack, component string) {
	r.announced.Delete(string(stack.UID) + "/" + component)
	r.announced.Delete(string(stack.UID) + "/" + component + "/timeout")
}
