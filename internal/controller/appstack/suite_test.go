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

package appstack_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	record "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/appstack"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// These tests run the AppStack controller alone against a real API server.
// The controllers of the components are not running: the tests play them,
// setting each component's Ready condition, so that every step of the
// ordering is under the test's control.

var k8s client.Client

// recorder is the suite controller's event recorder, for a test that runs
// a reconciler of its own.
var recorder record.EventRecorder

// ownReconciler labels the stacks a test reconciles with a reconciler of
// its own: the suite's controller does not see them.
const ownReconciler = "test.steward.dev/own-reconciler"

// serviceMonitors is what the reconciler is told about the ServiceMonitor kind.
var serviceMonitors atomic.Bool

const timeout = 30 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
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
	notOwn, err := labels.Parse("!" + ownReconciler)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  manager.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{ByObject: map[client.Object]cache.ByObject{&v1alpha1.AppStack{}: {Label: notOwn}}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	recorder = mgr.GetEventRecorder("steward")
	r := &appstack.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder,
		HasServiceMonitors: serviceMonitors.Load,
	}
	if err := r.SetupWithManager(mgr, ctrlOptions()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

func eventually(t *testing.T, check func() error) {
	t.Helper()
	apitest.Eventually(t, timeout, check)
}

func namespace(t *testing.T) string {
	t.Helper()
	return apitest.Namespace(t, k8s)
}

// setReady plays a component's controller: it sets the object's Ready
// condition for its current generation.
func setReady(t *testing.T, obj client.Object, ready bool, reason string) {
	t.Helper()
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: reason, ObservedGeneration: obj.GetGeneration()}
		if ready {
			cond.Status = metav1.ConditionTrue
		}
		switch o := obj.(type) {
		case *v1alpha1.Database:
			o.Status.ObservedGeneration = o.Generation
			meta.SetStatusCondition(&o.Status.Conditions, cond)
		case *v1alpha1.Cache:
			o.Status.ObservedGeneration = o.Generation
			meta.SetStatusCondition(&o.Status.Conditions, cond)
		case *v1alpha1.WebApp:
			o.Status.ObservedGeneration = o.Generation
			meta.SetStatusCondition(&o.Status.Conditions, cond)
		case *v1alpha1.AppConfig:
			o.Status.ObservedGeneration = o.Generation
			if ready && o.Status.CurrentRevision == "" {
				o.Status.CurrentRevision = "0123456789" // rendered
			}
			meta.SetStatusCondition(&o.Status.Conditions, cond)
		}
		return k8s.Status().Update(context.Background(), obj)
	})
}

func ctrlOptions() controller.Options { return controller.Options{SkipNameValidation: new(true)} }
