// The shell scripts that run in the database pods, shipped in the scripts ConfigMap and run with the
// image's bash. Rules for all of them: never `set -x` (it would print passwords); passwords reach
// mysql clients through --defaults-extra-file, from a pipe (never argv, which ps shows, and never a
// file on disk) and SQL text through stdin; what runs in the mysql container (the probes, and whatever
// kubectl exec runs there) takes the pipe from a here-string, never a process substitution: mysqld is
// PID 1 there and reaps nothing, so a substitution's subshell that outlives its script stays a zombie
// (one per probe, until the pod's PID limit is reached); every script is idempotent, since any of them may be
// run again after a restart at any point.
import { BOOTSTRAP_SH } from './bootstrap-script.js';
import { BACKUP_SH, LIST_BACKUPS_SH } from './backup-script.js';
import { BINLOG_FIND_FUNCTIONS_SH, FIND_BINLOG_SH } from './binlog-find-script.js';
import { VERIFY_BACKUP_SH } from './verify-script.js';
import { BINLOG_SH } from './binlog-script.js';
import { STORE_SH } from './object-store-script.js';
import { RESTORE_SH } from './restore-script.js';
import {
  ADMIN_GRANTS,
  ADMIN_USER,
  EXPORTER_GRANTS,
  EXPORTER_HOST,
  EXPORTER_MAX_CONNECTIONS,
  EXPORTER_USER,
  MYSQL_PORT,
  PATHS,
  REPLICATION_USER,
  REPROVISION_ANNOTATION,
  SERVER_ID_OFFSET,
} from './layout.js';
import { REPROVISION_SH, START_MYSQLD_SH } from './reprovision-script.js';
import { sh } from './shell.js';

