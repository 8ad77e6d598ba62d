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

package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Time limits for each component to become ready, within Start's context:
// generous, for a shared machine under load.
const (
	etcdTimeout      = 2 * time.Minute
	apiServerTimeout = 3 * time.Minute
)

// startEtcd starts a single-member etcd on loopback and waits for it to be
// healthy. It returns the client URL.
func (c *Cluster) startEtcd(ctx context.Context, clientPort, peerPort int) (string, error) {
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	p, err := c.startProcess("etcd",
		"--name=steward",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=steward="+peerURL,
		"--initial-cluster-state=new",
		// The data lives as long as the cluster: durability is not worth
		// an fsync per write.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if err != nil {
		return "", err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: c.controlPlaneTransport()}
	err = c.waitFor(ctx, "etcd to be healthy", etcdTimeout, p, func(ctx context.Context) error {
		body, err := get(ctx, client, clientURL+"/health")
		if err != nil {
			return err
		}
		if !strings.Contains(body, `"health":"true"`) {
			return fmt.Errorf("unhealthy: %s", body)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return clientURL, nil
}

// controlPlaneTransport is an HTTP transport that reaches the control
// plane's loopback addresses: the caller's own, or those of the control
// plane's network namespace when there are real nodes.
func (c *Cluster) controlPlaneTransport() *http.Transport {
	t := &http.Transport{DisableKeepAlives: true}
	if c.real() {
		t.DialContext = c.dialControlPlane
	}
	return t
}

// startAPIServer starts kube-apiserver, serving HTTPS on port, and waits
// for /readyz. Without real nodes it listens on 127.0.0.1 only. With real
// nodes it listens on every address of the control plane's network
// namespace (loopback and controlPlaneIP, nothing else), publishes
// controlPlaneIP as the kubernetes Service's endpoint, reaches kubelets at
// their InternalIP and webhooks at their pods' addresses, and authorizes
// kubelets with the Node authorizer.
func (c *Cluster) startAPIServer(ctx context.Context, port int, etcdURL string) error {
	pki := c.pki
	network := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The default lease reconciler would publish 127.0.0.1 as the
		// kubernetes Service's endpoint, which the API server rejects.
		"--endpoint-reconciler-type=none",
		"--authorization-mode=RBAC",
	}
	if c.real() {
		network = []string{
			"--bind-address=0.0.0.0",
			"--advertise-address=" + controlPlaneIP,
			"--kubelet-preferred-address-types=InternalIP",
			"--enable-aggregator-routing=true",
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction",
		}
	}
	p, err := c.startProcess("kube-apiserver", append(network,
		"--etcd-servers="+etcdURL,
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+pki.dir,
		"--tls-cert-file="+pki.path(servingCertFile),
		"--tls-private-key-file="+pki.path(servingKeyFile),
		"--client-ca-file="+pki.path(caCertFile),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki.path(serviceAccountPub),
		"--service-account-signing-key-file="+pki.path(serviceAccountKey),
		"--service-cluster-ip-range="+serviceCIDR,
		"--allow-privileged=true",
	)...)
	if err != nil {
		return err
	}
	client, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "kube-apiserver to be ready", apiServerTimeout, p, func(ctx context.Context) error {
		_, err := get(ctx, client, c.server+"/readyz")
		return err
	})
}

// adminHTTPClient returns an HTTPS client that trusts the cluster's CA and
// authenticates as the admin.
func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	cert, err := tls.X509KeyPair(c.pki.admin.cert, c.pki.admin.key)
	if err != nil {
		return nil, fmt.Errorf("loading the admin client certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.pki.caCert)
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{
				RootCAs:      roots,
				Certificates: []tls.Certificate{cert},
				MinVersion:   tls.VersionTLS12,
			},
		},
	}, nil
}

// get returns the body of a GET that answered 200 OK.
func get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// startControllerManager starts kube-controller-manager as
// system:kube-controller-manager, each controller with its own service
// account's credentials, without leader election or an HTTPS endpoint.
func (c *Cluster) startControllerManager() (*process, error) {
	kubeconfig := filepath.Join(c.dir, "kube-controller-manager.kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.internalServer, "system:kube-controller-manager", c.pki.caPEM, c.pki.controllerManager); err != nil {
		return nil, err
	}
	flexDir := filepath.Join(c.dir, "flexvolume")
	if err := os.Mkdir(flexDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the flex volume plugin directory: %w", err)
	}
	return c.startProcess("kube-controller-manager",
		"--kubeconfig="+kubeconfig,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+c.pki.path(serviceAccountKey),
		"--root-ca-file="+c.pki.path(caCertFile),
		"--leader-elect=false",
		// The default is under /usr/libexec.
		"--flex-volume-plugin-dir="+flexDir,
		// 0 turns HTTPS serving off, and with it the need for
		// authentication and authorization kubeconfigs.
		"--secure-port=0",
		"--kube-api-qps="+strconv.Itoa(c.opts.ControllerManagerQPS),
		"--kube-api-burst="+strconv.Itoa(c.opts.ControllerManagerBurst),
	)
}

// startScheduler starts kube-scheduler as system:kube-scheduler, without
// leader election or an HTTPS endpoint.
func (c *Cluster) startScheduler() error {
	kubeconfig := filepath.Join(c.dir, "kube-scheduler.kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.internalServer, "system:kube-scheduler", c.pki.caPEM, c.pki.scheduler); err != nil {
		return err
	}
	config := filepath.Join(c.dir, "kube-scheduler.yaml")
	data := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
`, kubeconfig, max(c.opts.ControllerManagerQPS, 50), max(c.opts.ControllerManagerBurst, 100))
	if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
		return fmt.Errorf("writing the kube-scheduler configuration: %w", err)
	}
	_, err := c.startProcess("kube-scheduler",
		"--config="+config,
		// 0 turns HTTPS serving off.
		"--secure-port=0",
	)
	return err
}
