# recon8s restore: functions bootstrap.sh runs on its temporary server when RESTORE_BACKUP is set (a new
# cluster's first member, created from a backup in an object store: spec.restore), and verify-backup.sh
# on its scratch server. Both set `volume` (where the replayed logs are staged), temporary_sql, and for a
# physical backup temporary_datadir, temporary_stop and temporary_start (see restore_physical).
# shellcheck shell=bash
#
# The design (the store's layout is in store.sh):
# - It runs inside the bootstrap of ordinal 0, in the staging data directory, before mysqld ever
#   starts for real: the member is not ready, so nothing is served, until the restore is complete; a
#   restore that fails leaves nothing behind (the staging directory is discarded) and the init
#   container says why in its termination message, which the controller reports as Degraded
#   (RestoreFailed) and an Event. The kubelet retries it with its back-off.
# - The backup: the one named, or the latest (with a point in time, the latest that ended before it).
#   Its dump is streamed from the store into the temporary server, or its physical copy (a manifest's
#   method) is unpacked as the temporary server's data directory (restore_physical); then the server's
#   GTID history is the backup's (RESET BINARY LOGS AND GTIDS, SET GLOBAL gtid_purged).
# - The binary logs archived after it are replayed in the order they were archived, each through
#   mysqlbinlog (--stop-datetime for a point in time, --include-gtids for a GTID set) into the
#   temporary server with their own GTIDs, leaving out (--exclude-gtids) every transaction already
#   there (in the backup, or in an earlier log of another primary). A log whose Previous_gtids names a
#   transaction that is neither restored nor archived is a gap: the restore fails rather than
#   continue past it. A point in time after the archive's coveredUntil fails too.
# - Everything bootstrap does afterwards (the new cluster's own accounts and passwords) runs after
#   the replay, so that nothing in the source's history can change them.
# - The store is not trusted: every value read from it (names in a listing, a manifest's or a log's
#   GTID sets and times, state.json) is checked against its grammar (common.sh: checked, stored_field)
#   before it is used, and one that is not of it fails the restore (RestoreFailed), naming the object
#   and the value. A manifest must name the backup it sits beside, and a log's JSON the log it describes.
#   Names from the store are never local paths: each object streams to a file of a fixed name. (The
#   dump and the logs are SQL the restore runs as root: whoever may write the store can write them.
#   That is what encryption with a key of the cluster's own stops; see docs/security-data.md.)

restore_fail() {
  report "$RECON8S_REPORT_RESTORE_FAILED" "$1"
  die "$1"
}

temporary_value() {
  temporary_sql --skip-column-names -e "SET SESSION sql_mode = ''; $1"
}

# The complete backups (those with a manifest), oldest first.
restore_backups() {
  store_list base -R --files-only --include '/*/manifest.json' |
    sed -n 's|^\([0-9]\{8\}T[0-9]\{6\}Z\)/manifest\.json$|\1|p' | sort
}

# restore_manifest NAME: the manifest of backup NAME (in `manifest`), which must say it is NAME's (a
# manifest copied beside another backup is refused).
restore_manifest() {
  local named
  manifest=$(store_cat "base/$1/manifest.json") || "$on_untrusted" "$(store_failure)"
  stored_field named "$manifest" name backup-name "$(store_url "base/$1/manifest.json")" || named=
  [[ $named == "$1" ]] ||
    "$on_untrusted" "$(store_url "base/$1/manifest.json") is not the manifest of backup $1: it names $(shown "$named")"
}

