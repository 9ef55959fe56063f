#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit tester, on Prometheus's own PromQL engine) of
# one pinned release into the per-user cache, as the server is (build-prometheus.sh: the same tags). The
# tests run the shipped alert rules through it. Prometheus 3.x's Go module versions are v0.3xx.y:
# v0.316.0 is Prometheus 3.16.0.
#
#   build-promtool.sh [MODULE_VERSION]     prints the path of the promtool binary
set -euo pipefail
exec bash "$(dirname "$0")/build-prometheus.sh" --promtool "$@"
