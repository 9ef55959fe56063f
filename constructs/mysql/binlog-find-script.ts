// What `recon8s binlog find NAME --statement TEXT` runs: a Job from the backup CronJob's template (so that
// it reaches the store exactly as the backups do) that searches the archived binary logs.
import { PATHS } from './layout.js';
import { STORE_REPORTS } from './object-store-script.js';
import { sh } from './shell.js';

/**
 * binlog_find_filter LOG: the transactions of one binary log (a file) that may hold the statement, as
 * mysqlbinlog --verbose prints them, with only lines left out, so that what the CLI parses is
 * mysqlbinlog's own text (lib/cli/binlog-find.ts):
 * - Row values (`###   @1=…`, `### WHERE`, `### SET`) and repeated row headers: a bulk DELETE is one
 *   `### DELETE FROM` line, not a million. The base64 of row events is never printed (DECODE-ROWS).
 * - Transactions that do not contain every word of FIND_WORDS (lower case, backquotes removed) anywhere:
 *   a coarse filter that keeps the output near the size of what matches; the CLI matches exactly.
 * - FIND_UNTIL ("YYYY-MM-DD HH:MM:SS", UTC): mysqlbinlog stops at the first event that began at or
 *   after it (everything after it in the log committed later). There is no such bound before: a
 *   transaction's events carry the time its statements began, not when it committed. The CLI bounds
 *   by each transaction's commit time, to the microsecond.
 * Transactions start at their GTID event: its header line holds "\tGTID\t".
 */
export const BINLOG_FIND_FUNCTIONS_SH = sh`# recon8s: the binary-log search's filter (sourced by find-binlog.sh, and by tests on a real log).
binlog_find_filter() {
  local options=(--base64-output=DECODE-ROWS --verbose)
  [[ -z \${FIND_UNTIL:-} ]] || options+=(--stop-datetime="$FIND_UNTIL")
  TZ=UTC0 mysqlbinlog "\${options[@]}" "$1" | awk -v words="\${FIND_WORDS:-}" '
    BEGIN { n = split(tolower(words), w, " ") }
    function flush(   t, i) {
      if (started && buf != "") {
        t = tolower(buf)
        gsub(/\`/, "", t)
        for (i = 1; i <= n; i++) if (index(t, w[i]) == 0) { buf = ""; return }
        printf "%s", buf
      }
      buf = ""
    }
    /^###   / { next }
    /^### (WHERE|SET)$/ { next }
    /\tGTID\t/ { flush(); started = 1; last = "" }
    /^### / { if ($0 == last) next }
    { last = $0; buf = buf $0 "\n" }
    END { flush() }'
}
`;

/**
 * The Job's script: every archived log (oldest first, by the name it was archived under; those archived
 * before FIND_SINCE hold nothing after it and are skipped) through binlog_find_filter. Its output, which
 * the CLI reads from the pod's log: `log<TAB><archived name>` before each log's transactions, and
 * `state<TAB>{state.json}` (how far the archive reaches) first.
 */
export const FIND_BINLOG_SH = sh`#!/bin/bash
# recon8s find-binlog: searches the archived binary logs in the object store, for recon8s binlog find.
set -euo pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
[[ -n \${STORE_BUCKET:-} ]] || die "the backups are not in an object store (spec.backup.s3): no binary logs are archived"
. "\${BASH_SOURCE[0]%/*}/store.sh"
. "\${BASH_SOURCE[0]%/*}/binlog-find.sh"
work=\${FIND_SCRATCH:-${PATHS.tmp}}/find-binlog.$$
mkdir -p -- "$work"
trap 'rm -rf -- "$work"' EXIT
if [[ -n $(store_list binlog --files-only --include /state.json) ]]; then
  printf 'state\t%s\n' "$(store_rclone cat "$(store_path binlog/state.json)")"
fi
since_stamp=
if [[ -n \${FIND_SINCE:-} ]]; then
  since_stamp=\${FIND_SINCE//[-:]/}
  since_stamp=\${since_stamp/ /T}Z
fi
count=0
while IFS= read -r segment; do
  [[ $segment =~ ^([0-9]{8}T[0-9]{6}Z)-.*\.json$ ]] || continue
  [[ -z $since_stamp || ! \${BASH_REMATCH[1]} < $since_stamp ]] || continue
  store_rclone cat "$(store_path "binlog/\${segment%.json}.gz")" | gunzip -c >"$work/log" ||
    die "cannot read $(store_url "binlog/\${segment%.json}.gz")"
  printf 'log\t%s\n' "\${segment%.json}"
  binlog_find_filter "$work/log"
  rm -f -- "$work/log"
  count=$((count + 1))
done < <(store_list binlog --files-only --include '*.json' | sort)
log "searched $count archived binary logs in $(store_url binlog/)"
report ${STORE_REPORTS.binlogsSearched} "$count archived binary logs searched"
`;
