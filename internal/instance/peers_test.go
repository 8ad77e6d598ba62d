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
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// TestConfirmedReplicas: a primary whose engine cannot see its replicas
// counts only those that say, in its term, that they stream; one in
// another term, one not ready, one that does not answer in time, one with
// another name at the address and one without an address do not count,
// and the lease then fences.
func TestConfirmedReplicas(t *testing.T) {
	serve := func(r Report, delay time.Duration) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path != "/status" {
				http.NotFound(w, req)
				return
			}
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
				return
			}
			_ = json.NewEncoder(w).Encode(r)
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	streaming := func(name string, term int64) Report {
		return Report{Status: engine.Status{Role: engine.RoleReplica, Ready: true}, Name: name, Phase: PhaseRunning, Term: term}
	}
	notReady := streaming("db-2", 3)
	notReady.Ready = false
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	a := &Assignment{Term: 3, Primary: "db-0", LeaseSeconds: 5,
		Replicas: []string{"db-1", "db-2", "db-3", "db-4", "db-5", "db-6", "db-7"},
		Peers: map[string]string{
			"db-1": serve(streaming("db-1", 3), 0),
			"db-2": serve(notReady, 0),
			"db-3": serve(streaming("db-3", 2), 0),
			"db-4": serve(streaming("db-4", 3), 3*peerTimeout),
			"db-5": serve(streaming("db-1", 3), 0),
			"db-6": closedAddr,
		}}
	got := confirmedReplicas(context.Background(), a)
	if !slices.Equal(got, []string{"db-1"}) {
		t.Fatalf("confirmed = %v, want [db-1]", got)
	}
	now := time.Now()
	if !mustFence(a, now.Add(-time.Second), now, got) {
		t.Error("a lease run out with replicas unconfirmed does not fence")
	}
	a.Replicas = []string{"db-1"}
	if mustFence(a, now.Add(-time.Second), now, confirmedReplicas(context.Background(), a)) {
		t.Error("a lease run out with every replica confirmed fences")
	}
}
