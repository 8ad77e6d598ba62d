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

package database_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/database"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
)

// fakeInstances stands in for the instance managers of the pods a test
// registers; any other pod does not answer, as on a cluster whose pods run
// nothing.
type fakeInstances struct {
	mu sync.Mutex
	// byPod are the registered instances, by namespace/pod.
	byPod map[string]*fakeInstance
}

// fakeInstance is one instance: its report, the assignments it took, and
// whether it promotes itself when assigned the primary.
type fakeInstance struct {
	report   instance.Report
	assigned []instance.Assignment
	// assignedAt is when it took each of assigned.
	assignedAt []time.Time
	promotes   bool
	// silent: its report does not answer, as a manager slowed by load;
	// cut: neither its report nor an assignment reaches it.
	silent, cut bool
}

var fakes = &fakeInstances{byPod: map[string]*fakeInstance{}}

func (f *fakeInstances) Report(_ context.Context, pod *corev1.Pod) (instance.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.byPod[pod.Namespace+"/"+pod.Name]
	if !ok {
		return instance.Report{}, errors.New("connection refused")
	}
	if in.silent || in.cut {
		return instance.Report{}, context.DeadlineExceeded
	}
	return in.report, nil
}

func (f *fakeInstances) Assign(_ context.Context, pod *corev1.Pod, token string, a instance.Assignment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.byPod[pod.Namespace+"/"+pod.Name]
	if !ok {
		return errors.New("connection refused")
	}
	if in.cut {
		return context.DeadlineExceeded
	}
	if token == "" {
		return errors.New("no token")
	}
	if a.Term < in.report.Term {
		return fmt.Errorf("term %d is older than %d", a.Term, in.report.Term)
	}
	in.assigned = append(in.assigned, a)
	in.assignedAt = append(in.assignedAt, time.Now())
	in.report.Term = a.Term
	if a.Primary == pod.Name && in.promotes && in.report.Role == engine.RoleReplica {
		in.report.Role, in.report.Ready = engine.RolePrimary, true
	}
	return nil
}

// set registers or changes an instance.
func (f *fakeInstances) set(ns, pod string, change func(*fakeInstance)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.byPod[ns+"/"+pod]
	if !ok {
		in = &fakeInstance{report: instance.Report{Name: pod, Phase: instance.PhaseRunning}}
		f.byPod[ns+"/"+pod] = in
	}
	change(in)
}

// lastAssigned is the newest assignment an instance took.
func (f *fakeInstances) lastAssigned(ns, pod string) (instance.Assignment, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.byPod[ns+"/"+pod]
	if in == nil || len(in.assigned) == 0 {
		return instance.Assignment{}, 0
	}
	return in.assigned[len(in.assigned)-1], len(in.assigned)
}

// fakeInstancePod creates a ready pod of a Database's StatefulSet by hand:
// no StatefulSet controller runs here.
func fakeInstancePod(t *testing.T, ns, db, name string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: database.Labels(&v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: db}})},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:16"}}},
	}
	// The revision markRolledOut reports: not a pod to roll.
	p.Labels[appsv1.ControllerRevisionHashLabelKey] = "r1"
	create(t, p)
	status := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "192.0.2.10",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	// The operator may label the pod (its role) in between: read it again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status = status
		return k8s.Status().Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFailoverSurvivesAnOperatorRestart runs a three-instance Database
