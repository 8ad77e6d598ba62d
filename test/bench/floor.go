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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/controller/webapp"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/status"
)

// floorResults are the floor measure's rounds: the requests a WebApp adds to
// the plain client's, sent by the bench itself as an operator that costs
// nothing would send them, beside the plain client's rounds.
type floorResults struct {
	FloorSeconds []float64  `json:"floorSeconds"`
	RawSeconds   []float64  `json:"rawSeconds"`
	FloorCPU     []cpuTimes `json:"floorCPU"`
	RawCPU       []cpuTimes `json:"rawCPU"`
	// Ratios and CPURatios are, per round, the floor's time and its
	// cluster's CPU seconds over the plain client's beside it.
	Ratios         []float64 `json:"ratios"`
	MedianRatio    float64   `json:"medianRatio"`
	CPURatios      []float64 `json:"cpuRatios"`
	MedianCPURatio float64   `json:"medianCPURatio"`
	// Watched are the floor's rounds beside a cache that opens Steward's
	// watches (-floor-watch), each over the plain client's round of the
	// same pass.
	WatchedSeconds        []float64  `json:"watchedSeconds,omitempty"`
	WatchedCPU            []cpuTimes `json:"watchedCPU,omitempty"`
	WatchedRatios         []float64  `json:"watchedRatios,omitempty"`
	MedianWatchedRatio    float64    `json:"medianWatchedRatio,omitempty"`
	WatchedCPURatios      []float64  `json:"watchedCPURatios,omitempty"`
	MedianWatchedCPURatio float64    `json:"medianWatchedCPURatio,omitempty"`
	// StewardOverWatched is Steward's median ratio to the plain client in
	// its convergence rounds over MedianWatchedRatio, when both ran: what
	// Steward's reconciles add to the floor with watches, each measured
	// against the plain client's rounds of its own phase of the run.
	StewardOverWatched float64 `json:"stewardOverWatched,omitempty"`
	// Queued are the floor's rounds beside Steward's watches with an
	// operator's flow (-floor-queue): see floorRound.
	Queued *floorVariant `json:"queued,omitempty"`
}

// floorVariant is one variant of the floor's rounds, each beside the plain
// client's round of the same pass.
type floorVariant struct {
	Seconds        []float64  `json:"seconds"`
	CPU            []cpuTimes `json:"cpu"`
	Ratios         []float64  `json:"ratios"`
	MedianRatio    float64    `json:"medianRatio"`
	CPURatios      []float64  `json:"cpuRatios"`
	MedianCPURatio float64    `json:"medianCPURatio"`
	// StewardOver is Steward's median ratio to the plain client in its
	// convergence rounds over MedianRatio, when both ran.
	StewardOver float64 `json:"stewardOver,omitempty"`
}

// finish computes v's ratios to the plain client's rounds raw.
func (v *floorVariant) finish(raw []float64, rawCPU []cpuTimes) {
	v.Ratios, v.CPURatios = ratiosOver(v.Seconds, v.CPU, raw, rawCPU)
	v.MedianRatio, v.MedianCPURatio = percentile(v.Ratios, 50), percentile(v.CPURatios, 50)
}

// ratiosOver returns, round by round, the seconds and the cluster's CPU
// seconds of some rounds over those of the plain client's rounds beside
// them.
func ratiosOver(seconds []float64, cpu []cpuTimes, raw []float64, rawCPU []cpuTimes) (ratios, cpuRatios []float64) {
	for i := range min(len(seconds), len(raw)) {
		ratios = append(ratios, seconds[i]/raw[i])
		cpuRatios = append(cpuRatios, cpu[i].total()/rawCPU[i].total())
	}
	return ratios, cpuRatios
}

// floorNamespace prefixes the namespaces of the floor measure, deleted
// after each round: no operator runs during the measure, and none must see
// its WebApps afterwards.
const floorNamespace = "bench-floor"

// floorWorkers answer ready Deployments, as Steward's --webapp-concurrency.
const floorWorkers = 10

