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

// Package realnode runs Steward as `make demo` does where the machine
// allows: on a local cluster with two real nodes, installed by its Helm
// chart from its own image, with the samples' databases, caches and web
// apps running in real containers and checked with real clients.
package realnode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/steward-dev/steward/internal/build/images"
	"github.com/steward-dev/steward/internal/memlimit"
	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The cluster every test of the package uses: two real nodes, Steward
// installed by its chart. nil, with unavailable saying why, where real
// nodes cannot run. Each test creates what it needs with small CPU
// requests, since each node offers only the machine's cores, under names
// of its own, and removes it when done. The tests that disrupt what others
// use (the failovers, which lose a node, cut one off and delete the
// operator's leader; killing the leader; the samples, which take most of
// the nodes' CPU and wait for every object in the namespace) run first, one
// after another; the others then run side by side (requireClusterBeside),
// as many at once as go test's -parallel allows.
var (
	cluster     *localcluster.Cluster
	image       string
	unavailable error
	setupTook   string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	if unavailable = localcluster.RealNodeSupport(""); unavailable != nil {
		return m.Run() // each test skips, or fails when real nodes are required
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "realnode set-up:", err)
		return 1
	}
	archives, err := builtImages()
	if err != nil {
		return fail(err)
	}
	helm, err := devenv.HelmBinary()
	if err != nil {
		return fail(err)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		return fail(err)
	}
	version, err := images.ChartAppVersion(filepath.Join(root, "charts", "steward", "Chart.yaml"))
	if err != nil {
		return fail(err)
	}
	image = images.StewardName + ":" + version

	began := time.Now()
	cluster, err = localcluster.Start(ctx, localcluster.Options{RealNodes: 2, Images: archives})
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	started := time.Since(began)
	began = time.Now()
	if err := devenv.InstallOperator(ctx, cluster, helm, image, fmt.Sprintf("stuckPodTimeout=%v", stuckPodTimeout)); err != nil {
		return fail(err)
	}
	installed := time.Since(began)
	setupTook = fmt.Sprintf("cluster with two real nodes and %d images each %v, chart and webhook %v",
		len(archives), started.Round(time.Millisecond), installed.Round(time.Millisecond))
	// Before the package's -timeout ends the run with nothing but its
	// goroutines, say where the cluster stands.
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 5*time.Minute {
			// The -timeout's clock starts in m.Run.
			timer := time.AfterFunc(d-3*time.Minute, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				fmt.Fprintf(os.Stderr, "the -timeout of %v is near; the pods that are not Ready:\n%s\n", d, unreadyPods(ctx, ""))
			})
			defer timer.Stop()
		}
	}
	code = m.Run()
	if code != 0 {
		// The set-up's context has run out by now.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		fmt.Fprintf(os.Stderr, "the pods that are not Ready:\n%s\n", unreadyPods(ctx, ""))
		out, _ := devenv.Kubectl(ctx, cluster, nil, "get", "pods,steward,events", "--all-namespaces", "-o", "wide")
		fmt.Fprintf(os.Stderr, "the cluster when a test failed:\n%s\n", out)
		logs, _ := devenv.Kubectl(ctx, cluster, nil, "logs", "--namespace", devenv.OperatorNamespace,
			"deployment/"+devenv.OperatorRelease, "--tail=60")
		fmt.Fprintf(os.Stderr, "the operator's log:\n%s\n", logs)
	}
	return code
}

// sampleKinds are the kinds of the samples the tests wait for.
const sampleKinds = "webapps,databases,caches,appconfigs,appstacks"

// requireCluster skips the test when real nodes cannot run here, saying
// what is missing, or fails it when STEWARD_REQUIRE_REAL_NODE=1.
func requireCluster(t *testing.T) {
	t.Helper()
	if unavailable == nil {
		recordDuration(t)
		return
	}
	if os.Getenv("STEWARD_REQUIRE_REAL_NODE") == "1" {
		t.Fatalf("STEWARD_REQUIRE_REAL_NODE=1: %v", unavailable)
	}
	t.Skipf("skipping: %v (STEWARD_REQUIRE_REAL_NODE=1 makes this a failure)", unavailable)
}

// requireClusterBeside is requireCluster for a test that runs side by
// side with the package's other such tests, after those that run alone.
func requireClusterBeside(t *testing.T) {
	t.Helper()
	t.Parallel()
	requireCluster(t)
}

// recordDuration appends the test's name and duration, its cleanups
// included, to the file STEWARD_REALNODE_TIMES names, if any: make test
// prints it, as go test prints no time for a passing test of a package
// that passed.
func recordDuration(t *testing.T) {
	path := os.Getenv("STEWARD_REALNODE_TIMES")
	if path == "" {
		return
	}
	began := time.Now()
	t.Cleanup(func() {
		result := "ok"
		if t.Failed() {
			result = "FAILED"
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%-50s %7.1f s  %s\n", t.Name(), time.Since(began).Seconds(), result)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Logf("recording the test's duration: %v", err)
		}
	})
}

