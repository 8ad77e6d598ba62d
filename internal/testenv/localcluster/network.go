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

// The network of a cluster with real nodes. The control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok, CoreDNS)
// runs in a network namespace of the cluster's, steward-<id>, on a bridge
// that holds controlPlaneIP. Each real node has a namespace of its own,
// steward-<id>-node-<i>, joined to the bridge by a veth pair, with its pods
// on a bridge of their own behind it. No namespace has a default route or
// any interface but these, so nothing can leave the machine; the host
// reaches the API server through a forwarder on its loopback.
//
//	host: 127.0.0.1:<port> --forwarder--> steward-<id>: br0 10.250.0.1
//	                                        |- veth -- steward-<id>-node-0: eth0 10.250.0.10, cni0 10.244.0.1/24
//	                                        `- veth -- steward-<id>-node-1: eth0 10.250.0.11, cni0 10.244.1.1/24

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// controlPlaneIP is the control plane's address on the cluster's
	// network: the API server, and CoreDNS, listen on it.
	controlPlaneIP = "10.250.0.1"
	// nodeNetworkBits is the prefix length of the cluster's network.
	nodeNetworkBits = 24
	// clusterBridge is the bridge in the control plane's namespace.
	clusterBridge = "br0"
	// realPodCIDR holds every real node's pod range, nodePodCIDR(i).
	realPodCIDR = "10.244.0.0/16"
	// apiServerNetnsPort is the API server's port inside the namespace.
	apiServerNetnsPort = 6443
	// dnsServiceIP is the ClusterIP of kube-system/kube-dns, the pods'
	// name server.
	dnsServiceIP = "10.96.0.10"
	// clusterDomain is the DNS domain of Services and pods.
	clusterDomain = "cluster.local"
	// coreDNSHealthPort and coreDNSReadyPort are CoreDNS's health and
	// readiness endpoints, on loopback in the control plane's namespace.
	coreDNSHealthPort = 8080
	coreDNSReadyPort  = 8181
	// maxRealNodes bounds RealNodes: node addresses and pod ranges are
	// numbered by node.
	maxRealNodes = 16
	// cniBinDir holds the CNI plugins of Debian's
	// containernetworking-plugins package.
	cniBinDir = "/usr/lib/cni"
	// sandboxImage is the pause image every pod's sandbox runs; it must be
	// among the imported images.
	sandboxImage = "registry.k8s.io/pause:3.10"
	// realNodeLabelValue is the value of the label nodeLabelKey on real
	// nodes (kwok's fake ones have nodeLabelValue).
	realNodeLabelValue = "real"
)

// nodeIP is the address of real node i on the cluster's network.
func nodeIP(i int) string { return fmt.Sprintf("10.250.0.%d", 10+i) }

// nodePodCIDR is the pod range of real node i.
func nodePodCIDR(i int) string { return fmt.Sprintf("10.244.%d.0/24", i) }

// clusterID is the random part of a cluster directory's name, which names
// its namespaces and cgroups.
func clusterID(dir string) string {
	return filepath.Base(dir)[len(dirPattern)-1:]
}

// netnsName is the control plane's network namespace.
func (c *Cluster) netnsName() string { return "steward-" + c.id }

// vethName is the cluster-side end of node i's veth pair.
func vethName(i int) string { return fmt.Sprintf("veth%d", i) }

