#!/bin/bash
# recon8s find-binlog: searches the archived binary logs in the object store, for recon8s binlog find
# (a Job from the backup CronJob's template, so that it reaches the store exactly as the backups do).
#
# The Job's script: every archived log (oldest first, by the name it was archived under; those archived
# before FIND_SINCE hold nothing after it and are skipped) through binlog_find_filter. Its output, which
# the CLI reads from the pod's log: `log<TAB><archived name>` before each log's transactions, and
# `state<TAB>{state.json}` (how far the archive reaches) first.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
[[ -n ${STORE_BUCKET:-} ]] || die "the backups are not in an object store (spec.backup.s3): no binary logs are archived"
# shellcheck source=store.sh
. "${BASH_SOURCE[0]%/*}/store.sh"
# shellcheck source=binlog-filter.sh
. "${BASH_SOURCE[0]%/*}/binlog-filter.sh"
work=${FIND_SCRATCH:-$RECON8S_TMP}/find-binlog.$$
mkdir -p -- "$work"
trap 'rm -rf -- "$work"' EXIT
if [[ -n $(store_list binlog --files-only --include /state.json) ]]; then
  state=$(store_cat binlog/state.json) || die "$(store_failure)"
  printf 'state\t%s\n' "${state//[$'\n\r']/ }"
fi
since_stamp=
if [[ -n ${FIND_SINCE:-} ]]; then
  since_stamp=${FIND_SINCE//[-:]/}
  since_stamp=${since_stamp/ /T}Z
fi
count=0
while IFS= read -r segment; do
  # Only what is named like an archived log (store.sh): a name from the store is never trusted.
  valid segment "$segment" || continue
  [[ -z $since_stamp || ! ${segment:0:16} < $since_stamp ]] || continue
  store_cat "binlog/${segment%.json}.gz" | gunzip -c >"$work/log" ||
    die "$(store_failure || echo "cannot read $(store_url "binlog/${segment%.json}.gz")")"
  printf 'log\t%s\n' "${segment%.json}"
  binlog_find_filter "$work/log"
  rm -f -- "$work/log"
  count=$((count + 1))
done < <(store_list binlog --files-only --include '*.json' | sort)
log "searched $count archived binary logs in $(store_url binlog/)"
report "$RECON8S_REPORT_BINLOGS_SEARCHED" "$count archived binary logs searched"
