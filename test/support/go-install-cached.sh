#!/usr/bin/env bash
# Builds one Go command of one pinned version from the Go module proxy into the per-user cache, beside
# the Kubernetes binaries, so every clone of the project (and CI) reuses it: helm (the chart tests),
# promtool (the alert-rule tests), versitygw (the object store of the backup tests).
#
#   go-install-cached.sh NAME PACKAGE VERSION [GO INSTALL FLAG...]     prints the path of the binary
#   e.g. go-install-cached.sh helm helm.sh/helm/v3/cmd/helm v3.22.0
set -euo pipefail

name=$1 package=$2 version=$3
shift 3
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/recon8s"
out="$cache_root/$name-$version"
# Other flags (build tags, ldflags) build another binary: a cache entry of its own.
if [ $# -gt 0 ]; then out="$out-$(printf '%s\n' "$@" | sha256sum | cut -c1-8)"; fi

if [ -x "$out/$name" ]; then echo "$out/$name"; exit 0; fi

# Concurrent test runs: one builds, the others wait (flock is released when its holder dies).
mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-$name-$version.lock"
  if ! flock -n 9; then
    echo "build-$name: another process is building $name $version; waiting for it" >&2
    flock 9
  fi
  if [ -x "$out/$name" ]; then echo "$out/$name"; exit 0; fi
fi

if ! command -v go >/dev/null 2>&1; then
  echo "build-$name: no Go toolchain on PATH. Install Go >= 1.26, or put $name $version at $out/$name." >&2
  exit 3
fi

partial="$(mktemp -d "$cache_root/$name-$version.partial.XXXXXX")"
trap 'rm -rf "$partial"' EXIT
echo "build-$name: building $name $version into $out (first time only; a few minutes on 2 cores)" >&2
started=$SECONDS
# Static and reproducible: no cgo, no VCS stamping; no debug information from the compiler (nobody
# debugs these, and it is ~12 % of the CPU of a cold build: test/controlplane/build-binaries.sh).
if ! CGO_ENABLED=0 GOBIN="$partial" GOFLAGS="-buildvcs=false -trimpath -gcflags=all=-dwarf=false" go install "$@" "$package@$version" >&2; then
  echo "build-$name: could not build $package@$version from the Go module proxy ($(go env GOPROXY))." >&2
  exit 4
fi
rm -rf "$out"
mv "$partial" "$out"
trap - EXIT
echo "build-$name: built $name $version in $((SECONDS - started)) s" >&2
echo "$out/$name"
