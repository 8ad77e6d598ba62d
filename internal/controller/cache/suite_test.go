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

package cache_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// k8s is the tests' own client.
var k8s client.Client

const timeout = 20 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts an API server and the operator's manager, with every
// controller, for the tests.
func run(m *testing.M) int {
	// A fuzz run needs no API server: the fuzz targets are pure, and each
	// fuzz worker runs TestMain too and is killed before it could stop one.
	if apitest.FuzzOnly() {
		return m.Run()
	}
	env, err := apitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()

	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

// eventually polls check until it returns nil or the timeout passes.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	apitest.Eventually(t, timeout, check)
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	return apitest.Namespace(t, k8s)
}
