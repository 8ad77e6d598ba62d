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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The Helm release InstallOperator makes.
const (
	OperatorNamespace = "steward-system"
	OperatorRelease   = "steward"
)

// HelmBinary finds helm: $HELM, or the one `make` installs in bin/.
func HelmBinary() (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		return h, nil
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	if found, _ := filepath.Glob(filepath.Join(root, "bin", "helm-*")); len(found) > 0 {
		return found[len(found)-1], nil
	}
	return "", errors.New("no helm binary: set HELM or run `make test` or `make demo`, which install it in bin/")
}

// Helm runs helm against the cluster, with its caches and configuration in
// the cluster's directory, and returns its standard output.
func Helm(ctx context.Context, c *localcluster.Cluster, helm string, args ...string) (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	home := filepath.Join(c.Dir(), "helm")
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Env = append(cmd.Env,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// InstallOperator installs the Helm chart charts/steward, CRDs included,
// as release OperatorRelease in OperatorNamespace, running image (which the
// cluster's real nodes must already hold: nothing is pulled), with extra
// `--set` values. It returns once the Deployment is rolled out and its
// admission webhook answers.
func InstallOperator(ctx context.Context, c *localcluster.Cluster, helm, image string, set ...string) error {
	i := strings.LastIndex(image, ":")
	if i < 0 || i < strings.LastIndex(image, "/") {
		return fmt.Errorf("image %q has no tag", image)
	}
	repo, tag := image[:i], image[i+1:]
	args := []string{"upgrade", "--install", OperatorRelease, "charts/steward",
		"--namespace", OperatorNamespace, "--create-namespace",
		"--set", "image.repository=" + repo, "--set", "image.tag=" + tag, "--set", "image.pullPolicy=Never",
		"--wait", "--timeout", "5m"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	if _, err := Helm(ctx, c, helm, args...); err != nil {
		return fmt.Errorf("installing the operator's chart: %w", err)
	}
	return waitForWebhook(ctx, c)
}

// waitForWebhook waits until the operator's admission webhook rejects an
// invalid AppConfig: the replicas serve it through its Service, with the
// certificate the operator provisioned and published as the caBundle.
func waitForWebhook(ctx context.Context, c *localcluster.Cluster) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := Kubectl(ctx, c, []byte(InvalidAppConfig), "apply", "--dry-run=server", "-f", "-")
		if err != nil && strings.Contains(err.Error(), "reference cycle") {
			return nil
		}
		if err == nil {
			err = errors.New("an AppConfig with a reference cycle was admitted")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator's webhook does not answer after 3m: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// InvalidAppConfig has a reference cycle in its data, which only the
// admission webhook can find.
const InvalidAppConfig = `apiVersion: steward.dev/v1alpha1
kind: AppConfig
metadata:
  name: demo-invalid
  namespace: default
spec:
  application: demo
  environment: dev
  data:
    URL: "https://${HOST}/"
    HOST: "${URL}.example.com"
`
