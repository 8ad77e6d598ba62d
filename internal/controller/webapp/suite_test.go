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

package webapp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

var (
	// k8s is the tests' own client; its requests are not counted.
	k8s client.Client
	// mgr is the operator under test.
	mgr ctrl.Manager
	// requests records the operator's requests to the API server.
	requests = &requestLog{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A fuzz run needs no API server: the fuzz targets are pure, and each
	// fuzz worker runs TestMain too and is killed before it could stop one.
	if apitest.FuzzOnly() {
		return m.Run()
	}
	env, err := apitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()

	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(requests.wrap)
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	mgr, err = manager.New(cfg, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

// requestLog records every request the operator sends.
type requestLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.entries = append(l.entries, req.Method+" "+req.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// mark returns a position in the log for writesSince.
func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// writesSince lists the write requests to namespace ns sent after mark.
func (l *requestLog) writesSince(mark int, ns string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var writes []string
	for _, e := range l.entries[mark:] {
		if !strings.HasPrefix(e, http.MethodGet) && strings.Contains(e, "/namespaces/"+ns+"/") {
			writes = append(writes, e)
		}
	}
	return writes
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// eventually polls check until it returns nil or the timeout passes.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	apitest.Eventually(t, timeout, check)
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	return apitest.Namespace(t, k8s)
}

// reconciles is the number of WebApp reconciles the manager finished.
func reconciles(t *testing.T) float64 {
	t.Helper()
	total := 0.0
	for _, m := range samples(t, "controller_runtime_reconcile_total", "controller", "webapp") {
		total += m.GetCounter().GetValue()
	}
	return total
}

// samples returns the samples of a metric in the manager's registry that
// have the label with the value.
func samples(t *testing.T, name, label, value string) []*dto.Metric {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					found = append(found, m)
				}
			}
		}
	}
	return found
}

// problemSeries lists, as condition/reason, the series of
// steward_condition_true_since_timestamp_seconds of one WebApp.
func problemSeries(t *testing.T, ns, name string) []string {
	t.Helper()
	var found []string
	for _, m := range samples(t, "steward_condition_true_since_timestamp_seconds", "namespace", ns) {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["kind"] == "WebApp" && l["name"] == name {
			found = append(found, l["condition"]+"/"+l["reason"])
		}
	}
	slices.Sort(found)
	return found
}

// gauge reads one sample of a gauge.
func gauge(t *testing.T, name, label, value string) float64 {
	t.Helper()
	found := samples(t, name, label, value)
	if len(found) == 0 {
		t.Fatalf("metric %s{%s=%q} not found", name, label, value)
	}
	return found[0].GetGauge().GetValue()
}

// histogramCount reads the number of observations of a histogram.
func histogramCount(t *testing.T, name, label, value string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range samples(t, name, label, value) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}
