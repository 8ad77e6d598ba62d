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

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// stackScenario is the AppStack kind. Its measure is stacks: bulk creates
// of AppStacks against the same components created directly. The
// convergence, change and isolation measures do not apply to it (an
// AppStack's children are Steward objects of three kinds, which one raw
// child kind cannot stand for), so Edit and Applied are never called and
// New makes no invalid stacks.
type stackScenario struct{}

// The components of every stack: a backend bound to a database and a
// cache, and a frontend that depends on the backend.
const (
	stackDB       = "db"
	stackCache    = "cache"
	stackBackend  = "backend"
	stackFrontend = "frontend"
)

// stackComponents is the number of components of a stack.
const stackComponents = 4

func (stackScenario) Kind() string { return "AppStack" }

func (stackScenario) Empty() client.Object { return &v1alpha1.AppStack{} }

func (stackScenario) Child() client.Object { return &v1alpha1.WebApp{} }

// stack is a development stack: one PostgreSQL Database (one instance,
// 10Gi), one memcached Cache, a backend bound to both and a frontend that
// depends on the backend.
func (stackScenario) stack(ns, name string) *v1alpha1.AppStack {
	return &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AppStackSpec{
			Environment: v1alpha1.StackDevelopment,
			Databases:   []v1alpha1.StackDatabase{{Name: stackDB}},
			Caches:      []v1alpha1.StackCache{{Name: stackCache}},
			Apps: []v1alpha1.StackApp{
				{Name: stackBackend, WebAppSpec: v1alpha1.WebAppSpec{
					Image:    "registry.example/backend:1",
					Database: &v1alpha1.WebAppBinding{Ref: stackDB},
					Cache:    &v1alpha1.WebAppBinding{Ref: stackCache},
				}},
				{Name: stackFrontend, DependsOn: []string{stackBackend}, WebAppSpec: v1alpha1.WebAppSpec{
					Image: "registry.example/frontend:1",
				}},
			},
		},
	}
}

func (s stackScenario) New(ns string, i int, _ bool) client.Object {
	return s.stack(ns, fmt.Sprintf("stack-%05d", i))
}

func (stackScenario) Converged(obj client.Object) bool {
	s, ok := obj.(*v1alpha1.AppStack)
	return ok && s.Status.ObservedGeneration == s.Generation &&
		meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady)
}

func (stackScenario) Waiting(client.Object) bool { return false }

// Raw returns the i-th stack's components created directly, with the specs
// the AppStack controller renders for them: the baseline. Nothing orders
// them but the backend's bindings, which make it wait for its Database and
// Cache itself; the frontend does not wait for the backend.
func (s stackScenario) Raw(ns string, i int) []client.Object {
	stack := s.stack(ns, fmt.Sprintf("base-%05d", i))
	d := appstack.Render(stack)
	om := func(component string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: appstack.ObjectName(stack, component)}
	}
	return []client.Object{
		&v1alpha1.Database{ObjectMeta: om(stackDB), Spec: d.Databases[stackDB]},
		&v1alpha1.Cache{ObjectMeta: om(stackCache), Spec: d.Caches[stackCache]},
		&v1alpha1.WebApp{ObjectMeta: om(stackBackend), Spec: d.Apps[stackBackend]},
		&v1alpha1.WebApp{ObjectMeta: om(stackFrontend), Spec: d.Apps[stackFrontend]},
	}
}

// componentObjects are empty objects named for a stack's components, in
// the order of Raw.
func componentObjects(stack *v1alpha1.AppStack) []client.Object {
	om := func(component string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: stack.Namespace, Name: appstack.ObjectName(stack, component)}
	}
	return []client.Object{
		&v1alpha1.Database{ObjectMeta: om(stackDB)}, &v1alpha1.Cache{ObjectMeta: om(stackCache)},
		&v1alpha1.WebApp{ObjectMeta: om(stackBackend)}, &v1alpha1.WebApp{ObjectMeta: om(stackFrontend)},
	}
}

