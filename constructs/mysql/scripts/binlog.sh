#!/bin/bash
# recon8s binlog: archives the primary's closed binary logs into the object store (with backups to an
# object store, from a CronJob).
#
# What makes the archive replayable to any point after the oldest kept backup:
# - The primary switches to a new binary log (FLUSH BINARY LOGS) at each run, so that every transaction
#   committed before the run is in a closed log; the closed ones whose transactions are not all archived
#   yet are copied (mysqlbinlog --read-from-remote-server --raw, one log at a time through the scratch
#   volume, never the whole history), each with a JSON file naming its GTIDs. The GTIDs of a closed log
#   are the difference of the Previous_gtids of the log after it and of its own: the server says, no
#   parsing of the log itself.
# - binlog/state.json then records what is archived and until when (the time of the switch): a restore
#   to a later point is refused rather than served short.
# - After a failover the new primary's logs hold the transactions it received as a replica too: a log
#   whose GTIDs are all archived is skipped, one that adds any is copied whole, and replay skips the
#   repeated transactions by GTID.
# - Logs only backups older than the oldest kept one needed are removed (their GTIDs are all in it).
# - A gap: transactions the primary no longer has in its logs (@@gtid_purged: expired after
#   binlog_expire_logs_seconds, or purged) that no run archived and that the newest backup does not
#   hold either. No point-in-time restore reaches past them, which otherwise shows only at restore
#   time: the run still archives what there is, and reports BinlogArchiveGap instead of
#   BinlogsArchived (the controller makes it a condition, an Event and a metric) until a newer backup
#   holds them. Before the first backup nothing can be restored, so nothing is a gap.
# It talks to the primary by its own name (report_host), so that a failover in the middle of a run
# cannot mix two servers' logs; a read-only member (not the primary, or fenced) archives nothing and says so.
# Nothing read from the store is trusted: every value of state.json, a manifest or a log's JSON is checked
# against its grammar (common.sh: checked, stored_field) before it reaches SQL, and a value that is not
# of it fails the run (BinlogArchiveFailed), naming the object and the value; a name in a listing that
# is not one of ours is left alone.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
# shellcheck source=store.sh
. "${BASH_SOURCE[0]%/*}/store.sh"
require_env CLUSTER_NAME PRIMARY_HOST MYSQL_BACKUP_PASSWORD

scratch=${BINLOG_SCRATCH:-$RECON8S_TMP}/binlog
errors=${BINLOG_SCRATCH:-$RECON8S_TMP}/binlog-errors.$$
mkdir -p -- "$scratch"
exec 2> >(tee -a "$errors" >&2)
finish() {
  local rc=$?
  if ((rc != 0)); then
    sleep 0.2 # the tee above may still be writing the last line
    report "$RECON8S_REPORT_BINLOG_ARCHIVE_FAILED" "archiving the binary logs into $(store_url binlog/) failed: $(last_line "$(cat -- "$errors" 2>/dev/null)")"
  fi
  rm -rf -- "$scratch" "$errors"
}
trap finish EXIT

host=$PRIMARY_HOST
member_sql() { # SQL...: bare rows, values escaped (a newline is \\n)
  mysql_client --defaults-extra-file=<(verified_cnf "$RECON8S_BACKUP_USER" "$MYSQL_BACKUP_PASSWORD") --host="$host" --port="$RECON8S_MYSQL_PORT" \
    --get-server-public-key --connect-timeout=10 --batch --skip-column-names -e "SET SESSION sql_mode = ''; $*"
}
# A GTID set expression's value, on one line.
gtid_sql() {
  member_sql "SELECT REPLACE($1, '\\n', '')"
}

member=$(member_sql 'SELECT @@report_host')
[[ $member =~ ^[a-z0-9.-]+$ ]] && host=$member
writable=$(member_sql 'SELECT @@read_only = 0 AND @@super_read_only = 0')
[[ $writable == 1 ]] || die "$host (behind $PRIMARY_HOST) is read-only: no primary to archive from right now"
uuid=
checked uuid uuid "$(member_sql 'SELECT @@server_uuid')" "the server_uuid of $host"

archived=
state=
if [[ -n $(store_list binlog --files-only --include /state.json) ]]; then
  state=$(store_cat binlog/state.json) || die "$(store_failure)"
  stored_field archived "$state" archivedGtids gtid-set "$(store_url binlog/state.json)" || archived=
fi

