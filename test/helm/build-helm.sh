#!/usr/bin/env bash
# Builds helm (the CLI) of one pinned release from the Go module proxy into the per-user cache, beside
# the Kubernetes binaries, so every clone of the project (and CI) reuses it. The tests use it to render
# the chart that `npm run synth` writes (dist/helm/recon8s) and compare it with the construct.
#
#   build-helm.sh [HELM_VERSION]     prints the path of the helm binary
set -euo pipefail

helm_version="${1:-${RECON8S_HELM_VERSION:-v3.22.0}}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/recon8s"
out="$cache_root/helm-$helm_version"

if [ -x "$out/helm" ]; then echo "$out/helm"; exit 0; fi

# Concurrent test runs: one builds, the others wait (flock is released when its holder dies).
mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-helm-$helm_version.lock"
  if ! flock -n 9; then
    echo "build-helm: another process is building helm $helm_version; waiting for it" >&2
    flock 9
  fi
  if [ -x "$out/helm" ]; then echo "$out/helm"; exit 0; fi
fi

if ! command -v go >/dev/null 2>&1; then
  echo "build-helm: no Go toolchain on PATH. Install Go >= 1.26, or put helm $helm_version at $out/helm." >&2
  exit 3
fi

partial="$(mktemp -d "$cache_root/helm-$helm_version.partial.XXXXXX")"
trap 'rm -rf "$partial"' EXIT
echo "build-helm: building helm $helm_version into $out (first time only; a few minutes on 2 cores)" >&2
started=$SECONDS
# Static and reproducible: no cgo, no VCS stamping.
if ! CGO_ENABLED=0 GOBIN="$partial" GOFLAGS=-buildvcs=false go install "helm.sh/helm/v3/cmd/helm@$helm_version" >&2; then
  echo "build-helm: could not build helm.sh/helm/v3/cmd/helm@$helm_version from the Go module proxy ($(go env GOPROXY))." >&2
  exit 4
fi
rm -rf "$out"
mv "$partial" "$out"
trap - EXIT
echo "build-helm: built helm $helm_version in $((SECONDS - started)) s" >&2
echo "$out/helm"
