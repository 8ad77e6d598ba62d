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

package manager

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// TestStandbyCachesNoStewardKind: a replica waiting for the leadership
// reads no object of Steward's kinds: its cache starts no informer for
// them (the field indexes of WebApps and Backups are registered by the
// leader's first lookups, not at setup), so it holds none of them in
// memory. Once it leads, its controllers list them. Against a real API
// server, with every controller New sets up.
func TestStandbyCachesNoStewardKind(t *testing.T) {
	env, err := apitest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	options := func(identity string) Options {
		o := DefaultOptions()
		o.MetricsAddr, o.ProbeAddr = "0", "0"
		o.SkipControllerNameValidation = true
		o.LeaderElectionNamespace, o.LeaderElectionIdentity = "default", identity
		return o
	}
	start := func(cfg *rest.Config, identity string) (elected <-chan struct{}, stop func()) {
		mgr, err := New(cfg, options(identity))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return mgr.Elected(), func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager %s: %v", identity, err)
			}
		}
	}
	const timeout = 2 * time.Minute

	elected, stopLeader := start(env.Config, "first")
	select {
	case <-elected:
	case <-time.After(timeout):
		t.Fatal("the first replica was not elected")
	}
	stopped := false
	defer func() {
		if !stopped {
			stopLeader()
		}
	}()

	// The second replica's requests, as method and path.
	var (
		mu       sync.Mutex
		requests []string
	)
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			requests = append(requests, req.Method+" "+req.URL.Path)
			mu.Unlock()
			return next.RoundTrip(req)
		})
	})
	seen := func(match func(string) bool) []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, r := range requests {
			if match(r) {
				out = append(out, r)
			}
		}
		return out
	}
	stewardKinds := func(r string) bool {
		path := r[strings.IndexByte(r, ' ')+1:]
		return strings.HasPrefix(path, "/apis/steward.dev/v1alpha1/") // a resource, not discovery
	}
	leases := func(r string) bool { return strings.Contains(r, "/leases/") }

	elected, stopStandby := start(cfg, "second")
	defer stopStandby()
	// Its cache has started (every informer it has listed its kind) and it
	// has asked for the Lease twice, in vain.
	apitest.Eventually(t, timeout, func() error {
		if n := len(seen(leases)); n < 2 {
			return fmt.Errorf("%d requests for the Lease", n)
		}
		return nil
	})
	select {
	case <-elected:
		t.Fatal("the second replica was elected beside the first")
	default:
	}
	if got := seen(stewardKinds); len(got) > 0 {
		t.Errorf("the standby read Steward's kinds: %q", got)
	}

	// The leader steps down (it releases the Lease): the standby takes over
	// and its controllers list and watch the kinds.
	stopLeader()
	stopped = true
	select {
	case <-elected:
	case <-time.After(timeout):
		t.Fatal("the second replica did not take over")
	}
	apitest.Eventually(t, timeout, func() error {
		for _, kind := range []string{"webapps", "backups", "databases"} {
			if len(seen(func(r string) bool { return stewardKinds(r) && strings.Contains(r, "/"+kind) })) == 0 {
				return fmt.Errorf("the new leader has not listed %s", kind)
			}
		}
		return nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
