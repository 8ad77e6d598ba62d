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
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Node is a real node: containerd, kubelet and kube-proxy in a network
// namespace of its own, joined to the cluster's bridge by a veth pair.
type Node struct {
	// Name is the Node object's name, node-<index>.
	Name string
	// IP is the node's address on the cluster's network.
	IP string

	index   int
	cluster *Cluster
	dir     string // <cluster dir>/nodes/<name>
	netns   string // the network namespace's name

	mu         sync.Mutex
	containerd *process
	kubelet    *process
	kubeProxy  *process
	stopped    bool
}

// Real node timeouts, within Start's context.
const (
	containerdTimeout = 60 * time.Second
	imageTimeout      = 10 * time.Minute
	kubeletTimeout    = 2 * time.Minute
)

// nodeTimeouts are the kubelet's and kube-proxy's health checks.
const (
	kubeletHealthz   = "http://127.0.0.1:10248/healthz"
	kubeProxyHealthz = "http://127.0.0.1:10256/healthz"
)

// NetNS returns the path of the node's network namespace, for
// `nsenter --net=<path>`.
func (n *Node) NetNS() string { return netnsPath(n.netns) }

// Command returns a command that runs inside the node's network namespace,
// where Service, pod and node addresses are reachable (and nothing else).
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.NetNS(), "--", name}, args...)...)
}

// Dir returns the node's directory: containerd's and the kubelet's state,
// the volumes the local provisioner makes, the node's logs.
func (n *Node) Dir() string { return n.dir }

// socket is containerd's endpoint.
func (n *Node) socket() string { return filepath.Join(n.dir, "containerd.sock") }

// cgroupName is the cgroup under which the kubelet puts every pod of the
// node, in every hierarchy: each node has its own, so that one kubelet
// never sees another's pods as orphans to clean up.
func (n *Node) cgroupName() string { return cgroupPrefix(n.cluster.id) + n.Name }

// podCIDR is the range the node's pods get addresses from.
func (n *Node) podCIDR() string { return nodePodCIDR(n.index) }

// start starts containerd, imports the images, then starts the kubelet and
// kube-proxy. It does not wait for the Node to be Ready.
func (n *Node) start(ctx context.Context, images []string) error {
	n.mu.Lock()
	n.stopped = false
	n.containerd, n.kubelet, n.kubeProxy = nil, nil, nil
	n.mu.Unlock()
	for _, sub := range []string{"containerd", "kubelet", "pod-logs", "cni/net.d", "cni/ipam", "volumes", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(n.dir, sub), 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if err := makeCgroup(n.cgroupName()); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	files := map[string]string{
		"containerd.toml":              containerdConfig(n.dir, sandboxImage),
		"cni/net.d/10-bridge.conflist": cniConfig(n.cniNetwork(), n.podCIDR(), filepath.Join(n.dir, "cni/ipam")),
		"kubelet.yaml":                 kubeletConfig(n.dir, n.cgroupName(), n.IP),
		"kube-proxy.yaml":              kubeProxyConfig(n.kubeconfig("kube-proxy"), n.Name),
		"resolv.conf":                  "nameserver " + controlPlaneIP + "\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("node %s: writing %s: %w", n.Name, name, err)
		}
	}
	if err := n.writeKubeconfigs(); err != nil {
		return err
	}

	containerd, err := n.startProcess("containerd", "containerd", "--config", filepath.Join(n.dir, "containerd.toml"))
	if err != nil {
		return err
	}
	err = n.cluster.waitFor(ctx, "containerd on "+n.Name, containerdTimeout, containerd, func(ctx context.Context) error {
		if err := n.ctr(ctx, "version"); err != nil {
			return err
		}
		// Its CRI server initialises after its own API answers; a
		// kubelet started before exits ("server is not initialized yet").
		return n.criReady(ctx)
	})
	if err != nil {
		return err
	}
	for _, archive := range images {
		importCtx, cancel := context.WithTimeout(ctx, imageTimeout)
		err := n.ctr(importCtx, "images", "import", archive)
		cancel()
		if err != nil {
			return fmt.Errorf("node %s: importing image %s: %w", n.Name, archive, err)
		}
	}

	kubelet, err := n.startProcess("kubelet", filepath.Join(n.cluster.opts.BinDir, "kubelet"),
		"--config="+filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig="+n.kubeconfig("kubelet"),
		"--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.dir, "kubelet", "pki"),
		"--node-ip="+n.IP,
		"--hostname-override="+n.Name,
		"--node-labels="+nodeLabelKey+"="+realNodeLabelValue,
	)
	if err != nil {
		return err
	}
	kubeProxy, err := n.startProcess("kube-proxy", filepath.Join(n.cluster.opts.BinDir, "kube-proxy"),
		"--config="+filepath.Join(n.dir, "kube-proxy.yaml"),
	)
	if err != nil {
		return err
	}
	client := n.httpClient()
	if err := n.cluster.waitFor(ctx, "the kubelet of "+n.Name+" to be healthy", kubeletTimeout, kubelet, func(ctx context.Context) error {
		_, err := get(ctx, client, kubeletHealthz)
		return err
	}); err != nil {
		return err
	}
	return n.cluster.waitFor(ctx, "kube-proxy of "+n.Name+" to be healthy", kubeletTimeout, kubeProxy, func(ctx context.Context) error {
		_, err := get(ctx, client, kubeProxyHealthz)
		return err
	})
}