/** Functions the other scripts source. */
export const COMMON_SH = sh`# recon8s: functions sourced by the other scripts. Never enable xtrace: it would print passwords.
export LC_ALL=C TZ=UTC
readonly RECON8S_SOCKET=${PATHS.socket}
readonly RECON8S_TLS_CA=${PATHS.tlsCa}

log() {
  printf '%(%Y-%m-%dT%H:%M:%SZ)T recon8s %s: %s\n' -1 "\${0##*/}" "$*" >&2
}

die() {
  log "$*"
  exit 1
}

# Fails unless every variable named is set and not empty.
require_env() {
  local name
  for name in "$@"; do
    [[ -n \${!name:-} ]] || die "the environment variable $name is not set"
  done
}

# This pod's name: the StatefulSet names its pods (and their host names) <cluster>-<ordinal>.
member_name() {
  printf '%s' "\${POD_NAME:-\${HOSTNAME:-}}"
}

# The StatefulSet ordinal of this pod (its server_id; ordinal 0 initializes a new cluster).
member_ordinal() {
  local pod ordinal
  pod=$(member_name)
  ordinal=\${pod##*-}
  [[ $pod == *-* && $ordinal =~ ^[0-9]+$ ]] || die "cannot derive a StatefulSet ordinal from the pod name '$pod'"
  printf '%d' "$((10#$ordinal))"
}

# An option-file value, double-quoted and escaped the way mysys/my_default.cc reads it back.
cnf_quote() {
  local s=$1 bs='\' dq='"'
  s=\${s//"$bs"/"$bs$bs"}
  s=\${s//"$dq"/"$bs$dq"}
  s=\${s//$'\n'/"\${bs}n"}
  s=\${s//$'\r'/"\${bs}r"}
  s=\${s//$'\t'/"\${bs}t"}
  printf '"%s"' "$s"
}

# A SQL string literal. Sessions that use it run SET SESSION sql_mode = '' first, so that backslash
# escapes are on whatever the server's sql_mode (NO_BACKSLASH_ESCAPES) says.
sql_quote() {
  local s=$1 bs='\' sq="'"
  s=\${s//"$bs"/"$bs$bs"}
  s=\${s//"$sq"/"$bs$sq"}
  printf "'%s'" "$s"
}

# Tells the controller what happened, as "<Reason>: <message>": the kubelet keeps a container's
# termination message in the pod status, and the controller turns it into an Event (and status).
report() {
  printf '%s: %s' "$1" "$2" >"\${TERMINATION_LOG:-/dev/termination-log}" || log "could not write the termination message"
}

# The last non-empty line of a message, for a report.
last_line() {
  local line last=
  while IFS= read -r line; do [[ -z \${line// /} ]] || last=$line; done <<<"$1"
  printf '%s' "$last"
}

# last_words COUNT WORD...: the last COUNT words, space-separated, however few there are (bash's
# \${a[*]: -COUNT} gives nothing when there are fewer than COUNT).
last_words() {
  local count=$1
  shift
  (($# <= count)) || shift $(($# - count))
  printf '%s' "$*"
}

# json_field JSON NAME: a string or number field of a flat JSON object written by these scripts.
json_field() {
  local re='"'"$2"'":[[:space:]]*("([^"]*)"|([0-9]+))'
  [[ $1 =~ $re ]] || return 1
  printf '%s' "\${BASH_REMATCH[2]}\${BASH_REMATCH[3]}"
}

# The GTID set of a mysqldump --set-gtid-purged=COMMENTED header (FILE holds its lines, in 8.x's or 9.x's
# form), one line, no spaces.
dump_gtid_set() {
  local text
  text=$(sed -e 's/^-- //' "$1" | tr -d '\n')
  text=\${text#*GTID_PURGED=}
  text=\${text#*\'+\'\*/}
  text=\${text#*\'}
  text=\${text%%\'*}
  text=\${text//[[:space:]]/}
  text=\${text#+}
  [[ $text =~ ^[0-9A-Fa-f:,_a-z-]*$ ]] || die "cannot read the GTID set from the dump header: '$text'"
  printf '%s' "$text"
}

# Client credentials, for --defaults-extra-file=<(client_cnf USER PASSWORD).
client_cnf() {
  printf '%s\n' '[client]' "user=$1" "password=$(cnf_quote "$2")"
}

# The same for a connection over the network: the server must present a certificate the cluster's CA
# signed, or the client gives up before it sends the password (ssl-mode=VERIFY_CA: members are also
# reached by address, which no certificate names; replication, by name, verifies the name too).
verified_cnf() {
  client_cnf "$1" "$2"
  printf '%s\n' 'ssl-mode=VERIFY_CA' "ssl-ca=$RECON8S_TLS_CA"
}

# Runs SQL (from -e or stdin) as root over the local socket and prints bare tab-separated rows. The
# credentials come on fd 3 from a here-string: no process that could outlive the call (see above).
local_sql() {
  mysql --defaults-extra-file=/dev/fd/3 --socket="$RECON8S_SOCKET" --batch --skip-column-names "$@" \
    3<<<"$(client_cnf root "$MYSQL_ROOT_PASSWORD")"
}
`;

/** Init container 1: writes this member's identity, since one pod template serves every ordinal. */
export const INIT_CONFIG_SH = sh`#!/bin/bash
# recon8s init-config: writes the settings that differ per member into the directory my.cnf includes.
# Every member starts read-only, even for accounts with SUPER, whatever it was before it stopped: only
# the controller makes the primary writable, so a member that restarts can never take writes by itself.
set -euo pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
require_env HEADLESS_SERVICE

dir=\${MEMBER_CONFIG_DIR:-${PATHS.memberConfig}} # overridden by unit tests only
pod=$(member_name)
ordinal=$(member_ordinal)
server_id=$((${SERVER_ID_OFFSET} + ordinal))

{
  printf '# Written by recon8s init-config for %s.\n' "$pod"
  printf '[mysqld]\n'
  printf 'server_id=%d\n' "$server_id"
  printf 'report_host=%s.%s\n' "$pod" "$HEADLESS_SERVICE"
  printf 'read_only=ON\n'
  printf 'super_read_only=ON\n'
} >"$dir/member.cnf.tmp"
mv -f -- "$dir/member.cnf.tmp" "$dir/member.cnf"
log "member $ordinal of \${pod%-*}: server_id=$server_id, read-only until the controller says otherwise"
`;

