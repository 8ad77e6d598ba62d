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
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestBenchSmall runs every measure of the benchmark at a small scale for
// each kind (for AppStacks, the stacks and idle measures), so that `make
// bench` is known to work, and checks the figures that do not depend on the
// machine's speed.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a full local cluster")
	}
	t.Run("WebApp", func(t *testing.T) {
		res, cfg := runSmall(t, "WebApp", 20)
		// Each of these WebApps is Ready well within the settle delay, so
		// first convergence is a Deployment, a Service and one status
		// write, at Ready (kstatus reads the CRD's default
		// observedGeneration -1 as in progress until then). A reconcile
		// that reads the WebApp from a cache that has not yet seen its
		// status write repeats it (a no-op on the server), and a WebApp not
		// Ready 30 s after its creation gets a second write; on a slow or
		// loaded machine (other clusters' tests beside this one) a few
		// WebApps in twenty may see either. make bench measures the rate.
		fc := res.FirstConvergence
		for _, k := range []string{"create deployments", "create services"} {
			if got := fc.RequestsPerObj[k]; got != 1 {
				t.Errorf("%s per WebApp = %v, want 1", k, got)
			}
		}
		status := fc.RequestsPerObj["patch webapps/status"]
		if status < 1 || status > 1.5 {
			t.Errorf("status writes per WebApp = %v, want 1 to 1.5 (all: %v)", status, fc.RequestsPerObj)
		}
		if !near(fc.ObjectWritesPer, 2+status) {
			t.Errorf("object writes per WebApp = %v, want 2 + %v status (all: %v)", fc.ObjectWritesPer, status, fc.RequestsPerObj)
		}
		checkSmall(t, res, cfg)
		checkConfigRollout(t, res, cfg)
		checkPeer(t, res)
		checkRequests(t, res, cfg)
		checkFloor(t, res)
	})
	t.Run("Database", func(t *testing.T) {
		res, cfg := runSmall(t, "Database", 10)
		// Each child is created once: two Secrets, the ConfigMap, three
		// Services, the StatefulSet (one replica: no PodDisruptionBudget);
		// one patch adds the finalizer and one labels the pod with its
		// role.
		fc := res.FirstConvergence
		want := map[string]float64{
			"create secrets": 2, "create configmaps": 1, "create services": 3, "create statefulsets": 1,
			"patch databases": 1, "patch pods": 1,
		}
		fixed := 0.0
		for k, n := range want {
			fixed += n
			if got := fc.RequestsPerObj[k]; got != n {
				t.Errorf("%s per Database = %v, want %v (all: %v)", k, got, n, fc.RequestsPerObj)
			}
		}
		// The status is written once, at Ready, the steps before it held
		// back (kstatus reads the CRD's default observedGeneration -1 as
		// in progress meanwhile); a second time only for a Database not
		// Ready 60 s after its StatefulSet's creation
		// (v1alpha1.DatabaseFirstRolloutSettle), as on a loaded machine.
		status := fc.RequestsPerObj["patch databases/status"]
		if status < 1 || status > 2 {
			t.Errorf("status writes per Database = %v, want 1 to 2", status)
		}
		if !near(fc.ObjectWritesPer, fixed+status) {
			t.Errorf("object writes per Database = %v, want %v + %v status (all: %v)", fc.ObjectWritesPer, fixed, status, fc.RequestsPerObj)
		}
		checkSmall(t, res, cfg)
	})
	t.Run("AppStack", func(t *testing.T) {
		cfg := smallConfig(t, "AppStack", 10)
		cfg.Measures = "stacks,idle"
		res := runConfig(t, cfg)
		s := res.Stacks
		if s == nil || len(s.Rounds) != 1 {
			t.Fatalf("stacks = %+v, want one round", s)
		}
		r := s.Rounds[0]
		if len(r.StackReadySeconds) != cfg.Stacks || len(r.BaselineReadySeconds) != cfg.Stacks {
			t.Errorf("%d stacks and %d baseline stacks timed, want %d each", len(r.StackReadySeconds), len(r.BaselineReadySeconds), cfg.Stacks)
		}
		if s.OrderViolations != 0 || s.OrderChecks != 3*cfg.Stacks {
			t.Errorf("%d of %d dependency edges violated, want 0 of %d: %v", s.OrderViolations, s.OrderChecks, 3*cfg.Stacks, r.Violations)
		}
		// Each component is created once and the finalizer added once;
		// the status is written when a component's readiness or reason
		// changes, which depends on timing.
		want := map[string]float64{"create databases": 1, "create caches": 1, "create webapps": 2, "update appstacks": 1}
		for k, n := range want {
			if got := s.RequestsPerStack[k]; got != n {
				t.Errorf("%s per stack = %v, want %v (all: %v)", k, got, n, s.RequestsPerStack)
			}
		}
		// A new stack's status is written once, at Ready, when it is Ready
		// within the 60 s it may be held back. One that takes longer is
		// written then, and again at each change of a component's
		// readiness or reason: up to about 10 for these stacks.
		slowest := slices.Max(r.StackReadySeconds)
		if w := s.StatusWritesPerStack; (slowest < v1alpha1.AppStackFirstStatusSettle.Seconds()-5 && w != 1) || w < 1 || w > 16 {
			t.Errorf("AppStack status writes per stack = %v, the slowest stack Ready in %.1f s; want 1 when every stack is Ready within %s, else 1 to 16",
				w, slowest, v1alpha1.AppStackFirstStatusSettle)
		}
		if res.Idle.Writes != 0 {
			t.Errorf("%v writes in the idle window: %v", res.Idle.Writes, res.Idle.Requests)
		}
	})
}

