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
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBenchSmall runs every measure of the benchmark at a small scale, so
// that `make bench` is known to work, and checks the figures that do not
// depend on the machine's speed.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a full local cluster")
	}
	cfg := config{
		Kind: "WebApp", N: 20, Namespaces: 4, Concurrency: 4, Rounds: 1,
		Edits: 3, Invalid: 10, Probes: 3, UnrelatedConfigMaps: 100, UnrelatedSecret: 20,
		Idle: 5 * time.Second, ControllerManagerQPS: 100, KCMBurst: 200,
		Out: filepath.Join(t.TempDir(), "results.json"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}

	if c := res.Convergence; len(c.Ratios) != 1 || c.MedianRatio <= 0 {
		t.Errorf("convergence = %+v", c)
	}
	if res.Idle.Writes != 0 {
		t.Errorf("%v writes in the idle window: %v", res.Idle.Writes, res.Idle.Requests)
	}
	// Each of these WebApps is Ready well within the first-status delay, so
	// first convergence is exactly a Deployment, a Service and one status.
	fc := res.FirstConvergence
	for _, k := range []string{"apply deployments", "apply services", "patch webapps/status"} {
		if got := fc.RequestsPerObj[k]; got != 1 {
			t.Errorf("%s per WebApp = %v, want 1", k, got)
		}
	}
	if fc.ObjectWritesPer != 3 {
		t.Errorf("object writes per WebApp = %v, want 3 (all: %v)", fc.ObjectWritesPer, fc.RequestsPerObj)
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
