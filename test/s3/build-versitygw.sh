#!/usr/bin/env bash
# Builds versitygw (an S3-compatible server) of one pinned release from the Go module proxy into the
# per-user cache, beside the Kubernetes binaries and helm, so every clone of the project (and CI) reuses
# it. The tests run it as the object store that backups are written to (test/s3/index.ts).
#
#   build-versitygw.sh [VERSITYGW_VERSION]     prints the path of the versitygw binary
set -euo pipefail

versitygw_version="${1:-${RECON8S_VERSITYGW_VERSION:-v1.8.0}}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/recon8s"
out="$cache_root/versitygw-$versitygw_version"

if [ -x "$out/versitygw" ]; then echo "$out/versitygw"; exit 0; fi

# Concurrent test runs: one builds, the others wait (flock is released when its holder dies).
mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/.build-versitygw-$versitygw_version.lock"
  if ! flock -n 9; then
    echo "build-versitygw: another process is building versitygw $versitygw_version; waiting for it" >&2
    flock 9
  fi
  if [ -x "$out/versitygw" ]; then echo "$out/versitygw"; exit 0; fi
fi

if ! command -v go >/dev/null 2>&1; then
  echo "build-versitygw: no Go toolchain on PATH. Install Go >= 1.26, or put versitygw $versitygw_version at $out/versitygw." >&2
  exit 3
fi

partial="$(mktemp -d "$cache_root/versitygw-$versitygw_version.partial.XXXXXX")"
trap 'rm -rf "$partial"' EXIT
echo "build-versitygw: building versitygw $versitygw_version into $out (first time only; a few minutes on 2 cores)" >&2
started=$SECONDS
# Static and reproducible: no cgo, no VCS stamping; the release stamped as upstream's Makefile does, so
# `versitygw --version` names it.
if ! CGO_ENABLED=0 GOBIN="$partial" GOFLAGS=-buildvcs=false go install -ldflags "-X=main.Version=$versitygw_version" "github.com/versity/versitygw/cmd/versitygw@$versitygw_version" >&2; then
  echo "build-versitygw: could not build github.com/versity/versitygw/cmd/versitygw@$versitygw_version from the Go module proxy ($(go env GOPROXY))." >&2
  exit 4
fi
rm -rf "$out"
mv "$partial" "$out"
trap - EXIT
echo "build-versitygw: built versitygw $versitygw_version in $((SECONDS - started)) s" >&2
echo "$out/versitygw"
