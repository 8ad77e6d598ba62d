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

// Command bench measures how Steward converges thousands of objects on a
// full local cluster, what it costs the API server, and its memory. It is
// run by `make bench`; `go run ./test/bench -h` lists the knobs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/memlimit"
	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

type config struct {
	N, Namespaces, Concurrency, Rounds   int
	Edits, Invalid, Probes               int
	UnrelatedConfigMaps, UnrelatedSecret int
	Idle                                 time.Duration
	ControllerManagerQPS, KCMBurst       int
	Kind, Out                            string
	// Measures are the measures run, comma-separated; empty means every
	// one that applies to the kind.
	Measures string
	// The config rollout measure (WebApp only).
	ConfigConsumers, ConfigChanged, ConfigRounds, ConfigDebounce int
	ConfigMaxConcurrent                                          intList
	// The stacks measure (AppStack only): AppStacks per round.
	Stacks int
	// Peer runs the peer operator's bulk rounds and idle window before
	// Steward starts (WebApp with the convergence measure only), with
	// PeerConcurrency workers.
	Peer            bool
	PeerConcurrency int
	// FreshRounds deletes each bulk round's namespaces, and waits until
	// they are gone, before the next round starts.
	FreshRounds bool
	// FloorWatch adds to each round of the floor measure a floor round
	// beside a cache that opens Steward's watches (its kinds, namespaces,
	// label selectors and transforms) and does nothing with them.
	FloorWatch bool
	// FloorQueue adds to each round of the floor measure a round of the
	// floor with watches whose requests floorWorkers send from one queue,
	// as an operator's workers do.
	FloorQueue bool
	// Profiles saves CPU profiles of the API server (and of the operator)
	// during the first round of each convergence measure.
	Profiles bool
	// OperatorLogLevel is Steward's --log-level: 1 or more adds its debug
	// lines to steward.log, for explaining a slow measure.
	OperatorLogLevel int
	// OperatorMemoryLimit, when set, gives Steward the soft memory limit
	// it sets itself in a container with this memory limit (the chart's
	// resources.limits.memory): GOMEMLIMIT at memlimit.Share of it.
	OperatorMemoryLimit string
	// OperatorFlags are more flags for Steward, space-separated (such as
	// --webapp-concurrency=20), for comparing a setting with the defaults
	// in runs of their own; empty runs it with its defaults.
	OperatorFlags string
}

// flagsNote names the flags given to the operator beyond its defaults,
// for the log and the report.
func flagsNote(flags string) string {
	if f := strings.Fields(flags); len(f) > 0 {
		return ", except " + strings.Join(f, " ")
	}
	return ""
}

// memoryLimitEnv is the operator's environment for a container memory
// limit (a quantity such as 256Mi; empty for none): the GOMEMLIMIT that
// memlimit.Set derives from the cgroup's limit, which a process outside a
// container has not. It also returns a note for the log.
func memoryLimitEnv(limit string) ([]string, string, error) {
	if limit == "" {
		return nil, "", nil
	}
	q, err := resource.ParseQuantity(limit)
	if err != nil {
		return nil, "", fmt.Errorf("-operator-memory-limit: %w", err)
	}
	soft := int64(float64(q.Value()) * memlimit.Share)
	return []string{fmt.Sprintf("GOMEMLIMIT=%d", soft)}, fmt.Sprintf(", as in a container limited to %s: GOMEMLIMIT=%d", limit, soft), nil
}

// intList is a flag of comma-separated integers.
type intList []int

func (l *intList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(s string) error {
	*l = nil
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		*l = append(*l, v)
	}
	return nil
}

// measures are the measures in the order they run; the change latency edits
// an object the convergence measure created.
var measures = []string{"requests", "floor", "convergence", "stacks", "idle", "unrelated", "change", "isolation", "config"}

