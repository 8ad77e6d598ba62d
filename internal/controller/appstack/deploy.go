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
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/conditions"
)

type updateEvent = event.UpdateEvent

// entry is a component's line in the status, before it is written.
type entry struct {
	c        *component
	ready    bool
	reason   string
	message  string
	blocked  bool
	degraded bool
	// waitsFor is the dependency a blocked component waits for, and
	// dependency its object when it exists.
	waitsFor   string
	dependency client.Object
}

// deploy creates and updates the components whose dependencies are Ready,
// holds the others, removes those no longer in the spec, and fills st.
func (r *Reconciler) deploy(ctx context.Context, stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus) (ctrl.Result, error) {
	g, err := appstack.NewGraph(&stack.Spec)
	if err != nil {
		setInvalid(stack, st, err)
		return ctrl.Result{}, nil
	}
	desired := appstack.Render(stack)
	r.addScrapeAnnotations(stack, desired)
	comps := components(stack, g, desired)
	byName := map[string]*component{}
	for _, c := range comps {
		if err := c.read(ctx, r.Client, stack.Namespace); err != nil {
			return ctrl.Result{}, err
		}
		byName[c.name] = c
	}

	removing, err := r.removeDropped(ctx, stack, byName)
	if err != nil {
		return ctrl.Result{}, err
	}

	now := time.Now()
	prev := map[string]v1alpha1.StackComponentStatus{}
	for _, cs := range stack.Status.Components {
		prev[cs.Name] = cs
	}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	entries := make([]entry, 0, len(comps))
	readiness := map[string]entry{}
	requeue := time.Duration(0)
	for _, c := range comps {
		e := entry{c: c}
		// The first dependency not Ready, in dependency order.
		blocker := ""
		for _, name := range g.Order() {
			if slices.Contains(g.Node(c.name).Needs, name) && !readiness[name].ready {
				blocker = name
				break
			}
		}
		if !c.exists && blocker != "" {
			dep := readiness[blocker]
			e.block(blocker, dep.c, fmt.Sprintf("waiting for %s %s: %s", strings.ToLower(dep.c.kind), blocker, dep.reason))
			requeue = minPositive(requeue, r.waited(stack, &e, prev, now))
			entries = append(entries, e)
			readiness[c.name] = e
			continue
		}
		r.forget(stack, c.name)
		created, err := r.isNew(ctx, c)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := applier.Apply(ctx, apply.Typed{Object: c.desired}, c.live, stack.UID); err != nil {
			reason, ok := apply.UserError(err)
			if !ok {
				return ctrl.Result{}, err
			}
			e.reason, e.message, e.degraded = reason, err.Error(), true
			entries = append(entries, e)
			readiness[c.name] = e
			continue
		}
		c.exists = true
		if created {
			r.Recorder.Eventf(stack, c.live, corev1.EventTypeNormal, v1alpha1.EventComponentCreated, "Create",
				"Created %s %s: %s", c.kind, c.object(), createdWhy(g.Node(c.name).Needs))
		}
		e.ready, e.reason, e.message, e.degraded = c.readiness()
		e.degraded = e.degraded || e.reason == v1alpha1.ReasonApplyFailed || e.reason == v1alpha1.ReasonNameConflict
		entries = append(entries, e)
		readiness[c.name] = e
	}

	ingress, err := r.reconcileIngress(ctx, stack, byName, readiness)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ingress != nil {
		if ingress.blocked {
			requeue = minPositive(requeue, r.waited(stack, ingress, prev, now))
		} else {
			r.forget(stack, ingress.c.name)
		}
		entries = append(entries, *ingress)
	}
	if err := r.reconcileMonitoring(ctx, stack, comps); err != nil {
		return ctrl.Result{}, err
	}

	st.Components = componentStatus(entries, prev, now)
	st.Effective = desired.Effective
	st.Endpoints = endpoints(stack, comps)
	setDeployStatus(stack, st, entries, removing)
	if removing > 0 {
		requeue = minPositive(requeue, poll)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// isNew reports whether the component's object does not exist yet. The
// cache may not have an object the stack created a moment ago; the API
// server is asked before the creation is announced.
func (r *Reconciler) isNew(ctx context.Context, c *component) (bool, error) {
	if c.exists {
		return false, nil
	}
	live := emptyObject(c.kind, c.object())
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.desired.GetNamespace(), Name: c.object()}, live)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// block marks the entry as waiting for the dependency, whose object is
// dep's when it exists.
func (e *entry) block(dependency string, dep *component, message string) {
	e.blocked, e.reason, e.message, e.waitsFor = true, v1alpha1.ReasonBlocked, message, dependency
	if dep != nil && dep.exists {
		e.dependency = dep.live
	}
}

// waitsForObject is the object a blocked entry waits for, the related
// object of its events (which keeps the events of different waits apart),
// or nil when it does not exist yet.
func (e *entry) waitsForObject() runtime.Object {
	if e.dependency == nil {
		return nil
	}
	return e.dependency
}

// waited turns a blocked entry's wait into Degraded once it passes the
// stack's dependencyTimeout, with an event the first time; it returns how
// long until that happens, or 0. A component newly Blocked gets an event.
func (r *Reconciler) waited(stack *v1alpha1.AppStack, e *entry, prev map[string]v1alpha1.StackComponentStatus, now time.Time) time.Duration {
	p, seen := prev[e.c.name]
	wasBlocked := seen && p.Reason == v1alpha1.ReasonBlocked && p.Since != nil
	// Announced once per dependency waited for: the reason of the wait
	// changes as the dependency progresses, and the status may be read from
	// a cache that has not seen the last write.
	if r.announce(stack, e.c.name, e.waitsFor) {
		r.Recorder.Eventf(stack, e.waitsForObject(), corev1.EventTypeNormal, v1alpha1.EventBlocked, "Deploy", "%s %s is held: %s", e.c.kind, e.c.name, e.message)
	}
	t := stack.Spec.DependencyTimeout
	if t == nil {
		return 0
	}
	since := now
	if wasBlocked {
		since = p.Since.Time
	}
	waited := now.Sub(since)
	if waited < t.Duration {
		return t.Duration - waited
	}
	e.degraded = true
	e.message += fmt.Sprintf(" (waited longer than %s)", t.Duration)
	if r.announce(stack, e.c.name+"/timeout", e.waitsFor) {
		r.Recorder.Eventf(stack, e.waitsForObject(), corev1.EventTypeWarning, v1alpha1.ReasonDependencyTimeout, "Deploy", "%s %s: %s", e.c.kind, e.c.name, e.message)
	}
	return 0
}

func minPositive(a, b time.Duration) time.Duration {
	if b <= 0 {
		return a
	}
	if a <= 0 || b < a {
		return b
	}
	return a
}

// createdWhy says why a component was created now.
func createdWhy(needs []string) string {
	if len(needs) == 0 {
		return "it depends on nothing"
	}
	return "its dependencies are Ready: " + strings.Join(needs, ", ")
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

// setDeployStatus sets the phase and conditions from the components.
func setDeployStatus(stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus, entries []entry, removing int) {
	var notReady, blocked, degraded []string
	for _, e := range entries {
		switch {
		case e.degraded:
			degraded = append(degraded, fmt.Sprintf("%s %s: %s", e.c.kind, e.c.name, e.message))
		case e.blocked:
			blocked = append(blocked, fmt.Sprintf("%s: %s", e.c.name, e.message))
		case !e.ready:
			notReady = append(notReady, fmt.Sprintf("%s (%s)", e.c.name, e.reason))
		}
	}
	degradedCond := conditions.False(v1alpha1.ReasonHealthy, "No component is degraded")
	if len(degraded) > 0 {
		reason := v1alpha1.ReasonComponentDegraded
		for _, e := range entries {
			if e.degraded && e.blocked {
				reason = v1alpha1.ReasonDependencyTimeout
				break
			}
		}
		degradedCond = conditions.True(reason, strings.Join(degraded, "; "))
	}
	progressing := conditions.False(v1alpha1.ReasonComponentsReady, "Every component is created and Ready")
	var waiting []string
	waiting = append(waiting, notReady...)
	waiting = append(waiting, blocked...)
	switch {
	case len(blocked) > 0:
		progressing = conditions.True(v1alpha1.ReasonBlocked, strings.Join(waiting, "; "))
	case len(notReady) > 0:
		progressing = conditions.True(v1alpha1.ReasonDeploying, "Not Ready yet: "+strings.Join(notReady, ", "))
	case removing > 0:
		progressing = conditions.True(v1alpha1.ReasonDeleting, fmt.Sprintf("Removing %d components no longer in the spec", removing))
	}
	ready := conditions.True(v1alpha1.ReasonComponentsReady, fmt.Sprintf("All %d components are Ready", len(entries)))
	switch {
	case degradedCond.Status == metav1.ConditionTrue:
		ready = conditions.False(degradedCond.Reason, degradedCond.Message)
	case progressing.Status == metav1.ConditionTrue:
		ready = conditions.False(progressing.Reason, progressing.Message)
	}
	conditions.Set(&st.Conditions, stack.Generation, ready, progressing, degradedCond)
	switch {
	case degradedCond.Status == metav1.ConditionTrue:
		st.Phase = v1alpha1.AppStackDegraded
	case progressing.Status == metav1.ConditionTrue && anyCreated(entries):
		st.Phase = v1alpha1.AppStackDeploying
	case progressing.Status == metav1.ConditionTrue:
		st.Phase = v1alpha1.AppStackPending
	default:
		st.Phase = v1alpha1.AppStackReady
	}
}

func anyCreated(entries []entry) bool {
	for _, e := range entries {
		if e.c.exists {
			return true
		}
	}
	return false
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
