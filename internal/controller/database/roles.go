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

package database

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/status"
)

// roleState is what managing the roles found and decided in one reconcile.
type roleState struct {
	instances []v1alpha1.DatabaseInstance
	// waiting says why a lost primary is not replaced yet.
	waiting string
	// blocked is set when no replica can be promoted safely.
	blocked *conditions.Problem
	// primaryServing: the primary answered that it serves.
	primaryServing bool
	// refused says which settings the servers could not apply at their
	// last reload, and why; empty when none.
	refused string
	requeue time.Duration
}

// memory is what the operator remembers of one Database between
// reconciles; a restarted operator starts from its start time.
type memory struct {
	mu                  sync.Mutex
	lastAck             time.Time
	lastServing         time.Time
	lastPrimaryPosition int64
	notStreaming        map[string]time.Time
	// unanswered counts, per instance, the times in a row it did not
	// answer.
	unanswered map[string]int
	// grownTo is the size storage.autoGrow last grew the volumes to, so
	// that a reconcile on a cache that does not show it yet announces it
	// once.
	grownTo string
	// anyWaitingSince is when a switchover to "any" began to wait for a
	// replica that runs and answers.
	anyWaitingSince time.Time
	// rebuilds is, per instance, the count of rebuilds its report last
	// showed.
	rebuilds map[string]int64
}

func (r *Reconciler) memoryOf(uid types.UID) *memory {
	r.startOnce.Do(func() { r.started = time.Now() })
	m, _ := r.memories.LoadOrStore(uid, &memory{lastAck: r.started, notStreaming: map[string]time.Time{}, unanswered: map[string]int{},
		rebuilds: map[string]int64{}})
	return m.(*memory)
}

func (r *Reconciler) instances() InstanceClient {
	if r.Instances != nil {
		return r.Instances
	}
	return HTTPInstances{}
}

// reportTimeout bounds one reconcile's wait for the instances' reports.
// An instance that did not answer an odd number of times in a row gets
// unansweredTimeout, so that one whose node is gone or cut off slows only
// every other reconcile of a failover down, and one that is merely slow
// still gets its full time every other ask; during a role change, every
// ask.
const (
	reportTimeout     = 2 * time.Second
	unansweredTimeout = 500 * time.Millisecond
)

// manageRoles reads every instance's report, carries out a failover or
// switchover under way, starts one when the primary is lost or a
// switchover is asked for, and otherwise tells every instance its role,
// which renews the primary's lease. Decisions are persisted in the status
// before any instance is told.
//
// config is the instance.ConfigHash of the configuration the ConfigMap
// holds: while a running instance reports another, the instances are looked
// at again within configPoll.
func (r *Reconciler) manageRoles(ctx context.Context, db *v1alpha1.Database, sts *appsv1.StatefulSet, pods []corev1.Pod, config string) (roleState, error) {
	var rs roleState
	if _, offline := r.instances().(NoInstances); offline {
		// Pods that run nothing: only the rolling restart, by pod readiness.
		_, _, err := r.rollInstances(ctx, sts, view{primary: db.PrimaryPod(), members: r.memberPods(db, pods)})
		return rs, err
	}
	token, err := r.controlToken(ctx, db)
	if err != nil || token == "" {
		return rs, err
	}
	mem := r.memoryOf(db.UID)
	members := r.observeMembers(ctx, db, pods, mem)
	r.announceRebuilds(db, members, mem)
	v := r.viewOf(db, members, mem)
	rs.instances = instanceStatuses(db, v)
	rs.refused = refusedSettings(v)
	rs.primaryServing = serving(mustMember(v, v.primary))
	// Decisions need the instances' word: none answering (pods that run
	// nothing, or the operator cut off from them) decides nothing.
	ha := db.Spec.Engine.CanFailOver() && Replicas(db) > 1 && anyAnswered(v)

	// Anything to decide about the roles stops the renewals between
	// reconciles first (see renewal); only the path that decides nothing
	// starts them again.
	switch {
	case db.Status.RoleChange != nil:
		r.stopRenewing(db.UID, &v)
		return r.carryOut(ctx, db, v, token, rs)
	case ha && !serving(mustMember(v, v.primary)):
		r.stopRenewing(db.UID, &v)
		return r.replacePrimary(ctx, db, v, token, rs)
	case ha && db.Annotations[v1alpha1.AnnotationSwitchoverTo] != "":
		r.stopRenewing(db.UID, &v)
		return r.startSwitchover(ctx, db, v, token, rs)
	}
	to, switchFirst, err := r.rollInstances(ctx, sts, v)
	if err != nil {
		return rs, err
	}
	if switchFirst {
		r.stopRenewing(db.UID, &v)
		return r.beginChange(ctx, db, v, token, rs, v1alpha1.RoleChangeSwitchover, to.name,
			"rolling restart: the primary restarts last, as a replica")
	}
	rs.requeue = r.assignAll(ctx, db, v, token)
	// Renewed between reconciles only when this one sent it its
	// assignment, as assignAll does: never a primary whose pod goes.
	if p := mustMember(v, v.primary).pod; !ha || p == nil || p.Status.PodIP == "" || !p.DeletionTimestamp.IsZero() {
		r.stopRenewing(db.UID, nil)
	} else {
		r.keepRenewing(db.UID)
	}
	if ha {
		rs.requeue = min(rs.requeue, 2*time.Second)
	}
	if configBehind(v, config) {
		rs.requeue = min(rs.requeue, configPoll)
	}
	return rs, nil
}

