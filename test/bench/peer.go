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
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The peer is the reference operator in ./peer: WebApps run the way the
// kubebuilder and operator-sdk tutorials teach (Create/Update, a status
// update on every reconcile, a cluster-wide cache). It runs on the same
// cluster and the same steward.dev WebApps as Steward, but never at the same
// time: both reconcile every WebApp in the cluster, so the peer runs first,
// before Steward starts (and before Steward's admission webhooks are
// registered), and its namespaces are deleted before Steward starts, so that
// Steward does not adopt its WebApps.

// peerResults are the peer's figures beside Steward's from the same run.
type peerResults struct {
	Concurrency int `json:"concurrency"`
	// Seconds are the peer's bulk convergence times, one per round.
	Seconds       []float64 `json:"seconds"`
	MedianSeconds float64   `json:"medianSeconds"`
	// RawSeconds are the plain client's times in the peer's phase, one
	// per round, taken beside the peer's as Steward's rounds are beside
	// theirs: the machine's load may change between the two phases.
	RawSeconds []float64 `json:"rawSeconds"`
	// CPU and RawCPU are the CPU seconds by process of each of the peer's
	// rounds and of the plain client's beside them.
	CPU    []cpuTimes `json:"cpu,omitempty"`
	RawCPU []cpuTimes `json:"rawCPU,omitempty"`
	// StewardOverPeer is Steward's median convergence time over the peer's.
	StewardOverPeer float64 `json:"stewardOverPeer"`
	// PeerOverRaw is the median of the peer's per-round ratios to the plain
	// client in its phase; NormalizedStewardOverPeer is Steward's median
	// ratio to the plain client in its phase over it, which a change of
	// load between the phases disturbs less than StewardOverPeer.
	PeerOverRaw               float64 `json:"peerOverRaw"`
	NormalizedStewardOverPeer float64 `json:"normalizedStewardOverPeer"`

	Objects         int                `json:"objects"`
	RequestsPerObj  map[string]float64 `json:"requestsPerObject"`
	ObjectWritesPer float64            `json:"objectWritesPerObject"`
	// Work is the peer's reconciles and queue waits over its rounds.
	Work controllerWork `json:"work"`
	// FailedWritesPer are the write requests the API server refused (409
	// conflicts of updates from a stale cache): they changed nothing and
	// are not in ObjectWritesPer.
	FailedWritesPer float64 `json:"failedWritesPerObject"`

	IdleSeconds     float64       `json:"idleSeconds"`
	IdleWrites      float64       `json:"idleWrites"`
	IdleLeaseWrites float64       `json:"idleLeaseWrites"`
	IdleRequests    requestCounts `json:"idleRequests"`

	MemoryBulk   []memSummary `json:"memoryBulk"`
	MemorySteady memSummary   `json:"memorySteady"`
	// PeakRSS is the highest RSS sampled during the bulk rounds, the peer's
	// and Steward's.
	PeakRSS        float64 `json:"peakRSSMiB"`
	StewardPeakRSS float64 `json:"stewardPeakRSSMiB"`

	total requestCounts
}

// finish derives the peer's medians and its ratios to Steward's figures.
func (p *peerResults) finish(r *results) {
	p.MedianSeconds = percentile(p.Seconds, 50)
	if s := percentile(r.Convergence.StewardSeconds, 50); s > 0 && p.MedianSeconds > 0 {
		p.StewardOverPeer = s / p.MedianSeconds
	}
	var ratios []float64
	for i := range min(len(p.Seconds), len(p.RawSeconds)) {
		ratios = append(ratios, p.Seconds[i]/p.RawSeconds[i])
	}
	p.PeerOverRaw = percentile(ratios, 50)
	if p.PeerOverRaw > 0 {
		p.NormalizedStewardOverPeer = r.Convergence.MedianRatio / p.PeerOverRaw
	}
	n := float64(max(p.Objects, 1))
	p.RequestsPerObj = map[string]float64{}
	failed := 0.0
	for k, v := range p.total {
		p.RequestsPerObj[k] = v / n
		if strings.HasPrefix(k, "failed ") {
			failed += v
		}
	}
	writes, _ := p.total.writes()
	p.ObjectWritesPer = (writes - p.total["create events"] - p.total["patch events"]) / n
	p.FailedWritesPer = failed / n
	p.PeakRSS, p.StewardPeakRSS = 0, 0
	for _, m := range p.MemoryBulk {
		p.PeakRSS = max(p.PeakRSS, m.PeakRSS)
	}
	for _, m := range r.Memory.Bulk {
		p.StewardPeakRSS = max(p.StewardPeakRSS, m.PeakRSS)
	}
}

