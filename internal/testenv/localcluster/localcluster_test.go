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

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// requireBinaries skips the test when the control-plane binaries are
// missing, except in CI, where that is a failure.
func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := BinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("control-plane binaries are required in CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// startCluster starts a cluster, stopping it at the end of the test and
// printing its logs first if the test failed.
func startCluster(t *testing.T, ctx context.Context, opts Options) *Cluster {
	t.Helper()
	began := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started a cluster (full=%v) at %s in %v", opts.Full, c.Server(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, c)
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// logTails logs the end of each component's log, if the cluster still runs.
func logTails(t *testing.T, c *Cluster) {
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	for _, p := range procs {
		if tail := tailFile(p.logPath); tail != "" {
			t.Logf("--- %s ---\n%s", p.logPath, tail)
		}
	}
}

// eventually polls check every 50ms until it returns nil, failing the test
// after timeout with check's last error.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) time.Duration {
	t.Helper()
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return time.Since(began)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after %v: %v", what, timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// assertStopped checks that a stopped cluster left no directory and no
// process behind.
func assertStopped(t *testing.T, dir string, pids []int) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still exists after Stop (stat: %v)", dir, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
}

func processIDs(c *Cluster) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, 0, len(c.procs))
	for _, p := range c.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

func TestFullCluster(t *testing.T) {
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c := startCluster(t, ctx, Options{Full: true})
	clientset, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	body, err := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz: %q, %v", body, err)
	}

	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != defaultNodes {
		t.Fatalf("%d nodes, want %d", len(nodes.Items), defaultNodes)
	}
	for _, node := range nodes.Items {
		if !nodeReady(&node) {
			t.Errorf("node %s is not Ready", node.Name)
		}
	}

	t.Run("Deployment", func(t *testing.T) {
		deployments := clientset.AppsV1().Deployments(metav1.NamespaceDefault)
		labels := map[string]string{"app": "web"}
		_, err := deployments.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		took := eventually(t, ctx, 30*time.Second, "Deployment web has 2 ready replicas", func(ctx context.Context) error {
			d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != 2 {
				return fmt.Errorf("%d ready replicas", d.Status.ReadyReplicas)
			}
			return nil
		})
		t.Logf("2/2 ready in %v", took.Round(time.Millisecond))
	})

	t.Run("StatefulSetWithVolume", func(t *testing.T) {
		statefulSets := clientset.AppsV1().StatefulSets(metav1.NamespaceDefault)
		labels := map[string]string{"app": "db"}
		_, err := statefulSets.Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](1),
				ServiceName: "db",
				Selector:    &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:         "db",
						Image:        "example.invalid/db:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}}},
				},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
					ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{
						StorageClassName: ptr.To(StorageClassName),
						AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
						},
					},
				}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		took := eventually(t, ctx, 30*time.Second, "StatefulSet db has 1 ready replica and a bound claim", func(ctx context.Context) error {
			s, err := statefulSets.Get(ctx, "db", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.ReadyReplicas != 1 {
				return fmt.Errorf("%d ready replicas", s.Status.ReadyReplicas)
			}
			pvc, err := clientset.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Get(ctx, "data-db-0", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				return fmt.Errorf("claim is %s", pvc.Status.Phase)
			}
			return nil
		})
		t.Logf("1/1 ready with a bound claim in %v", took.Round(time.Millisecond))
	})

	t.Run("GarbageCollection", func(t *testing.T) {
		configMaps := clientset.CoreV1().ConfigMaps(metav1.NamespaceDefault)
		owner, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "owned",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := configMaps.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := eventually(t, ctx, 30*time.Second, "the owned ConfigMap is garbage-collected", func(ctx context.Context) error {
			_, err := configMaps.Get(ctx, "owned", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil {
				return errors.New("still exists")
			}
			return err
		})
		t.Logf("collected in %v", took.Round(time.Millisecond))
	})

	dir, pids := c.Dir(), processIDs(c)
	if len(pids) != 5 {
		t.Errorf("%d processes, want 5", len(pids))
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Stop() })
	}
	wg.Wait()
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	assertStopped(t, dir, pids)
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestTwoMinimalClusters(t *testing.T) {
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	clusters := make([]*Cluster, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range clusters {
		wg.Go(func() { clusters[i], errs[i] = Start(ctx, Options{}) })
	}
	wg.Wait()
	t.Logf("started two clusters in %v", time.Since(began).Round(time.Millisecond))
	for _, c := range clusters {
		t.Cleanup(func() { _ = c.Stop() })
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	if clusters[0].Server() == clusters[1].Server() {
		t.Errorf("both clusters serve at %s", clusters[0].Server())
	}
	if clusters[0].Dir() == clusters[1].Dir() {
		t.Errorf("both clusters live in %s", clusters[0].Dir())
	}
	clientsets := make([]*kubernetes.Clientset, 2)
	for i, c := range clusters {
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		clientsets[i] = cs
		version, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("cluster %d: %v", i, err)
		}
		t.Logf("cluster %d at %s runs %s", i, c.Server(), version.GitVersion)
	}
	// Each cluster has its own etcd: a namespace made in one is absent in
	// the other.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-first"}}
	if _, err := clientsets[0].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientsets[1].CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s in the second cluster: got %v, want NotFound", ns.Name, err)
	}

	for i, c := range clusters {
		dir, pids := c.Dir(), processIDs(c)
		if err := c.Stop(); err != nil {
			t.Errorf("cluster %d: %v", i, err)
		}
		assertStopped(t, dir, pids)
	}
}