// startProcess starts one of the node's components in its network
// namespace, as <node>-<component> in the cluster's logs, and keeps it for
// stop. It fails once the node is stopped.
func (n *Node) startProcess(component, binary string, args ...string) (*process, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return nil, fmt.Errorf("node %s was stopped while it started", n.Name)
	}
	p, err := n.cluster.startProcessIn(n.netns, n.Name+"-"+component, binary, args...)
	if err != nil {
		return nil, err
	}
	switch component {
	case "containerd":
		n.containerd = p
	case "kubelet":
		n.kubelet = p
	case "kube-proxy":
		n.kubeProxy = p
	}
	return p, nil
}

// cniNetwork names the node's pod network; the name is unique to the
// cluster, so that a sweep can tell its CNI cache entries.
func (n *Node) cniNetwork() string { return cgroupPrefix(n.cluster.id) + n.Name }

// kubeconfig returns the path of the kubeconfig of one of the node's
// components.
func (n *Node) kubeconfig(component string) string {
	return filepath.Join(n.dir, component+".kubeconfig")
}

// writeKubeconfigs writes the kubelet's kubeconfig, as system:node:<name>
// (which the Node authorizer scopes to the node's own pods, secrets and
// volumes), and kube-proxy's, as system:kube-proxy.
func (n *Node) writeKubeconfigs() error {
	users := map[string]pkix.Name{
		"kubelet":    {CommonName: "system:node:" + n.Name, Organization: []string{"system:nodes"}},
		"kube-proxy": {CommonName: "system:kube-proxy"},
	}
	for component, subject := range users {
		pair, err := n.cluster.pki.client(subject)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(n.kubeconfig(component), n.cluster.internalServer, subject.CommonName, n.cluster.pki.caPEM, pair); err != nil {
			return err
		}
	}
	return nil
}

// ctr runs a ctr command against the node's containerd, in the k8s.io
// namespace the CRI plugin uses.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	return run(ctx, "ctr", append([]string{"--address", n.socket(), "--namespace", "k8s.io"}, args...)...)
}

// ImportImage imports an OCI image archive into the node's containerd,
// where its pods find it without pulling.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	if err := n.ctr(ctx, "images", "import", archive); err != nil {
		return fmt.Errorf("node %s: importing %s: %w", n.Name, archive, err)
	}
	return nil
}

// TagImage gives an image the node has imported a second name, as a
// registry would serve the same image under another tag.
func (n *Node) TagImage(ctx context.Context, source, target string) error {
	if err := n.ctr(ctx, "images", "tag", "--force", source, target); err != nil {
		return fmt.Errorf("node %s: tagging %s as %s: %w", n.Name, source, target, err)
	}
	return nil
}

// httpClient makes plain HTTP requests from inside the node's network
// namespace.
func (n *Node) httpClient() *http.Client {
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DialContext: n.DialContext, DisableKeepAlives: true},
	}
}

// DialContext opens a connection from inside the node's network namespace,
// where Service, pod and node IP addresses are reachable. The address must
// be an IP address and port.
func (n *Node) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return dialInNetns(ctx, n.NetNS(), network, address)
}

// Disconnect cuts the node off the cluster's network, as a failed switch
// port would: its processes keep running, but nothing reaches it and it
// reaches nothing, the API server included.
func (n *Node) Disconnect(ctx context.Context) error {
	return n.cluster.setLink(ctx, n.index, "down")
}

// Reconnect undoes Disconnect.
func (n *Node) Reconnect(ctx context.Context) error {
	return n.cluster.setLink(ctx, n.index, "up")
}

// Kill stops the node as a power failure would: its kubelet, kube-proxy,
// containerd and every container on it are killed at once. The Node object
// stays and turns NotReady once its lease expires. Restart brings it back.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked(0)
}

// Restart starts a killed node again, as after a reboot: containerd and the
// kubelet start from the state on disk, and the kubelet recreates the pods
// bound to the node. It returns once the kubelet and kube-proxy are healthy.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	stopped := n.stopped
	n.mu.Unlock()
	if !stopped {
		return fmt.Errorf("node %s is running", n.Name)
	}
	// A reboot loses every mount; the kubelet mounts its volumes again.
	if err := unmountUnder(n.dir); err != nil {
		return err
	}
	return n.start(ctx, nil)
}