// applies says why a measure does not apply to a kind, or "" when it does.
func applies(measure, kind string) string {
	stack := strings.EqualFold(kind, stackScenario{}.Kind())
	switch {
	case measure == "config" && !strings.EqualFold(kind, "WebApp"):
		return "the config measure rolls out WebApps: it needs -kind WebApp"
	case measure == "requests" && !strings.EqualFold(kind, "WebApp"):
		return "the requests measure sends a WebApp's requests: it needs -kind WebApp"
	case measure == "floor" && !strings.EqualFold(kind, "WebApp"):
		return "the floor measure sends a WebApp's requests: it needs -kind WebApp"
	case measure == "stacks" && !stack:
		return "the stacks measure creates AppStacks: it needs -kind AppStack"
	case stack && slices.Contains([]string{"convergence", "change", "isolation"}, measure):
		return "the " + measure + " measure does not apply to AppStacks: use stacks, idle or unrelated"
	}
	return ""
}

// runsPeer reports whether the peer operator runs: it is compared with
// Steward's WebApp convergence.
func runsPeer(cfg config, selected []string) bool {
	return cfg.Peer && strings.EqualFold(cfg.Kind, "WebApp") && slices.Contains(selected, "convergence")
}

// selectMeasures checks the -measures flag against the kind.
func selectMeasures(cfg config) ([]string, error) {
	var out []string
	if cfg.Measures == "" {
		out = slices.DeleteFunc(slices.Clone(measures), func(m string) bool { return applies(m, cfg.Kind) != "" })
	} else {
		for m := range strings.SplitSeq(cfg.Measures, ",") {
			m = strings.TrimSpace(m)
			if !slices.Contains(measures, m) {
				return nil, fmt.Errorf("no measure %q; known: %s", m, strings.Join(measures, ", "))
			}
			if why := applies(m, cfg.Kind); why != "" {
				return nil, errors.New(why)
			}
			out = append(out, m)
		}
	}
	if slices.Contains(out, "stacks") && cfg.Stacks < 1 {
		return nil, errors.New("the stacks measure needs -stacks of at least 1")
	}
	if slices.Contains(out, "change") && !slices.Contains(out, "convergence") {
		return nil, errors.New("the change measure edits an object the convergence measure creates: select both")
	}
	if slices.Contains(out, "config") && (cfg.ConfigChanged < 1 || cfg.ConfigChanged > cfg.ConfigConsumers) {
		return nil, fmt.Errorf("-config-changed=%d must be between 1 and -config-consumers=%d", cfg.ConfigChanged, cfg.ConfigConsumers)
	}
	if slices.Contains(out, "config") && (len(cfg.ConfigMaxConcurrent) == 0 || cfg.ConfigRounds < 1) {
		return nil, errors.New("the config measure needs -config-max-concurrent and -config-rounds of at least 1")
	}
	// In the usual order, whatever order they were given in.
	return slices.DeleteFunc(slices.Clone(measures), func(m string) bool { return !slices.Contains(out, m) }), nil
}