// configPoll is how soon the instances are looked at again while one runs
// with another configuration than the ConfigMap's: the kubelet brings a
// changed ConfigMap into the pods within a minute or so, and each manager
// reloads it. What a reload refused is then reported within seconds, not
// at the next look a minute later.
const configPoll = 5 * time.Second

// configBehind reports whether a running instance's server loaded another
// configuration than config. A manager that reports none (not running, or
// of a version that does not say) is not counted.
func configBehind(v view, config string) bool {
	for _, m := range v.members {
		if r := m.report; r != nil && r.Phase == instance.PhaseRunning && r.Config != "" && r.Config != config {
			return true
		}
	}
	return false
}

func anyAnswered(v view) bool {
	for _, m := range v.members {
		if m.report != nil {
			return true
		}
	}
	return false
}

func mustMember(v view, name string) member {
	m, _ := v.member(name)
	return m
}

// controlToken derives the instances' token from the replication password.
func (r *Reconciler) controlToken(ctx context.Context, db *v1alpha1.Database) (string, error) {
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.SuperuserName()}, s); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	pw := s.Data["replication-password"]
	if len(pw) == 0 {
		return "", nil
	}
	return instance.ControlToken(string(pw)), nil
}

// memberPods are the instances the spec asks for, and any others still
// there, with their pods.
func (r *Reconciler) memberPods(db *v1alpha1.Database, pods []corev1.Pod) []member {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	n := int(Replicas(db))
	names := make([]string, 0, n)
	for i := range n {
		names = append(names, db.Name+"-"+strconv.Itoa(i))
	}
	for name := range byName {
		if o, _ := instance.Ordinal(name); o >= n {
			names = append(names, name) // scaled down, still there
		}
	}
	sort.Strings(names)
	members := make([]member, len(names))
	for i, name := range names {
		members[i] = member{name: name, pod: byName[name]}
		if members[i].pod == nil {
			members[i].err = "no pod"
		}
	}
	return members
}

