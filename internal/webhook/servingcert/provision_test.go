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

package servingcert_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/internal/testenv/apitest"
	"github.com/steward-dev/steward/internal/webhook/servingcert"
)

var k8s client.Client

func TestMain(m *testing.M) {
	env, err := apitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the API server:", err)
	}
	os.Exit(code)
}

func webhookConfiguration(t *testing.T, name string) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vappconfig.steward.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: "steward-system", Name: "steward-webhook", Path: new("/validate")},
			},
		}},
	}
	if err := k8s.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

func caBundle(t *testing.T, name string) string {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &cfg); err != nil {
		t.Fatal(err)
	}
	return string(cfg.Webhooks[0].ClientConfig.CABundle)
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestReplicasShareOneCertificateThroughTheSecret(t *testing.T) {
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	webhookConfiguration(t, "shared")
	names := []string{"steward-webhook." + ns + ".svc", "localhost"}
	replica := func(dir string, dnsNames []string) *servingcert.Provisioner {
		return &servingcert.Provisioner{
			Client: k8s, CertDir: dir, DNSNames: dnsNames,
			SecretNamespace: ns, SecretName: "steward-webhook-cert",
			WebhookConfiguration: "shared", Log: logr.Discard(),
		}
	}

	first, second := t.TempDir(), t.TempDir()
	for _, dir := range []string{first, second} {
		if provisioned, err := replica(dir, names).Ensure(ctx); err != nil || !provisioned {
			t.Fatalf("Ensure = %v, %v; want true, nil", provisioned, err)
		}
	}
	if read(t, first, "tls.crt") != read(t, second, "tls.crt") {
		t.Error("the replicas serve different certificates")
	}
	ca := read(t, first, "ca.crt")
	if got := caBundle(t, "shared"); got != ca {
		t.Errorf("caBundle is not the CA:\n%s\nwant\n%s", got, ca)
	}
	var secret corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "steward-webhook-cert"}, &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS || string(secret.Data["tls.crt"]) != read(t, first, "tls.crt") {
		t.Errorf("the Secret is not the certificate the replicas serve: %s", secret.Type)
	}
	if _, err := os.Stat(filepath.Join(first, "ca.key")); err == nil {
		t.Error("the CA key was written into the certificate directory")
	}

	// A replica started for another service name renews the certificate
	// from the same CA, so the caBundle stays.
	third := t.TempDir()
	if _, err := replica(third, append(names, "steward-webhook-2."+ns+".svc")).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if read(t, third, "tls.crt") == read(t, first, "tls.crt") {
		t.Error("the certificate was not renewed for the new name")
	}
	if read(t, third, "ca.crt") != ca || caBundle(t, "shared") != ca {
		t.Error("renewal changed the CA")
	}

	// Files already in the directory are used as they are.
	if provisioned, err := replica(first, []string{"elsewhere"}).Ensure(ctx); err != nil || provisioned {
		t.Errorf("Ensure with files present = %v, %v; want false, nil", provisioned, err)
	}
}

func TestWithoutSecretEachProcessGeneratesItsOwn(t *testing.T) {
	ctx := context.Background()
	webhookConfiguration(t, "local")
	dir := t.TempDir()
	p := &servingcert.Provisioner{Client: k8s, CertDir: filepath.Join(dir, "certs"), DNSNames: []string{"localhost"},
		WebhookConfiguration: "local", Log: logr.Discard()}
	if _, err := p.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if got := caBundle(t, "local"); got != read(t, p.CertDir, "ca.crt") {
		t.Error("caBundle is not the generated CA")
	}
	p.WebhookConfiguration, p.CertDir = "absent", filepath.Join(dir, "other")
	if _, err := p.Ensure(ctx); err != nil {
		t.Errorf("a missing webhook configuration is an error: %v", err)
	}
}
