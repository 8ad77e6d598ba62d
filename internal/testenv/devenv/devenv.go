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

// Package devenv runs Steward on a local cluster the way a user would: it
// installs the CRDs with kubectl and starts the operator binary. The demo,
// the end-to-end tests and the benchmark share it.
package devenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// Kubectl runs kubectl against the cluster and returns its standard output.
// stdin may be nil.
func Kubectl(ctx context.Context, c *localcluster.Cluster, stdin []byte, args ...string) (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, c.KubectlPath(), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Dir = root
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// InstallCRDs applies config/crd and waits until every CRD is established.
func InstallCRDs(ctx context.Context, c *localcluster.Cluster) error {
	if _, err := Kubectl(ctx, c, nil, "apply", "--server-side", "-k", "config/crd"); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	_, err := Kubectl(ctx, c, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", "config/crd/bases")
	return err
}

// BuildOperator builds cmd/steward into dir and returns the binary's path.
func BuildOperator(ctx context.Context, dir string) (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "steward")
	// The same flags as `make build`, so that each finds the other's
	// work in the build cache.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/steward")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator: %w: %s", err, out)
	}
	return bin, nil
}

// Operator is a running steward process.
type Operator struct {
	binary, podName string
	args            []string
	// env is added to this process's environment for the operator's.
	env  []string
	cmd  *exec.Cmd
	done chan error
	// MetricsURL is the operator's /metrics endpoint, served over HTTPS to
	// callers with a bearer token allowed to read it (see Metrics).
	MetricsURL string
	// metricsToken is MetricsScraper's token.
	metricsToken string
	// ProbeURL is the base URL of /healthz and /readyz.
	ProbeURL string
	// PprofURL is the base URL of the operator's /debug/pprof profiles.
	PprofURL string
	// PID is the operator's process id.
	PID int
	// outPath is the file its output goes to.
	outPath string
}

// StartOperator starts the steward binary against the cluster, on free
// loopback ports, and waits until /readyz answers. Its output goes to out.
// The cluster's admission webhooks call it (see LocalWebhookConfiguration),
// with a certificate it provisions in the cluster's directory.
func StartOperator(ctx context.Context, c *localcluster.Cluster, binary string, out *os.File, args ...string) (*Operator, error) {
	return StartOperatorWithEnv(ctx, c, binary, out, nil, args...)
}

// StartOperatorWithEnv is StartOperator with env (NAME=value) added to the
// operator's environment, as a pod's container gets its env.
func StartOperatorWithEnv(ctx context.Context, c *localcluster.Cluster, binary string, out *os.File, env []string, args ...string) (*Operator, error) {
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	pprofPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := registerWebhooks(ctx, c, webhookPort); err != nil {
		return nil, err
	}
	token, err := metricsToken(ctx, c)
	if err != nil {
		return nil, err
	}
	args = append([]string{
		"--kubeconfig=" + c.Kubeconfig(),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
		"--pprof-bind-address=127.0.0.1:" + strconv.Itoa(pprofPort),
		"--leader-election-namespace=default",
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(webhookPort),
		"--webhook-cert-dir=" + filepath.Join(c.Dir(), "webhook-certs"),
		"--webhook-configuration-name=" + LocalWebhookConfiguration,
		"--webhook-service-namespace=", // no Service: the certificate is for 127.0.0.1
		// The operator runs outside the cluster's network, whose pod
		// addresses must not be dialled from here.
		"--no-instance-requests",
	}, args...)
	o := &Operator{
		binary:       binary,
		args:         args,
		env:          env,
		podName:      fmt.Sprintf("steward-local-%d", probePort),
		MetricsURL:   fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort),
		metricsToken: token,
		ProbeURL:     fmt.Sprintf("http://127.0.0.1:%d", probePort),
		PprofURL:     fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort),
	}
	if err := o.spawn(out); err != nil {
		return nil, err
	}
	if err := o.WaitReady(ctx, 3*time.Minute); err != nil {
		_ = o.Stop(5 * time.Second)
		return nil, err
	}
	return o, nil
}

// spawn starts the operator process with o's arguments, as a pod's
// container: POD_NAME, and with it the leader election identity, is the
// same at every start.
func (o *Operator) spawn(out *os.File) error {
	cmd := exec.Command(o.binary, o.args...)
	cmd.Env = append(append(os.Environ(), o.env...), "POD_NAME="+o.podName)
	cmd.Stdout, cmd.Stderr = out, out
	// The operator dies with its parent, even when the parent is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the operator: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	o.cmd, o.done, o.PID, o.outPath = cmd, done, cmd.Process.Pid, out.Name()
	return nil
}

// WaitReady waits until /readyz answers 200, for up to timeout.
func (o *Operator) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := o.ready(ctx); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("operator not ready after %s (%s): %w", timeout, localcluster.LoadAverage(), err)
		}
		select {
		case err := <-o.done:
			o.done <- err
			return fmt.Errorf("operator exited during start: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL, as a crash or the kernel's OOM killer would, and
// waits for the process to be gone.
func (o *Operator) Kill() {
	_ = o.cmd.Process.Kill()
	err := <-o.done
	o.done <- err
}

// Restart starts the operator again after it ended (Kill, Stop), with the
// same flags, ports and POD_NAME, as the kubelet restarts a container in
// its pod; it does not wait for it to be ready. Its output goes to out.
func (o *Operator) Restart(out *os.File) error {
	if !o.Exited() {
		return fmt.Errorf("operator (pid %d) still runs", o.PID)
	}
	return o.spawn(out)
}

// Replace starts the operator again after it ended, as a new pod named
// podName that replaces a lost one: a new leader election identity, which
// must wait for its predecessor's Lease to expire.
func (o *Operator) Replace(out *os.File, podName string) error {
	o.podName = podName
	return o.Restart(out)
}

// PodName is the POD_NAME the operator runs under.
func (o *Operator) PodName() string { return o.podName }

// Exited reports whether the process has ended.
func (o *Operator) Exited() bool {
	select {
	case err := <-o.done:
		o.done <- err
		return true
	default:
		return false
	}
}

func (o *Operator) ready(ctx context.Context) error {
	_, err := Get(ctx, o.ProbeURL+"/readyz")
	return err
}

// Get fetches url and returns the body of a 200 answer.
func Get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// Stop sends SIGTERM, as Kubernetes does, and waits up to grace for a clean
// exit before it kills the process. It returns an error unless the operator
// exited by itself with status 0.
func (o *Operator) Stop(grace time.Duration) error {
	select {
	case err := <-o.done:
		o.done <- err
		if err != nil {
			return fmt.Errorf("operator had exited with %w", err)
		}
		return nil
	default:
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-o.done:
		o.done <- err
		if err != nil {
			return fmt.Errorf("operator exited with %w", err)
		}
		return nil
	case <-time.After(grace):
		_ = o.cmd.Process.Kill()
		err := <-o.done
		return fmt.Errorf("operator did not stop within %s and was killed: %w", grace, err)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
