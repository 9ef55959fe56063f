#!/bin/bash
# recon8s verify-backup: restores a backup into a scratch mysqld and checks every table: the backup
# job's main container after the backup (its init container) with spec.backup.verify, and what
# `recon8s backup verify` runs on demand.
#
# What a verification proves, in order:
# - The backup's objects can be read and loaded: its dump streams from the store through gunzip into a
#   scratch mysqld of its own (a data directory on the emptyDir, no network, no password, nothing of
#   the cluster's: not even its Secret), as a restore loads it. A corrupted or truncated object fails
#   here, and the report names it.
# - The data is what was backed up: each table's row count and CHECKSUM TABLE, recorded by the backup
#   in its own snapshot (manifest.json "tables"), are compared right after the load, before anything
#   else runs. A backup that recorded none (older, or its snapshot could not be aligned) is compared by
#   nothing here, and the report says so.
# - The archived binary logs after it replay (every archived transaction, as a restore to the newest
#   point would), then CHECK TABLE finds nothing wrong in any table.
# The report (the termination message: the controller turns it into status.backup.lastVerified, an
# Event and metrics) is JSON: backup, tables, durationSeconds, replayedLogs, and the container's peak
# memory and CPU time (cgroup v2), or a message. A backup whose tables need more than half the scratch
# volume is not restored (Skipped): the emptyDir's limit would evict the pod half-way.
# The archive is treated as hostile, as a restore treats it (restore.sh): every value read from the store
# is checked against its grammar before it is used, and one that is not of it fails the verification,
# naming the object and the value.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
require_env CLUSTER_NAME VERIFY_SCRATCH_BYTES
# shellcheck source=store.sh
. "${BASH_SOURCE[0]%/*}/store.sh"
# shellcheck source=restore.sh
. "${BASH_SOURCE[0]%/*}/restore.sh"

scratch=${VERIFY_SCRATCH:-$RECON8S_VERIFY_SCRATCH}
sock=$scratch/mysqld.sock
errors=$scratch/errors.$$
started=$EPOCHSECONDS
name=
server_pid=
failure=
mkdir -p -- "$scratch"
exec 2> >(tee -a "$errors" >&2)

