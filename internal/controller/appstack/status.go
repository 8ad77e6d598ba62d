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
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
)

// computeStatus is the stack's status once the plan for its generation was
// carried out: the status lines of the plan's steps, the effective
// settings, the endpoints, and the phase and conditions that sum them up.
// It is pure: status lines keep their since from prev (previous), and
// conditions their transition time, when they do not change.
func computeStatus(stack *v1alpha1.AppStack, obs *observed, p plan, prev map[string]v1alpha1.StackComponentStatus, now time.Time) v1alpha1.AppStackStatus {
	st := *stack.Status.DeepCopy()
	st.ObservedGeneration = stack.Generation
	if p.invalid != nil {
		setInvalid(stack, &st, p.invalid)
		return st
	}
	entries := make([]entry, 0, len(p.steps))
	for _, s := range p.steps {
		entries = append(entries, s.entry)
	}
	st.Components = componentStatus(entries, prev, now)
	st.Effective = obs.desired.Effective
	st.Endpoints = endpoints(stack, obs.components)
	setDeployStatus(stack, &st, entries, len(p.removal.left))
	if ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); st.FirstReadyTime == nil && ready.Status == metav1.ConditionTrue {
		// Now, or, for a stack Ready before, when it last became so.
		st.FirstReadyTime = ready.LastTransitionTime.DeepCopy()
	}
	return st
}

// firstReady reports whether next makes the stack Ready for the first time:
// it sets firstReadyTime on a stack that was not Ready.
func firstReady(stack *v1alpha1.AppStack, next v1alpha1.AppStackStatus) bool {
	return stack.Status.FirstReadyTime == nil && next.FirstReadyTime != nil &&
		!meta.IsStatusConditionTrue(stack.Status.Conditions, v1alpha1.ConditionReady)
}

// holdFor is how long to hold back writing next, a new stack's status,
// while its components are created in order and start: until it is Ready,
// runs into a problem (a component Degraded, a wait timed out, an invalid
// spec), or settle has passed since the stack's creation
// (v1alpha1.SettleDelay). Zero means write now.
func holdFor(stack *v1alpha1.AppStack, next v1alpha1.AppStackStatus, settle time.Duration, now time.Time) time.Duration {
	if settle <= 0 {
		return 0
	}
	return v1alpha1.SettleDelay(stack.CreationTimestamp.Time, settle, stack.Status.ObservedGeneration, next.ObservedGeneration,
		stack.Status.Conditions, next.Conditions, now, v1alpha1.ReasonBlocked, v1alpha1.ReasonDeploying)
}

// setInvalid reports a spec the graph cannot order.
func setInvalid(stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus, err error) {
	st.Phase = v1alpha1.AppStackDegraded
	conditions.Set(&st.Conditions, stack.Generation,
		conditions.False(v1alpha1.ReasonInvalidSpec, err.Error()),
		conditions.False(v1alpha1.ReasonInvalidSpec, "Nothing is created until the spec is fixed"),
		conditions.True(v1alpha1.ReasonInvalidSpec, err.Error()))
}

// componentStatus turns entries into status lines, keeping since when
// neither readiness nor reason changed.
func componentStatus(entries []entry, prev map[string]v1alpha1.StackComponentStatus, now time.Time) []v1alpha1.StackComponentStatus {
	out := make([]v1alpha1.StackComponentStatus, 0, len(entries))
	for _, e := range entries {
		cs := v1alpha1.StackComponentStatus{
			Name: e.c.name, Kind: e.c.kind, Object: e.c.object(), Ready: e.ready, Reason: e.reason, Message: e.message,
		}
		if p, ok := prev[cs.Name]; ok && p.Ready == cs.Ready && p.Reason == cs.Reason && p.Since != nil {
			cs.Since = p.Since
		} else {
			t := metav1.NewTime(now)
			cs.Since = &t
		}
		out = append(out, cs)
	}
	return out
}

// tally is the components that keep a stack from being Ready, described
// for its conditions.
type tally struct {
	notReady, blocked, degraded []string
	// timedOut tells that a degraded component is held.
	timedOut bool
}

// tallyOf sorts the entries by what keeps them from being Ready.
func tallyOf(entries []entry) tally {
	var t tally
	for _, e := range entries {
		switch {
		case e.degraded:
			t.degraded = append(t.degraded, fmt.Sprintf("%s %s: %s", e.c.kind, e.c.name, e.message))
			t.timedOut = t.timedOut || e.blocked
		case e.blocked:
			t.blocked = append(t.blocked, fmt.Sprintf("%s: %s", e.c.name, e.message))
		case !e.ready:
			t.notReady = append(t.notReady, fmt.Sprintf("%s (%s)", e.c.name, e.reason))
		}
	}
	return t
}

