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

package manager

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/webhook"
	"github.com/steward-dev/steward/internal/webhook/servingcert"
)

// WebhookOptions configure the admission webhook server. Every replica
// serves it, leader or not.
type WebhookOptions struct {
	// Port is the webhook server's port; 0 turns the webhooks off.
	Port int
	// Host is the address the server listens on; empty means every one.
	Host string
	// CertDir holds tls.crt and tls.key. When they are missing, Steward
	// provisions them (see package servingcert).
	CertDir string
	// ConfigurationName is the ValidatingWebhookConfiguration whose
	// caBundle Steward sets when it provisions the certificate.
	ConfigurationName string
	// ServiceName and ServiceNamespace name the Service in front of the
	// webhook server, which the certificate is issued for. In a pod the
	// namespace defaults to the pod's.
	ServiceName, ServiceNamespace string
	// CertSecretName is the Secret in ServiceNamespace through which the
	// replicas share the provisioned certificate; empty means none.
	CertSecretName string
}

// DefaultWebhookOptions are the flags' defaults. DefaultOptions leave the
// webhooks off, so that tests can start managers side by side.
func DefaultWebhookOptions() WebhookOptions {
	return WebhookOptions{
		Port:              ctrlwebhook.DefaultPort,
		CertDir:           filepath.Join(os.TempDir(), "steward-webhook-certs"),
		ConfigurationName: "steward-validating-webhook-configuration",
		ServiceName:       "steward-webhook",
		ServiceNamespace:  podNamespace(),
		CertSecretName:    "steward-webhook-cert",
	}
}

// podNamespace is the namespace of the pod the process runs in, or "".
func podNamespace() string {
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;patch,resourceNames=steward-validating-webhook-configuration,roleName=steward-manager-cluster
// The certificate Secret, in the operator's own namespace: get and update by
// name; create cannot be limited to a name (the object does not exist yet).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;update,resourceNames=steward-webhook-cert,namespace=steward-system,roleName=steward-webhook-cert
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=steward-system,roleName=steward-webhook-cert

// webhookServer provisions the serving certificate if needed and returns
// the server, or nil when the webhooks are off.
func webhookServer(cfg *rest.Config, opts WebhookOptions, enableHTTP2 bool) (ctrlwebhook.Server, error) {
	if opts.Port == 0 {
		return nil, nil
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the webhook certificate client: %w", err)
	}
	names := []string{"localhost"}
	if opts.ServiceName != "" && opts.ServiceNamespace != "" {
		svc := opts.ServiceName + "." + opts.ServiceNamespace
		names = append([]string{svc + ".svc", svc + ".svc.cluster.local", svc}, names...)
	}
	p := &servingcert.Provisioner{
		Client:               c,
		CertDir:              opts.CertDir,
		DNSNames:             names,
		IPs:                  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		WebhookConfiguration: opts.ConfigurationName,
		Log:                  ctrl.Log.WithName("webhook-certificate"),
	}
	if opts.ServiceNamespace != "" {
		p.SecretNamespace, p.SecretName = opts.ServiceNamespace, opts.CertSecretName
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Ensure(ctx); err != nil {
		return nil, err
	}
	if err := metrics.RegisterWebhookCertificate(filepath.Join(opts.CertDir, servingcert.CertName)); err != nil {
		return nil, err
	}
	return ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir, TLSOpts: tlsOptions(enableHTTP2),
	}), nil
}

// setupWebhooks registers the webhooks. readyChecks adds one that passes
// once the server serves, so that a replica gets traffic only then.
func setupWebhooks(mgr ctrl.Manager, opts WebhookOptions) error {
	if opts.Port == 0 {
		return nil
	}
	if err := webhook.SetupAppConfigWebhook(mgr); err != nil {
		return fmt.Errorf("setting up the AppConfig webhook: %w", err)
	}
	if err := webhook.SetupAppStackWebhook(mgr); err != nil {
		return fmt.Errorf("setting up the AppStack webhook: %w", err)
	}
	if err := webhook.SetupDatabaseWebhook(mgr); err != nil {
		return fmt.Errorf("setting up the Database webhook: %w", err)
	}
	return nil
}
