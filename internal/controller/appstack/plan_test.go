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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/conditions"
)

// live is an existing object of the stack: a component's, named
// shop-<name>, with a Ready condition for its generation unless reason is
// empty.
func live(kind, name string, ready bool, reason string) client.Object {
	obj := emptyObject(kind, "shop-"+name)
	obj.SetNamespace("prod")
	obj.SetGeneration(1)
	obj.SetUID(types.UID("uid-" + obj.GetName()))
	if reason == "" {
		return obj
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: reason}
	if ready {
		cond.Status = metav1.ConditionTrue
	}
	switch o := obj.(type) {
	case *v1alpha1.Database:
		o.Status.ObservedGeneration, o.Status.Conditions = 1, []metav1.Condition{cond}
	case *v1alpha1.WebApp:
		o.Status.ObservedGeneration, o.Status.Conditions = 1, []metav1.Condition{cond}
	}
	return obj
}

// observedFor is what a reconcile of the stack would observe with the
// given objects existing.
func observedFor(t *testing.T, stack *v1alpha1.AppStack, objs ...client.Object) *observed {
	t.Helper()
	g, err := appstack.NewGraph(&stack.Spec)
	if err != nil {
		t.Fatal(err)
	}
	obs := &observed{graph: g, desired: Render(stack, false), ingress: ingress(stack)}
	obs.components = components(stack, g, obs.desired)
	for _, obj := range objs {
		for _, c := range append(obs.components, obs.ingress) {
			if c.object() == obj.GetName() && sameType(c.live, obj) {
				c.live, c.exists = obj, true
			}
		}
	}
	return obs
}

// sameType reports whether two objects are of the same Go type.
func sameType(a, b client.Object) bool { return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) }

// decisions describes each step of a plan: its component, and "apply" or
// the message it is held with.
func decisions(p plan) map[string]string {
	out := map[string]string{}
	for _, s := range p.steps {
		if s.apply {
			out[s.c.name] = "apply"
		} else {
			out[s.c.name] = s.message
		}
	}
	return out
}

