#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kubectl of one pinned Kubernetes release
# from the Go module proxy into a per-user cache, so every clone of the project (and CI) reuses them.
#
#   build-binaries.sh [KUBE_VERSION]     prints the directory holding the four binaries
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every k8s.io/* staging module with a
# local path. A throw-away wrapper module requires it and replaces each staging module with the
# published v0.Y.Z of the same release instead; etcd is built in the same module, so it is exactly
# the etcd version that this Kubernetes release was tested with.
set -euo pipefail

kube_version="${1:-${RECON8S_KUBE_VERSION:-v1.36.3}}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/recon8s"
out="$cache_root/$kube_version"
binaries=(etcd kube-apiserver kube-controller-manager kubectl)

have_all() { for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done; }
if have_all; then echo "$out"; exit 0; fi

# Test runs in several clones (or CI next to a developer) may all find the cache empty at once: one
# builds, the others wait for it instead of compiling Kubernetes again. flock releases the lock when
# its holder dies, so a killed build never blocks the next one.
mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-$kube_version.lock"
  if ! flock -n 9; then
    echo "build-binaries: another process is building Kubernetes $kube_version into $out; waiting for it" >&2
    flock 9
  fi
  if have_all; then echo "$out"; exit 0; fi
fi

if ! command -v go >/dev/null 2>&1; then
  echo "build-binaries: no Go toolchain on PATH. Install Go >= 1.26 (https://go.dev/dl or your package" >&2
  echo "manager), or point RECON8S_ASSETS at a directory holding etcd, kube-apiserver," >&2
  echo "kube-controller-manager and kubectl of the same release." >&2
  exit 3
fi

staging_minor="v0.${kube_version#v1.}"
work="$(mktemp -d "${TMPDIR:-/tmp}/recon8s-build.XXXXXX")"
# A private staging directory: without flock, concurrent builds must not write into the same one.
partial="$(mktemp -d "$cache_root/$kube_version.partial.XXXXXX")"
trap 'rm -rf "$work" "$partial"' EXIT
cd "$work"

echo "build-binaries: building Kubernetes $kube_version into $out (first time only; test/README.md has the measured time)" >&2
go mod init recon8s.dev/controlplane-build >/dev/null 2>&1
go mod edit -require="k8s.io/kubernetes@$kube_version"
# The staging modules are exactly those k8s.io/kubernetes replaces with a local ./staging path.
kube_mod="$(go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
if [ -z "$kube_mod" ] || [ ! -f "$kube_mod" ]; then
  echo "build-binaries: could not download k8s.io/kubernetes@$kube_version from the Go module proxy ($(go env GOPROXY))." >&2
  exit 4
fi
staging=$(grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$kube_mod" | awk '{print $1}')
for m in $staging; do go mod edit -replace="$m=$m@$staging_minor"; done
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$kube_mod")"
go mod edit -require="go.etcd.io/etcd/server/v3@$etcd_version"
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
export CGO_ENABLED=0
# No debug information, from the compiler (-dwarf=false) or the linker (-s -w): nobody debugs these
# binaries, and the compiler's share of it is ~12 % of a cold build's CPU (etcd alone: 80 vs 91 s).
go build -mod=mod -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$partial/etcd" go.etcd.io/etcd/server/v3
for b in kube-apiserver kube-controller-manager kubectl; do
  go build -mod=mod -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$partial/$b" "k8s.io/kubernetes/cmd/$b"
done
chmod 755 "$partial"
# The complete set appears under its final name in one rename, or (another build won) not at all.
if ! have_all; then rm -rf "$out"; mv "$partial" "$out"; fi
echo "$out"
