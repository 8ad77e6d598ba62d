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

// Package apitest starts a real API server (etcd and kube-apiserver, through
// controller-runtime's envtest) with Steward's CRDs installed, for tests of
// controller behaviour that need no scheduler, kubelet or garbage collector.
package apitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// Environment is a running API server.
type Environment struct {
	env *envtest.Environment
	// Config is an admin client configuration for the server.
	Config *rest.Config
}

// Start starts etcd and kube-apiserver and installs the CRDs from config/crd.
func Start() (*Environment, error) {
	return start(false)
}

// StartWithWebhooks is Start, and also installs the webhook configurations
// from config/webhook, rewritten to call a webhook server on this machine:
// start one on WebhookOptions, e.g. a manager's with
// ctrl.Options{WebhookServer: webhook.NewServer(env.WebhookOptions())}.
// Until it serves, writes of the kinds the webhooks check fail.
func StartWithWebhooks() (*Environment, error) {
	return start(true)
}

func start(webhooks bool) (*Environment, error) {
	bins := os.Getenv("KUBEBUILDER_ASSETS")
	if bins == "" {
		dir, err := localcluster.BinDir()
		if err != nil {
			return nil, err
		}
		bins = dir
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bins,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		CRDInstallOptions:     envtest.CRDInstallOptions{MaxTime: startTimeout},
		ErrorIfCRDPathMissing: true,
		// envtest's defaults (20 seconds to start, 10 to establish the
		// CRDs) are too short on a shared machine under load.
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(root, "config", "webhook")},
			LocalServingHost: "127.0.0.1",
			MaxTime:          startTimeout,
		}
	}
	began := time.Now()
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver and installing the CRDs (gave up after %v, %s; each step may take %v): %w",
			time.Since(began).Round(time.Second), localcluster.LoadAverage(), startTimeout, err)
	}
	return &Environment{env: env, Config: cfg}, nil
}

// startTimeout bounds each step of Start: etcd, kube-apiserver, the CRDs.
const startTimeout = 3 * time.Minute

// WebhookOptions are where the webhook configurations StartWithWebhooks
// installed send their requests, and the serving certificate the API server
// trusts.
func (e *Environment) WebhookOptions() webhook.Options {
	o := e.env.WebhookInstallOptions
	return webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir}
}

// Stop stops the API server and etcd.
func (e *Environment) Stop() error {
	return e.env.Stop()
}

// Eventually polls check every 50ms until it returns nil, and fails the test
// with check's last error when timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, check func() error) {
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
		time.Sleep(50 * time.Millisecond)
	}
}

// Namespace creates a namespace named after the test, for its objects.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	name = strings.ReplaceAll(name, "_", "-")
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// RollOutStatefulSet plays the StatefulSet controller's part, which an API
// server alone does not run: every replica of the StatefulSet at key runs
// the current template (revision r1), and ready of them are ready (all
// when ready is negative).
func RollOutStatefulSet(t testing.TB, c client.Client, timeout time.Duration, key client.ObjectKey, ready int32) {
	t.Helper()
	Eventually(t, timeout, func() error {
		sts := &appsv1.StatefulSet{}
		if err := c.Get(context.Background(), key, sts); err != nil {
			return err
		}
		n := *sts.Spec.Replicas
		if ready < 0 {
			ready = n
		}
		sts.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: sts.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: ready,
			AvailableReplicas: ready, CurrentReplicas: n, CurrentRevision: "r1", UpdateRevision: "r1",
		}
		return c.Status().Update(context.Background(), sts)
	})
}

// MarkDatabaseReady rolls out the StatefulSet of the Database at key, as
// its controller would once every instance is ready, and waits until the
// Database controller calls the Database Ready for its current generation.
// Writing the Ready condition directly instead would race with that
// controller's own status write, which puts it back.
func MarkDatabaseReady(t testing.TB, c client.Client, timeout time.Duration, key client.ObjectKey) {
	t.Helper()
	RollOutStatefulSet(t, c, timeout, key, -1)
	Eventually(t, timeout, func() error {
		db := &v1alpha1.Database{}
		if err := c.Get(context.Background(), key, db); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(db.Status.Conditions, v1alpha1.ConditionReady) || db.Status.ObservedGeneration != db.Generation {
			return fmt.Errorf("the Database %s is not Ready: %+v", key.Name, db.Status.Conditions)
		}
		return nil
	})
}