func main() {
	var cfg config
	root, _ := localcluster.RepoRoot() // relative paths when run elsewhere
	flag.IntVar(&cfg.N, "n", 1000, "Objects per bulk create (use 10000 for the large run).")
	flag.IntVar(&cfg.Namespaces, "namespaces", 4, "Namespaces each bulk create is spread over.")
	flag.IntVar(&cfg.Concurrency, "concurrency", 16, "Parallel create requests, the same for Steward and the plain client.")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "Repetitions of the Steward and plain-client bulk creates; medians are reported.")
	flag.IntVar(&cfg.Edits, "edits", 50, "Spec edits timed for the change latency, at rest and during a bulk create.")
	flag.IntVar(&cfg.Invalid, "invalid", 1000, "Objects that can never become Ready, for the isolation measure.")
	flag.IntVar(&cfg.Probes, "probes", 50, "New objects timed to Ready beside the invalid ones.")
	flag.IntVar(&cfg.UnrelatedConfigMaps, "unrelated-configmaps", 20000, "Unrelated ConfigMaps created for the memory measure.")
	flag.IntVar(&cfg.UnrelatedSecret, "unrelated-secrets", 5000, "Unrelated Secrets created for the memory measure.")
	flag.DurationVar(&cfg.Idle, "idle", 2*time.Minute, "Idle window in which writes are counted.")
	flag.IntVar(&cfg.ControllerManagerQPS, "kcm-qps", 500, "kube-controller-manager's --kube-api-qps (its default of 20 would dominate).")
	flag.IntVar(&cfg.KCMBurst, "kcm-burst", 1000, "kube-controller-manager's --kube-api-burst.")
	flag.StringVar(&cfg.Kind, "kind", scenarios[0].Kind(), "The kind to measure: "+kinds()+".")
	flag.StringVar(&cfg.Measures, "measures", "", "The measures to run, comma-separated, of "+strings.Join(measures, ", ")+"; empty runs every one that applies to the kind (config: WebApp only; stacks: AppStack only, which has no convergence, change or isolation).")
	flag.IntVar(&cfg.Stacks, "stacks", 100, "AppStacks per round of the stacks measure, each of 4 components; the same components are also created directly.")
	flag.IntVar(&cfg.ConfigConsumers, "config-consumers", 500, "WebApps that use the one AppConfig of the config rollout measure.")
	flag.IntVar(&cfg.ConfigChanged, "config-changed", 10, "Of those, the WebApps that use the key each config change changes.")
	flag.IntVar(&cfg.ConfigRounds, "config-rounds", 3, "Config changes timed at each -config-max-concurrent; medians are reported.")
	flag.IntVar(&cfg.ConfigDebounce, "config-debounce", 0, "The AppConfig's spec.rollout.debounceSeconds.")
	cfg.ConfigMaxConcurrent = intList{5, 10}
	flag.Var(&cfg.ConfigMaxConcurrent, "config-max-concurrent", "The AppConfig's spec.rollout.maxConcurrent, comma-separated: the config changes are timed at each.")
	flag.BoolVar(&cfg.Peer, "peer", true, "Before Steward starts, run the peer operator (test/bench/peer: Create/Update, a status update every reconcile, a cluster-wide cache) through the same bulk rounds and idle window, and report it beside Steward (WebApp with the convergence measure only).")
	flag.IntVar(&cfg.PeerConcurrency, "peer-concurrency", 10, "The peer's concurrent reconciles: Steward's --webapp-concurrency by default (the tutorials keep controller-runtime's 1).")
	flag.BoolVar(&cfg.Profiles, "profiles", true, "Save 30-second CPU profiles of the API server and of the operator, from 10 s into the first round of Steward, of the peer and of the plain client beside each, next to the results (apiserver-steward.pprof, steward-cpu.pprof, ...).")
	flag.BoolVar(&cfg.FreshRounds, "fresh-rounds", false, "Delete the namespaces of each of Steward's and the plain client's convergence rounds (not the peer's), and wait until they are gone, before the next round: every round then starts with the same cluster. The API server's ClusterIP allocation costs more the more Services exist, which at -n 10000 makes the second round of a pair much slower than the first.")
	flag.BoolVar(&cfg.FloorQueue, "floor-queue", false, "In each round of the floor measure, also time the floor beside Steward's watches with its requests sent by 10 workers from one queue, each new WebApp's children first, then statuses and events, as Steward's workers take them: what waiting for an operator's workers costs, with none of its work. Implies -floor-watch.")
	flag.BoolVar(&cfg.FloorWatch, "floor-watch", false, "In each round of the floor measure, also time a floor round beside a cache that opens every watch Steward's controllers open, with its cache options, and does nothing else: the API server's cost of an operator's watches, apart from its work.")
	flag.IntVar(&cfg.OperatorLogLevel, "operator-log-level", 0, "Steward's --log-level (1 for debug); its log is kept beside the results as steward.log.")
	flag.StringVar(&cfg.OperatorMemoryLimit, "operator-memory-limit", "", "Run Steward as in a container with this memory limit (e.g. 256Mi): GOMEMLIMIT at 90% of it, as the operator sets from its cgroup. Empty: no limit, as in the chart without resources.limits.memory.")
	flag.StringVar(&cfg.OperatorFlags, "operator-flags", "", "More flags for Steward, space-separated (e.g. --webapp-concurrency=20); the report names them. Empty: its defaults.")
	flag.StringVar(&cfg.Out, "out", filepath.Join(root, "bin", "bench", "results.json"), "Where to write the JSON results.")
	flag.Parse()
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	res.print(os.Stdout)
	fmt.Printf("\nJSON results: %s\n", cfg.Out)
}

