#!/bin/bash
# recon8s backup: dumps the cluster into the backup volume or object store and keeps the newest BACKUP_RETAIN.
#
# What makes the dump restorable into a new MySQLCluster (pipe it into the new primary as root):
# - One member answers everything: the Service picks one, and the rest of the run talks to that pod by
#   the name it reports (report_host, its own DNS name), so the schema list, the data and the accounts
#   all come from the same server. Where that name cannot be reached, every query goes through the
#   Service (and says so).
# - The application's schemas only, never the mysql schema: restoring its tables would overwrite the
#   new cluster's own accounts and replication metadata (a replica then stops on "DROP TABLE
#   slave_worker_info", seen on MySQL 9.7), and the new cluster has its own credentials Secret.
# - --single-transaction: one consistent InnoDB snapshot of all of them, without locking writers out.
#   --routines --events --triggers: the schemas' code too. --hex-blob: binary columns survive any
#   client character set.
# - The application's accounts (everyone but root, the replication, clone, backup and controller's accounts, the
#   metrics sidecar's account and MySQL's own mysql.* accounts) follow as CREATE USER IF NOT EXISTS with their
#   password hashes (hex), then their grants.
#   Locked accounts first: roles are usually locked, and a user's DEFAULT ROLE must exist before it.
# - --set-gtid-purged=COMMENTED records the snapshot's GTID point as a comment. mysqldump still writes
#   SET @@SESSION.SQL_LOG_BIN= 0 before the data, which would keep the restored rows on the new primary
#   alone (seen on MySQL 9.7: its replica then stops on the first later write); that one line is
#   dropped, so a restore runs as new transactions of the new cluster and reaches its replicas.
# On a volume the file is written as <name>-<UTC time>.sql.gz.partial and renamed only once complete
# (with BACKUP_ENCRYPTION_KEY_FILE, spec.backup.encryption: <name>-<UTC time>.sql.gz.crypt, written
# through rclone's crypt remote over the volume's directory, encryption.sh, so that nothing readable
# without the key ever reaches the volume);
# in an object store (STORE_BUCKET set, see store.sh) it streams to base/<UTC time>/dump.sql.gz
# and manifest.json follows last. Either way a failed or interrupted run never leaves something that
# looks like a backup, and retention (run only after a success) never counts one. Only what is named
# exactly like this cluster's backups is ever removed: the volume or bucket may be shared.
# The job's termination message says what happened (BackupCompleted with the backup's facts as JSON,
# or BackupFailed and why): the controller turns it into status.backup, an Event and metrics.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
require_env CLUSTER_NAME BACKUP_HOST BACKUP_RETAIN MYSQL_BACKUP_PASSWORD
[[ $BACKUP_RETAIN =~ ^[1-9][0-9]*$ ]] || die "BACKUP_RETAIN must be a positive integer, got '$BACKUP_RETAIN'"
method=
checked method backup-method "${BACKUP_METHOD:-logical}" "BACKUP_METHOD (spec.backup.method)"
# The accounts this job logs in as, in this one place: every query and the dump (backup_user), and the
# clone of a physical backup (clone_user, the clone account: BACKUP_ADMIN, which the backup account lacks).
backup_user=$RECON8S_BACKUP_USER backup_password=$MYSQL_BACKUP_PASSWORD
clone_user=$RECON8S_CLONE_USER clone_password=''
if [[ $method == physical ]]; then
  require_env MYSQL_CLONE_PASSWORD
  clone_password=$MYSQL_CLONE_PASSWORD
fi
to_store=
if [[ -n ${STORE_BUCKET:-} ]]; then
  # shellcheck source=store.sh
  . "${BASH_SOURCE[0]%/*}/store.sh"
  to_store=1
fi
# shellcheck source=physical.sh
. "${BASH_SOURCE[0]%/*}/physical.sh"

