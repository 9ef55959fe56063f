#!/usr/bin/env bash
# Builds the Prometheus server (or, with --promtool, promtool: build-promtool.sh) of one pinned release
# into the per-user cache (see go-install-cached.sh). The end-to-end tests of the shipped alerts and
# dashboard (test/e2e/mysql-ha.test.ts; the archive-gap test of test/e2e/mysql-backup.test.ts) run the
# server on the host, scraping the members' metrics sidecars and the controller. Built without the web
# UI's assets (no `builtinassets` tag): the HTTP API is whole.
#
# Both are built with the one service discovery the shipped scrape configuration uses (Kubernetes), as
# Prometheus's own build tags allow (plugins/plugin_*.go): the others bring every cloud's SDK, half of
# the source files the build compiles (1277 packages and 11,480 files for the server, 1038 and 5,728
# without them), on the critical path of a run on a fresh machine.
#
#   build-prometheus.sh [--promtool] [MODULE_VERSION]     prints the path of the binary
set -euo pipefail
command=prometheus
if [ "${1:-}" = --promtool ]; then
  command=promtool
  shift
fi
exec bash "$(dirname "$0")/../support/go-install-cached.sh" "$command" "github.com/prometheus/prometheus/cmd/$command" \
  "${1:-${RECON8S_PROMTOOL_VERSION:-v0.316.0}}" -tags remove_all_sd,enable_kubernetes_sd
