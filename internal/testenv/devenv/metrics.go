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
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// MetricsScraper is the ServiceAccount (in the default namespace) that the
// local operator's /metrics is read as: bound to config/rbac's
// steward-metrics-reader, as a Prometheus would be.
const MetricsScraper = "steward-metrics-scraper"

// scraperRBAC binds MetricsScraper to the role users bind their scraper to.
const scraperRBAC = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ` + MetricsScraper + `
  namespace: default
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ` + MetricsScraper + `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: steward-metrics-reader
subjects:
  - kind: ServiceAccount
    name: ` + MetricsScraper + `
    namespace: default
`

// ServiceAccountToken returns a token of the ServiceAccount namespace/name,
// valid for a day.
func ServiceAccountToken(ctx context.Context, c *localcluster.Cluster, namespace, name string) (string, error) {
	out, err := Kubectl(ctx, c, nil, "create", "token", name, "--namespace", namespace, "--duration=24h")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// metricsToken installs config/rbac's metrics reader role, sets up
// MetricsScraper and returns its token.
func metricsToken(ctx context.Context, c *localcluster.Cluster) (string, error) {
	if _, err := Kubectl(ctx, c, nil, "apply", "--server-side", "-f", "config/rbac/metrics_reader_role.yaml"); err != nil {
		return "", fmt.Errorf("installing the metrics reader role: %w", err)
	}
	return MetricsScraperToken(ctx, c)
}

// MetricsScraperToken creates MetricsScraper, bound to the
// steward-metrics-reader ClusterRole (config/rbac's, or the chart's of the
// release "steward"), and returns its token.
func MetricsScraperToken(ctx context.Context, c *localcluster.Cluster) (string, error) {
	if _, err := Kubectl(ctx, c, []byte(scraperRBAC), "apply", "--server-side", "-f", "-"); err != nil {
		return "", fmt.Errorf("creating the metrics scraper: %w", err)
	}
	return ServiceAccountToken(ctx, c, "default", MetricsScraper)
}

// Profiles is the base URL of the operator's /debug/pprof.
func (o *Operator) Profiles() string { return o.PprofURL }

// Metrics reads the operator's /metrics as MetricsScraper. A refused
// connection is retried for up to 30 s while the process runs (its
// metrics server may start after /readyz answers on a loaded machine); an
// operator that exited is reported with the end of its output.
func (o *Operator) Metrics(ctx context.Context) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	code, body, err := GetMetrics(ctx, o.MetricsURL, o.metricsToken)
	for err != nil && errors.Is(err, syscall.ECONNREFUSED) && !o.Exited() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		code, body, err = GetMetrics(ctx, o.MetricsURL, o.metricsToken)
	}
	if err != nil {
		if o.Exited() {
			return "", fmt.Errorf("%w; the operator has exited (%w); its output ends: %s", err, o.exitErr(), o.outputTail(2000))
		}
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("%s answered %d: %s", o.MetricsURL, code, body)
	}
	return body, nil
}

// GetMetrics fetches an operator's /metrics over HTTPS with the bearer
// token (none when empty) and returns the status code and body. The
// operator's certificate is self-signed and not checked: the operator runs
// on loopback here.
func GetMetrics(ctx context.Context, url, token string) (int, string, error) {
	return GetMetricsVia(ctx, nil, url, token)
}

// GetMetricsVia is GetMetrics over connections dial opens (a node's
// DialContext, to reach an operator pod at its address); nil dials from
// this process's network namespace.
func GetMetricsVia(ctx context.Context, dial func(ctx context.Context, network, address string) (net.Conn, error), url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:     dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the operator's self-signed certificate
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("reading %s: %w", url, err)
	}
	return resp.StatusCode, string(body), nil
}

// exitErr is how the operator process ended; nil while it runs.
func (o *Operator) exitErr() error {
	select {
	case err := <-o.done:
		o.done <- err
		if err == nil {
			return errors.New("exit status 0")
		}
		return err
	default:
		return nil
	}
}

// outputTail is the last n bytes of the operator's output file.
func (o *Operator) outputTail(n int64) string {
	if o.outPath == "" {
		return "(no output file)"
	}
	f, err := os.Open(o.outPath)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() > n {
		_, _ = f.Seek(info.Size()-n, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	return string(data)
}