func TestPlanDeploy(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	withIngress := func(s *v1alpha1.AppStack) { s.Spec.Ingress = &v1alpha1.StackIngress{Host: "shop.example.com"} }
	tests := []struct {
		name   string
		mutate []func(*v1alpha1.AppStack)
		live   []client.Object
		// problem is the failed apply of the database, if any.
		problem *conditions.Problem
		want    map[string]string
		// requeue is when to look again.
		requeue time.Duration
		check   func(t *testing.T, p plan)
	}{
		{
			name: "nothing exists: what depends on nothing is created, the rest waits",
			want: map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "waiting for database db: NotCreated"},
		},
		{
			name: "a dependency just created is not Ready yet",
			live: []client.Object{live(appstack.KindDatabase, "db", false, "")},
			want: map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "waiting for database db: Pending"},
		},
		{
			name: "a Ready dependency lets its dependent be created",
			live: []client.Object{live(appstack.KindDatabase, "db", true, "Available")},
			want: map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "apply"},
			check: func(t *testing.T, p plan) {
				if why := p.steps[1].why; p.steps[1].c.name != "backend" || why != "its dependencies are Ready: db" {
					t.Errorf("step 1: %s, created because %q", p.steps[1].c.name, why)
				}
			},
		},
		{
			name: "an existing component is kept in step whatever its dependencies do",
			live: []client.Object{live(appstack.KindDatabase, "db", false, "UpgradeBlocked"), live(appstack.KindWebApp, "backend", true, "Available")},
			want: map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "apply"},
		},
		{
			name:    "a dependency that failed to apply holds its dependents and degrades the stack",
			live:    []client.Object{live(appstack.KindDatabase, "db", true, "Available")},
			problem: &conditions.Problem{Reason: v1alpha1.ReasonNameConflict, Message: "a Database named shop-db already exists"},
			want:    map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "waiting for database db: NameConflict"},
			check: func(t *testing.T, p plan) {
				if s := p.steps[0]; !s.degraded || s.message != "a Database named shop-db already exists" {
					t.Errorf("db: degraded %v, %q", s.degraded, s.message)
				}
			},
		},
		{
			name:    "a wait shorter than the timeout is looked at again when it ends",
			mutate:  []func(*v1alpha1.AppStack){timeout(time.Minute), blockedSince("backend", now.Add(-20*time.Second))},
			want:    map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "waiting for database db: NotCreated"},
			requeue: 40 * time.Second,
		},
		{
			name:   "a wait longer than the timeout degrades",
			mutate: []func(*v1alpha1.AppStack){timeout(time.Minute), blockedSince("backend", now.Add(-2*time.Minute))},
			want:   map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "waiting for database db: NotCreated (waited longer than 1m0s)"},
			check: func(t *testing.T, p plan) {
				s := p.steps[1]
				if !s.timedOut || !s.degraded || s.held != "waiting for database db: NotCreated" {
					t.Errorf("backend: timed out %v, degraded %v, held %q", s.timedOut, s.degraded, s.held)
				}
			},
		},
		{
			name:   "the Ingress waits for the exposed apps",
			mutate: []func(*v1alpha1.AppStack){withIngress},
			live:   []client.Object{live(appstack.KindDatabase, "db", true, "Available"), live(appstack.KindWebApp, "frontend", true, "Available")},
			want: map[string]string{
				"db": "apply", "frontend": "apply", "worker": "apply", "backend": "apply", "ingress": "waiting for webapp backend: NotCreated",
			},
		},
		{
			name:   "the Ingress comes once they are Ready",
			mutate: []func(*v1alpha1.AppStack){withIngress},
			live: []client.Object{
				live(appstack.KindDatabase, "db", true, "Available"), live(appstack.KindWebApp, "frontend", true, "Available"),
				live(appstack.KindWebApp, "backend", true, "Available"),
			},
			want: map[string]string{"db": "apply", "frontend": "apply", "worker": "apply", "backend": "apply", "ingress": "apply"},
			check: func(t *testing.T, p plan) {
				if s := p.steps[4]; !s.ready || s.reason != "Routed" || s.why != "the exposed apps are Ready" {
					t.Errorf("ingress: ready %v, %s, created because %q", s.ready, s.reason, s.why)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack(tc.mutate...)
			obs := observedFor(t, stack, tc.live...)
			obs.components[0].problem = tc.problem
			p := planDeploy(stack, obs, previous(stack, recalled{}), now)
			got := decisions(p)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s: %q, want %q", name, got[name], want)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("steps %v, want %v", got, tc.want)
			}
			if p.requeue != tc.requeue {
				t.Errorf("requeue after %s, want %s", p.requeue, tc.requeue)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// timeout sets the stack's dependency timeout.
func timeout(d time.Duration) func(*v1alpha1.AppStack) {
	return func(s *v1alpha1.AppStack) { s.Spec.DependencyTimeout = &metav1.Duration{Duration: d} }
}

// blockedSince gives the stack a status line saying the component has been
// Blocked since then.
func blockedSince(component string, since time.Time) func(*v1alpha1.AppStack) {
	return func(s *v1alpha1.AppStack) {
		s.Status.Components = append(s.Status.Components, v1alpha1.StackComponentStatus{
			Name: component, Reason: v1alpha1.ReasonBlocked, Since: &metav1.Time{Time: since},
		})
	}
}

func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := func(name string) client.Object { return live(appstack.KindWebApp, name, true, "Available") }
	tests := []struct {
		name   string
		mutate func(*v1alpha1.AppStack)
		live   []client.Object
		// dropped are objects of the stack that left the spec.
		dropped          []client.Object
		phase            v1alpha1.AppStackPhase
		ready            string
		progressing      string
		degraded         string
		progressingMatch string
	}{
		{
			name:  "everything Ready",
			live:  []client.Object{live(appstack.KindDatabase, "db", true, "Available"), ready("frontend"), ready("backend"), ready("worker")},
			phase: v1alpha1.AppStackReady, ready: v1alpha1.ReasonComponentsReady, progressing: v1alpha1.ReasonComponentsReady,
			degraded: v1alpha1.ReasonHealthy,
		},
		{
			name:  "nothing created yet",
			phase: v1alpha1.AppStackPending, ready: v1alpha1.ReasonBlocked, progressing: v1alpha1.ReasonBlocked, degraded: v1alpha1.ReasonHealthy,
			progressingMatch: "db (NotCreated); frontend (NotCreated); worker (NotCreated); backend: waiting for database db: NotCreated",
		},
		{
			name:  "some created, not Ready yet",
			live:  []client.Object{live(appstack.KindDatabase, "db", true, "Available"), ready("frontend"), ready("backend"), live(appstack.KindWebApp, "worker", false, "")},
			phase: v1alpha1.AppStackDeploying, ready: v1alpha1.ReasonDeploying, progressing: v1alpha1.ReasonDeploying, degraded: v1alpha1.ReasonHealthy,
			progressingMatch: "Not Ready yet: worker (Pending)",
		},
		{
			name:    "removing what left the spec",
			live:    []client.Object{live(appstack.KindDatabase, "db", true, "Available"), ready("frontend"), ready("backend"), ready("worker")},
			dropped: []client.Object{ready("admin")},
			phase:   v1alpha1.AppStackDeploying, ready: v1alpha1.ReasonDeleting, progressing: v1alpha1.ReasonDeleting, degraded: v1alpha1.ReasonHealthy,
			progressingMatch: "Removing 1 components no longer in the spec",
		},
		{
			name:   "a wait too long",
			mutate: func(s *v1alpha1.AppStack) { timeout(time.Minute)(s); blockedSince("backend", now.Add(-time.Hour))(s) },
			live:   []client.Object{live(appstack.KindDatabase, "db", false, "UpgradeBlocked"), ready("frontend"), ready("worker")},
			phase:  v1alpha1.AppStackDegraded, ready: v1alpha1.ReasonDependencyTimeout, progressing: v1alpha1.ReasonDeploying,
			degraded: v1alpha1.ReasonDependencyTimeout,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			if tc.mutate != nil {
				tc.mutate(stack)
			}
			obs := observedFor(t, stack, tc.live...)
			for _, obj := range tc.dropped {
				obs.dropped = append(obs.dropped, &component{name: strings.TrimPrefix(obj.GetName(), "shop-"), kind: appstack.KindWebApp, live: obj, exists: true})
			}
			prev := previous(stack, recalled{})
			st := computeStatus(stack, obs, planDeploy(stack, obs, prev, now), prev, now)
			if st.Phase != tc.phase || st.ObservedGeneration != 1 {
				t.Errorf("phase %s, observedGeneration %d; want %s, 1", st.Phase, st.ObservedGeneration, tc.phase)
			}
			for typ, want := range map[string]string{
				v1alpha1.ConditionReady: tc.ready, v1alpha1.ConditionProgressing: tc.progressing, v1alpha1.ConditionDegraded: tc.degraded,
			} {
				if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Reason != want {
					t.Errorf("%s = %+v, want reason %s", typ, c, want)
				}
			}
			if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); tc.progressingMatch != "" && c.Message != tc.progressingMatch {
				t.Errorf("Progressing says %q, want %q", c.Message, tc.progressingMatch)
			}
			if len(st.Components) != len(stack.Spec.Apps)+len(stack.Spec.Databases) {
				t.Errorf("status lines %+v", st.Components)
			}
		})
	}
}