func (stackScenario) RawConverged(obj client.Object) bool { return componentReady(obj) }

func (stackScenario) Edit(int) []byte { return nil }

func (stackScenario) Applied(client.Object, int) bool { return false }

// componentReady reports whether a Database, Cache or WebApp is Ready at
// its current generation.
func componentReady(obj client.Object) bool {
	var conds []metav1.Condition
	var observed int64
	switch o := obj.(type) {
	case *v1alpha1.Database:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	case *v1alpha1.Cache:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	case *v1alpha1.WebApp:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	default:
		return false
	}
	return observed == obj.GetGeneration() && meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReady)
}

// readySince is when a component's Ready condition last turned True, as
// its controller wrote it (whole seconds).
func readySince(obj client.Object) (time.Time, bool) {
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1alpha1.Database:
		conds = o.Status.Conditions
	case *v1alpha1.Cache:
		conds = o.Status.Conditions
	case *v1alpha1.WebApp:
		conds = o.Status.Conditions
	}
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// stackRound is one round of the stacks measure: a bulk create of AppStacks
// and one of the same components created directly, in fresh namespaces.
type stackRound struct {
	// StackSeconds runs from the first AppStack create until every stack
	// is Ready; BaselineSeconds from the first component create until every
	// component is Ready.
	StackSeconds    float64 `json:"stackSeconds"`
	BaselineSeconds float64 `json:"baselineSeconds"`
	// StackReadySeconds are each stack's time from its create to Ready;
	// BaselineReadySeconds each baseline stack's time from the create of
	// its first component until its last is Ready.
	StackReadySeconds    []float64 `json:"stackReadySeconds"`
	BaselineReadySeconds []float64 `json:"baselineReadySeconds"`
	// ComponentReadyP50 is, for each component, the median time from its
	// stack's create (or its first component's, directly) until it was
	// Ready; BaselineComponentReadyP50 the same directly.
	ComponentReadyP50         map[string]float64 `json:"componentReadyP50Seconds"`
	BaselineComponentReadyP50 map[string]float64 `json:"baselineComponentReadyP50Seconds"`
	// Violations are the components created before a dependency was
	// Ready, by the timestamps (whole seconds) and by resourceVersion.
	Violations []string `json:"violations,omitempty"`
	// Requests are the operator's requests from the first create until it
	// was quiet after the last Ready.
	Requests         requestCounts `json:"requests"`
	BaselineRequests requestCounts `json:"baselineRequests"`
	// Controller is the AppStack controller's work in the same span.
	Controller controllerWork `json:"controller"`
}

// controllerWork is a controller's reconciles, the seconds they took and
// the seconds requests waited in its queue, from controller-runtime's
// metrics.
type controllerWork struct {
	Reconciles       float64 `json:"reconciles"`
	ReconcileSeconds float64 `json:"reconcileSeconds"`
	Queued           float64 `json:"queued"`
	QueueSeconds     float64 `json:"queueSeconds"`
}

func (c controllerWork) minus(before controllerWork) controllerWork {
	return controllerWork{
		Reconciles: c.Reconciles - before.Reconciles, ReconcileSeconds: c.ReconcileSeconds - before.ReconcileSeconds,
		Queued: c.Queued - before.Queued, QueueSeconds: c.QueueSeconds - before.QueueSeconds,
	}
}

func (c controllerWork) plus(d controllerWork) controllerWork {
	return controllerWork{
		Reconciles: c.Reconciles + d.Reconciles, ReconcileSeconds: c.ReconcileSeconds + d.ReconcileSeconds,
		Queued: c.Queued + d.Queued, QueueSeconds: c.QueueSeconds + d.QueueSeconds,
	}
}

// per formats the reconciles per object of objects, and the mean
// reconcile time and queue wait.
func (c controllerWork) per(objects int) string {
	return fmt.Sprintf("%.1f; %.0f / %.0f ms", c.Reconciles/float64(max(objects, 1)),
		1000*c.ReconcileSeconds/max(c.Reconciles, 1), 1000*c.QueueSeconds/max(c.Queued, 1))
}

