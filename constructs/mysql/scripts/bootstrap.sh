#!/bin/bash
# recon8s bootstrap (the init container): writes this member's settings (init-config.sh), then makes sure
# it has a data directory before mysqld starts.
#
# The design:
# - A data directory that holds a data dictionary (mysql.ibd) is used as it is: nothing to do.
# - An empty one is built beside it (<datadir>.bootstrap) and renamed into place only when complete,
#   so an interrupted bootstrap leaves nothing half-made: the next attempt removes the leftovers and
#   starts again. A non-empty directory without a data dictionary is refused, never overwritten.
# - Ordinal 0 of a new cluster (no primary answers on the primary Service, and the controller has
#   recorded no history: RECON8S_RECORDED_HISTORY, from the cluster's history ConfigMap, is empty)
#   initializes a new one (mysqld --initialize-insecure), then a temporary mysqld without networking
#   restores a backup into it when spec.restore says so (restore.sh), sets the root password and creates
#   the accounts. It starts read-only like every member; the controller makes it the first primary.
# - Once the cluster has a history, an empty data directory is never initialized, on any ordinal: a
#   new, empty database is not the cluster's data, and a member without the data must never become the
#   primary (the controller would find it empty; it never makes such a member writable either). It
#   waits for a primary to answer (the controller fails over to a member that holds the data) and clones.
# - Any other member, and ordinal 0 when a primary answers (its volume was lost), clones the primary
#   (found through the primary Service, which follows the role label) with the clone plugin. CLONE
#   INSTANCE needs a running recipient server, so a throwaway one is initialized in a scratch
#   directory and started without networking;
#   it clones into the staging directory (DATA DIRECTORY = ..., which leaves the throwaway server
#   untouched) and is shut down and removed. The clone carries the primary's data, accounts and
#   gtid_executed, so replication then starts with SOURCE_AUTO_POSITION from exactly that point. The
#   clone's server identity (auto.cnf) and persisted settings (mysqld-auto.cnf) are dropped: each
#   replica needs its own server_uuid, and the primary's SET PERSIST values must not make it writable.
# - The temporary servers read the same my.cnf as the real one (settings fixed at initialization,
#   such as lower_case_table_names or innodb_page_size, and those clone requires to match, must be
#   the same) with command-line overrides: their own data directory and socket, no TCP, writable.
set -euo pipefail
# shellcheck source=common.sh
. "${BASH_SOURCE[0]%/*}/common.sh"
# shellcheck source=reprovision.sh
. "${BASH_SOURCE[0]%/*}/reprovision.sh"
# shellcheck source=restore.sh
. "${BASH_SOURCE[0]%/*}/restore.sh"
require_env PRIMARY_HOST MYSQL_ROOT_PASSWORD MYSQL_REPLICATION_PASSWORD MYSQL_ADMIN_PASSWORD

volume=${DATA_VOLUME:-$RECON8S_DATA_VOLUME} # overridden by unit tests only
datadir=$volume/$RECON8S_DATA_DIR_NAME
stage=$datadir.bootstrap
scratch=$volume/bootstrap-recipient
sock=$RECON8S_TMP/recon8s-bootstrap.sock
pidfile=$RECON8S_TMP/recon8s-bootstrap.pid
server_pid=

cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf -- "$scratch" "$volume/restore-binlog"
}
trap cleanup EXIT
restored=

mysqld_with() {
  mysqld --defaults-file="$RECON8S_MY_CNF" --read-only=OFF --super-read-only=OFF "$@"
}

initialize() {
  log "initializing $1"
  mysqld_with --initialize-insecure --datadir="$1"
}