// whose instances are fakes: every instance is told term 1 with ordinal 0
// as the primary, the primary's lease and the replicas' names; when the
// primary's server stops, the most advanced replica is chosen and the
// change recorded before it is told; the operator restarts before the
// replica has promoted itself and resumes the same change in the same term;
// once the replica serves, it is the primary, labelled so, the old one a
// replica, and the change is in lastRoleChange and an event.
func TestFailoverSurvivesAnOperatorRestart(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(3)) }))
	for i, pos := range []int64{1000, 900, 1000} {
		name := fmt.Sprintf("db-%d", i)
		fakes.set(ns, name, func(in *fakeInstance) {
			in.report.Role, in.report.Ready, in.report.Position = engine.RoleReplica, true, pos
			if i == 0 {
				in.report.Role = engine.RolePrimary
			}
		})
		fakeInstancePod(t, ns, "db", name)
	}
	markRolledOut(t, ns, "db", 3)
	waitFor(t, ns, "db", "three instances reported ready", func(db *v1alpha1.Database) bool {
		return len(db.Status.Instances) == 3 && db.Status.Instances[0].Role == "primary" && db.Status.Term == 1 &&
			db.Status.Instances[1].Ready && db.Status.Instances[2].Ready
	})
	// The status can record an instance's report before the reconcile
	// that read it has told the instance its role.
	eventually(t, func() error {
		for _, name := range []string{"db-0", "db-1", "db-2"} {
			a, _ := fakes.lastAssigned(ns, name)
			if a.Term != 1 || a.Primary != "db-0" || a.LeaseSeconds != int(v1alpha1.DefaultFenceAfterSeconds) || strings.Join(a.Replicas, ",") != "db-1,db-2" ||
				a.PrimaryHost != "db-0.db-headless."+ns+".svc" {
				return fmt.Errorf("%s was told %+v", name, a)
			}
		}
		return nil
	})

	// The primary's server stops: db-2, the most advanced, is chosen.
	fakes.set(ns, "db-0", func(in *fakeInstance) {
		in.report.Phase, in.report.Ready, in.report.Message = instance.PhaseStopped, false, "the server stopped on its own"
	})
	db := waitFor(t, ns, "db", "a failover to db-2 under way", func(db *v1alpha1.Database) bool {
		return db.Status.RoleChange != nil
	})
	if c := db.Status.RoleChange; c.To != "db-2" || c.From != "db-0" || c.Term != 2 || c.Type != v1alpha1.RoleChangeFailover || db.Status.Term != 2 {
		t.Fatalf("role change %+v, term %d, instances %+v; want a failover from db-0 to db-2 in term 2", c, db.Status.Term, db.Status.Instances)
	}
	eventually(t, func() error {
		if a, _ := fakes.lastAssigned(ns, "db-2"); a.Term != 2 || a.Primary != "db-2" {
			return fmt.Errorf("db-2 was last told %+v", a)
		}
		return nil
	})
	expectEvent(t, ns, "db", v1alpha1.EventFailoverStarted)

	// The operator restarts before db-2 promoted itself, and goes on.
	operator.restart(t)
	_, before := fakes.lastAssigned(ns, "db-2")
	eventually(t, func() error {
		if a, n := fakes.lastAssigned(ns, "db-2"); n <= before || a.Term != 2 {
			return fmt.Errorf("db-2 told %d times, last %+v", n, a)
		}
		return nil
	})
	if err := get(t, ns, "db", db); err != nil || db.Status.Term != 2 || db.Status.RoleChange == nil || db.Status.RoleChange.To != "db-2" {
		t.Fatalf("after the restart: term %d, role change %+v (%v); want the same change in term 2", db.Status.Term, db.Status.RoleChange, err)
	}

	// The old primary is fenced: the read-write Service follows db-2
	// while it is promoted.
	eventually(t, func() error {
		return labelledRoles(t, ns, map[string]string{"db-0": "replica", "db-1": "replica", "db-2": "primary"})
	})

	fakes.set(ns, "db-2", func(in *fakeInstance) { in.promotes = true })
	db = waitFor(t, ns, "db", "db-2 the primary", func(db *v1alpha1.Database) bool {
		return db.Status.Primary == "db-2" && db.Status.RoleChange == nil && db.Status.LastRoleChange != nil
	})
	if c := db.Status.LastRoleChange; c.To != "db-2" || c.Term != 2 || c.FinishedAt == nil || !strings.Contains(c.Reason, "does not run") {
		t.Errorf("lastRoleChange = %+v", c)
	}
	expectEvent(t, ns, "db", v1alpha1.EventFailedOver)
	eventually(t, func() error {
		if err := labelledRoles(t, ns, map[string]string{"db-0": "replica", "db-1": "replica", "db-2": "primary"}); err != nil {
			return err
		}
		if a, _ := fakes.lastAssigned(ns, "db-0"); a.Term != 2 || a.Primary != "db-2" {
			return fmt.Errorf("the old primary was last told %+v", a)
		}
		return nil
	})
}