/** The readiness probe: the primary must be writable, a replica must be following it. */
export const READY_SH = sh`#!/bin/bash
# recon8s readiness: SQL answers, and the member can do its job: it is writable (the controller made it
# the primary), or it replicates. A replica is ready while its applier runs and its receiver has not
# given up: a receiver that is reconnecting (the primary restarts) keeps it ready, so that a primary
# restart does not take every read endpoint away. A member that neither takes writes nor replicates
# (not configured yet, or its replication stopped on an error) would serve stale data for ever.
# The Services also select by the role label the controller sets, so readiness alone never makes a
# member the primary.
set -euo pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
require_env MYSQL_ROOT_PASSWORD

read_only=$(local_sql -e 'SELECT @@GLOBAL.read_only')
[[ $read_only == 0 ]] && exit 0
states=$(local_sql -e "SELECT c.SERVICE_STATE, a.SERVICE_STATE FROM performance_schema.replication_connection_status c JOIN performance_schema.replication_applier_status a USING (CHANNEL_NAME) WHERE CHANNEL_NAME = ''")
[[ -n $states ]] || die "read-only and not replicating (waiting for the controller)"
receiver=\${states%%$'\t'*}
applier=\${states##*$'\t'}
[[ $applier == ON ]] || die "replication is not applying (applier: $applier)"
[[ $receiver != OFF ]] || die "replication is not receiving (receiver: $receiver)"
`;

/** The liveness and startup probe: does mysqld answer? */
export const ALIVE_SH = sh`#!/bin/bash
# recon8s liveness: mysqld answers on its socket. It logs in with the root password (a login without
# credentials would be refused: an "Access denied" in the error log and one more Aborted_connects at
# every probe). mysqladmin ping succeeds whenever the server answers, even when the login fails (a
# password changed by hand): a credentials problem never gets a healthy server killed.
set -o pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
mysqladmin --defaults-extra-file=/dev/fd/3 --socket="$RECON8S_SOCKET" --connect-timeout=4 ping \
  3<<<"$(client_cnf root "$MYSQL_ROOT_PASSWORD")"
`;

