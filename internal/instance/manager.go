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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// manager runs one instance's server in the role the operator assigns.
// Its loop acts on the newest assignment; the HTTP handlers only record.
type manager struct {
	o   Options
	log *slog.Logger

	mu         sync.Mutex
	phase      string
	detail     string
	srv        engine.Server
	role       engine.Role // the role srv runs in
	host       string      // the primary srv replicates from
	term       int64
	assign     *Assignment
	fresh      bool // an assignment came since the server last stopped
	leaseUntil time.Time
	stoppedPos int64
	exited     bool  // the server exited on its own and was not restarted
	exits      int64 // how often the server exited on its own
	// noSpace is the space that was available when the server could not
	// start on a full volume; the start is tried again once more is.
	noSpace *int64
	// rebuild is how a replica that could not follow its primary is
	// prepared at its next start: rebuildRewind or rebuildClone.
	rebuild     int
	rebuilds    int64  // how often a replica was rebuilt
	lastRebuild string // why and how it was last rebuilt
	// loadedConfig is the ConfigHash of the configuration the server
	// loaded, at its start or its last reload.
	loadedConfig string
	// rebuildReq carries the follow watcher's requests to the run loop.
	rebuildReq chan rebuildRequest
	wake       chan struct{}
}

func newManager(o Options) *manager {
	return &manager{o: o, log: o.Log, phase: PhaseAwaitingRole, term: readTerm(o.Config), wake: make(chan struct{}, 1),
		rebuildReq: make(chan rebuildRequest)}
}

// offer records an assignment from the operator and wakes the loop.
func (m *manager) offer(a Assignment) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkAssignment(a, m.o.Config.Name, m.term); err != nil {
		return err
	}
	sameTerm := a.Term == m.term
	if a.Term > m.term {
		if err := writeTerm(m.o.Config, a.Term); err != nil {
			return fmt.Errorf("recording term %d: %w", a.Term, err)
		}
		m.term = a.Term
	}
	// A renewal of the term sent before the operator read the exit of
	// this primary's server is taken, but starts nothing: the operator
	// chooses between a failover and a restart once it has seen the exit.
	stale := m.exited && sameTerm && a.Primary == m.o.Config.Name && a.PrimaryExits < m.exits
	m.assign, m.fresh = &a, m.fresh || !stale
	if a.Primary == m.o.Config.Name {
		m.leaseUntil = time.Now().Add(time.Duration(a.LeaseSeconds) * time.Second)
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return nil
}

func (m *manager) set(phase, detail string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if phase != m.phase {
		m.log.Info("phase", "phase", phase, "detail", detail)
	}
	m.phase, m.detail = phase, detail
}

// report is GET /status.
func (m *manager) report(ctx context.Context) Report {
	m.mu.Lock()
	r := Report{Name: m.o.Config.Name, Phase: m.phase, Term: m.term, StoppedPosition: m.stoppedPos, Detail: m.detail,
		Exits: m.exits, Rebuilds: m.rebuilds, LastRebuild: m.lastRebuild, Config: m.loadedConfig}
	srv := m.srv
	m.mu.Unlock()
	if v, err := readVolume(volumeDir(m.o.Config)); err == nil {
		r.Volume = v
	}
	if srv == nil {
		r.Config = ""
		r.Message = r.Phase
		if r.Detail != "" {
			r.Message += ": " + r.Detail
		}
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r.Status = srv.Status(ctx)
	return r
}

// currentPhase is the manager's phase.
func (m *manager) currentPhase() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.phase
}