// TestSwitchoverMovesToTheReplicaThatHasItAll: a switchover to "any"
// chose db-1, but the primary's last writes before it stopped reached only
// db-2. The stopped primary streams nothing more, so db-1 would wait until
// the change is given up: db-2 is promoted instead, in the next term, and
// db-1 is never told to promote itself.
func TestSwitchoverMovesToTheReplicaThatHasItAll(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(3)) }))
	for i, pos := range []int64{1000, 1000, 990} {
		name := fmt.Sprintf("db-%d", i)
		fakes.set(ns, name, func(in *fakeInstance) {
			in.report.Role, in.report.Ready, in.report.Position = engine.RoleReplica, true, pos
			in.promotes = i == 2
			if i == 0 {
				in.report.Role = engine.RolePrimary
			}
		})
		fakeInstancePod(t, ns, "db", name)
	}
	markRolledOut(t, ns, "db", 3)
	waitFor(t, ns, "db", "three instances reported ready", func(db *v1alpha1.Database) bool {
		return len(db.Status.Instances) == 3 && db.Status.Instances[0].Role == "primary" && db.Status.Term == 1 &&
			db.Status.Instances[1].Ready && db.Status.Instances[2].Ready
	})

	update(t, ns, "db", func(db *v1alpha1.Database) {
		db.Annotations = map[string]string{v1alpha1.AnnotationSwitchoverTo: "any"}
	})
	db := waitFor(t, ns, "db", "a switchover under way", func(db *v1alpha1.Database) bool { return db.Status.RoleChange != nil })
	if c := db.Status.RoleChange; c.To != "db-1" || c.Term != 2 || c.Type != v1alpha1.RoleChangeSwitchover {
		t.Fatalf("role change %+v; want a switchover to db-1, the most advanced, in term 2", c)
	}
	eventually(t, func() error {
		if a, _ := fakes.lastAssigned(ns, "db-0"); a.Term != 2 || a.Primary != "db-1" {
			return fmt.Errorf("the primary was last told %+v, not to stop for db-1", a)
		}
		return nil
	})
	// The primary stops at 1010; only db-2 received the last writes.
	fakes.set(ns, "db-0", func(in *fakeInstance) {
		in.report.Phase, in.report.Ready, in.report.StoppedPosition = instance.PhaseStopped, false, 1010
	})
	fakes.set(ns, "db-2", func(in *fakeInstance) { in.report.Position = 1010 })

	db = waitFor(t, ns, "db", "db-2 the primary", func(db *v1alpha1.Database) bool {
		return db.Status.Primary == "db-2" && db.Status.RoleChange == nil && db.Status.LastRoleChange != nil
	})
	if c := db.Status.LastRoleChange; c.To != "db-2" || c.From != "db-0" || c.Term != 3 || c.Type != v1alpha1.RoleChangeSwitchover ||
		!strings.Contains(c.Reason, "moved to db-2") || db.Status.Term != 3 {
		t.Errorf("lastRoleChange = %+v, term %d; want a switchover to db-2 in term 3", c, db.Status.Term)
	}
	expectEvent(t, ns, "db", v1alpha1.EventSwitchoverRetargeted)
	expectEvent(t, ns, "db", v1alpha1.EventSwitchedOver)
	fakes.mu.Lock()
	for _, a := range fakes.byPod[ns+"/db-1"].assigned {
		if a.Primary == "db-1" {
			t.Errorf("db-1, which missed the last writes, was told to be the primary: %+v", a)
		}
	}
	fakes.mu.Unlock()
	waitFor(t, ns, "db", "the switchover annotation removed", func(db *v1alpha1.Database) bool {
		_, ok := db.Annotations[v1alpha1.AnnotationSwitchoverTo]
		return !ok
	})
}

