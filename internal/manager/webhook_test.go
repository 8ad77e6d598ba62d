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

package manager_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// TestWebhookWithProvisionedCertificate runs the operator with an empty
// certificate directory against an API server whose webhook configuration
// (config/webhook, pointed at this machine) trusts nothing yet: the
// operator must generate a certificate, set the caBundle, and serve, so
// that the API server calls it and an invalid AppConfig is rejected.
func TestWebhookWithProvisionedCertificate(t *testing.T) {
	env, err := apitest.StartWithWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	k8s, err := client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const cfgName = "steward-validating-webhook-configuration"
	var whc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(ctx, client.ObjectKey{Name: cfgName}, &whc); err != nil {
		t.Fatalf("envtest did not install config/webhook: %v", err)
	}
	// envtest trusts its own certificate; forget it.
	patch := client.MergeFrom(whc.DeepCopy())
	for i := range whc.Webhooks {
		whc.Webhooks[i].ClientConfig.CABundle = nil
	}
	if err := k8s.Patch(ctx, &whc, patch); err != nil {
		t.Fatal(err)
	}

	served := env.WebhookOptions()
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	opts.SkipControllerNameValidation = true
	opts.Webhook = manager.DefaultWebhookOptions()
	opts.Webhook.Host, opts.Webhook.Port = served.Host, served.Port
	opts.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	opts.Webhook.ServiceNamespace = "" // out of cluster: no Secret
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(opts.Webhook.CertDir, "ca.crt"))
	if err != nil {
		t.Fatalf("no certificate provisioned: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: cfgName}, &whc); err != nil {
		t.Fatal(err)
	}
	if string(whc.Webhooks[0].ClientConfig.CABundle) != string(ca) {
		t.Fatal("the caBundle is not the provisioned CA")
	}

	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	ns := apitest.Namespace(t, k8s)
	bad := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec:       v1alpha1.AppConfigSpec{Application: "shop", Environment: "dev", Data: map[string]string{"A": "${B}", "B": "${A}"}},
	}
	apitest.Eventually(t, 30*time.Second, func() error {
		err := k8s.Create(ctx, bad.DeepCopy())
		switch {
		case err == nil:
			t.Fatal("an AppConfig with a reference cycle was admitted")
		case apierrors.IsInvalid(err) && strings.Contains(err.Error(), "reference cycle A -> B -> A"):
			return nil
		}
		return err // while the server starts: connection refused
	})
}
