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
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
)

// realNodeTools are the programs a real node runs, from the host's
// packages (hack/node-packages.sh installs them on Debian).
var realNodeTools = []string{
	"containerd", "containerd-shim-runc-v2", "ctr", "runc",
	"ip", "nsenter", "iptables", "iptables-restore", "ip6tables",
}

// realNodeBinaries are the binaries of BinDir a real node adds to the
// control plane's (hack/kube-bins.sh builds them).
var realNodeBinaries = []string{"kubelet", "kube-proxy", "coredns"}

// cniPlugins are the CNI plugins the pod network uses.
var cniPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// RealNodeSupport reports why real nodes cannot run on this machine, or
// nil when they can. binDir is the directory of the cluster's binaries;
// empty means the result of BinDir(). The error lists everything missing,
// and how to get it.
func RealNodeSupport(binDir string) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("real nodes need Linux, not %s", runtime.GOOS)
	}
	var missing []string
	if uid := os.Geteuid(); uid != 0 {
		missing = append(missing, fmt.Sprintf("root: real nodes create network namespaces, cgroups and mounts, and this process runs as uid %d", uid))
	} else if err := unix.Access(netnsDir, unix.W_OK); err != nil && !errors.Is(err, os.ErrNotExist) {
		missing = append(missing, fmt.Sprintf("write access to %s: %v", netnsDir, err))
	}
	var tools []string
	for _, tool := range realNodeTools {
		if _, err := exec.LookPath(tool); err != nil {
			tools = append(tools, tool)
		}
	}
	for _, plugin := range cniPlugins {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			tools = append(tools, filepath.Join(cniBinDir, plugin))
		}
	}
	if len(tools) > 0 {
		missing = append(missing, fmt.Sprintf("%s (run hack/node-packages.sh)", strings.Join(tools, ", ")))
	}
	if binDir == "" {
		dir, err := BinDir()
		if err != nil {
			missing = append(missing, err.Error())
		}
		binDir = dir
	}
	if binDir != "" {
		var bins []string
		for _, b := range realNodeBinaries {
			if info, err := os.Stat(filepath.Join(binDir, b)); err != nil || info.Mode().Perm()&0o111 == 0 {
				bins = append(bins, b)
			}
		}
		if len(bins) > 0 {
			missing = append(missing, fmt.Sprintf("%s in %s (run `make kube-bins`)", strings.Join(bins, ", "), binDir))
		}
	}
	if _, err := cgroupMounts(); err != nil {
		missing = append(missing, "cgroups: "+err.Error())
	}
	if len(missing) > 0 {
		return fmt.Errorf("real nodes cannot run here; missing: %s", strings.Join(missing, "; "))
	}
	return nil
}

// prepareRealNodes checks that real nodes can run, marks the directory for
// the sweep, records the sysctls the kubelet will change, and sets up the
// cluster's network.
func (c *Cluster) prepareRealNodes(ctx context.Context) error {
	if err := RealNodeSupport(c.opts.BinDir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, realMarker), []byte(c.id+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the real-node marker: %w", err)
	}
	if err := registerRealCluster(c.id, c.dir); err != nil {
		return fmt.Errorf("registering the cluster's real nodes: %w", err)
	}
	if err := recordSysctls(); err != nil {
		return fmt.Errorf("recording the sysctls the kubelet changes: %w", err)
	}
	for i := range c.opts.RealNodes {
		name := fmt.Sprintf("node-%d", i)
		c.nodes = append(c.nodes, &Node{
			Name:    name,
			IP:      nodeIP(i),
			index:   i,
			cluster: c,
			dir:     filepath.Join(c.dir, "nodes", name),
			netns:   cgroupPrefix(c.id) + name,
		})
	}
	return c.setUpNetwork(ctx)
}

// startRealNodes starts CoreDNS, the nodes (in parallel) and the volume
// provisioner, and waits for the nodes to be Ready.
func (c *Cluster) startRealNodes(ctx context.Context, clientset kubernetes.Interface) error {
	if err := c.startDNS(ctx, clientset); err != nil {
		return err
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.start(ctx, c.opts.Images) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	volumeDirs := map[string]string{}
	for _, n := range c.nodes {
		volumeDirs[n.Name] = filepath.Join(n.dir, "volumes")
	}
	logFile, err := os.OpenFile(filepath.Join(c.dir, "logs", "provisioner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("creating the provisioner's log: %w", err)
	}
	if c.provisioner, err = startProvisioner(ctx, clientset, volumeDirs, logFile); err != nil {
		_ = logFile.Close()
		return err
	}
	var kubelet *process
	if len(c.nodes) > 0 {
		c.nodes[0].mu.Lock()
		kubelet = c.nodes[0].kubelet
		c.nodes[0].mu.Unlock()
	}
	return c.waitFor(ctx, "the real nodes to be Ready", workloadTimeout, kubelet, func(ctx context.Context) error {
		return nodesReady(ctx, clientset, realNodeLabelValue, len(c.nodes))
	})
}