// measureFloor runs, before any operator starts, rounds of N WebApps whose
// children and status the bench itself creates and writes, as Steward does
// (the same Deployment and Service, owned by the WebApp, created together;
// one status patch at Ready; one Available event), with none of an
// operator's own work: no reconcile, no watch but the bench's, no CPU of its
// own beyond the bench's. Each is timed beside a plain client's round, in
// alternating order. Its ratio is the least any operator that reports a
// WebApp's status and event can reach against the plain client.
func (b *bench) measureFloor(ctx context.Context, res *results) error {
	fr := &floorResults{}
	res.Floor = fr
	for r := range b.cfg.Rounds {
		order := []string{"raw", "floor"}
		if b.cfg.FloorWatch || b.cfg.FloorQueue { // the queued floor is read beside the unqueued
			order = append(order, "watched")
		}
		if b.cfg.FloorQueue {
			order = append(order, "queued")
			if fr.Queued == nil {
				fr.Queued = &floorVariant{}
			}
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, which := range order {
			nss, err := b.namespaces(ctx, fmt.Sprintf("%s-%s-%d", floorNamespace, which, r), b.cfg.Namespaces)
			if err != nil {
				return err
			}
			var watches *stewardWatches
			if which == "watched" || which == "queued" {
				if watches, err = b.watchAsSteward(ctx); err != nil {
					return err
				}
			}
			before := processCPU(b.procs)
			var start, last time.Time
			switch which {
			case "raw":
				objs, keys := spread(b.cfg.N, nss, b.sc.Raw)
				start = time.Now()
				if err := b.createAll(ctx, objs); err != nil {
					return err
				}
				if last, err = b.rawReady.waitAll(ctx, keys, bulkTimeout(b.cfg.N)); err != nil {
					return fmt.Errorf("floor measure, plain client, round %d: %w", r, err)
				}
				fr.RawSeconds = append(fr.RawSeconds, last.Sub(start).Seconds())
				fr.RawCPU = append(fr.RawCPU, processCPU(b.procs).since(before))
			case "floor":
				if start, last, err = b.floorRound(ctx, nss, false); err != nil {
					return fmt.Errorf("floor measure, round %d: %w", r, err)
				}
				fr.FloorSeconds = append(fr.FloorSeconds, last.Sub(start).Seconds())
				fr.FloorCPU = append(fr.FloorCPU, processCPU(b.procs).since(before))
			case "watched", "queued":
				queued := which == "queued"
				start, last, err = b.floorRound(ctx, nss, queued)
				if err == nil {
					err = watches.sawAll(ctx, nss, b.cfg.N)
				}
				watches.stop()
				if err != nil {
					return fmt.Errorf("floor measure beside Steward's watches (%s), round %d: %w", which, r, err)
				}
				if queued {
					fr.Queued.Seconds = append(fr.Queued.Seconds, last.Sub(start).Seconds())
					fr.Queued.CPU = append(fr.Queued.CPU, processCPU(b.procs).since(before))
					break
				}
				fr.WatchedSeconds = append(fr.WatchedSeconds, last.Sub(start).Seconds())
				fr.WatchedCPU = append(fr.WatchedCPU, processCPU(b.procs).since(before))
			}
			b.logf("Floor measure, round %d: %s, %d WebApps in %.1fs", r+1, which, b.cfg.N, last.Sub(start).Seconds())
			if err := b.deleteNamespaces(ctx, "the floor measure's", nss); err != nil {
				return err
			}
		}
	}
	fr.Ratios, fr.CPURatios = ratiosOver(fr.FloorSeconds, fr.FloorCPU, fr.RawSeconds, fr.RawCPU)
	fr.MedianRatio, fr.MedianCPURatio = percentile(fr.Ratios, 50), percentile(fr.CPURatios, 50)
	fr.WatchedRatios, fr.WatchedCPURatios = ratiosOver(fr.WatchedSeconds, fr.WatchedCPU, fr.RawSeconds, fr.RawCPU)
	if len(fr.WatchedRatios) > 0 {
		fr.MedianWatchedRatio, fr.MedianWatchedCPURatio = percentile(fr.WatchedRatios, 50), percentile(fr.WatchedCPURatios, 50)
	}
	if fr.Queued != nil {
		fr.Queued.finish(fr.RawSeconds, fr.RawCPU)
	}
	return nil
}

// stewardWatchedKinds are the kinds Steward's controllers watch (their
// For, Owns and Watches): the children it may create, Namespaces, and
// every steward.dev kind.
func stewardWatchedKinds() []client.Object {
	return append(manager.ManagedKinds(), &corev1.Namespace{},
		&v1alpha1.WebApp{}, &v1alpha1.Database{}, &v1alpha1.Cache{}, &v1alpha1.Backup{},
		&v1alpha1.Restore{}, &v1alpha1.AppConfig{}, &v1alpha1.AppStack{}, &v1alpha1.WorkloadPolicy{})
}

// stewardWatches is a cache with Steward's default cache options and an
// informer for each of stewardWatchedKinds, with no handler: the watches an
// idle Steward holds open, in the bench's process.
type stewardWatches struct {
	cache cache.Cache
	stop  func()
}

// watchAsSteward starts stewardWatches and waits until they have synced.
func (b *bench) watchAsSteward(ctx context.Context) (*stewardWatches, error) {
	opts, err := manager.CacheOptions(manager.DefaultOptions())
	if err != nil {
		return nil, err
	}
	opts.Scheme = manager.Scheme()
	c, err := cache.New(b.rest, opts)
	if err != nil {
		return nil, fmt.Errorf("the cache of Steward's watches: %w", err)
	}
	for _, obj := range stewardWatchedKinds() {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Start(wctx)
	}()
	stop := func() { cancel(); <-done }
	if !c.WaitForCacheSync(wctx) {
		stop()
		return nil, errors.New("the cache of Steward's watches did not sync")
	}
	return &stewardWatches{cache: c, stop: stop}, nil
}

// sawAll checks that the watches received the round's n WebApps, and their
// Deployments and pods through Steward's label selector: that they carried
// the events an operator's would.
func (w *stewardWatches) sawAll(ctx context.Context, nss []string, n int) error {
	for _, list := range []client.ObjectList{&v1alpha1.WebAppList{}, &appsv1.DeploymentList{}, &corev1.PodList{}} {
		seen := 0
		for _, ns := range nss {
			if err := w.cache.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			seen += meta.LenList(list)
		}
		if seen < n {
			return fmt.Errorf("the cache of Steward's watches holds %d %T items of the round's %d", seen, list, n)
		}
	}
	return nil
}

// floorRound creates N WebApps over nss with their children, and writes
// each one's status and event once its Deployment is ready. It returns when
// the creates began and when the last WebApp was seen Ready.
//
// Unless queued, each WebApp's children are created as soon as it is, by
// the client that created it, and floorWorkers write the statuses and
// events. Queued (-floor-queue), an operator's flow with none of its work:
// floorWorkers do both, from one queue, each new WebApp's children before
// any status, as Steward's workers take a WebApp's first reconcile before
// its children's events. Its rounds over the unqueued ones are what
// waiting for floorWorkers costs, by itself.
func (b *bench) floorRound(ctx context.Context, nss []string, queued bool) (start, last time.Time, err error) {
	objs, keys := spread(b.cfg.N, nss, func(ns string, i int) []client.Object { return []client.Object{b.sc.New(ns, i, false)} })
	var created sync.Map // client.ObjectKey to *v1alpha1.WebApp, once its children are built
	ready := make(chan *v1alpha1.WebApp, len(objs))
	var fresh chan *v1alpha1.WebApp // nil, which never sends, unless queued
	if queued {
		fresh = make(chan *v1alpha1.WebApp, len(objs))
	}
	createChildren := func(ctx context.Context, app *v1alpha1.WebApp) error {
		children := stewardChildren(app)
		return apply.Together(
			func() error { return b.c.Create(ctx, children[0]) },
			func() error { return b.c.Create(ctx, children[1]) })
	}
	var answered sync.Map
	restore := b.rawReady.chainOnUpdate(func(o client.Object) {
		if !b.sc.RawConverged(o) {
			return
		}
		key := client.ObjectKeyFromObject(o)
		app, ok := created.Load(key)
		if !ok {
			return
		}
		if _, dup := answered.LoadOrStore(key, true); !dup {
			ready <- app.(*v1alpha1.WebApp)
		}
	})
	defer restore()

	answerCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	// answer sends what a WebApp taken from fresh (its children) or from
	// ready (its status and event) needs.
	answer := func(app *v1alpha1.WebApp, isNew bool) error {
		if isNew {
			if err := createChildren(answerCtx, app); err != nil {
				return fmt.Errorf("the children of %s: %w", app.Name, err)
			}
			return nil
		}
		if err := status.Write(answerCtx, b.c, app, &app.Status, runningStatus(app)); err != nil {
			return fmt.Errorf("writing the status of %s: %w", app.Name, err)
		}
		if err := b.c.Create(answerCtx, availableEvent(app)); err != nil {
			return fmt.Errorf("the event of %s: %w", app.Name, err)
		}
		return nil
	}
	errs := make(chan error, floorWorkers)
	for range floorWorkers {
		wg.Go(func() {
			for {
				var app *v1alpha1.WebApp
				isNew := true
				select {
				case app = <-fresh: // new WebApps first
				default:
					select {
					case <-answerCtx.Done():
						return
					case app = <-fresh:
					case app = <-ready:
						isNew = false
					}
				}
				if err := answer(app, isNew); err != nil {
					errs <- err
					return
				}
			}
		})
	}

	start = time.Now()
	err = inParallel(len(objs), b.cfg.Concurrency, func(i int) error {
		app := objs[i].(*v1alpha1.WebApp)
		if err := b.c.Create(ctx, app); err != nil {
			return err
		}
		created.Store(client.ObjectKeyFromObject(app), app)
		if queued {
			fresh <- app
			return nil
		}
		return createChildren(ctx, app)
	})
	if err != nil {
		return start, last, err
	}
	done := make(chan struct{})
	go func() {
		last, err = b.ready.waitAll(answerCtx, keys, bulkTimeout(b.cfg.N))
		close(done)
	}()
	select {
	case <-done:
	case werr := <-errs:
		stop()
		<-done
		return start, last, werr
	}
	return start, last, err
}

// stewardChildren are the Deployment and Service Steward creates for app,
// owned by it, as typed objects (sent as protobuf, as Steward sends them).
func stewardChildren(app *v1alpha1.WebApp) []client.Object {
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	for _, c := range []struct {
		ac  runtime.ApplyConfiguration
		obj client.Object
	}{{webapp.Deployment(app, webapp.Bindings{}), dep}, {webapp.Service(app), svc}} {
		raw, err := json.Marshal(c.ac)
		if err != nil {
			panic(err) // an apply configuration always encodes
		}
		if err := json.Unmarshal(raw, c.obj); err != nil {
			panic(err)
		}
	}
	return []client.Object{dep, svc}
}

// printFloor writes the floor measure's part of the report.
func (r *results) printFloor(out io.Writer) {
	f := r.Floor
	fmt.Fprintf(out, "\n12. the floor: a WebApp's own requests (its create, its children owned by it, one status patch, one event), sent by the bench with no operator, N=%d:\n", r.Settings.N)
	fmt.Fprintf(out, "   floor, seconds per round: %s\n", floats(f.FloorSeconds, "%.1f"))
	fmt.Fprintf(out, "   plain client beside it:   %s\n", floats(f.RawSeconds, "%.1f"))
	fmt.Fprintf(out, "   floor / plain client: %.2fx (rounds %s); by the CPU seconds of the cluster's processes: %.2fx (rounds %s)\n",
		f.MedianRatio, floats(f.Ratios, "%.2f"), f.MedianCPURatio, floats(f.CPURatios, "%.2f"))
	printCPU(out, "12.", "the floor's", f.FloorCPU, f.RawCPU)
	if len(f.WatchedSeconds) == 0 {
		return
	}
	fmt.Fprintf(out, "\n12. the floor beside a cache holding Steward's watches open (-floor-watch), N=%d:\n", r.Settings.N)
	fmt.Fprintf(out, "   floor with watches, seconds per round: %s\n", floats(f.WatchedSeconds, "%.1f"))
	fmt.Fprintf(out, "   floor with watches / plain client: %.2fx (rounds %s); by the CPU seconds of the cluster's processes: %.2fx (rounds %s)\n",
		f.MedianWatchedRatio, floats(f.WatchedRatios, "%.2f"), f.MedianWatchedCPURatio, floats(f.WatchedCPURatios, "%.2f"))
	printCPU(out, "12.", "the floor's with watches", f.WatchedCPU, f.RawCPU)
	printCPUBeside(out, "12.", "the floor's with watches", "the floor's", f.WatchedCPU, f.FloorCPU)
	if f.StewardOverWatched > 0 {
		fmt.Fprintf(out, "\n12. Steward over the floor with watches, each by its median ratio to the plain client's rounds beside it: %.2fx (%.2fx / %.2fx)\n",
			f.StewardOverWatched, r.Convergence.MedianRatio, f.MedianWatchedRatio)
	}
	if q := f.Queued; q != nil {
		fmt.Fprintf(out, "\n12. the floor with watches, queued (-floor-queue): %d workers send each WebApp's children, new WebApps first, then its status and event, N=%d:\n", floorWorkers, r.Settings.N)
		fmt.Fprintf(out, "   queued floor, seconds per round: %s\n", floats(q.Seconds, "%.1f"))
		fmt.Fprintf(out, "   queued floor / plain client: %.2fx (rounds %s); by the CPU seconds of the cluster's processes: %.2fx (rounds %s)\n",
			q.MedianRatio, floats(q.Ratios, "%.2f"), q.MedianCPURatio, floats(q.CPURatios, "%.2f"))
		printCPUBeside(out, "12.", "the queued floor's", "the floor's with watches", q.CPU, f.WatchedCPU)
		if q.StewardOver > 0 {
			fmt.Fprintf(out, "   Steward over the queued floor, each by its median ratio to the plain client's rounds beside it: %.2fx (%.2fx / %.2fx)\n",
				q.StewardOver, r.Convergence.MedianRatio, q.MedianRatio)
		}
	}
}