// observeMembers reads the reports of the instance pods, concurrently.
func (r *Reconciler) observeMembers(ctx context.Context, db *v1alpha1.Database, pods []corev1.Pod, mem *memory) []member {
	members := r.memberPods(db, pods)
	mem.mu.Lock()
	timeouts := make([]time.Duration, len(members))
	for i, m := range members {
		timeouts[i] = reportTimeout
		if n := mem.unanswered[m.name]; n%2 == 1 || n > 0 && db.Status.RoleChange != nil {
			timeouts[i] = unansweredTimeout
		}
	}
	mem.mu.Unlock()
	var wg sync.WaitGroup
	for i := range members {
		if members[i].pod == nil {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeouts[i])
			defer cancel()
			rep, err := r.instances().Report(ctx, members[i].pod)
			if err != nil {
				members[i].err = err.Error()
				return
			}
			members[i].report = &rep
		})
	}
	wg.Wait()
	mem.mu.Lock()
	defer mem.mu.Unlock()
	now := time.Now()
	for i := range members {
		m := &members[i]
		switch {
		case m.pod == nil || m.report != nil:
			delete(mem.unanswered, m.name)
		default:
			mem.unanswered[m.name]++
		}
		streaming := m.report != nil && m.report.Role == engine.RoleReplica && m.report.Ready
		if streaming || m.name == db.PrimaryPod() {
			delete(mem.notStreaming, m.name)
		} else if _, ok := mem.notStreaming[m.name]; !ok {
			mem.notStreaming[m.name] = now
		}
		m.notStreamingSince = mem.notStreaming[m.name]
		if m.name == db.PrimaryPod() && serving(*m) {
			mem.lastServing, mem.lastPrimaryPosition = now, m.report.Position
		}
	}
	return members
}

// announceRebuilds records an event for each instance whose report counts
// more rebuilds than it did before: a replica that could not follow its
// primary rebuilt itself. The first report of an instance the operator
// reads, and one of a restarted instance manager (whose count starts at
// zero again), only set the count.
func (r *Reconciler) announceRebuilds(db *v1alpha1.Database, members []member, mem *memory) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	for _, m := range members {
		if m.report == nil {
			continue
		}
		seen, known := mem.rebuilds[m.name]
		mem.rebuilds[m.name] = m.report.Rebuilds
		if known && m.report.Rebuilds > seen {
			r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, v1alpha1.EventReplicaRebuilt, "Rebuild",
				"replica %s could not follow the primary: %s", m.name, m.report.LastRebuild)
		}
	}
}

func (r *Reconciler) viewOf(db *v1alpha1.Database, members []member, mem *memory) view {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	maxLag, unit, field := db.MaxFailoverLag()
	return view{
		now: time.Now(), primary: db.PrimaryPod(), members: members,
		lastAck: mem.lastAck, lastPrimaryPosition: mem.lastPrimaryPosition,
		fenceAfter: time.Duration(db.FenceAfterSeconds()) * time.Second,
		maxLag:     maxLag, lagUnit: unit, lagField: field,
	}
}

// instanceStatuses are status.instances: each instance's report, with its
// lag behind the primary.
func instanceStatuses(db *v1alpha1.Database, v view) []v1alpha1.DatabaseInstance {
	var primaryPos int64
	if p, ok := v.member(v.primary); ok && serving(p) {
		primaryPos = p.report.Position
	}
	out := make([]v1alpha1.DatabaseInstance, 0, len(v.members))
	for _, m := range v.members {
		in := v1alpha1.DatabaseInstance{Name: m.name, Message: m.err}
		if r := m.report; r != nil {
			in.Ready, in.Message = r.Ready && r.Phase == instance.PhaseRunning, r.Message
			if r.Phase == instance.PhaseRunning {
				in.Role = string(r.Role)
			}
			volumeUsage(db, &in, r.Volume)
			if r.Role == engine.RoleReplica && primaryPos > 0 && r.Position > 0 {
				lag := max(primaryPos-r.Position, 0)
				if v.lagUnit == v1alpha1.PositionTransactions {
					in.LagTransactions = &lag
					metrics.ReplicationLagTransactions.WithLabelValues(db.Namespace, db.Name, m.name).Set(float64(lag))
				} else {
					in.LagBytes = &lag
					metrics.ReplicationLag.WithLabelValues(db.Namespace, db.Name, m.name).Set(float64(lag))
				}
			}
		}
		out = append(out, in)
	}
	return out
}

// refusedSettings describes the settings the running servers could not
// apply at their last reload, each once with the instances that refused
// it: "timezone on pg-0, pg-1: invalid value ...". Empty when none.
func refusedSettings(v view) string {
	var order []engine.RefusedSetting
	on := map[engine.RefusedSetting][]string{}
	for _, m := range v.members {
		if m.report == nil || m.report.Phase != instance.PhaseRunning {
			continue
		}
		for _, r := range m.report.Refused {
			if _, ok := on[r]; !ok {
				order = append(order, r)
			}
			on[r] = append(on[r], m.name)
		}
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%s on %s: %s", r.Name, strings.Join(on[r], ", "), r.Reason))
	}
	return strings.Join(parts, "; ")
}