scratch=${BACKUP_SCRATCH:-$RECON8S_TMP} # overridden by unit tests only
dir=${BACKUP_DIR:-$RECON8S_BACKUP_DIR}
started=$EPOCHSECONDS
printf -v stamp '%(%Y%m%dT%H%M%SZ)T' "$started"
printf -v started_at '%(%Y-%m-%dT%H:%M:%SZ)T' "$started"
gtid_header=$scratch/gtid-header.$$
errors=$scratch/backup-errors.$$
artifact=dump.sql.gz
[[ $method == logical ]] || artifact=datadir.tar.gz
if [[ -n $to_store ]]; then
  location=$(store_url "base/$stamp/")
else
  [[ $method == logical ]] || die "a physical backup needs an object store (spec.backup.s3)"
  final=$dir/$CLUSTER_NAME-$stamp.sql.gz
  if [[ -n ${BACKUP_ENCRYPTION_KEY_FILE:-} ]]; then
    PATH=$RECON8S_TOOLS_DIR:$PATH
    # shellcheck source=encryption.sh
    . "${BASH_SOURCE[0]%/*}/encryption.sh"
    crypt_remote "$dir" "$BACKUP_ENCRYPTION_KEY_FILE" \
      "the backup volume's encryption key ($BACKUP_ENCRYPTION_KEY_FILE, from the Secret that backup.encryption.secretRef names)" \
      backup.encryption.rcloneImage
    final+=.crypt
  fi
  partial=$final.partial
  location=$final
fi
# Everything this script says on stderr is also kept, so that a failure can say why in its report.
exec 2> >(tee -a "$errors" >&2)
finish() {
  local rc=$?
  [[ -z ${partial:-} ]] || rm -f -- "$partial"
  if ((rc != 0)); then
    sleep 0.2 # the tee above may still be writing the last line
    report "$RECON8S_REPORT_BACKUP_FAILED" "backup $stamp into $location failed: $(last_line "$(cat -- "$errors" 2>/dev/null)")"
  fi
  physical_cleanup
  rm -f -- "$gtid_header" "$errors"
}
trap finish EXIT

source_sql() { # HOST SQL: one result per line, unescaped
  mysql_client --defaults-extra-file=<(verified_cnf "$backup_user" "$backup_password") --host="$1" --port="$RECON8S_MYSQL_PORT" \
    --get-server-public-key --connect-timeout=10 --batch --skip-column-names --raw -e "$2"
}

member=$(source_sql "$BACKUP_HOST" 'SELECT @@report_host')
host=$BACKUP_HOST
if [[ $member =~ ^[a-z0-9.-]+$ ]] && source_sql "$member" 'SELECT 1' >/dev/null 2>&1; then
  host=$member
else
  log "cannot reach the member behind $BACKUP_HOST by its name '$member'; every query goes through $BACKUP_HOST"
fi
schemas=$(source_sql "$host" "SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') ORDER BY schema_name")
mapfile -t schemas <<<"$schemas"
[[ -n ${schemas[0]:-} ]] || schemas=()
accounts=$(source_sql "$host" "SELECT CONCAT(QUOTE(user), '@', QUOTE(host)) FROM mysql.user WHERE user NOT IN ('root', '$RECON8S_REPLICATION_USER', '$RECON8S_CLONE_USER', '$RECON8S_BACKUP_USER', '$RECON8S_ADMIN_USER', '$RECON8S_EXPORTER_USER') AND user NOT LIKE 'mysql.%' ORDER BY account_locked = 'Y' DESC, user, host")
mapfile -t accounts <<<"$accounts"
[[ -n ${accounts[0]:-} ]] || accounts=()

