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
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

func TestFollowWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	after := 15 * time.Second
	lag := func(v int64) *int64 { return &v }
	var w followWatch
	w.observe(t0, engine.Status{Version: "15", Position: 10})
	if w.due(t0.Add(14*time.Second), after, rebuildRewind) || !w.due(t0.Add(after), after, rebuildRewind) {
		t.Fatalf("a replica that neither streams nor advances is due a rewind after %s, not before", after)
	}
	if w.due(t0.Add(59*time.Second), after, rebuildClone) || !w.due(t0.Add(4*after), after, rebuildClone) {
		t.Fatalf("a replica that was never rebuilt is due a clone after %s, not before", 4*after)
	}
	w.observe(t0.Add(10*time.Second), engine.Status{Version: "15", Position: 11})
	if w.due(t0.Add(24*time.Second), after, rebuildRewind) {
		t.Fatal("a replica whose position moved is due the whole wait after it moved, not before")
	}
	w.observe(t0.Add(20*time.Second), engine.Status{Version: "15", Position: 11, LagBytes: lag(5)})
	w.observe(t0.Add(30*time.Second), engine.Status{Version: "15", Position: 11, LagBytes: lag(3)})
	if w.due(t0.Add(40*time.Second), after, rebuildRewind) {
		t.Fatal("a replica whose replay moved (its lag fell at the same position) is following")
	}
	w.observe(t0.Add(50*time.Second), engine.Status{Message: "connecting: too many clients"})
	if w.due(t0.Add(60*time.Second), after, rebuildRewind) {
		t.Fatal("a status that could not be read starts the wait again")
	}
	w.observe(t0.Add(60*time.Second), engine.Status{Version: "15", Position: 11, LagBytes: lag(3)})
	w.observe(t0.Add(70*time.Second), engine.Status{Version: "15", Position: 11, LagBytes: lag(3), Ready: true})
	if w.due(t0.Add(80*time.Second), after, rebuildRewind) {
		t.Fatal("a ready replica is following")
	}
	failover := &fakeEngine{}
	if w.next(failover) != rebuildRewind || w.next(noFailover{}) != rebuildClone {
		t.Fatal("the first rebuild winds back where the engine can, and clones where it cannot")
	}
	srv := &fakeServer{}
	w.watching(srv, "db-0")
	w.observe(t0, engine.Status{Version: "15", Position: 10})
	w.watching(srv, "db-2")
	w.observe(t0.Add(20*time.Second), engine.Status{Version: "15", Position: 10})
	if w.due(t0.Add(30*time.Second), after, rebuildRewind) || !w.due(t0.Add(35*time.Second), after, rebuildRewind) {
		t.Fatal("a replica told to follow another primary without a restart gets the whole wait from then")
	}
	w.rebuilds = 1
	w.watching(&fakeServer{}, "db-2")
	w.observe(t0, engine.Status{Version: "15", Position: 10})
	if w.rebuilds != 1 || w.next(failover) != rebuildClone {
		t.Fatalf("a rebuild after a rebuild with no streaming between them clones (rebuilds %d)", w.rebuilds)
	}
	if w.due(t0.Add(119*time.Second), after, rebuildClone) || !w.due(t0.Add(8*after), after, rebuildClone) {
		t.Fatal("the clone after a rewind waits 2 minutes")
	}
	w.rebuilds = 2
	if got := w.wait(after, rebuildClone); got != 4*time.Minute {
		t.Fatalf("each further clone waits twice as long: %s", got)
	}
	w.rebuilds = 10
	if got := w.wait(after, rebuildClone); got != 16*time.Minute {
		t.Fatalf("the wait is bounded by 16 minutes: %s", got)
	}
	w.observe(t0, engine.Status{Version: "15", Position: 10, Ready: true})
	if w.rebuilds != 0 {
		t.Fatal("a replica that streams again starts its count of rebuilds afresh")
	}
}

// noFailover is an engine that cannot wind a replica back.
type noFailover struct{ engine.Engine }