// assignment is what the instances are told in the current term.
func assignment(db *v1alpha1.Database, v view) instance.Assignment {
	a := instance.Assignment{
		// Term 0 is a Database's first: the status records it as 1.
		Term: max(db.Status.Term, 1), Primary: v.primary, PrimaryHost: db.InstanceHost(v.primary), PrimaryPort: int(db.Port()),
		// A new database only on the first primary of a Database none of
		// whose instances ever served (term 0): later, an empty primary
		// means lost data, which a replica may have.
		Bootstrap: db.Status.Term == 0 && v.primary == db.FirstPod(),
	}
	for _, m := range v.members {
		if m.pod != nil {
			if addr, err := statusAddr(m.pod); err == nil {
				if a.Peers == nil {
					a.Peers = map[string]string{}
				}
				a.Peers[m.name] = addr
			}
		}
		if m.name == v.primary {
			if m.report != nil {
				a.PrimaryExits = m.report.Exits
			}
			continue
		}
		a.Replicas = append(a.Replicas, m.name)
	}
	if db.Spec.Engine.CanFailOver() && len(a.Replicas) > 0 {
		a.LeaseSeconds = int(db.FenceAfterSeconds())
	}
	return a
}

// assignAll tells every instance with an address its role, concurrently;
// the primary's acceptance renews its lease. An instance that did not
// answer for its report gets unansweredTimeout. It returns when to look
// again: soon when an instance did not take it or does not run yet.
func (r *Reconciler) assignAll(ctx context.Context, db *v1alpha1.Database, v view, token string) time.Duration {
	a := assignment(db, v)
	var mu sync.Mutex
	again := time.Minute
	var wg sync.WaitGroup
	for _, m := range v.members {
		if m.pod == nil || m.pod.Status.PodIP == "" || !m.pod.DeletionTimestamp.IsZero() {
			continue
		}
		wg.Go(func() {
			// The primary's renewal always gets the full time: a late
			// acceptance still renews its lease.
			timeout := reportTimeout
			if m.report == nil && m.name != v.primary {
				timeout = unansweredTimeout
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var err error
			if m.name == v.primary {
				// Through the renewals, which it updates; lastAck follows.
				err = r.assignPrimary(ctx, db.UID, m.pod, token, a)
			} else {
				err = r.instances().Assign(ctx, m.pod, token, a)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				again = time.Second
				return
			}
			if m.report == nil || m.report.Phase != instance.PhaseRunning || !m.report.Ready {
				again = time.Second
			}
		})
	}
	wg.Wait()
	return again
}

// replacePrimary starts a failover once the lost primary is fenced and a
// replica can take over, or says why it waits.
func (r *Reconciler) replacePrimary(ctx context.Context, db *v1alpha1.Database, v view, token string, rs roleState) (roleState, error) {
	p := mustMember(v, v.primary)
	if r := p.report; r != nil && (r.Phase == instance.PhaseStarting || r.Phase == instance.PhaseRunning && r.Role == engine.RolePrimary) {
		// Starting, or running but not ready yet: not lost.
		rs.requeue = time.Second
		return rs, nil
	}
	if r.renewUnanswered(ctx, db, &v, token) {
		// Not a failover under way: status.instances says that it does
		// not answer, and its pod's readiness whether it serves. The
		// renewals go on between reconciles, as long as renewUnanswered
		// would send them.
		log.FromContext(ctx).V(1).Info("the primary does not answer but took its renewal", "primary", p.name, "error", p.err)
		r.keepRenewing(db.UID)
		rs.requeue = time.Second
		return rs, nil
	}
	ok, why := fenced(v, p)
	if !ok {
		rs.waiting = fmt.Sprintf("The primary %s is not serving and not yet fenced: %s", p.name, why)
		// Soon: the failover waits for the moment the fence holds.
		rs.requeue = 500 * time.Millisecond
		return rs, nil
	}
	c, refusal := candidate(v)
	if refusal != "" && p.report != nil {
		// No replica can take over, but the primary answers: its server
		// starts again where it is (also a new Database's first start).
		rs.requeue = min(r.assignAll(ctx, db, v, token), time.Second)
		if db.Status.Term > 0 {
			rs.waiting = fmt.Sprintf("The primary %s restarts in place (%s): no replica can take over: %s", p.name, why, refusal)
		}
		return rs, nil
	}
	if refusal != "" {
		rs.blocked = &conditions.Problem{Reason: v1alpha1.ReasonFailoverBlocked,
			Message: fmt.Sprintf("The primary %s is lost (%s) and no replica is promoted: %s", p.name, why, refusal)}
		rs.requeue = 2 * time.Second
		return rs, nil
	}
	return r.beginChange(ctx, db, v, token, rs, v1alpha1.RoleChangeFailover, c.name, "the primary "+p.name+" is lost: "+why)
}

// unansweredRenewal is how long after it last answered as serving a
// primary whose manager does not answer the operator's reads keeps having
// its lease renewed, as long as it takes the renewals. A manager slowed by
// load (its node's CPU taken by others) answers late, and a primary that
// takes the operator's word is not cut off from it: letting its lease run
// out would fence a healthy primary, and under the same load the next one
// too. Past this the renewals stop and the ordinary fencing rule decides,
// so that a server that hangs while its manager still takes renewals is
// failed over, this much later. A primary that takes no renewal (a lost
// node, a network cut) is not affected.
const unansweredRenewal = 30 * time.Second

// renewUnanswered renews the lease of a primary whose report did not
// answer, while it last answered as serving (or the operator started)
// within unansweredRenewal. It reports whether the primary took the
// renewal; v.lastAck follows.
func (r *Reconciler) renewUnanswered(ctx context.Context, db *v1alpha1.Database, v *view, token string) bool {
	p := mustMember(*v, v.primary)
	if p.report != nil || p.pod == nil || p.pod.Status.PodIP == "" || !p.pod.DeletionTimestamp.IsZero() {
		return false
	}
	mem := r.memoryOf(db.UID)
	mem.mu.Lock()
	since := mem.lastServing
	mem.mu.Unlock()
	if since.Before(r.started) {
		since = r.started
	}
	if v.now.Sub(since) > unansweredRenewal {
		return false
	}
	before := v.lastAck
	r.assignAll(ctx, db, *v, token)
	mem.mu.Lock()
	v.lastAck = mem.lastAck
	mem.mu.Unlock()
	return v.lastAck.After(before)
}

// startSwitchover starts the switchover the annotation asks for, or
// refuses it with an event and removes the annotation.
func (r *Reconciler) startSwitchover(ctx context.Context, db *v1alpha1.Database, v view, token string, rs roleState) (roleState, error) {
	want := db.Annotations[v1alpha1.AnnotationSwitchoverTo]
	c, refusal := switchoverTarget(v, want)
	if wait, began := r.anyWaits(db, want, refusal); wait > 0 {
		// Replicas that are restarting, or whose reports did not answer
		// in this look, are not a reason to refuse "any replica".
		if began {
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventSwitchoverWaiting, "Switchover",
				"Switchover to any waits, at most %v: %s", switchoverAnyWait, refusal)
		}
		rs.requeue = min(wait, 2*time.Second)
		return rs, nil
	}
	if refusal != "" {
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, v1alpha1.EventSwitchoverRefused, "Switchover",
			"Switchover to %s refused: %s", want, refusal)
		return rs, r.removeSwitchoverRequest(ctx, db)
	}
	return r.beginChange(ctx, db, v, token, rs, v1alpha1.RoleChangeSwitchover, c.name,
		"requested with the "+v1alpha1.AnnotationSwitchoverTo+" annotation")
}

