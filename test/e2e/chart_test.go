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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

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

// helmTemplate renders the chart as release "steward" in namespace.
func helmTemplate(t *testing.T, namespace string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm(t), append([]string{"template", "steward", "charts/steward",
		"--namespace", namespace, "--kube-version", "1.36.3"}, args...)...)
	var err error
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
	return string(rendered)
}

// TestHelmChart installs the chart's rendered manifests into the cluster:
// the operator's Deployment rolls out (on kwok's fake nodes no container
// runs, so this proves the manifests; test/e2e/realnode runs the image), and its
// ServiceAccount has the permissions the code asks for and no more.
func TestHelmChart(t *testing.T) {
	rendered := helmTemplate(t, "steward-system", "--include-crds", "--set", "image.tag=test")

	kubectl(t, "", "create", "namespace", "steward-system")
	kubectl(t, rendered, "apply", "--server-side", "-f", "-")
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

	for _, want := range []string{"--metrics-secure=true", "--enable-http2=false", "--metrics-bind-address=:8443"} {
		if !strings.Contains(args, want) {
			t.Errorf("operator args %s lack %s", args, want)
		}
	}
	// Production defaults: a numeric non-root user, replicas spread over
	// nodes, one kept through a drain.
	if got := kubectl(t, "", ns, "get", "deployment", "steward", "-o",
		"jsonpath={.spec.template.spec.securityContext.runAsUser}/{.spec.template.spec.securityContext.runAsGroup}/{.spec.template.spec.securityContext.runAsNonRoot}"); got != "65532/65532/true" {
		t.Errorf("pod runAsUser/runAsGroup/runAsNonRoot = %s, want 65532/65532/true", got)
	}
	if got := kubectl(t, "", ns, "get", "deployment", "steward", "-o",
		"jsonpath={.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}"); got != "kubernetes.io/hostname" {
		t.Errorf("soft pod anti-affinity over hostnames missing: %q", got)
	}
	if got := kubectl(t, "", ns, "get", "pdb", "steward", "-o", "jsonpath={.spec.minAvailable} {.spec.selector.matchLabels.app\\.kubernetes\\.io/component}"); got != "1 manager" {
		t.Errorf("PodDisruptionBudget minAvailable and selector = %q, want 1 manager", got)
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
		{"update", "leases.coordination.k8s.io", "--namespace=steward-system"}, {"get", "secrets"},
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

// TestHelmChartRoles: a namespace editor can create every Steward kind
// and a viewer can read them, and not Secrets, through the built-in edit
// and view roles the chart's roles aggregate into.
func TestHelmChartRoles(t *testing.T) {
	rendered := helmTemplate(t, "steward-system", "--show-only", "templates/rbac.yaml")
	// The Lease and certificate Roles live in the release namespace, which
	// TestHelmChart creates unless this test runs alone.
	_, _ = kubectlMayFail("create", "namespace", "steward-system")
	kubectl(t, rendered, "apply", "--server-side", "-f", "-")
	kubectl(t, "", "create", "namespace", "e2e-team")
	kubectl(t, "", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "--namespace=e2e-team")
	kubectl(t, "", "create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob", "--namespace=e2e-team")
	kinds := []string{"webapps", "databases", "caches", "backups", "restores", "appconfigs", "appstacks"}
	canI := func(user, verb, resource string) string {
		out, _ := kubectlMayFail("auth", "can-i", "--as="+user, "--namespace=e2e-team", verb, resource)
		return strings.TrimSpace(out)
	}
	// The aggregation controller fills the built-in roles shortly after.
	eventually(t, 2*time.Minute, func() error {
		for _, k := range kinds {
			for _, verb := range []string{"create", "update", "delete"} {
				if got := canI("alice", verb, k+".steward.dev"); got != "yes" {
					return fmt.Errorf("a namespace editor may not %s %s: %s", verb, k, got)
				}
			}
			for _, verb := range []string{"get", "list", "watch"} {
				if got := canI("bob", verb, k+".steward.dev"); got != "yes" {
					return fmt.Errorf("a namespace viewer may not %s %s: %s", verb, k, got)
				}
			}
		}
		return nil
	})
	for _, k := range kinds {
		if got := canI("bob", "create", k+".steward.dev"); got != "no" {
			t.Errorf("a namespace viewer may create %s: %s", k, got)
		}
	}
	for _, verb := range []string{"get", "list"} {
		if got := canI("bob", verb, "secrets"); got != "no" {
			t.Errorf("a namespace viewer may %s Secrets: %s", verb, got)
		}
	}
}

// TestHelmChartOptions renders the chart with every optional part on
// (cert-manager mode, NetworkPolicy, topology spread, hard anti-affinity,
// ServiceMonitor, PrometheusRule, Grafana dashboard) and has the API server
// check each object of a built-in kind with a server-side dry run. The
// cert-manager and Prometheus Operator objects, whose CRDs this cluster
// lacks, are decoded strictly into those projects' own API types instead.
func TestHelmChartOptions(t *testing.T) {
	rendered := helmTemplate(t, "steward-options",
		"--set", "image.tag=test",
		"--set", "webhook.certManager.enabled=true",
		"--set", "networkPolicy.enabled=true",
		"--set", "networkPolicy.metricsNamespaceSelector.matchLabels.name=monitoring",
		"--set", "podAntiAffinity=hard",
		"--set", "topologySpreadConstraints[0].maxSkew=1",
		"--set", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
		"--set", "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
		"--set", "serviceMonitor.enabled=true",
		"--set", "serviceMonitor.prometheusServiceAccount.name=prometheus",
		"--set", "serviceMonitor.prometheusServiceAccount.namespace=monitoring",
		"--set", "prometheusRule.enabled=true",
		"--set", "grafanaDashboard.enabled=true")
	kubectl(t, "", "create", "namespace", "steward-options")

	var builtin []string
	foreign := map[string]string{}
	for _, doc := range strings.Split(rendered, "\n---") {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered document: %v:\n%s", err, doc)
		}
		switch {
		case meta.Kind == "":
		case strings.HasPrefix(meta.APIVersion, "cert-manager.io/"), strings.HasPrefix(meta.APIVersion, "monitoring.coreos.com/"):
			foreign[meta.Kind] = doc
		default:
			builtin = append(builtin, doc)
		}
	}
	kubectl(t, strings.Join(builtin, "\n---"), "apply", "--server-side", "--dry-run=server", "-f", "-")

	strict := func(kind string, into any) {
		t.Helper()
		doc, ok := foreign[kind]
		if !ok {
			t.Fatalf("no %s rendered", kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Errorf("%s does not decode as the CRD's type: %v", kind, err)
		}
	}
	var cert certmanagerv1.Certificate
	strict("Certificate", &cert)
	strict("Issuer", &certmanagerv1.Issuer{})
	var sm monitoringv1.ServiceMonitor
	strict("ServiceMonitor", &sm)
	var rule monitoringv1.PrometheusRule
	strict("PrometheusRule", &rule)
	if len(cert.Spec.DNSNames) == 0 || cert.Spec.DNSNames[0] != "steward-webhook.steward-options.svc" || cert.Spec.SecretName != "steward-webhook-tls" {
		t.Errorf("Certificate dnsNames %v secretName %s", cert.Spec.DNSNames, cert.Spec.SecretName)
	}
	if ep := sm.Spec.Endpoints; len(ep) != 1 || ep[0].Scheme == nil || string(*ep[0].Scheme) != "https" ||
		ep[0].TLSConfig == nil || ep[0].TLSConfig.CA.Secret == nil || ep[0].TLSConfig.CA.Secret.Name != "steward-webhook-tls" {
		t.Errorf("ServiceMonitor endpoints = %+v: want https with the certificate's CA", ep)
	}
	if len(rule.Spec.Groups) == 0 {
		t.Error("PrometheusRule has no groups")
	}

	// cert-manager mode: the operator serves the mounted certificate and
	// provisions none; the CA injector fills the caBundle.
	for _, want := range []string{
		"- --webhook-cert-secret=\n", "- --metrics-cert-dir=/var/run/steward/webhook-certs",
		"secretName: steward-webhook-tls", "cert-manager.io/inject-ca-from: steward-options/steward-webhook",
		"requiredDuringSchedulingIgnoredDuringExecution", "topology.kubernetes.io/zone", "kind: NetworkPolicy",
		"grafana_dashboard: \"1\"", "kind: PodDisruptionBudget",
	} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the rendered chart lacks %q", want)
		}
	}
}

