#!/bin/bash
# recon8s init-config (run by bootstrap.sh, first): writes the settings that differ per member into the directory
# my.cnf includes, since one pod template serves every ordinal.
# Every member starts read-only, even for accounts with SUPER, whatever it was before it stopped: only
# the controller makes the primary writable, so a member that restarts can never take writes by itself.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
require_env HEADLESS_SERVICE

dir=${MEMBER_CONFIG_DIR:-$RECON8S_MEMBER_CONFIG_DIR} # overridden by unit tests only
pod=$(member_name)
ordinal=$(member_ordinal)
server_id=$((RECON8S_SERVER_ID_OFFSET + ordinal))

{
  printf '# Written by recon8s init-config for %s.\n' "$pod"
  printf '[mysqld]\n'
  printf 'server_id=%d\n' "$server_id"
  printf 'report_host=%s.%s\n' "$pod" "$HEADLESS_SERVICE"
  printf 'read_only=ON\n'
  printf 'super_read_only=ON\n'
} >"$dir/member.cnf.tmp"
mv -f -- "$dir/member.cnf.tmp" "$dir/member.cnf"
log "member $ordinal of ${pod%-*}: server_id=$server_id, read-only until the controller says otherwise"
