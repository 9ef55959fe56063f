#!/usr/bin/env bash
# Builds what a node adds to the control plane — kubelet, kube-scheduler, kube-proxy of the same pinned
# Kubernetes release, and CoreDNS — into the same per-user cache and under the same lock as
# test/controlplane/build-binaries.sh (whose etcd, kube-apiserver, kube-controller-manager and kubectl it
# never rebuilds).
#
#   build-node-binaries.sh [KUBE_VERSION]     prints the directory holding them
#
# Same wrapper-module technique as build-binaries.sh (k8s.io/kubernetes replaces its staging modules with
# local paths, so a throw-away module requires it and replaces each with the published v0.Y.Z). CoreDNS is
# built in a module of its own: its client-go pin clashes with the Kubernetes one.
set -euo pipefail

kube_version="${1:-${RECON8S_KUBE_VERSION:-v1.36.3}}"
coredns_version="${RECON8S_COREDNS_VERSION:-v1.15.0}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/recon8s"
out="$cache_root/$kube_version"
binaries=(kubelet kube-scheduler kube-proxy coredns)

have_all() { for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done; }
if have_all; then echo "$out"; exit 0; fi

mkdir -p "$cache_root" "$out"
exec 9>"$cache_root/.build-$kube_version.lock"
if ! flock -n 9; then
  echo "build-node-binaries: another process is building Kubernetes $kube_version into $out; waiting for it" >&2
  flock 9
fi
if have_all; then echo "$out"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "build-node-binaries: no Go toolchain on PATH. Install Go >= 1.26: kubelet, kube-scheduler, kube-proxy and CoreDNS are built from the Go module proxy." >&2
  exit 3
fi

staging_minor="v0.${kube_version#v1.}"
work="$(mktemp -d "${TMPDIR:-/tmp}/recon8s-node-build.XXXXXX")"
partial="$(mktemp -d "$cache_root/$kube_version.node-partial.XXXXXX")"
trap 'rm -rf "$work" "$partial"' EXIT
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started ))s"; }

mkdir "$work/kube" "$work/coredns"
echo "build-node-binaries: building kubelet, kube-scheduler, kube-proxy $kube_version and CoreDNS $coredns_version into $out (first time only; test/README.md has the measured time)" >&2
export CGO_ENABLED=0
if [ ! -x "$out/coredns" ]; then
  # CoreDNS downloads and compiles beside the Kubernetes build (its module graph is separate). Only the
  # plugins the node's Corefile uses (node.sh) are compiled in, as CoreDNS's own docs build a custom
  # server: its stock build brings every cloud SDK (how long the stock build and the node binaries with
  # this one took: test/README.md, What a run costs).
  cat > "$work/coredns/main.go" <<'GO'
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

func main() { coremain.Run() }
GO
  ( cd "$work/coredns" && go mod init recon8s.dev/coredns-build && go get "github.com/coredns/coredns@$coredns_version" &&
    go build -mod=mod -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$partial/coredns" . ) > "$work/coredns.log" 2>&1 &
  coredns_pid=$!
fi

cd "$work/kube"
go mod init recon8s.dev/node-build >/dev/null 2>&1
go mod edit -require="k8s.io/kubernetes@$kube_version"
kube_mod="$(go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
if [ -z "$kube_mod" ] || [ ! -f "$kube_mod" ]; then
  echo "build-node-binaries: could not download k8s.io/kubernetes@$kube_version from the Go module proxy ($(go env GOPROXY))." >&2
  exit 4
fi
for m in $(grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$kube_mod" | awk '{print $1}'); do
  go mod edit -replace="$m=$m@$staging_minor"
done
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
for b in kubelet kube-scheduler kube-proxy; do
  [ -x "$out/$b" ] && continue
  # No debug information (build-binaries.sh says why).
  go build -mod=mod -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$partial/$b" "k8s.io/kubernetes/cmd/$b"
  echo "build-node-binaries: $b built ($(elapsed))" >&2
done
if [ -n "${coredns_pid:-}" ]; then
  if ! wait "$coredns_pid"; then
    echo "build-node-binaries: CoreDNS $coredns_version did not build:" >&2
    tail -20 "$work/coredns.log" >&2
    exit 5
  fi
  echo "build-node-binaries: coredns built ($(elapsed))" >&2
fi
for f in "$partial"/*; do [ -e "$f" ] && mv -f "$f" "$out/"; done
echo "build-node-binaries: done in $(elapsed)" >&2
echo "$out"