// bench holds what every measure uses.
type bench struct {
	cfg      config
	sc       Scenario
	c        client.Client
	operator *devenv.Operator
	mem      *sampler
	// informers are the bench's own, apart from the operator's.
	informers cache.Cache
	ready     *tracker // objects Ready at their generation
	waiting   *tracker // objects that reported they wait for something
	rawReady  *tracker // raw children ready
	edits     *editWatch
	// firstApp is the object whose spec the change latency edits.
	firstApp client.ObjectKey
	began    time.Time
	// procs are the processes whose CPU time a round accounts for, by name:
	// the cluster's components and the benchmark itself (its plain client
	// and informers); the operator of the round is added as "operator".
	procs map[string]int
	// rest reaches the API server as its administrator, for its profiles.
	rest *rest.Config
}

// cpu reads the CPU time of b.procs and of the operator with process ID
// operator.
func (b *bench) cpu(operator int) cpuTimes {
	pids := maps.Clone(b.procs)
	pids["operator"] = operator
	return processCPU(pids)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(b.began).Seconds(), fmt.Sprintf(format, args...))
}

// run measures, then writes the JSON results to cfg.Out.
func run(ctx context.Context, cfg config) (res *results, err error) {
	sc, err := scenario(cfg.Kind)
	if err != nil {
		return nil, err
	}
	selected, err := selectMeasures(cfg)
	if err != nil {
		return nil, err
	}
	// The profiles, the heap profiles and the operator's log are written
	// beside the results as the run goes, before the results themselves.
	if err := os.MkdirAll(filepath.Dir(cfg.Out), 0o755); err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, sc: sc, began: time.Now()}
	pods := 2*cfg.Rounds*cfg.N + cfg.N + cfg.Probes + 10
	if slices.Contains(selected, "stacks") {
		pods = 2*cfg.Rounds*cfg.Stacks*stackComponents + 10
	}
	if slices.Contains(selected, "config") {
		pods += cfg.ConfigConsumers + cfg.ConfigChanged
	}
	if runsPeer(cfg, selected) {
		pods += 2 * cfg.Rounds * cfg.N // its WebApps and the plain client's beside them
	}
	nodes := pods/4000 + 2
	b.logf("Starting a full local cluster: %d fake nodes, kube-controller-manager --kube-api-qps=%d --kube-api-burst=%d", nodes, cfg.ControllerManagerQPS, cfg.KCMBurst)
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Full: true, Nodes: nodes, ControllerManagerQPS: cfg.ControllerManagerQPS, ControllerManagerBurst: cfg.KCMBurst,
	})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, cluster.Stop()) }()
	b.procs = cluster.Processes()
	b.procs["bench"] = os.Getpid()
	b.rest = cluster.RESTConfig()
	// The operator's log outlives the cluster's directory, beside the
	// results: a round that does not converge is explained there.
	defer func() {
		if data, rerr := os.ReadFile(filepath.Join(cluster.Dir(), "steward.log")); rerr == nil {
			err = errors.Join(err, os.WriteFile(filepath.Join(filepath.Dir(cfg.Out), "steward.log"), data, 0o644))
		}
	}()
	if err := devenv.InstallCRDs(ctx, cluster); err != nil {
		return nil, err
	}
	bin, err := devenv.BuildOperator(ctx, cluster.Dir())
	if err != nil {
		return nil, err
	}
	restCfg := cluster.RESTConfig()
	b.c, err = client.New(restCfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return nil, err
	}
	b.informers, err = cache.New(restCfg, cache.Options{Scheme: manager.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, err
	}
	if b.ready, err = track(ctx, b.informers, b.sc.Empty(), b.sc.Converged); err != nil {
		return nil, err
	}
	if b.waiting, err = track(ctx, b.informers, b.sc.Empty(), b.sc.Waiting); err != nil {
		return nil, err
	}
	if b.rawReady, err = track(ctx, b.informers, b.sc.Child(), b.sc.RawConverged); err != nil {
		return nil, err
	}
	b.edits = &editWatch{sc: b.sc, waiters: map[client.ObjectKey]*editWaiter{}}
	b.rawReady.onUpdate = b.edits.observe
	go func() { _ = b.informers.Start(ctx) }()
	if !b.informers.WaitForCacheSync(ctx) {
		return nil, errors.New("bench informers did not sync")
	}

	res = &results{Kind: b.sc.Kind(), Settings: cfg, Nodes: nodes, Measures: selected}
	if slices.Contains(selected, "requests") {
		// Without an operator, which would answer the WebApps it creates.
		if err := b.measureRequests(ctx, res); err != nil {
			return nil, err
		}
	}
	if slices.Contains(selected, "floor") {
		// Without an operator, whose work the floor leaves out.
		if err := b.measureFloor(ctx, res); err != nil {
			return nil, err
		}
	}
	if runsPeer(cfg, selected) {
		// The peer reconciles every WebApp in the cluster, as Steward
		// does: it runs alone, before Steward starts.
		if err := b.measurePeer(ctx, cluster, res); err != nil {
			return nil, err
		}
	}

	logFile, err := os.Create(filepath.Join(cluster.Dir(), "steward.log"))
	if err != nil {
		return nil, err
	}
	env, limit, err := memoryLimitEnv(cfg.OperatorMemoryLimit)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--leader-elect=true", fmt.Sprintf("--log-level=%d", cfg.OperatorLogLevel)}, strings.Fields(cfg.OperatorFlags)...)
	b.operator, err = devenv.StartOperatorWithEnv(ctx, cluster, bin, logFile, env, args...)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.operator.Stop(30*time.Second)) }()
	b.logf("Operator started with its defaults (no client-side throttle, --webapp-concurrency=10, --database-concurrency=4, leader election on)%s%s", limit, flagsNote(cfg.OperatorFlags))

	b.mem = &sampler{}
	go b.mem.run(ctx, b.operator.PID, b.operator)

	steps := map[string]func(context.Context, *results) error{
		"convergence": b.measureConvergence, "idle": b.measureIdle, "unrelated": b.measureUnrelatedMemory,
		"change": b.measureChangeLatency, "isolation": b.measureIsolation, "config": b.measureConfigRollout,
		"stacks": b.measureStacks,
		// Run above, before any operator started.
		"requests": func(context.Context, *results) error { return nil },
		"floor":    func(context.Context, *results) error { return nil },
	}
	for _, m := range selected {
		if err := steps[m](ctx, res); err != nil {
			return nil, err
		}
	}
	res.finish()
	return res, res.write(cfg.Out)
}