// switchoverAnyWait is how long a switchover to "any" waits for a replica
// that runs and answers before it is refused.
const switchoverAnyWait = time.Minute

// anyWaits returns how much longer a switchover to "any" that refusal
// stops waits before it is refused, or 0: a named target, no refusal, or
// the wait is over; and whether the wait began with this look.
func (r *Reconciler) anyWaits(db *v1alpha1.Database, want, refusal string) (time.Duration, bool) {
	mem := r.memoryOf(db.UID)
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if refusal == "" || want != "any" {
		mem.anyWaitingSince = time.Time{}
		return 0, false
	}
	began := mem.anyWaitingSince.IsZero()
	if began {
		mem.anyWaitingSince = time.Now()
	}
	left := switchoverAnyWait - time.Since(mem.anyWaitingSince)
	if left <= 0 {
		mem.anyWaitingSince = time.Time{}
		return 0, false
	}
	return left, began
}

// beginChange starts a role change from the primary to the instance to,
// in the next term: it is persisted in the status before any instance
// hears of it, so that a restarted operator resumes it, then carried out.
func (r *Reconciler) beginChange(ctx context.Context, db *v1alpha1.Database, v view, token string, rs roleState,
	typ v1alpha1.RoleChangeType, to, reason string) (roleState, error) {
	change := &v1alpha1.DatabaseRoleChange{Type: typ, From: v.primary, To: to,
		Term: max(db.Status.Term, 1) + 1, Reason: reason, StartedAt: metav1.Now()}
	next := db.Status.DeepCopy()
	next.Term, next.RoleChange = change.Term, change
	if err := status.Write(ctx, r.Client, db, &db.Status, *next, client.MergeFromWithOptimisticLock{}); err != nil {
		return rs, err
	}
	if typ == v1alpha1.RoleChangeFailover {
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, v1alpha1.EventFailoverStarted, "Failover",
			"Promoting %s (term %d): %s", to, change.Term, reason)
	}
	return r.carryOut(ctx, db, v, token, rs)
}

