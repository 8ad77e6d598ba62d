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
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// Run runs the operator until ctx ends, riding out API server outages:
//
//   - at start-up it waits for an unreachable API server, up to
//     opts.APIServerTimeout, instead of exiting (and crash-looping);
//   - when an outage longer than the renew deadline costs it the leadership,
//     it stops its controllers, as it must (another replica may take over),
//     but not the process: it builds a new manager, waits for the API server
//     again and campaigns under the same identity, so that it takes the Lease
//     back at once if nobody else took it meanwhile;
//   - /healthz and /readyz are served by Run itself, across managers: alive
//     while it waits, ready only while a manager's caches are synced.
//
// A shutdown (ctx ending) returns nil and releases the Lease.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	log := ctrl.Log.WithName("setup")
	if opts.LeaderElectionIdentity == "" {
		opts.LeaderElectionIdentity = DefaultIdentity()
	}
	if opts.APIServerTimeout <= 0 {
		opts.APIServerTimeout = DefaultOptions().APIServerTimeout
	}
	probes, err := serveProbes(opts.ProbeAddr)
	if err != nil {
		return err
	}
	defer probes.close()
	opts.ProbeAddr = "0" // the managers' own probe servers stay off
	opts.SkipControllerNameValidation = true

	for {
		mgr, err := newWhenReachable(ctx, cfg, opts, log)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		probes.set(readyChecks(mgr, opts))
		log.Info("Starting manager", "identity", opts.LeaderElectionIdentity)
		err = mgr.Start(ctx)
		probes.set(nil)
		if ctx.Err() != nil || err == nil {
			return err
		}
		if err.Error() != leaderLost {
			return err
		}
		log.Info("Lost the leadership: the Lease could not be renewed within the renew deadline; controllers stopped, campaigning again",
			"renewDeadline", opts.RenewDeadline.String())
	}
}

// newWhenReachable builds a manager once the API server answers, waiting
// for it up to opts.APIServerTimeout. A failure while the API server
// answers is final: it is not an outage.
func newWhenReachable(ctx context.Context, cfg *rest.Config, opts Options, log logr.Logger) (ctrl.Manager, error) {
	deadline := time.Now().Add(opts.APIServerTimeout)
	for {
		if err := waitForAPIServer(ctx, cfg, deadline, log); err != nil {
			return nil, err
		}
		mgr, err := New(cfg, opts)
		if err == nil {
			return mgr, nil
		}
		if reachable(ctx, cfg) == nil || time.Now().After(deadline) {
			return nil, err
		}
		log.Info("The API server stopped answering while the manager was set up; waiting for it", "error", err.Error())
	}
}

// waitForAPIServer returns once the API server answers /version, or an
// error when deadline passes first.
func waitForAPIServer(ctx context.Context, cfg *rest.Config, deadline time.Time, log logr.Logger) error {
	var lastLog time.Time
	delay := 500 * time.Millisecond
	for {
		err := reachable(ctx, cfg)
		if err == nil {
			if !lastLog.IsZero() {
				log.Info("The API server answers again")
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server did not answer within the API server timeout: %w", err)
		}
		if time.Since(lastLog) >= 30*time.Second {
			log.Info("Waiting for the API server", "error", err.Error(), "until", deadline.UTC().Format(time.RFC3339))
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// reachable asks the API server for its version, which every client may
// read, with a short timeout.
func reachable(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 5 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error()
}

// readyChecks are what /readyz checks of a manager: its caches synced and,
// with the webhooks on, its webhook server serving.
func readyChecks(mgr ctrl.Manager, opts Options) map[string]healthz.Checker {
	checks := map[string]healthz.Checker{"informers": informersSynced(mgr)}
	if opts.Webhook.Port != 0 {
		checks["webhook"] = mgr.GetWebhookServer().StartedChecker()
	}
	return checks
}

// probeServer serves /healthz (the process is alive: it serves, waits or
// runs) and /readyz (the current manager's checks pass).
type probeServer struct {
	srv *http.Server

	mu     sync.Mutex
	checks map[string]healthz.Checker
}

func serveProbes(addr string) (*probeServer, error) {
	p := &probeServer{}
	if addr == "" || addr == "0" {
		return p, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for health probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", p.ready)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *probeServer) set(checks map[string]healthz.Checker) {
	p.mu.Lock()
	p.checks = checks
	p.mu.Unlock()
}

func (p *probeServer) ready(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	checks := p.checks
	p.mu.Unlock()
	if checks == nil {
		http.Error(w, "not ready: waiting for the API server", http.StatusServiceUnavailable)
		return
	}
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	var failed []string
	for _, name := range names {
		if err := checks[name](r); err != nil {
			failed = append(failed, name+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		http.Error(w, "not ready: "+strings.Join(failed, "; "), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (p *probeServer) close() {
	if p.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = p.srv.Close()
	}
}
