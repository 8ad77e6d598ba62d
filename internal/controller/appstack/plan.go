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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// plan is what one reconcile does to a stack, decided without a client from
// what it observed: the components to create or update now, those held and
// why, those to delete because they left the spec, the objects at the
// stack's edges, and the status lines that follow.
type plan struct {
	// invalid is why the spec cannot be ordered: nothing is done.
	invalid error
	// steps are the components in dependency order, then the Ingress when
	// the spec has one.
	steps []step
	// removal deletes the components that left the spec.
	removal removal
	// deleteIngress is the stack's Ingress when the spec no longer has one.
	deleteIngress client.Object
	// monitors are the ServiceMonitors to apply, unwanted those to delete.
	monitors, unwanted []*unstructured.Unstructured
	// requeue is when to look again with no watch event: when a wait
	// reaches the dependency timeout, or while components are removed.
	requeue time.Duration
}

// entry is a component's status line, before it is written.
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

// step is one component's line of the plan: applied now, or held.
type step struct {
	entry
	// apply creates or updates the component now; otherwise it is held
	// (blocked).
	apply bool
	// held is what a held component waits for, without the timeout the
	// status line may add; timedOut tells that it has waited longer than
	// the stack's dependencyTimeout.
	held     string
	timedOut bool
	// why the component may be created now, for its event.
	why string
}

// planDeploy decides what to do with each of the stack's components.
//
// A component that does not exist yet is created only once every
// component it needs is Ready; one that exists is kept in step with the
// spec whatever its dependencies do. What a component needs is judged by
// the observed objects, as they are after the steps before it were carried
// out: an object just created or changed is not Ready yet, one that failed
// to apply is Degraded. The Ingress comes last, once the apps it routes to
// are Ready. prev are the stack's status lines (previous), which date the
// waits.
func planDeploy(stack *v1alpha1.AppStack, obs *observed, prev map[string]v1alpha1.StackComponentStatus, now time.Time) plan {
	if obs.invalid != nil {
		return plan{invalid: obs.invalid}
	}
	p := plan{removal: planRemoval(stack, obs.dropped, obs.backups, byRank(obs.dropped))}
	if len(obs.dropped) > 0 {
		p.requeue = poll
	}
	readiness := map[string]entry{}
	for _, c := range obs.components {
		s := planComponent(obs.graph, c, readiness)
		p.add(stack, s, prev, now)
		readiness[c.name] = s.entry
	}
	if s := planIngress(stack, obs.ingress, readiness); s != nil {
		p.add(stack, *s, prev, now)
	}
	if stack.Spec.Ingress == nil && obs.ingress.exists {
		p.deleteIngress = obs.ingress.live
	}
	p.monitors, p.unwanted = planMonitors(stack, obs)
	return p
}

// add appends a step, turning a long wait into a timeout.
func (p *plan) add(stack *v1alpha1.AppStack, s step, prev map[string]v1alpha1.StackComponentStatus, now time.Time) {
	if s.blocked {
		s.held = s.message
		p.requeue = minPositive(p.requeue, s.wait(stack.Spec.DependencyTimeout, prev, now))
	}
	p.steps = append(p.steps, s)
}

// planComponent decides about one component, given the status lines of
// the components before it.
func planComponent(g *appstack.Graph, c *component, readiness map[string]entry) step {
	s := step{entry: entry{c: c}, why: createdWhy(c.needs)}
	if blocker := firstNotReady(g, c, readiness); !c.exists && blocker != "" {
		dep := readiness[blocker]
		s.block(blocker, dep.c, fmt.Sprintf("waiting for %s %s: %s", strings.ToLower(dep.c.kind), blocker, dep.reason))
		return s
	}
	s.apply = true
	if p := c.problem; p != nil {
		s.reason, s.message, s.degraded = p.Reason, p.Message, true
		return s
	}
	s.ready, s.reason, s.message, s.degraded = c.readiness()
	s.degraded = s.degraded || s.reason == v1alpha1.ReasonApplyFailed || s.reason == v1alpha1.ReasonNameConflict
	return s
}

// firstNotReady is the first component c needs, in dependency order, that
// is not Ready, or "".
func firstNotReady(g *appstack.Graph, c *component, readiness map[string]entry) string {
	for _, name := range g.Order() {
		if slices.Contains(c.needs, name) && !readiness[name].ready {
			return name
		}
	}
	return ""
}

// planIngress decides about the stack's Ingress: it is created once every
// exposed app is Ready, and kept in step afterwards. It is nil when the
// spec has no ingress.
func planIngress(stack *v1alpha1.AppStack, in *component, readiness map[string]entry) *step {
	if stack.Spec.Ingress == nil {
		return nil
	}
	s := &step{entry: entry{c: in}, why: "the exposed apps are Ready"}
	for _, a := range exposedApps(stack) {
		if dep := readiness[a.Name]; !in.exists && !dep.ready {
			s.block(a.Name, dep.c, fmt.Sprintf("waiting for webapp %s: %s", a.Name, dep.reason))
			return s
		}
	}
	s.apply = true
	if p := in.problem; p != nil {
		s.reason, s.message, s.degraded = p.Reason, p.Message, true
		return s
	}
	s.ready, s.reason, s.message = true, "Routed", routes(stack)
	return s
}

// planMonitors lists the ServiceMonitors to apply, one per existing app
// when monitoring is on, and those of the stack to delete, when the cluster
// serves the kind.
func planMonitors(stack *v1alpha1.AppStack, obs *observed) (apply, unwanted []*unstructured.Unstructured) {
	if !obs.serviceMonitors {
		return nil, nil
	}
	want := map[string]bool{}
	for _, c := range obs.components {
		if c.kind == appstack.KindWebApp && c.exists && monitoringOn(stack) {
			want[c.object()] = true
			apply = append(apply, ServiceMonitor(stack, c.object()))
		}
	}
	for i := range obs.monitors {
		if !want[obs.monitors[i].GetName()] {
			unwanted = append(unwanted, &obs.monitors[i])
		}
	}
	return apply, unwanted
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

// wait turns a held step's wait into Degraded once it passes the timeout,
// counted from when its status line first said Blocked (prev, which holds
// that line while a new stack's status is held back); it returns how long
// until that happens, or 0.
func (s *step) wait(timeout *metav1.Duration, prev map[string]v1alpha1.StackComponentStatus, now time.Time) time.Duration {
	if timeout == nil {
		return 0
	}
	since := now
	if p, seen := prev[s.c.name]; seen && p.Reason == v1alpha1.ReasonBlocked && p.Since != nil {
		since = p.Since.Time
	}
	waited := now.Sub(since)
	if waited < timeout.Duration {
		return timeout.Duration - waited
	}
	s.degraded, s.timedOut = true, true
	s.message += fmt.Sprintf(" (waited longer than %s)", timeout.Duration)
	return 0
}

// minPositive is the lesser of two delays, where 0 means none.
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