// stop stops the node for good, or for a Restart: first the kubelet and
// kube-proxy, which would otherwise restart what is killed next, then every
// process in the node's pods, containerd and its shims; then it unmounts
// what the node mounted and removes its cgroups. grace is how long the
// kubelet and kube-proxy get after SIGTERM.
func (n *Node) stopLocked(grace time.Duration) error {
	if n.stopped {
		return nil
	}
	n.stopped = true
	var errs []error
	var agents []*process
	for _, p := range []*process{n.kubelet, n.kubeProxy} {
		if p != nil {
			agents = append(agents, p)
		}
	}
	if err := stopProcesses(agents, grace); err != nil {
		errs = append(errs, err)
	}
	if err := killCgroup(n.cgroupName()); err != nil {
		errs = append(errs, err)
	}
	if n.containerd != nil {
		if err := stopProcesses([]*process{n.containerd}, grace); err != nil {
			errs = append(errs, err)
		}
	}
	// The shims, which containerd started in process groups of their own:
	// their command lines name containerd's socket in the node's directory.
	killMentioning(n.dir + string(filepath.Separator))
	if err := unmountUnder(n.dir); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroup(n.cgroupName()); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping node %s: %w", n.Name, err)
	}
	return nil
}

// processes returns the node's running processes, for the cluster's
// watch over unexpected exits.
func (n *Node) processes() []*process {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return nil
	}
	var procs []*process
	for _, p := range []*process{n.containerd, n.kubelet, n.kubeProxy} {
		if p != nil {
			procs = append(procs, p)
		}
	}
	return procs
}

// containerdConfig is containerd's configuration: every path of its own
// under dir, no TCP endpoint, the CRI plugin with the CNI configuration in
// dir and network namespaces mounted under its state directory, so that
// everything a node mounts lies under dir.
//
// restrict_oom_score_adj keeps containers' OOM score adjustments within
// what containerd may set: without CAP_SYS_RESOURCE in the bounding set
// (as in some VMs) every sandbox fails otherwise.
func containerdConfig(dir, sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[8]q
`,
		filepath.Join(dir, "containerd", "root"),
		filepath.Join(dir, "containerd", "state"),
		filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd", "opt"),
		sandboxImage,
		cniBinDir,
		filepath.Join(dir, "cni", "net.d"),
		filepath.Join(dir, "containerd", "runc"),
	)
}

// cniConfig is the pod network of a node: a bridge whose address is the
// pods' default gateway, so that pods reach Service addresses (which
// kube-proxy translates on the node), other nodes' pods and the control
// plane through the node. Nothing is masqueraded: there is no way out.
func cniConfig(network, podCIDR, ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "dataDir": %q
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`, network, podCIDR, ipamDir)
}

// kubeletConfig is the kubelet's configuration. The kubelet serves its API
// to anyone who reaches it: only the cluster's own namespaces can. Image
// garbage collection is off (images are imported, never pulled), and so is
// disk-pressure eviction on a machine whose disk the node shares.
func kubeletConfig(dir, cgroupRoot, nodeIP string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[2]q
failSwapOn: false
containerRuntimeEndpoint: unix://%[3]s
podLogsDir: %[4]q
volumePluginDir: %[5]q
resolvConf: %[6]q
clusterDNS: [%[7]q]
clusterDomain: %[8]s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
syncFrequency: 10s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
serializeImagePulls: false
`,
		nodeIP,
		"/"+cgroupRoot,
		filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "pod-logs"),
		filepath.Join(dir, "volume-plugins"),
		filepath.Join(dir, "resolv.conf"),
		dnsServiceIP,
		clusterDomain,
	)
}

// kubeProxyConfig is kube-proxy's configuration: iptables mode, healthz
// and metrics on loopback, and conntrack limits left as they are (the
// defaults would write host-wide sysctls).
func kubeProxyConfig(kubeconfig, nodeName string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %q
hostnameOverride: %s
bindAddress: 0.0.0.0
clusterCIDR: %s
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
oomScoreAdj: 0
iptables:
  masqueradeAll: false
  syncPeriod: 30s
  minSyncPeriod: 1s
`, kubeconfig, nodeName, realPodCIDR)
}

// PodProcesses returns the IDs of the processes running in the node's pods
// (the containers' and the sandboxes'), found through the node's cgroup.
func (n *Node) PodProcesses() ([]int, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	return cgroupPIDs(filepath.Join(mounts[0], n.cgroupName())), nil
}

// criReady asks containerd's CRI server for its version, as the kubelet
// does at start-up. The request and the answer are read as empty messages:
// an empty VersionRequest is a valid one, and the answer's fields are not
// needed.
func (n *Node) criReady(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+n.socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return conn.Invoke(ctx, "/runtime.v1.RuntimeService/Version", &emptypb.Empty{}, &emptypb.Empty{})
}

// LogPath is the file the node's component ("containerd", "kubelet" or
// "kube-proxy") writes its output to.
func (n *Node) LogPath(component string) string {
	return filepath.Join(n.cluster.dir, "logs", n.Name+"-"+component+".log")
}
