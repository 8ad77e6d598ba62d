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

package servingcert

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The files in the certificate directory, the names controller-runtime's
// webhook server reads, and the keys of the Secret.
const (
	CACertName = "ca.crt"
	CAKeyName  = "ca.key"
	CertName   = "tls.crt"
	KeyName    = "tls.key"
)

// Provisioner makes sure the webhook server has a certificate the API
// server trusts.
type Provisioner struct {
	// Client reads and writes the Secret and the webhook configuration. It
	// must not be a cached client: the operator's cache does not hold them.
	Client client.Client
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
	// DNSNames and IPs are the names the serving certificate is valid for.
	DNSNames []string
	IPs      []net.IP
	// SecretNamespace and SecretName name the Secret through which the
	// replicas share one CA and certificate; empty SecretName means none,
	// and each process generates its own.
	SecretNamespace, SecretName string
	// WebhookConfiguration names the ValidatingWebhookConfiguration whose
	// caBundle is set to the CA, if it exists; empty means none.
	WebhookConfiguration string
	// Log reports what was done.
	Log logr.Logger
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Ensure provisions the certificate unless CertDir already holds tls.crt and
// tls.key, which then come from elsewhere (cert-manager, a mounted Secret)
// and are used as they are, caBundle included. Otherwise it takes the CA and
// certificate from the Secret, generating and storing them when the Secret
// is missing or its certificate does not cover the DNS names or expires
// within RenewBefore; writes them into CertDir; and sets the caBundle of the
// webhook configuration. It returns true when it provisioned.
func (p *Provisioner) Ensure(ctx context.Context) (bool, error) {
	have, err := filesExist(p.CertDir, CertName, KeyName)
	if err != nil || have {
		if have {
			p.Log.Info("Using the webhook certificate found in the certificate directory", "dir", p.CertDir)
		}
		return false, err
	}
	var b Bundle
	if p.SecretName == "" {
		if b, err = Generate(p.DNSNames, p.IPs, p.now()); err != nil {
			return false, fmt.Errorf("generating the webhook certificate: %w", err)
		}
		p.Log.Info("Generated a self-signed webhook certificate", "dnsNames", p.DNSNames)
	} else if b, err = p.fromSecret(ctx); err != nil {
		return false, err
	}
	if err := writeFiles(p.CertDir, b); err != nil {
		return false, err
	}
	if err := p.patchCABundle(ctx, b.CACert); err != nil {
		return false, err
	}
	return true, nil
}

func (p *Provisioner) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// fromSecret returns the Secret's bundle, renewed and stored if it needs to
// be. When another replica writes the Secret at the same time, its bundle
// wins and is returned.
func (p *Provisioner) fromSecret(ctx context.Context) (Bundle, error) {
	key := client.ObjectKey{Namespace: p.SecretNamespace, Name: p.SecretName}
	for attempt := 0; ; attempt++ {
		var s corev1.Secret
		err := p.Client.Get(ctx, key, &s)
		if err != nil && !apierrors.IsNotFound(err) {
			return Bundle{}, fmt.Errorf("reading the webhook certificate Secret %s: %w", key, err)
		}
		found := err == nil
		stored := Bundle{CACert: s.Data[CACertName], CAKey: s.Data[CAKeyName], Cert: s.Data[CertName], Key: s.Data[KeyName]}
		if found && stored.Verify(p.DNSNames, p.IPs, p.now()) == nil {
			p.Log.Info("Using the webhook certificate from its Secret", "secret", key)
			return stored, nil
		}
		if attempt > 0 {
			// Another replica stored a certificate this one finds unfit,
			// e.g. one started with other flags.
			return Bundle{}, fmt.Errorf("the webhook certificate Secret %s changed while it was renewed, and is still unfit", key)
		}
		renewed, reason, err := p.renew(stored)
		if err != nil {
			return Bundle{}, err
		}
		s.Data = map[string][]byte{CACertName: renewed.CACert, CAKeyName: renewed.CAKey, CertName: renewed.Cert, KeyName: renewed.Key}
		if found {
			err = p.Client.Update(ctx, &s)
		} else {
			s.ObjectMeta = metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "steward", "app.kubernetes.io/component": "webhook"}}
			s.Type = corev1.SecretTypeTLS
			err = p.Client.Create(ctx, &s)
		}
		switch {
		case err == nil:
			p.Log.Info("Stored a new webhook certificate in its Secret", "secret", key, "reason", reason, "dnsNames", p.DNSNames)
			return renewed, nil
		case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
			continue // another replica was first: read what it stored
		default:
			return Bundle{}, fmt.Errorf("storing the webhook certificate in Secret %s: %w", key, err)
		}
	}
}

// renew issues a new serving certificate from the stored CA when that CA is
// still good for a certificate's lifetime, so that the caBundle stays the
// same; otherwise it generates a new CA too.
func (p *Provisioner) renew(stored Bundle) (Bundle, string, error) {
	now := p.now()
	if ca, err := parseCert(stored.CACert); err == nil && ca.NotAfter.After(now.Add(CertValidity)) {
		if b, err := stored.Issue(p.DNSNames, p.IPs, now); err == nil {
			return b, "certificate missing, expiring or for other names", nil
		}
	}
	b, err := Generate(p.DNSNames, p.IPs, now)
	if err != nil {
		return Bundle{}, "", fmt.Errorf("generating the webhook certificate: %w", err)
	}
	return b, "no usable CA", nil
}

// patchCABundle sets the caBundle of every webhook of the configuration. A
// missing configuration is not an error: the webhook may be registered
// later, or by other means.
func (p *Provisioner) patchCABundle(ctx context.Context, ca []byte) error {
	if p.WebhookConfiguration == "" {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := p.Client.Get(ctx, client.ObjectKey{Name: p.WebhookConfiguration}, &cfg); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(cfg.DeepCopy(), client.MergeFromWithOptimisticLock{})
		changed := false
		for i := range cfg.Webhooks {
			if string(cfg.Webhooks[i].ClientConfig.CABundle) != string(ca) {
				cfg.Webhooks[i].ClientConfig.CABundle = ca
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return p.Client.Patch(ctx, &cfg, patch)
	})
	switch {
	case apierrors.IsNotFound(err):
		p.Log.Info("No webhook configuration to set the caBundle of", "name", p.WebhookConfiguration)
		return nil
	case err != nil:
		return fmt.Errorf("setting the caBundle of ValidatingWebhookConfiguration %s: %w", p.WebhookConfiguration, err)
	}
	p.Log.Info("Set the caBundle of the webhook configuration", "name", p.WebhookConfiguration)
	return nil
}

func filesExist(dir string, names ...string) (bool, error) {
	for _, name := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("looking for the webhook certificate: %w", err)
		}
	}
	return true, nil
}

// writeFiles writes the CA certificate and the serving pair into dir; the
// CA's key stays in the Secret.
func writeFiles(dir string, b Bundle) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the webhook certificate directory: %w", err)
	}
	for name, data := range map[string][]byte{CACertName: b.CACert, KeyName: b.Key, CertName: b.Cert} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing the webhook certificate: %w", err)
		}
	}
	return nil
}