// TestHelmChartKubeScore grades the chart's default manifests, and with
// the NetworkPolicy on, with kube-score: every finding below "OK" must be
// one that docs/operating.md ("kube-score") explains, by its check's name.
func TestHelmChartKubeScore(t *testing.T) {
	kubeScore := os.Getenv("KUBE_SCORE")
	if kubeScore == "" {
		root, _ := localcluster.RepoRoot()
		if found, _ := filepath.Glob(filepath.Join(root, "bin", "kube-score-*")); len(found) > 0 {
			kubeScore = found[0]
		} else if os.Getenv("CI") == "true" {
			t.Fatal("no kube-score binary: set KUBE_SCORE or run make test")
		} else {
			t.Skip("no kube-score binary: set KUBE_SCORE or run make test")
		}
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(root, "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, explained, _ := strings.Cut(string(docs), "### kube-score")
	explained, _, _ = strings.Cut(explained, "\n## ")
	for _, set := range [][]string{nil, {"--set", "networkPolicy.enabled=true"}} {
		rendered := helmTemplate(t, "steward-system", set...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, kubeScore, "score", "--output-format", "json", "-")
		cmd.Stdin = strings.NewReader(rendered)
		out, err := cmd.Output()
		cancel()
		// kube-score exits 1 when it finds a critical problem.
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("kube-score: %v", err)
		}
		var graded []struct {
			ObjectName string `json:"object_name"`
			Checks     []struct {
				Check struct {
					Name string `json:"name"`
				} `json:"check"`
				Grade    int  `json:"grade"`
				Skipped  bool `json:"skipped"`
				Comments []struct {
					Summary string `json:"summary"`
				} `json:"comments"`
			} `json:"checks"`
		}
		if err := json.Unmarshal(out, &graded); err != nil {
			t.Fatalf("kube-score's output: %v: %s", err, out)
		}
		if len(graded) < 4 {
			t.Fatalf("kube-score graded %d objects", len(graded))
		}
		for _, o := range graded {
			for _, c := range o.Checks {
				if c.Skipped || c.Grade >= 10 {
					continue
				}
				if !strings.Contains(explained, "**"+c.Check.Name+"**") {
					t.Errorf("%v: kube-score finds %s on %s (%+v), which docs/operating.md does not explain", set, c.Check.Name, o.ObjectName, c.Comments)
				}
			}
		}
	}
}