# Starts a temporary mysqld on the data directory $1 (with the further options given) and waits until it
# answers on its socket.
start_server() {
  # The largest packets MySQL allows: a restore replays row events of whole transactions (a bulk
  # INSERT ... SELECT is one event of its every row), which the defaults (64 MiB) refuse.
  # An earlier attempt's server died with its container, but its socket lock file stays in $RECON8S_TMP
  # (an emptyDir) naming its pid, which a fresh container reuses (pids start over): mysqld would refuse
  # to start ("Another process ... is using unix socket file") on every later attempt.
  rm -f -- "$sock" "$sock.lock" "$pidfile"
  # exec: $server_pid is mysqld itself, which cleanup's TERM then reaches (not a subshell around it).
  (exec mysqld --defaults-file="$RECON8S_MY_CNF" --read-only=OFF --super-read-only=OFF \
    --datadir="$1" --socket="$sock" --pid-file="$pidfile" --max-allowed-packet=1G --skip-networking --mysqlx=OFF "${@:2}") &
  server_pid=$!
  local i
  for ((i = 0; i < 600; i++)); do
    # ping succeeds as soon as the server answers, whatever the credentials.
    mysqladmin --no-defaults --socket="$sock" --user=root ping >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || die "the temporary mysqld exited (see its log above)"
    sleep 1
  done
  die "the temporary mysqld did not answer within 10 minutes"
}

# Runs SQL from stdin as the temporary server's root, which has no password yet.
temporary_sql() {
  mysql_client --no-defaults --socket="$sock" --user=root --batch --max-allowed-packet=1G "$@"
}

# The SQL ends with SHUTDOWN; wait for the server to finish it.
await_shutdown() {
  wait "$server_pid" || die "the temporary mysqld failed to shut down cleanly"
  server_pid=
}

# What a physical restore replaces the staged data directory with (restore.sh: restore_physical).
temporary_datadir=$stage
temporary_stop() {
  printf 'SHUTDOWN;\n' | temporary_sql
  await_shutdown
}
temporary_start() {
  start_server "$stage" "$@"
}

