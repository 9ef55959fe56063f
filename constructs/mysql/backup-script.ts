// The backup job's script: one logical backup, then retention.
import { MYSQL_PORT, PATHS } from './layout.js';
import { sh } from './shell.js';

/**
 * What makes the dump restorable into a new MySQLCluster (pipe it into the new primary):
 * - --single-transaction: one consistent InnoDB snapshot, without locking writers out.
 * - --all-databases --routines --events --triggers: everything, accounts (the mysql schema) included;
 *   --flush-privileges makes restored accounts effective at once. Keep the credentials Secret with
 *   the backups: the restored root and replication accounts have its passwords.
 * - --set-gtid-purged=OFF: without it a dump of a GTID server starts with SET sql_log_bin = 0 and sets
 *   gtid_purged, so a restore into a primary would never reach its replicas. Restored rows become new
 *   transactions of the new cluster instead.
 * - --hex-blob: binary columns survive any client character set.
 * The file is written as <name>-<UTC time>.sql.gz.partial and renamed only once complete, so a
 * failed or interrupted run never leaves something that looks like a backup, and retention (run
 * only after a success) never counts one. Only files named exactly like this cluster's backups are
 * ever removed: the volume may be shared.
 */
export const BACKUP_SH = sh`#!/bin/bash
# recon8s backup: dumps the cluster into the backup volume and keeps the newest BACKUP_RETAIN dumps.
set -euo pipefail
. "\${BASH_SOURCE[0]%/*}/common.sh"
require_env CLUSTER_NAME BACKUP_HOST BACKUP_RETAIN MYSQL_ROOT_PASSWORD
[[ $BACKUP_RETAIN =~ ^[1-9][0-9]*$ ]] || die "BACKUP_RETAIN must be a positive integer, got '$BACKUP_RETAIN'"

dir=\${BACKUP_DIR:-${PATHS.backup}} # overridden by unit tests only
printf -v stamp '%(%Y%m%dT%H%M%SZ)T' -1
final=$dir/$CLUSTER_NAME-$stamp.sql.gz
partial=$final.partial
trap 'rm -f -- "$partial"' EXIT

log "backing up $BACKUP_HOST:${MYSQL_PORT} into $final"
mysqldump --defaults-extra-file=<(client_cnf root "$MYSQL_ROOT_PASSWORD") --host="$BACKUP_HOST" --port=${MYSQL_PORT} \
  --get-server-public-key --single-transaction --all-databases --routines --events --triggers \
  --flush-privileges --hex-blob --set-gtid-purged=OFF |
  gzip -c >"$partial"
sync -- "$partial"
mv -f -- "$partial" "$final"
log "backup complete: $final"

# Globs expand sorted (LC_ALL=C), and the names sort by time: the oldest come first.
shopt -s nullglob
backups=("$dir/$CLUSTER_NAME"-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z.sql.gz)
for ((i = 0; i < \${#backups[@]} - BACKUP_RETAIN; i++)); do
  rm -f -- "\${backups[i]}"
  log "removed the old backup \${backups[i]}"
done
`;
