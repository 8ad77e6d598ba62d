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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steward-dev/steward/internal/instance"
)

// renewal renews the lease of one Database's primary between reconciles.
//
// A reconcile renews the lease when it tells the primary its role, and
// looks again 2 seconds later; but a reconcile waits in the queue behind
// those of other objects, and a busy operator (a bulk create, many
// Databases) can leave a primary unrenewed for longer than its lease. A
// primary whose lease runs out while a replica does not stream from it
// fences itself, which is an outage of a healthy primary. So, while the
// last reconcile found nothing to decide (no role change, the primary
// serving), a goroutine per Database sends the primary the assignment that
// reconcile sent, every third of the lease, outside the queue.
//
// A reconcile that is about to decide anything about the roles (a
// failover, a switchover, a primary not serving) stops it first, which
// waits for a renewal in flight: every send to the primary holds mu, so
// the lastAck the decision reads is final. A renewal carries the
// assignment's term, which an instance that took a newer one refuses. The
// goroutine renews only while the primary last answered as serving within
// unansweredRenewal, as a reconcile does, and never after the manager
// stopped (see stopAllRenewals), so a successor never has a predecessor's
// renewals beside its own.
type renewal struct {
	// mu is held for every send to the primary, by the goroutine and by
	// reconciles.
	mu     sync.Mutex
	active bool
	pod    *corev1.Pod
	token  string
	a      instance.Assignment

	// started: the goroutine runs (or ran); wake tells it that active
	// was set; stop ends it; done closes when it ended.
	started bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// renewalOf returns the Database's renewal.
func (r *Reconciler) renewalOf(uid types.UID) *renewal {
	if v, ok := r.renewals.Load(uid); ok {
		return v.(*renewal)
	}
	rn := &renewal{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	v, _ := r.renewals.LoadOrStore(uid, rn)
	return v.(*renewal)
}

// assignPrimary sends the primary its assignment, and remembers it for the
// renewals; lastAck follows an acceptance.
func (r *Reconciler) assignPrimary(ctx context.Context, uid types.UID, pod *corev1.Pod, token string, a instance.Assignment) error {
	rn := r.renewalOf(uid)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.pod, rn.token, rn.a = pod, token, a
	if err := r.instances().Assign(ctx, pod, token, a); err != nil {
		return err
	}
	r.acknowledged(uid)
	return nil
}

// acknowledged records that the primary accepted an assignment now.
func (r *Reconciler) acknowledged(uid types.UID) {
	mem := r.memoryOf(uid)
	mem.mu.Lock()
	mem.lastAck = time.Now()
	mem.mu.Unlock()
}

// keepRenewing has the goroutine renew the primary's lease with the
// assignment last sent to it, if that carries a lease, starting the
// goroutine the first time; once the manager stopped, nothing renews.
func (r *Reconciler) keepRenewing(uid types.UID) {
	rn := r.renewalOf(uid)
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.active = rn.pod != nil && rn.a.LeaseSeconds > 0
	if !rn.active {
		return
	}
	if !rn.started {
		r.renewalsMu.RLock()
		defer r.renewalsMu.RUnlock()
		if r.renewalsStopped {
			rn.active = false
			return
		}
		rn.started = true
		go r.renew(uid, rn)
	}
	select {
	case rn.wake <- struct{}{}:
	default:
	}
}

// stopRenewing stops the renewals, once any in flight has returned, and
// brings v.lastAck up to date with them.
func (r *Reconciler) stopRenewing(uid types.UID, v *view) {
	if rn, ok := r.renewals.Load(uid); ok {
		rn := rn.(*renewal)
		rn.mu.Lock()
		rn.active = false
		rn.mu.Unlock()
	}
	if v != nil {
		mem := r.memoryOf(uid)
		mem.mu.Lock()
		v.lastAck = mem.lastAck
		mem.mu.Unlock()
	}
}

// forgetRenewal ends a deleted Database's goroutine.
func (r *Reconciler) forgetRenewal(uid types.UID) {
	v, ok := r.renewals.LoadAndDelete(uid)
	if !ok {
		return
	}
	rn := v.(*renewal)
	rn.mu.Lock()
	rn.active = false
	started := rn.started
	rn.mu.Unlock()
	if started {
		close(rn.stop)
		<-rn.done
	}
}

// stopAllRenewals ends every goroutine, once its renewal in flight has
// returned: the manager stops (it is shutting down, or lost the
// leadership), and the leader after it must be the only one to renew.
func (r *Reconciler) stopAllRenewals() {
	r.renewalsMu.Lock()
	r.renewalsStopped = true
	r.renewalsMu.Unlock()
	r.renewals.Range(func(uid, _ any) bool {
		r.forgetRenewal(uid.(types.UID))
		return true
	})
}

// renew is the goroutine of one Database's renewals: while active, it
// looks every third of the lease; while not, it waits to be woken.
func (r *Reconciler) renew(uid types.UID, rn *renewal) {
	defer close(rn.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		next, active := r.renewOnce(uid, rn)
		if !active {
			select {
			case <-rn.stop:
				return
			case <-rn.wake:
				continue
			}
		}
		t.Reset(next)
		select {
		case <-rn.stop:
			return
		case <-t.C:
		}
	}
}

// renewOnce renews the lease if it is due, and returns when to look again
// (a third of the lease, from the last acceptance) and whether the
// renewals are on.
func (r *Reconciler) renewOnce(uid types.UID, rn *renewal) (time.Duration, bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	period := max(time.Duration(rn.a.LeaseSeconds)*time.Second/3, 500*time.Millisecond)
	if !rn.active {
		return period, false
	}
	mem := r.memoryOf(uid)
	mem.mu.Lock()
	lastAck, since := mem.lastAck, mem.lastServing
	mem.mu.Unlock()
	if since.Before(r.started) {
		since = r.started
	}
	now := time.Now()
	if now.Sub(since) > unansweredRenewal {
		// No word that it serves for too long: the reconciles decide.
		rn.active = false
		return period, false
	}
	if now.Sub(lastAck) < period {
		return period - now.Sub(lastAck), true
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	if err := r.instances().Assign(ctx, rn.pod, rn.token, rn.a); err != nil {
		log.Log.WithName("database").V(1).Info("A renewal of the primary's lease failed", "pod", rn.pod.Namespace+"/"+rn.pod.Name, "error", err.Error())
		return period, true
	}
	r.acknowledged(uid)
	return period, true
}
