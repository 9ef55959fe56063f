# recon8s: puts a finished clone in place before mysqld starts, sourced after common.sh by
# start-mysqld.sh and bootstrap.sh: re-provisioning a replica by clone, which the agent makes.
# shellcheck shell=bash
#
# The design. A replica that was down while the primary purged binary logs it had not received yet
# can never catch up by replication (the receiver stops with error 13114 wrapping 1236): it needs a
# new copy of the primary's data. That copy is made without ever losing what the replica had:
# - The agent (lib/agent/reprovision.ts) sees that exact error, and nothing else: a replica with transactions the
#   primary lacks (errant ones) is never re-cloned for it, since a clone would discard them.
#   Before cloning it checks that the member is read-only (so never the writable primary), that the
#   donor is writable (the primary), and that every transaction of the member is in the donor's
#   gtid_executed.
# - The running replica clones the donor into a sibling directory of its data directory
#   (`CLONE INSTANCE ... DATA DIRECTORY`, which leaves the running server's own data untouched):
#   data.clone while it is written, renamed data.cloned once CLONE INSTANCE succeeded, so that a
#   half-written clone can never be mistaken for a complete one. A failed or interrupted attempt
#   leaves data as it was; the next attempt removes data.clone first.
# - The agent then writes its report into its termination message, shuts mysqld down and exits;
#   the kubelet restarts both containers. The controller, which watches the pods, turns the report
#   into an Event on the MySQLCluster (the pod itself has no API credentials).
# - Before mysqld starts (start-mysqld.sh, and bootstrap.sh when the whole pod restarts), a complete
#   clone is put in place: data is renamed data.previous, data.cloned renamed data. Every step can be
#   interrupted and run again.
# - The agent removes data.previous only once the cloned member replicates (receiver and applier
#   both running). Until then the old data is one rename away.
# The volume must hold two copies of the data while this happens; a clone that does not fit fails
# (ReprovisionFailed), and the old data stays in place.
#
# The same mechanism re-provisions a member on request: a new value of the pod annotation
# recon8s.dev/reprovision (read from a downward API volume) asks for it, even when the member holds
# transactions the primary lacks (errant ones: a person decided to discard them). The value handled
# last is kept on the data volume, so a request is done once. The controller makes such a request
# itself for a former primary whose surplus it proved never acknowledged, bounded to that surplus, and
# what a clone discards is kept beside the data: lib/agent/reprovision.ts says how.
recon8s_volume=${DATA_VOLUME:-$RECON8S_DATA_VOLUME} # overridden by unit tests only
recon8s_datadir=$recon8s_volume/$RECON8S_DATA_DIR_NAME
recon8s_cloned=$recon8s_datadir.cloned
recon8s_previous=$recon8s_datadir.previous

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
