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
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

const webapp = `
apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata:
  name: hello
  namespace: e2e-webapp
spec:
  image: nginxinc/nginx-unprivileged:1.27
  healthCheck:
    path: /
`

// TestWebAppLifecycle walks a WebApp through what a new user does first:
// apply, wait, scale, change the image, delete.
func TestWebAppLifecycle(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-webapp")
	ns := "--namespace=e2e-webapp"

	// 1. Apply a WebApp.
	kubectl(t, webapp, "apply", "-f", "-")

	// 2. kubectl wait --for=condition=Ready.
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "webapp/hello", "--timeout=60s")
	if phase := kubectl(t, "", ns, "get", "webapp", "hello", "-o", "jsonpath={.status.phase}"); phase != "Running" {
		t.Errorf("phase = %q, want Running", phase)
	}

	// 3. kubectl scale to 3: the Deployment has 3 ready pods.
	kubectl(t, "", ns, "scale", "webapp", "hello", "--replicas=3")
	kubectl(t, "", ns, "wait", "--for=jsonpath={.status.readyReplicas}=3", "deployment/hello", "--timeout=60s")
	kubectl(t, "", ns, "wait", "--for=jsonpath={.status.readyReplicas}=3", "webapp/hello", "--timeout=60s")
	if pods := kubectl(t, "", ns, "get", "pods", "-l", "steward.dev/webapp=hello", "-o", "name"); strings.Count(pods, "pod/") != 3 {
		t.Errorf("pods = %q, want 3", pods)
	}
	if pdb := kubectl(t, "", ns, "get", "pdb", "hello", "-o", "jsonpath={.spec.maxUnavailable}"); pdb != "1" {
		t.Errorf("PodDisruptionBudget maxUnavailable = %q, want 1", pdb)
	}

	// 4. Patch the image: the Deployment follows and rolls out.
	kubectl(t, "", ns, "patch", "webapp", "hello", "--type=merge", "-p", `{"spec":{"image":"nginxinc/nginx-unprivileged:1.28"}}`)
	eventually(t, 30*time.Second, func() error {
		img := kubectl(t, "", ns, "get", "deployment", "hello", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
		if img != "nginxinc/nginx-unprivileged:1.28" {
			return fmt.Errorf("deployment image = %q", img)
		}
		return nil
	})
	kubectl(t, "", ns, "rollout", "status", "deployment/hello", "--timeout=60s")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "webapp/hello", "--timeout=60s")
	eventually(t, 30*time.Second, func() error {
		images := kubectl(t, "", ns, "get", "pods", "-l", "steward.dev/webapp=hello", "-o", "jsonpath={.items[*].spec.containers[0].image}")
		if got := strings.Fields(images); len(got) != 3 || strings.Count(images, ":1.28") != 3 {
			return fmt.Errorf("pod images = %q", images)
		}
		return nil
	})

	// 5. Delete the WebApp: the garbage collector removes its children and pods.
	kubectl(t, "", ns, "delete", "webapp", "hello", "--wait=true", "--timeout=60s")
	eventually(t, 60*time.Second, func() error {
		left := kubectl(t, "", ns, "get", "deployments,services,pods,poddisruptionbudgets", "-l", "steward.dev/webapp=hello", "-o", "name")
		left += kubectl(t, "", ns, "get", "deployment,service", "--ignore-not-found", "-o", "name", "--field-selector=metadata.name=hello")
		if strings.TrimSpace(left) != "" {
			return fmt.Errorf("still present: %s", strings.Join(strings.Fields(left), ", "))
		}
		return nil
	})
}

// TestOperatorEndpoints checks the probes and the metrics a platform team
// scrapes: over HTTPS only, to callers the API server authenticates and
// allows to read /metrics, and without HTTP/2.
func TestOperatorEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, path := range []string{"/healthz", "/readyz"} {
		if _, err := devenv.Get(ctx, operator.ProbeURL+path); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}

	if _, err := devenv.Get(ctx, strings.Replace(operator.MetricsURL, "https:", "http:", 1)); err == nil {
		t.Error("/metrics answered plain HTTP")
	}
	if code, body, err := devenv.GetMetrics(ctx, operator.MetricsURL, ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token answered %d %q (%v), want 401", code, body, err)
	}
	kubectl(t, "", "create", "serviceaccount", "e2e-not-a-scraper", "--namespace=default")
	token, err := devenv.ServiceAccountToken(ctx, cluster, "default", "e2e-not-a-scraper")
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := devenv.GetMetrics(ctx, operator.MetricsURL, token); err != nil || code != http.StatusForbidden {
		t.Errorf("/metrics with the token of a ServiceAccount not bound to steward-metrics-reader answered %d %q (%v), want 403", code, body, err)
	}
	conn, err := tls.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(operator.MetricsURL, "https://"), "/metrics"),
		&tls.Config{NextProtos: []string{"h2", "http/1.1"}, InsecureSkipVerify: true}) //nolint:gosec // the operator's self-signed certificate
	if err != nil {
		t.Fatal(err)
	}
	if proto := conn.ConnectionState().NegotiatedProtocol; proto == "h2" {
		t.Errorf("the metrics server speaks HTTP/2")
	}
	_ = conn.Close()

	// Each scrape answers; the figures of a kind appear once the leader's
	// controllers watch it, a moment after it took the Lease.
	eventually(t, time.Minute, func() error {
		body, err := operator.Metrics(ctx)
		if err != nil {
			return err
		}
		var lacks []string
		for _, want := range []string{
			`steward_webapps{phase="Running"}`,
			`steward_databases{phase="Running"}`,
			`controller_runtime_reconcile_total{controller="webapp",result="success"}`,
			`leader_election_master_status{name="steward.steward.dev"} 1`,
		} {
			if !strings.Contains(body, want) {
				lacks = append(lacks, want)
			}
		}
		if len(lacks) > 0 {
			return fmt.Errorf("/metrics lacks %s", strings.Join(lacks, ", "))
		}
		return nil
	})
}
