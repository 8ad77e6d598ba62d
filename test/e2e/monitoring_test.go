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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

var (
	// What in a PromQL expression is not a metric name: strings, label
	// matchers, grouping and matching clauses, ranges, numbers.
	promqlNotNames = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\{[^}]*\}|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\[[^\]]*\]|\b\d[\d.]*(?:e[+-]?\d+)?(?:ms|[smhdwy])?\b`)
	// An identifier; one followed by "(" is a function or aggregation.
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan"}
)

// metricNames returns the metric names of a PromQL expression (the
// expressions' syntax is checked by promtool in test/monitoring).
func metricNames(q string) []string {
	var names []string
	for _, m := range promqlIdent.FindAllString(promqlNotNames.ReplaceAllString(q, " "), -1) {
		if strings.HasSuffix(m, "(") {
			continue
		}
		if m = strings.TrimSpace(m); slices.Contains(promqlKeywords, strings.ToLower(m)) {
			continue
		}
		names = append(names, m)
	}
	return names
}

// TestMetricNames checks the extraction the query check relies on.
func TestMetricNames(t *testing.T) {
	for q, want := range map[string]string{
		`sum by (controller) (rate(controller_runtime_reconcile_total{job=~"a|b",code!~"2.."}[5m])) / sum(x_total) > 0.1`: "controller_runtime_reconcile_total x_total",
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket[1h])))`:                                                      "a_bucket",
		`absent(up{job="steward-metrics"} == 1) and on (pod) b > 1e6 unless c offset 5m`:                                  "up b c",
		`time() - steward_condition_true_since_timestamp_seconds{condition=~"Degraded|Stalled"} > 15 * 60`:                "steward_condition_true_since_timestamp_seconds",
	} {
		if got := strings.Join(metricNames(q), " "); got != want {
			t.Errorf("metricNames(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestMonitoringQueriesNameRealMetrics checks every query of the Grafana
// dashboard and every alert of the PrometheusRule against the metrics the
// running operator exports: each metric a query names must be in a scrape
// of the operator's /metrics, or be one of the families Steward's own
// collectors declare and export once they have a series (a failover, a
// failed Backup, an object with a problem). `up` is Prometheus' own. A
// query naming a metric that does not exist fails the test.
func TestMonitoringQueriesNameRealMetrics(t *testing.T) {
	// Controller-runtime's series exist once a controller has worked: have
	// the WebApp controller reconcile one object first.
	kubectl(t, "", "create", "namespace", "e2e-monitoring")
	kubectl(t, strings.ReplaceAll(webapp, "e2e-webapp", "e2e-monitoring"), "apply", "-f", "-")
	kubectl(t, "", "wait", "--namespace=e2e-monitoring", "--for=condition=Ready", "--timeout=120s", "webapp/hello")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body, err := operator.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{"up": true}
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			exported[strings.Fields(rest)[0]] = true
		}
	}
	declared := metrics.Declared()
	scraped := len(exported)
	for _, name := range declared {
		exported[name] = true
	}
	// Histograms are queried through their series.
	for name := range exported {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			exported[name+suffix] = true
		}
	}
	t.Logf("%d families in the scrape, %d declared by Steward's collectors", scraped, len(declared))

	queries := map[string]string{}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "charts/steward/files/grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range dashboard.Panels {
		for i, target := range p.Targets {
			// Grafana's variables are not PromQL: $job stands for a regex.
			queries["panel "+p.Title+" #"+string(rune('A'+i))] = strings.ReplaceAll(target.Expr, "$job", ".+")
		}
	}
	var rule monitoringv1.PrometheusRule
	rendered := helmTemplate(t, "steward-system", "--set", "prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml")
	if err := yaml.Unmarshal([]byte(rendered), &rule); err != nil {
		t.Fatal(err)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			queries["alert "+r.Alert] = r.Expr.String()
		}
	}
	if len(queries) < 20 {
		t.Fatalf("only %d queries found", len(queries))
	}

	for where, q := range queries {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, q)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %q names %s, which the operator does not export", where, q, n)
			}
		}
	}
	if !slices.Contains(declared, "steward_condition_true_since_timestamp_seconds") {
		t.Errorf("Declared() = %v", declared)
	}
}