// namespaces creates count namespaces named prefix-0..count-1, and waits
// for their default ServiceAccounts: until one exists, the namespace's pods
// are refused and their controllers back off, which once made the first
// Database of a new namespace take 3 s instead of 0.3 s.
func (b *bench) namespaces(ctx context.Context, prefix string, count int) ([]string, error) {
	var names []string
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", name, err)
		}
		names = append(names, name)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := b.c.Get(ctx, client.ObjectKey{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
			return err == nil, client.IgnoreNotFound(err)
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for the default ServiceAccount of namespace %s: %w", name, err)
		}
	}
	return names, nil
}

// createAll creates objs with cfg.Concurrency workers.
func (b *bench) createAll(ctx context.Context, objs []client.Object) error {
	_, err := b.createTimed(ctx, objs)
	return err
}

// createTimed creates objs with cfg.Concurrency workers and returns when
// each create was sent.
func (b *bench) createTimed(ctx context.Context, objs []client.Object) ([]time.Time, error) {
	sent := make([]time.Time, len(objs))
	err := inParallel(len(objs), b.cfg.Concurrency, func(i int) error {
		obj := objs[i]
		sent[i] = time.Now()
		if err := b.create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	})
	return sent, err
}

// inParallel calls send(i) for every i below n from workers goroutines, and
// returns the first error; an error does not stop the others.
func inParallel(n, workers int, send func(i int) error) error {
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Go(func() {
			for i := range work {
				if err := send(i); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return firstErr
}

// create creates obj with one request, as the operator creates a child it
// does not have yet.
func (b *bench) create(ctx context.Context, obj client.Object) error {
	return b.c.Create(ctx, obj)
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// spread returns n objects over the namespaces, built by make.
func spread(n int, nss []string, make func(ns string, i int) []client.Object) ([]client.Object, []client.ObjectKey) {
	var objs []client.Object
	var keys []client.ObjectKey
	for i := range n {
		built := make(nss[i%len(nss)], i)
		objs = append(objs, built...)
		keys = append(keys, client.ObjectKeyFromObject(built[0]))
	}
	return objs, keys
}

const convergeTimeout = 15 * time.Minute

// bulkTimeout is how long a bulk create of n objects may take to converge:
// convergeTimeout, or 0.3 s per object when that is longer. On two cores
// the plain client alone took 990 s for 10,000 WebApps, more than
// convergeTimeout.
func bulkTimeout(n int) time.Duration {
	return max(convergeTimeout, time.Duration(n)*300*time.Millisecond)
}

// measureConvergence times bulk creates through Steward and through a plain
// client, alternating which goes first, and counts Steward's requests.
func (b *bench) measureConvergence(ctx context.Context, res *results) error {
	for r := range b.cfg.Rounds {
		order := []string{"raw", "steward"}
		if r%2 == 1 {
			order = []string{"steward", "raw"}
		}
		for _, which := range order {
			nss, err := b.namespaces(ctx, fmt.Sprintf("%s-%d", which, r), b.cfg.Namespaces)
			if err != nil {
				return err
			}
			if which == "raw" {
				objs, keys := spread(b.cfg.N, nss, b.sc.Raw)
				cpu := b.cpu(b.operator.PID)
				profiled := b.profileRound(ctx, r, "plain", nil)
				start := time.Now()
				if err := b.createAll(ctx, objs); err != nil {
					return err
				}
				last, err := b.rawReady.waitAll(ctx, keys, bulkTimeout(b.cfg.N))
				if err != nil {
					return fmt.Errorf("plain client, round %d: %w", r, err)
				}
				res.Convergence.RawSeconds = append(res.Convergence.RawSeconds, last.Sub(start).Seconds())
				res.Convergence.RawCPU = append(res.Convergence.RawCPU, b.cpu(b.operator.PID).since(cpu))
				if err := profiled(); err != nil {
					return err
				}
				b.logf("Round %d: plain client created %d %ss' children, all ready in %.1fs", r+1, b.cfg.N, b.sc.Kind(), last.Sub(start).Seconds())
				if b.cfg.FreshRounds {
					if err := b.deleteNamespaces(ctx, "the plain client's", nss); err != nil {
						return err
					}
				}
				continue
			}
			profiled := b.profileRound(ctx, r, "steward", b.operator)
			br, err := b.operatorRound(ctx, b.operator, b.operator.PID, nss)
			if err != nil {
				return fmt.Errorf("steward, round %d: %w", r, err)
			}
			before, start, last, keys := br.before, br.start, br.last, br.keys
			res.Convergence.StewardSeconds = append(res.Convergence.StewardSeconds, last.Sub(start).Seconds())
			res.Convergence.StewardCPU = append(res.Convergence.StewardCPU, br.cpu)
			if err := profiled(); err != nil {
				return err
			}
			res.Memory.Bulk = append(res.Memory.Bulk, summarize(b.mem.between(start, last)))
			b.logf("Round %d: Steward converged %d %ss in %.1fs", r+1, b.cfg.N, b.sc.Kind(), last.Sub(start).Seconds())
			if r == b.cfg.Rounds-1 {
				if err := b.saveHeap(ctx, b.operator, "steward-heap.pprof"); err != nil {
					return err
				}
			}
			if err := b.quiet(ctx); err != nil {
				return err
			}
			after, err := scrapeRequests(ctx, b.operator)
			if err != nil {
				return err
			}
			work, err := br.work(ctx, b.operator, b.sc)
			if err != nil {
				return err
			}
			res.addFirstConvergence(after.minus(before), work, b.cfg.N)
			// The change latency edits a WebApp of a round that is kept:
			// with -fresh-rounds, only the last.
			if b.cfg.FreshRounds && r < b.cfg.Rounds-1 {
				if err := b.deleteNamespaces(ctx, "Steward's", nss); err != nil {
					return err
				}
				continue
			}
			if b.firstApp == (client.ObjectKey{}) {
				b.firstApp = keys[0]
			}
		}
	}
	return nil
}

// quiet waits until the operator has sent no request for two seconds.
func (b *bench) quiet(ctx context.Context) error { return quiet(ctx, b.operator) }

// quiet waits until op has sent no write request for two seconds and has
// none left to make for the events it recorded (steward_events_pending,
// which the peer does not have): the count of a repeated event is written
// up to a minute after the repeat.
func quiet(ctx context.Context, op metricsReader) error {
	prev, err := scrapeRequests(ctx, op)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		body, err := op.Metrics(ctx)
		if err != nil {
			return err
		}
		cur, err := parseRequests(body)
		if err != nil {
			return err
		}
		pending, _, err := parseGauge(body, "steward_events_pending") // the peer has none
		if err != nil {
			return err
		}
		if w, _ := cur.minus(prev).writes(); w == 0 && pending == 0 {
			return nil
		}
		prev = cur
	}
	return errors.New("the operator never went quiet")
}

// measureIdle counts the operator's requests while nothing changes.
func (b *bench) measureIdle(ctx context.Context, res *results) error {
	if err := b.quiet(ctx); err != nil {
		return err
	}
	b.logf("Idle window of %s", b.cfg.Idle)
	before, err := scrapeRequests(ctx, b.operator)
	if err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.Idle):
	}
	after, err := scrapeRequests(ctx, b.operator)
	if err != nil {
		return err
	}
	d := after.minus(before)
	res.Idle.Seconds = b.cfg.Idle.Seconds()
	res.Idle.Writes, res.Idle.LeaseWrites = d.writes()
	res.Idle.Requests = d
	res.Memory.Steady = summarize(b.mem.between(start, time.Now()))
	return nil
}

// measureUnrelatedMemory adds unrelated ConfigMaps and Secrets and measures
// the operator's steady memory again.
func (b *bench) measureUnrelatedMemory(ctx context.Context, res *results) error {
	nss, err := b.namespaces(ctx, "unrelated", b.cfg.Namespaces)
	if err != nil {
		return err
	}
	payload := strings.Repeat("x", 1024)
	var objs []client.Object
	for i := range b.cfg.UnrelatedConfigMaps {
		objs = append(objs, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: nss[i%len(nss)], Name: fmt.Sprintf("cm-%05d", i)},
			Data:       map[string]string{"payload": payload},
		})
	}
	for i := range b.cfg.UnrelatedSecret {
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: nss[i%len(nss)], Name: fmt.Sprintf("secret-%05d", i)},
			StringData: map[string]string{"payload": payload},
		})
	}
	b.logf("Creating %d unrelated ConfigMaps and %d unrelated Secrets", b.cfg.UnrelatedConfigMaps, b.cfg.UnrelatedSecret)
	if err := b.createAll(ctx, objs); err != nil {
		return err
	}
	// Room for two reads of the heap, one at the least (sampler.run
	// reads it every heapEvery samples, a little over 5 s apart).
	window := max(min(b.cfg.Idle, time.Minute), 2*heapEvery*sampleInterval)
	time.Sleep(10 * time.Second)
	start := time.Now()
	time.Sleep(window)
	res.Memory.SteadyWithUnrelated = summarize(b.mem.between(start, time.Now()))
	return nil
}

