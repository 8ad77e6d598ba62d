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
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// editWatch times spec edits until the child shows them.
type editWatch struct {
	sc      Scenario
	mu      sync.Mutex
	waiters map[client.ObjectKey]*editWaiter
}

type editWaiter struct {
	mark int
	done chan time.Time
}

// observe is called with every update of a child.
func (w *editWatch) observe(child client.Object) {
	key := client.ObjectKeyFromObject(child)
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt, ok := w.waiters[key]; ok && w.sc.Applied(child, wt.mark) {
		wt.done <- time.Now()
		delete(w.waiters, key)
	}
}

// timeEdit patches key's spec with mark and returns the milliseconds until
// its child carries it.
func (w *editWatch) timeEdit(ctx context.Context, c client.Client, sc Scenario, key client.ObjectKey, mark int) (float64, error) {
	wt := &editWaiter{mark: mark, done: make(chan time.Time, 1)}
	w.mu.Lock()
	w.waiters[key] = wt // children share their owner's name
	w.mu.Unlock()
	obj := sc.Empty()
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	start := time.Now()
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, sc.Edit(mark))); err != nil {
		return 0, fmt.Errorf("editing %s: %w", key, err)
	}
	select {
	case at := <-wt.done:
		return float64(at.Sub(start).Microseconds()) / 1000, nil
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("edit %d of %s did not reach its child within a minute", mark, key)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// results is what one benchmark run reports; it is also the JSON file.
type results struct {
	Kind     string `json:"kind"`
	Settings config `json:"settings"`
	Nodes    int    `json:"nodes"`
	// Measures are the measures that ran; the others are left empty.
	Measures []string `json:"measures"`

	Convergence struct {
		StewardSeconds []float64 `json:"stewardSeconds"`
		RawSeconds     []float64 `json:"rawSeconds"`
		// StewardCPU and RawCPU are the CPU seconds each process used in
		// each of Steward's rounds and of the plain client's: on a machine
		// whose cores are all busy, the time of a round is where they went.
		StewardCPU  []cpuTimes `json:"stewardCPU,omitempty"`
		RawCPU      []cpuTimes `json:"rawCPU,omitempty"`
		Ratios      []float64  `json:"ratios"`
		MedianRatio float64    `json:"medianRatio"`
	} `json:"convergence"`

	// FirstConvergence are the operator's requests per object while bulk
	// creates converge, over every round.
	FirstConvergence struct {
		Objects          int                `json:"objects"`
		RequestsPerObj   map[string]float64 `json:"requestsPerObject"`
		WritesPerObj     float64            `json:"writesPerObject"`
		ObjectWritesPer  float64            `json:"objectWritesPerObject"`
		EventWritesPer   float64            `json:"eventWritesPerObject"`
		LeaseWritesTotal float64            `json:"leaseWrites"`
		// Work is the reconciles of the kind's controller and their queue
		// waits over the same rounds, until the operator was quiet.
		Work  controllerWork `json:"work"`
		total requestCounts
	} `json:"firstConvergence"`

	Idle struct {
		Seconds     float64       `json:"seconds"`
		Writes      float64       `json:"writes"`
		LeaseWrites float64       `json:"leaseWrites"`
		Requests    requestCounts `json:"requests"`
	} `json:"idle"`

	ChangeLatency struct {
		AtRestMs      []float64 `json:"atRestMs"`
		DuringBulkMs  []float64 `json:"duringBulkMs"`
		AtRestP50     float64   `json:"atRestP50Ms"`
		AtRestP99     float64   `json:"atRestP99Ms"`
		DuringBulkP50 float64   `json:"duringBulkP50Ms"`
		DuringBulkP99 float64   `json:"duringBulkP99Ms"`
	} `json:"changeLatency"`

	Memory struct {
		Bulk                []memSummary `json:"bulk"`
		Steady              memSummary   `json:"steady"`
		SteadyWithUnrelated memSummary   `json:"steadyWithUnrelated"`
		GrowthRSSMiB        float64      `json:"growthRSSMiB"`
		GrowthHeapMiB       float64      `json:"growthHeapMiB"`
	} `json:"memory"`

	Isolation struct {
		Invalid int       `json:"invalid"`
		ReadyMs []float64 `json:"readyMs"`
		P50     float64   `json:"p50Ms"`
		P99     float64   `json:"p99Ms"`
	} `json:"isolation"`

	ConfigRollout *configRollout `json:"configRollout,omitempty"`

	// Requests is the API server's and etcd's CPU per request of each
	// kind a WebApp adds (the requests measure).
	Requests []requestCost `json:"requests,omitempty"`

	Stacks *stackResults `json:"stacks,omitempty"`

	// Floor is the floor measure's rounds (see floor.go).
	Floor *floorResults `json:"floor,omitempty"`

	// Peer is the peer operator's run beside Steward's (see peer.go).
	Peer *peerResults `json:"peer,omitempty"`
}

func (r *results) ran(measure string) bool { return slices.Contains(r.Measures, measure) }

func (r *results) addFirstConvergence(d requestCounts, work controllerWork, objects int) {
	fc := &r.FirstConvergence
	if fc.total == nil {
		fc.total = requestCounts{}
	}
	for k, v := range d {
		fc.total[k] += v
	}
	fc.Work = fc.Work.plus(work)
	fc.Objects += objects
}

// finish derives the ratios, percentiles and per-object figures.
func (r *results) finish() {
	c := &r.Convergence
	for i := range min(len(c.StewardSeconds), len(c.RawSeconds)) {
		c.Ratios = append(c.Ratios, c.StewardSeconds[i]/c.RawSeconds[i])
	}
	c.MedianRatio = percentile(c.Ratios, 50)

	fc := &r.FirstConvergence
	n := float64(max(fc.Objects, 1))
	fc.RequestsPerObj = map[string]float64{}
	for k, v := range fc.total {
		fc.RequestsPerObj[k] = v / n
	}
	writes, leases := fc.total.writes()
	fc.WritesPerObj = writes / n
	fc.EventWritesPer = (fc.total["create events"] + fc.total["patch events"]) / n
	fc.ObjectWritesPer = fc.WritesPerObj - fc.EventWritesPer
	fc.LeaseWritesTotal = leases

	cl := &r.ChangeLatency
	cl.AtRestP50, cl.AtRestP99 = percentile(cl.AtRestMs, 50), percentile(cl.AtRestMs, 99)
	cl.DuringBulkP50, cl.DuringBulkP99 = percentile(cl.DuringBulkMs, 50), percentile(cl.DuringBulkMs, 99)

	m := &r.Memory
	m.GrowthRSSMiB = m.SteadyWithUnrelated.MedianRSS - m.Steady.MedianRSS
	m.GrowthHeapMiB = m.SteadyWithUnrelated.MedianHeap - m.Steady.MedianHeap

	r.Isolation.P50, r.Isolation.P99 = percentile(r.Isolation.ReadyMs, 50), percentile(r.Isolation.ReadyMs, 99)

	if r.Stacks != nil {
		r.Stacks.finish()
	}
	if r.Peer != nil {
		r.Peer.finish(r)
	}
	if f := r.Floor; f != nil && f.MedianWatchedRatio > 0 && c.MedianRatio > 0 {
		f.StewardOverWatched = c.MedianRatio / f.MedianWatchedRatio
	}
	if f := r.Floor; f != nil && f.Queued != nil && f.Queued.MedianRatio > 0 && c.MedianRatio > 0 {
		f.Queued.StewardOver = c.MedianRatio / f.Queued.MedianRatio
	}

	if cr := r.ConfigRollout; cr != nil {
		cr.Summaries = nil
		for _, t := range cr.Trials {
			i := slices.IndexFunc(cr.Summaries, func(s configSummary) bool { return s.MaxConcurrent == t.MaxConcurrent })
			if i < 0 {
				cr.Summaries = append(cr.Summaries, configSummary{MaxConcurrent: t.MaxConcurrent, AllExact: true})
				i = len(cr.Summaries) - 1
			}
			s := &cr.Summaries[i]
			s.Trials++
			s.AllExact = s.AllExact && t.exact(cr.Changed)
		}
		for i := range cr.Summaries {
			s := &cr.Summaries[i]
			var avail, ready, writes []float64
			for _, t := range cr.Trials {
				if t.MaxConcurrent == s.MaxConcurrent {
					avail, ready, writes = append(avail, t.LastAvailableSeconds), append(ready, t.ReadySeconds), append(writes, t.Writes)
				}
			}
			s.LastAvailableSeconds, s.ReadySeconds, s.Writes = percentile(avail, 50), percentile(ready, 50), percentile(writes, 50)
		}
	}
}

// exact reports whether exactly the users of the changed key restarted.
func (t configTrial) exact(changed int) bool { return t.Restarted == changed && len(t.Unexpected) == 0 }

func (r *results) write(path string) error {
	if err := writeJSON(path, r); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func floats(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, " ")
}

// print writes the readable report.
func (r *results) print(out io.Writer) {
	s := r.Settings
	n := fmt.Sprintf("N=%d", s.N)
	if r.Stacks != nil {
		n = fmt.Sprintf("%d stacks", s.Stacks)
	}
	fmt.Fprintf(out, "\nSteward scale benchmark: %s, %s over %d namespaces, %d rounds, create concurrency %d, %d fake nodes\n",
		r.Kind, n, s.Namespaces, s.Rounds, s.Concurrency, r.Nodes)
	fmt.Fprintf(out, "kube-controller-manager --kube-api-qps=%d --kube-api-burst=%d; operator defaults: no client-side throttle, leader election on%s\n\n",
		s.ControllerManagerQPS, s.KCMBurst, flagsNote(s.OperatorFlags))

	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	c := r.Convergence
	fc := r.FirstConvergence
	cl := r.ChangeLatency
	m := r.Memory
	fmt.Fprintln(w, "measure\tresult\ttarget\t")
	if r.ran("convergence") {
		fmt.Fprintf(w, "1. bulk convergence, Steward / plain client (median of %d)\t%.2fx\t<= 1.2x, %s\t\n", len(c.Ratios), c.MedianRatio, verdict(c.MedianRatio <= 1.2))
		fmt.Fprintf(w, "   Steward seconds per round\t%s\t\t\n", floats(c.StewardSeconds, "%.1f"))
		fmt.Fprintf(w, "   plain client seconds per round\t%s\t\t\n", floats(c.RawSeconds, "%.1f"))
		// A WebApp's target: two children and at most two status writes
		// (Ready, and one 30 s after creation for one not Ready by then).
		target := ""
		if r.Kind == "WebApp" {
			target = "<= 4, " + verdict(fc.ObjectWritesPer <= 4)
		}
		fmt.Fprintf(w, "3. object writes per %s, first convergence\t%.2f (with events %.2f, events %.2f)\t%s\t\n",
			r.Kind, fc.ObjectWritesPer, fc.WritesPerObj, fc.EventWritesPer, target)
		fmt.Fprintf(w, "   %s reconciles per %s; mean reconcile / queue wait\t%s\t\t\n", r.Kind, r.Kind, fc.Work.per(fc.Objects))
		if r.Kind == "Database" {
			st := fc.RequestsPerObj["patch databases/status"]
			fmt.Fprintf(w, "   status writes per Database\t%.2f\t<= 1.5, %s\t\n", st, verdict(st <= 1.5))
		}
	}
	if r.Stacks != nil {
		r.Stacks.print(w)
	}
	if r.ran("idle") {
		fmt.Fprintf(w, "4. writes in a %.0fs idle window\t%.0f (+%.0f Lease renewals)\t0, %s\t\n", r.Idle.Seconds, r.Idle.Writes, r.Idle.LeaseWrites, verdict(r.Idle.Writes == 0))
	}
	if r.ran("change") {
		fmt.Fprintf(w, "5. change latency at rest, p50 / p99\t%.0f / %.0f ms\t\t\n", cl.AtRestP50, cl.AtRestP99)
		fmt.Fprintf(w, "   change latency during bulk, p50 / p99\t%.0f / %.0f ms\tp99 <= 2000 ms, %s\t\n", cl.DuringBulkP50, cl.DuringBulkP99, verdict(cl.DuringBulkP99 <= 2000))
	}
	for i, b := range m.Bulk {
		fmt.Fprintf(w, "6. memory during bulk round %d: peak RSS / heap\t%.0f / %.0f MiB\t\t\n", i+1, b.PeakRSS, b.PeakHeap)
	}
	if r.ran("idle") {
		fmt.Fprintf(w, "   steady, median RSS / heap\t%.0f / %.0f MiB\t\t\n", m.Steady.MedianRSS, m.Steady.MedianHeap)
	}
	if r.ran("unrelated") {
		fmt.Fprintf(w, "   steady with %d ConfigMaps + %d Secrets unrelated\t%.0f / %.0f MiB\t\t\n", s.UnrelatedConfigMaps, s.UnrelatedSecret, m.SteadyWithUnrelated.MedianRSS, m.SteadyWithUnrelated.MedianHeap)
		fmt.Fprintf(w, "   growth from unrelated objects, RSS / heap\t%+.1f / %+.1f MiB\t<= 15 MB, %s\t\n", m.GrowthRSSMiB, m.GrowthHeapMiB, verdict(m.GrowthRSSMiB*1.048576 <= 15))
	}
	if r.ran("isolation") {
		fmt.Fprintf(w, "7. new %s to Ready beside %d invalid, p50 / p99\t%.0f / %.0f ms\tp99 <= 2000 ms, %s\t\n", r.Kind, r.Isolation.Invalid, r.Isolation.P50, r.Isolation.P99, verdict(r.Isolation.P99 <= 2000))
	}
	if cr := r.ConfigRollout; cr != nil {
		fmt.Fprintf(w, "8. one AppConfig, %d WebApps, a key %d of them use changed (debounce %d s)\t\t\t\n", cr.Consumers, cr.Changed, cr.DebounceSeconds)
		for _, s := range cr.Summaries {
			var restarted []float64
			for _, t := range cr.Trials {
				if t.MaxConcurrent == s.MaxConcurrent {
					restarted = append(restarted, float64(t.Restarted))
				}
			}
			fmt.Fprintf(w, "   maxConcurrent %d: Deployments restarted per change (%d changes, checked %.0f s later)\t%s\t%d exactly, %s\t\n",
				s.MaxConcurrent, s.Trials, cr.QuietSeconds, floats(restarted, "%.0f"), cr.Changed, verdict(s.AllExact))
			fmt.Fprintf(w, "   maxConcurrent %d: edit to last restarted Deployment available / AppConfig Ready, median\t%.1f / %.1f s\t\t\n",
				s.MaxConcurrent, s.LastAvailableSeconds, s.ReadySeconds)
			fmt.Fprintf(w, "   maxConcurrent %d: operator writes per change, median\t%.0f\t\t\n", s.MaxConcurrent, s.Writes)
		}
	}
	_ = w.Flush()
	if r.ran("convergence") {
		fmt.Fprintf(out, "\n2/3. operator requests per %s during first convergence, by verb and resource:\n", r.Kind)
		w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		for _, k := range requestCounts(fc.RequestsPerObj).sorted() {
			fmt.Fprintf(w, "   %s\t%.3f\t\n", k, fc.RequestsPerObj[k])
		}
		_ = w.Flush()
		printCPU(out, "1.", "Steward's", c.StewardCPU, c.RawCPU)
	}
	if r.Stacks != nil {
		fmt.Fprintf(out, "\n9. operator requests per stack, over every round, with AppStacks and with the components created directly:\n")
		w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		r.Stacks.printRequests(w)
		_ = w.Flush()
	}
	if r.Peer != nil {
		r.printPeer(out)
		printCPU(out, "10.", "the peer's", r.Peer.CPU, r.Peer.RawCPU)
	}
	if len(r.Requests) > 0 {
		r.printRequests(out)
	}
	if r.Floor != nil {
		r.printFloor(out)
	}
	if len(r.Idle.Requests) > 0 {
		fmt.Fprintln(out, "\n4. operator requests in the idle window:")
		for _, k := range r.Idle.Requests.sorted() {
			fmt.Fprintf(out, "   %s: %.0f\n", k, r.Idle.Requests[k])
		}
	}
	if cr := r.ConfigRollout; cr != nil {
		fmt.Fprintf(out, "\n8. operator requests while %d WebApps that use one AppConfig were created and converged (%.1f s):\n", cr.Consumers, cr.SetupSeconds)
		for _, k := range cr.SetupRequests.sorted() {
			fmt.Fprintf(out, "   %s: %.0f\n", k, cr.SetupRequests[k])
		}
		for i, t := range cr.Trials {
			fmt.Fprintf(out, "\n8. config change %d (maxConcurrent %d): %d restarted, last available %.1f s, Ready %.1f s; operator requests:\n",
				i+1, t.MaxConcurrent, t.Restarted, t.LastAvailableSeconds, t.ReadySeconds)
			for _, k := range t.Requests.sorted() {
				fmt.Fprintf(out, "   %s: %.0f\n", k, t.Requests[k])
			}
			for _, u := range t.Unexpected {
				fmt.Fprintf(out, "   UNEXPECTED: %s\n", u)
			}
		}
	}
}

// printPeer writes Steward and the peer operator side by side.
func (r *results) printPeer(out io.Writer) {
	p := r.Peer
	fc := r.FirstConvergence
	steward := percentile(r.Convergence.StewardSeconds, 50)
	fmt.Fprintf(out, "\n10. Steward beside the peer operator (test/bench/peer: Create/Update, a status update every reconcile, a cluster-wide cache; %d workers), same run, run one after the other:\n", p.Concurrency)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "   measure\tSteward\tpeer\tSteward / peer\ttarget\t")
	fmt.Fprintf(w, "   time to all Ready, N=%d, median of %d / %d rounds\t%.1f s\t%.1f s\t%.2fx\t<= 0.8x, %s\t\n",
		r.Settings.N, len(r.Convergence.StewardSeconds), len(p.Seconds), steward, p.MedianSeconds, p.StewardOverPeer, verdict(p.StewardOverPeer > 0 && p.StewardOverPeer <= 0.8))
	fmt.Fprintf(w, "   seconds per round\t%s\t%s\t\t\t\n", floats(r.Convergence.StewardSeconds, "%.1f"), floats(p.Seconds, "%.1f"))
	fmt.Fprintf(w, "   plain client beside each, seconds per round\t%s\t%s\t\t\t\n", floats(r.Convergence.RawSeconds, "%.1f"), floats(p.RawSeconds, "%.1f"))
	fmt.Fprintf(w, "   over the plain client beside it, median of rounds\t%.2fx\t%.2fx\t%.2fx\t<= 0.8x, %s\t\n",
		r.Convergence.MedianRatio, p.PeerOverRaw, p.NormalizedStewardOverPeer, verdict(p.NormalizedStewardOverPeer > 0 && p.NormalizedStewardOverPeer <= 0.8))
	fmt.Fprintf(w, "   object writes per WebApp, first convergence\t%.2f\t%.2f (+%.2f refused)\t%.2fx\tfewer, %s\t\n",
		fc.ObjectWritesPer, p.ObjectWritesPer, p.FailedWritesPer, fc.ObjectWritesPer/p.ObjectWritesPer, verdict(fc.ObjectWritesPer < p.ObjectWritesPer))
	fmt.Fprintf(w, "   reconciles per WebApp; mean reconcile / queue wait\t%s\t%s\t\t\t\n", fc.Work.per(fc.Objects), p.Work.per(p.Objects))
	if r.ran("idle") && p.IdleSeconds > 0 {
		fmt.Fprintf(w, "   writes in a %.0f s idle window (+ Lease renewals)\t%.0f (+%.0f)\t%.0f (+%.0f)\t\t\t\n", p.IdleSeconds, r.Idle.Writes, r.Idle.LeaseWrites, p.IdleWrites, p.IdleLeaseWrites)
	}
	fmt.Fprintf(w, "   peak RSS during the bulk rounds\t%.0f MiB\t%.0f MiB\t%.2fx\tless, %s\t\n",
		p.StewardPeakRSS, p.PeakRSS, p.StewardPeakRSS/p.PeakRSS, verdict(p.StewardPeakRSS < p.PeakRSS))
	if r.ran("idle") && p.IdleSeconds > 0 {
		fmt.Fprintf(w, "   steady, median RSS / heap\t%.0f / %.0f MiB\t%.0f / %.0f MiB\t\t\t\n",
			r.Memory.Steady.MedianRSS, r.Memory.Steady.MedianHeap, p.MemorySteady.MedianRSS, p.MemorySteady.MedianHeap)
	}
	_ = w.Flush()
	fmt.Fprintln(out, "\n10. peer operator requests per WebApp during first convergence, by verb and resource:")
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, k := range requestCounts(p.RequestsPerObj).sorted() {
		fmt.Fprintf(w, "   %s\t%.3f\t\n", k, p.RequestsPerObj[k])
	}
	_ = w.Flush()
	if len(p.IdleRequests) > 0 {
		fmt.Fprintln(out, "\n10. peer operator requests in the idle window:")
		for _, k := range p.IdleRequests.sorted() {
			fmt.Fprintf(out, "   %s: %.0f\n", k, p.IdleRequests[k])
		}
	}
}