restore_from_store() {
  # shellcheck source=store.sh
  . "${BASH_SOURCE[0]%/*}/store.sh"
  on_untrusted=restore_fail
  local point='' target='' before=''
  local name='' manifest ended gtids backups candidate
  # The spec's values (the schema checked them at admission; checked again, as they reach SQL here).
  [[ $RESTORE_BACKUP == latest ]] || checked RESTORE_BACKUP backup-name "$RESTORE_BACKUP" "spec.restore.backup"
  [[ -z ${RESTORE_POINT_IN_TIME:-} ]] || checked point time "$RESTORE_POINT_IN_TIME" "spec.restore.pointInTime"
  [[ -z ${RESTORE_GTID_SET:-} ]] || checked target gtid-set "$RESTORE_GTID_SET" "spec.restore.gtidSet"
  [[ -z ${RESTORE_BEFORE_GTID:-} ]] || checked before gtid "$RESTORE_BEFORE_GTID" "spec.restore.beforeGtid"
  mapfile -t backups < <(restore_backups)
  ((${#backups[@]})) || restore_fail "no complete backup in $(store_url base/)"
  if [[ $RESTORE_BACKUP != latest ]]; then
    for candidate in "${backups[@]}"; do [[ $candidate != "$RESTORE_BACKUP" ]] || name=$candidate; done
    [[ -n $name ]] || restore_fail "backup $RESTORE_BACKUP is not in $(store_url base/); the newest there: $(last_words 5 "${backups[@]}")"
  elif [[ -n $point ]]; then
    for ((i = ${#backups[@]} - 1; i >= 0; i--)); do
      restore_manifest "${backups[i]}"
      stored_field ended "$manifest" endTime time "$(store_url "base/${backups[i]}/manifest.json")" || continue
      if [[ ! $ended > $point ]]; then name=${backups[i]}; break; fi
    done
    [[ -n $name ]] || restore_fail "no backup in $(store_url base/) ended before $point; the oldest is ${backups[0]}"
  elif [[ -n $before ]]; then
    for ((i = ${#backups[@]} - 1; i >= 0; i--)); do
      restore_manifest "${backups[i]}"
      stored_field gtids "$manifest" gtidSet gtid-set "$(store_url "base/${backups[i]}/manifest.json")" || continue
      if [[ $(temporary_value "SELECT GTID_SUBSET('$before', '$gtids')") != 1 ]]; then name=${backups[i]}; break; fi
    done
    [[ -n $name ]] || restore_fail "every backup in $(store_url base/) holds transaction $before already; the oldest is ${backups[0]}"
  else
    name=${backups[-1]}
  fi
  restore_manifest "$name"
  stored_field gtids "$manifest" gtidSet gtid-set "$(store_url "base/$name/manifest.json")" || gtids=
  stored_field ended "$manifest" endTime time "$(store_url "base/$name/manifest.json")" || ended=
  [[ -z $point || ! $ended > $point ]] ||
    restore_fail "backup $name ended at $ended, after the point in time asked for ($point): name an earlier backup, or leave backup as latest"
  [[ -z $before || $(temporary_value "SELECT GTID_SUBSET('$before', '$gtids')") != 1 ]] ||
    restore_fail "backup $name holds transaction $before already: name an earlier backup, or leave backup as latest"

  local method
  stored_field method "$manifest" method backup-method "$(store_url "base/$name/manifest.json")" || method=logical
  log "restoring backup $name ($method) from $(store_url "base/$name/") (GTID set '$gtids')"
  if [[ $method == physical ]]; then
    # shellcheck disable=SC2154 # the sourcing script's (see the top)
    restore_physical "$name" "$gtids" "$temporary_datadir"
  else
    store_cat "base/$name/dump.sql.gz" | gunzip -c | temporary_sql --binary-mode ||
      restore_fail "loading backup $name from $(store_url "base/$name/") failed: $(store_failure || echo "see the bootstrap container's log")"
  fi
  temporary_sql -e "RESET BINARY LOGS AND GTIDS; SET GLOBAL gtid_purged = '$gtids';"

  local replayed=0
  if [[ -n $point || -n $target || -n $before ]]; then restore_replay; fi
  local executed
  executed=$(temporary_value "SELECT REPLACE(@@gtid_executed, '\\n', '')")
  restored=$(printf '{"backup":"%s","location":"%s","pointInTime":"%s","beforeGtid":"%s","gtidSet":"%s","replayedLogs":%d}' \
    "$name" "$(store_url "base/$name/")" "$point" "$before" "$executed" "$replayed")
  log "restored: $restored"
}

# restore_physical NAME GTIDS DATADIR: the temporary server's data directory DATADIR becomes backup NAME's
# physical copy (base/NAME/datadir.tar.gz), which must hold exactly the GTID set GTIDS its manifest
# records. The sourcing script names its temporary server's stop (temporary_stop, nothing when none
# runs) and its start on DATADIR with the options given (temporary_start). The copy comes with the
# source's mysql schema: the server starts without grant tables (no network either), so that root
# over the socket is let in whatever password the source gave it, and root@localhost is given the empty
# password of a fresh --initialize-insecure (what the rest of the bootstrap
# expects; the bootstrap then sets this cluster's own passwords, on every account it manages). The
# source's replication settings are reset. What fails is refused through on_untrusted (a restore:
# RestoreFailed; a verification: its failure). The archive is hostile like every object of the store: only regular files and directories
# may come out of it (GNU tar refuses names with "..", and writes no file through a link it made).
restore_physical() {
  local name=$1 gtids=$2 datadir=$3 object=base/$1/datadir.tar.gz odd same
  temporary_stop
  rm -rf -- "$datadir"
  mkdir -p -- "$datadir"
  store_cat "$object" | gunzip -c | tar -C "$datadir" --no-same-owner --no-same-permissions -xf - ||
    "$on_untrusted" "unpacking backup $name from $(store_url "$object") failed: $(store_failure || echo "the object is not a whole gzipped tar (see the log)")"
  odd=$(find "$datadir" ! -type f ! -type d -print -quit)
  [[ -z $odd ]] || "$on_untrusted" "backup $name ($(store_url "$object")) holds something that is neither a file nor a directory: $(shown "${odd#"$datadir"/}")"
  [[ -e $datadir/mysql.ibd ]] || "$on_untrusted" "backup $name ($(store_url "$object")) holds no MySQL data dictionary (mysql.ibd)"
  rm -f -- "$datadir/auto.cnf" "$datadir/mysqld-auto.cnf"
  temporary_start --skip-grant-tables
  same=$(temporary_value "SELECT GTID_SUBSET(@@GLOBAL.gtid_executed, '$gtids') AND GTID_SUBSET('$gtids', @@GLOBAL.gtid_executed)")
  [[ $same == 1 ]] ||
    "$on_untrusted" "backup $name ($(store_url "$object")) holds the GTID set $(shown "$(temporary_value "SELECT REPLACE(@@GLOBAL.gtid_executed, '\\n', '')")"), not the one its manifest records ('$gtids')"
  temporary_sql -e "SET SESSION sql_log_bin = 0; FLUSH PRIVILEGES; ALTER USER 'root'@'localhost' IDENTIFIED BY $(sql_quote ''); RESET REPLICA ALL;"
}

# gtid_event_position LOG GTID: where the transaction GTID starts in the binary log LOG (the "# at"
# of its GTID event, as mysqlbinlog prints it just before the event's GTID_NEXT), for --stop-position;
# fails when LOG does not hold it. (grep -m1 ends the pipe early: pipefail would call that a failure.)
gtid_event_position() {
  local found at
  found=$(
    set +o pipefail
    mysqlbinlog "$1" | grep -E "^# at [0-9]+$|^SET @@SESSION\.GTID_NEXT= " |
      grep -m1 -B1 -F "SET @@SESSION.GTID_NEXT= '$2'"
  )
  at=${found%%$'\n'*}
  [[ $found == *$'\n'* && $at =~ ^\#\ at\ ([0-9]+)$ ]] || return 1
  printf '%s' "${BASH_REMATCH[1]}"
}

# restore_segment_fields SEGMENT JSON: segment_gtids := the GTID set of the archived log SEGMENT, whose
# JSON must name that very log (its server and file); fails (1) when it has no GTID set.
restore_segment_fields() {
  local what server file
  what=$(store_url "binlog/$1")
  stored_field server "$2" server uuid "$what" || server=
  stored_field file "$2" file binlog-file "$what" || file=
  [[ $1 == "${1:0:16}-$server-$file.json" ]] ||
    "$on_untrusted" "$what does not describe that log: it names server $(shown "$server") and file $(shown "$file")"
  stored_field segment_gtids "$2" gtidSet gtid-set "$what"
}

# Replays the archived binary logs up to the point or GTID set (sets replayed).
restore_replay() {
  # shellcheck disable=SC2154 # volume is the sourcing script's (bootstrap.sh, verify-backup.sh): see the top
  local state covered segments segment meta segment_gtids previous missing executed stop='' work=$volume/restore-binlog
  local options=()
  if [[ -n $point ]]; then
    # Listed first: rclone cat of a key that does not exist prints nothing and succeeds.
    [[ -n $(store_list binlog --files-only --include /state.json) ]] ||
      restore_fail "no binary logs are archived in $(store_url binlog/): cannot restore to $point"
    state=$(store_cat binlog/state.json) || restore_fail "$(store_failure)"
    stored_field covered "$state" coveredUntil time "$(store_url binlog/state.json)" || covered=
    [[ ! $point > $covered ]] ||
      restore_fail "the archived binary logs reach $covered, before the point in time asked for ($point): restore to an earlier point, or to this one once the next archive run has passed it"
    options+=(--stop-datetime="${point/T/ }")
    options[-1]=${options[-1]%Z}
  elif [[ -n $before ]]; then
    options+=(--exclude-gtids=)
  else
    options+=(--include-gtids="$target")
  fi
  mapfile -t segments < <(store_list binlog --files-only --include '*.json' | grep -E '^[0-9]{8}T[0-9]{6}Z-.*\.json$' | sort)
  rm -rf -- "$work"
  mkdir -p -- "$work"
  for segment in "${segments[@]}"; do
    if ! valid segment "$segment"; then
      log "left out: $(store_url binlog/)$(shown "$segment") is not named like an archived binary log"
      continue
    fi
    meta=$(store_cat "binlog/$segment") || restore_fail "$(store_failure)"
    restore_segment_fields "$segment" "$meta" || continue
    [[ $(temporary_value "SELECT GTID_SUBSET('$segment_gtids', @@gtid_executed)") != 1 ]] || continue
    if [[ -n $point || -n $before ]]; then
      stored_field previous "$meta" previousGtids gtid-set "$(store_url "binlog/$segment")" || previous=
      missing=$(temporary_value "SELECT REPLACE(GTID_SUBTRACT('$previous', @@gtid_executed), '\\n', '')")
      [[ -z $missing ]] ||
        restore_fail "the archive has a gap before $segment: transactions $missing are in no archived binary log after the backup"
    fi
    store_cat "binlog/${segment%.json}.gz" | gunzip -c >"$work/segment" ||
      restore_fail "$(store_failure || echo "cannot read $(store_url "binlog/${segment%.json}.gz")")"
    # What the server holds already is left out by mysqlbinlog itself: GTID auto-skip alone would still
    # send each such transaction whole (a bulk load before the backup is one huge row event).
    if [[ -n $target ]]; then
      missing=$(temporary_value "SELECT REPLACE(GTID_SUBTRACT('$target', @@gtid_executed), '\n', '')")
      [[ -n $missing ]] || break
      options=(--include-gtids="$missing")
    else
      executed=$(temporary_value "SELECT REPLACE(@@gtid_executed, '\n', '')")
      options=(${point:+"${options[0]}"} ${executed:+--exclude-gtids="$executed"})
      # The log that holds the transaction is replayed up to its start, and is the last one.
      if [[ -n $before && $(temporary_value "SELECT GTID_SUBSET('$before', '$segment_gtids')") == 1 ]]; then
        stop=$(gtid_event_position "$work/segment" "$before") ||
          restore_fail "transaction $before is not in $(store_url "binlog/${segment%.json}.gz"), although its GTIDs say so"
        options+=(--stop-position="$stop")
      fi
    fi
    mysqlbinlog "${options[@]}" "$work/segment" | temporary_sql --binary-mode ||
      restore_fail "replaying $(store_url "binlog/${segment%.json}.gz") failed (see the bootstrap container's log)"
    rm -f -- "$work/segment"
    replayed=$((replayed + 1))
    # A log not applied whole reached the point: what follows is after it.
    if [[ -n $point && $(temporary_value "SELECT GTID_SUBSET('$segment_gtids', @@gtid_executed)") != 1 ]]; then break; fi
    if [[ -n $stop ]]; then break; fi
  done
  rm -rf -- "$work"
  if [[ -n $before && -z $stop ]]; then
    restore_fail "transaction $before is in no binary log archived after backup $name: nothing was restored short of it (check the GTID, and that the archive has run since it was committed)"
  fi
  if [[ -n $target ]]; then
    missing=$(temporary_value "SELECT REPLACE(GTID_SUBTRACT('$target', @@gtid_executed), '\\n', '')")
    [[ -z $missing ]] || restore_fail "the archive lacks transactions of the GTID set asked for: $missing"
  fi
  log "replayed $replayed archived binary logs"
}
