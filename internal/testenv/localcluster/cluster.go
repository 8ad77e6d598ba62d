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

// Package localcluster starts and stops a real Kubernetes control plane on
// 127.0.0.1, without a container runtime, for tests, demos and benchmarks.
//
// A minimal cluster runs etcd and kube-apiserver. A full cluster adds
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet
// for fake nodes: pods become ready (or complete, for Jobs) at once, and
// claims of the kwok-volume StorageClass are provisioned and bound at once.
//
// Every cluster lives in its own temporary directory, os.TempDir()/
// steward-cluster-*, on its own free loopback ports, so several can run side
// by side. The directory holds:
//
//	kubeconfig        the admin kubeconfig (credentials embedded)
//	pki/              the CA, the API server's serving pair, the service-account keys
//	etcd/             etcd's data
//	logs/<name>.log   each component's output
//	owner, pids       markers a later Start uses to clean up after a crash
//
// The binaries come from BinDir. Only Linux is supported.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

const (
	// serviceCIDR is the cluster's Service IP range, large enough for the
	// tens of thousands of Services a benchmark creates.
	serviceCIDR = "10.96.0.0/12"
	// podCIDR is the range kwok gives pod IPs from, apart from serviceCIDR.
	podCIDR = "10.128.0.0/12"

	// startAttempts bounds how often Start tries again after another
	// process took one of the ports it picked.
	startAttempts = 3
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second

	defaultNodes                  = 3
	defaultControllerManagerQPS   = 20
	defaultControllerManagerBurst = 30
)

// serviceIP, the first address of serviceCIDR, is the ClusterIP of the
// kubernetes Service, so the API server's certificate names it.
var serviceIP = net.IPv4(10, 96, 0, 1)

// Options configures a cluster. The zero value is a minimal cluster: etcd and
// kube-apiserver.
type Options struct {
	// Full adds kube-controller-manager, kube-scheduler and kwok to etcd and
	// kube-apiserver, creates the default StorageClass kwok-volume and the
	// fake nodes, and waits for the nodes to be Ready and the default
	// ServiceAccount of namespace default to exist.
	Full bool
	// Nodes is the number of fake nodes of a full cluster; 0 means 3. They
	// are named kwok-node-<i>, labeled type=kwok, have no taints and can
	// each hold 1000 CPUs, 4Ti of memory and 5000 pods.
	Nodes int
	// BinDir holds the binaries and the kwok-stages folder; empty means the
	// result of BinDir().
	BinDir string
	// ControllerManagerQPS and ControllerManagerBurst set
	// kube-controller-manager's --kube-api-qps and --kube-api-burst; 0 means
	// its defaults, 20 and 30. kube-scheduler uses them too when they exceed
	// its own defaults, 50 and 100.
	ControllerManagerQPS, ControllerManagerBurst int
	// RealNodes is the number of real nodes: each runs containerd, runc, the
	// CNI bridge, a kubelet and kube-proxy in a network namespace of its
	// own, so that pods run real containers; Services, their ClusterIPs
	// and DNS names (CoreDNS serves cluster.local) work as on any cluster,
	// and claims of the default StorageClass LocalStorageClassName get a
	// directory on their pod's node. The control plane then runs in a
	// network namespace too, reached through a forwarder on 127.0.0.1.
	// Real nodes are named node-<i>, labeled type=real, and need root on
	// Linux: see RealNodeSupport. A cluster with real nodes is full and
	// has no fake nodes unless Nodes asks for them.
	RealNodes int
	// Images are OCI image archives imported into every real node's
	// containerd before its kubelet starts, so that pods find them without
	// pulling (nothing can be pulled). They must include the pause image,
	// registry.k8s.io/pause:3.10.
	Images []string
	// JobPodsRunUntilTold leaves the pods of Jobs running instead of
	// completing them at once: a test finishes a pod by writing its status
	// (phase and container termination message) itself, as a kubelet would.
	JobPodsRunUntilTold bool
	// Log receives the components' output, each line prefixed with the
	// component's name; nil discards it. Each component's output is also
	// kept in Dir()/logs/<component>.log until Stop.
	Log io.Writer
}

