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

// Command demo shows Steward's main job end to end on a local cluster it
// starts itself, and stops everything it started (with --keep, it leaves
// it all running until Ctrl-C).
//
// Where the machine allows it (root on Linux, with containerd and the other
// parts of hack/node-packages.sh), the cluster has two real nodes: the
// images are built from Debian's packages, Steward runs in the cluster from
// its own image, installed by its Helm chart, and the demo shows the data
// plane working: a row written through a Database's read-write Service and
// read back from a replica, a key in a Cache, a page from a WebApp.
// Elsewhere the cluster has kwok's fake nodes, on which no container runs:
// Steward then runs as a local process and the demo shows the objects it
// manages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/steward-dev/steward/internal/build/images"
	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// config is what the flags set.
type config struct {
	keep        bool
	nodes       string
	operatorBin string
	samples     string
	realSamples string
}

func main() {
	root, _ := localcluster.RepoRoot() // relative paths when run elsewhere
	var cfg config
	flag.BoolVar(&cfg.keep, "keep", false, "Keep the cluster and the operator running until Ctrl-C.")
	flag.StringVar(&cfg.nodes, "nodes", "auto", "real: two real nodes that run containers (needs root on Linux); kwok: fake nodes; auto: real where the machine allows it.")
	flag.StringVar(&cfg.operatorBin, "operator", filepath.Join(root, "bin", "steward"), "The steward binary; built when missing.")
	flag.StringVar(&cfg.samples, "samples", "config/samples", "Kustomization of the samples to apply on fake nodes.")
	flag.StringVar(&cfg.realSamples, "real-samples", "config/samples-real-node", "Kustomization of the samples to apply on real nodes.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demo prints the steps, each with the time since the start.
type demo struct {
	began time.Time
}

func (d *demo) step(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(d.began).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config) (err error) {
	d := &demo{began: time.Now()}
	if _, statErr := os.Stat(cfg.operatorBin); errors.Is(statErr, os.ErrNotExist) {
		d.step("Building the operator")
		if cfg.operatorBin, err = devenv.BuildOperator(ctx, filepath.Dir(cfg.operatorBin)); err != nil {
			return err
		}
	}

	var unavailable error
	switch cfg.nodes {
	case "real":
	case "kwok":
		unavailable = errors.New("-nodes=kwok")
	case "auto":
		unavailable = localcluster.RealNodeSupport("")
	default:
		return fmt.Errorf("-nodes must be auto, real or kwok, not %q", cfg.nodes)
	}
	var archives []string
	if unavailable == nil {
		d.step("Building the images: PostgreSQL, MariaDB, Redis, memcached, nginx, the demo application (nginx with psql and redis-cli) and pause from Debian's packages, and Steward's own (cached in bin/images)")
		if archives, err = buildImages(ctx, cfg.operatorBin); err != nil {
			if cfg.nodes == "real" {
				return err
			}
			unavailable = err
		}
	}
	if unavailable != nil {
		if cfg.nodes == "real" {
			return unavailable
		}
		d.step("Cluster mode: kwok's fake nodes, which run no container (%v)", unavailable)
		return d.runKwok(ctx, cfg)
	}
	d.step("Cluster mode: two real nodes, each with containerd, runc, a kubelet and kube-proxy, whose pods run real containers")
	return d.runReal(ctx, cfg, archives)
}

// buildImages builds the images every cluster loads into bin/images and
// returns the archives.
func buildImages(ctx context.Context, operatorBin string) ([]string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	version, err := images.ChartAppVersion(filepath.Join(root, "charts", "steward", "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	results, err := images.Build(ctx, images.Options{
		Out:           filepath.Join(root, "bin", "images"),
		StewardBinary: operatorBin,
		Version:       version,
		ModuleDir:     root,
	}, images.ClusterShorts(version))
	if err != nil {
		return nil, fmt.Errorf("building the images: %w", err)
	}
	var archives []string
	for _, r := range results {
		archives = append(archives, r.File)
	}
	return archives, nil
}

// stewardImage is the name of Steward's image among the built ones.
func stewardImage() (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	version, err := images.ChartAppVersion(filepath.Join(root, "charts", "steward", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	return images.StewardName + ":" + version, nil
}

// runReal runs the demo on two real nodes, with the operator installed in
// the cluster by its Helm chart.
func (d *demo) runReal(ctx context.Context, cfg config, archives []string) (err error) {
	helm, err := devenv.HelmBinary()
	if err != nil {
		return err
	}
	image, err := stewardImage()
	if err != nil {
		return err
	}
	d.step("Starting a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, CoreDNS and two real nodes, in network namespaces of their own")
	cluster, err := localcluster.Start(ctx, localcluster.Options{RealNodes: 2, Images: archives})
	if err != nil {
		return err
	}
	defer func() {
		d.step("Stopping the cluster: every container, mount, cgroup and network namespace goes")
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	d.step("Installing Steward with its Helm chart: two replicas of %s, leader election, the webhook served through its Service", image)
	if err := devenv.InstallOperator(ctx, cluster, helm, image); err != nil {
		return err
	}
	if err := d.showRejection(ctx, cluster); err != nil {
		return err
	}
	if err := d.applySamples(ctx, cluster, cfg.realSamples, 10*time.Minute); err != nil {
		return err
	}
	out, err := devenv.Kubectl(ctx, cluster, nil, "get", "pods", "--all-namespaces", "-o", "wide")
	if err != nil {
		return err
	}
	fmt.Print("\n" + out + "\n")

	d.step("The data plane, checked with real clients in pods of their own")
	for _, check := range devenv.DataPlaneChecks {
		fmt.Printf("\n  %s\n", check.What)
		out, err := check.Run(ctx, cluster)
		if err != nil {
			return fmt.Errorf("%s: %w", check.What, err)
		}
		if !strings.Contains(out, check.Want) {
			return fmt.Errorf("%s: the client saw %q, without %q", check.What, out, check.Want)
		}
		fmt.Print(indent(out, "    "))
	}
	fmt.Println()

	if cfg.keep {
		fmt.Printf("Everything keeps running. In another shell:\n\n  export KUBECONFIG=%s\n  %s get steward,statefulsets,deployments,services,pvc,pods -o wide\n\nThe nodes' network namespaces, for clients of Service and pod addresses:\n",
			cluster.Kubeconfig(), cluster.KubectlPath())
		for _, n := range cluster.Nodes() {
			fmt.Printf("  %s: nsenter --net=%s -- psql -h <ClusterIP> ...\n", n.Name, n.NetNS())
		}
		fmt.Printf("\nPress Ctrl-C to stop.\n\n")
		<-ctx.Done()
		return nil
	}
	return ctx.Err()
}

// runKwok runs the demo on kwok's fake nodes, with the operator as a local
// process.
func (d *demo) runKwok(ctx context.Context, cfg config) (err error) {
	d.step("Starting a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
	cluster, err := localcluster.Start(ctx, localcluster.Options{Full: true})
	if err != nil {
		return err
	}
	defer func() {
		d.step("Stopping the cluster")
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	d.step("Installing the CRDs")
	if err := devenv.InstallCRDs(ctx, cluster); err != nil {
		return err
	}

	logPath := filepath.Join(cluster.Dir(), "steward.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	d.step("Starting the operator (log: %s)", logPath)
	operator, err := devenv.StartOperator(ctx, cluster, cfg.operatorBin, logFile, "--log-format=console")
	if err != nil {
		return err
	}
	defer func() {
		d.step("Stopping the operator")
		if stopErr := operator.Stop(30 * time.Second); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	if err := d.showRejection(ctx, cluster); err != nil {
		return err
	}
	if err := d.applySamples(ctx, cluster, cfg.samples, 3*time.Minute); err != nil {
		return err
	}
	if cfg.keep {
		fmt.Printf("Everything keeps running. In another shell:\n\n  export KUBECONFIG=%s\n  %s get steward,statefulsets,deployments,services,pvc,pods\n\nMetrics:\n\n  curl -k -H \"Authorization: Bearer $(%s create token %s)\" %s\n\nPress Ctrl-C to stop.\n\n",
			cluster.Kubeconfig(), cluster.KubectlPath(), cluster.KubectlPath(), devenv.MetricsScraper, operator.MetricsURL)
		<-ctx.Done()
		return nil
	}
	return ctx.Err()
}

// showRejection applies an AppConfig that only the admission webhook can
// find wrong, and prints the rejection.
func (d *demo) showRejection(ctx context.Context, cluster *localcluster.Cluster) error {
	d.step("Applying an AppConfig whose data has a reference cycle: the admission webhook rejects it")
	_, rejected := devenv.Kubectl(ctx, cluster, []byte(devenv.InvalidAppConfig), "apply", "-f", "-")
	if rejected == nil {
		return errors.New("the AppConfig webhook admitted a reference cycle")
	}
	fmt.Printf("\n%v\n\n", rejected)
	return nil
}

// applySamples applies a kustomization of samples, waits until every one
// is Ready and prints them.
func (d *demo) applySamples(ctx context.Context, cluster *localcluster.Cluster, samples string, timeout time.Duration) error {
	d.step("Applying the samples from %s", samples)
	if _, err := devenv.Kubectl(ctx, cluster, nil, "apply", "-k", samples); err != nil {
		return err
	}
	d.step("Waiting until every sample is Ready")
	const kinds = "webapps,databases,caches,appconfigs,appstacks"
	if _, err := devenv.Kubectl(ctx, cluster, nil, "wait", "--for=condition=Ready", kinds, "--all", "--all-namespaces",
		fmt.Sprintf("--timeout=%ds", int(timeout.Seconds()))); err != nil {
		out, _ := devenv.Kubectl(ctx, cluster, nil, "get", kinds, "--all-namespaces")
		return fmt.Errorf("%w\n%s", err, out)
	}
	d.step("Every sample is Ready")
	out, err := devenv.Kubectl(ctx, cluster, nil, "get", kinds, "--all-namespaces", "-o", "wide")
	if err != nil {
		return err
	}
	fmt.Print("\n" + out + "\n")
	return nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}