// fakeEngine runs fake replicas whose Status the test sets, and records
// what the manager asks of it.
type fakeEngine struct {
	engine.Engine // the pure parts are not used

	mu       sync.Mutex
	status   engine.Status
	advance  bool // each Status reports a position one further
	starts   int
	rejoins  int
	clones   int
	rejoinOK bool
}

func (e *fakeEngine) set(fn func(e *fakeEngine)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(e)
}

// counts are what the engine was asked to do.
type counts struct{ starts, rejoins, clones int }

func (e *fakeEngine) get() counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return counts{starts: e.starts, rejoins: e.rejoins, clones: e.clones}
}

func marker(cfg engine.Config) string { return filepath.Join(cfg.DataDir, "PG_VERSION") }

func (e *fakeEngine) Initialized(cfg engine.Config) (bool, error) {
	_, err := os.Stat(marker(cfg))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (e *fakeEngine) InitPrimary(context.Context, engine.Config) error {
	return errors.New("the fake engine runs replicas only")
}

func (e *fakeEngine) InitReplica(_ context.Context, cfg engine.Config) error {
	e.set(func(e *fakeEngine) { e.clones++ })
	return os.WriteFile(marker(cfg), []byte("clone"), 0o600)
}

func (e *fakeEngine) Start(context.Context, engine.Config) (engine.Server, error) {
	e.set(func(e *fakeEngine) { e.starts++ })
	return &fakeServer{e: e, done: make(chan struct{})}, nil
}

func (e *fakeEngine) IsReplica(engine.Config) (bool, error) { return true, nil }

func (e *fakeEngine) Rejoin(context.Context, engine.Config) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rejoins++
	if !e.rejoinOK {
		return errors.New("the new primary refuses this history")
	}
	return nil
}

func (e *fakeEngine) StoppedPosition(context.Context, engine.Config) (int64, error) { return 0, nil }
func (e *fakeEngine) Promote(context.Context, engine.Server, int64) error           { return nil }
func (e *fakeEngine) PrimaryTracksReplicas() bool                                   { return true }

type fakeServer struct {
	e    *fakeEngine
	once sync.Once
	done chan struct{}
}

func (s *fakeServer) EnsureUsers(context.Context) error { return nil }
func (s *fakeServer) Reload(context.Context) error      { return nil }
func (s *fakeServer) Done() <-chan struct{}             { return s.done }
func (s *fakeServer) Err() error                        { return nil }
func (s *fakeServer) Stop(context.Context) error {
	s.once.Do(func() { close(s.done) })
	return nil
}

func (s *fakeServer) Status(context.Context) engine.Status {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if s.e.advance {
		s.e.status.Position++
	}
	st := s.e.status
	st.Role = engine.RoleReplica
	return st
}

// fakePrimary answers GET /status as the primary's instance manager would.
type fakePrimary struct {
	mu     sync.Mutex
	report Report
}

func (p *fakePrimary) set(fn func(r *Report)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(&p.report)
}

func (p *fakePrimary) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = json.NewEncoder(w).Encode(p.report)
}

