// Re-provisioning a replica by clone, when its primary no longer has the binary logs it needs.
import { DATA_DIR_NAME, MYSQL_PORT, PATHS, REPLICATION_USER, REPROVISION_ANNOTATION } from './layout.js';
import { sh } from './shell.js';

/** The prefix of the termination message that says why the replication sidecar exited; lib/controller reads it. */
export const REPORT_REASONS = { reprovisioned: 'ReprovisionedByClone', failed: 'ReprovisionFailed' } as const;

/**
 * The design. A replica that was down while the primary purged binary logs it had not received yet
 * can never catch up by replication (the receiver stops with error 13114 wrapping 1236): it needs a
 * new copy of the primary's data. That copy is made without ever losing what the replica had:
 * - The replication sidecar sees that exact error, and nothing else: a replica with transactions the
 *   primary lacks (errant ones) is never re-cloned automatically, since a clone would discard them.
 *   Before cloning it checks that the member is read-only (so never the writable primary), that the
 *   donor is writable (the primary), and that every transaction of the member is in the donor's
 *   gtid_executed.
 * - The running replica clones the donor into a sibling directory of its data directory
 *   (`CLONE INSTANCE ... DATA DIRECTORY`, which leaves the running server's own data untouched):
 *   data.clone while it is written, renamed data.cloned once CLONE INSTANCE succeeded, so that a
 *   half-written clone can never be mistaken for a complete one. A failed or interrupted attempt
 *   leaves data as it was; the next attempt removes data.clone first.
 * - The sidecar then writes its report into its termination message, shuts mysqld down and exits;
 *   the kubelet restarts both containers. The controller, which watches the pods, turns the report
 *   into an Event on the MySQLCluster (the pod itself has no API credentials).
 * - Before mysqld starts (start-mysqld.sh, and bootstrap.sh when the whole pod restarts), a complete
 *   clone is put in place: data is renamed data.previous, data.cloned renamed data. Every step can be
 *   interrupted and run again.
 * - The sidecar removes data.previous only once the cloned member replicates (receiver and applier
 *   both running). Until then the old data is one rename away.
 * The volume must hold two copies of the data while this happens; a clone that does not fit fails
 * (ReprovisionFailed), and the old data stays in place.
 *
 * The same mechanism re-provisions a member on request: a new value of the pod annotation
 * recon8s.dev/reprovision (read from a downward API volume) asks for it, even when the member holds
 * transactions the primary lacks (errant ones: a person decided to discard them). The value handled
 * last is kept on the data volume, so a request is done once.
 */