// roleChangeTimeout is how long a role change may go without its target
// serving before it is given up and decided again.
const roleChangeTimeout = 90 * time.Second

// carryOut advances the role change under way: a switchover first stops
// the primary and waits until the target has all it wrote; then the
// target is promoted; once it serves the change is complete.
func (r *Reconciler) carryOut(ctx context.Context, db *v1alpha1.Database, v view, token string, rs roleState) (roleState, error) {
	change := db.Status.RoleChange
	a := assignment(db, v)
	a.Term, a.Primary, a.PrimaryHost = change.Term, change.To, db.InstanceHost(change.To)
	target, from := mustMember(v, change.To), mustMember(v, change.From)
	rs.requeue = 200 * time.Millisecond
	if serving(target) {
		return rs, r.completeChange(ctx, db, v, token)
	}
	if time.Since(change.StartedAt.Time) > roleChangeTimeout {
		next := db.Status.DeepCopy()
		next.RoleChange = nil
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, v1alpha1.ReasonFailoverBlocked, "Failover",
			"Gave up promoting %s after %v: %s", change.To, roleChangeTimeout, target.err)
		return rs, status.Write(ctx, r.Client, db, &db.Status, *next, client.MergeFromWithOptimisticLock{})
	}
	if change.Type == v1alpha1.RoleChangeSwitchover {
		switch fr := from.report; {
		case fr != nil && fr.Phase == instance.PhaseRunning && fr.Role == engine.RolePrimary:
			if err := r.instances().Assign(ctx, from.pod, token, a); err != nil {
				rs.waiting = "stopping the primary " + from.name + ": " + err.Error()
			}
			return rs, nil
		case fr != nil && fr.StoppedPosition > 0 && (target.report == nil || target.report.Position < fr.StoppedPosition):
			if other, ok := hasAllOf(v, fr.StoppedPosition, change.To); ok && chosenByOperator(db) {
				return rs, r.retarget(ctx, db, other, fr.StoppedPosition)
			}
			rs.waiting = fmt.Sprintf("%s catches up with the stopped primary", change.To)
			return rs, nil
		}
	}
	if target.pod != nil {
		if err := r.instances().Assign(ctx, target.pod, token, a); err != nil {
			rs.waiting = "promoting " + change.To + ": " + err.Error()
		}
	}
	return rs, nil
}

// hasAllOf is the running replica, other than the switchover's target,
// that has received a stopped primary's whole history (up to stopped), the
// furthest if several have.
func hasAllOf(v view, stopped int64, target string) (member, bool) {
	var best member
	found := false
	for _, m := range v.members {
		if m.name == v.primary || m.name == target || !runningReplica(m) || m.report.Position < stopped {
			continue
		}
		if !found || m.report.Position > best.report.Position {
			best, found = m, true
		}
	}
	return best, found
}

