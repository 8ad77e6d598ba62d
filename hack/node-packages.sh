#!/usr/bin/env bash
# Installs what a real node of the local cluster runs on, from Debian's
# packages, when it is missing: containerd and runc (the container runtime),
# the CNI plugins (the pod network), iptables and conntrack (kube-proxy),
# iproute2 and util-linux (network namespaces, nsenter). kubelet, kube-proxy
# and CoreDNS are built from the Go module proxy by hack/kube-bins.sh. Needs
# root (or sudo) and apt. Idempotent. No system containerd is started: each
# real node starts a containerd of its own.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" node-packages \
  containerd:/usr/bin/containerd runc:/usr/sbin/runc \
  containernetworking-plugins:/usr/lib/cni/bridge iptables:/usr/sbin/iptables \
  conntrack:/usr/sbin/conntrack iproute2:/usr/sbin/ip util-linux:/usr/bin/nsenter
