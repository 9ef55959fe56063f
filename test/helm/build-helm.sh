#!/usr/bin/env bash
# Builds helm (the CLI) of one pinned release into the per-user cache (see go-install-cached.sh). The
# tests use it to render the chart that `npm run synth` writes (dist/helm/recon8s) and compare it with
# the construct.
#
#   build-helm.sh [HELM_VERSION]     prints the path of the helm binary
set -euo pipefail
exec bash "$(dirname "$0")/../support/go-install-cached.sh" helm helm.sh/helm/v3/cmd/helm "${1:-${RECON8S_HELM_VERSION:-v3.22.0}}"
