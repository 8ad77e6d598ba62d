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

// Package e2e runs Steward on a full local cluster (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok's fake nodes) and drives
// it with kubectl, the way a new user would.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

var (
	cluster  *localcluster.Cluster
	operator *devenv.Operator
	// operatorLog is where the operator writes, and restarts of it go on
	// writing.
	operatorLog *os.File
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "e2e set-up:", err)
		return 1
	}

	dir, err := os.MkdirTemp("", "steward-e2e-*")
	if err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, err := devenv.BuildOperator(ctx, dir)
	if err != nil {
		return fail(err)
	}

	cluster, err = localcluster.Start(ctx, localcluster.Options{Full: true, JobPodsRunUntilTold: true})
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	if err := devenv.InstallCRDs(ctx, cluster); err != nil {
		return fail(err)
	}

	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return fail(err)
	}
	operatorLog = logFile
	operator, err = devenv.StartOperator(ctx, cluster, bin, logFile,
		"--leader-elect=true", "--leader-election-lease-duration=4s",
		"--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s")
	if err != nil {
		return fail(err)
	}
	code = m.Run()

	// Graceful shutdown: SIGTERM ends the operator cleanly and promptly,
	// and it releases its Lease so that a successor takes over at once.
	if err := operator.Stop(20 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "operator shutdown:", err)
		code = 1
	}
	holder, err := devenv.Kubectl(ctx, cluster, nil, "--namespace=default", "get", "lease", "steward.steward.dev", "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil || holder != "" {
		fmt.Fprintf(os.Stderr, "the Lease was not released on shutdown: holder %q, %v\n", holder, err)
		code = 1
	}
	if code != 0 {
		if log, err := os.ReadFile(logFile.Name()); err == nil {
			fmt.Fprintf(os.Stderr, "operator log (tail):\n%s\n", tail(string(log), 60))
		}
	}
	return code
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// kubectl runs kubectl and fails the test on error.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	out, err := devenv.Kubectl(ctx, cluster, in, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlMayFail runs kubectl and returns its output and error, for
// commands whose failure is an answer (kubectl auth can-i exits 1 on "no").
func kubectlMayFail(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return devenv.Kubectl(ctx, cluster, nil, args...)
}

// eventually polls check until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