// withDefaults returns the options with every zero value filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Nodes < 0 || o.RealNodes < 0 || o.ControllerManagerQPS < 0 || o.ControllerManagerBurst < 0 {
		return o, errors.New("negative Nodes, RealNodes, ControllerManagerQPS or ControllerManagerBurst")
	}
	if o.RealNodes > maxRealNodes {
		return o, fmt.Errorf("RealNodes %d is more than %d", o.RealNodes, maxRealNodes)
	}
	images := make([]string, 0, len(o.Images))
	for _, image := range o.Images {
		abs, err := filepath.Abs(image)
		if err != nil {
			return o, err
		}
		images = append(images, abs)
	}
	o.Images = images
	if o.RealNodes > 0 {
		o.Full = true
	} else if o.Nodes == 0 {
		o.Nodes = defaultNodes
	}
	if o.ControllerManagerQPS == 0 {
		o.ControllerManagerQPS = defaultControllerManagerQPS
	}
	if o.ControllerManagerBurst == 0 {
		o.ControllerManagerBurst = defaultControllerManagerBurst
	}
	if o.BinDir == "" {
		dir, err := BinDir()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	}
	return o, nil
}

// Cluster is a running local control plane. Stop it when done.
type Cluster struct {
	opts Options
	dir  string
	// id is the random part of dir's name, which names the network
	// namespaces and cgroups of real nodes.
	id     string
	server string
	// internalServer is the API server's URL for the components inside the
	// cluster's network namespaces; server without real nodes.
	internalServer string
	pki            *pki
	restConfig     *rest.Config
	spawner        *spawner

	// Real nodes only: the nodes, the forwarder that gives the host the
	// API server, and the volume provisioner.
	nodes       []*Node
	forwarder   *forwarder
	provisioner *provisioner
	// logMu serialises writes to opts.Log from the components.
	logMu sync.Mutex

	mu    sync.Mutex
	procs []*process

	stopOnce sync.Once
	stopErr  error
}

// Start starts a cluster and returns once it is usable: the API server
// answers /readyz and, for a full cluster, the nodes are Ready and the
// default ServiceAccount exists. It first removes the directories, and
// stops the processes, of clusters whose owning process died without
// stopping them.
//
// ctx bounds the start only, not the cluster's life. On failure everything
// started is stopped and the error ends with the failing component's log.
//
// Each component runs in its own process group with SIGKILL as its
// parent-death signal, so it dies with the calling process even if Stop is
// never called.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("starting a local cluster: %w", err)
	}
	sweepStale()
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if err == nil {
			return c, nil
		}
		var compErr *componentError
		if attempt < startAttempts && ctx.Err() == nil && errors.As(err, &compErr) && compErr.portInUse() {
			continue
		}
		return nil, fmt.Errorf("starting a local cluster: %w", err)
	}
}

