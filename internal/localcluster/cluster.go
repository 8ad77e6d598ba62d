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
	"os/exec"
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
	if o.Nodes < 0 || o.ControllerManagerQPS < 0 || o.ControllerManagerBurst < 0 {
		return o, errors.New("negative Nodes, ControllerManagerQPS or ControllerManagerBurst")
	}
	if o.Nodes == 0 {
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
	opts       Options
	dir        string
	server     string
	pki        *pki
	restConfig *rest.Config
	spawner    *spawner
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
	c := &Cluster{opts: opts, dir: dir, spawner: newSpawner()}
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

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClientPort, etcdPeerPort, apiPort := ports[0], ports[1], ports[2]
	c.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	if c.pki, err = newPKI(filepath.Join(dir, "pki"), serviceIP); err != nil {
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
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	var errs []error
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

// startProcess starts one of the binaries with its output in
// logs/<name>.log (and opts.Log), records its PID and tracks it for Stop.
func (c *Cluster) startProcess(name string, args ...string) (*process, error) {
	logPath := filepath.Join(c.dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	cmd := exec.Command(filepath.Join(c.opts.BinDir, name), args...)
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
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
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

// exitedProcess returns a started process that has exited, if any.
func (c *Cluster) exitedProcess() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
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
			err := fmt.Errorf("waiting for %s: %w (last check: %w)", what, ctx.Err(), lastErr)
			if focus == nil {
				return err
			}
			return &componentError{component: focus.name, err: err, logTail: tailFile(focus.logPath)}
		case <-ticker.C:
		}
	}
}