func TestPlanRemoval(t *testing.T) {
	production := func(s *v1alpha1.AppStack) { s.Spec.Environment = v1alpha1.StackProduction }
	// A dropped production database with backups on, which was Ready once.
	servedDB := func() *component {
		db := live(appstack.KindDatabase, "old", true, "Available").(*v1alpha1.Database)
		db.Spec.Backup = &v1alpha1.DatabaseBackup{}
		return &component{name: "old", kind: appstack.KindDatabase, live: db, exists: true}
	}
	backup := func(token string, runs ...v1alpha1.BackupRun) *v1alpha1.Backup {
		b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "shop-old-backup", Namespace: "prod", Annotations: map[string]string{}}}
		if token != "" {
			b.Annotations[v1alpha1.AnnotationBackupNow] = token
		}
		for _, r := range runs {
			r.Job = b.ManualJobName(token)
			b.Status.History = append(b.Status.History, r)
		}
		return b
	}
	done := &metav1.Time{Time: time.Now()}
	token := "final-uid-1"
	tests := []struct {
		name    string
		stack   *v1alpha1.AppStack
		comps   func() []*component
		backup  *v1alpha1.Backup
		steps   []string
		waiting string
		failure string
	}{
		{
			name:  "apps go before databases",
			stack: newStack(),
			comps: func() []*component {
				return []*component{
					{name: "old", kind: appstack.KindDatabase, live: live(appstack.KindDatabase, "old", true, "Available"), exists: true},
					{name: "admin", kind: appstack.KindWebApp, live: live(appstack.KindWebApp, "admin", true, "Available"), exists: true},
				}
			},
			steps:   []string{"delete admin"},
			waiting: "Database shop-old waits for admin to be deleted first",
		},
		{
			name:  "one being deleted is waited for",
			stack: newStack(),
			comps: func() []*component {
				app := live(appstack.KindWebApp, "admin", true, "Available")
				app.SetDeletionTimestamp(done)
				return []*component{{name: "admin", kind: appstack.KindWebApp, live: app, exists: true}}
			},
			waiting: "WebApp shop-admin is being deleted",
		},
		{
			name: "outside production, no final backup", stack: newStack(),
			comps: func() []*component { return []*component{servedDB()} },
			steps: []string{"delete old"},
		},
		{
			name: "a final backup is asked for", stack: newStack(production),
			comps: func() []*component { return []*component{servedDB()} }, backup: backup(""),
			steps: []string{"backup old " + token}, waiting: "the final backup of Database shop-old is running",
		},
		{
			name: "the final backup runs", stack: newStack(production),
			comps: func() []*component { return []*component{servedDB()} }, backup: backup(token),
			waiting: "the final backup of Database shop-old is running",
		},
		{
			name: "after the final backup, the database goes", stack: newStack(production),
			comps:  func() []*component { return []*component{servedDB()} },
			backup: backup(token, v1alpha1.BackupRun{CompletionTime: done, Succeeded: true}),
			steps:  []string{"delete old"},
		},
		{
			name: "a failed final backup stops the deletion", stack: newStack(production),
			comps:   func() []*component { return []*component{servedDB()} },
			backup:  backup(token, v1alpha1.BackupRun{CompletionTime: done, Message: "connection refused"}),
			failure: "The final backup of Database shop-old failed (connection refused), so it is not deleted.",
		},
		{
			name: "a served database without a Backup is kept", stack: newStack(production),
			comps:   func() []*component { return []*component{servedDB()} },
			failure: "Database shop-old has no Backup shop-old-backup to take its final backup with",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			comps := tc.comps()
			backups := map[string]*v1alpha1.Backup{}
			if tc.backup != nil {
				backups["shop-old"] = tc.backup
			}
			rm := planRemoval(tc.stack, comps, backups, byRank(comps))
			var steps []string
			for _, s := range rm.steps {
				if s.backup != nil {
					steps = append(steps, "backup "+s.c.name+" "+s.token)
				} else {
					steps = append(steps, "delete "+s.c.name)
				}
			}
			if fmt.Sprint(steps) != fmt.Sprint(tc.steps) || rm.waiting != tc.waiting || !strings.HasPrefix(rm.failure, tc.failure) || (tc.failure == "") != (rm.failure == "") {
				t.Errorf("steps %v, waiting %q, failure %q; want %v, %q, %q", steps, rm.waiting, rm.failure, tc.steps, tc.waiting, tc.failure)
			}
			if len(rm.left) != len(comps) {
				t.Errorf("left %d, want all %d", len(rm.left), len(comps))
			}
		})
	}
}