// start makes one attempt at starting a cluster, cleaning up on failure.
func start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	dir, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		return nil, fmt.Errorf("creating the cluster directory: %w", err)
	}
	c := &Cluster{opts: opts, dir: dir, id: clusterID(dir), spawner: newSpawner()}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("cleaning up: %w", stopErr))
			}
		}
	}()
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o700); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}

	var etcdClientPort, etcdPeerPort, apiPort int
	if opts.RealNodes > 0 {
		if err := c.prepareRealNodes(ctx); err != nil {
			return nil, err
		}
		// The control plane's namespace is its own: fixed ports are free.
		etcdClientPort, etcdPeerPort, apiPort = 2379, 2380, apiServerNetnsPort
		if c.forwarder, err = newForwarder(netnsPath(c.netnsName()), fmt.Sprintf("127.0.0.1:%d", apiPort)); err != nil {
			return nil, err
		}
		c.server = "https://" + c.forwarder.addr()
		c.internalServer = fmt.Sprintf("https://%s:%d", controlPlaneIP, apiPort)
	} else {
		ports, err := freePorts(3)
		if err != nil {
			return nil, err
		}
		etcdClientPort, etcdPeerPort, apiPort = ports[0], ports[1], ports[2]
		c.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
		c.internalServer = c.server
	}

	if c.pki, err = newPKI(filepath.Join(dir, "pki"), serviceIP, net.ParseIP(controlPlaneIP)); err != nil {
		return nil, fmt.Errorf("generating certificates: %w", err)
	}
	c.restConfig = &rest.Config{
		Host: c.server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.caPEM,
			CertData: c.pki.admin.cert,
			KeyData:  c.pki.admin.key,
		},
		QPS:   1000,
		Burst: 2000,
	}
	if err := writeKubeconfig(c.Kubeconfig(), c.server, "admin", c.pki.caPEM, c.pki.admin); err != nil {
		return nil, err
	}
	if c.real() {
		if err := writeKubeconfig(c.internalKubeconfig(), c.internalServer, "admin", c.pki.caPEM, c.pki.admin); err != nil {
			return nil, err
		}
	}

	etcdURL, err := c.startEtcd(ctx, etcdClientPort, etcdPeerPort)
	if err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, apiPort, etcdURL); err != nil {
		return nil, err
	}
	if opts.Full {
		if err := c.startWorkloadComponents(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Stop stops every process of the cluster, SIGTERM first and SIGKILL after a
// few seconds, waits for them to exit and removes the cluster's directory.
// It is idempotent and safe to call concurrently, for example from a signal
// handler's goroutine; every call returns the first call's result. A nil
// Cluster is stopped already.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	// Real nodes first: their pods' processes, containerd and its shims,
	// mounts and cgroups, while the control plane still runs (a kubelet
	// that lost the API server takes long to stop).
	c.provisioner.stop()
	for _, n := range c.nodes {
		n.mu.Lock()
		err := n.stopLocked(stopGrace)
		n.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	// etcd, started first, goes last: kube-apiserver shuts down slowly
	// without it.
	if len(procs) > 1 {
		if err := stopProcesses(procs[1:], stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := stopProcesses(procs[:min(len(procs), 1)], stopGrace); err != nil {
		errs = append(errs, err)
	}
	c.spawner.close()
	c.forwarder.close()
	if c.real() {
		if err := c.tearDownNetwork(); err != nil {
			errs = append(errs, err)
		}
		removeCNICache(cgroupPrefix(c.id))
		removeStaleShimSockets()
		if err := restoreSysctls(c.id); err != nil {
			errs = append(errs, err)
		}
		unregisterRealCluster(c.id)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", c.dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping the local cluster: %w", err)
	}
	return nil
}

// Kubeconfig returns the path of the admin kubeconfig, which embeds the CA
// and the client credentials.
func (c *Cluster) Kubeconfig() string {
	return filepath.Join(c.dir, "kubeconfig")
}

// internalKubeconfig is the admin kubeconfig of the components inside the
// cluster's network namespaces; Kubeconfig without real nodes.
func (c *Cluster) internalKubeconfig() string {
	if !c.real() {
		return c.Kubeconfig()
	}
	return filepath.Join(c.dir, "kubeconfig-internal")
}

// real reports whether the cluster has real nodes.
func (c *Cluster) real() bool { return c.opts.RealNodes > 0 }

// Nodes returns the real nodes, in order.
func (c *Cluster) Nodes() []*Node { return slices.Clone(c.nodes) }

// RESTConfig returns a new admin client configuration (group
// system:masters) with QPS 1000 and Burst 2000.
func (c *Cluster) RESTConfig() *rest.Config {
	return rest.CopyConfig(c.restConfig)
}

// Server returns the API server's URL, https://127.0.0.1:<port>.
func (c *Cluster) Server() string {
	return c.server
}

// Dir returns the cluster's temporary directory, removed by Stop.
func (c *Cluster) Dir() string {
	return c.dir
}

// KubectlPath returns the path of the kubectl binary matching the cluster.
func (c *Cluster) KubectlPath() string {
	return filepath.Join(c.opts.BinDir, "kubectl")
}

// Env returns the environment variables that point kubectl at the cluster:
// KUBECONFIG, and KUBECACHEDIR so that kubectl keeps its discovery cache in
// the cluster's directory rather than ~/.kube/cache. Append them to
// os.Environ() for a command's Env.
func (c *Cluster) Env() []string {
	return []string{
		"KUBECONFIG=" + c.Kubeconfig(),
		"KUBECACHEDIR=" + filepath.Join(c.dir, "kubecache"),
	}
}

// Processes returns the process ID of each control-plane component the
// cluster started (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok, coredns), by name: a benchmark reads their CPU time
// from /proc.
func (c *Cluster) Processes() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		out[p.name] = p.pid()
	}
	return out
}

// startProcess starts one of the binaries of BinDir as a control-plane
// component, in the control plane's network namespace when there are real
// nodes, and tracks it for Stop.
func (c *Cluster) startProcess(name string, args ...string) (*process, error) {
	ns := ""
	if c.real() {
		ns = c.netnsName()
	}
	p, err := c.startProcessIn(ns, name, filepath.Join(c.opts.BinDir, name), args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// startProcessIn starts binary in the network namespace ns (the caller's
// when empty) with its output in logs/<name>.log (and opts.Log), and
// records its PID for the sweep of crashed clusters.
func (c *Cluster) startProcessIn(ns, name, binary string, args ...string) (*process, error) {
	logPath := filepath.Join(c.dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	cmd := nsCommand(ns, binary, args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out io.Writer = logFile
	if c.opts.Log != nil {
		out = io.MultiWriter(logFile, &prefixWriter{mu: &c.logMu, w: c.opts.Log, prefix: []byte(name + ": ")})
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := c.spawner.start(cmd); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}

	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	if err := recordPID(c.dir, p.pid(), name); err != nil {
		return nil, err
	}
	return p, nil
}

// exitedProcess returns a started process that has exited, if any: a
// control-plane component, or a component of a real node that was not
// stopped.
func (c *Cluster) exitedProcess() *process {
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	for _, n := range c.nodes {
		procs = append(procs, n.processes()...)
	}
	for _, p := range procs {
		if p.exited() {
			return p
		}
	}
	return nil
}

// waitFor polls check every 100ms until it returns nil. It fails when a
// started process exits, when timeout passes or when ctx ends; in the
// latter cases the error ends with the log of focus, the component waited
// on, if not nil.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, focus *process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if p := c.exitedProcess(); p != nil {
			return p.exitError()
		}
		checkCtx, cancelCheck := context.WithTimeout(ctx, 5*time.Second)
		lastErr := check(checkCtx)
		cancelCheck()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if p := c.exitedProcess(); p != nil {
				return p.exitError()
			}
			err := fmt.Errorf("waiting for %s: %w after %v, %s (last check: %w)", what, ctx.Err(), timeout, LoadAverage(), lastErr)
			if focus == nil {
				return err
			}
			return &componentError{component: focus.name, err: err, logTail: tailFile(focus.logPath)}
		case <-ticker.C:
		}
	}
}

// PauseAPIServer stops the kube-apiserver process (SIGSTOP) until the
// returned function is called (SIGCONT): its port still accepts
// connections, which then hang, as they do when an API server is overloaded
// or its host stalls. The rest of the cluster keeps running.
func (c *Cluster) PauseAPIServer() (resume func(), err error) {
	c.mu.Lock()
	var apiserver *process
	for _, p := range c.procs {
		if p.name == "kube-apiserver" {
			apiserver = p
		}
	}
	c.mu.Unlock()
	if apiserver == nil || apiserver.exited() {
		return nil, errors.New("kube-apiserver is not running")
	}
	apiserver.signalGroup(syscall.SIGSTOP)
	var once sync.Once
	return func() { once.Do(func() { apiserver.signalGroup(syscall.SIGCONT) }) }, nil
}
