# recon8s physical backups: functions backup.sh runs with BACKUP_METHOD=physical (spec.backup.method).
# shellcheck shell=bash
#
# The design:
# - The copy is MySQL's own: CLONE INSTANCE FROM the member backup.sh chose (a replica when there is one,
#   so the primary's writers share nothing with it but the network), made by a throwaway mysqld of this
#   job (initialized on the scratch volume, no networking, no binary log, the donor's plugins loaded, as
#   clone requires) into a directory of its own (DATA DIRECTORY = ...). Clone copies every InnoDB table
#   with the redo written meanwhile and stops at one consistent point; the throwaway server is then
#   started once on the copy itself (recovery to that point), and the GTID set the copy holds, read
#   back from it, is the manifest's gtidSet. Writers are never blocked (DDL waits for the clone's end
#   on the donor).
# - The donor is reached by the name its certificate carries (its report_host), over TLS: the clone
#   checks the donor's certificate against the cluster's CA (clone_ssl_ca) before it sends the password
#   (REQUIRE SSL). The password reaches the recipient as SQL on stdin, never a command line.
# - The clone's server identity (auto.cnf) and persisted settings (mysqld-auto.cnf) are left out: a
#   restored server needs its own server_uuid, and the donor's SET PERSIST values are not the new
#   cluster's. Nothing else is changed: the directory is a data directory as the donor would have after
#   a crash at that point (the restore's first start applies its redo).
# - It streams as one tar through gzip -1 (fast: on a few cores the compressor, not the disk, bounds the
#   rate) to base/<name>/datadir.tar.gz; the manifest follows last, as for a dump, so a failed run
#   leaves nothing that looks like a backup. The scratch volume must hold the whole data directory
#   (spec.backup.scratchSize); everything on it is removed when the job ends, however it ends.

physical_dir=${BACKUP_CLONE_SCRATCH:-$RECON8S_BACKUP_SCRATCH} # overridden by unit tests only
physical_sock=$physical_dir/recipient.sock
physical_pid=

# The throwaway server's options, on the data directory named. The plugins the members load (my.cnf),
# since clone refuses a recipient that lacks a plugin its donor has active. No keys or certificates of
# its own are generated into the data directory (they would end up in the copy). A copy of a replica
# holds its replication settings: --skip-replica-start, or it would go on replicating past its point.
physical_server_options() {
  printf '%s\n' --no-defaults --datadir="$1" --tmpdir="$physical_dir" --secure-file-priv="$physical_dir/files" \
    --log-error="$physical_dir/recipient.err" --innodb-buffer-pool-size=128M --auto-generate-certs=OFF \
    --caching-sha2-password-auto-generate-rsa-keys=OFF
}

physical_cleanup() {
  if [[ -n $physical_pid ]] && kill -0 "$physical_pid" 2>/dev/null; then
    kill -TERM "$physical_pid" 2>/dev/null || true
    wait "$physical_pid" 2>/dev/null || true
  fi
  [[ ! -d $physical_dir ]] || rm -rf -- "${physical_dir:?}"/*
}

recipient_sql() {
  mysql_client --no-defaults --socket="$physical_sock" --user=root --batch --skip-column-names --raw "$@"
}

# physical_start DATADIR [OPTION...]: the throwaway server on DATADIR, until it answers on its socket.
physical_start() {
  local options
  mapfile -t options < <(physical_server_options "$1")
  mysqld "${options[@]}" --socket="$physical_sock" --pid-file="$physical_dir/recipient.pid" \
    --skip-networking --mysqlx=OFF --skip-log-bin --skip-replica-start --gtid-mode=ON --enforce-gtid-consistency=ON --max-allowed-packet=1G \
    --plugin-load-add=mysql_clone.so --plugin-load-add=semisync_source.so --plugin-load-add=semisync_replica.so \
    --clone-ssl-ca="$RECON8S_TLS_CA" "${@:2}" &
  physical_pid=$!
  local i
  for ((i = 0; i < 300; i++)); do
    mysqladmin --no-defaults --socket="$physical_sock" --user=root ping >/dev/null 2>&1 && return 0
    kill -0 "$physical_pid" 2>/dev/null ||
      die "the backup's throwaway mysqld exited: $(last_line "$(cat -- "$physical_dir/recipient.err" 2>/dev/null)")"
    sleep 1
  done
  die "the backup's throwaway mysqld did not answer within 5 minutes"
}

physical_stop() {
  recipient_sql -e 'SHUTDOWN' >/dev/null
  wait "$physical_pid" || die "the backup's throwaway mysqld failed to shut down cleanly"
  physical_pid=
}

# physical_backup HOST OBJECT: clones HOST into the scratch volume and streams the copy to OBJECT (a store
# path). Sets gtids (the copy's GTID set), data_bytes (the data directory's size), clone_seconds and
# stream_seconds.
physical_backup() {
  local host=$1 object=$2 copy=$physical_dir/copy at out
  physical_cleanup
  mkdir -p -- "$physical_dir/files"
  local options
  mapfile -t options < <(physical_server_options "$physical_dir/recipient")
  mysqld "${options[@]}" --initialize-insecure ||
    die "the clone's recipient mysqld could not initialize: $(last_line "$(cat -- "$physical_dir/recipient.err" 2>/dev/null)")"
  physical_start "$physical_dir/recipient"
  at=$EPOCHSECONDS
  log "cloning $host:$RECON8S_MYSQL_PORT into $copy"
  # shellcheck disable=SC2154 # clone_user and clone_password are backup.sh's (its one place for logins)
  out=$({
    printf "SET SESSION sql_mode = '';\n"
    printf 'SET GLOBAL clone_valid_donor_list = %s;\n' "$(sql_quote "$host:$RECON8S_MYSQL_PORT")"
    printf "CLONE INSTANCE FROM %s@%s:%d IDENTIFIED BY %s DATA DIRECTORY = %s REQUIRE SSL;\n" \
      "$(sql_quote "$clone_user")" "$(sql_quote "$host")" "$RECON8S_MYSQL_PORT" "$(sql_quote "$clone_password")" "$(sql_quote "$copy")"
  } | recipient_sql 2>&1) || die "the clone of $host:$RECON8S_MYSQL_PORT failed: $(last_line "$out")"
  physical_stop
  # The copy's first start: InnoDB recovers it to the clone's consistent point (the redo copied with it),
  # and its GTID set, persisted by the clone in mysql.gtid_executed, is read back from it. The copy then
  # starts as a clean data directory wherever it is restored.
  physical_start "$copy" --skip-grant-tables
  out=$(recipient_sql -e "SELECT REPLACE(@@GLOBAL.gtid_executed, '\n', '')") ||
    die "the copy's GTID set cannot be read: $(last_line "$out")"
  gtids=
  checked gtids gtid-set "$out" "the copy's GTID set (@@GLOBAL.gtid_executed of the cloned data directory)"
  [[ -n $gtids ]] || die "the copy of $host holds no GTID set: it is not a member's data"
  physical_stop
  clone_seconds=$((EPOCHSECONDS - at))
  rm -f -- "$copy/auto.cnf" "$copy/mysqld-auto.cnf"
  data_bytes=$(du -sb -- "$copy" | cut -f1)
  log "cloned $data_bytes bytes of data directory in $clone_seconds s (GTID set '$gtids'); streaming it to $(store_url "$object")"
  at=$EPOCHSECONDS
  tar -C "$copy" -cf - . | gzip -1 -c | store_rclone rcat "$(store_path "$object")"
  # shellcheck disable=SC2034 # backup.sh's manifest says it
  stream_seconds=$((EPOCHSECONDS - at))
  physical_cleanup
}