// TestReplicaThatCannotFollowIsRebuilt runs the manager of a replica on a
// fake engine: a replica that neither streams nor advances while its
// primary serves is wound back, then, still not following, cloned afresh;
// one whose primary does not serve, one that advances and one that
// streams are left alone.
func TestReplicaThatCannotFollowIsRebuilt(t *testing.T) {
	const after = 200 * time.Millisecond
	dir := t.TempDir()
	cfg := engine.Config{Name: "db-1", DataDir: filepath.Join(dir, "data"), RunDir: filepath.Join(dir, "run"), ConfigDir: dir}
	for _, d := range []string{cfg.DataDir, cfg.RunDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(marker(cfg), []byte("replica"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The primary's server: the rejoin waits until its port answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	primary := &fakePrimary{report: Report{Name: "db-0", Term: 1, Phase: PhaseRunning,
		Status: engine.Status{Role: engine.RolePrimary, Ready: true}}}
	hs := httptest.NewServer(primary)
	t.Cleanup(hs.Close)

	eng := &fakeEngine{status: engine.Status{Version: "15", Position: 100, Message: "not connected to the primary"}, rejoinOK: true}
	m := newManager(Options{Engine: eng, Config: cfg, PollInterval: 20 * time.Millisecond, StopTimeout: 5 * time.Second,
		RebuildAfter: after, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager: %v", err)
		}
	})
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	if err := m.offer(Assignment{Term: 1, Primary: "db-0", PrimaryHost: host, PrimaryPort: p, Replicas: []string{"db-1"},
		Peers: map[string]string{"db-0": hs.Listener.Addr().String()}}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func(f counts, r Report) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			f, r := eng.get(), m.report(t.Context())
			if ok(f, r) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: starts %d, rejoins %d, clones %d; report %+v", what, f.starts, f.rejoins, f.clones, r)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// stays checks, for many times the wait, that the engine sees the
	// counts it saw at first.
	stays := func(what string) {
		t.Helper()
		before := eng.get()
		time.Sleep(30 * after)
		if now := eng.get(); now != before {
			t.Fatalf("%s: starts %d→%d, rejoins %d→%d, clones %d→%d", what,
				before.starts, now.starts, before.rejoins, now.rejoins, before.clones, now.clones)
		}
	}

	waitFor("the first rebuild: wound back, started again", func(f counts, r Report) bool {
		return f.rejoins == 1 && f.starts == 2 && r.Rebuilds == 1 && r.Phase == PhaseRunning
	})
	if f := eng.get(); f.clones != 0 {
		t.Fatalf("the first rebuild winds back; it cloned %d times", f.clones)
	}
	waitFor("the second rebuild: cloned afresh", func(f counts, r Report) bool {
		return f.clones == 1 && f.starts == 3 && r.Rebuilds == 2 && r.Phase == PhaseRunning
	})
	if f := eng.get(); f.rejoins != 1 {
		t.Fatalf("the second rebuild clones without winding back; rejoins %d", f.rejoins)
	}
	if b, err := os.ReadFile(marker(cfg)); err != nil || string(b) != "clone" {
		t.Fatalf("the data directory is the clone's: %q, %v", b, err)
	}

	// The primary is not a ready primary of this term: no rebuild.
	primary.set(func(r *Report) { r.Ready, r.Message = false, "starting" })
	stays("a primary that is not ready")
	primary.set(func(r *Report) { r.Ready, r.Term = true, 2 })
	stays("a primary of another term")
	hs.Close()
	stays("a primary whose manager does not answer")

	// A replica whose position moves, or that streams, is following.
	primary = &fakePrimary{report: Report{Name: "db-0", Term: 1, Phase: PhaseRunning,
		Status: engine.Status{Role: engine.RolePrimary, Ready: true}}}
	hs2 := httptest.NewServer(primary)
	t.Cleanup(hs2.Close)
	a := *m.assign
	a.Peers = map[string]string{"db-0": hs2.Listener.Addr().String()}
	if err := m.offer(a); err != nil {
		t.Fatal(err)
	}
	eng.set(func(e *fakeEngine) { e.advance = true })
	stays("a replica that advances")
	eng.set(func(e *fakeEngine) { e.advance, e.status.Ready, e.status.Message = false, true, "" })
	stays("a replica that streams")

	// Having streamed, a replica that stops following is wound back
	// first again; a rewind that fails clones afresh.
	eng.set(func(e *fakeEngine) { e.status.Ready, e.rejoinOK = false, false })
	before := eng.get()
	waitFor("a rebuild after streaming: wound back, which failed, then cloned", func(f counts, r Report) bool {
		return f.rejoins == before.rejoins+1 && f.clones == before.clones+1 && r.Rebuilds == 3 && r.Phase == PhaseRunning
	})
}