// TestSwitchoverToAnyWaitsForAReplica: asked while no replica runs (they
// restart, or their reports did not answer), a switchover to "any" waits
// instead of being refused, and goes on once a replica runs.
func TestSwitchoverToAnyWaitsForAReplica(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(2)) }))
	fakes.set(ns, "db-0", func(in *fakeInstance) {
		in.report.Role, in.report.Ready, in.report.Position = engine.RolePrimary, true, 1000
	})
	fakes.set(ns, "db-1", func(in *fakeInstance) {
		in.report.Role, in.report.Ready, in.report.Position, in.promotes = engine.RoleReplica, true, 1000, true
	})
	fakeInstancePod(t, ns, "db", "db-0")
	fakeInstancePod(t, ns, "db", "db-1")
	markRolledOut(t, ns, "db", 2)
	waitFor(t, ns, "db", "both instances reported ready", func(db *v1alpha1.Database) bool {
		return len(db.Status.Instances) == 2 && db.Status.Instances[0].Role == "primary" && db.Status.Instances[1].Ready
	})
	// The replica restarts.
	fakes.set(ns, "db-1", func(in *fakeInstance) { in.report.Phase, in.report.Ready = instance.PhaseStarting, false })
	update(t, ns, "db", func(db *v1alpha1.Database) {
		db.Annotations = map[string]string{v1alpha1.AnnotationSwitchoverTo: "any"}
	})
	expectEvent(t, ns, "db", v1alpha1.EventSwitchoverWaiting)
	db := &v1alpha1.Database{}
	if err := get(t, ns, "db", db); err != nil || db.Annotations[v1alpha1.AnnotationSwitchoverTo] != "any" || db.Status.Primary != "db-0" {
		t.Fatalf("while waiting: annotations %v, primary %s (%v); want the request kept and db-0 the primary", db.Annotations, db.Status.Primary, err)
	}
	// It runs again: the switchover goes on, and the primary stops.
	fakes.set(ns, "db-1", func(in *fakeInstance) { in.report.Phase, in.report.Ready = instance.PhaseRunning, true })
	waitFor(t, ns, "db", "the switchover to db-1 under way", func(db *v1alpha1.Database) bool {
		return db.Status.RoleChange != nil && db.Status.RoleChange.To == "db-1"
	})
	fakes.set(ns, "db-0", func(in *fakeInstance) {
		in.report.Phase, in.report.Ready, in.report.StoppedPosition = instance.PhaseStopped, false, 1000
	})
	db = waitFor(t, ns, "db", "db-1 the primary", func(db *v1alpha1.Database) bool {
		return db.Status.Primary == "db-1" && db.Status.RoleChange == nil && db.Status.LastRoleChange != nil
	})
	if c := db.Status.LastRoleChange; c.Type != v1alpha1.RoleChangeSwitchover || c.From != "db-0" {
		t.Errorf("lastRoleChange = %+v; want a switchover from db-0", c)
	}
	expectEvent(t, ns, "db", v1alpha1.EventSwitchedOver)
}

// labelledRoles says which pod does not carry its role label.
func labelledRoles(t *testing.T, ns string, roles map[string]string) error {
	t.Helper()
	for name, role := range roles {
		p := &corev1.Pod{}
		if err := get(t, ns, name, p); err != nil {
			return err
		}
		if p.Labels[v1alpha1.LabelRole] != role {
			return fmt.Errorf("%s labelled %q, want %s", name, p.Labels[v1alpha1.LabelRole], role)
		}
	}
	return nil
}

// primaryAndReplica runs the two instances of Database db, db-0 the
// primary and db-1 a ready replica, at the given positions, and waits
// until the operator has seen them so.
func primaryAndReplica(t *testing.T, ns string, primaryPos, replicaPos int64) {
	t.Helper()
	fakes.set(ns, "db-0", func(in *fakeInstance) {
		in.report.Role, in.report.Ready, in.report.Position = engine.RolePrimary, true, primaryPos
	})
	fakes.set(ns, "db-1", func(in *fakeInstance) {
		in.report.Role, in.report.Ready, in.report.Position = engine.RoleReplica, true, replicaPos
	})
	fakeInstancePod(t, ns, "db", "db-0")
	fakeInstancePod(t, ns, "db", "db-1")
	markRolledOut(t, ns, "db", 2)
	waitFor(t, ns, "db", "the primary seen serving", func(db *v1alpha1.Database) bool {
		return len(db.Status.Instances) == 2 && db.Status.Instances[0].Role == "primary" && db.Status.Instances[1].Ready
	})
}