// peerProcess is a running peer operator.
type peerProcess struct {
	cmd                            *exec.Cmd
	done                           chan error
	pid                            int
	metricsURL, probeURL, pprofURL string
}

// Profiles is the base URL of the peer's /debug/pprof.
func (p *peerProcess) Profiles() string { return p.pprofURL }

// Metrics reads the peer's /metrics.
func (p *peerProcess) Metrics(ctx context.Context) (string, error) {
	return devenv.Get(ctx, p.metricsURL)
}

// buildPeer builds ./test/bench/peer into dir as Steward is built.
func buildPeer(ctx context.Context, dir string) (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "peer")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./test/bench/peer")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the peer operator: %w: %s", err, out)
	}
	return bin, nil
}

// loopbackPort returns a free TCP port on 127.0.0.1.
func loopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startPeer starts the peer against the cluster and waits until it leads.
func startPeer(ctx context.Context, c *localcluster.Cluster, bin string, out *os.File, concurrency int) (*peerProcess, error) {
	metricsPort, err := loopbackPort()
	if err != nil {
		return nil, err
	}
	probePort, err := loopbackPort()
	if err != nil {
		return nil, err
	}
	pprofPort, err := loopbackPort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--kubeconfig="+c.Kubeconfig(),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probePort),
		"--pprof-bind-address=127.0.0.1:"+strconv.Itoa(pprofPort),
		"--leader-elect=true", "--leader-election-namespace=default",
		"--concurrency="+strconv.Itoa(concurrency),
	)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the peer operator: %w", err)
	}
	p := &peerProcess{
		cmd: cmd, done: make(chan error, 1), pid: cmd.Process.Pid,
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		probeURL:   fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort),
		pprofURL:   fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort),
	}
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := devenv.Get(ctx, p.probeURL); err == nil {
			return p, nil
		} else if time.Now().After(deadline) {
			_ = p.stop(5 * time.Second)
			return nil, fmt.Errorf("peer operator not ready after 3 minutes: %w", err)
		}
		select {
		case err := <-p.done:
			p.done <- err
			return nil, fmt.Errorf("peer operator exited during start: %w", err)
		case <-ctx.Done():
			_ = p.stop(5 * time.Second)
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits up to timeout, then kills.
func (p *peerProcess) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return errors.New("the peer operator did not stop in time and was killed")
	}
}

// measurePeer runs the peer alone on the cluster: cfg.Rounds bulk creates of
// N WebApps, timed to all Ready as Steward's are, its requests counted until
// it is quiet, an idle window, and its memory sampled throughout. It then
// stops the peer and deletes its namespaces.
func (b *bench) measurePeer(ctx context.Context, cluster *localcluster.Cluster, res *results) (err error) {
	bin, err := buildPeer(ctx, cluster.Dir())
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(cluster.Dir(), "peer.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	p, err := startPeer(ctx, cluster, bin, logFile, b.cfg.PeerConcurrency)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			err = errors.Join(err, p.stop(30*time.Second))
		}
	}()
	b.logf("Peer operator started (Create/Update, status update every reconcile, cluster-wide cache, %d workers, leader election on)", b.cfg.PeerConcurrency)
	memCtx, stopMem := context.WithCancel(ctx)
	defer stopMem()
	mem := &sampler{}
	go mem.run(memCtx, p.pid, p)

	pr := &peerResults{Concurrency: b.cfg.PeerConcurrency, total: requestCounts{}}
	res.Peer = pr
	var all []string
	for r := range b.cfg.Rounds {
		// The plain client's round, first in even rounds, as in Steward's
		// phase.
		rawFirst := r%2 == 0
		if rawFirst {
			if err := b.peerRawRound(ctx, r, p.pid, pr, &all); err != nil {
				return err
			}
		}
		nss, err := b.namespaces(ctx, fmt.Sprintf("peer-%d", r), b.cfg.Namespaces)
		if err != nil {
			return err
		}
		all = append(all, nss...)
		profiled := b.profileRound(ctx, r, "peer", p)
		br, err := b.operatorRound(ctx, p, p.pid, nss)
		if err != nil {
			return fmt.Errorf("peer, round %d: %w", r, err)
		}
		before, start, last := br.before, br.start, br.last
		pr.Seconds = append(pr.Seconds, last.Sub(start).Seconds())
		pr.CPU = append(pr.CPU, br.cpu)
		if err := profiled(); err != nil {
			return err
		}
		pr.MemoryBulk = append(pr.MemoryBulk, summarize(mem.between(start, last)))
		b.logf("Round %d: the peer converged %d WebApps in %.1fs", r+1, b.cfg.N, last.Sub(start).Seconds())
		if r == b.cfg.Rounds-1 {
			if err := b.saveHeap(ctx, p, "peer-heap.pprof"); err != nil {
				return err
			}
		}
		if err := quiet(ctx, p); err != nil {
			return fmt.Errorf("peer: %w", err)
		}
		after, err := scrapeRequests(ctx, p)
		if err != nil {
			return err
		}
		for k, v := range after.minus(before) {
			pr.total[k] += v
		}
		work, err := br.work(ctx, p, b.sc)
		if err != nil {
			return err
		}
		pr.Work = pr.Work.plus(work)
		pr.Objects += b.cfg.N
		if !rawFirst {
			if err := b.peerRawRound(ctx, r, p.pid, pr, &all); err != nil {
				return err
			}
		}
	}

	if b.cfg.Idle > 0 {
		b.logf("Peer idle window of %s", b.cfg.Idle)
		before, err := scrapeRequests(ctx, p)
		if err != nil {
			return err
		}
		start := time.Now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.cfg.Idle):
		}
		after, err := scrapeRequests(ctx, p)
		if err != nil {
			return err
		}
		d := after.minus(before)
		pr.IdleSeconds = b.cfg.Idle.Seconds()
		pr.IdleWrites, pr.IdleLeaseWrites = d.writes()
		pr.IdleRequests = d
		pr.MemorySteady = summarize(mem.between(start, time.Now()))
	}

	stopped = true
	if err := p.stop(30 * time.Second); err != nil {
		return err
	}
	return b.deleteNamespaces(ctx, "the peer's", all)
}