// checkRequests checks that the requests measure sent each of its requests
// N times and read the API server's CPU around them: a create of a WebApp
// or a patch of its status costs the API server some, though at 20 of each
// the CPU time, read in hundredths of a second, is coarse.
func checkRequests(t *testing.T, res *results, cfg config) {
	t.Helper()
	if len(res.Requests) != 6 {
		t.Fatalf("request costs = %+v, want 6 kinds", res.Requests)
	}
	// The figures per request are what is left once the API server's idle
	// CPU is taken off, which on a few requests and a loaded machine can
	// be nothing (0, never less); its CPU time over the requests was read.
	for _, c := range res.Requests {
		if c.Requests != cfg.N || c.APIServerMs < 0 || c.EtcdMs < 0 {
			t.Errorf("request cost %+v, want %d requests and no negative time", c, cfg.N)
		}
		if c.APIServerSeconds <= 0 {
			t.Errorf("%s: the API server's CPU time over %d requests read as %v s", c.Request, cfg.N, c.APIServerSeconds)
		}
	}
}

// checkFloor checks the floor measure's one round and the plain client's
// beside it: both timed, the cluster's processes did the work, and no
// operator ran.
func checkFloor(t *testing.T, res *results) {
	t.Helper()
	f := res.Floor
	if f == nil || len(f.FloorSeconds) != 1 || len(f.RawSeconds) != 1 || len(f.Ratios) != 1 || f.MedianRatio <= 0 || f.MedianCPURatio <= 0 {
		t.Fatalf("floor = %+v, want one round of each, timed", f)
	}
	// The watched round's watches held every WebApp, Deployment and pod
	// of the round, or it would have failed (stewardWatches.sawAll).
	if len(f.WatchedSeconds) != 1 || len(f.WatchedRatios) != 1 || f.MedianWatchedRatio <= 0 || f.MedianWatchedCPURatio <= 0 {
		t.Fatalf("floor = %+v, want one round beside Steward's watches, timed", f)
	}
	if want := res.Convergence.MedianRatio / f.MedianWatchedRatio; f.StewardOverWatched <= 0 || !near(f.StewardOverWatched, want) {
		t.Errorf("Steward over the floor with watches = %v, want %v", f.StewardOverWatched, want)
	}
	q := f.Queued
	if q == nil || len(q.Seconds) != 1 || len(q.Ratios) != 1 || q.MedianRatio <= 0 || q.MedianCPURatio <= 0 {
		t.Fatalf("queued floor = %+v, want one round beside Steward's watches, timed", q)
	}
	if want := res.Convergence.MedianRatio / q.MedianRatio; q.StewardOver <= 0 || !near(q.StewardOver, want) {
		t.Errorf("Steward over the queued floor = %v, want %v", q.StewardOver, want)
	}
	for _, round := range []cpuTimes{f.FloorCPU[0], f.RawCPU[0], f.WatchedCPU[0], q.CPU[0]} {
		for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager"} {
			if round[name] <= 0 {
				t.Errorf("floor measure: %s used %v CPU seconds in a round (all: %v)", name, round[name], round)
			}
		}
		if _, ok := round["operator"]; ok {
			t.Errorf("floor measure: an operator's CPU was counted (all: %v)", round)
		}
	}
}

// runSmall runs the benchmark for kind with n objects per bulk create.
func runSmall(t *testing.T, kind string, n int) (*results, config) {
	t.Helper()
	cfg := smallConfig(t, kind, n)
	return runConfig(t, cfg), cfg
}

// smallConfig is the small benchmark of kind, with n objects (or stacks)
// per bulk create.
func smallConfig(t *testing.T, kind string, n int) config {
	t.Helper()
	return config{
		Kind: kind, N: n, Stacks: n, Namespaces: 4, Concurrency: 4, Rounds: 1,
		Edits: 3, Invalid: 10, Probes: 3, UnrelatedConfigMaps: 100, UnrelatedSecret: 20,
		Idle: 5 * time.Second, ControllerManagerQPS: 100, KCMBurst: 200,
		ConfigConsumers: 40, ConfigChanged: 4, ConfigRounds: 1, ConfigMaxConcurrent: intList{5},
		Peer: true, PeerConcurrency: 10, FloorWatch: true, FloorQueue: true, // WebApp only
		Out: filepath.Join(t.TempDir(), "results.json"),
	}
}