// setDeployStatus sets the phase and conditions from the components, and
// how many components left the spec and are being removed.
func setDeployStatus(stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus, entries []entry, removing int) {
	t := tallyOf(entries)
	degraded := degradedCondition(t)
	progressing := progressingCondition(t, removing)
	ready := conditions.True(v1alpha1.ReasonComponentsReady, fmt.Sprintf("All %d components are Ready", len(entries)))
	switch {
	case degraded.Status == metav1.ConditionTrue:
		ready = conditions.False(degraded.Reason, degraded.Message)
	case progressing.Status == metav1.ConditionTrue:
		ready = conditions.False(progressing.Reason, progressing.Message)
	}
	conditions.Set(&st.Conditions, stack.Generation, ready, progressing, degraded)
	switch {
	case degraded.Status == metav1.ConditionTrue:
		st.Phase = v1alpha1.AppStackDegraded
	case progressing.Status == metav1.ConditionTrue && anyCreated(entries):
		st.Phase = v1alpha1.AppStackDeploying
	case progressing.Status == metav1.ConditionTrue:
		st.Phase = v1alpha1.AppStackPending
	default:
		st.Phase = v1alpha1.AppStackReady
	}
}

// degradedCondition is True when a component is degraded, or has waited
// for a dependency for too long.
func degradedCondition(t tally) conditions.Cond {
	if len(t.degraded) == 0 {
		return conditions.False(v1alpha1.ReasonHealthy, "No component is degraded")
	}
	reason := v1alpha1.ReasonComponentDegraded
	if t.timedOut {
		reason = v1alpha1.ReasonDependencyTimeout
	}
	return conditions.True(reason, strings.Join(t.degraded, "; "))
}

// progressingCondition is True while a component is held or not Ready
// yet, or components that left the spec are being removed.
func progressingCondition(t tally, removing int) conditions.Cond {
	switch {
	case len(t.blocked) > 0:
		waiting := slices.Concat(t.notReady, t.blocked)
		return conditions.True(v1alpha1.ReasonBlocked, strings.Join(waiting, "; "))
	case len(t.notReady) > 0:
		return conditions.True(v1alpha1.ReasonDeploying, "Not Ready yet: "+strings.Join(t.notReady, ", "))
	case removing > 0:
		return conditions.True(v1alpha1.ReasonDeleting, fmt.Sprintf("Removing %d components no longer in the spec", removing))
	}
	return conditions.False(v1alpha1.ReasonComponentsReady, "Every component is created and Ready")
}

// anyCreated reports whether any component's object exists.
func anyCreated(entries []entry) bool {
	return slices.ContainsFunc(entries, func(e entry) bool { return e.c.exists })
}

// endpoints lists the ingress URL and each app's URL.
func endpoints(stack *v1alpha1.AppStack, comps []*component) []v1alpha1.StackEndpoint {
	var out []v1alpha1.StackEndpoint
	if in := stack.Spec.Ingress; in != nil {
		scheme := "http"
		if in.TLSSecretName != "" {
			scheme = "https"
		}
		out = append(out, v1alpha1.StackEndpoint{Name: "ingress", URL: scheme + "://" + in.Host + "/"})
	}
	for _, c := range comps {
		if app, ok := c.live.(*v1alpha1.WebApp); ok && c.exists && app.Status.URL != "" {
			out = append(out, v1alpha1.StackEndpoint{Name: c.name, URL: app.Status.URL})
		}
	}
	return out
}

// teardownStatus is the status of a stack being deleted, once the removal
// was carried out: what is left, and what the deletion waits for or why
// it stopped.
func teardownStatus(stack *v1alpha1.AppStack, rm removal) v1alpha1.AppStackStatus {
	st := *stack.Status.DeepCopy()
	st.ObservedGeneration = stack.Generation
	st.Phase = v1alpha1.AppStackDeleting
	names := make([]string, 0, len(rm.left))
	for _, c := range rm.left {
		names = append(names, c.kind+" "+c.object())
	}
	slices.Sort(names)
	left := strings.Join(names, ", ")
	switch {
	case rm.failure != "":
		conditions.Set(&st.Conditions, stack.Generation,
			conditions.False(v1alpha1.ReasonFinalBackupFailed, rm.failure),
			conditions.False(v1alpha1.ReasonFinalBackupFailed, "Deletion is stopped"),
			conditions.True(v1alpha1.ReasonFinalBackupFailed, rm.failure))
	case rm.waiting != "":
		conditions.Set(&st.Conditions, stack.Generation,
			conditions.False(v1alpha1.ReasonDeleting, "Deleting in reverse order: "+rm.waiting),
			conditions.True(v1alpha1.ReasonDeleting, "Left: "+left),
			conditions.False(v1alpha1.ReasonHealthy, "Nothing stops the deletion"))
	default:
		conditions.Set(&st.Conditions, stack.Generation,
			conditions.False(v1alpha1.ReasonDeleting, "Deleting: "+left),
			conditions.True(v1alpha1.ReasonDeleting, "Left: "+left),
			conditions.False(v1alpha1.ReasonHealthy, "Nothing stops the deletion"))
	}
	return st
}
