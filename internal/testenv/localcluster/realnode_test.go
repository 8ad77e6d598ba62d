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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/instance"
)

// requireRealNodes skips the test when real nodes cannot run here, saying
// what is missing, or fails it when STEWARD_REQUIRE_REAL_NODE=1.
func requireRealNodes(t *testing.T) {
	t.Helper()
	requireBinaries(t)
	if err := RealNodeSupport(""); err != nil {
		if os.Getenv("STEWARD_REQUIRE_REAL_NODE") == "1" {
			t.Fatalf("STEWARD_REQUIRE_REAL_NODE=1: %v", err)
		}
		t.Skipf("skipping: %v (STEWARD_REQUIRE_REAL_NODE=1 makes this a failure)", err)
	}
}

// imageArchives returns the image archives `make images` writes to
// bin/images, failing the test when one of want is missing.
func imageArchives(t *testing.T, want ...string) []string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, name := range want {
		path := filepath.Join(root, "bin", "images", name+".tar")
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("image archive %s is missing: run `make images` (%v)", path, err)
		}
		paths = append(paths, path)
	}
	return paths
}

// kubectl runs kubectl against the cluster and returns its output.
func kubectl(ctx context.Context, c *Cluster, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.KubectlPath(), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// engineServer is a pod of one of the engine images, its Service, and
// how to check its protocol.
type engineServer struct {
	name  string
	image string
	uid   int64
	port  int32
	// command starts the server; nil runs the image's own command.
	command []string
	// probe tells when the server is ready.
	probe corev1.ProbeHandler
	// viaNode checks the protocol at ip:port from inside node's network
	// namespace.
	viaNode func(ctx context.Context, n *Node, ip string) error
	// viaDNS is a command run inside the server's pod that reaches the
	// server through its Service's DNS name, host, and prints dnsAnswer.
	viaDNS    func(host string) []string
	dnsAnswer string
}

func execProbe(cmd ...string) corev1.ProbeHandler {
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

// nodeCommand runs a client on the host's file system inside the node's
// network namespace and checks that its output contains want.
func nodeCommand(ctx context.Context, n *Node, want string, name string, args ...string) error {
	out, err := n.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	if !strings.Contains(string(out), want) {
		return fmt.Errorf("%s %v answered %q, want %q in it", name, args, out, want)
	}
	return nil
}

// tcpExchange sends request to ip:port from inside the node's network
// namespace and returns the first line of the answer.
func tcpExchange(ctx context.Context, n *Node, address, request string) (string, error) {
	conn, err := n.DialContext(ctx, "tcp", address)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

var engineServers = []engineServer{
	{
		name: "postgres", image: "postgres:15", uid: 999, port: 5432,
		command: []string{"sh", "-c", `set -e
initdb -D /tmp/pgdata -U postgres --auth=trust >/dev/null
echo "host all all all trust" >> /tmp/pgdata/pg_hba.conf
exec postgres -D /tmp/pgdata -c listen_addresses='*' -k /tmp`},
		probe: execProbe("pg_isready", "-h", "127.0.0.1"),
		viaNode: func(ctx context.Context, n *Node, ip string) error {
			return nodeCommand(ctx, n, "PostgreSQL 15", "psql", "-h", ip, "-U", "postgres", "-Atc", "select version()")
		},
		viaDNS: func(host string) []string {
			return []string{"psql", "-h", host, "-U", "postgres", "-Atc", "select 'answer ' || 6*7"}
		},
		dnsAnswer: "answer 42",
	},
	{
		name: "mariadb", image: "mariadb:10.11", uid: 999, port: 3306,
		command: []string{"sh", "-c", `set -e
mariadb-install-db --datadir=/tmp/db >/dev/null
exec mariadbd --datadir=/tmp/db --socket=/tmp/mariadb.sock --bind-address=0.0.0.0 --skip-grant-tables --skip-name-resolve`},
		probe: execProbe("mariadb-admin", "--socket=/tmp/mariadb.sock", "ping"),
		viaNode: func(ctx context.Context, n *Node, ip string) error {
			return nodeCommand(ctx, n, "10.11", "mariadb", "-h", ip, "-P", "3306", "-N", "-e", "select version()")
		},
		viaDNS: func(host string) []string {
			return []string{"mariadb", "-h", host, "-N", "-e", "select concat('answer ', 6*7)"}
		},
		dnsAnswer: "answer 42",
	},
	{
		name: "redis", image: "redis:7.0", uid: 999, port: 6379,
		command: []string{"redis-server", "--protected-mode", "no"},
		probe:   execProbe("redis-cli", "ping"),
		viaNode: func(ctx context.Context, n *Node, ip string) error {
			return nodeCommand(ctx, n, "PONG", "redis-cli", "-h", ip, "ping")
		},
		viaDNS: func(host string) []string {
			return []string{"sh", "-c", "redis-cli -h " + host + " set answer 42 >/dev/null && echo answer $(redis-cli -h " + host + " get answer)"}
		},
		dnsAnswer: "answer 42",
	},
	{
		name: "memcached", image: "memcached:1.6", uid: 11211, port: 11211,
		command: []string{"memcached", "-l", "0.0.0.0", "-p", "11211"},
		probe:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(11211)}},
		viaNode: func(ctx context.Context, n *Node, ip string) error {
			line, err := tcpExchange(ctx, n, net.JoinHostPort(ip, "11211"), "version\r\n")
			if err != nil {
				return fmt.Errorf("memcached: %w", err)
			}
			if !strings.HasPrefix(line, "VERSION 1.6") {
				return fmt.Errorf("memcached answered %q to version", line)
			}
			return nil
		},
		viaDNS: func(host string) []string {
			// bash's /dev/tcp resolves the name like any client.
			return []string{"bash", "-c", `exec 3<>/dev/tcp/` + host + `/11211
printf 'set answer 0 0 2\r\n42\r\nget answer\r\nquit\r\n' >&3
tr -d '\r' <&3 | sed -n 3p | sed 's/^/answer /'`}
		},
		dnsAnswer: "answer 42",
	},
	{
		name: "nginx", image: "nginxinc/nginx-unprivileged:1.22", uid: 101, port: 8080,
		probe: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		viaNode: func(ctx context.Context, n *Node, ip string) error {
			line, err := tcpExchange(ctx, n, net.JoinHostPort(ip, "8080"), "GET / HTTP/1.0\r\n\r\n")
			if err != nil {
				return fmt.Errorf("nginx: %w", err)
			}
			if !strings.Contains(line, "200 OK") {
				return fmt.Errorf("nginx answered %q", line)
			}
			return nil
		},
		viaDNS: func(host string) []string {
			return []string{"sh", "-c", "curl -fsS -o /dev/null -w 'answer %{http_code}\\n' http://" + host + ":8080/"}
		},
		dnsAnswer: "answer 200",
	},
}

// serverPod runs an engine image as its own non-root user, restricted, on
// the given node.
func serverPod(s engineServer, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{"app": s.name}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(s.uid),
				RunAsGroup:     ptr.To(s.uid),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            s.name,
				Image:           s.image,
				ImagePullPolicy: corev1.PullNever,
				Command:         s.command,
				Ports:           []corev1.ContainerPort{{ContainerPort: s.port}},
				ReadinessProbe:  &corev1.Probe{ProbeHandler: s.probe, PeriodSeconds: 1, TimeoutSeconds: 5},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

func clusterIPService(name string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(port)}},
		},
	}
}

