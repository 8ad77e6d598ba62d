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

// Package monitoring tests the alert rules and the dashboard the Helm chart
// ships, with promtool, Prometheus' own rule checker and test runner.
package monitoring

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// tool finds a binary: $env, or bin/<glob> as make installs it. Outside CI a
// missing one skips the test; in CI it fails.
func tool(t *testing.T, env, glob string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if found, _ := filepath.Glob(filepath.Join(root, "bin", glob)); len(found) > 0 {
		return found[0]
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no %s: set %s or run make test", glob, env)
	}
	t.Skipf("no %s: set %s or run make test", glob, env)
	return ""
}

// run runs a command in the repository and returns its output.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// rules renders the chart's PrometheusRule with its default values and
// returns it.
func rules(t *testing.T) monitoringv1.PrometheusRule {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, root, tool(t, "HELM", "helm-*"), "template", "steward", "charts/steward", "--namespace", "steward-system",
		"--kube-version", "1.36.3", "--set", "prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml")
	var rule monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict([]byte(out), &rule); err != nil {
		t.Fatalf("the PrometheusRule does not decode: %v", err)
	}
	return rule
}

// TestAlertRules checks the chart's alert rules with `promtool check rules`
// and runs their unit tests (testdata/alerts_test.yaml) with `promtool test
// rules`, which must cover every alert.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "PROMTOOL", "promtool-*")
	rule := rules(t)
	dir := t.TempDir()
	groups, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), groups, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Log(run(t, dir, promtool, "check", "rules", "rules.yaml"))
	t.Log(run(t, dir, promtool, "test", "rules", "alerts_test.yaml"))

	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
				t.Errorf("alert %s has no test in testdata/alerts_test.yaml", r.Alert)
			}
		}
	}
}

// TestDashboardQueriesParse has promtool parse every query of the Grafana
// dashboard, as recording rules ($job, Grafana's variable, as a regex).
// test/e2e checks that the metrics they name exist.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := tool(t, "PROMTOOL", "promtool-*")
	raw, err := os.ReadFile("../../charts/steward/files/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	type record struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var records []record
	for i, p := range dashboard.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for j, target := range p.Targets {
			records = append(records, record{
				Record: "steward:dashboard_panel_" + string(rune('a'+i)) + "_" + string(rune('a'+j)),
				Expr:   strings.ReplaceAll(target.Expr, "$job", ".+"),
			})
		}
	}
	file, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": records}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), file, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Log(run(t, dir, promtool, "check", "rules", "dashboard.yaml"))
	t.Logf("%d queries of %d panels parse", len(records), len(dashboard.Panels))
}
