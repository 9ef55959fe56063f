#!/usr/bin/env bash
# Builds kube-router of one pinned release into the per-user cache (see ../support/go-install-cached.sh).
# The NetworkPolicy test runs only its policy controller on the node (--run-firewall, without its router
# and service proxy): an implementation that enforces networking.k8s.io/v1 NetworkPolicies with
# iptables and ipsets, the way a cluster's network plugin would.
#
#   build-kube-router.sh [VERSION]     prints the path of the kube-router binary
set -euo pipefail
exec bash "$(dirname "$0")/../support/go-install-cached.sh" kube-router \
  github.com/cloudnativelabs/kube-router/v2/cmd/kube-router "${1:-${RECON8S_KUBE_ROUTER_VERSION:-v2.1.0}}" \
  "-ldflags=-s -w"
