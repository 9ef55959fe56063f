# recon8s: the binary-log search's filter (sourced by find-binlog.sh, and by tests on a real log).
# shellcheck shell=bash
#
# binlog_find_filter LOG: the transactions of one binary log (a file) that may hold the statement, as
# mysqlbinlog --verbose prints them, with only lines left out, so that what the CLI parses is
# mysqlbinlog's own text (lib/cli/binlog-command.ts):
# - Row values (`###   @1=…`, `### WHERE`, `### SET`) and repeated row headers: a bulk DELETE is one
#   `### DELETE FROM` line, not a million. The base64 of row events is never printed (DECODE-ROWS).
# - Transactions that do not contain every word of FIND_WORDS (lower case, backquotes removed) anywhere:
#   a coarse filter that keeps the output near the size of what matches; the CLI matches exactly.
# - FIND_UNTIL ("YYYY-MM-DD HH:MM:SS", UTC): mysqlbinlog stops at the first event that began at or
#   after it (everything after it in the log committed later). There is no such bound before: a
#   transaction's events carry the time its statements began, not when it committed. The CLI bounds
#   by each transaction's commit time, to the microsecond.
# Transactions start at their GTID event: its header line holds "\tGTID\t".
binlog_find_filter() {
  local options=(--base64-output=DECODE-ROWS --verbose)
  [[ -z ${FIND_UNTIL:-} ]] || options+=(--stop-datetime="$FIND_UNTIL")
  TZ=UTC0 mysqlbinlog "${options[@]}" "$1" | awk -v words="${FIND_WORDS:-}" '
    BEGIN { n = split(tolower(words), w, " ") }
    function flush(   t, i) {
      if (started && buf != "") {
        t = tolower(buf)
        gsub(/`/, "", t)
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