switched_at=$(member_sql "SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%dT%H:%i:%sZ')")
member_sql 'FLUSH BINARY LOGS' >/dev/null
mapfile -t logs < <(member_sql 'SHOW BINARY LOGS' | cut -f1)
((${#logs[@]} > 1)) || die "$host listed no closed binary log after FLUSH BINARY LOGS"
printf -v stamp '%(%Y%m%dT%H%M%SZ)T' -1

previous_gtids() { # LOG: the Previous_gtids event of a log (its second event)
  valid binlog-file "$1" || die "unexpected binary log name $(shown "$1")"
  local info gtids
  info=$(member_sql "SHOW BINLOG EVENTS IN '$1' LIMIT 2" | sed -n 2p | cut -f6)
  checked gtids gtid-set "${info//\\n/}" "the Previous_gtids of $host's binary log $1"
  printf '%s' "$gtids"
}

copied=0
next_previous=$(previous_gtids "${logs[-1]}")
# Newest first, so that each log's successor's Previous_gtids is at hand; uploads then go oldest first.
todo=()
for ((i = ${#logs[@]} - 2; i >= 0; i--)); do
  log_previous=$(previous_gtids "${logs[i]}")
  gtids=$(gtid_sql "GTID_SUBTRACT('$next_previous', '$log_previous')")
  next_previous=$log_previous
  [[ -n $gtids ]] || continue
  fresh=$(gtid_sql "GTID_SUBTRACT('$gtids', '$archived')")
  [[ -n $fresh ]] || continue
  # "|" and not a tab: read would merge the tabs around an empty field (a first log has no Previous_gtids).
  todo=("${logs[i]}|$log_previous|$gtids" "${todo[@]}")
done
for entry in "${todo[@]}"; do
  IFS='|' read -r file log_previous gtids <<<"$entry"
  name=$stamp-$uuid-$file
  mysqlbinlog --defaults-extra-file=<(verified_cnf "$RECON8S_BACKUP_USER" "$MYSQL_BACKUP_PASSWORD") --read-from-remote-server \
    --host="$host" --port="$RECON8S_MYSQL_PORT" --get-server-public-key --raw --result-file="$scratch/" "$file"
  gzip -c -- "$scratch/$file" | store_rclone rcat "$(store_path "binlog/$name.gz")"
  rm -f -- "$scratch/$file"
  printf '{"file":"%s","server":"%s","member":"%s","previousGtids":"%s","gtidSet":"%s"}\n' \
    "$file" "$uuid" "$host" "$log_previous" "$gtids" | store_rclone rcat "$(store_path "binlog/$name.json")"
  if [[ -n $archived ]]; then archived=$(gtid_sql "GTID_SUBTRACT('$archived,$gtids', '')"); else archived=$gtids; fi
  copied=$((copied + 1))
  log "archived $file of $host ($gtids) as $(store_url "binlog/$name.gz")"
done
state=$(printf '{"archivedGtids":"%s","coveredUntil":"%s","member":"%s","server":"%s"}' "$archived" "$switched_at" "$host" "$uuid")
store_rclone rcat "$(store_path binlog/state.json)" <<<"$state"

# Logs that only backups older than the oldest kept one needed: every GTID in that backup already.
mapfile -t complete < <(store_list base -R --files-only --include '/*/manifest.json' | sed -n 's|^\([0-9]\{8\}T[0-9]\{6\}Z\)/manifest\.json$|\1|p' | sort)
if ((${#complete[@]})); then
  oldest=${complete[0]}
  oldest_manifest=$(store_cat "base/$oldest/manifest.json") || die "$(store_failure)"
  stored_field oldest_gtids "$oldest_manifest" gtidSet gtid-set "$(store_url "base/$oldest/manifest.json")" || oldest_gtids=
  while IFS= read -r segment; do
    [[ $segment != state.json ]] || continue
    if ! valid segment "$segment"; then
      log "left alone: $(store_url binlog/)$(shown "$segment") is not named like an archived binary log"
      continue
    fi
    [[ ${segment:0:16} < $oldest && -n $oldest_gtids ]] || continue
    meta=$(store_cat "binlog/$segment") || die "$(store_failure)"
    stored_field gtids "$meta" gtidSet gtid-set "$(store_url "binlog/$segment")" || continue
    [[ $(member_sql "SELECT GTID_SUBSET('$gtids', '$oldest_gtids')") == 1 ]] || continue
    store_rclone deletefile "$(store_path "binlog/${segment%.json}.gz")"
    store_rclone deletefile "$(store_path "binlog/$segment")"
    log "removed $(store_url "binlog/${segment%.json}.gz"): the oldest kept backup ($oldest) holds all of it"
  done < <(store_list binlog --files-only --include '*.json')
fi
log "$copied binary logs archived; the archive holds every transaction committed before $switched_at"

gap=
if ((${#complete[@]})); then
  newest_manifest=$(store_cat "base/${complete[-1]}/manifest.json") || die "$(store_failure)"
  stored_field newest_gtids "$newest_manifest" gtidSet gtid-set "$(store_url "base/${complete[-1]}/manifest.json")" || newest_gtids=
  gap=$(gtid_sql "GTID_SUBTRACT(GTID_SUBTRACT(@@GLOBAL.gtid_purged, '$archived'), '$newest_gtids')")
fi
if [[ -n $gap ]]; then
  log "binary logs of $host expired before they were archived: $gap is in no archived log and not in the newest backup (${complete[-1]})"
  report "$RECON8S_REPORT_BINLOG_ARCHIVE_GAP" "${state%\}},\"gap\":\"$gap\",\"newestBackup\":\"${complete[-1]}\"}"
else
  report "$RECON8S_REPORT_BINLOGS_ARCHIVED" "$state"
fi
