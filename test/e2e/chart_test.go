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

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// helm finds the helm binary: $HELM, or the one make installs in bin/.
func helm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	root, _ := localcluster.RepoRoot()
	if found, _ := filepath.Glob(filepath.Join(root, "bin", "helm-*")); len(found) > 0 {
		return found[0]
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no helm binary: set HELM or run make test")
	}
	t.Skip("no helm binary: set HELM or run make test")
	return ""
}

// TestHelmChart installs the chart's rendered manifests into the cluster:
// the operator's Deployment rolls out (on kwok's fake nodes no container
// runs, so this proves the manifests; test/e2e/realnode runs the image), and its
// ServiceAccount has the permissions the code asks for and no more.
func TestHelmChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	cmd := exec.CommandContext(ctx, helm(t), "template", "steward", "charts/steward",
		"--namespace", "steward-system", "--include-crds", "--set", "image.tag=test", "--kube-version", "1.36.3")
	cmd.Dir, err = localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v: %s", err, stderr.String())
	}

	kubectl(t, "", "create", "namespace", "steward-system")
	kubectl(t, string(rendered), "apply", "--server-side", "-f", "-")
	// The webhook configuration sends AppConfig writes to pods that do not
	// run here (kwok): remove it, or every later AppConfig write fails.
	t.Cleanup(func() {
		_, _ = kubectlMayFail("delete", "validatingwebhookconfiguration", "steward-validating-webhook-configuration", "--ignore-not-found")
	})
	ns := "--namespace=steward-system"
	kubectl(t, "", ns, "rollout", "status", "deployment/steward", "--timeout=60s")
	args := kubectl(t, "", ns, "get", "deployment", "steward", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	for _, want := range []string{"--leader-elect=true", "--webapp-concurrency=10", "--kube-api-qps=-1",
		"--webhook-port=9443", "--webhook-service-name=steward-webhook", "--webhook-configuration-name=steward-validating-webhook-configuration"} {
		if !strings.Contains(args, want) {
			t.Errorf("operator args %s lack %s", args, want)
		}
	}

	service := kubectl(t, "", ns, "get", "service", "steward-webhook", "-o", "jsonpath={.spec.ports[0].port} {.spec.ports[0].targetPort}")
	if service != "443 webhook" {
		t.Errorf("webhook Service port and target = %q, want 443 webhook", service)
	}
	whService := kubectl(t, "", "get", "validatingwebhookconfiguration", "steward-validating-webhook-configuration",
		"-o", "jsonpath={.webhooks[0].clientConfig.service.namespace}/{.webhooks[0].clientConfig.service.name}")
	if whService != "steward-system/steward-webhook" {
		t.Errorf("the webhook configuration calls %q, want steward-system/steward-webhook", whService)
	}

	sa := "--as=system:serviceaccount:steward-system:steward"
	for _, allowed := range [][]string{
		{"apply", "deployments.apps"}, {"create", "services"}, {"delete", "ingresses.networking.k8s.io"},
		{"patch", "webapps.steward.dev", "--subresource=status"}, {"create", "events.events.k8s.io"},
		{"update", "leases.coordination.k8s.io"}, {"get", "secrets"},
		{"patch", "caches.steward.dev", "--subresource=status"}, {"create", "statefulsets.apps"},
		{"create", "configmaps"}, {"watch", "pods"}, {"patch", "pods"}, {"list", "secrets"},
		{"delete", "persistentvolumeclaims"}, {"patch", "databases.steward.dev"},
		{"update", "databases.steward.dev", "--subresource=finalizers"},
		{"patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/steward-validating-webhook-configuration"},
		{"update", "secrets"},
		// A database instance's pod that cannot start on an earlier spec
		// is deleted, for its StatefulSet to start it on the current one.
		{"delete", "pods"},
	} {
		verb := allowed[0]
		if verb == "apply" {
			verb = "patch"
		}
		out := kubectl(t, "", append([]string{"auth", "can-i", sa, verb, allowed[1]}, allowed[2:]...)...)
		if strings.TrimSpace(out) != "yes" {
			t.Errorf("the operator may not %v: %s", allowed, out)
		}
	}
	for _, denied := range [][]string{
		{"delete", "namespaces"}, {"create", "pods"}, {"deletecollection", "pods"},
		{"create", "persistentvolumeclaims"}, {"delete", "persistentvolumes"}, {"list", "storageclasses.storage.k8s.io"},
		{"update", "webapps.steward.dev"}, {"update", "caches.steward.dev"},
		{"patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/other"},
		{"patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io"},
	} {
		out, _ := kubectlMayFail(append([]string{"auth", "can-i", sa}, denied...)...)
		if strings.TrimSpace(out) != "no" {
			t.Errorf("the operator may %v, which it does not need: %s", denied, out)
		}
	}
}