// measureChangeLatency times spec edits until they reach the child, at rest
// and while a bulk create is under way.
func (b *bench) measureChangeLatency(ctx context.Context, res *results) error {
	mark := 0
	edit := func() (float64, error) {
		mark++
		return b.edits.timeEdit(ctx, b.c, b.sc, b.firstApp, mark)
	}
	b.logf("Timing %d edits at rest", b.cfg.Edits)
	for range b.cfg.Edits {
		ms, err := edit()
		if err != nil {
			return err
		}
		res.ChangeLatency.AtRestMs = append(res.ChangeLatency.AtRestMs, ms)
	}

	nss, err := b.namespaces(ctx, "bulk", b.cfg.Namespaces)
	if err != nil {
		return err
	}
	objs, keys := spread(b.cfg.N, nss, func(ns string, i int) []client.Object { return []client.Object{b.sc.New(ns, i, false)} })
	created := make(chan error, 1)
	b.logf("Timing %d edits during a bulk create of %d", b.cfg.Edits, b.cfg.N)
	go func() { created <- b.createAll(ctx, objs) }()
	for range b.cfg.Edits {
		ms, err := edit()
		if err != nil {
			return err
		}
		res.ChangeLatency.DuringBulkMs = append(res.ChangeLatency.DuringBulkMs, ms)
	}
	if err := <-created; err != nil {
		return err
	}
	_, err = b.ready.waitAll(ctx, keys, convergeTimeout)
	return err
}

