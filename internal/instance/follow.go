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

package instance

import (
	"context"
	"fmt"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// A replica that cannot follow its primary is rebuilt: the most common
// cause is a failover during which it was cut off while ahead of the
// replica promoted, so that it holds history the new primary does not
// have; another is a primary that no longer has the log the replica needs.
// Neither mends by waiting. The first rebuild winds the replica back
// (engine.Failover's Rejoin, which is a no-op for a replica that has not
// diverged, and clones afresh when it fails): it costs a restart, so it
// comes soon. The next ones, with no streaming in between, clone the
// primary afresh, which copies every byte: they come later, and each
// later than the one before.
const (
	rebuildNone = iota
	rebuildRewind
	rebuildClone
)

// DefaultRebuildAfter is how long a replica may neither stream nor advance,
// while its primary serves, before it is wound back. A replica that
// follows streams within seconds of a start or a change of primary
// (PostgreSQL's WAL receiver tries again every 5 s).
const DefaultRebuildAfter = 15 * time.Second

// A clone afresh waits cloneWaits times the rebuild wait, doubled for each
// rebuild before it since the replica last streamed, up to
// maxCloneWaits times: 1, 2, 4, 8 and at most 16 minutes with the default.
const (
	cloneWaits    = 4
	maxCloneWaits = 64
)

// followWatch is what the manager saw of a running replica: when it last
// streamed or advanced, and how often it was rebuilt since it last
// streamed.
type followWatch struct {
	// srv and host are the server watched and the primary it follows.
	srv      engine.Server
	host     string
	since    time.Time
	position int64
	lag      *int64
	rebuilds int
	// waiting is why the last rebuild that was due did not happen, so that
	// it is logged once.
	waiting string
}

// watching begins a new watch for a server just started, or none: the
// count of rebuilds carries on until the replica streams. A replica that
// follows a new primary without a restart (engine.Repointer) gets the
// whole wait to connect to it.
func (w *followWatch) watching(srv engine.Server, host string) {
	if srv != w.srv {
		*w = followWatch{srv: srv, host: host, rebuilds: w.rebuilds}
	}
	if host != w.host {
		w.since, w.host = time.Time{}, host
	}
}

// observe records a replica's status at now. A ready replica (one that
// streams) or one whose position or replay moved is following. A status
// that could not be read (no version: the server did not answer) tells
// nothing: the wait starts again.
func (w *followWatch) observe(now time.Time, st engine.Status) {
	lagMoved := (w.lag == nil) != (st.LagBytes == nil) || w.lag != nil && *w.lag != *st.LagBytes
	if st.Ready {
		w.rebuilds = 0
	}
	if st.Ready || st.Version == "" || w.since.IsZero() || st.Position != w.position || lagMoved {
		w.since, w.waiting = now, ""
	}
	w.position, w.lag = st.Position, st.LagBytes
}

// wait is how long a replica may go without following before a rebuild
// of the kind given: after for a rewind; for a clone, cloneWaits times
// after, doubled for each rebuild since it last streamed.
func (w *followWatch) wait(after time.Duration, kind int) time.Duration {
	if kind == rebuildRewind {
		return after
	}
	return after * time.Duration(min(cloneWaits<<w.rebuilds, maxCloneWaits))
}

// due reports whether the replica has not followed for long enough for a
// rebuild of the kind given.
func (w *followWatch) due(now time.Time, after time.Duration, kind int) bool {
	return !w.since.IsZero() && now.Sub(w.since) >= w.wait(after, kind)
}

// next is the kind of the replica's next rebuild: it is wound back first,
// where the engine can, and cloned afresh after that.
func (w *followWatch) next(e engine.Engine) int {
	if _, ok := e.(engine.Failover); !ok || w.rebuilds > 0 {
		return rebuildClone
	}
	return rebuildRewind
}

// rebuildRequest is the follow watcher's word to the run loop: the
// replica srv does not follow, and is to be rebuilt as kind says.
type rebuildRequest struct {
	srv  engine.Server
	kind int
	why  string
}

// watchFollowing checks the running replica every PollInterval, beside the
// run loop so that a slow status never delays an assignment, and asks the
// run loop to rebuild it when it has neither streamed nor advanced for
// long enough while the primary it is assigned serves: running, ready, a
// primary, in the same term. A wait that ends with the primary not serving
// starts again.
func (m *manager) watchFollowing(ctx context.Context) {
	tick := time.NewTicker(m.o.PollInterval)
	defer tick.Stop()
	var w followWatch
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.mu.Lock()
		srv, a, role, host := m.srv, m.assign, m.role, m.host
		m.mu.Unlock()
		w.watching(srv, host)
		if srv == nil || role != engine.RoleReplica || a == nil || a.Primary == m.o.Config.Name || host != a.PrimaryHost {
			w.since = time.Time{}
			continue
		}
		req, ok := w.check(ctx, m, srv, a)
		if !ok {
			continue
		}
		select {
		case m.rebuildReq <- req:
			w.rebuilds++
		case <-ctx.Done():
			return
		}
	}
}

// check observes the replica srv and returns the rebuild it is due, if any.
func (w *followWatch) check(ctx context.Context, m *manager, srv engine.Server, a *Assignment) (rebuildRequest, bool) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st := srv.Status(sctx)
	cancel()
	now := time.Now()
	w.observe(now, st)
	kind := w.next(m.o.Engine)
	if !w.due(now, m.o.RebuildAfter, kind) {
		return rebuildRequest{}, false
	}
	if why := primaryServes(ctx, a); why != "" {
		// The wait starts again: once the primary serves, the replica
		// gets the whole of it to connect again.
		if why != w.waiting {
			m.log.Info("the replica does not follow its primary, which does not serve: waiting", "primary", a.Primary, "why", why, "message", st.Message)
		}
		w.since, w.waiting = now, why
		return rebuildRequest{}, false
	}
	why := fmt.Sprintf("it has not followed its primary %s for %s while that serves", a.Primary, now.Sub(w.since).Round(time.Second))
	if st.Message != "" {
		why += " (" + st.Message + ")"
	}
	return rebuildRequest{srv: srv, kind: kind, why: why}, true
}

// rebuildReplica stops the replica's server, if it is still req.srv and a
// replica, so that the next step starts it again rebuilt.
func (m *manager) rebuildReplica(ctx context.Context, req rebuildRequest) {
	m.mu.Lock()
	current := m.srv == req.srv && m.role == engine.RoleReplica
	m.mu.Unlock()
	if !current {
		return
	}
	m.log.Warn("rebuilding the replica", "why", req.why, "clone", req.kind == rebuildClone)
	if err := m.stopServer(ctx, "rebuilding: "+req.why, false); err != nil {
		m.set(PhaseStopped, err.Error())
		return
	}
	how := "winding it back to the primary's history, or cloning the primary afresh if that fails"
	if req.kind == rebuildClone {
		how = "cloning the primary afresh"
	}
	m.mu.Lock()
	m.rebuild, m.fresh = req.kind, true
	m.rebuilds++
	m.lastRebuild = req.why + "; rebuilding it: " + how
	m.mu.Unlock()
}

// primaryServes asks the manager of a's primary whether it serves in a's
// term; it returns why not, or "" when it does.
func primaryServes(ctx context.Context, a *Assignment) string {
	addr := a.Peers[a.Primary]
	if addr == "" {
		return "its status address is not known"
	}
	rctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	return askPeer(rctx, addr, a.Primary, a.Term, engine.RolePrimary)
}