dump_accounts() {
  local account creates='SET SESSION print_identified_with_as_hex = ON;' grants=''
  ((${#accounts[@]})) || return 0
  for account in "${accounts[@]}"; do
    creates+="SHOW CREATE USER $account;"
    grants+="SHOW GRANTS FOR $account;"
  done
  printf '\n-- recon8s: the application accounts\n'
  source_sql "$host" "$creates" | sed -e 's/^CREATE USER /CREATE USER IF NOT EXISTS /' -e 's/$/;/'
  source_sql "$host" "$grants" | sed -e 's/$/;/'
}

# The dump on stdout, gzipped. Its GTID point (the header's commented SET @@GLOBAL.GTID_PURGED: 9.7 writes
# "/* SET @@GLOBAL.GTID_PURGED='+<set>';*/", 8.x "-- SET ... '+'*/ '<set>';"; the set goes on over
# further lines when it names several servers) is copied aside as it streams past.
dump() {
  {
    if ((${#schemas[@]})); then
      mysqldump --defaults-extra-file=<(verified_cnf "$backup_user" "$backup_password") --host="$host" --port="$RECON8S_MYSQL_PORT" \
        --get-server-public-key --single-transaction --routines --events --triggers --hex-blob \
        --set-gtid-purged=COMMENTED --databases "${schemas[@]}" |
        sed -e '/^SET @@SESSION\.SQL_LOG_BIN= 0;$/d' -e '/^\(-- \|\/\* \)SET @@GLOBAL\.GTID_PURGED=/{' -e ':more' \
          -e "/';/!{N;b more" -e '}' -e "w $gtid_header" -e '}'
    fi
    dump_accounts
  } | gzip -c
}

# The tables' row counts and CHECKSUM TABLE, recorded in the manifest for the verification to compare
# (spec.backup.verify): taken in a snapshot of their own that sees exactly what the dump's does. A
# session takes FLUSH TABLES WITH READ LOCK (no commit anywhere on the member: lock_wait_timeout 10 s),
# opens its consistent snapshot and reads the GTID set; the dump starts; once mysqldump's own snapshot
# is open (its transaction in INNODB_TRX) or it has ended, the lock goes (a fraction of a second, or at
# most 5 s), and the counts and checksums are read in the session's snapshot while the dump streams.
# Anything that goes wrong here costs the checksums (said in the manifest and the log), never the backup.
checks=
checks_skipped=
snapshot_gtids=
table_count=0
json_escape() {
  local v=${1//\\/\\\\}
  printf '%s' "${v//\"/\\\"}"
}
snapshot_begin() {
  coproc SNAPSHOT {
    mysql_client --defaults-extra-file=<(verified_cnf "$backup_user" "$backup_password") --host="$host" --port="$RECON8S_MYSQL_PORT" \
      --get-server-public-key --connect-timeout=10 --batch --skip-column-names --raw --unbuffered 2>&1
  }
  if snapshot_sql "SET SESSION sql_mode = ''; SET SESSION lock_wait_timeout = 10; FLUSH TABLES WITH READ LOCK; SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; START TRANSACTION WITH CONSISTENT SNAPSHOT; SELECT REPLACE(@@GLOBAL.gtid_executed, '\n', '')"; then
    snapshot_gtids=$snapshot_out
  else
    checks_skipped="the checksums' snapshot could not be opened: $(last_line "$snapshot_out")"
  fi
}
# snapshot_sql SQL: the session's rows until a marker, in snapshot_out (never in a subshell: the
# coprocess's descriptors are the main shell's). A failure ends the session: mysql --batch stops.
snapshot_sql() {
  local line
  snapshot_out=
  [[ -n ${SNAPSHOT_PID:-} ]] || return 1
  printf '%s;\nSELECT 0x7265636f6e38732d656e64;\n' "$1" >&"${SNAPSHOT[1]}"
  while IFS= read -r -t 600 line <&"${SNAPSHOT[0]}"; do
    [[ $line != recon8s-end ]] || return 0
    snapshot_out+=${snapshot_out:+$'\n'}$line
  done
  return 1
}
snapshot_checks() {
  local dump_pid=$1 open i rows sum
  for ((i = 0; i < 50; i++)); do
    open=$(source_sql "$host" "SELECT COUNT(*) FROM information_schema.INNODB_TRX t JOIN performance_schema.session_connect_attrs a ON a.PROCESSLIST_ID = t.trx_mysql_thread_id WHERE a.ATTR_NAME = 'program_name' AND a.ATTR_VALUE = 'mysqldump'") || open=0
    [[ $open == 0 ]] || break
    kill -0 "$dump_pid" 2>/dev/null || break
    sleep 0.1
  done
  snapshot_sql 'UNLOCK TABLES' >/dev/null || return 1
  [[ $open != 0 ]] || ! kill -0 "$dump_pid" 2>/dev/null || {
    checks_skipped="mysqldump's snapshot did not open within 5 s of the checksums' own"
    return 0
  }
  ((${#schemas[@]})) || return 0
  local list schema name quoted bt='`'
  list=$(printf "'%s'," "${schemas[@]//\'/\'\'}")
  while IFS=$'\t' read -r schema name; do
    [[ -n $name ]] || continue
    quoted="$bt${schema//$bt/$bt$bt}$bt.$bt${name//$bt/$bt$bt}$bt"
    snapshot_sql "SELECT COUNT(*) FROM $quoted" || return 1
    rows=$snapshot_out
    snapshot_sql "CHECKSUM TABLE $quoted" || return 1
    sum=${snapshot_out##*$'\t'}
    [[ $rows =~ ^[0-9]+$ && $sum =~ ^[0-9]+$ ]] || return 1
    checks+="${checks:+,}[\"$(json_escape "$schema.$name")\",$rows,$sum]"
    table_count=$((table_count + 1))
  done < <(source_sql "$host" "SELECT table_schema, table_name FROM information_schema.TABLES WHERE table_type = 'BASE TABLE' AND table_schema IN (${list%,}) ORDER BY table_schema, table_name")
}
snapshot_end() {
  [[ -z ${SNAPSHOT_PID:-} ]] || { snapshot_sql 'COMMIT' >/dev/null || true; }
  local fd=${SNAPSHOT[1]:-}
  [[ -z $fd ]] || exec {fd}>&-
  [[ -z $checks_skipped ]] || { checks=; table_count=0; }
}

log "backing up $host:$RECON8S_MYSQL_PORT ($method: ${#schemas[@]} schemas, ${#accounts[@]} accounts) into $location"
: >"$gtid_header"
gtids=
if [[ $method == physical ]]; then
  physical_backup "$host" "base/$stamp/$artifact"
  table_count=$(source_sql "$host" "SELECT COUNT(*) FROM information_schema.TABLES WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema')")
  checks_skipped="a physical copy: its verification checks the GTID set and every table of the data directory it restores (CHECK TABLE)"
fi
if [[ -n $to_store && $method == physical ]]; then
  size=$(store_rclone size --json "$(store_path "base/$stamp/$artifact")")
  stored_field size "$size" bytes count "the store's answer for the size of $(store_url "base/$stamp/$artifact")" ||
    die "the store did not say the size of $(store_url "base/$stamp/$artifact")"
elif [[ -n $to_store ]]; then
  snapshot_begin
  { dump | store_rclone rcat "$(store_path "base/$stamp/dump.sql.gz")"; } &
  dump_pid=$!
  if [[ -z $checks_skipped ]]; then snapshot_checks "$dump_pid" || checks_skipped="the tables could not be checksummed: $(last_line "$(cat -- "$errors" 2>/dev/null)")"; fi
  snapshot_end
  wait "$dump_pid"
  size=$(store_rclone size --json "$(store_path "base/$stamp/dump.sql.gz")")
  stored_field size "$size" bytes count "the store's answer for the size of $(store_url "base/$stamp/dump.sql.gz")" ||
    die "the store did not say the size of $(store_url "base/$stamp/dump.sql.gz")"
elif [[ -n ${crypt_secret:-} ]]; then
  # The crypt remote is the volume's directory, and names are kept: secure:<file> is $dir/<file>.
  dump | crypt_rclone --stats 0 --log-level ERROR rcat "secure:${partial##*/}"
  sync -- "$partial"
  size=$(stat -c %s -- "$partial")
else
  dump >"$partial"
  sync -- "$partial"
  size=$(stat -c %s -- "$partial")
fi
[[ $method == physical ]] || gtids=$(dump_gtid_set "$gtid_header")
printf -v ended_at '%(%Y-%m-%dT%H:%M:%SZ)T' -1
manifest=$(printf '{"name":"%s","cluster":"%s","source":"%s","gtidSet":"%s","startTime":"%s","endTime":"%s","durationSeconds":%d,"sizeBytes":%d,"location":"%s"' \
  "$stamp" "$CLUSTER_NAME" "$host" "$gtids" "$started_at" "$ended_at" "$((EPOCHSECONDS - started))" "$size" "$location")
if [[ -n $to_store ]]; then
  if [[ $method == logical && -z $checks_skipped && $snapshot_gtids != "$gtids" ]]; then
    checks_skipped="the dump's snapshot (GTID set '$gtids') is not the checksums' ('$snapshot_gtids')"
  fi
  [[ -z $checks_skipped ]] || log "no table checksums recorded: $checks_skipped"
  # The report (a termination message, at most 4 KiB) counts the tables; the manifest lists them.
  # dataBytes: a dump's tables (data and indexes); a physical copy's whole data directory.
  [[ $method == physical ]] ||
    data_bytes=$(source_sql "$host" "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.TABLES WHERE table_schema NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema')")
  extra=$(printf ',"method":"%s","dataBytes":%d,"tableCount":%d' "$method" "$data_bytes" "$table_count")
  [[ $method == logical ]] || extra+=$(printf ',"cloneSeconds":%d,"streamSeconds":%d' "$clone_seconds" "$stream_seconds")
  [[ -z $checks_skipped ]] || extra+=$(printf ',"checksumsSkipped":"%s"' "$(json_escape "$checks_skipped")")
  store_rclone rcat "$(store_path "base/$stamp/manifest.json")" <<<"$manifest$extra,\"tables\":[$checks]}"
  manifest+="$extra}"
else
  manifest+='}'
  mv -f -- "$partial" "$final"
  partial=
fi
log "backup complete: $location ($size bytes, GTID set '$gtids')"

# Retention: the newest BACKUP_RETAIN complete backups stay. Names sort by time: the oldest come first.
if [[ -n $to_store ]]; then
  mapfile -t complete < <(store_list base -R --files-only --include '/*/manifest.json' | sed -n 's|^\([0-9]\{8\}T[0-9]\{6\}Z\)/manifest\.json$|\1|p' | sort)
  for ((i = 0; i < ${#complete[@]} - BACKUP_RETAIN; i++)); do
    store_rclone purge "$(store_path "base/${complete[i]}")"
    log "removed the old backup $(store_url "base/${complete[i]}/")"
  done
  # What failed runs left (a dump without a manifest) once a day has passed: never one still being written.
  printf -v day_ago '%(%Y%m%dT%H%M%SZ)T' "$((started - 86400))"
  while IFS= read -r name; do
    name=${name%/}
    [[ $name =~ ^[0-9]{8}T[0-9]{6}Z$ && $name < $day_ago ]] || continue
    printf '%s\n' "${complete[@]}" | grep -qx -- "$name" && continue
    store_rclone purge "$(store_path "base/$name")"
    log "removed the incomplete backup $(store_url "base/$name/")"
  done < <(store_list base --dirs-only)
else
  # Encrypted (.sql.gz.crypt) or not (written before backup.encryption was set): one sequence by time.
  shopt -s nullglob
  backups=("$dir/$CLUSTER_NAME"-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z.sql.gz{,.crypt})
  ((${#backups[@]} == 0)) || mapfile -t backups < <(printf '%s\n' "${backups[@]}" | sort)
  for ((i = 0; i < ${#backups[@]} - BACKUP_RETAIN; i++)); do
    rm -f -- "${backups[i]}"
    log "removed the old backup ${backups[i]}"
  done
fi
report "$RECON8S_REPORT_BACKUP_COMPLETED" "$manifest"