// run acts on assignments until ctx ends, then stops the server.
func (m *manager) run(ctx context.Context) error {
	tick := time.NewTicker(m.o.PollInterval)
	defer tick.Stop()
	fence := time.NewTicker(FenceCheckInterval)
	defer fence.Stop()
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	go m.watchFollowing(wctx)
	var hash string
	for {
		if err := m.step(ctx); err != nil {
			return err
		}
		m.mu.Lock()
		srv := m.srv
		m.mu.Unlock()
		var done <-chan struct{}
		if srv != nil {
			done = srv.Done()
			if hash == "" {
				hash, _ = configHash(m.o.Config.ConfigDir)
				m.loaded(hash)
			}
		}
		select {
		case <-ctx.Done():
			return m.stopServer(ctx, "shutting down", false)
		case <-m.wake:
		case <-done:
			err := srv.Err()
			if err == nil {
				err = errors.New("exited")
			}
			m.log.Error("the server stopped on its own", "error", err)
			m.mu.Lock()
			m.srv, m.fresh, m.exited = nil, false, true
			m.exits++
			m.mu.Unlock()
			m.set(PhaseStopped, "the server stopped on its own: "+err.Error())
		case <-tick.C:
			if srv != nil {
				hash = m.reloadIfChanged(ctx, srv, hash)
				m.loaded(hash)
			}
		case req := <-m.rebuildReq:
			m.rebuildReplica(ctx, req)
		case <-fence.C:
			if srv != nil {
				m.fenceIfLeaseRanOut(ctx, srv)
			}
		}
	}
}

// repoint makes a running replica follow the assignment's primary without
// a restart, where the server can (engine.Repointer), and reports whether
// it did; otherwise the replica restarts.
func (m *manager) repoint(ctx context.Context, srv engine.Server, a Assignment) bool {
	r, ok := srv.(engine.Repointer)
	if !ok {
		return false
	}
	port := a.PrimaryPort
	if port == 0 {
		port = m.o.Config.PrimaryPort
	}
	if err := r.Repoint(ctx, a.PrimaryHost, port); err != nil {
		m.log.Warn("following the new primary without a restart failed: restarting", "primary", a.PrimaryHost, "error", err)
		return false
	}
	m.mu.Lock()
	m.host = a.PrimaryHost
	m.mu.Unlock()
	m.log.Info("following a new primary", "primary", a.PrimaryHost)
	return true
}

// errServerStart: the server did not start.
var errServerStart = errors.New("starting the server")

// step brings the server in line with the newest assignment. It returns
// an error only when the server refuses to start: the manager exits then.
func (m *manager) step(ctx context.Context) error {
	m.mu.Lock()
	a, fresh, srv, role, host := m.assign, m.fresh, m.srv, m.role, m.host
	m.mu.Unlock()
	if a == nil {
		return nil // no word from the operator yet
	}
	select {
	case <-ctx.Done():
		return nil // shutting down: run stops the server
	default:
	}
	want := engine.RoleReplica
	if a.Primary == m.o.Config.Name {
		want = engine.RolePrimary
	}
	switch {
	case srv != nil && role == want && (want == engine.RolePrimary || host == a.PrimaryHost):
		return nil // running as assigned
	case srv != nil && role == engine.RoleReplica && want == engine.RolePrimary:
		m.promote(ctx, srv, a.Term)
		return nil
	case srv != nil && role == engine.RoleReplica && m.repoint(ctx, srv, *a):
		return nil
	case srv != nil:
		// A primary demoted, or a replica of another primary: stop, then
		// start again below as the assignment says.
		wasPrimary := role == engine.RolePrimary
		if err := m.stopServer(ctx, "the primary is now "+a.Primary, false); err != nil {
			m.set(PhaseStopped, err.Error())
			return nil
		}
		if wasPrimary {
			// The new primary is promoted once it has everything this one
			// wrote; the operator's next assignment comes after that, and
			// the rejoin with it.
			m.recordStoppedPosition(ctx)
			return nil
		}
	case !fresh:
		return nil // stopped or fenced: wait for the operator's next word
	}
	if m.waitingForSpace() {
		return nil
	}
	if err := m.startAs(ctx, *a, want); err != nil {
		if errors.Is(err, errServerStart) && ctx.Err() == nil && m.outOfSpace(err) {
			return nil // tried again once the volume has grown
		}
		if errors.Is(err, errServerStart) && ctx.Err() == nil {
			// The server refuses to start (its configuration, most often):
			// the container exits, its log's tail becomes the pod's
			// termination message, and the restarts show as a crash loop.
			return err
		}
		m.log.Error("starting in the assigned role failed", "role", string(want), "error", err)
		m.mu.Lock()
		m.fresh = false // try again at the next assignment
		m.mu.Unlock()
		m.set(PhaseStopped, err.Error())
	}
	return nil
}