// peerRawRound times the plain client's round r of the peer's phase and
// adds its namespaces to all.
func (b *bench) peerRawRound(ctx context.Context, r, pid int, pr *peerResults, all *[]string) error {
	nss, err := b.namespaces(ctx, fmt.Sprintf("peer-raw-%d", r), b.cfg.Namespaces)
	if err != nil {
		return err
	}
	*all = append(*all, nss...)
	objs, keys := spread(b.cfg.N, nss, b.sc.Raw)
	cpu := b.cpu(pid)
	profiled := b.profileRound(ctx, r, "peer-plain", nil)
	start := time.Now()
	if err := b.createAll(ctx, objs); err != nil {
		return err
	}
	last, err := b.rawReady.waitAll(ctx, keys, bulkTimeout(b.cfg.N))
	if err != nil {
		return fmt.Errorf("plain client beside the peer, round %d: %w", r, err)
	}
	pr.RawSeconds = append(pr.RawSeconds, last.Sub(start).Seconds())
	pr.RawCPU = append(pr.RawCPU, b.cpu(pid).since(cpu))
	if err := profiled(); err != nil {
		return err
	}
	b.logf("Round %d: plain client created %d WebApps' children, all ready in %.1fs", r+1, b.cfg.N, last.Sub(start).Seconds())
	return nil
}

// deleteNamespaces deletes nss (whose namespaces they are, for the log),
// and waits until they are gone, so that what runs next (Steward after the peer, or
// a round with -fresh-rounds) finds none of their objects.
func (b *bench) deleteNamespaces(ctx context.Context, whose string, nss []string) error {
	start := time.Now()
	for _, ns := range nss {
		if err := b.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting namespace %s: %w", ns, err)
		}
	}
	limit := max(10*time.Minute, bulkTimeout(b.cfg.N))
	deadline := time.Now().Add(limit)
	for {
		left := 0
		for _, ns := range nss {
			err := b.c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return err
			default:
				left++
			}
		}
		if left == 0 {
			b.logf("Deleted %s %d namespaces in %.1fs", whose, len(nss), time.Since(start).Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			// Nothing may start while their WebApps remain.
			var apps v1alpha1.WebAppList
			if err := b.c.List(ctx, &apps); err != nil {
				return err
			}
			if len(apps.Items) > 0 {
				return fmt.Errorf("%d of %s namespaces and %d WebApps still exist after %v", left, whose, len(apps.Items), limit)
			}
			b.logf("%d of %s namespaces are still being deleted after %v; no WebApps remain", left, whose, limit)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
