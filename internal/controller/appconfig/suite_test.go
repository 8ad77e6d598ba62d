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

package appconfig_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// These tests run the whole operator (all controllers) against a real API
// server. No kube-controller-manager runs, so the tests play the Deployment
// controller: markRolledOut reports a Deployment's rollout as complete, and
// autoRollOut does so for every Deployment of a namespace as it changes.

var (
	k8s client.Client
	cfg *rest.Config
	// auto holds the namespaces whose Deployments roll out by themselves.
	auto sync.Map
)

const timeout = 30 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

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
	cfg = env.Config
	k8s, err = client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go rollOutAutomatically(ctx)
	return m.Run()
}

// startOperator runs the operator until the test ends or stop is called.
func startOperator(t *testing.T) (stop func()) {
	t.Helper()
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	opts.SkipControllerNameValidation = true
	opts.AppConfigResync = time.Second
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("operator: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// rollOutAutomatically marks the Deployments of the namespaces in auto as
// rolled out whenever their generation moves.
func rollOutAutomatically(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		auto.Range(func(key, _ any) bool {
			list := &appsv1.DeploymentList{}
			if err := k8s.List(ctx, list, client.InNamespace(key.(string))); err != nil {
				return true
			}
			for i := range list.Items {
				d := &list.Items[i]
				if d.Status.ObservedGeneration != d.Generation {
					_ = setRolledOut(ctx, d)
				}
			}
			return true
		})
	}
}

func setRolledOut(ctx context.Context, d *appsv1.Deployment) error {
	n := int32(1)
	if d.Spec.Replicas != nil {
		n = *d.Spec.Replicas
	}
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	return k8s.Status().Update(ctx, d)
}

// markRolledOut reports the Deployment's current rollout as complete.
func markRolledOut(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		return setRolledOut(context.Background(), d)
	})
}

func eventually(t *testing.T, check func() error) {
	t.Helper()
	apitest.Eventually(t, timeout, check)
}

// namespace creates a namespace for one test; rollOut makes its
// Deployments roll out by themselves.
func namespace(t *testing.T, rollOut bool) string {
	t.Helper()
	ns := apitest.Namespace(t, k8s)
	if rollOut {
		auto.Store(ns, true)
		t.Cleanup(func() { auto.Delete(ns) })
	}
	return ns
}