export const REPROVISION_SH = sh`# recon8s: re-provisioning a replica by clone, sourced after common.sh (see
# constructs/mysql/reprovision-script.ts for the design).
recon8s_volume=\${DATA_VOLUME:-${PATHS.dataVolume}} # overridden by unit tests only
recon8s_datadir=$recon8s_volume/${DATA_DIR_NAME}
recon8s_clone=$recon8s_datadir.clone
recon8s_cloned=$recon8s_datadir.cloned
recon8s_previous=$recon8s_datadir.previous
recon8s_request_done=$recon8s_volume/reprovision-request.done
recon8s_pod_annotations=\${POD_ANNOTATIONS:-${PATHS.podInfo}/annotations} # overridden by unit tests only

# Before mysqld starts: puts a complete clone in place of the data directory, the old one kept aside.
adopt_clone() {
  [[ -d $recon8s_cloned ]] || return 0
  if [[ -e $recon8s_previous ]]; then
    # An earlier clone never replicated: keep the data from before it, replace that earlier clone.
    rm -rf -- "$recon8s_datadir"
  elif [[ -e $recon8s_datadir ]]; then
    mv -T -- "$recon8s_datadir" "$recon8s_previous"
  fi
  # Like a new replica's: its own server identity, none of the donor's persisted settings.
  rm -f -- "$recon8s_cloned/auto.cnf" "$recon8s_cloned/mysqld-auto.cnf"
  mv -T -- "$recon8s_cloned" "$recon8s_datadir"
  sync
  log "the data directory is now a clone of the primary; the previous one is kept in $recon8s_previous until it replicates"
}

# The receiver's error when the primary has purged binary logs this replica has not received yet
# (13114 wrapping 1236); prints the message. Any other state or error is not this function's business.
purged_logs_error() {
  local row
  row=$(local_sql -e "SELECT LAST_ERROR_NUMBER, LAST_ERROR_MESSAGE FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = '' AND SERVICE_STATE = 'OFF'") || return 1
  [[ \${row%%$'\t'*} == 13114 && $row == *'purged required binary logs'* ]] || return 1
  printf '%s' "\${row#*$'\t'}"
}

donor_sql() {
  mysql --defaults-extra-file=<(verified_cnf ${REPLICATION_USER} "$MYSQL_REPLICATION_PASSWORD") --host="$PRIMARY_HOST" \
    --port=${MYSQL_PORT} --get-server-public-key --connect-timeout=5 --batch --skip-column-names "$@"
}

# The first line of a mysql client error, without any quoted statement text (a syntax error quotes
# the statement, which holds a password).
error_summary() {
  local first=\${1%%$'\n'*}
  first=\${first%% near \'*}
  printf '%s' "\${first%.}"
}

# Says why this member is not re-provisioned, once per reason (the sidecar asks every 10 s).
refusal=
refuse() {
  [[ $1 == "$refusal" ]] || log "$1"
  refusal=$1
}

# A re-provisioning request not handled yet: prints the annotation's value.
reprovision_requested() {
  local line value
  [[ -r $recon8s_pod_annotations ]] || return 1
  line=$(grep -m1 '^${REPROVISION_ANNOTATION}=' "$recon8s_pod_annotations") || return 1
  value=\${line#*=}
  value=\${value#\"}
  value=\${value%\"}
  [[ -n $value && $value != "$(cat "$recon8s_request_done" 2>/dev/null)" ]] || return 1
  printf '%s' "$value"
}

# Whether this member may be replaced by a clone of the primary now; says why not otherwise. With
# "force" (a person asked for it), transactions the primary lacks do not prevent it.
may_reprovision() {
  local force=\${1:-} ours donor theirs subset
  ours=$(local_sql -e 'SELECT @@GLOBAL.super_read_only') || return 1
  [[ $ours == 1 ]] || { refuse "not re-provisioning: this member is writable"; return 1; }
  donor=$(donor_sql -e "SELECT @@GLOBAL.read_only, REPLACE(@@GLOBAL.gtid_executed, CHAR(10), '')" 2>&1) ||
    { refuse "not re-provisioning yet: the primary $PRIMARY_HOST does not answer: $donor"; return 1; }
  [[ \${donor%%$'\t'*} == 0 ]] || { refuse "not re-provisioning: $PRIMARY_HOST is read-only, not a primary"; return 1; }
  theirs=\${donor#*$'\t'}
  subset=$(local_sql -e "SELECT GTID_SUBSET(REPLACE(@@GLOBAL.gtid_executed, CHAR(10), ''), $(sql_quote "$theirs"))") || return 1
  [[ $subset == 1 || $force == force ]] ||
    { refuse "not re-provisioning: this member has transactions the primary does not have; a clone would discard them"; return 1; }
  local state
  state=$(local_sql -e 'SELECT STATE FROM performance_schema.clone_status') || return 1
  [[ $state != 'In Progress' ]] || { refuse "not re-provisioning yet: a clone is under way"; return 1; }
}

# Replaces this replica's data by a clone of the primary: see the design. Exits once mysqld is told
# to stop, so that both containers start again; returns when it did nothing.
reprovision_by_clone() {
  local why=$1 force=\${2:-} request=\${3:-} out
  may_reprovision "$force" || return 0
  log "re-provisioning this member by clone from $PRIMARY_HOST: $why"
  rm -rf -- "$recon8s_clone"
  if ! out=$({
    printf "SET SESSION sql_mode = '';\n"
    printf 'SET GLOBAL clone_valid_donor_list = %s;\n' "$(sql_quote "$PRIMARY_HOST:${MYSQL_PORT}")"
    printf "CLONE INSTANCE FROM '${REPLICATION_USER}'@%s:${MYSQL_PORT} IDENTIFIED BY %s DATA DIRECTORY = %s;\n" \
      "$(sql_quote "$PRIMARY_HOST")" "$(sql_quote "$MYSQL_REPLICATION_PASSWORD")" "$(sql_quote "$recon8s_clone")"
  } | local_sql 2>&1); then
    rm -rf -- "$recon8s_clone"
    out=$(error_summary "$out")
    log "re-provisioning by clone failed: $out"
    report ${REPORT_REASONS.failed} "$(member_name) could not be re-provisioned by clone from $PRIMARY_HOST: $out; its data is unchanged, and it tries again when this container restarts"
    exit 1
  fi
  mv -T -- "$recon8s_clone" "$recon8s_cloned"
  sync
  [[ -z $request ]] || printf '%s' "$request" >"$recon8s_request_done"
  report ${REPORT_REASONS.reprovisioned} "$(member_name) was re-provisioned by clone from $PRIMARY_HOST: $why. Its previous data directory is kept until the clone replicates."
  log "cloned; restarting mysqld on the clone"
  local_sql -e 'SHUTDOWN' || true
  exit 0
}

# Once the clone replicates, the data it replaced is no longer needed.
forget_previous_data() {
  [[ -e $recon8s_previous ]] || return 0
  local states
  states=$(local_sql -e "SELECT c.SERVICE_STATE, a.SERVICE_STATE FROM performance_schema.replication_connection_status c JOIN performance_schema.replication_applier_status a USING (CHANNEL_NAME) WHERE CHANNEL_NAME = ''") || return 0
  [[ $states == $'ON\tON' ]] || return 0
  rm -rf -- "$recon8s_previous"
  log "the clone replicates; removed the previous data directory $recon8s_previous"
}
`;

/** The mysql container's command: a clone waiting to be adopted is put in place, then mysqld runs. */
export const START_MYSQLD_SH = sh`#!/bin/bash
# recon8s: starts mysqld, after putting in place a clone the replication sidecar made (see
# constructs/mysql/reprovision-script.ts).
set -euo pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
. "\${BASH_SOURCE[0]%/*}/reprovision.sh"
adopt_clone
# mysqld directly, with our my.cnf only: nothing depends on the image's entrypoint or its /etc/my.cnf
# (spec.image may be another build). exec: mysqld gets the kubelet's signals.
exec mysqld --defaults-file=${PATHS.myCnf}
`;