/** The replication sidecar, beside mysqld for the pod's life. */
export const REPLICATION_SH = sh`#!/bin/bash
# recon8s replication sidecar. The controller decides the topology (who is primary, whom replicas
# follow) over SQL; this does what needs the member's own file system or a moment the controller
# cannot see, whenever mysqld has (re)started:
#   - on the writable member (the primary), it makes sure the replication and administrative accounts
#     exist with the Secret's passwords, and makes the member read-only when it is cut off from every
#     other member (self-fencing, below);
#   - on a replica whose primary purged the binary logs it still needs, or whose pod carries a new
#     ${REPROVISION_ANNOTATION} annotation, it re-provisions the member by clone (reprovision.sh).
set -euo pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
. "\${BASH_SOURCE[0]%/*}/reprovision.sh"
require_env PRIMARY_HOST MYSQL_ROOT_PASSWORD MYSQL_REPLICATION_PASSWORD MYSQL_ADMIN_PASSWORD

# As PID 1, bash ignores SIGTERM unless it is trapped: without this the pod would wait out its grace period.
trap 'exit 0' TERM INT

pause() {
  sleep "$1" &
  wait $! || true
}

# When mysqld started, in seconds since the epoch: a restart, however quick, changes it.
server_started_at() {
  local row uptime now
  row=$(local_sql -e "SHOW GLOBAL STATUS LIKE 'Uptime'" 2>/dev/null) || return 1
  uptime=\${row##*$'\t'}
  [[ $uptime =~ ^[0-9]+$ ]] || return 1
  printf -v now '%(%s)T' -1
  printf '%d' "$((now - uptime))"
}

login_works() {
  mysql --defaults-extra-file=<(verified_cnf "$1" "$2") --host=127.0.0.1 --port=${MYSQL_PORT} \
    --get-server-public-key --connect-timeout=5 --batch -e 'SELECT 1' >/dev/null 2>&1
}

# Idempotent, and silent when nothing is to be done: no binary-log event at every restart.
ensure_accounts() {
  login_works ${REPLICATION_USER} "$MYSQL_REPLICATION_PASSWORD" && login_works ${ADMIN_USER} "$MYSQL_ADMIN_PASSWORD" &&
    { [[ -z \${MYSQL_EXPORTER_PASSWORD-} ]] || login_works ${EXPORTER_USER} "$MYSQL_EXPORTER_PASSWORD"; } && return 0
  log "creating or updating the ${REPLICATION_USER}, ${ADMIN_USER} and (with monitoring) ${EXPORTER_USER} accounts"
  local replication admin exporter
  replication=$(sql_quote "$MYSQL_REPLICATION_PASSWORD")
  admin=$(sql_quote "$MYSQL_ADMIN_PASSWORD")
  {
    # The metrics sidecar's (spec.monitoring): from the pod's loopback only, status and
    # performance_schema only, a few connections at most.
    if [[ -n \${MYSQL_EXPORTER_PASSWORD-} ]]; then
      exporter=$(sql_quote "$MYSQL_EXPORTER_PASSWORD")
      printf "CREATE USER IF NOT EXISTS '${EXPORTER_USER}'@'${EXPORTER_HOST}' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS ${EXPORTER_MAX_CONNECTIONS};\n" "$exporter"
      printf "ALTER USER '${EXPORTER_USER}'@'${EXPORTER_HOST}' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS ${EXPORTER_MAX_CONNECTIONS};\n" "$exporter"
      printf "GRANT ${EXPORTER_GRANTS} ON *.* TO '${EXPORTER_USER}'@'${EXPORTER_HOST}';\n"
      printf "GRANT SELECT ON performance_schema.* TO '${EXPORTER_USER}'@'${EXPORTER_HOST}';\n"
    fi
    printf "SET SESSION sql_mode = '';\n"
    printf "CREATE USER IF NOT EXISTS '${REPLICATION_USER}'@'%%' IDENTIFIED BY %s;\n" "$replication"
    printf "ALTER USER '${REPLICATION_USER}'@'%%' IDENTIFIED BY %s;\n" "$replication"
    # BACKUP_ADMIN: the primary is the clone donor for new replicas.
    printf "GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO '${REPLICATION_USER}'@'%%';\n"
    printf "CREATE USER IF NOT EXISTS '${ADMIN_USER}'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$admin"
    printf "ALTER USER '${ADMIN_USER}'@'%%' IDENTIFIED BY %s REQUIRE SSL;\n" "$admin"
    printf "GRANT ${ADMIN_GRANTS} ON *.* TO '${ADMIN_USER}'@'%%';\n"
    printf "GRANT SELECT ON performance_schema.* TO '${ADMIN_USER}'@'%%';\n"
  } | local_sql
}

writable() {
  [[ $(local_sql -e 'SELECT @@GLOBAL.read_only' 2>/dev/null) == 0 ]]
}

# Self-fencing. A writable member that reaches none of the other members for SELF_FENCE_AFTER_SECONDS
# (a quarter of the failover delay) makes itself read-only: it is cut off (a partition), no replica can
# acknowledge its commits, and the controller may be promoting another member on the other side; so it
# is read-only before that one takes writes (fence_self says how). Only with semi-synchronous replication on
# (never on a single member). The controller makes it writable again if it is still the primary.
readonly self_fence_after=\${SELF_FENCE_AFTER_SECONDS:-7}
peer_ips=() # the other members the headless Service named last: DNS may be cut off too
dns_failing=
isolated_since=
fencing= # set while a self-fencing that began is not complete

# A peer "answers" when its mysqld says anything, a refusal included (ERROR 1xxx is the server's;
# 2xxx are the client's own: no route, timed out). It logs in, as the replication account every
# member has: a bare TCP connection would count an aborted connect on the peer at each look, and at
# max_connect_errors get this member's address blocked there.
peer_answers() {
  local out
  out=$(timeout 3 mysql --defaults-extra-file=<(verified_cnf ${REPLICATION_USER} "$MYSQL_REPLICATION_PASSWORD") \
    --host="$1" --port=${MYSQL_PORT} --get-server-public-key --connect-timeout=2 --batch -e 'SELECT 1' 2>&1) && return 0
  [[ $out =~ ERROR\ 1[0-9]{3} ]]
}

# Looks up the other members' addresses (the headless Service names them all, ready or not) and keeps
# them for when DNS is cut off too. Every member does, every time round: one that is promoted has them
# already. Returns 1 when DNS did not answer. IPv4 and IPv6 alike (an IPv6-only cluster has no IPv4
# address to find); every address of this pod is left out (dual-stack: its own other address
# answering is no peer answering).
resolve_peers() {
  local ip out found=() ips=\${POD_IPS:-}
  local own=" \${POD_IP:-} \${ips//,/ } "
  if ! out=$(timeout 2 getent ahosts "$HEADLESS_SERVICE" 2>/dev/null); then
    [[ -n $dns_failing ]] || log "cannot look up the members' addresses ($HEADLESS_SERVICE); keeping the last known: \${peer_ips[*]:-none}"
    dns_failing=1
    return 1
  fi
  [[ -z $dns_failing ]] || log "the members' addresses can be looked up again"
  dns_failing=
  while read -r ip _; do
    [[ $own == *" $ip "* || " \${found[*]} " == *" $ip "* ]] || found+=("$ip")
  done <<<"$out"
  peer_ips=("\${found[@]}")
}

reaches_a_peer() {
  local ip pids=() pid
  if ! resolve_peers && ((\${#peer_ips[@]} == 0)); then
    # No member known and DNS cut off: with semi-synchronous replication on there are other members,
    # and none can be shown to answer.
    return 1
  fi
  # DNS answered and named no other member: there is nothing to be cut off from.
  ((\${#peer_ips[@]} == 0)) && return 0
  # Every peer at once, so that a look takes at most a few seconds however many are cut off.
  for ip in "\${peer_ips[@]}"; do
    peer_answers "$ip" &
    pids+=($!)
  done
  for pid in "\${pids[@]}"; do
    if wait "$pid"; then
      kill "\${pids[@]}" 2>/dev/null || true
      return 0
    fi
  done
  return 1
}

# The ids of client sessions: not this one, not MySQL's own threads, not replicas' dump threads.
client_sessions() {
  local_sql -e "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler') AND COMMAND NOT IN ('Binlog Dump', 'Binlog Dump GTID', 'Daemon')"
}

read_only_now() {
  [[ $(local_sql -e 'SELECT @@GLOBAL.super_read_only' 2>/dev/null) == 1 ]]
}

# Read-only at once. A commit waiting for an acknowledgement holds the commit lock read-only needs,
# and MySQL does not end that wait when its session is killed (no replica can answer: it would wait for
# ever). So: offline_mode ends the sessions of accounts without CONNECTION_ADMIN and refuses new ones;
# the remaining client sessions are killed (KILL shuts a session's socket: its client is never told a
# commit succeeded); turning the source side of semi-synchronous replication off then lets such a
# commit complete here, unacknowledged; read-only follows, and only then is offline_mode turned off
# again (the controller does it too when it makes the member writable or a replica). The sessions are
# ended in the same mysql session as the rest (--force: one that ended meanwhile is no error).
fence_self() {
  [[ -n $fencing ]] ||
    log "reached no other member for $self_fence_after s: making this member read-only (cut off, its writes could not be acknowledged anyway)"
  local id kills=()
  local_sql -e 'SET GLOBAL offline_mode = ON' 2>/dev/null || true
  for id in $(client_sessions 2>/dev/null); do kills+=("KILL CONNECTION $id;"); done
  local_sql --force -e "\${kills[*]} SET SESSION lock_wait_timeout = 5; SET GLOBAL rpl_semi_sync_source_enabled = OFF; SET GLOBAL super_read_only = ON" 2>/dev/null || true
  if read_only_now; then
    fencing=
    local_sql -e 'SET GLOBAL offline_mode = OFF' 2>/dev/null || log "could not turn offline_mode off"
  else
    # Semi-synchronous replication may be off by now: the isolation check goes on all the same.
    fencing=1
    log "could not make this member read-only yet; trying again"
  fi
}

# Returns 0 while the isolation check applies (a writable member with semi-synchronous replication on,
# or one whose self-fencing began and is not complete). It looks whether or not a commit is waiting: a
# partition also cuts off the clients, so an isolated primary is usually idle, and it must be read-only
# before a replica is promoted all the same.
check_isolation() {
  local now
  [[ -n \${HEADLESS_SERVICE:-} ]] || return 1
  [[ -n $fencing || $(local_sql -e 'SELECT @@GLOBAL.rpl_semi_sync_source_enabled' 2>/dev/null) == 1 ]] ||
    { isolated_since=; return 1; }
  printf -v now '%(%s)T' -1 # when this look began: it may take a few seconds to fail
  if reaches_a_peer; then
    isolated_since=
    fencing=
  elif [[ -n $fencing ]]; then
    fence_self
  else
    isolated_since=\${isolated_since:-$now}
    if ((now - isolated_since >= self_fence_after)); then
      fence_self
      isolated_since=
    fi
  fi
  return 0
}

configured_for=
while :; do
  # While mysqld does not answer (it is starting), look again every second.
  delay=1
  if started_at=$(server_started_at); then
    delay=10
    # Both times are whole seconds: allow for rounding.
    if [[ -n $configured_for ]] && ((started_at - configured_for <= 2 && configured_for - started_at <= 2)); then
      :
    elif writable; then
      if ensure_accounts; then configured_for=$started_at; else log "creating the accounts failed; retrying"; fi
    fi
    # The primary looks for a partition every second (a look takes up to 3 s more); every member
    # keeps the others' addresses.
    if writable && check_isolation; then delay=1; else [[ -z \${HEADLESS_SERVICE:-} ]] || resolve_peers || true; fi
    if ! writable; then
      if request=$(reprovision_requested); then
        reprovision_by_clone "the pod's ${REPROVISION_ANNOTATION} annotation asks for it ($request)" force "$request"
      elif why=$(purged_logs_error); then
        reprovision_by_clone "the primary no longer has the binary logs this replica needs ($why)"
      fi
      forget_previous_data
    fi
  fi
  pause "$delay"
done
`;

