#!/usr/bin/env bash
# Builds the Prometheus server of the same pinned release as promtool (build-promtool.sh) into the
# per-user cache (see go-install-cached.sh). The end-to-end tests of the shipped alerts and dashboard
# (test/e2e/mysql-ha.test.ts; the archive-gap test of test/e2e/mysql-backup.test.ts) run it on the
# host, scraping the members' metrics sidecars and the controller. It shares promtool's module graph, so once promtool is built most of its packages are
# compiled already. Built without the web UI's assets (no `builtinassets` tag): the HTTP API is whole.
#
#   build-prometheus.sh [MODULE_VERSION]     prints the path of the prometheus binary
set -euo pipefail
exec bash "$(dirname "$0")/../support/go-install-cached.sh" prometheus github.com/prometheus/prometheus/cmd/prometheus "${1:-${RECON8S_PROMTOOL_VERSION:-v0.316.0}}"
