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
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// GetReport reads an instance manager's GET /status at addr (host:port).
func GetReport(ctx context.Context, c *http.Client, addr string) (Report, error) {
	var r Report
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return r, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return r, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET /status: %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r); err != nil {
		return r, fmt.Errorf("GET /status: %w", err)
	}
	return r, nil
}

// peerTimeout bounds one question to a replica: the fence check runs every
// second.
const peerTimeout = time.Second

var peerClient = &http.Client{Timeout: peerTimeout}

// confirmedReplicas are the replicas of a that say they stream from its
// primary: running, ready, as replicas, in a's term. One that does not
// answer within peerTimeout does not confirm.
func confirmedReplicas(ctx context.Context, a *Assignment) []string {
	var (
		mu  sync.Mutex
		out []string
		wg  sync.WaitGroup
	)
	for _, name := range a.Replicas {
		addr := a.Peers[name]
		if addr == "" {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, peerTimeout)
			defer cancel()
			r, err := GetReport(rctx, peerClient, addr)
			if err != nil || r.Name != name || r.Term != a.Term || r.Phase != PhaseRunning ||
				r.Role != engine.RoleReplica || !r.Ready {
				return
			}
			mu.Lock()
			out = append(out, name)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