// startAs prepares the data directory for the role (create, clone, rewind)
// and starts the server in it.
func (m *manager) startAs(ctx context.Context, a Assignment, want engine.Role) error {
	cfg := m.o.Config
	if want == engine.RoleReplica {
		cfg.PrimaryHost, cfg.PrimaryPort = a.PrimaryHost, a.PrimaryPort
		if cfg.PrimaryPort == 0 {
			cfg.PrimaryPort = m.o.Config.PrimaryPort
		}
	} else {
		cfg.PrimaryHost = ""
	}
	ok, err := m.o.Engine.Initialized(cfg)
	if err != nil {
		return fmt.Errorf("checking the data directory: %w", err)
	}
	failover, _ := m.o.Engine.(engine.Failover)
	detail := ""
	if ok && want == engine.RoleReplica && m.rebuildAs() == rebuildClone {
		m.log.Warn("cloning the primary afresh", "primary", cfg.PrimaryHost)
		if err := emptyDir(cfg.DataDir); err != nil {
			return fmt.Errorf("emptying the data directory: %w", err)
		}
		ok, detail = false, "cloning "+cfg.PrimaryHost+" afresh: this replica could not follow it"
	}
	switch {
	case !ok && want == engine.RolePrimary && !a.Bootstrap:
		return errors.New("the data directory is empty and this is not the Database's first start: a replica must take over")
	case !ok:
		m.set(PhaseInitialising, detail)
		if err := initialise(ctx, m.o.Engine, cfg, m.log); err != nil {
			return err
		}
	case failover != nil:
		replica, err := failover.IsReplica(cfg)
		if err != nil {
			return err
		}
		if want == engine.RoleReplica && (!replica || m.needsRewind()) {
			if err := m.rejoin(ctx, failover, cfg); err != nil {
				return err
			}
		}
		if want == engine.RolePrimary && replica {
			// Started as a standby, then promoted: a new timeline, so that
			// the history it ends is told apart from the old primary's.
			return m.startThenPromote(ctx, cfg, a)
		}
	}
	return m.startServer(ctx, cfg, want)
}

// needsRewind: a replica that ran before the newest role change may hold
// history the new primary does not (it replicated from a primary that
// wrote on after it); it winds back too, which is a no-op when it is
// behind. So does one stopped because it could not follow.
func (m *manager) needsRewind() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited || m.rebuild != rebuildNone
}

// rebuildAs is how the replica stopped because it could not follow is
// prepared at its next start.
func (m *manager) rebuildAs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rebuild
}

