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

package metrics

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var certificateOpts = prometheus.GaugeOpts{
	Name: "steward_webhook_certificate_expiry_timestamp_seconds",
	Help: "Unix time at which the webhook server's serving certificate expires; 0 when it cannot be read.",
}

var certificateDesc = prometheus.NewDesc(certificateOpts.Name, certificateOpts.Help, nil, nil)

// RegisterWebhookCertificate exports
// steward_webhook_certificate_expiry_timestamp_seconds, the end of validity
// of the certificate in the PEM file certFile, read at every scrape so that a
// certificate renewed on disk (by cert-manager, say) is seen. Registering it
// again is not an error.
func RegisterWebhookCertificate(certFile string) error {
	err := ctrlmetrics.Registry.Register(prometheus.NewGaugeFunc(certificateOpts, func() float64 {
		notAfter, err := CertificateNotAfter(certFile)
		if err != nil {
			return 0
		}
		return float64(notAfter)
	}))
	if err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return fmt.Errorf("registering the webhook certificate metric: %w", err)
	}
	return nil
}

// CertificateNotAfter returns the Unix time at which the first certificate
// in the PEM file certFile expires.
func CertificateNotAfter(certFile string) (int64, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return 0, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return 0, fmt.Errorf("%s holds no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", certFile, err)
	}
	return cert.NotAfter.Unix(), nil
}
