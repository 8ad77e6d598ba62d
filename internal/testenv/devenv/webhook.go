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

package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// LocalWebhookConfiguration names the webhook configuration that sends the
// local cluster's admission requests to an operator StartOperator started.
// It differs from the chart's, so that a test may install the chart beside it.
const LocalWebhookConfiguration = "steward-local-validating-webhook-configuration"

// registerWebhooks applies the webhook configuration of config/webhook,
// named LocalWebhookConfiguration and calling https://127.0.0.1:port instead
// of a Service. Its caBundle is left to the operator, which sets it when it
// provisions its certificate.
func registerWebhooks(ctx context.Context, c *localcluster.Cluster, port int) error {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(root, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return fmt.Errorf("reading the webhook configuration: %w", err)
	}
	defer func() { _ = f.Close() }()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		err := dec.Decode(&cfg)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the webhook configuration: %w", err)
		}
		if cfg.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		cfg.Name = LocalWebhookConfiguration
		for i := range cfg.Webhooks {
			path := ""
			if svc := cfg.Webhooks[i].ClientConfig.Service; svc != nil && svc.Path != nil {
				path = *svc.Path
			}
			url := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
			cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		}
		data, err := json.Marshal(&cfg)
		if err != nil {
			return err
		}
		if _, err := Kubectl(ctx, c, data, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
			return fmt.Errorf("registering the webhooks: %w", err)
		}
	}
}
