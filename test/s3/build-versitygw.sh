#!/usr/bin/env bash
# Builds versitygw (an S3-compatible server) of one pinned release into the per-user cache (see
# go-install-cached.sh). The tests run it as the object store that backups are written to
# (test/s3/index.ts).
#
#   build-versitygw.sh [VERSITYGW_VERSION]     prints the path of the versitygw binary
set -euo pipefail
version="${1:-${RECON8S_VERSITYGW_VERSION:-v1.8.0}}"
# The release stamped as upstream's Makefile does, so `versitygw --version` names it.
exec bash "$(dirname "$0")/../support/go-install-cached.sh" versitygw github.com/versity/versitygw/cmd/versitygw "$version" \
  -ldflags "-X=main.Version=$version"
