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

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// leaseKey is the operator's leader election Lease (TestMain's flags).
var leaseKey = client.ObjectKey{Namespace: "default", Name: "steward.steward.dev"}

func clusterClient(t *testing.T) client.Client {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	c, err := client.New(cluster.RESTConfig(), client.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// webAppsManifest is n identical WebApps named <prefix>-000... in ns.
func webAppsManifest(ns, prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata:
  name: %s-%03d
  namespace: %s
spec:
  image: nginxinc/nginx-unprivileged:1.27
`, prefix, i, ns)
	}
	return b.String()
}

// databasesManifest is n identical PostgreSQL Databases in ns.
func databasesManifest(ns, prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: steward.dev/v1alpha1
kind: Database
metadata:
  name: %s-%02d
  namespace: %s
spec:
  engine: postgres
  version: "16"
  storage:
    size: 1Gi
`, prefix, i, ns)
	}
	return b.String()
}

// ready counts the objects of list whose Ready condition is True for their
// current generation.
func ready(objs []client.Object) int {
	n := 0
	for _, o := range objs {
		c, ok := o.(interface{ GetConditions() []metav1.Condition })
		if !ok {
			continue
		}
		cond := meta.FindStatusCondition(c.GetConditions(), v1alpha1.ConditionReady)
		if cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == o.GetGeneration() {
			n++
		}
	}
	return n
}

func webApps(t *testing.T, c client.Client, ns string) []client.Object {
	t.Helper()
	list := &v1alpha1.WebAppList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	return objs
}

func databases(t *testing.T, c client.Client, ns string) []client.Object {
	t.Helper()
	list := &v1alpha1.DatabaseList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	return objs
}

// lease reads the operator's Lease.
func lease(c client.Client) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l, c.Get(ctx, leaseKey, l)
}

// takeover waits until the Lease is renewed after since (by whichever
// process leads) and returns how long after since that was.
func takeover(t *testing.T, c client.Client, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l, err := lease(c); err == nil && l.Spec.RenewTime != nil && l.Spec.HolderIdentity != nil &&
			*l.Spec.HolderIdentity != "" && l.Spec.RenewTime.After(since) {
			return time.Since(since)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the Lease was not renewed within %s of %s", timeout, since.Format(time.TimeOnly))
	return 0
}

// childrenCheck verifies that every object the operator manages in ns has a
// live controller owner, and that each owner has as many children of each
// kind as every other owner of its kind (the owners have identical specs):
// no orphan and no duplicate. It returns the children per owner kind.
func childrenCheck(t *testing.T, c client.Client, ns string) map[string]map[string]int {
	t.Helper()
	ctx := context.Background()
	owners := map[types.UID]string{}
	for _, o := range webApps(t, c, ns) {
		owners[o.GetUID()] = "WebApp/" + o.GetName()
	}
	for _, o := range databases(t, c, ns) {
		owners[o.GetUID()] = "Database/" + o.GetName()
	}
	lists := map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "StatefulSet": &appsv1.StatefulSetList{},
		"Service": &corev1.ServiceList{}, "ConfigMap": &corev1.ConfigMapList{}, "Secret": &corev1.SecretList{},
	}
	// perOwner[ownerKind][childKind] -> counts per owner
	perOwner := map[string]map[string]map[string]int{}
	for kind, list := range lists {
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{labels.ManagedByKey: labels.ManagedBy}); err != nil {
			t.Fatal(err)
		}
		err := meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			ref := metav1.GetControllerOf(obj)
			if ref == nil || owners[ref.UID] == "" {
				t.Errorf("orphan: %s %s has no live controller owner (%v)", kind, obj.GetName(), obj.GetOwnerReferences())
				return nil
			}
			ownerKind, ownerName, _ := strings.Cut(owners[ref.UID], "/")
			if perOwner[ownerKind] == nil {
				perOwner[ownerKind] = map[string]map[string]int{}
			}
			if perOwner[ownerKind][kind] == nil {
				perOwner[ownerKind][kind] = map[string]int{}
			}
			perOwner[ownerKind][kind][ownerName]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	summary := map[string]map[string]int{}
	for ownerKind, kinds := range perOwner {
		summary[ownerKind] = map[string]int{}
		total := 0
		for _, name := range owners {
			if strings.HasPrefix(name, ownerKind+"/") {
				total++
			}
		}
		for kind, counts := range kinds {
			values := map[int][]string{}
			for name, n := range counts {
				values[n] = append(values[n], name)
			}
			if len(values) != 1 || len(counts) != total {
				t.Errorf("%ss do not all have the same number of %ss (no duplicate, none missing): %d of %d have some; counts %v",
					ownerKind, kind, len(counts), total, countsSummary(values))
			}
			for n := range values {
				summary[ownerKind][kind] = n
			}
		}
	}
	return summary
}