// rejoin winds a former primary back to follow the new one; when that
// fails it clones the new primary afresh.
func (m *manager) rejoin(ctx context.Context, f engine.Failover, cfg engine.Config) error {
	m.set(PhaseRejoining, "following "+cfg.PrimaryHost)
	// Only a failure with the primary answering is a reason to clone
	// afresh; one that cannot be reached yet is waited for.
	addr := net.JoinHostPort(cfg.PrimaryHost, strconv.Itoa(cfg.PrimaryPort))
	for {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		m.set(PhaseRejoining, "waiting for the primary at "+addr+": "+err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	err := f.Rejoin(ctx, cfg)
	if err == nil {
		m.log.Info("rejoined as a replica", "primary", cfg.PrimaryHost)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	m.log.Warn("winding back failed: cloning the primary afresh", "error", err)
	if err := emptyDir(cfg.DataDir); err != nil {
		return fmt.Errorf("emptying the data directory: %w", err)
	}
	m.set(PhaseInitialising, "cloning "+cfg.PrimaryHost)
	return initialise(ctx, m.o.Engine, cfg, m.log)
}

func (m *manager) startThenPromote(ctx context.Context, cfg engine.Config, a Assignment) error {
	standby := cfg
	standby.PrimaryHost = a.PrimaryHost
	if standby.PrimaryHost == "" {
		standby.PrimaryHost = "localhost" // nothing to stream from; promoted at once
	}
	if err := m.startServer(ctx, standby, engine.RoleReplica); err != nil {
		return err
	}
	m.mu.Lock()
	srv := m.srv
	m.mu.Unlock()
	m.promote(ctx, srv, a.Term)
	return nil
}

// startServer starts the server and records it.
func (m *manager) startServer(ctx context.Context, cfg engine.Config, role engine.Role) error {
	m.set(PhaseStarting, string(role))
	m.log.Info("starting the server", "role", string(role), "primary", cfg.PrimaryHost)
	srv, err := m.o.Engine.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", errServerStart, err)
	}
	if role == engine.RolePrimary {
		if err := srv.EnsureUsers(ctx); err != nil {
			_ = srv.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("ensuring users: %w", err)
		}
		m.log.Info("users ensured", "owner", cfg.Owner.Username, "replication", cfg.Replication.Username, "database", cfg.Database)
	}
	m.mu.Lock()
	m.srv, m.role, m.host, m.exited, m.stoppedPos, m.rebuild = srv, role, cfg.PrimaryHost, false, 0, rebuildNone
	m.mu.Unlock()
	m.set(PhaseRunning, string(role))
	m.log.Info("server running", "role", string(role))
	return nil
}

// promote makes the running replica the primary.
func (m *manager) promote(ctx context.Context, srv engine.Server, term int64) {
	f, ok := m.o.Engine.(engine.Failover)
	if !ok {
		m.set(PhaseRunning, "this engine cannot promote a replica")
		return
	}
	m.set(PhasePromoting, "")
	began := time.Now()
	if err := f.Promote(ctx, srv, term); err != nil {
		m.log.Error("promotion failed", "error", err)
		m.set(PhaseRunning, "promotion failed: "+err.Error())
		return
	}
	if err := srv.EnsureUsers(ctx); err != nil {
		m.log.Warn("ensuring users after the promotion", "error", err)
	}
	m.mu.Lock()
	m.role, m.host = engine.RolePrimary, ""
	m.mu.Unlock()
	m.set(PhaseRunning, string(engine.RolePrimary))
	m.log.Info("promoted to primary", "took", time.Since(began).String())
}

// stopServer stops the server cleanly, if one runs; with fence, at once
// where the server can (engine.Fencer).
func (m *manager) stopServer(ctx context.Context, why string, fence bool) error {
	m.mu.Lock()
	srv := m.srv
	m.mu.Unlock()
	if srv == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.StopTimeout)
	defer cancel()
	m.log.Info("stopping the server", "why", why)
	var err error
	if f, ok := srv.(engine.Fencer); ok && fence {
		err = f.Fence()
	} else {
		err = srv.Stop(sctx)
	}
	m.mu.Lock()
	m.srv, m.fresh = nil, false
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("stopping the server: %w", err)
	}
	m.set(PhaseStopped, why)
	m.log.Info("server stopped")
	return nil
}

// recordStoppedPosition notes where a stopped primary's history ends, so
// that the operator promotes a replica only once it has all of it.
func (m *manager) recordStoppedPosition(ctx context.Context) {
	f, ok := m.o.Engine.(engine.Failover)
	if !ok {
		return
	}
	pos, err := f.StoppedPosition(ctx, m.o.Config)
	if err != nil {
		m.log.Warn("reading where the stopped primary ended", "error", err)
		return
	}
	m.mu.Lock()
	m.stoppedPos = pos
	m.mu.Unlock()
}

