#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit tester, on Prometheus's own PromQL engine) of
# one pinned release into the per-user cache (see go-install-cached.sh). The tests run the shipped
# alert rules through it. Prometheus 3.x's Go module versions are v0.3xx.y: v0.316.0 is Prometheus 3.16.0.
#
#   build-promtool.sh [MODULE_VERSION]     prints the path of the promtool binary
set -euo pipefail
exec bash "$(dirname "$0")/../support/go-install-cached.sh" promtool github.com/prometheus/prometheus/cmd/promtool "${1:-${RECON8S_PROMTOOL_VERSION:-v0.316.0}}"
