#!/usr/bin/env bash
# Provides the local cluster's binaries in one directory and prints that
# directory: the control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok and its stages) and what a real node adds
# (kubelet, kube-proxy, coredns). Lookup order:
#   1. $KUBEBUILDER_ASSETS, when it holds every binary;
#   2. the repository cache bin/k8s/<version>-linux-<arch>/ (gitignored);
#   3. setup-envtest, for etcd/kube-apiserver/kubectl, where downloads work;
#   4. otherwise a build from the Go module proxy.
# It is idempotent: with a complete cache it returns at once.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
ARCH=$(go env GOARCH)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${KUBE_BIN_DIR:-$ROOT/bin/k8s/$KUBE_VERSION-linux-$ARCH}
BINS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kubelet kube-proxy coredns)

log() { printf 'kube-bins: %s\n' "$*" >&2; }

complete() {
  local dir=$1 b
  for b in "${BINS[@]}"; do [ -x "$dir/$b" ] || return 1; done
  [ -d "$dir/kwok-stages" ] || return 1
}

# bin/ is a module of its own, so that ./... in the repository skips it.
mkdir -p "$ROOT/bin"
[ -f "$ROOT/bin/go.mod" ] || printf 'module steward.local/bin\n' >"$ROOT/bin/go.mod"

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && complete "$KUBEBUILDER_ASSETS"; then
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi
if complete "$DEST"; then
  echo "$DEST"; exit 0
fi

mkdir -p "$DEST"
WORK=$ROOT/bin/.build
mkdir -p "$WORK"

# 3. setup-envtest, where downloads work (bounded: it fails fast offline).
if [ ! -x "$DEST/kube-apiserver" ] && [ -z "${KUBE_BINS_NO_DOWNLOAD:-}" ]; then
  if GOBIN=$WORK go install sigs.k8s.io/controller-runtime/tools/setup-envtest@release-0.22 >/dev/null 2>&1; then
    if dir=$(timeout 60 "$WORK/setup-envtest" use "$KUBE_VERSION" --bin-dir "$WORK/envtest" -p path 2>/dev/null) && [ -x "$dir/kube-apiserver" ]; then
      log "using setup-envtest assets from $dir"
      cp "$dir"/{etcd,kube-apiserver,kubectl} "$DEST/"
    fi
  fi
fi

# 4. Build from the Go module proxy.
kube_ldflags() {
  local minor pkg flags="-s -w"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

build_kube() {
  local mod=$WORK/kubernetes-$KUBE_VERSION
  if [ ! -f "$mod/go.mod" ]; then
    mkdir -p "$mod"
    log "resolving k8s.io/kubernetes v$KUBE_VERSION"
    local src
    src=$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    {
      echo "module steward.local/kubebins"
      echo
      echo "go $(go env GOVERSION | sed 's/^go//; s/\.[0-9]*$//')"
      echo
      echo "require k8s.io/kubernetes v$KUBE_VERSION"
      echo
      echo "replace ("
      # Every staging module k8s.io/kubernetes replaces with ./staging/... is
      # published under the matching v0 version.
      sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$src/go.mod" |
        while read -r m; do echo "	$m => $m v0.${KUBE_VERSION#1.}"; done
      echo ")"
    } >"$mod/go.mod"
    echo 'package kubebins' >"$mod/doc.go"
  fi
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
    [ -x "$DEST/$b" ] && continue
    log "building $b v$KUBE_VERSION (minutes on a cold machine)"
    (cd "$mod" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -ldflags "$(kube_ldflags)" -o "$DEST/$b.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$DEST/$b.tmp" "$DEST/$b"
  done
}

build_etcd() {
  [ -x "$DEST/etcd" ] && return 0
  local mod=$WORK/etcd-$ETCD_VERSION
  mkdir -p "$mod"
  if [ ! -f "$mod/go.mod" ]; then
    printf 'module steward.local/etcdbin\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$mod/go.mod"
    echo 'package etcdbin' >"$mod/doc.go"
  fi
  log "building etcd $ETCD_VERSION"
  (cd "$mod" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -ldflags "-s -w" -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$DEST/etcd.tmp" "$DEST/etcd"
}

build_kwok() {
  if [ ! -x "$DEST/kwok" ]; then
    log "building kwok $KWOK_VERSION"
    GOBIN=$WORK CGO_ENABLED=0 go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
    mv "$WORK/kwok" "$DEST/kwok"
  fi
  if [ ! -d "$DEST/kwok-stages" ]; then
    # The kwok binary has no built-in stages; its module ships them.
    local src
    src=$(cd "$WORK" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    mkdir -p "$DEST/kwok-stages.tmp"
    (cd "$src/kustomize/stage" && find . -name '*.yaml' -exec cp --parents {} "$DEST/kwok-stages.tmp/" \;)
    chmod -R u+w "$DEST/kwok-stages.tmp"
    mv "$DEST/kwok-stages.tmp" "$DEST/kwok-stages"
  fi
}

# CoreDNS with only the plugins a local cluster's DNS needs: a wrapper
# module whose main lists them (the full build pulls every cloud SDK).
build_coredns() {
  [ -x "$DEST/coredns" ] && return 0
  local mod=$WORK/coredns-$COREDNS_VERSION
  mkdir -p "$mod"
  if [ ! -f "$mod/go.mod" ]; then
    printf 'module steward.local/coredns\n\ngo 1.26\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" >"$mod/go.mod"
    cat >"$mod/main.go" <<'EOF'
// Command coredns is CoreDNS with the plugins of a local cluster's DNS.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins, in the order CoreDNS's own plugin.cfg runs them.
func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes"}
}

func main() { coremain.Run() }
EOF
  fi
  log "building coredns $COREDNS_VERSION"
  (cd "$mod" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -ldflags "-s -w" -o "$DEST/coredns.tmp" .)
  mv "$DEST/coredns.tmp" "$DEST/coredns"
}

build_etcd
build_kube
build_kwok
build_coredns
complete "$DEST" || { log "incomplete: $DEST"; exit 1; }
echo "$DEST"