// printCPU prints the median CPU seconds per round of each process in the
// operator's rounds (whose) beside the plain client's: where the machine's
// time went, and so what makes one round longer than the other.
func printCPU(out io.Writer, section, whose string, op, raw []cpuTimes) {
	printCPUBeside(out, section, whose, "the plain client's", op, raw)
}

// printCPUBeside is printCPU against the rounds of other, named by
// otherWhose.
func printCPUBeside(out io.Writer, section, whose, otherWhose string, op, raw []cpuTimes) {
	if len(op) == 0 || len(raw) == 0 {
		return
	}
	mo, mr := medianCPU(op), medianCPU(raw)
	fmt.Fprintf(out, "\n%s CPU seconds per round by process, median of rounds, %s rounds beside %s:\n", section, whose, otherWhose)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "   process\t%s\t%s\tdifference\t\n", whose, strings.TrimPrefix(otherWhose, "the "))
	names := slices.SortedFunc(maps.Keys(mo), func(a, b string) int { return cmp.Compare(mo[b], mo[a]) })
	for _, k := range names {
		fmt.Fprintf(w, "   %s\t%.1f\t%.1f\t%+.1f\t\n", k, mo[k], mr[k], mo[k]-mr[k])
	}
	var to, tr []float64
	for _, c := range op {
		to = append(to, c.total())
	}
	for _, c := range raw {
		tr = append(tr, c.total())
	}
	pt, pr := percentile(to, 50), percentile(tr, 50)
	fmt.Fprintf(w, "   all, median of the rounds' totals\t%.1f\t%.1f\t%.2fx\t\n", pt, pr, pt/max(pr, 1e-9))
	_ = w.Flush()
}