func TestKubectl(t *testing.T) {
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	c := startCluster(t, ctx, Options{})
	cmd := exec.CommandContext(ctx, c.KubectlPath(), "get", "namespace", "default", "-o", "name")
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "namespace/default\n" {
		t.Fatalf("kubectl get namespace default: %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), "kubecache")); err != nil {
		t.Errorf("kubectl did not cache in the cluster directory: %v", err)
	}
}

func TestSweepStale(t *testing.T) {
	// A temporary directory of its own, so that the Start of a cluster in
	// another test process, which sweeps too, cannot race with this test.
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	// The owner: this process's PID with another start time, as when the
	// owner died and its PID was reused.
	owner := fmt.Sprintf("%d %s\n", os.Getpid(), "1")
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
		t.Fatal(err)
	}
	// A leftover component, whose command line names a file in the
	// directory.
	leftover := exec.Command("sh", "-c", "sleep 60; : "+filepath.Join(dir, "kubeconfig"))
	leftover.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = leftover.Wait()
		close(exited)
	}()
	t.Cleanup(func() { _ = syscall.Kill(-leftover.Process.Pid, syscall.SIGKILL) })
	if err := recordPID(dir, leftover.Process.Pid, "sh"); err != nil {
		t.Fatal(err)
	}
	// cmd.Start returns once the exec has begun, but the kernel fills in the
	// new command line a moment later; a real leftover is long past that.
	deadline := time.Now().Add(5 * time.Second)
	for {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", leftover.Process.Pid))
		if strings.Contains(string(cmdline), dir) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leftover's command line never showed the directory: %q", cmdline)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A live cluster's directory: owned by this process.
	live, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(live) })
	if err := writeOwner(live); err != nil {
		t.Fatal(err)
	}

	// Directories with an empty owner marker, as one is while it is being
	// written: a new one is a Start under way and must stay (two clusters
	// started at once once swept each other's directory this way); one
	// older than staleAge is abandoned.
	starting, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(starting) })
	abandoned, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(abandoned) })
	for _, d := range []string{starting, abandoned} {
		if err := os.WriteFile(filepath.Join(d, ownerFile), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleAge)
	if err := os.Chtimes(abandoned, old, old); err != nil {
		t.Fatal(err)
	}

	sweepStale()

	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale directory still exists (stat: %v)", err)
	}
	if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned directory with an empty owner marker still exists (stat: %v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live directory was removed: %v", err)
	}
	if _, err := os.Stat(starting); err != nil {
		t.Errorf("a new directory with an empty owner marker, as while a Start writes it, was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live, "."+ownerFile+".part")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the owner marker's partial file is left behind (stat: %v)", err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", leftover.Process.Pid))
		t.Errorf("the leftover process %d was not killed; its command line: %q; the directory: %s",
			leftover.Process.Pid, strings.ReplaceAll(string(cmdline), "\x00", " "), dir)
	}
}

func TestSortNewestFirst(t *testing.T) {
	dirs := []string{"/b/1.9.0-linux-amd64", "/b/1.36.3-linux-amd64", "/b/1.36.10-linux-amd64", "/b/1.35.0-linux-amd64"}
	sortNewestFirst(dirs)
	want := []string{"/b/1.36.10-linux-amd64", "/b/1.36.3-linux-amd64", "/b/1.35.0-linux-amd64", "/b/1.9.0-linux-amd64"}
	if !slices.Equal(dirs, want) {
		t.Errorf("got %v, want %v", dirs, want)
	}
}

func TestBinDir(t *testing.T) {
	requireBinaries(t)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	cache, err := BinDir()
	if err != nil {
		t.Skipf("skipping: the binaries are not in the repository cache: %v", err)
	}

	// An incomplete $KUBEBUILDER_ASSETS falls back to the repository cache.
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	if dir, err := BinDir(); err != nil || dir != cache {
		t.Errorf("with incomplete assets: %q, %v; want %q", dir, err, cache)
	}

	// Outside the repository, only $KUBEBUILDER_ASSETS is looked at.
	t.Chdir(t.TempDir())
	t.Setenv("KUBEBUILDER_ASSETS", cache)
	if dir, err := BinDir(); err != nil || dir != cache {
		t.Errorf("with complete assets: %q, %v; want %q", dir, err, cache)
	}
	t.Setenv("KUBEBUILDER_ASSETS", "")
	if _, err := BinDir(); err == nil || !strings.Contains(err.Error(), "make kube-bins") {
		t.Errorf("outside the repository: %v; want an error saying to run make kube-bins", err)
	}
}