// measureIsolation creates objects that can never become Ready, then times
// new valid objects to Ready beside them.
func (b *bench) measureIsolation(ctx context.Context, res *results) error {
	nss, err := b.namespaces(ctx, "invalid", b.cfg.Namespaces)
	if err != nil {
		return err
	}
	objs, keys := spread(b.cfg.Invalid, nss, func(ns string, i int) []client.Object { return []client.Object{b.sc.New(ns, i, true)} })
	b.logf("Creating %d %ss that can never become Ready", b.cfg.Invalid, b.sc.Kind())
	if err := b.createAll(ctx, objs); err != nil {
		return err
	}
	if _, err := b.waiting.waitAll(ctx, keys, convergeTimeout); err != nil {
		return err
	}
	probe, err := b.namespaces(ctx, "probe", 1)
	if err != nil {
		return err
	}
	b.logf("Timing %d new %ss to Ready beside them", b.cfg.Probes, b.sc.Kind())
	for i := range b.cfg.Probes {
		obj := b.sc.New(probe[0], i, false)
		start := time.Now()
		if err := b.c.Create(ctx, obj); err != nil {
			return err
		}
		at, err := b.ready.waitAll(ctx, []client.ObjectKey{client.ObjectKeyFromObject(obj)}, time.Minute)
		if err != nil {
			return err
		}
		res.Isolation.ReadyMs = append(res.Isolation.ReadyMs, float64(at.Sub(start).Milliseconds()))
	}
	res.Isolation.Invalid = b.cfg.Invalid
	return nil
}

