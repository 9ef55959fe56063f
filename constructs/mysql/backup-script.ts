// The backup job's script: one logical backup, then retention.
import { MYSQL_PORT, PATHS, REPLICATION_USER } from './layout.js';
import { sh } from './shell.js';

/**
 * What makes the dump restorable into a new MySQLCluster (pipe it into the new primary as root):
 * - One member answers everything: the Service picks one, and the rest of the run talks to that pod by
 *   the name it reports (report_host, its own DNS name), so the schema list, the data and the accounts
 *   all come from the same server. Where that name cannot be reached, every query goes through the
 *   Service (and says so).
 * - The application's schemas only, never the mysql schema: restoring its tables would overwrite the
 *   new cluster's own accounts and replication metadata (a replica then stops on "DROP TABLE
 *   slave_worker_info", seen on MySQL 9.7), and the new cluster has its own credentials Secret.
 * - --single-transaction: one consistent InnoDB snapshot of all of them, without locking writers out.
 *   --routines --events --triggers: the schemas' code too. --hex-blob: binary columns survive any
 *   client character set.
 * - The application's accounts (everyone but root, the replication account and MySQL's own mysql.*
 *   accounts) follow as CREATE USER IF NOT EXISTS with their password hashes (hex), then their grants.
 *   Locked accounts first: roles are usually locked, and a user's DEFAULT ROLE must exist before it.
 * - --set-gtid-purged=COMMENTED records the snapshot's GTID point as a comment. mysqldump still writes
 *   SET @@SESSION.SQL_LOG_BIN= 0 before the data, which would keep the restored rows on the new primary
 *   alone (seen on MySQL 9.7: its replica then stops on the first later write); that one line is
 *   dropped, so a restore runs as new transactions of the new cluster and reaches its replicas.
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

source_sql() { # HOST SQL: one result per line, unescaped
  mysql --defaults-extra-file=<(client_cnf root "$MYSQL_ROOT_PASSWORD") --host="$1" --port=${MYSQL_PORT} \
    --get-server-public-key --batch --skip-column-names --raw -e "$2"
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
[[ -n \${schemas[0]:-} ]] || schemas=()
accounts=$(source_sql "$host" "SELECT CONCAT(QUOTE(user), '@', QUOTE(host)) FROM mysql.user WHERE user NOT IN ('root', '${REPLICATION_USER}') AND user NOT LIKE 'mysql.%' ORDER BY account_locked = 'Y' DESC, user, host")
mapfile -t accounts <<<"$accounts"
[[ -n \${accounts[0]:-} ]] || accounts=()

dump_accounts() {
  local account creates='SET SESSION print_identified_with_as_hex = ON;' grants=''
  ((\${#accounts[@]})) || return 0
  for account in "\${accounts[@]}"; do
    creates+="SHOW CREATE USER $account;"
    grants+="SHOW GRANTS FOR $account;"
  done
  printf '\n-- recon8s: the application accounts\n'
  source_sql "$host" "$creates" | sed -e 's/^CREATE USER /CREATE USER IF NOT EXISTS /' -e 's/$/;/'
  source_sql "$host" "$grants" | sed -e 's/$/;/'
}

log "backing up $host:${MYSQL_PORT} (\${#schemas[@]} schemas, \${#accounts[@]} accounts) into $final"
{
  if ((\${#schemas[@]})); then
    mysqldump --defaults-extra-file=<(client_cnf root "$MYSQL_ROOT_PASSWORD") --host="$host" --port=${MYSQL_PORT} \
      --get-server-public-key --single-transaction --routines --events --triggers --hex-blob \
      --set-gtid-purged=COMMENTED --databases "\${schemas[@]}" |
      sed -e '/^SET @@SESSION\.SQL_LOG_BIN= 0;$/d'
  fi
  dump_accounts
} | gzip -c >"$partial"
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