initialize_primary() {
  # A new cluster's pod template always has them (an earlier version's, which lacks them, never starts one).
  require_env MYSQL_CLONE_PASSWORD MYSQL_BACKUP_PASSWORD
  initialize "$stage"
  start_server "$stage"
  # Nothing here is binary-logged: replicas receive it through the clone, and the GTID history of a
  # new cluster starts with its first real transaction.
  # Named time zones, as the official image's entrypoint loads them. Not fatal: few need them.
  if ! {
    printf 'SET SESSION sql_log_bin = 0;\n'
    mysql_tzinfo_to_sql /usr/share/zoneinfo 2>/dev/null |
      sed 's/Local time zone must be set--see zic manual page/FCTY/'
  } | temporary_sql --database=mysql; then
    log "warning: the time zone tables could not be loaded"
  fi
  if [[ -n ${RESTORE_BACKUP:-} ]]; then restore_from_store; fi
  local root replication admin clone backup exporter
  root=$(sql_quote "$MYSQL_ROOT_PASSWORD")
  replication=$(sql_quote "$MYSQL_REPLICATION_PASSWORD")
  admin=$(sql_quote "$MYSQL_ADMIN_PASSWORD")
  clone=$(sql_quote "$MYSQL_CLONE_PASSWORD")
  backup=$(sql_quote "$MYSQL_BACKUP_PASSWORD")
  {
    printf "SET SESSION sql_mode = '';\n"
    printf 'SET SESSION sql_log_bin = 0;\n'
    # IF NOT EXISTS, then ALTER: a restored history may hold these accounts already; this cluster's
    # own passwords win.
    printf "ALTER USER 'root'@'localhost' IDENTIFIED BY %s;\n" "$root"
    printf "CREATE USER IF NOT EXISTS 'root'@'%%' IDENTIFIED BY %s;\n" "$root"
    printf "ALTER USER 'root'@'%%' IDENTIFIED BY %s;\n" "$root"
    printf "GRANT ALL ON *.* TO 'root'@'%%' WITH GRANT OPTION;\n"
    printf "GRANT PROXY ON ''@'' TO 'root'@'%%' WITH GRANT OPTION;\n"
    printf "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY %s;\n" "$RECON8S_REPLICATION_USER" "$replication"
    printf "ALTER USER '%s'@'%%' IDENTIFIED BY %s;\n" "$RECON8S_REPLICATION_USER" "$replication"
    printf "GRANT %s ON *.* TO '%s'@'%%';\n" "$RECON8S_REPLICATION_GRANTS" "$RECON8S_REPLICATION_USER"
    # Cloning (BACKUP_ADMIN on the donor) and the backup jobs have accounts of their own: neither the
    # replication password nor root's is what a clone or a dump logs in with.
    printf "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$RECON8S_CLONE_USER" "$clone"
    printf "ALTER USER '%s'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$RECON8S_CLONE_USER" "$clone"
    printf "GRANT %s ON *.* TO '%s'@'%%';\n" "$RECON8S_CLONE_GRANTS" "$RECON8S_CLONE_USER"
    printf "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$RECON8S_BACKUP_USER" "$backup"
    printf "ALTER USER '%s'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$RECON8S_BACKUP_USER" "$backup"
    printf "GRANT %s ON *.* TO '%s'@'%%';\n" "$RECON8S_BACKUP_GRANTS" "$RECON8S_BACKUP_USER"
    printf "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$RECON8S_ADMIN_USER" "$admin"
    printf "ALTER USER '%s'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$RECON8S_ADMIN_USER" "$admin"
    printf "GRANT %s ON *.* TO '%s'@'%%';\n" "$RECON8S_ADMIN_GRANTS" "$RECON8S_ADMIN_USER"
    printf "GRANT SELECT ON performance_schema.* TO '%s'@'%%';\n" "$RECON8S_ADMIN_USER"
    # The metrics sidecar's account as it was before the sidecar moved to the socket (a TCP login from
    # the pod's loopback), which a restored history may hold: gone, so that no exporter password logs in
    # over TCP.
    printf "DROP USER IF EXISTS '%s'@'%s';\n" "$RECON8S_EXPORTER_USER" "$RECON8S_FORMER_EXPORTER_HOST"
    # With spec.monitoring: the metrics sidecar's account, here like the others. Created later by the
    # primary's agent instead, it would be a replicated write waiting for an acknowledgement
    # that no replica can give while it clones.
    if [[ -n ${MYSQL_EXPORTER_PASSWORD-} ]]; then
      exporter=$(sql_quote "$MYSQL_EXPORTER_PASSWORD")
      printf "CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS %d;\n" \
        "$RECON8S_EXPORTER_USER" "$RECON8S_EXPORTER_HOST" "$exporter" "$RECON8S_EXPORTER_MAX_CONNECTIONS"
      printf "ALTER USER '%s'@'%s' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS %d;\n" \
        "$RECON8S_EXPORTER_USER" "$RECON8S_EXPORTER_HOST" "$exporter" "$RECON8S_EXPORTER_MAX_CONNECTIONS"
      printf "GRANT %s ON *.* TO '%s'@'%s';\n" "$RECON8S_EXPORTER_GRANTS" "$RECON8S_EXPORTER_USER" "$RECON8S_EXPORTER_HOST"
      printf "GRANT SELECT ON performance_schema.* TO '%s'@'%s';\n" "$RECON8S_EXPORTER_USER" "$RECON8S_EXPORTER_HOST"
    fi
    printf 'SHUTDOWN;\n'
  } | temporary_sql
  await_shutdown
}

# One attempt: does a primary answer on the primary Service?
primary_answers() {
  mysql_client --defaults-extra-file=<(verified_cnf "$RECON8S_REPLICATION_USER" "$MYSQL_REPLICATION_PASSWORD") \
    --host="$PRIMARY_HOST" --port="$RECON8S_MYSQL_PORT" --get-server-public-key --connect-timeout=5 --batch \
    -e 'SELECT 1' >/dev/null 2>&1
}

wait_for_primary() {
  local i out
  for ((i = 1; ; i++)); do
    if out=$(mysql_client --defaults-extra-file=<(verified_cnf "$RECON8S_REPLICATION_USER" "$MYSQL_REPLICATION_PASSWORD") \
      --host="$PRIMARY_HOST" --port="$RECON8S_MYSQL_PORT" --get-server-public-key --connect-timeout=5 --batch \
      -e 'SELECT 1' 2>&1); then
      return 0
    fi
    # Give up after 30 minutes: the kubelet restarts this container, and the restart shows.
    ((i < 180)) || die "the primary $PRIMARY_HOST:$RECON8S_MYSQL_PORT did not accept the $RECON8S_REPLICATION_USER account: $out"
    ((i % 6 == 1)) && log "waiting for the primary $PRIMARY_HOST:$RECON8S_MYSQL_PORT: $out"
    sleep 10
  done
}

