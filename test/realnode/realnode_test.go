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
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/devenv"
	"github.com/steward-dev/steward/internal/images"
	"github.com/steward-dev/steward/internal/localcluster"
)

// requireRealNodes skips the test when real nodes cannot run here, saying
// what is missing, or fails it when STEWARD_REQUIRE_REAL_NODE=1.
func requireRealNodes(t *testing.T) {
	t.Helper()
	err := localcluster.RealNodeSupport("")
	if err == nil {
		return
	}
	if os.Getenv("STEWARD_REQUIRE_REAL_NODE") == "1" {
		t.Fatalf("STEWARD_REQUIRE_REAL_NODE=1: %v", err)
	}
	t.Skipf("skipping: %v (STEWARD_REQUIRE_REAL_NODE=1 makes this a failure)", err)
}

// builtImages returns every archive `make images` writes to bin/images.
func builtImages(t *testing.T) []string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var archives []string
	for _, short := range images.Shorts("") {
		path := filepath.Join(root, "bin", "images", short+".tar")
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("image archive %s is missing: run `make images` (%v)", path, err)
		}
		archives = append(archives, path)
	}
	return archives
}

// TestOperatorFromItsImage installs Steward with its chart on two real
// nodes, checks that its replicas run its image as a non-root user, that
// one leads and that the webhook answers through its Service, then applies
// the real-node samples and checks their data plane with real clients.
func TestOperatorFromItsImage(t *testing.T) {
	requireRealNodes(t)
	archives := builtImages(t)
	helm, err := devenv.HelmBinary()
	if err != nil {
		t.Fatal(err)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := images.ChartAppVersion(filepath.Join(root, "charts", "steward", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	image := images.StewardName + ":" + version
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()

	began := time.Now()
	cluster, err := localcluster.Start(ctx, localcluster.Options{RealNodes: 2, Images: archives})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("cluster with two real nodes and %d images each in %v", len(archives), time.Since(began).Round(time.Millisecond))
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := devenv.Kubectl(ctx, cluster, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	defer func() {
		if t.Failed() {
			out, _ := devenv.Kubectl(context.WithoutCancel(ctx), cluster, nil, "get", "pods,steward,events", "--all-namespaces", "-o", "wide")
			t.Logf("the cluster when the test failed:\n%s", out)
			logs, _ := devenv.Kubectl(context.WithoutCancel(ctx), cluster, nil, "logs", "--namespace", devenv.OperatorNamespace,
				"deployment/"+devenv.OperatorRelease, "--tail=60")
			t.Logf("the operator's log:\n%s", logs)
		}
	}()

	began = time.Now()
	if err := devenv.InstallOperator(ctx, cluster, helm, image); err != nil {
		t.Fatal(err)
	}
	t.Logf("the chart rolled out and the webhook answered in %v", time.Since(began).Round(time.Millisecond))

	ns := "--namespace=" + devenv.OperatorNamespace
	pods := strings.Fields(kubectl(ns, "get", "pods", "-l", "app.kubernetes.io/component=manager",
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
	holder := kubectl(ns, "get", "lease", "steward.steward.dev", "-o", "jsonpath={.spec.holderIdentity}")
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

	began = time.Now()
	kubectl("apply", "-k", "config/samples-real-node")
	const kinds = "webapps,databases,caches,appconfigs,appstacks"
	kubectl("wait", "--for=condition=Ready", kinds, "--all", "--timeout=600s")
	t.Logf("every real-node sample Ready in %v", time.Since(began).Round(time.Millisecond))

	for _, check := range devenv.DataPlaneChecks {
		out, err := check.Run(ctx, cluster)
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