// setUpNetwork creates the control plane's namespace with its bridge, and
// each real node's namespace with its veth pair, address and routes.
func (c *Cluster) setUpNetwork(ctx context.Context) error {
	cp := c.netnsName()
	if err := addNetns(ctx, cp); err != nil {
		return err
	}
	cidr := fmt.Sprintf("%s/%d", controlPlaneIP, nodeNetworkBits)
	steps := [][]string{
		{"ip", "-n", cp, "link", "add", clusterBridge, "type", "bridge"},
		{"ip", "-n", cp, "addr", "add", cidr, "dev", clusterBridge},
		{"ip", "-n", cp, "link", "set", clusterBridge, "up"},
	}
	for _, n := range c.nodes {
		if err := addNetns(ctx, n.netns); err != nil {
			return err
		}
		veth := vethName(n.index)
		steps = append(steps,
			[]string{"ip", "-n", cp, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns},
			[]string{"ip", "-n", cp, "link", "set", veth, "master", clusterBridge, "up"},
			[]string{"ip", "-n", n.netns, "addr", "add", fmt.Sprintf("%s/%d", n.IP, nodeNetworkBits), "dev", "eth0"},
			[]string{"ip", "-n", n.netns, "link", "set", "eth0", "up"},
			// Processes on the node reach Service addresses, which
			// kube-proxy translates after the routing decision.
			[]string{"ip", "-n", n.netns, "route", "add", serviceCIDR, "dev", "eth0", "src", n.IP},
			// The control plane reaches the node's pods (webhooks, the
			// API server's proxy) through the node.
			[]string{"ip", "-n", cp, "route", "add", n.podCIDR(), "via", n.IP},
		)
		for _, other := range c.nodes {
			if other != n {
				steps = append(steps, []string{"ip", "-n", n.netns, "route", "add", other.podCIDR(), "via", other.IP})
			}
		}
	}
	for _, step := range steps {
		if err := run(ctx, step[0], step[1:]...); err != nil {
			return fmt.Errorf("setting up the cluster's network: %w", err)
		}
	}
	for _, n := range c.nodes {
		// Nodes route their pods' packets; the setting is the namespace's
		// own.
		err := inNetns(n.NetNS(), func() error {
			return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
		})
		if err != nil {
			return fmt.Errorf("enabling forwarding on %s: %w", n.Name, err)
		}
	}
	return nil
}

// setLink sets the state of node i's link to the cluster's network.
func (c *Cluster) setLink(ctx context.Context, i int, state string) error {
	if err := run(ctx, "ip", "-n", c.netnsName(), "link", "set", vethName(i), state); err != nil {
		return fmt.Errorf("setting node-%d's link %s: %w", i, state, err)
	}
	return nil
}

// tearDownNetwork deletes the nodes' and the control plane's namespaces,
// and with them every interface and route.
func (c *Cluster) tearDownNetwork() error {
	var errs []error
	for _, n := range c.nodes {
		if err := deleteNetns(n.netns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := deleteNetns(c.netnsName()); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting the cluster's network namespaces: %v", errs)
	}
	return nil
}

// startDNS creates the kube-dns Service and its EndpointSlice, which point
// at CoreDNS on the control plane's address, and starts CoreDNS.
func (c *Cluster) startDNS(ctx context.Context, clientset kubernetes.Interface) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "kube-dns",
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: dnsServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
	if _, err := clientset.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the kube-dns Service: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "kube-dns",
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{discoveryv1.LabelServiceName: "kube-dns"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{controlPlaneIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)},
			{Name: ptr.To("dns-tcp"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolTCP)},
		},
	}
	if _, err := clientset.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the kube-dns EndpointSlice: %w", err)
	}

	corefile := filepath.Join(c.dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(coreDNSConfig(c.internalKubeconfig())), 0o600); err != nil {
		return fmt.Errorf("writing the Corefile: %w", err)
	}
	p, err := c.startProcess("coredns", "-conf", corefile)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: c.dialControlPlane, DisableKeepAlives: true}}
	return c.waitFor(ctx, "CoreDNS to be ready", workloadTimeout, p, func(ctx context.Context) error {
		_, err := get(ctx, client, fmt.Sprintf("http://127.0.0.1:%d/ready", coreDNSReadyPort))
		return err
	})
}

// coreDNSConfig serves cluster.local from the API server, on the control
// plane's address. There is no upstream: other names fail, which is right
// for a cluster with no way out.
func coreDNSConfig(kubeconfig string) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
}
`, controlPlaneIP, coreDNSHealthPort, coreDNSReadyPort, clusterDomain, kubeconfig)
}

// dialControlPlane opens a connection from inside the control plane's
// network namespace.
func (c *Cluster) dialControlPlane(ctx context.Context, network, address string) (net.Conn, error) {
	return dialInNetns(ctx, netnsPath(c.netnsName()), network, address)
}

// Listen opens a TCP listener at a free port on the control plane's
// address inside the cluster's network (10.250.0.1), where pods and nodes
// reach it and nothing outside the machine can: the place for a test's
// stand-in of a service outside the cluster, such as an object store. Only
// clusters with real nodes have that network.
func (c *Cluster) Listen() (net.Listener, error) {
	if !c.real() {
		return nil, errors.New("only a cluster with real nodes has a network of its own to listen in")
	}
	var l net.Listener
	err := inNetns(netnsPath(c.netnsName()), func() error {
		var err error
		l, err = net.Listen("tcp", net.JoinHostPort(controlPlaneIP, "0"))
		return err
	})
	return l, err
}
