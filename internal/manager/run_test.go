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

package manager_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/steward-dev/steward/internal/manager"
)

// TestRunWaitsForTheAPIServer runs the operator against an address where
// no API server answers: it neither exits at once nor reports ready; it is
// alive while it waits, and gives up with a clear error after the API
// server timeout.
func TestRunWaitsForTheAPIServer(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	_ = dead.Close() // nothing listens there now
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probeAddr := probe.Addr().String()
	_ = probe.Close()

	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", probeAddr, false
	opts.APIServerTimeout = 4 * time.Second
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		done <- manager.Run(context.Background(), &rest.Config{Host: "https://" + deadAddr}, opts)
	}()

	probeStatus := func(path string) int {
		for range 50 {
			resp, err := http.Get("http://" + probeAddr + path)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(50 * time.Millisecond)
		}
		return 0
	}
	if got := probeStatus("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz while waiting for the API server = %d, want 200", got)
	}
	if got := probeStatus("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while waiting for the API server = %d, want 503", got)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer within the API server timeout") {
			t.Errorf("Run returned %v, want the API server timeout", err)
		}
		if waited := time.Since(started); waited < opts.APIServerTimeout {
			t.Errorf("Run gave up after %s, before the timeout of %s", waited, opts.APIServerTimeout)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not give up after its API server timeout")
	}
}
