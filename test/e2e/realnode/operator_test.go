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

package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// TestLeaderKilledWhileConverging applies a Database and 10 WebApps,
// kills the leading replica's process with SIGKILL while it creates them,
// and applies 40 more WebApps. Everything must converge under the next
// leader (the restarted container or the other replica), with exactly the children each object asks for, none left over,
// and the Database's pods never restarted.
func TestLeaderKilledWhileConverging(t *testing.T) {
	requireCluster(t)
	const ns, apps = "converge", 50
	var first, second strings.Builder
	fmt.Fprintf(&first, `apiVersion: v1
kind: Namespace
metadata: {name: %s}
---
apiVersion: steward.dev/v1alpha1
kind: Database
metadata: {name: store, namespace: %s}
spec:
  engine: postgres
  version: "15"
  replicas: 2
  deletionPolicy: Delete
  resources:
    requests: {cpu: 50m, memory: 256Mi}
    limits: {memory: 512Mi}
`, ns, ns)
	for i := range apps {
		b := &second
		if i < 10 {
			b = &first
		}
		fmt.Fprintf(b, `---
apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata: {name: app-%02d, namespace: %s}
spec:
  image: nginxinc/nginx-unprivileged:1.22
  resources:
    requests: {cpu: 1m, memory: 8Mi}
    limits: {memory: 32Mi}
`, i, ns)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Minute)
		defer cancel()
		if out, err := devenv.Kubectl(ctx, cluster, nil, "delete", "namespace", ns, "--timeout=240s"); err != nil {
			t.Errorf("deleting namespace %s: %v: %s", ns, err, out)
		}
	})
	leaseBefore := jsonpath(t, "--namespace="+devenv.OperatorNamespace+" lease/steward.steward.dev", "{.spec.leaseTransitions}")
	leader := leaderPod(t)
	began := time.Now()
	if out, err := devenv.Kubectl(t.Context(), cluster, []byte(first.String()), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	killed := killOperator(t, leader)
	t.Logf("SIGKILLed the leader %s (pid %d) %v after applying the Database and 10 WebApps",
		leader.pod, killed, time.Since(began).Round(time.Millisecond))
	t.Logf("then: %d StatefulSets and %d Deployments",
		len(strings.Fields(kubectl(t, "get", "statefulsets", "-n", ns, "-o", "name"))),
		len(strings.Fields(kubectl(t, "get", "deployments", "-n", ns, "-o", "name"))))
	if out, err := devenv.Kubectl(t.Context(), cluster, []byte(second.String()), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	kubectl(t, "wait", "--for=condition=Ready", "-n", ns, "webapps,databases", "--all", "--timeout=600s")
	t.Logf("the Database and %d WebApps Ready %v after kubectl apply; the lease is held by %s", apps,
		time.Since(began).Round(time.Millisecond), leaderPod(t).pod)
	// The killed container, restarted in its pod under the same identity
	// (its pod's name), may take the Lease back before the other replica's
	// wait for it to expire ends; either is a correct successor.
	holder := jsonpath(t, "--namespace="+devenv.OperatorNamespace+" lease/steward.steward.dev", "{.spec.holderIdentity}")
	t.Logf("the Lease is held by %s (the killed pod: %v); its transitions went from %s to %s", holder, holder == leader.pod,
		leaseBefore, jsonpath(t, "--namespace="+devenv.OperatorNamespace+" lease/steward.steward.dev", "{.spec.leaseTransitions}"))
	restarts := jsonpath(t, "--namespace="+devenv.OperatorNamespace+" pod/"+leader.pod, "{.status.containerStatuses[0].restartCount}")
	if restarts == "0" {
		t.Errorf("the killed operator pod %s has not restarted: was it killed?", leader.pod)
	}

	// Exactly the children asked for, each controlled by its owner.
	want := map[string][]string{}
	for i := range apps {
		name := fmt.Sprintf("app-%02d", i)
		want["deployment"] = append(want["deployment"], name+" WebApp/"+name)
		want["service"] = append(want["service"], name+" WebApp/"+name)
	}
	want["statefulset"] = []string{"store Database/store"}
	want["service"] = append(want["service"], "store Database/store", "store-headless Database/store", "store-ro Database/store")
	for kind, names := range want {
		got := strings.Split(strings.TrimSpace(kubectl(t, "get", kind, "-n", ns, "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences[?(@.controller==true)].kind}/{.metadata.ownerReferences[?(@.controller==true)].name}{"\n"}{end}`)), "\n")
		slices.Sort(got)
		slices.Sort(names)
		if !slices.Equal(got, names) {
			t.Errorf("%ss in %s (name, controller):\n%s\nwant:\n%s", kind, ns, strings.Join(got, "\n"), strings.Join(names, "\n"))
		}
	}
	// One ReplicaSet per Deployment: no rollout was started twice.
	if n := len(strings.Fields(kubectl(t, "get", "replicasets", "-n", ns, "-o", "name"))); n != apps {
		t.Errorf("%d ReplicaSets for %d WebApps", n, apps)
	}
	// The Database's pods were created once and never restarted, and
	// its StatefulSet was written once.
	pods := kubectl(t, "get", "pods", "-n", ns, "-l", "steward.dev/database=store", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	if strings.TrimSpace(pods) != "store-0 0\nstore-1 0" {
		t.Errorf("the Database's pods and restart counts:\n%s\nwant store-0 and store-1, never restarted", pods)
	}
	if gen := jsonpath(t, "-n "+ns+" statefulset/store", "{.metadata.generation}"); gen != "1" {
		t.Errorf("the StatefulSet's generation is %s: its spec changed after creation, which restarts pods", gen)
	}
}

// operatorPod is one of Steward's replicas.
type operatorPod struct {
	pod, node string
}

// leaderPod returns the replica that holds the leader election lease.
func leaderPod(t *testing.T) operatorPod {
	t.Helper()
	holder := jsonpath(t, "--namespace="+devenv.OperatorNamespace+" lease/steward.steward.dev", "{.spec.holderIdentity}")
	pod, _, _ := strings.Cut(holder, "_")
	node := jsonpath(t, "--namespace="+devenv.OperatorNamespace+" pod/"+pod, "{.spec.nodeName}")
	return operatorPod{pod: pod, node: node}
}

// killOperator sends SIGKILL to the manager process of an operator pod,
// found among its node's pod processes, and returns its pid.
func killOperator(t *testing.T, p operatorPod) int {
	t.Helper()
	var node *localcluster.Node
	for _, n := range cluster.Nodes() {
		if n.Name == p.node {
			node = n
		}
	}
	if node == nil {
		t.Fatalf("the operator pod %s runs on %q, not a real node", p.pod, p.node)
	}
	uid := jsonpath(t, "--namespace="+devenv.OperatorNamespace+" pod/"+p.pod, "{.metadata.uid}")
	pids, err := node.PodProcesses()
	if err != nil {
		t.Fatal(err)
	}
	var managers []int
	for _, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		// The pod's cgroup is named after its UID (with underscores
		// under the systemd driver).
		inPod := strings.Contains(string(cgroup), uid) || strings.Contains(string(cgroup), strings.ReplaceAll(uid, "-", "_"))
		if args := strings.Split(string(cmdline), "\x00"); inPod && args[0] == "/steward" {
			managers = append(managers, pid)
		}
	}
	if len(managers) != 1 {
		t.Fatalf("%d processes of /steward in pod %s on %s, want 1: %v", len(managers), p.pod, node.Name, managers)
	}
	if err := syscall.Kill(managers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return managers[0]
}

// TestEveryReplicaServesMetrics scrapes /metrics of each operator pod at
// its pod address, from a node's network namespace, as a Prometheus bound
// to the chart's metrics reader role would. Every replica answers 200: the
// leader with the objects' figures, the replica waiting for the leadership
// with none of them (a sum over both would count each object twice)
// rather than an error for each kind it does not watch.
func TestEveryReplicaServesMetrics(t *testing.T) {
	requireClusterBeside(t)
	token, err := devenv.MetricsScraperToken(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
		defer cancel()
		if out, err := devenv.Kubectl(ctx, cluster, nil, "delete", "clusterrolebinding/"+devenv.MetricsScraper,
			"serviceaccount/"+devenv.MetricsScraper, "--namespace=default", "--ignore-not-found"); err != nil {
			t.Errorf("deleting the scraper: %v: %s", err, out)
		}
	})
	scrape := func(ip string) (string, error) {
		url := "https://" + net.JoinHostPort(ip, "8443") + "/metrics"
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		code, body, err := devenv.GetMetricsVia(ctx, cluster.Nodes()[0].DialContext, url, token)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("answered %d: %.2000s", code, body)
		}
		return body, err
	}
	// A replica restarted by an earlier test may still be starting, and a
	// new leader's controllers start a moment after it takes the Lease.
	eventually(t, 3*time.Minute, "every replica's /metrics", func() error {
		pods := strings.Fields(kubectl(t, "get", "pods", "--namespace="+devenv.OperatorNamespace,
			"-l", "app.kubernetes.io/component=manager,app.kubernetes.io/instance="+devenv.OperatorRelease,
			"-o", `jsonpath={range .items[?(@.status.containerStatuses[0].ready==true)]}{.metadata.name}={.status.podIP} {end}`))
		if len(pods) < 2 {
			return fmt.Errorf("ready operator pods: %v, want two", pods)
		}
		leader := leaderPod(t).pod
		var problems []string
		for _, p := range pods {
			name, ip, _ := strings.Cut(p, "=")
			body, err := scrape(ip)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			case name == leader && !strings.Contains(body, `steward_webapps{phase="Running"}`):
				problems = append(problems, fmt.Sprintf("%s, the leader, reports no steward_webapps", name))
			case name != leader && strings.Contains(body, "steward_webapps{"):
				problems = append(problems, fmt.Sprintf("%s, not the leader, reports steward_webapps", name))
			}
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		t.Logf("%d replicas answered /metrics (the leader %s with the objects' figures)", len(pods), leader)
		return nil
	})
}