clone_primary() {
  wait_for_primary
  initialize "$scratch"
  start_server "$scratch"
  printf 'SET GLOBAL clone_valid_donor_list = %s;\n' "$(sql_quote "$PRIMARY_HOST:$RECON8S_MYSQL_PORT")" | temporary_sql
  local donor i out clone_user=$RECON8S_CLONE_USER clone_password=${MYSQL_CLONE_PASSWORD-}
  # A pod of an earlier version's template (its StatefulSet not rolled yet; these scripts are already this
  # version's) lacks MYSQL_CLONE_PASSWORD, so it clones as replication, as that version did, for as long as the
  # primary lets that account clone (its agent of this version revokes it).
  if [[ -z $clone_password ]]; then
    log "this pod's template has no MYSQL_CLONE_PASSWORD (an earlier version's): cloning as $RECON8S_REPLICATION_USER"
    clone_user=$RECON8S_REPLICATION_USER clone_password=$MYSQL_REPLICATION_PASSWORD
  fi
  donor=$(sql_quote "$PRIMARY_HOST")
  for ((i = 1; ; i++)); do
    log "cloning the primary $PRIMARY_HOST:$RECON8S_MYSQL_PORT"
    if out=$({
      printf "SET SESSION sql_mode = '';\n"
      printf "CLONE INSTANCE FROM '%s'@%s:%d IDENTIFIED BY %s DATA DIRECTORY = %s REQUIRE SSL;\n" \
        "$clone_user" "$donor" "$RECON8S_MYSQL_PORT" "$(sql_quote "$clone_password")" "$(sql_quote "$stage")"
    } | temporary_sql 2>&1); then
      break
    fi
    # A donor serves one clone at a time (its error 3634, which the recipient reports inside its own 3862:
    # "Clone Donor Error: 3634 : Too many concurrent clone operations"): members started together (a new
    # cluster, every pod of one restarted at once) queue for it. Anything else fails this attempt; the
    # kubelet retries.
    [[ $out == *'ERROR 3634 '* || $out == *'Clone Donor Error: 3634 '* ]] || die "the clone of $PRIMARY_HOST:$RECON8S_MYSQL_PORT failed: $out"
    ((i < 180)) || die "the primary $PRIMARY_HOST:$RECON8S_MYSQL_PORT served other clones for 30 minutes: $out"
    log "the primary serves another member's clone; trying again in ${CLONE_RETRY_SECONDS:-10} s"
    rm -rf -- "$stage"
    sleep "${CLONE_RETRY_SECONDS:-10}" # overridden by unit tests only
  done
  printf 'SHUTDOWN;\n' | temporary_sql
  await_shutdown
  rm -rf -- "$scratch"
  rm -f -- "$stage/auto.cnf" "$stage/mysqld-auto.cnf"
}

# The settings that differ per member first (init-config.sh): in this container rather than one of its
# own, since every init container costs a start of the pod about a second (the kubelet notices that
# one ended at its next relist), and a replacement primary's start is what a failover waits for.
bash "${BASH_SOURCE[0]%/*}/init-config.sh"

# A clone the agent finished before the pod restarted (see reprovision.sh).
adopt_clone
if [[ -e $datadir/mysql.ibd ]]; then
  log "$datadir holds a data directory; nothing to do"
  exit 0
fi
shopt -s nullglob dotglob
entries=("$datadir"/*)
((${#entries[@]} == 0)) ||
  die "$datadir is not empty but holds no MySQL data dictionary (mysql.ibd); refusing to overwrite it"
rm -rf -- "$stage" "$scratch"

if (($(member_ordinal) == 0)) && [[ -z ${RECON8S_RECORDED_HISTORY:-} ]] && ! primary_answers; then
  initialize_primary
else
  if [[ -n ${RECON8S_RECORDED_HISTORY:-} ]]; then
    log "the cluster has a recorded history (its first primary was $RECON8S_RECORDED_HISTORY): this empty member clones a primary that holds it, never starts an empty database"
  fi
  clone_primary
fi

[[ -e $stage/mysql.ibd ]] || die "$stage holds no data dictionary after bootstrapping"
mv -T -- "$stage" "$datadir"
sync
log "$datadir is ready"
if [[ -n $restored ]]; then report "$RECON8S_REPORT_RESTORED" "$restored"; fi