// scrapeController reads a controller's work from the operator's metrics.
func scrapeController(ctx context.Context, op metricsReader, name string) (controllerWork, error) {
	var c controllerWork
	body, err := op.Metrics(ctx)
	if err != nil {
		return c, err
	}
	for line := range strings.SplitSeq(body, "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		metric, labels, _ := strings.Cut(line[:i], "{")
		if !strings.Contains(labels, `controller="`+name+`"`) && !strings.Contains(labels, `name="`+name+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return c, fmt.Errorf("parsing %q: %w", line, err)
		}
		switch metric {
		case "controller_runtime_reconcile_total":
			c.Reconciles += v
		case "controller_runtime_reconcile_time_seconds_sum":
			c.ReconcileSeconds += v
		case "workqueue_queue_duration_seconds_count":
			c.Queued += v
		case "workqueue_queue_duration_seconds_sum":
			c.QueueSeconds += v
		}
	}
	return c, nil
}

// stackResults is the JSON form of the stacks measure.
type stackResults struct {
	Stacks     int          `json:"stacks"`
	Components int          `json:"componentsPerStack"`
	Rounds     []stackRound `json:"rounds"`

	// Medians over the rounds, and the ratio AppStack / baseline of each.
	StackSeconds    float64   `json:"medianStackSeconds"`
	BaselineSeconds float64   `json:"medianBaselineSeconds"`
	Ratios          []float64 `json:"ratios"`
	MedianRatio     float64   `json:"medianRatio"`
	// Percentiles of the per-stack times to Ready, over every round.
	StackReadyP50    float64 `json:"stackReadyP50Seconds"`
	StackReadyP99    float64 `json:"stackReadyP99Seconds"`
	BaselineReadyP50 float64 `json:"baselineReadyP50Seconds"`
	BaselineReadyP99 float64 `json:"baselineReadyP99Seconds"`
	// ComponentReadyP50 and BaselineComponentReadyP50 are the rounds'
	// medians' medians.
	ComponentReadyP50         map[string]float64 `json:"componentReadyP50Seconds"`
	BaselineComponentReadyP50 map[string]float64 `json:"baselineComponentReadyP50Seconds"`
	// Controller is the AppStack controller's work over every round.
	Controller controllerWork `json:"controller"`
	// OrderChecks is the dependency edges checked (three per stack per
	// round), OrderViolations those that did not hold.
	OrderChecks     int `json:"orderChecks"`
	OrderViolations int `json:"orderViolations"`
	// Per stack over every round: every operator request, the writes
	// (Lease renewals left out), and the AppStack status writes.
	RequestsPerStack         map[string]float64 `json:"requestsPerStack"`
	WritesPerStack           float64            `json:"writesPerStack"`
	StatusWritesPerStack     float64            `json:"statusWritesPerStack"`
	BaselineRequestsPerStack map[string]float64 `json:"baselineRequestsPerStack"`
	BaselineWritesPerStack   float64            `json:"baselineWritesPerStack"`
}

func (s *stackResults) finish() {
	var stack, base, stackReady, baseReady []float64
	total, baseTotal := requestCounts{}, requestCounts{}
	comps, baseComps := map[string][]float64{}, map[string][]float64{}
	s.Ratios, s.OrderViolations = nil, 0
	for _, r := range s.Rounds {
		stack, base = append(stack, r.StackSeconds), append(base, r.BaselineSeconds)
		stackReady, baseReady = append(stackReady, r.StackReadySeconds...), append(baseReady, r.BaselineReadySeconds...)
		if r.BaselineSeconds > 0 {
			s.Ratios = append(s.Ratios, r.StackSeconds/r.BaselineSeconds)
		}
		s.OrderViolations += len(r.Violations)
		s.Controller = s.Controller.plus(r.Controller)
		for k, v := range r.ComponentReadyP50 {
			comps[k] = append(comps[k], v)
		}
		for k, v := range r.BaselineComponentReadyP50 {
			baseComps[k] = append(baseComps[k], v)
		}
		for k, v := range r.Requests {
			total[k] += v
		}
		for k, v := range r.BaselineRequests {
			baseTotal[k] += v
		}
	}
	s.StackSeconds, s.BaselineSeconds, s.MedianRatio = percentile(stack, 50), percentile(base, 50), percentile(s.Ratios, 50)
	s.StackReadyP50, s.StackReadyP99 = percentile(stackReady, 50), percentile(stackReady, 99)
	s.BaselineReadyP50, s.BaselineReadyP99 = percentile(baseReady, 50), percentile(baseReady, 99)
	s.ComponentReadyP50, s.BaselineComponentReadyP50 = medians(comps), medians(baseComps)
	s.OrderChecks = 3 * s.Stacks * len(s.Rounds)
	n := float64(max(s.Stacks*len(s.Rounds), 1))
	perStack := func(c requestCounts) (map[string]float64, float64) {
		out := map[string]float64{}
		for k, v := range c {
			out[k] = v / n
		}
		w, _ := c.writes()
		return out, w / n
	}
	s.RequestsPerStack, s.WritesPerStack = perStack(total)
	s.BaselineRequestsPerStack, s.BaselineWritesPerStack = perStack(baseTotal)
	s.StatusWritesPerStack = s.RequestsPerStack["patch appstacks/status"] + s.RequestsPerStack["update appstacks/status"]
}

// componentWatch records, from the bench's informers, the resourceVersion
// at which each Database, Cache and WebApp was first seen, which is its
// creation when the watch delivers it, and the first at which it was seen
// Ready. There is one etcd, so resourceVersions of different resources are
// revisions of one sequence and order the writes exactly.
type componentWatch struct {
	mu      sync.Mutex
	created map[string]string
	ready   map[string]string
	readyAt map[string]time.Time
}

// componentKey names an object of one of the component kinds.
func componentKey(obj client.Object) string {
	return fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
}

func (w *componentWatch) observe(o any) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	key := componentKey(obj)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.created[key]; !seen {
		w.created[key] = obj.GetResourceVersion()
	}
	if _, seen := w.ready[key]; !seen && componentReady(obj) {
		w.ready[key] = obj.GetResourceVersion()
		w.readyAt[key] = now
	}
}

