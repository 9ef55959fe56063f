#!/usr/bin/env bash
# Builds cert-manager's controllers (main.go beside this file, against the pinned cert-manager module
# from the Go module proxy) into the per-user cache, and copies that module's CRDs (deploy/crds) beside
# the binary: the integration test of the MySQLCluster's cert-manager issuer path installs those CRDs
# and runs the binary on the host against the test control plane.
#
# Measured (27 Nov 2026, v1.21.2, 2 cores shared with a whole test run): 730 s cold, module downloads
# included; nothing once cached.
#
#   build-cert-manager.sh [VERSION]     prints the directory holding cert-manager-controllers and crds/
set -euo pipefail

version="${1:-${RECON8S_CERT_MANAGER_VERSION:-v1.21.2}}"
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/recon8s"
# The main is this repository's: a change to it is a new build.
out="$cache_root/cert-manager-$version-$(sha256sum "$here/main.go" | cut -c1-12)"

have_all() { [ -x "$out/cert-manager-controllers" ] && [ -f "$out/crds/cert-manager.io_certificates.yaml" ]; }
if have_all; then echo "$out"; exit 0; fi

mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-cert-manager-$version.lock"
  if ! flock -n 9; then
    echo "build-cert-manager: another process is building cert-manager $version; waiting for it" >&2
    flock 9
  fi
  if have_all; then echo "$out"; exit 0; fi
fi

if ! command -v go >/dev/null 2>&1; then
  echo "build-cert-manager: no Go toolchain on PATH. Install Go >= 1.26, or put cert-manager-controllers and crds/ at $out." >&2
  exit 3
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/recon8s-cert-manager.XXXXXX")"
partial="$(mktemp -d "$cache_root/cert-manager-$version.partial.XXXXXX")"
trap 'rm -rf "$work" "$partial"' EXIT
echo "build-cert-manager: building cert-manager $version into $out (first time only; a few minutes on 2 cores)" >&2
started=$SECONDS
cp "$here/main.go" "$work/"
cd "$work"
go mod init recon8s.test/cert-manager >/dev/null 2>&1
go mod edit -require="github.com/cert-manager/cert-manager@$version"
if ! GOFLAGS=-mod=mod go mod tidy >&2; then
  echo "build-cert-manager: could not resolve github.com/cert-manager/cert-manager@$version from the Go module proxy ($(go env GOPROXY))." >&2
  exit 4
fi
CGO_ENABLED=0 go build -trimpath -buildvcs=false -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$partial/cert-manager-controllers" . >&2
module_dir="$(go list -m -f '{{.Dir}}' "github.com/cert-manager/cert-manager")"
mkdir -p "$partial/crds"
cp "$module_dir"/deploy/crds/cert-manager.io_*.yaml "$partial/crds/"
chmod -R u+w "$partial"
chmod 755 "$partial"
rm -rf "$out"
mv "$partial" "$out"
trap 'rm -rf "$work"' EXIT
echo "build-cert-manager: built cert-manager $version in $((SECONDS - started)) s" >&2
echo "$out"