// runConfig runs the benchmark with cfg.
func runConfig(t *testing.T, cfg config) *results {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	res, err := run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkSmall checks what every kind must meet.
func checkSmall(t *testing.T, res *results, cfg config) {
	t.Helper()
	if c := res.Convergence; len(c.Ratios) != 1 || c.MedianRatio <= 0 {
		t.Errorf("convergence = %+v", c)
	}
	checkCPU(t, "Steward's", res.Convergence.StewardCPU, res.Convergence.RawCPU)
	if res.Idle.Writes != 0 {
		t.Errorf("%v writes in the idle window: %v", res.Idle.Writes, res.Idle.Requests)
	}
	if n := len(res.ChangeLatency.AtRestMs) + len(res.ChangeLatency.DuringBulkMs); n != 2*cfg.Edits {
		t.Errorf("%d edits timed, want %d", n, 2*cfg.Edits)
	}
	if n := len(res.Isolation.ReadyMs); n != cfg.Probes {
		t.Errorf("%d probes timed, want %d", n, cfg.Probes)
	}
	if res.Memory.Steady.MedianRSS <= 0 || res.Memory.SteadyWithUnrelated.MedianHeap <= 0 {
		t.Errorf("memory not sampled: %+v", res.Memory)
	}

	raw, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	var back results
	if err := json.Unmarshal(raw, &back); err != nil || back.Convergence.MedianRatio != res.Convergence.MedianRatio {
		t.Errorf("JSON results do not round-trip: %v", err)
	}
}

// checkCPU checks that the CPU time of each of the operator's rounds and of
// the plain client's was read for the processes doing the work: the API
// server serves every request of both, and the operator reconciles only in
// its own.
func checkCPU(t *testing.T, whose string, op, raw []cpuTimes) {
	t.Helper()
	if len(op) != 1 || len(raw) != 1 {
		t.Fatalf("%s CPU times: %d operator rounds and %d plain client's, want 1 each", whose, len(op), len(raw))
	}
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "bench", "operator"} {
		if op[0][name] <= 0 {
			t.Errorf("%s round: %s used %v CPU seconds, want more than 0 (all: %v)", whose, name, op[0][name], op[0])
		}
	}
	if raw[0]["kube-apiserver"] <= 0 {
		t.Errorf("plain client's round: the API server used %v CPU seconds (all: %v)", raw[0]["kube-apiserver"], raw[0])
	}
}

// checkConfigRollout checks that a change of a key some consumers of an
// AppConfig use restarted exactly those.
func checkConfigRollout(t *testing.T, res *results, cfg config) {
	t.Helper()
	cr := res.ConfigRollout
	if cr == nil || len(cr.Trials) != cfg.ConfigRounds*len(cfg.ConfigMaxConcurrent) {
		t.Fatalf("config rollout = %+v, want %d trials", cr, cfg.ConfigRounds*len(cfg.ConfigMaxConcurrent))
	}
	for _, tr := range cr.Trials {
		if !tr.exact(cfg.ConfigChanged) {
			t.Errorf("maxConcurrent %d: %d Deployments restarted, want exactly the %d users of the changed key: %v",
				tr.MaxConcurrent, tr.Restarted, cfg.ConfigChanged, tr.Unexpected)
		}
		if tr.LastAvailableSeconds <= 0 || tr.ReadySeconds <= 0 {
			t.Errorf("rollout not timed: %+v", tr)
		}
	}
}

// checkPeer checks that the peer operator ran its round before Steward and
// was measured: its speed and exact write count depend on timing, but each
// WebApp costs it at least two creates and a status update.
func checkPeer(t *testing.T, res *results) {
	t.Helper()
	p := res.Peer
	if p == nil || len(p.Seconds) != 1 || p.Seconds[0] <= 0 || len(p.RawSeconds) != 1 || p.PeerOverRaw <= 0 {
		t.Fatalf("peer = %+v, want one timed round, and the plain client's beside it", p)
	}
	for _, k := range []string{"create deployments", "create services"} {
		if got := p.RequestsPerObj[k]; got != 1 {
			t.Errorf("peer: %s per WebApp = %v, want 1 (all: %v)", k, got, p.RequestsPerObj)
		}
	}
	if p.ObjectWritesPer < 3 || p.RequestsPerObj["update webapps/status"] < 1 {
		t.Errorf("peer: %v object writes per WebApp, want at least 3 with a status update (all: %v)", p.ObjectWritesPer, p.RequestsPerObj)
	}
	if p.PeakRSS <= 0 || p.StewardOverPeer <= 0 || p.NormalizedStewardOverPeer <= 0 {
		t.Errorf("peer not measured: peak RSS %v MiB, Steward / peer %v (%v over the plain clients)", p.PeakRSS, p.StewardOverPeer, p.NormalizedStewardOverPeer)
	}
	checkCPU(t, "the peer's", p.CPU, p.RawCPU)
}

// near reports whether two per-object figures, derived by division and
// subtraction, are equal up to rounding.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