// watchComponents starts recording the components of every stack.
func (b *bench) watchComponents(ctx context.Context) (*componentWatch, error) {
	w := &componentWatch{created: map[string]string{}, ready: map[string]string{}, readyAt: map[string]time.Time{}}
	for _, obj := range []client.Object{&v1alpha1.Database{}, &v1alpha1.Cache{}, &v1alpha1.WebApp{}} {
		inf, err := b.informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    w.observe,
			UpdateFunc: func(_, o any) { w.observe(o) },
		})
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// readyTime is when obj was first seen Ready.
func (w *componentWatch) readyTime(obj client.Object) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.readyAt[componentKey(obj)]
	return at, ok
}

// waitReady waits until every object is Ready and returns when each was
// first seen so.
func (w *componentWatch) waitReady(ctx context.Context, objs []client.Object, timeout time.Duration) ([]time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		at := make([]time.Time, len(objs))
		missing := 0
		w.mu.Lock()
		for i, obj := range objs {
			t, ok := w.readyAt[componentKey(obj)]
			if !ok {
				missing++
			}
			at[i] = t
		}
		w.mu.Unlock()
		if missing == 0 {
			return at, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d components not Ready after %s", missing, len(objs), timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// before reports whether the dependent was created at an earlier revision
// than the one at which the dependency was first seen Ready.
func (w *componentWatch) before(dependent, dependency client.Object) (bool, error) {
	w.mu.Lock()
	created, ready := w.created[componentKey(dependent)], w.ready[componentKey(dependency)]
	w.mu.Unlock()
	cmp, err := resourceversion.CompareResourceVersion(created, ready)
	if err != nil {
		return false, fmt.Errorf("comparing the revisions of %s and %s: %w", componentKey(dependent), componentKey(dependency), err)
	}
	return cmp < 0, nil
}

// measureStacks creates -stacks AppStacks per round and, in the same round,
// their components directly, alternating which goes first, times both to
// Ready, checks that every stack created its components in dependency
// order, and counts the operator's requests.
func (b *bench) measureStacks(ctx context.Context, res *results) error {
	sc := stackScenario{}
	w, err := b.watchComponents(ctx)
	if err != nil {
		return err
	}
	out := &stackResults{Stacks: b.cfg.Stacks, Components: stackComponents}
	res.Stacks = out
	for r := range b.cfg.Rounds {
		var round stackRound
		order := []string{"baseline", "stacks"}
		if r%2 == 1 {
			order = []string{"stacks", "baseline"}
		}
		for _, which := range order {
			nss, err := b.namespaces(ctx, fmt.Sprintf("%s-%d", which, r), b.cfg.Namespaces)
			if err != nil {
				return err
			}
			before, err := scrapeRequests(ctx, b.operator)
			if err != nil {
				return err
			}
			workBefore, err := scrapeController(ctx, b.operator, "appstack")
			if err != nil {
				return err
			}
			if which == "baseline" {
				err = b.stackBaseline(ctx, sc, w, nss, &round)
			} else {
				err = b.stackBulk(ctx, sc, w, nss, &round, res)
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, which, err)
			}
			if err := b.quiet(ctx); err != nil {
				return err
			}
			after, err := scrapeRequests(ctx, b.operator)
			if err != nil {
				return err
			}
			if which == "baseline" {
				round.BaselineRequests = after.minus(before)
			} else {
				round.Requests = after.minus(before)
				work, err := scrapeController(ctx, b.operator, "appstack")
				if err != nil {
					return err
				}
				round.Controller = work.minus(workBefore)
			}
		}
		out.Rounds = append(out.Rounds, round)
	}
	return nil
}

// stackBulk creates the AppStacks, waits until all are Ready, and checks
// the order their components were created in.
func (b *bench) stackBulk(ctx context.Context, sc stackScenario, w *componentWatch, nss []string, round *stackRound, res *results) error {
	objs, keys := spread(b.cfg.Stacks, nss, func(ns string, i int) []client.Object { return []client.Object{sc.New(ns, i, false)} })
	b.logf("Creating %d AppStacks of %d components over %d namespaces", len(objs), stackComponents, len(nss))
	start := time.Now()
	created, err := b.createTimed(ctx, objs)
	if err != nil {
		return err
	}
	last, err := b.ready.waitAll(ctx, keys, convergeTimeout)
	if err != nil {
		return err
	}
	round.StackSeconds = last.Sub(start).Seconds()
	res.Memory.Bulk = append(res.Memory.Bulk, summarize(b.mem.between(start, last)))
	for i, key := range keys {
		at, _ := b.ready.at(key)
		round.StackReadySeconds = append(round.StackReadySeconds, at.Sub(created[i]).Seconds())
	}
	components := map[string][]float64{}
	for i, obj := range objs {
		stack := obj.(*v1alpha1.AppStack)
		for _, c := range componentObjects(stack) {
			if at, ok := w.readyTime(c); ok {
				components[componentName(c)] = append(components[componentName(c)], at.Sub(created[i]).Seconds())
			}
		}
	}
	round.ComponentReadyP50 = medians(components)
	for _, obj := range objs {
		v, err := b.checkOrder(ctx, w, obj.(*v1alpha1.AppStack))
		if err != nil {
			return err
		}
		round.Violations = append(round.Violations, v...)
	}
	b.logf("%d AppStacks Ready in %.1fs; per stack p50 %.1fs, p99 %.1fs; %d order violations",
		len(objs), round.StackSeconds, percentile(round.StackReadySeconds, 50), percentile(round.StackReadySeconds, 99), len(round.Violations))
	return nil
}

// checkOrder reads a Ready stack's components from the API server and
// checks each dependency edge two ways: the dependent's creationTimestamp
// is not before the dependency's Ready lastTransitionTime (both whole
// seconds, so an inversion within one second goes unseen), and the
// dependent's creation revision is after the revision at which the bench
// first saw the dependency Ready (exact).
func (b *bench) checkOrder(ctx context.Context, w *componentWatch, stack *v1alpha1.AppStack) ([]string, error) {
	objs := componentObjects(stack)
	for _, obj := range objs {
		if err := b.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, fmt.Errorf("reading %s of AppStack %s: %w", componentName(obj), stack.Name, err)
		}
	}
	db, cache, backend, frontend := objs[0], objs[1], objs[2], objs[3]
	edges := []struct{ dependent, dependency client.Object }{{backend, db}, {backend, cache}, {frontend, backend}}
	var out []string
	for _, e := range edges {
		createdAt := e.dependent.GetCreationTimestamp().Time
		readyAt, ok := readySince(e.dependency)
		early, err := w.before(e.dependent, e.dependency)
		if err != nil {
			return nil, err
		}
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s/%s: %s is not Ready", stack.Namespace, stack.Name, e.dependency.GetName()))
		case createdAt.Before(readyAt):
			out = append(out, fmt.Sprintf("%s/%s: %s created at %s, before %s was Ready at %s", stack.Namespace, stack.Name,
				e.dependent.GetName(), createdAt.Format(time.TimeOnly), e.dependency.GetName(), readyAt.Format(time.TimeOnly)))
		case early:
			out = append(out, fmt.Sprintf("%s/%s: %s created at an earlier revision than the one at which %s was first seen Ready",
				stack.Namespace, stack.Name, e.dependent.GetName(), e.dependency.GetName()))
		}
	}
	return out, nil
}

