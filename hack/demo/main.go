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
// starts itself: it installs the CRDs, runs the operator, applies the
// samples, waits until every sample is Ready, prints them and stops
// everything it started. With --keep it leaves it all running until Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/steward-dev/steward/internal/devenv"
	"github.com/steward-dev/steward/internal/localcluster"
)

func main() {
	root, _ := localcluster.RepoRoot() // relative paths when run elsewhere
	keep := flag.Bool("keep", false, "Keep the cluster and the operator running until Ctrl-C.")
	operatorBin := flag.String("operator", filepath.Join(root, "bin", "steward"), "The steward binary; built when missing.")
	samples := flag.String("samples", "config/samples", "Kustomization of the samples to apply.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *keep, *operatorBin, *samples)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, keep bool, operatorBin, samples string) (err error) {
	began := time.Now()
	step := func(format string, args ...any) {
		fmt.Printf("[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	if _, statErr := os.Stat(operatorBin); errors.Is(statErr, os.ErrNotExist) {
		step("Building the operator")
		if operatorBin, err = devenv.BuildOperator(ctx, filepath.Dir(operatorBin)); err != nil {
			return err
		}
	}

	step("Starting a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
	cluster, err := localcluster.Start(ctx, localcluster.Options{Full: true})
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the cluster")
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	step("Installing the CRDs")
	if err := devenv.InstallCRDs(ctx, cluster); err != nil {
		return err
	}

	logPath := filepath.Join(cluster.Dir(), "steward.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	step("Starting the operator (log: %s)", logPath)
	operator, err := devenv.StartOperator(ctx, cluster, operatorBin, logFile, "--log-format=console")
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the operator")
		if stopErr := operator.Stop(30 * time.Second); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	step("Applying an AppConfig whose data has a reference cycle: the admission webhook rejects it")
	_, rejected := devenv.Kubectl(ctx, cluster, []byte(invalidAppConfig), "apply", "-f", "-")
	if rejected == nil {
		return errors.New("the AppConfig webhook admitted a reference cycle")
	}
	fmt.Printf("\n%v\n\n", rejected)

	step("Applying the samples from %s", samples)
	if _, err := devenv.Kubectl(ctx, cluster, nil, "apply", "-k", samples); err != nil {
		return err
	}

	step("Waiting until every sample is Ready")
	if _, err := devenv.Kubectl(ctx, cluster, nil, "wait", "--for=condition=Ready", "webapps,databases,caches,appconfigs,appstacks", "--all", "--all-namespaces", "--timeout=180s"); err != nil {
		return err
	}
	step("Every sample is Ready")
	out, err := devenv.Kubectl(ctx, cluster, nil, "get", "webapps,databases,caches,appconfigs,appstacks", "--all-namespaces", "-o", "wide")
	if err != nil {
		return err
	}
	fmt.Print("\n" + out + "\n")

	if keep {
		fmt.Printf("Everything keeps running. In another shell:\n\n  export KUBECONFIG=%s\n  %s get steward,statefulsets,deployments,services,pvc,pods\n\nMetrics: %s\nPress Ctrl-C to stop.\n\n",
			cluster.Kubeconfig(), cluster.KubectlPath(), operator.MetricsURL)
		<-ctx.Done()
		return nil
	}
	return ctx.Err()
}

// invalidAppConfig has a reference cycle, which only the webhook can find.
const invalidAppConfig = `apiVersion: steward.dev/v1alpha1
kind: AppConfig
metadata:
  name: demo-invalid
  namespace: default
spec:
  application: demo
  environment: dev
  data:
    URL: "https://${HOST}/"
    HOST: "${URL}.example.com"
`