// builtImages returns the archives `make images` writes to bin/images that
// every cluster loads.
func builtImages() ([]string, error) {
	return imageArchives(images.ClusterShorts("")...)
}

// imageArchives returns the archives of the images named by their short
// names, which `make images` builds.
func imageArchives(shorts ...string) ([]string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	var archives []string
	for _, short := range shorts {
		path := filepath.Join(root, "bin", "images", short+".tar")
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("image archive %s is missing: run `make images` (%w)", path, err)
		}
		archives = append(archives, path)
	}
	return archives, nil
}

// kubectl runs kubectl against the cluster and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := devenv.Kubectl(ctx, cluster, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls check until it returns nil, failing the test with its
// last error after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	began := time.Now()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Since(began) > timeout {
			t.Fatalf("%s: not after %v: %v", what, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestOperatorFromItsImage checks that Steward's replicas run its image as
// a non-root user, that one leads and that the webhook answered through its
// Service (the set-up waited for it), and that the real-node samples, which
// `make demo` applies, work: their data plane checked with real clients in
// pods. The samples are deleted at the end, to make room for other tests.
func TestOperatorFromItsImage(t *testing.T) {
	requireCluster(t)
	t.Log(setupTook)
	began := time.Now()
	kubectl(t, "apply", "-k", "config/samples-real-node")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Minute)
		defer cancel()
		if out, err := devenv.Kubectl(ctx, cluster, nil, "delete", "-k", "config/samples-real-node", "--wait", "--timeout=240s"); err != nil {
			t.Errorf("deleting the samples: %v: %s", err, out)
		}
	})
	kubectl(t, "wait", "--for=condition=Ready", sampleKinds, "--all", "--timeout=600s")
	t.Logf("every real-node sample Ready %v after kubectl apply", time.Since(began).Round(time.Millisecond))
	// Each object's own time: from its creation to its Ready condition.
	out := kubectl(t, "get", sampleKinds, "-o",
		`jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.creationTimestamp} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\n"}{end}`)
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		created, err1 := time.Parse(time.RFC3339, f[1])
		ready, err2 := time.Parse(time.RFC3339, f[2])
		if err1 == nil && err2 == nil {
			t.Logf("%s Ready %v after its creation", f[0], ready.Sub(created))
		}
	}
	ns := "--namespace=" + devenv.OperatorNamespace
	pods := strings.Fields(kubectl(t, ns, "get", "pods", "-l", "app.kubernetes.io/component=manager",
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[0].image},{.status.containerStatuses[0].ready},{.spec.nodeName} {end}`))
	if len(pods) != 2 {
		t.Fatalf("%d operator pods, want 2: %v", len(pods), pods)
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		name, status, _ := strings.Cut(p, "=")
		fields := strings.Split(status, ",")
		if len(fields) != 3 || !strings.HasSuffix(fields[0], image) || fields[1] != "true" {
			t.Errorf("operator pod %s: image,ready,node = %s; want %s, ready", name, status, image)
		}
		if len(fields) == 3 {
			nodes[fields[2]] = true
		}
	}
	// The Go runtime keeps under its container's memory limit: each
	// replica read the limit from its cgroup and set a soft limit below.
	for _, p := range pods {
		name, _, _ := strings.Cut(p, "=")
		limit, err := resource.ParseQuantity(kubectl(t, ns, "get", "pod", name,
			"-o", `jsonpath={.spec.containers[?(@.name=="manager")].resources.limits.memory}`))
		if err != nil {
			t.Fatalf("operator pod %s's memory limit: %v", name, err)
		}
		want := fmt.Sprintf("%d bytes, 90%% of the cgroup memory limit %d in ", int64(float64(limit.Value())*memlimit.Share), limit.Value())
		if logs := kubectl(t, ns, "logs", name, "-c", "manager"); !strings.Contains(logs, want) {
			t.Errorf("operator pod %s did not log its soft memory limit %q; its first lines:\n%s", name, want, firstLines(logs, 5))
		}
	}
	holder := kubectl(t, ns, "get", "lease", "steward.steward.dev", "-o", "jsonpath={.spec.holderIdentity}")
	if !strings.Contains(strings.Join(pods, " "), strings.Split(holder, "_")[0]+"=") {
		t.Errorf("the lease is held by %q, not by one of the operator's pods %v", holder, pods)
	}
	// The processes themselves: the manager runs as the image's user.
	for _, n := range cluster.Nodes() {
		if !nodes[n.Name] {
			continue
		}
		uids, err := processUIDs(n, "/steward")
		if err != nil {
			t.Fatal(err)
		}
		for _, uid := range uids {
			if uid != 65532 {
				t.Errorf("an operator process on %s runs as uid %d, not 65532", n.Name, uid)
			}
		}
		if len(uids) == 0 {
			t.Errorf("no operator process found on %s", n.Name)
		}
	}

	t.Run("the memcached Cache's status lists its running pods", cacheStatusListsRealPods)
	for _, check := range devenv.DataPlaneChecks {
		out, err := check.Run(t.Context(), cluster)
		if err != nil {
			t.Errorf("%s: %v", check.What, err)
			continue
		}
		t.Logf("%s:\n%s", check.What, out)
		if !strings.Contains(out, check.Want) {
			t.Errorf("%s: %q lacks %q", check.What, out, check.Want)
		}
	}
}

// cacheStatusListsRealPods checks that the memcached sample's status
// names its running pods.
func cacheStatusListsRealPods(t *testing.T) {
	nodes := strings.Fields(kubectl(t, "get", "cache", "sessions", "-o", `jsonpath={range .status.nodes[*]}{@} {end}`))
	pods := strings.Fields(kubectl(t, "get", "pods", "-l", "steward.dev/cache=sessions", "--field-selector=status.phase=Running",
		"-o", `jsonpath={range .items[*]}{.metadata.name} {end}`))
	slices.Sort(pods)
	if len(nodes) != 3 || !slices.Equal(nodes, pods) {
		t.Fatalf("status.nodes = %v, want the 3 running pods %v", nodes, pods)
	}
}

// TestDeletionKeepsData deletes a PostgreSQL Database with the default
// policy, Retain, creates it again with the same name, and reads back the
// rows written before.
func TestDeletionKeepsData(t *testing.T) {
	requireClusterBeside(t)
	const manifest = `apiVersion: steward.dev/v1alpha1
kind: Database
metadata:
  name: keeper
  namespace: default
spec:
  engine: postgres
  version: "15"
  # The samples take most of the two nodes' CPU.
  resources:
    requests: {cpu: 100m, memory: 256Mi}
    limits: {memory: 256Mi}
  storage:
    size: 1Gi
`
	apply := func() {
		t.Helper()
		out, err := devenv.Kubectl(t.Context(), cluster, []byte(manifest), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		kubectl(t, "wait", "--for=condition=Ready", "database/keeper", "--timeout=300s")
	}
	// The documented way in: the instance manager's socket and the
	// owner's credentials, which never leave the pod.
	psql := func(sql string) (string, error) {
		return devenv.Kubectl(t.Context(), cluster, nil, "exec", "keeper-0", "-c", "postgres", "--", "sh", "-c",
			`PGPASSWORD="$STEWARD_OWNER_PASSWORD" psql -h /steward/run -U "$STEWARD_OWNER_USERNAME" -d "$STEWARD_DATABASE" -Atc "$0"`, sql)
	}
	// The policy keeps the claim and the credentials Secret; the test
	// removes them when it ends.
	deleteAtEnd(t, "database/keeper", "pvc/data-keeper-0", "secret/keeper-credentials")
	apply()
	if out, err := psql("create table kept (note text); insert into kept values ('written before the deletion')"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	kubectl(t, "delete", "database", "keeper", "--timeout=300s")
	claims := kubectl(t, "get", "pvc", "data-keeper-0", "-o", "jsonpath={.status.phase}")
	if claims != "Bound" {
		t.Errorf("after the deletion the volume claim is %q, want it kept and Bound", claims)
	}
	apply()
	var out string
	eventually(t, 2*time.Minute, "the row written before the deletion", func() error {
		var err error
		out, err = psql("select note from kept")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "written before the deletion") {
			return fmt.Errorf("the table holds %q", out)
		}
		return nil
	})
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=keeper,reason=Adopted", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(events, "keeper-credentials") {
		t.Errorf("no Adopted event names keeper-credentials: %q", events)
	}
}

// processUIDs returns the user IDs of the processes in a node's pods
// whose command line starts with the program prefix.
func processUIDs(n *localcluster.Node, prefix string) ([]int, error) {
	pids, err := n.PodProcesses()
	if err != nil {
		return nil, err
	}
	var uids []int
	for _, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.HasPrefix(string(cmdline), prefix+"\x00") {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				uid, err := strconv.Atoi(strings.Fields(rest)[0])
				if err != nil {
					return nil, fmt.Errorf("pid %d: %w", pid, err)
				}
				uids = append(uids, uid)
			}
		}
	}
	return uids, nil
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfterN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "")
}