json_escape() {
  local v=${1//\\/\\\\}
  v=${v//$'\n'/ }
  printf '%s' "${v//\"/\\\"}"
}
# Peak memory and CPU time as JSON fields: the container's (cgroup v2), or where the container cannot
# see its cgroup, the scratch mysqld's own (its peak resident set, its CPU), read while it runs.
server_peak='' server_cpu=''
sample_server() {
  [[ -n $server_pid ]] || return 0
  local hwm stat
  hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$server_pid/status" 2>/dev/null) || hwm=
  [[ ! $hwm =~ ^[0-9]+$ ]] || server_peak=$((hwm * 1024))
  read -ra stat <"/proc/$server_pid/stat" 2>/dev/null || return 0
  [[ ${stat[13]:-} =~ ^[0-9]+$ && ${stat[14]:-} =~ ^[0-9]+$ ]] || return 0
  local tck
  tck=$(getconf CLK_TCK 2>/dev/null) || tck=100
  [[ $tck =~ ^[1-9][0-9]*$ ]] || tck=100
  server_cpu=$(((stat[13] + stat[14]) * 1000 / tck))
}
usage_fields() {
  local peak='' cpu=''
  peak=$(cat /sys/fs/cgroup/memory.peak 2>/dev/null) || peak=
  cpu=$(sed -n 's/^usage_usec \([0-9]*\)$/\1/p' /sys/fs/cgroup/cpu.stat 2>/dev/null) || cpu=
  [[ $cpu =~ ^[0-9]+$ ]] && cpu=$((cpu / 1000)) || cpu=$server_cpu
  [[ $peak =~ ^[0-9]+$ ]] || peak=$server_peak
  [[ -z $peak ]] || printf ',"peakMemoryBytes":%d' "$peak"
  [[ -z $cpu ]] || printf ',"cpuMilliseconds":%d' "$cpu"
}
fields() {
  printf '"backup":"%s","durationSeconds":%d%s' "$name" "$((EPOCHSECONDS - started))" "$(usage_fields)"
}
fail() {
  failure=$1
  die "$1"
}
finish() {
  local rc=$?
  sample_server
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if ((rc != 0)); then
    sleep 0.2 # the tee above may still be writing the last line
    [[ -n $failure ]] || failure="verifying backup ${name:-?} failed: $(last_line "$(cat -- "$errors" 2>/dev/null)")"
    report "$RECON8S_REPORT_BACKUP_VERIFICATION_FAILED" "{$(fields),\"message\":\"$(json_escape "$failure")\"}"
  fi
  rm -rf -- "${scratch:?}"/*
}
trap finish EXIT
on_untrusted=fail

mapfile -t backups < <(restore_backups)
((${#backups[@]})) || fail "no complete backup in $(store_url base/) to verify"
[[ -z ${VERIFY_BACKUP:-} ]] || checked VERIFY_BACKUP backup-name "$VERIFY_BACKUP" "the backup asked for (VERIFY_BACKUP)"
name=${VERIFY_BACKUP:-${backups[-1]}}
printf '%s\n' "${backups[@]}" | grep -qxF -- "$name" ||
  fail "backup $name is not in $(store_url base/); the newest there: $(last_words 5 "${backups[@]}")"
manifest_url=$(store_url "base/$name/manifest.json")
restore_manifest "$name"
stored_field gtids "$manifest" gtidSet gtid-set "$manifest_url" || gtids=
stored_field data_bytes "$manifest" dataBytes count "$manifest_url" || data_bytes=0
if ((data_bytes * 2 > VERIFY_SCRATCH_BYTES)); then
  why="backup $name holds $data_bytes bytes of tables (data and indexes); the scratch volume allows $VERIFY_SCRATCH_BYTES, and a restore needs about twice that: raise spec.backup.verify.scratchSize"
  log "not verified: $why"
  report "$RECON8S_REPORT_BACKUP_VERIFICATION_SKIPPED" "{$(fields),\"message\":\"$(json_escape "$why")\"}"
  exit 0
fi

stored_field method "$manifest" method backup-method "$manifest_url" || method=logical
log "verifying backup $name ($method, $(store_url "base/$name/")) in a scratch mysqld"
mkdir -p -- "$scratch/files"
# mysqld itself, not a function: server_pid must be the server's (to stop it, and to read its usage).
server_options=(--no-defaults --datadir="$scratch/data" --tmpdir="$scratch" --secure-file-priv="$scratch/files" --log-error="$scratch/mysqld.err")
# Small and quiet: no binary log (the restore's GTIDs are kept in mysql.gtid_executed), no network, no
# replication (a physical copy of a replica holds the replica's settings).
temporary_start() {
  mysqld "${server_options[@]}" --socket="$sock" --pid-file="$scratch/mysqld.pid" --skip-networking --mysqlx=OFF --skip-log-bin --skip-replica-start \
    --gtid-mode=ON --enforce-gtid-consistency=ON --performance-schema=OFF --innodb-buffer-pool-size=128M \
    --max-allowed-packet=1G "$@" &
  server_pid=$!
  for ((i = 0; i < 300; i++)); do
    mysqladmin --no-defaults --socket="$sock" --user=root ping >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || fail "the scratch mysqld exited: $(last_line "$(cat -- "$scratch/mysqld.err" 2>/dev/null)")"
    sleep 1
  done
  fail "the scratch mysqld did not answer within 5 minutes"
}
# Nothing runs before a physical copy is unpacked (restore_physical).
temporary_stop() { :; }
temporary_datadir=$scratch/data
temporary_sql() {
  mysql_client --no-defaults --socket="$sock" --user=root --batch --max-allowed-packet=1G "$@"
}

if [[ $method == physical ]]; then
  # 1. The physical copy, as a restore unpacks it: gunzip and tar say when the object is not what was
  # written, and the server started on it must hold the GTID set the manifest records.
  restore_physical "$name" "$gtids" "$temporary_datadir"
else
  mysqld "${server_options[@]}" --initialize-insecure || fail "the scratch mysqld could not initialize: $(last_line "$(cat -- "$scratch/mysqld.err" 2>/dev/null)")"
  temporary_start
  # 1. The dump, as a restore loads it. gunzip says when the object is not what was written.
  dump_url=$(store_url "base/$name/dump.sql.gz")
  if ! store_cat "base/$name/dump.sql.gz" | gunzip -c 2>"$scratch/gunzip.err" | temporary_sql --binary-mode 2>"$scratch/load.err"; then
    if why=$(store_failure); then fail "backup $name cannot be restored: $why"; fi
    # A corrupt object often fails in mysql first (garbage SQL), before gunzip reaches its checksum.
    if why=$(store_cat "base/$name/dump.sql.gz" | gzip -t 2>&1); then
      why=$(grep -m1 '^ERROR' "$scratch/load.err" || last_line "$(cat -- "$scratch/load.err" 2>/dev/null)")
      fail "backup $name cannot be restored: the object $dump_url does not load (${why%%; check the manual*})"
    fi
    fail "backup $name cannot be restored: the object $dump_url is corrupt ($(last_line "$why"))"
  fi
fi
temporary_sql -e "RESET BINARY LOGS AND GTIDS; SET GLOBAL gtid_purged = '$gtids';"

# 2. Each table as the backup recorded it in its snapshot.
tables=0
differences=()
bt='`'
entry_re='^\["(([^"\\]|\\.)*)",([0-9]+),([0-9]+)\]$'
if [[ $method == physical ]]; then
  checked="the physical copy holds the GTID set its manifest records"
elif [[ $manifest == *'"tables":['* ]]; then
  while IFS= read -r entry; do
    [[ $entry =~ $entry_re ]] || continue
    table=${BASH_REMATCH[1]} rows=${BASH_REMATCH[3]} sum=${BASH_REMATCH[4]}
    table=${table//\\\"/\"}
    table=${table//\\\\/\\}
    schema=${table%%.*} object=${table#*.}
    quoted="$bt${schema//$bt/$bt$bt}$bt.$bt${object//$bt/$bt$bt}$bt"
    got_rows=$(temporary_value "SELECT COUNT(*) FROM $quoted" 2>&1) || got_rows="missing"
    got_sum=$(temporary_value "CHECKSUM TABLE $quoted" 2>&1 | cut -f2) || got_sum="missing"
    tables=$((tables + 1))
    [[ $got_rows == "$rows" && $got_sum == "$sum" ]] ||
      differences+=("$table: $got_rows rows, checksum $got_sum (the backup recorded $rows rows, checksum $sum)")
  done < <(grep -oE '\["([^"\\]|\\.)*",[0-9]+,[0-9]+\]' <<<"$manifest")
  ((${#differences[@]} == 0)) ||
    fail "backup $name restores different data than it recorded: $(printf '%s; ' "${differences[@]:0:3}")${differences[3]:+ (and $((${#differences[@]} - 3)) more tables)}"
  checked="${tables} tables match the row counts and checksums recorded in the backup's snapshot"
else
  why=$(json_field "$manifest" checksumsSkipped) && why="the manifest says $(shown "$why")" || why="it predates them"
  checked="the backup recorded no checksums ($why)"
fi
log "$checked"

# 3. Every archived transaction after it, then CHECK TABLE everywhere.
replayed=0
point='' before='' target=''
volume=$scratch
if [[ -n $(store_list binlog --files-only --include /state.json) ]]; then
  state=$(store_cat binlog/state.json) || fail "$(store_failure)"
  stored_field target "$state" archivedGtids gtid-set "$(store_url binlog/state.json)" || target=
fi
if [[ -n $target && $(temporary_value "SELECT GTID_SUBSET('$target', @@GLOBAL.gtid_executed)") != 1 ]]; then
  restore_replay
fi
bad=()
while IFS=$'\t' read -r schema object; do
  [[ -n $object ]] || continue
  quoted="$bt${schema//$bt/$bt$bt}$bt.$bt${object//$bt/$bt$bt}$bt"
  while IFS=$'\t' read -r _ _ type text; do
    [[ $type != error && ! ($type == status && $text != OK) ]] || bad+=("$schema.$object: $text")
  done < <(temporary_value "CHECK TABLE $quoted")
done < <(temporary_value "SELECT table_schema, table_name FROM information_schema.TABLES WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') ORDER BY 1, 2")
((${#bad[@]} == 0)) || fail "CHECK TABLE found errors after restoring backup $name: $(printf '%s; ' "${bad[@]:0:3}")"

sample_server
log "backup $name verified: $checked; $replayed archived binary logs replayed after it; CHECK TABLE found nothing wrong"
report "$RECON8S_REPORT_BACKUP_VERIFIED" "{$(fields),\"tables\":$tables,\"replayedLogs\":$replayed,\"checksums\":$([[ $checked == *match* ]] && echo true || echo false)}"
