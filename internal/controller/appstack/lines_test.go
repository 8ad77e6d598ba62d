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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/conditions"
)

// line is a status line of a component, since then.
func line(name string, ready bool, reason string, since time.Time) v1alpha1.StackComponentStatus {
	return v1alpha1.StackComponentStatus{Name: name, Ready: ready, Reason: reason, Since: &metav1.Time{Time: since}}
}

func TestPrevious(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stack := newStack()
	stack.Status.Components = []v1alpha1.StackComponentStatus{
		line("db", true, "Available", t0), line("backend", false, v1alpha1.ReasonBlocked, t0),
	}
	rec := recalled{uid: stack.UID, lines: map[string]v1alpha1.StackComponentStatus{
		// The same as written: the written line and its since stand.
		"db": line("db", true, "Available", t0.Add(time.Minute)),
		// Changed since the last write: what was seen, since then.
		"backend": line("backend", false, "Pending", t0.Add(2*time.Minute)),
		// Never written.
		"frontend": line("frontend", false, v1alpha1.ReasonBlocked, t0.Add(3*time.Minute)),
	}}
	prev := previous(stack, rec)
	for name, want := range map[string]string{
		"db":       "true Available " + t0.String(),
		"backend":  "false Pending " + t0.Add(2*time.Minute).String(),
		"frontend": "false Blocked " + t0.Add(3*time.Minute).String(),
	} {
		l, ok := prev[name]
		if !ok {
			t.Errorf("no line for %s", name)
			continue
		}
		if got := describeLine(l); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := previous(stack, recalled{})["backend"]; describeLine(got) != "false Blocked "+t0.String() {
		t.Errorf("nothing recalled: backend %s, want the written line", describeLine(got))
	}
}

func describeLine(l v1alpha1.StackComponentStatus) string {
	since := "never"
	if l.Since != nil {
		since = l.Since.String()
	}
	return fmt.Sprintf("%v %s %s", l.Ready, l.Reason, since)
}

func TestHoldFor(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stack := newStack()
	stack.CreationTimestamp = metav1.Time{Time: created}
	stack.Status.ObservedGeneration = -1 // the CRD's default
	status := func(ready bool, reason string) v1alpha1.AppStackStatus {
		st := v1alpha1.AppStackStatus{ObservedGeneration: 1}
		c := conditions.False(reason, reason)
		if ready {
			c = conditions.True(reason, reason)
		}
		conditions.Set(&st.Conditions, 1, c, conditions.False(reason, reason), conditions.False(v1alpha1.ReasonHealthy, "fine"))
		return st
	}
	settle := 30 * time.Second
	for _, tc := range []struct {
		name   string
		next   v1alpha1.AppStackStatus
		settle time.Duration
		at     time.Duration
		want   time.Duration
	}{
		{"components waiting for their dependencies", status(false, v1alpha1.ReasonBlocked), settle, 5 * time.Second, 25 * time.Second},
		{"components starting", status(false, v1alpha1.ReasonDeploying), settle, 10 * time.Second, 20 * time.Second},
		{"Ready", status(true, v1alpha1.ReasonComponentsReady), settle, 5 * time.Second, 0},
		{"a component Degraded", status(false, v1alpha1.ReasonComponentDegraded), settle, 5 * time.Second, 0},
		{"a wait timed out", status(false, v1alpha1.ReasonDependencyTimeout), settle, 5 * time.Second, 0},
		{"an invalid spec", status(false, v1alpha1.ReasonInvalidSpec), settle, 5 * time.Second, 0},
		{"past the settle time", status(false, v1alpha1.ReasonDeploying), settle, 31 * time.Second, 0},
		{"no settle", status(false, v1alpha1.ReasonDeploying), 0, 5 * time.Second, 0},
	} {
		if got := holdFor(stack, tc.next, tc.settle, created.Add(tc.at)); max(got, 0) != tc.want {
			t.Errorf("%s: hold %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestAWaitTimesOutWhileTheStatusIsHeld checks that a dependency's wait is
// counted from when the reconciler first saw it, though the status that
// would date it is not written yet.
func TestAWaitTimesOutWhileTheStatusIsHeld(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stack := newStack(timeout(90 * time.Second))
	stack.Status.ObservedGeneration = -1
	db := []client.Object{live(appstack.KindDatabase, "db", false, "Creating")}
	seenBlocked := func(ago time.Duration) recalled {
		return recalled{uid: stack.UID, lines: map[string]v1alpha1.StackComponentStatus{
			"backend": line("backend", false, v1alpha1.ReasonBlocked, now.Add(-ago)),
		}}
	}
	p := planDeploy(stack, observedFor(t, stack, db...), previous(stack, seenBlocked(20*time.Second)), now)
	if p.requeue != 70*time.Second || p.steps[1].timedOut {
		t.Errorf("blocked for 20 s of 90: requeue %s, timed out %v; want 1m10s, false", p.requeue, p.steps[1].timedOut)
	}
	obs := observedFor(t, stack, db...)
	prev := previous(stack, seenBlocked(2*time.Minute))
	p = planDeploy(stack, obs, prev, now)
	if s := p.steps[1]; s.c.name != "backend" || !s.timedOut || !s.degraded {
		t.Fatalf("blocked for 2 min of 1.5: %s timed out %v, degraded %v", s.c.name, s.timedOut, s.degraded)
	}
	st := computeStatus(stack, obs, p, prev, now)
	if holdFor(stack, st, 30*time.Second, now) > 0 {
		t.Error("a timed-out wait is held back")
	}
	for _, l := range st.Components {
		if l.Name == "backend" && !l.Since.Time.Equal(now.Add(-2*time.Minute)) {
			t.Errorf("backend since %s, want when it was first seen Blocked, %s", l.Since, now.Add(-2*time.Minute))
		}
	}
}

func TestFirstReadyTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := func(name string) client.Object { return live(appstack.KindWebApp, name, true, "Available") }
	everyReady := []client.Object{live(appstack.KindDatabase, "db", true, "Available"), ready("frontend"), ready("backend"), ready("worker")}
	status := func(stack *v1alpha1.AppStack, at time.Time, objs ...client.Object) v1alpha1.AppStackStatus {
		obs := observedFor(t, stack, objs...)
		prev := previous(stack, recalled{})
		return computeStatus(stack, obs, planDeploy(stack, obs, prev, at), prev, at)
	}
	stack := newStack()
	deploying := status(stack, now, live(appstack.KindDatabase, "db", false, "Creating"))
	if deploying.FirstReadyTime != nil || firstReady(stack, deploying) {
		t.Fatalf("deploying: firstReadyTime %v", deploying.FirstReadyTime)
	}
	stack.Status = deploying
	first := status(stack, now.Add(time.Minute), everyReady...)
	if !firstReady(stack, first) {
		t.Errorf("Ready for the first time, not counted: firstReadyTime %v", first.FirstReadyTime)
	}
	// The condition's transition time is stamped with the real clock: the
	// field must be that time.
	if c := meta.FindStatusCondition(first.Conditions, v1alpha1.ConditionReady); first.FirstReadyTime == nil || !first.FirstReadyTime.Equal(&c.LastTransitionTime) {
		t.Fatalf("Ready: firstReadyTime %v, want Ready's transition time %v", first.FirstReadyTime, c.LastTransitionTime)
	}
	stack.Status = first
	if again := status(stack, now.Add(2*time.Minute), everyReady...); firstReady(stack, again) || !again.FirstReadyTime.Equal(first.FirstReadyTime) {
		t.Errorf("still Ready: firstReadyTime %v, counted again %v", again.FirstReadyTime, firstReady(stack, again))
	}
	degraded := status(stack, now.Add(3*time.Minute), live(appstack.KindDatabase, "db", false, "CrashLooping"), ready("frontend"), ready("backend"), ready("worker"))
	stack.Status = degraded
	if back := status(stack, now.Add(4*time.Minute), everyReady...); firstReady(stack, back) || !back.FirstReadyTime.Equal(first.FirstReadyTime) {
		t.Errorf("Ready again after a problem: firstReadyTime %v, counted again %v; want the first, not counted", back.FirstReadyTime, firstReady(stack, back))
	}
	// A stack Ready before the field existed gets the time it last became
	// Ready, and is not counted.
	stack.Status = first
	stack.Status.FirstReadyTime = nil
	if upgraded := status(stack, now.Add(5*time.Minute), everyReady...); firstReady(stack, upgraded) || upgraded.FirstReadyTime == nil {
		t.Errorf("Ready before the field existed: firstReadyTime %v, counted %v", upgraded.FirstReadyTime, firstReady(stack, upgraded))
	}
}
