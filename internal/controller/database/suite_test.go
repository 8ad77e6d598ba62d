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

package database_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

const timeout = 20 * time.Second

var (
	// k8s is the tests' own client.
	k8s client.Client
	// operator is the operator under test; tests may restart it.
	operator *runningOperator
	// logs holds everything the operator logged, at every level.
	logs = &syncBuffer{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A fuzz run needs no API server: the fuzz targets are pure, and each
	// fuzz worker runs TestMain too and is killed before it could stop one.
	if apitest.FuzzOnly() {
		return m.Run()
	}
	// Before anything logs: a logger not set within 30 s of the first
	// use (an API server slow to start on a loaded machine) is replaced
	// for good by one that drops everything, and the checks below read
	// the operator's log.
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true), zap.Level(zapcore.Level(zapLevelAll))))
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

	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operator, err = startOperator(env.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := operator.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		code = 1
	}
	if err := secretsNeverShown(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	return code
}

// runningOperator is a manager started in the background.
type runningOperator struct {
	cfg    *rest.Config
	cancel context.CancelFunc
	done   chan error
	err    error
	once   sync.Once
}

func startOperator(cfg *rest.Config) (*runningOperator, error) {
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	opts.InstanceImage = "steward:test"
	opts.SkipControllerNameValidation = true
	opts.DatabaseInstances = fakes
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &runningOperator{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { o.done <- mgr.Start(ctx) }()
	return o, nil
}

func (o *runningOperator) stop() error {
	o.once.Do(func() {
		o.cancel()
		o.err = <-o.done
	})
	return o.err
}

// restart stops the operator and starts a new one, as a new pod would.
func (o *runningOperator) restart(t *testing.T) {
	t.Helper()
	if err := o.stop(); err != nil {
		t.Fatalf("stopping the operator: %v", err)
	}
	next, err := startOperator(o.cfg)
	if err != nil {
		t.Fatalf("starting the operator again: %v", err)
	}
	o.cancel, o.done, o.err, o.once = next.cancel, next.done, nil, sync.Once{}
}

// secretsNeverShown looks for every password Steward generated or was
// given, in every namespace, in the operator's logs, in events and in the
// Databases' status.
func secretsNeverShown() error {
	ctx := context.Background()
	secrets := &corev1.SecretList{}
	if err := k8s.List(ctx, secrets); err != nil {
		return err
	}
	var passwords []string
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if strings.Contains(k, "password") && len(v) >= 8 {
				passwords = append(passwords, string(v))
			}
		}
	}
	if len(passwords) == 0 {
		return fmt.Errorf("no passwords found to look for: the check would prove nothing")
	}
	evs := &eventsv1.EventList{}
	if err := k8s.List(ctx, evs); err != nil {
		return err
	}
	dbs := &v1alpha1.DatabaseList{}
	if err := k8s.List(ctx, dbs); err != nil {
		return err
	}
	var shown strings.Builder
	shown.WriteString(logs.String())
	for _, e := range evs.Items {
		shown.WriteString(e.Note)
	}
	for _, d := range dbs.Items {
		fmt.Fprintf(&shown, "%+v", d.Status)
	}
	text := shown.String()
	if !strings.Contains(text, "Starting Controller") {
		return fmt.Errorf("the operator's log is empty: the check would prove nothing")
	}
	for _, p := range passwords {
		if strings.Contains(text, p) {
			return fmt.Errorf("a password appears in the operator's logs, events or status")
		}
	}
	fmt.Fprintf(os.Stderr, "checked %d passwords against %d bytes of logs, events and status\n", len(passwords), len(text))
	return nil
}

// zapLevelAll logs at every verbosity.
const zapLevelAll = -10

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
