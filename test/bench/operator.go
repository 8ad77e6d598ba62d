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
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// requestCounts are the operator's API requests, keyed "verb resource".
// Requests that API Priority and Fairness turned away (429, retried by the
// client) are keyed "throttled verb resource", other failed writes "failed
// <code> verb resource": they changed nothing. Failed reads (a 404 of a
// lookup) count as reads.
type requestCounts map[string]float64

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// metricsReader is an operator process's /metrics and profiles: Steward's
// (*devenv.Operator) or the peer's.
type metricsReader interface {
	Metrics(ctx context.Context) (string, error)
	// Profiles is the base URL of its /debug/pprof.
	Profiles() string
}

// saveHeap writes op's heap profile, after a garbage collection, beside the
// results as name: `go tool pprof -top -sample_index=inuse_space` reads it.
func (b *bench) saveHeap(ctx context.Context, op metricsReader, name string) error {
	body, err := devenv.Get(ctx, op.Profiles()+"/heap?gc=1")
	if err != nil {
		return fmt.Errorf("reading the heap profile: %w", err)
	}
	path := filepath.Join(filepath.Dir(b.cfg.Out), name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b.logf("Heap profile after the last bulk round: %s", path)
	return os.WriteFile(path, []byte(body), 0o644)
}

// scrapeRequests reads steward_api_requests_total from the operator; the
// peer counts its requests under the same name.
func scrapeRequests(ctx context.Context, op metricsReader) (requestCounts, error) {
	body, err := op.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	return parseRequests(body)
}

// parseRequests reads steward_api_requests_total from a /metrics body.
func parseRequests(body string) (requestCounts, error) {
	counts := requestCounts{}
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, "steward_api_requests_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", line, err)
		}
		labels := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(line[:i], -1) {
			labels[m[1]] = m[2]
		}
		key := labels["verb"] + " " + labels["resource"]
		switch code := labels["code"]; {
		case code == "429":
			key = "throttled " + key
		case metrics.IsWrite(labels["verb"]) && !strings.HasPrefix(code, "2"):
			key = "failed " + code + " " + key
		}
		counts[key] += v
	}
	return counts, nil
}

// parseGauge reads the unlabelled gauge name from a /metrics body, and
// reports whether it is there.
func parseGauge(body, name string) (float64, bool, error) {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, false, fmt.Errorf("parsing %q: %w", line, err)
			}
			return f, true, nil
		}
	}
	return 0, false, nil
}

// minus returns the counts made since before.
func (c requestCounts) minus(before requestCounts) requestCounts {
	d := requestCounts{}
	for k, v := range c {
		if n := v - before[k]; n > 0 {
			d[k] = n
		}
	}
	return d
}

// writes sums the write requests, leaving out leader election's Lease
// renewals, which are counted apart, and the TokenReviews and
// SubjectAccessReviews with which Steward's /metrics checks the benchmark's
// scrapes: they are created but stored nowhere, and they come from the
// measuring, not from reconciles.
func (c requestCounts) writes() (writes, leases float64) {
	for k, v := range c {
		verb, resource, _ := strings.Cut(k, " ")
		switch {
		case !metrics.IsWrite(verb):
		case resource == "tokenreviews" || resource == "subjectaccessreviews":
		case resource == "leases":
			leases += v
		default:
			writes += v
		}
	}
	return writes, leases
}

// sorted lists the counts, largest first.
func (c requestCounts) sorted() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c[keys[i]] > c[keys[j]] || (c[keys[i]] == c[keys[j]] && keys[i] < keys[j]) })
	return keys
}

// memSample is the operator's memory at one instant, in MiB.
type memSample struct {
	at         time.Time
	rss, heap  float64
	peakRSSHWM float64
	// hasHeap is whether heap was read: the operator's /metrics is read
	// at every heapEvery-th sample only.
	hasHeap bool
}

// Memory sampling: the process's RSS is read from /proc every
// sampleInterval, which costs the operator nothing; its heap from its
// /metrics every heapEvery samples, as a Prometheus scrape would (a scrape
// costs the operator TLS and gzip: every 0.5 s, 5 to 7 % of its CPU in a
// bulk round).
const (
	sampleInterval = 500 * time.Millisecond
	heapEvery      = 10
)

// sampler records the operator's memory every sampleInterval.
type sampler struct {
	mu      sync.Mutex
	samples []memSample
}

// run samples the process pid, whose /metrics op serves, until ctx ends.
func (s *sampler) run(ctx context.Context, pid int, op metricsReader) {
	for i := 0; ; i++ {
		var metrics metricsReader
		if i%heapEvery == 0 {
			metrics = op
		}
		if m, err := sampleMemory(ctx, pid, metrics); err == nil {
			s.mu.Lock()
			s.samples = append(s.samples, m)
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(sampleInterval):
		}
	}
}

// between returns the samples taken in [from, to).
func (s *sampler) between(from, to time.Time) []memSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memSample
	for _, m := range s.samples {
		if !m.at.Before(from) && m.at.Before(to) {
			out = append(out, m)
		}
	}
	return out
}

// sampleMemory reads the RSS of pid and, when op is not nil, the heap in
// use from the metrics op serves.
func sampleMemory(ctx context.Context, pid int, op metricsReader) (memSample, error) {
	m := memSample{at: time.Now()}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			m.rss = kb / 1024
		case "VmHWM:":
			m.peakRSSHWM = kb / 1024
		}
	}
	if op == nil {
		return m, nil
	}
	body, err := op.Metrics(ctx)
	if err != nil {
		return m, err
	}
	b, ok, err := parseGauge(body, "go_memstats_heap_inuse_bytes")
	if ok {
		m.heap, m.hasHeap = b/(1<<20), true
	}
	return m, err
}

// memSummary is peak and median memory over a period, in MiB.
type memSummary struct {
	PeakRSS    float64 `json:"peakRSSMiB"`
	MedianRSS  float64 `json:"medianRSSMiB"`
	PeakHeap   float64 `json:"peakHeapMiB"`
	MedianHeap float64 `json:"medianHeapMiB"`
}

func summarize(samples []memSample) memSummary {
	var s memSummary
	var rss, heap []float64
	for _, m := range samples {
		s.PeakRSS = max(s.PeakRSS, m.rss)
		rss = append(rss, m.rss)
		if m.hasHeap {
			s.PeakHeap = max(s.PeakHeap, m.heap)
			heap = append(heap, m.heap)
		}
	}
	s.MedianRSS = percentile(rss, 50)
	s.MedianHeap = percentile(heap, 50)
	return s
}

// percentile returns the p-th percentile (nearest rank) of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
