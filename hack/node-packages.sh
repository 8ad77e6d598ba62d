#!/usr/bin/env bash
# Installs what a real node of the local cluster runs on, from Debian's
# packages, when it is missing: containerd and runc (the container runtime),
# the CNI plugins (the pod network), iptables and conntrack (kube-proxy),
# iproute2 and util-linux (network namespaces, nsenter). kubelet, kube-proxy
# and CoreDNS are built from the Go module proxy by hack/kube-bins.sh.
# Needs root (or sudo) and apt. Idempotent.
set -euo pipefail

packages=()
for pair in containerd:/usr/bin/containerd runc:/usr/sbin/runc \
  containernetworking-plugins:/usr/lib/cni/bridge iptables:/usr/sbin/iptables \
  conntrack:/usr/sbin/conntrack iproute2:/usr/sbin/ip util-linux:/usr/bin/nsenter; do
  [ -x "${pair#*:}" ] || packages+=("${pair%%:*}")
done
[ ${#packages[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "node-packages: installing ${packages[*]}"
$sudo apt-get update -qq
# The packages' own services (a system containerd) are not started: each
# real node of a local cluster starts a containerd of its own.
made_policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  echo exit 101 | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  made_policy=1
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
[ -z "$made_policy" ] || $sudo rm -f /usr/sbin/policy-rc.d