/** File names of the scripts, as the containers run them. */
export const SCRIPT = {
  alive: 'alive.sh',
  backup: 'backup.sh',
  binlog: 'binlog.sh',
  bootstrap: 'bootstrap.sh',
  findBinlog: 'find-binlog.sh',
  initConfig: 'init-config.sh',
  listBackups: 'list-backups.sh',
  ready: 'ready.sh',
  replication: 'replication.sh',
  startMysqld: 'start-mysqld.sh',
  verifyBackup: 'verify-backup.sh',
} as const;

/** Every script, by file name, as the scripts ConfigMap ships them. */
export function scriptFiles(): Record<string, string> {
  return {
    [SCRIPT.alive]: ALIVE_SH,
    [SCRIPT.backup]: BACKUP_SH,
    [SCRIPT.binlog]: BINLOG_SH,
    'binlog-find.sh': BINLOG_FIND_FUNCTIONS_SH,
    [SCRIPT.bootstrap]: BOOTSTRAP_SH,
    'common.sh': COMMON_SH,
    [SCRIPT.findBinlog]: FIND_BINLOG_SH,
    [SCRIPT.initConfig]: INIT_CONFIG_SH,
    [SCRIPT.listBackups]: LIST_BACKUPS_SH,
    [SCRIPT.ready]: READY_SH,
    'reprovision.sh': REPROVISION_SH,
    'restore.sh': RESTORE_SH,
    [SCRIPT.replication]: REPLICATION_SH,
    [SCRIPT.startMysqld]: START_MYSQLD_SH,
    'store.sh': STORE_SH,
    [SCRIPT.verifyBackup]: VERIFY_BACKUP_SH,
  };
}