func countsSummary(values map[int][]string) string {
	var parts []string
	for n, names := range values {
		slices.Sort(names)
		if len(names) > 3 {
			names = append(names[:3], "...")
		}
		parts = append(parts, fmt.Sprintf("%d: %s", n, strings.Join(names, " ")))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// errorLines returns the log lines of level error in the operator's JSON
// log file path from byte offset from on.
func errorLines(t *testing.T, path string, from int64) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(from, 0); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var entry struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Level == "error" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

func logSize(t *testing.T) int64 {
	t.Helper()
	fi, err := operatorLog.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestOperatorCleanShutdown stops the operator with SIGTERM, as Kubernetes
// does: it exits with status 0, releases its Lease and logs no error.
func TestOperatorCleanShutdown(t *testing.T) {
	c := clusterClient(t)
	takeover(t, c, time.Now(), 2*time.Minute) // it leads
	from := logSize(t)
	if err := operator.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if errs := errorLines(t, operatorLog.Name(), from); len(errs) > 0 {
		t.Errorf("a clean shutdown logged %d errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if l, err := lease(c); err != nil || (l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "") {
		t.Errorf("the Lease was not released: %v %v", l.Spec.HolderIdentity, err)
	}
	restartOperator(t)
}

// restartOperator starts the operator again and waits until it is ready.
func restartOperator(t *testing.T) {
	t.Helper()
	if err := operator.Restart(operatorLog); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := operator.WaitReady(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorRidesOutAPIServerStall stops the API server (SIGSTOP: its
// connections hang, as in an overload) for 30 s twice: once under the
// running operator, which loses the leadership (renew deadline 3 s here)
// but must not exit, and once with a crash during the stall, whose restart
// must wait for the API server instead of exiting. After each, new and
// changed WebApps converge within 60 s.
func TestOperatorRidesOutAPIServerStall(t *testing.T) {
	const ns = "e2e-stall"
	kubectl(t, "", "create", "namespace", ns)
	c := clusterClient(t)
	kubectl(t, webAppsManifest(ns, "before", 5), "apply", "-f", "-")
	eventually(t, 2*time.Minute, func() error {
		if n := ready(webApps(t, c, ns)); n != 5 {
			return fmt.Errorf("%d of 5 WebApps Ready", n)
		}
		return nil
	})

	stall := func(crash bool) {
		resume, err := cluster.PauseAPIServer()
		if err != nil {
			t.Fatal(err)
		}
		defer resume()
		if crash {
			time.Sleep(5 * time.Second)
			operator.Kill()
			if err := operator.Restart(operatorLog); err != nil {
				t.Fatal(err)
			}
			time.Sleep(25 * time.Second)
		} else {
			time.Sleep(30 * time.Second)
		}
		pid := operator.PID
		resume()
		if operator.Exited() {
			t.Fatalf("the operator exited during the stall; log tail:\n%s", tailOfLog(t))
		}

		// New and changed objects after the API server returns.
		returned := time.Now()
		round := "after-" + map[bool]string{false: "stall", true: "crash"}[crash]
		kubectl(t, webAppsManifest(ns, round, 5), "apply", "-f", "-")
		kubectl(t, "", "--namespace="+ns, "scale", "webapp", "before-000", "--replicas="+map[bool]string{false: "2", true: "3"}[crash])
		var converged time.Duration
		eventually(t, 3*time.Minute, func() error {
			apps := webApps(t, c, ns)
			if n := ready(apps); n != len(apps) {
				return fmt.Errorf("%d of %d WebApps Ready", n, len(apps))
			}
			d := &appsv1.Deployment{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "before-000"}, d); err != nil {
				return err
			}
			want := map[bool]int32{false: 2, true: 3}[crash]
			if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
				return fmt.Errorf("deployment before-000 replicas %v, want %d", d.Spec.Replicas, want)
			}
			converged = time.Since(returned)
			return nil
		})
		t.Logf("stall of 30 s (crash during it: %v): operator pid %d kept running; new and changed WebApps converged %.1f s after the API server returned",
			crash, pid, converged.Seconds())
		if converged > 60*time.Second {
			t.Errorf("converged %.1f s after the API server returned, more than 60 s", converged.Seconds())
		}
		if operator.Exited() || operator.PID != pid {
			t.Errorf("the operator exited after the stall")
		}
	}
	from := logSize(t)
	stall(false)
	if log := readLogFrom(t, from); !strings.Contains(log, "Lost the leadership") {
		t.Errorf("the stall did not cost the leadership, so its handling was not exercised")
	}
	stall(true)
	childrenCheck(t, c, ns)
}

func readLogFrom(t *testing.T, from int64) string {
	t.Helper()
	data, err := os.ReadFile(operatorLog.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data[min(from, int64(len(data))):])
}

func tailOfLog(t *testing.T) string {
	return tail(readLogFrom(t, 0), 40)
}

// TestOperatorChaos SIGKILLs the operator ten times while it converges
// 300 WebApps and 20 Databases, restarting it at once as the kubelet
// restarts a container in its pod (same pod name, so the same leader
// election identity), then once more as a replacement pod under a new
// name, which must wait for the dead leader's Lease to expire. Everything
// converges, with no duplicate and no orphaned child.
func TestOperatorChaos(t *testing.T) {
	const ns = "e2e-chaos"
	const nApps, nDBs = 300, 20
	kubectl(t, "", "create", "namespace", ns)
	c := clusterClient(t)
	dir := t.TempDir()
	chaosLog, err := os.Create(filepath.Join(dir, "chaos.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			if data, err := os.ReadFile(chaosLog.Name()); err == nil {
				t.Logf("operator log during the chaos (tail):\n%s", tail(string(data), 60))
			}
		}
	}()

	// The kills begin while the objects are being created. The only
	// process serving the Database webhook is the one killed, so an apply
	// may be refused while it restarts: it is repeated, as a user or a
	// GitOps tool would, until it goes through.
	start := time.Now()
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		manifest := webAppsManifest(ns, "app", nApps) + databasesManifest(ns, "db", nDBs)
		var out string
		var err error
		for range 30 {
			if out, err = kubectlMayFailStdin(manifest, "apply", "--server-side", "-f", "-"); err == nil {
				return
			}
			time.Sleep(2 * time.Second)
		}
		t.Errorf("applying: %v: %s", err, out)
	}()
	rng := rand.New(rand.NewPCG(18, 300))
	var takeovers []time.Duration
	for i := range 10 {
		time.Sleep(time.Duration(3000+rng.IntN(5000)) * time.Millisecond)
		operator.Kill()
		killed := time.Now()
		if err := operator.Restart(chaosLog); err != nil {
			t.Fatal(err)
		}
		took := takeover(t, c, killed, 2*time.Minute)
		takeovers = append(takeovers, took)
		t.Logf("kill %d at %.0f s: %d/%d WebApps and %d/%d Databases Ready; the restarted process led again %.1f s after the kill",
			i+1, killed.Sub(start).Seconds(), ready(webApps(t, c, ns)), nApps, ready(databases(t, c, ns)), nDBs, took.Seconds())
	}
	<-applied
	// A replacement pod: a new identity waits out the Lease (4 s here).
	podName := operator.PodName()
	operator.Kill()
	killed := time.Now()
	if err := operator.Replace(chaosLog, "steward-replacement"); err != nil {
		t.Fatal(err)
	}
	replaced := takeover(t, c, killed, 2*time.Minute)
	t.Logf("replacement pod under a new name led %.1f s after the kill (lease duration 4 s)", replaced.Seconds())

	eventually(t, 5*time.Minute, func() error {
		a, d := ready(webApps(t, c, ns)), ready(databases(t, c, ns))
		if a != nApps || d != nDBs {
			return fmt.Errorf("%d/%d WebApps and %d/%d Databases Ready", a, nApps, d, nDBs)
		}
		return nil
	})
	t.Logf("all %d WebApps and %d Databases Ready %.0f s after they were applied, through 11 SIGKILLs", nApps, nDBs, time.Since(start).Seconds())
	summary := childrenCheck(t, c, ns)
	t.Logf("children per object: %v", summary)
	slices.Sort(takeovers)
	t.Logf("restart in place to leading again, after a SIGKILL: median %.1f s, max %.1f s (10 kills)",
		takeovers[len(takeovers)/2].Seconds(), takeovers[len(takeovers)-1].Seconds())
	if replaced < 3*time.Second {
		t.Errorf("a new identity took the Lease %.1f s after the kill, before the 4 s lease could expire", replaced.Seconds())
	}
	// Back to the suite's own identity, log and a clean Lease.
	if err := operator.Stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	if err := operator.Replace(operatorLog, podName); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := operator.WaitReady(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "delete", "namespace", ns, "--wait=false")
}

// kubectlMayFailStdin runs kubectl with stdin, from any goroutine.
func kubectlMayFailStdin(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return devenv.Kubectl(ctx, cluster, []byte(stdin), args...)
}
