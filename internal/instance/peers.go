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
			if askPeer(rctx, addr, name, a.Term, engine.RoleReplica) != "" {
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

// askPeer asks the instance manager at addr whether it is name, running
// ready in role in term; it returns why not, or "" when it is.
func askPeer(ctx context.Context, addr, name string, term int64, role engine.Role) string {
	r, err := GetReport(ctx, peerClient, addr)
	switch {
	case err != nil:
		return err.Error()
	case r.Name != name:
		return fmt.Sprintf("%s answers for it", r.Name)
	case r.Term != term:
		return fmt.Sprintf("it is in term %d, not %d", r.Term, term)
	case r.Phase != PhaseRunning || r.Role != role || !r.Ready:
		return fmt.Sprintf("it is not a ready %s (%s, %s): %s", role, r.Phase, r.Role, r.Message)
	}
	return ""
}