// stackBaseline creates every stack's components directly and waits until
// all are Ready.
func (b *bench) stackBaseline(ctx context.Context, sc stackScenario, w *componentWatch, nss []string, round *stackRound) error {
	objs, _ := spread(b.cfg.Stacks, nss, sc.Raw)
	b.logf("Creating the %d components of %d stacks directly, without AppStacks", len(objs), b.cfg.Stacks)
	start := time.Now()
	created, err := b.createTimed(ctx, objs)
	if err != nil {
		return err
	}
	ready, err := w.waitReady(ctx, objs, convergeTimeout)
	if err != nil {
		return err
	}
	var last time.Time
	components := map[string][]float64{}
	for i := 0; i < len(objs); i += stackComponents {
		first, done := created[i], ready[i]
		for j := i; j < i+stackComponents; j++ {
			first = minTime(first, created[j])
			if ready[j].After(done) {
				done = ready[j]
			}
		}
		round.BaselineReadySeconds = append(round.BaselineReadySeconds, done.Sub(first).Seconds())
		for j := i; j < i+stackComponents; j++ {
			components[componentName(objs[j])] = append(components[componentName(objs[j])], ready[j].Sub(first).Seconds())
		}
		if done.After(last) {
			last = done
		}
	}
	round.BaselineSeconds = last.Sub(start).Seconds()
	round.BaselineComponentReadyP50 = medians(components)
	b.logf("%d components Ready in %.1fs; per stack p50 %.1fs, p99 %.1fs", len(objs), round.BaselineSeconds,
		percentile(round.BaselineReadySeconds, 50), percentile(round.BaselineReadySeconds, 99))
	return nil
}