// podReady reports whether a pod of namespace default is Ready, with what
// it waits for if not.
func podReady(ctx context.Context, clientset kubernetes.Interface, name string) error {
	const ns = metav1.NamespaceDefault
	pod, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	var waiting []string
	for _, st := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil {
			waiting = append(waiting, fmt.Sprintf("%s: %s %s", st.Name, w.Reason, w.Message))
		}
		if term := st.LastTerminationState.Terminated; term != nil {
			waiting = append(waiting, fmt.Sprintf("%s last exited %d: %s", st.Name, term.ExitCode, term.Message))
		}
	}
	return fmt.Errorf("pod %s/%s is %s, not Ready: %s", ns, name, pod.Status.Phase, strings.Join(waiting, "; "))
}

// TestRealNodes runs real containers on two real nodes: a pod of every
// engine image answers its protocol through a ClusterIP Service from the
// other node and through the Service's DNS name; a non-root pod's data on
// a provisioned volume survives the pod's replacement; Steward's image
// runs and copies its binary into another image's container; a node cut
// off the network is unreachable until it is reconnected; and Stop leaves
// nothing behind on the host.
func TestRealNodes(t *testing.T) {
	requireRealNodes(t)
	images := imageArchives(t, "pause", "steward", "postgres", "mariadb", "redis", "memcached", "nginx")
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	sysctlsBefore := hostSysctls()

	began := time.Now()
	c, err := Start(ctx, Options{RealNodes: 2, Images: images})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two real nodes Ready, with %d images imported into each, in %v", len(images), time.Since(began).Round(time.Millisecond))
	// The sockets of the cluster's shims, seen while they ran: Stop must
	// remove them, including those of a killed node.
	shims := map[string]bool{}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if t.Failed() {
				logTails(t, c)
				logNodeTails(t, c)
			}
			_ = c.Stop()
		}
	})
	clientset, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	nodes := c.Nodes()
	if len(nodes) != 2 {
		t.Fatalf("%d nodes, want 2", len(nodes))
	}
	// Each node's pods weigh more than a process outside any cgroup.
	for _, n := range nodes {
		if got := cpuWeight(t, n.cgroupName()); got != nodeCPUShares && got != nodeCPUShares*100/1024 {
			t.Errorf("node %s's cgroup has a CPU weight of %d, want %d shares", n.Name, got, nodeCPUShares)
		}
	}
	eventually(t, ctx, 2*time.Minute, "the default ServiceAccount", func(ctx context.Context) error {
		_, err := clientset.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})

	t.Run("Engines", func(t *testing.T) {
		pods := clientset.CoreV1().Pods(metav1.NamespaceDefault)
		services := clientset.CoreV1().Services(metav1.NamespaceDefault)
		for _, s := range engineServers {
			if _, err := pods.Create(ctx, serverPod(s, nodes[1].Name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := services.Create(ctx, clusterIPService(s.name, s.port), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range engineServers {
			t.Run(s.name, func(t *testing.T) {
				took := eventually(t, ctx, 3*time.Minute, s.name+" is Ready", func(ctx context.Context) error {
					return podReady(ctx, clientset, s.name)
				})
				t.Logf("Ready %v after its creation", took.Round(time.Millisecond))
				svc, err := services.Get(ctx, s.name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// From the other node, through the ClusterIP.
				eventually(t, ctx, time.Minute, s.name+" answers through its ClusterIP from "+nodes[0].Name, func(ctx context.Context) error {
					return s.viaNode(ctx, nodes[0], svc.Spec.ClusterIP)
				})
				// From a pod, through the DNS name.
				host := fmt.Sprintf("%s.%s.svc", s.name, metav1.NamespaceDefault)
				eventually(t, ctx, time.Minute, s.name+" answers through "+host, func(ctx context.Context) error {
					out, err := kubectl(ctx, c, append([]string{"exec", s.name, "--"}, s.viaDNS(host)...)...)
					if err != nil {
						return err
					}
					if !strings.Contains(out, s.dnsAnswer) {
						return fmt.Errorf("answered %q, want %q", out, s.dnsAnswer)
					}
					return nil
				})
			})
		}
	})

	t.Run("VolumeKeepsDataOfNonRootPod", func(t *testing.T) {
		testVolumeSurvivesReplacement(t, ctx, c, clientset)
	})

	t.Run("ExpandableVolumeFillsAndGrowsOnline", func(t *testing.T) {
		testExpandableVolume(t, ctx, c, clientset)
	})

	t.Run("StewardImage", func(t *testing.T) {
		testStewardImage(t, ctx, c, clientset)
	})

	t.Run("DisconnectedNode", func(t *testing.T) {
		svc, err := clientset.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "redis", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "redis", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := nodes[1].Disconnect(ctx); err != nil {
			t.Fatal(err)
		}
		short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
		err = nodes[0].Command(short, "redis-cli", "-h", pod.Status.PodIP, "ping").Run()
		cancelShort()
		if err == nil {
			t.Errorf("redis on the disconnected %s answered from %s", nodes[1].Name, nodes[0].Name)
		}
		if err := nodes[1].Reconnect(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, ctx, time.Minute, "redis answers again once its node is reconnected", func(ctx context.Context) error {
			return nodeCommand(ctx, nodes[0], "PONG", "redis-cli", "-h", svc.Spec.ClusterIP, "ping")
		})
	})

	t.Run("KilledNodeRestarts", func(t *testing.T) {
		svc, err := clientset.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "redis", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addShimSockets(shims, c.id)
		if err := nodes[1].Kill(); err != nil {
			t.Fatal(err)
		}
		if pids, err := nodes[1].PodProcesses(); err != nil || len(pids) > 0 {
			t.Errorf("processes %v still run in the killed node's pods (%v)", pids, err)
		}
		short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
		err = nodes[0].Command(short, "redis-cli", "-h", svc.Spec.ClusterIP, "ping").Run()
		cancelShort()
		if err == nil {
			t.Errorf("redis on the killed %s answered", nodes[1].Name)
		}
		began := time.Now()
		if err := nodes[1].Restart(ctx); err != nil {
			t.Fatal(err)
		}
		took := eventually(t, ctx, 3*time.Minute, "redis answers again once its node restarted", func(ctx context.Context) error {
			return nodeCommand(ctx, nodes[0], "PONG", "redis-cli", "-h", svc.Spec.ClusterIP, "ping")
		})
		t.Logf("the node restarted in %v, and its redis pod answered %v later", (time.Since(began) - took).Round(time.Millisecond), took.Round(time.Millisecond))
	})

	if t.Failed() {
		return
	}
	dir, id := c.Dir(), c.id
	pids := processIDs(c)
	for _, n := range nodes {
		for _, p := range n.processes() {
			pids = append(pids, p.pid())
		}
	}
	addShimSockets(shims, id)
	if len(shims) == 0 {
		t.Errorf("no shim of the cluster listened: nothing to check at the stop")
	}
	began = time.Now()
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	assertStopped(t, dir, pids)
	assertNothingLeft(t, dir, id, shims, sysctlsBefore)
}

// testExpandableVolume: a claim of ExpandableStorageClassName gets a
// tmpfs of its size, which refuses writes once full; a larger request
// grows it online (the running pod sees the new size in df and can write
// again, without a restart), the claim's status and the volume record the
// size, and deleting the claim unmounts and removes the volume.
func testExpandableVolume(t *testing.T, ctx context.Context, c *Cluster, clientset kubernetes.Interface) {
	claims := clientset.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "grows"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(ExpandableStorageClassName),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")},
			},
		},
	}
	if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "grows"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999), FSGroup: ptr.To[int64](999),
			},
			Containers: []corev1.Container{{
				Name: "grows", Image: "postgres:15", ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sleep", "infinity"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "grows"},
			}}},
		},
	}
	if _, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 3*time.Minute, "grows is Ready", func(ctx context.Context) error {
		return podReady(ctx, clientset, "grows")
	})
	size := func(ctx context.Context) (string, error) {
		out, err := kubectl(ctx, c, "exec", "grows", "--", "df", "-k", "--output=size", "/data")
		return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "1K-blocks")), err
	}
	if got, err := size(ctx); err != nil || got != "16384" {
		t.Fatalf("df shows %q KiB (%v), want 16384", got, err)
	}
	out, err := kubectl(ctx, c, "exec", "grows", "--", "dd", "if=/dev/zero", "of=/data/fill", "bs=1M", "count=20")
	if err == nil || !strings.Contains(out+err.Error(), "No space left on device") {
		t.Fatalf("writing 20 MiB to 16 MiB: %q, %v; want No space left on device", out, err)
	}
	before, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "grows", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"32Mi"}}}}`)
	if _, err := claims.Patch(ctx, "grows", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, "the claim's capacity is 32Mi", func(ctx context.Context) error {
		got, err := claims.Get(ctx, "grows", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if q := got.Status.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("32Mi")) != 0 {
			return fmt.Errorf("capacity %s", q.String())
		}
		pv, err := clientset.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("32Mi")) != 0 {
			return fmt.Errorf("the volume's capacity is %s", q.String())
		}
		return nil
	})
	t.Logf("grown from 16Mi to 32Mi %v after the claim's patch", time.Since(began).Round(time.Millisecond))
	if got, err := size(ctx); err != nil || got != "32768" {
		t.Fatalf("df shows %q KiB (%v) after the growth, want 32768", got, err)
	}
	if out, err := kubectl(ctx, c, "exec", "grows", "--", "dd", "if=/dev/zero", "of=/data/more", "bs=1M", "count=8"); err != nil {
		t.Fatalf("writing 8 MiB more after the growth: %q, %v", out, err)
	}
	after, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "grows", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.Status.ContainerStatuses[0].RestartCount != before.Status.ContainerStatuses[0].RestartCount {
		t.Error("the pod was restarted or replaced by the growth")
	}

	// Deleted: the tmpfs is unmounted and the directory removed.
	grown, err := claims.Get(ctx, "grows", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, "grows", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "grows", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 2*time.Minute, "the volume is deleted", func(ctx context.Context) error {
		_, err := clientset.CoreV1().PersistentVolumes().Get(ctx, grown.Spec.VolumeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("volume %s still there (%w)", grown.Spec.VolumeName, err)
	})
	for _, n := range c.Nodes() {
		dir := filepath.Join(n.dir, "volumes", grown.Spec.VolumeName)
		if points, err := mountsUnder(dir); err != nil || len(points) > 0 {
			t.Errorf("still mounted at %s: %v (%v)", dir, points, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", dir, err)
		}
	}
}

// logNodeTails logs the end of the real nodes' logs.
func logNodeTails(t *testing.T, c *Cluster) {
	for _, n := range c.Nodes() {
		for _, p := range n.processes() {
			if tail := tailFile(p.logPath); tail != "" {
				t.Logf("--- %s ---\n%s", p.logPath, tail)
			}
		}
	}
}

// testVolumeSurvivesReplacement writes to a provisioned volume as uid 999
// (the volume's directory is root's, so only fsGroup lets it), replaces
// the pod and reads the data back.
func testVolumeSurvivesReplacement(t *testing.T, ctx context.Context, c *Cluster, clientset kubernetes.Interface) {
	labels := map[string]string{"app": "keeper"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "keeper"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "keeper",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true),
						RunAsUser:    ptr.To[int64](999),
						RunAsGroup:   ptr.To[int64](999),
						FSGroup:      ptr.To[int64](999),
					},
					Containers: []corev1.Container{{
						Name:            "keeper",
						Image:           "postgres:15",
						ImagePullPolicy: corev1.PullNever,
						Command: []string{"sh", "-c", `set -e