// fenceIfLeaseRanOut stops a primary whose lease ran out while not every
// replica streams from it: the operator may be promoting one.
func (m *manager) fenceIfLeaseRanOut(ctx context.Context, srv engine.Server) {
	m.mu.Lock()
	a, role, until := m.assign, m.role, m.leaseUntil
	m.mu.Unlock()
	if role != engine.RolePrimary || a == nil || a.LeaseSeconds <= 0 || time.Now().Before(until) {
		return
	}
	var streaming []string
	if f, ok := m.o.Engine.(engine.Failover); ok && !f.PrimaryTracksReplicas() {
		streaming = confirmedReplicas(ctx, a)
	} else {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		streaming = srv.Status(sctx).Streaming
		cancel()
	}
	if !mustFence(a, until, time.Now(), streaming) {
		return
	}
	m.log.Warn("fencing: no word from the operator within the lease and not every replica streams from this primary",
		"lease", a.LeaseSeconds, "streaming", streaming, "replicas", a.Replicas)
	if err := m.stopServer(ctx, "fenced", true); err != nil {
		m.log.Error("fencing failed", "error", err)
	}
	m.set(PhaseFenced, "the lease ran out and not every replica streamed from this primary")
}

// loaded records the hash of the configuration the server loaded.
func (m *manager) loaded(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loadedConfig = hash
}

// reloadIfChanged reloads the configuration when ConfigDir changed.
func (m *manager) reloadIfChanged(ctx context.Context, srv engine.Server, hash string) string {
	h, err := configHash(m.o.Config.ConfigDir)
	if err != nil {
		m.log.Warn("reading the configuration", "error", err)
		return hash
	}
	if h == hash {
		return hash
	}
	m.log.Info("configuration changed, reloading")
	if err := srv.Reload(ctx); err != nil {
		m.log.Error("reload failed", "error", err)
		return hash
	}
	s := srv.Status(ctx)
	for _, r := range s.Refused {
		m.log.Error("the server could not apply a setting", "setting", r.Name, "reason", r.Reason)
	}
	if len(s.PendingRestart) > 0 {
		m.log.Warn("settings take effect only after a restart", "pendingRestart", s.PendingRestart)
	} else if len(s.Refused) == 0 {
		m.log.Info("configuration reloaded")
	}
	return h
}

// outOfSpace reports whether the server could not start for want of
// space on its volume. Then the manager does not exit, as for another
// refusal: it keeps reporting, so that the operator sees the full volume
// and grows it, and starts the server again once the volume has more
// room (waitingForSpace).
func (m *manager) outOfSpace(err error) bool {
	v, verr := readVolume(volumeDir(m.o.Config))
	if verr != nil || !fullVolume(v, err) {
		return false
	}
	m.log.Error("the server cannot start: its volume is full; starting it again once the volume has grown",
		"availableBytes", v.AvailableBytes, "capacityBytes", v.CapacityBytes, "error", err)
	m.mu.Lock()
	m.noSpace = &v.AvailableBytes
	m.mu.Unlock()
	m.set(PhaseStopped, "the volume is full: waiting for it to grow: "+err.Error())
	return true
}

// waitingForSpace reports whether the server, which could not start on a
// full volume, must wait still: the volume has not gained a MiB since.
func (m *manager) waitingForSpace() bool {
	m.mu.Lock()
	was := m.noSpace
	m.mu.Unlock()
	if was == nil {
		return false
	}
	v, err := readVolume(volumeDir(m.o.Config))
	if err == nil && v.AvailableBytes < *was+1<<20 {
		return true
	}
	m.mu.Lock()
	m.noSpace = nil
	m.mu.Unlock()
	if err == nil {
		m.log.Info("the volume has room again: starting the server", "availableBytes", v.AvailableBytes)
	}
	return false
}