// TestFailoverBlockedWhenEveryReplicaLags: no replica within
// maxFailoverLagBytes of the primary's last position, and the primary does
// not answer: no failover, and the Database says why.
func TestFailoverBlockedWhenEveryReplicaLags(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) {
		db.Spec.Replicas = new(int32(2))
		db.Spec.HighAvailability = &v1alpha1.DatabaseHighAvailability{MaxFailoverLagBytes: new(int64(100))}
	}))
	primaryAndReplica(t, ns, 5000, 1000)
	// The pod of the primary goes, with its instance.
	fakes.mu.Lock()
	delete(fakes.byPod, ns+"/db-0")
	fakes.mu.Unlock()
	if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	db := waitFor(t, ns, "db", "FailoverBlocked", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionDegraded)
		return c != nil && c.Reason == v1alpha1.ReasonFailoverBlocked
	})
	if c := condition(db, v1alpha1.ConditionDegraded); !strings.Contains(c.Message, "4000 bytes behind") || db.Status.Primary != "db-0" || db.Status.RoleChange != nil {
		t.Errorf("Degraded: %s; primary %s, role change %+v", c.Message, db.Status.Primary, db.Status.RoleChange)
	}
}

// TestUnansweringPrimaryKeepsItsLease: the primary's manager stops
// answering the operator's reads (as under load) while a replica does not
// stream, which the fencing rule alone would take for a lost primary once
// its lease ran out. It still takes its renewals, so its lease is renewed
// and nothing fails over, well past the lease and its margins. Once the
// renewals no longer reach it either (a network cut), the replica is
// promoted.
func TestUnansweringPrimaryKeepsItsLease(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(2)) }))
	primaryAndReplica(t, ns, 1000, 1000)

	fakes.set(ns, "db-1", func(in *fakeInstance) { in.report.Ready = false })
	fakes.set(ns, "db-0", func(in *fakeInstance) { in.silent = true })
	_, before := fakes.lastAssigned(ns, "db-0")
	lease := time.Duration(v1alpha1.DefaultFenceAfterSeconds) * time.Second
	// The lease and the operator's margins (fenced), and more.
	watch := 2*lease + 5*time.Second
	for end := time.Now().Add(watch); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		db := &v1alpha1.Database{}
		if err := get(t, ns, "db", db); err != nil {
			t.Fatal(err)
		}
		if db.Status.RoleChange != nil || db.Status.Term != 1 || db.Status.Primary != "db-0" {
			t.Fatalf("a primary that takes its renewals was replaced: term %d, primary %s, role change %+v",
				db.Status.Term, db.Status.Primary, db.Status.RoleChange)
		}
	}
	a, after := fakes.lastAssigned(ns, "db-0")
	if after-before < int(watch/lease) || a.Primary != "db-0" || a.Term != 1 || a.LeaseSeconds == 0 {
		t.Fatalf("in %v the silent primary took %d renewals, the last %+v; want one at least every %v", watch, after-before, a, lease)
	}

	fakes.set(ns, "db-0", func(in *fakeInstance) { in.cut = true })
	db := waitFor(t, ns, "db", "a failover to db-1", func(db *v1alpha1.Database) bool {
		return db.Status.RoleChange != nil || db.Status.Term > 1
	})
	c := db.Status.RoleChange
	if c == nil {
		c = db.Status.LastRoleChange
	}
	if c == nil || c.To != "db-1" || c.Type != v1alpha1.RoleChangeFailover || !strings.Contains(c.Reason, "lease ran out") {
		t.Errorf("role change %+v; want a failover to db-1 once the lease ran out", c)
	}
}