// chosenByOperator reports whether the switchover under way is to a
// replica Steward chose (switchover-to=any, or a rolling restart's), not
// one the user named.
func chosenByOperator(db *v1alpha1.Database) bool {
	want := db.Annotations[v1alpha1.AnnotationSwitchoverTo]
	return want == "" || want == "any"
}

// retarget moves a switchover whose target missed the stopped primary's
// last writes to a replica that has them all, in the next term: the
// stopped primary streams nothing more, so the first target would only
// wait until the change is given up. The target has not been told to
// promote itself yet (that comes after the catch-up), and the new term
// makes any older word void.
func (r *Reconciler) retarget(ctx context.Context, db *v1alpha1.Database, to member, stopped int64) error {
	change := db.Status.RoleChange.DeepCopy()
	missed := change.To
	change.To, change.Term = to.name, change.Term+1
	change.Reason += fmt.Sprintf("; moved to %s: %s had not received the stopped primary's history up to %d",
		to.name, missed, stopped)
	next := db.Status.DeepCopy()
	next.Term, next.RoleChange = change.Term, change
	if err := status.Write(ctx, r.Client, db, &db.Status, *next, client.MergeFromWithOptimisticLock{}); err != nil {
		return err
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventSwitchoverRetargeted, "Switchover",
		"Switching over to %s (term %d) instead of %s: the stopped primary's last writes reached %s only",
		to.name, change.Term, missed, to.name)
	return nil
}

// completeChange records the new primary, announces the change with its
// write gap and tells every instance.
func (r *Reconciler) completeChange(ctx context.Context, db *v1alpha1.Database, v view, token string) error {
	change := db.Status.RoleChange.DeepCopy()
	mem := r.memoryOf(db.UID)
	mem.mu.Lock()
	gapFrom := mem.lastServing
	mem.mu.Unlock()
	if gapFrom.Before(change.StartedAt.Add(-time.Minute)) || gapFrom.IsZero() {
		gapFrom = change.StartedAt.Time
	}
	now := metav1.Now()
	change.FinishedAt = &now
	change.WriteGapMilliseconds = now.Sub(gapFrom).Milliseconds()
	next := db.Status.DeepCopy()
	next.Primary, next.RoleChange, next.LastRoleChange = change.To, nil, change
	if err := status.Write(ctx, r.Client, db, &db.Status, *next, client.MergeFromWithOptimisticLock{}); err != nil {
		// The memory is left as it was: a write that did not happen
		// must not shorten the gap measured when it is tried again.
		return err
	}
	mem.mu.Lock()
	mem.lastServing, mem.lastAck = now.Time, now.Time
	mem.mu.Unlock()
	reason := v1alpha1.EventFailedOver
	if change.Type == v1alpha1.RoleChangeSwitchover {
		reason = v1alpha1.EventSwitchedOver
		if err := r.removeSwitchoverRequest(ctx, db); err != nil {
			return err
		}
	}
	metrics.RoleChanges.WithLabelValues(db.Namespace, db.Name, string(change.Type)).Inc()
	metrics.RoleChangeWriteGap.WithLabelValues(db.Namespace, db.Name, string(change.Type)).Set(float64(change.WriteGapMilliseconds) / 1000)
	r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, reason, string(change.Type),
		"%s is the primary (term %d), was %s; no instance accepted writes for %.1f s", change.To, change.Term, change.From,
		float64(change.WriteGapMilliseconds)/1000)
	v.primary = change.To
	r.assignAll(ctx, db, v, token)
	return nil
}

// removeSwitchoverRequest removes the switchover annotation.
func (r *Reconciler) removeSwitchoverRequest(ctx context.Context, db *v1alpha1.Database) error {
	if _, ok := db.Annotations[v1alpha1.AnnotationSwitchoverTo]; !ok {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationSwitchoverTo)
	if err := r.Client.Patch(ctx, db, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("removing the %s annotation: %w", v1alpha1.AnnotationSwitchoverTo, err)
	}
	return nil
}