// componentName is the component of a stack's object: the part of its
// name after the stack's.
func componentName(obj client.Object) string {
	name := obj.GetName()
	return name[strings.LastIndexByte(name, '-')+1:]
}

func medians(samples map[string][]float64) map[string]float64 {
	out := map[string]float64{}
	for k, xs := range samples {
		out[k] = percentile(xs, 50)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// print writes the stacks measure's part of the report.
func (s *stackResults) print(w io.Writer) {
	fmt.Fprintf(w, "9. %d AppStacks of %d components, Ready (median of %d rounds)\t%.1f s\t\t\n", s.Stacks, s.Components, len(s.Rounds), s.StackSeconds)
	fmt.Fprintf(w, "   seconds per round\t%s\t\t\n", floats(roundsOf(s.Rounds, func(r stackRound) float64 { return r.StackSeconds }), "%.1f"))
	fmt.Fprintf(w, "   the same %d components created directly (median)\t%.1f s\t\t\n", s.Stacks*s.Components, s.BaselineSeconds)
	fmt.Fprintf(w, "   seconds per round\t%s\t\t\n", floats(roundsOf(s.Rounds, func(r stackRound) float64 { return r.BaselineSeconds }), "%.1f"))
	fmt.Fprintf(w, "   AppStacks / directly (median)\t%.2fx\t\t\n", s.MedianRatio)
	fmt.Fprintf(w, "   per stack to Ready, p50 / p99: AppStack\t%.1f / %.1f s\t\t\n", s.StackReadyP50, s.StackReadyP99)
	fmt.Fprintf(w, "   per stack to Ready, p50 / p99: directly\t%.1f / %.1f s\t\t\n", s.BaselineReadyP50, s.BaselineReadyP99)
	fmt.Fprintf(w, "   median to Ready, %s / %s / %s / %s: AppStack\t%s s\t\t\n", stackDB, stackCache, stackBackend, stackFrontend, s.timeline(s.ComponentReadyP50))
	fmt.Fprintf(w, "   median to Ready, %s / %s / %s / %s: directly\t%s s\t\t\n", stackDB, stackCache, stackBackend, stackFrontend, s.timeline(s.BaselineComponentReadyP50))
	fmt.Fprintf(w, "   dependency order violations (of %d edges)\t%d\t0, %s\t\n", s.OrderChecks, s.OrderViolations, verdict(s.OrderViolations == 0))
	fmt.Fprintf(w, "   operator writes per stack: AppStack / directly\t%.1f / %.1f\t\t\n", s.WritesPerStack, s.BaselineWritesPerStack)
	fmt.Fprintf(w, "   AppStack status writes per stack\t%.2f\t\t\n", s.StatusWritesPerStack)
	fmt.Fprintf(w, "   AppStack reconciles per stack; mean reconcile / queue wait\t%s\t\t\n", s.Controller.per(s.Stacks*len(s.Rounds)))
}

func (s *stackResults) timeline(m map[string]float64) string {
	return floats([]float64{m[stackDB], m[stackCache], m[stackBackend], m[stackFrontend]}, "%.1f")
}

func roundsOf(rounds []stackRound, f func(stackRound) float64) []float64 {
	out := make([]float64, 0, len(rounds))
	for _, r := range rounds {
		out = append(out, f(r))
	}
	return out
}

// printRequests lists the requests per stack, with AppStacks and directly.
func (s *stackResults) printRequests(w io.Writer) {
	keys := slices.Collect(maps.Keys(s.RequestsPerStack))
	for k := range s.BaselineRequestsPerStack {
		if _, ok := s.RequestsPerStack[k]; !ok {
			keys = append(keys, k)
		}
	}
	both := requestCounts{}
	for _, k := range keys {
		both[k] = s.RequestsPerStack[k]
	}
	fmt.Fprintln(w, "   verb resource\tAppStack\tdirectly\t")
	for _, k := range both.sorted() {
		fmt.Fprintf(w, "   %s\t%.2f\t%.2f\t\n", k, s.RequestsPerStack[k], s.BaselineRequestsPerStack[k])
	}
	for _, r := range s.Rounds {
		for _, v := range r.Violations {
			fmt.Fprintf(w, "   ORDER VIOLATION: %s\t\t\t\n", v)
		}
	}
}