// TestStalledReconcilesKeepThePrimarysLease: every reconcile of the
// Database is held at its start for more than twice the lease, as behind
// workers busy with other objects, while its replica does not stream: a
// primary left without a renewal for its lease would fence itself then.
// Its lease is renewed between the reconciles all the same: no two
// renewals it took are a lease apart, and nothing fails over.
func TestStalledReconcilesKeepThePrimarysLease(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(2)) }))
	primaryAndReplica(t, ns, 1000, 1000)
	fakes.set(ns, "db-1", func(in *fakeInstance) { in.report.Ready = false })
	lease := time.Duration(v1alpha1.DefaultFenceAfterSeconds) * time.Second

	restore := database.StallReconciles(func(ctx context.Context, req ctrl.Request) {
		if req.Namespace != ns {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(2*lease + 2*time.Second):
		}
	})
	defer restore()
	start := time.Now()
	time.Sleep(3 * lease)
	end := time.Now()
	restore()

	fakes.mu.Lock()
	var renewals []time.Time
	for i, at := range fakes.byPod[ns+"/db-0"].assignedAt {
		if a := fakes.byPod[ns+"/db-0"].assigned[i]; !at.Before(start) && !at.After(end) && a.Primary == "db-0" && a.LeaseSeconds > 0 {
			renewals = append(renewals, at)
		}
	}
	fakes.mu.Unlock()
	prev := start
	for _, at := range append(renewals, end) {
		if gap := at.Sub(prev); gap >= lease {
			t.Errorf("no renewal for %v (from %v to %v after the stall began), a lease of %v; %d renewals in %v",
				gap.Round(time.Millisecond), prev.Sub(start).Round(time.Millisecond), at.Sub(start).Round(time.Millisecond), lease, len(renewals), end.Sub(start))
		}
		prev = at
	}
	db := &v1alpha1.Database{}
	if err := get(t, ns, "db", db); err != nil {
		t.Fatal(err)
	}
	if db.Status.RoleChange != nil || db.Status.Term != 1 || db.Status.Primary != "db-0" {
		t.Errorf("term %d, primary %s, role change %+v: want db-0 in term 1", db.Status.Term, db.Status.Primary, db.Status.RoleChange)
	}
}

// TestLabelRolesJudgesNewerPodsAfresh: a pod the operator labelled, whose
// label a reconcile on an older copy of the Database then turned back, is
// labelled again at once, not left to the remembered patch.
func TestLabelRolesJudgesNewerPodsAfresh(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "lr-0", Namespace: ns, Labels: map[string]string{v1alpha1.LabelRole: "replica"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}},
	}
	create(t, pod)
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: ns}}
	db.Status.Primary = "lr-0"
	r := &database.Reconciler{Client: k8s}
	label := func() string {
		t.Helper()
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		return got.Labels[v1alpha1.LabelRole]
	}

	stale := pod.DeepCopy() // what a lagging cache still shows
	if err := database.LabelRoles(r, ctx, db, []corev1.Pod{*pod}); err != nil || label() != "primary" {
		t.Fatalf("labelled %q, %v; want primary", label(), err)
	}
	// The same old copy again: the patch is remembered, nothing written.
	if err := database.LabelRoles(r, ctx, db, []corev1.Pod{*stale}); err != nil {
		t.Fatal(err)
	}
	// Someone turned the label back: the newer copy is labelled again.
	current := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), current); err != nil {
		t.Fatal(err)
	}
	current.Labels[v1alpha1.LabelRole] = "replica"
	if err := k8s.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
	if err := database.LabelRoles(r, ctx, db, []corev1.Pod{*current}); err != nil || label() != "primary" {
		t.Fatalf("after the label was turned back: %q, %v; want primary", label(), err)
	}
}

// TestReplicaRebuildIsAnnounced: the replicas are told where the primary's
// manager answers (a replica that does not follow asks it before it
// rebuilds itself), and a rebuild an instance reports becomes a Warning
// event naming the replica and why.
func TestReplicaRebuildIsAnnounced(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(2)) }))
	primaryAndReplica(t, ns, 1000, 900)
	// The status that shows both instances is written before the
	// assignments of that reconcile are sent: wait for them.
	eventually(t, func() error {
		a, _ := fakes.lastAssigned(ns, "db-1")
		if a.Primary != "db-0" || a.Peers["db-0"] == "" || a.Peers["db-1"] == "" {
			return fmt.Errorf("the replica's assignment %+v does not carry the primary's status address", a)
		}
		return nil
	})
	why := "it has not followed its primary db-0 for 1m0s while that serves (WAL receiver is waiting, not streaming); rebuilding it: cloning the primary afresh"
	fakes.set(ns, "db-1", func(in *fakeInstance) { in.report.Rebuilds, in.report.LastRebuild = 1, why })
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == v1alpha1.EventReplicaRebuilt {
				if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "replica db-1") || !strings.Contains(e.Note, why) {
					return fmt.Errorf("the event %s %q", e.Type, e.Note)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", v1alpha1.EventReplicaRebuilt, len(list.Items))
	})
}