[ -f /data/first ] || echo "$HOSTNAME $(cat /proc/sys/kernel/random/uuid)" > /data/first
echo boot >> /data/boots
exec sleep infinity`},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					},
				},
			}},
		},
	}
	if _, err := clientset.AppsV1().StatefulSets(metav1.NamespaceDefault).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := eventually(t, ctx, 3*time.Minute, "keeper-0 is Ready", func(ctx context.Context) error {
		return podReady(ctx, clientset, "keeper-0")
	})
	t.Logf("keeper-0 Ready with a provisioned volume %v after creation", took.Round(time.Millisecond))
	read := func(ctx context.Context) (string, error) {
		return kubectl(ctx, c, "exec", "keeper-0", "--", "sh", "-c", "cat /data/first; wc -l < /data/boots; stat -c '%u:%g %a' /data/boots")
	}
	before, err := read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(before, "\n")
	if !strings.Contains(before, "\n1\n999:999") {
		t.Fatalf("after the first start: %q, want one boot written by 999:999", before)
	}
	claim, err := clientset.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Get(ctx, "data-keeper-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := ptr.Deref(claim.Spec.StorageClassName, ""); sc != LocalStorageClassName {
		t.Errorf("the claim has StorageClass %q, want the default %s", sc, LocalStorageClassName)
	}

	old, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "keeper-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, "keeper-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took = eventually(t, ctx, 3*time.Minute, "a new keeper-0 is Ready", func(ctx context.Context) error {
		pod, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "keeper-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.UID == old.UID {
			return errors.New("still the old pod")
		}
		return podReady(ctx, clientset, "keeper-0")
	})
	t.Logf("replacement Ready in %v", took.Round(time.Millisecond))
	after, err := read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(after, first+"\n2\n") {
		t.Errorf("after the replacement: %q, want %q and two boots", after, first)
	}
}

// testStewardImage runs Steward's image as the database pods do: its
// entrypoint with arguments only, `copy-binary` in an init container, and
// the copied agent in another image's container.
func testStewardImage(t *testing.T, ctx context.Context, c *Cluster, clientset kubernetes.Interface) {
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	image := "ghcr.io/steward-dev/steward:0.1.0"
	// The init container the operator's database and backup pods use.
	restrictedAC := corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	copyBinary := *apply.Convert[corev1.Container](instance.CopyBinaryContainer(image, "bin", restrictedAC))
	copyBinary.ImagePullPolicy = corev1.PullNever
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "steward-image"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			InitContainers: []corev1.Container{
				// The image's own user, not given here: it must be numeric
				// for runAsNonRoot to accept it.
				{Name: "help", Image: image, ImagePullPolicy: corev1.PullNever, Args: []string{"--help"}, SecurityContext: restricted},
				copyBinary,
			},
			Containers: []corev1.Container{{
				Name: "run", Image: "postgres:15", ImagePullPolicy: corev1.PullNever,
				Command: []string{instance.BinaryPath, "copy-binary"}, SecurityContext: restricted,
				VolumeMounts: []corev1.VolumeMount{{Name: "bin", MountPath: instance.BinaryDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	// postgres:15, like the official image, names no user of its own.
	pod.Spec.Containers[0].SecurityContext = restricted.DeepCopy()
	pod.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To[int64](999)
	if _, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 3*time.Minute, "the steward-image pod has run", func(ctx context.Context) error {
		p, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return nil
		}
		return fmt.Errorf("phase %s", p.Status.Phase)
	})
	p, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Status.InitContainerStatuses {
		if term := st.State.Terminated; term == nil || term.ExitCode != 0 {
			t.Errorf("init container %s: %+v", st.Name, st.State)
		}
	}
	help, err := kubectl(ctx, c, "logs", pod.Name, "-c", "help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help, "-instance-image") {
		t.Errorf("steward --help printed %q, want the flags", help)
	}
	// The copied binary runs in the engine's image and answers a
	// subcommand's usage error: it is there and executable.
	run := p.Status.ContainerStatuses[0].State.Terminated
	out, _ := kubectl(ctx, c, "logs", pod.Name, "-c", "run")
	if run == nil || run.ExitCode != 2 || !strings.Contains(out, "usage: steward-agent copy-binary DEST") {
		t.Errorf("the copied binary in postgres:15: %+v, output %q; want exit 2 with its usage", run, out)
	}
}

// hostSysctls returns the host's own values of the sysctls the kubelet
// changes: those recorded before a kubelet changed them, when a record
// exists (a cluster with real nodes runs, or crashed), or else the current
// ones.
func hostSysctls() map[string]string {
	values := readSysctls()
	if data, err := os.ReadFile(sysctlRecord()); err == nil {
		for line := range strings.Lines(string(data)) {
			if name, value, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
				values[name] = value
			}
		}
	}
	return values
}

// readSysctls reads the sysctls the kubelet changes.
func readSysctls() map[string]string {
	values := map[string]string{}
	for _, name := range kubeletSysctls {
		if data, err := os.ReadFile(filepath.Join("/proc/sys", name)); err == nil {
			values[name] = strings.TrimSpace(string(data))
		}
	}
	return values
}

// assertNothingLeft checks that the real nodes of cluster id, whose
// directory was dir, left nothing on the host: no process naming the
// directory, no mount under it, no cgroup or network namespace of the
// cluster, no registration, none of its shims' sockets (shims: what
// addShimSockets saw while it ran); and, unless another cluster with real
// nodes runs, the sysctls as they were before. Other clusters' shims come
// and go in the same directory meanwhile, so only the cluster's own
// sockets are checked.
func assertNothingLeft(t *testing.T, dir, id string, shims map[string]bool, sysctlsBefore map[string]string) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still exists (stat: %v)", dir, err)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir+"/") {
			t.Errorf("process %s is left: %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if points, _ := mountsUnder(dir); len(points) > 0 {
		t.Errorf("mounts are left: %v", points)
	}
	if names := strayCgroups(cgroupPrefix(id)); len(names) > 0 {
		t.Errorf("cgroups are left: %v", names)
	}
	if names := netnsWithPrefix("steward-" + id); len(names) > 0 {
		t.Errorf("network namespaces are left: %v", names)
	}
	if _, ok := realClusters()[id]; ok {
		t.Errorf("the cluster is still registered in %s", registryDir())
	}
	for s := range shims {
		if _, err := os.Lstat(s); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("shim socket %s of the cluster is left (lstat: %v)", s, err)
		}
	}
	for other, otherDir := range realClusters() {
		if other != id && clusterAlive(otherDir) {
			t.Logf("another cluster with real nodes runs (%s): the sysctls are its to restore", otherDir)
			return
		}
	}
	if after := readSysctls(); fmt.Sprint(after) != fmt.Sprint(sysctlsBefore) {
		t.Errorf("sysctls not restored: %v, were %v", after, sysctlsBefore)
	}
}

// addShimSockets adds to shims the sockets in containerd's shim directory
// that a process in the network namespaces of cluster id's nodes listens
// on (a shim runs in its node's namespace).
func addShimSockets(shims map[string]bool, id string) {
	prefix := filepath.Join(containerdRunDir, "s") + "/"
	for path := range listeningUnixSocketsIn(cgroupPrefix(id) + "*") {
		if strings.HasPrefix(path, prefix) {
			shims[path] = true
		}
	}
}

// TestRealNodeSweep kills a process that runs a cluster with a real node
// and a pod with SIGKILL, and checks that the next Start's sweep removes
// everything it left: containers, shims, mounts, cgroups, network
// namespaces, sockets, sysctls.
func TestRealNodeSweep(t *testing.T) {
	if os.Getenv(sweepChildEnv) != "" {
		runSweepChild()
		return
	}
	requireRealNodes(t)
	imageArchives(t, "pause", "nginx")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	sysctlsBefore := hostSysctls()

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRealNodeSweep$", "-test.v")
	child.Env = append(os.Environ(), sweepChildEnv+"=1")
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	var dir string
	scanner := bufio.NewScanner(stdout)
	for scanner.Scan() {
		line := scanner.Text()
		t.Log("child: " + line)
		if d, ok := strings.CutPrefix(line, "RUNNING "); ok {
			dir = d
			break
		}
	}
	if dir == "" {
		t.Fatalf("the child exited before its pod ran: %v", scanner.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	id := clusterID(dir)
	if names := strayCgroups(cgroupPrefix(id)); len(names) == 0 {
		t.Fatalf("the child's node has no cgroup: nothing to test")
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	// What the crash left: the pod's containers and shims still run.
	if pids := cgroupPIDs(firstCgroupMount(t, cgroupPrefix(id)+"node-0")); len(pids) == 0 {
		t.Errorf("no container survived the SIGKILL: the sweep has nothing to do")
	}
	shims := map[string]bool{}
	if addShimSockets(shims, id); len(shims) == 0 {
		t.Errorf("no shim of the killed cluster listens: the sweep has no socket to remove")
	}
	began := time.Now()
	sweepStale()
	t.Logf("swept in %v", time.Since(began).Round(time.Millisecond))
	assertNothingLeft(t, dir, id, shims, sysctlsBefore)
}

// sweepChildEnv makes TestRealNodeSweep run the cluster that its parent
// kills.
const sweepChildEnv = "STEWARD_SWEEP_CHILD"

// runSweepChild starts a cluster with one real node and an nginx pod,
// prints RUNNING <dir> once the pod runs, and waits to be killed.
func runSweepChild() {
	fail := func(err error) {
		fmt.Println("FAILED", err)
		os.Exit(1)
	}
	root, err := RepoRoot()
	if err != nil {
		fail(err)
	}
	images := []string{filepath.Join(root, "bin", "images", "pause.tar"), filepath.Join(root, "bin", "images", "nginx.tar")}
	ctx := context.Background()
	c, err := Start(ctx, Options{RealNodes: 1, Images: images})
	if err != nil {
		fail(err)
	}
	clientset, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		fail(err)
	}
	var server engineServer
	for _, s := range engineServers {
		if s.name == "nginx" {
			server = s
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := clientset.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, serverPod(server, c.Nodes()[0].Name), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			fail(err)
		}
		time.Sleep(time.Second)
	}
	for podReady(ctx, clientset, server.name) != nil {
		if time.Now().After(deadline) {
			fail(podReady(ctx, clientset, server.name))
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Println("RUNNING " + c.Dir())
	select {}
}

// firstCgroupMount returns the path of cgroup name in the first hierarchy.
func firstCgroupMount(t *testing.T, name string) string {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(mounts[0], name)
}

// cpuWeight reads the cgroup name's cpu.shares (v1) or cpu.weight (v2).
func cpuWeight(t *testing.T, name string) int {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		for _, file := range []string{"cpu.shares", "cpu.weight"} {
			data, err := os.ReadFile(filepath.Join(m, name, file))
			if err != nil {
				continue
			}
			v, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("%s of cgroup %s: %v", file, name, err)
			}
			return v
		}
	}
	t.Fatalf("cgroup %s has no cpu.shares or cpu.weight", name)
	return 0
}