// writeJSON writes v to path, creating its directory.
func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// bulkRound is one operator's bulk round: its request counts from before
// it, when the creates began, when the last object was ready, and the
// objects.
type bulkRound struct {
	before      requestCounts
	workBefore  controllerWork
	start, last time.Time
	keys        []client.ObjectKey
	// cpu is the CPU time each process used from start until the round
	// was seen converged.
	cpu cpuTimes
}

// work is what the kind's controller of op did from the start of the
// round until now.
func (br bulkRound) work(ctx context.Context, op metricsReader, sc Scenario) (controllerWork, error) {
	after, err := scrapeController(ctx, op, strings.ToLower(sc.Kind()))
	return after.minus(br.workBefore), err
}

// operatorRound creates N objects of the scenario across nss for the
// operator whose metrics op reads to converge.
func (b *bench) operatorRound(ctx context.Context, op metricsReader, pid int, nss []string) (bulkRound, error) {
	var br bulkRound
	var err error
	if br.before, err = scrapeRequests(ctx, op); err != nil {
		return br, err
	}
	if br.workBefore, err = scrapeController(ctx, op, strings.ToLower(b.sc.Kind())); err != nil {
		return br, err
	}
	var objs []client.Object
	objs, br.keys = spread(b.cfg.N, nss, func(ns string, i int) []client.Object { return []client.Object{b.sc.New(ns, i, false)} })
	cpu := b.cpu(pid)
	br.start = time.Now()
	if err := b.createAll(ctx, objs); err != nil {
		return br, err
	}
	br.last, err = b.ready.waitAll(ctx, br.keys, bulkTimeout(b.cfg.N))
	br.cpu = b.cpu(pid).since(cpu)
	return br, err
}
