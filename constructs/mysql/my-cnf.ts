// The my.cnf every member shares. Only options valid on both MySQL 8.4 and 9.7 are emitted, and
// nothing that is already the default there (binlog_format is deprecated and ROW by default;
// log_replica_updates is ON by default).
import { MYSQL_PORT, PATHS } from './layout.js';

/** The options recon8s sets, in the order they are written. Identity and role are per member (see init-config.sh). */
const MANAGED_OPTIONS: readonly (readonly [string, string])[] = [
  // The data directory is a subdirectory of the volume; socket and pid live on an emptyDir, since
  // the root file system is read-only.
  ['datadir', PATHS.dataDir],
  ['socket', PATHS.socket],
  ['pid_file', PATHS.pidFile],
  ['tmpdir', PATHS.tmp],
  // No server-side file import/export: nothing on the read-only root file system could be written.
  ['secure_file_priv', 'NULL'],
  ['port', String(MYSQL_PORT)],
  ['bind_address', '*'],
  // No X Protocol: nothing uses it, and its port 33060 would listen on every address undeclared.
  ['mysqlx', 'OFF'],
  // Reverse DNS of pod IPs is slow and meaningless; accounts are matched by '%'.
  ['skip_name_resolve', 'ON'],
  // GTID replication: replicas find their position by GTID (SOURCE_AUTO_POSITION), never by file offsets.
  ['log_bin', 'binlog'],
  // Named explicitly: the default relay log name contains the host name.
  ['relay_log', 'relay-bin'],
  ['gtid_mode', 'ON'],
  ['enforce_gtid_consistency', 'ON'],
  // A replica that crashed discards its relay log and fetches again from the primary: crash-safe.
  ['relay_log_recovery', 'ON'],
  // Replication is started deliberately by the controller once mysqld is up, with the
  // current source and credentials, never implicitly from whatever the data directory remembers.
  ['skip_replica_start', 'ON'],
  // New replicas are provisioned by cloning the primary; donor and recipient both need the plugin.
  ['plugin_load_add', 'mysql_clone.so'],
  // Loss-less replication: a commit is acknowledged only once enough replicas received it. Every
  // member loads both sides, since any member may become the primary; the controller enables the
  // source side on the primary with the wait count the spec asks for.
  ['plugin_load_add', 'semisync_source.so'],
  ['plugin_load_add', 'semisync_replica.so'],
  // loose_: the plugins' options are unknown to the temporary servers of bootstrap.sh, which
  // (--initialize) load no plugin.
  ['loose_rpl_semi_sync_replica_enabled', 'ON'],
  // Never fall back to asynchronous replication, which would acknowledge writes no replica has:
  // with too few replicas, writes wait (the maximum, ~49 days).
  ['loose_rpl_semi_sync_source_timeout', '4294967295'],
  ['loose_rpl_semi_sync_source_wait_point', 'AFTER_SYNC'],
  // The cluster's certificate (not the self-signed one mysqld would generate, which no client can
  // verify): clients check it against ca.crt before they send a password. Reloaded in place
  // (ALTER INSTANCE RELOAD TLS) when the controller renews it.
  ['ssl_ca', PATHS.tlsCa],
  ['ssl_cert', PATHS.tlsCert],
  ['ssl_key', PATHS.tlsKey],
  // No login over TCP without TLS, whoever the account: the local socket (the agent, the scripts in the
  // pod, the metrics sidecar) needs none. spec.mysqlConf may set it OFF: the user's options come after.
  ['require_secure_transport', 'ON'],
  // A recipient verifies its donor, and presents its own certificate, when it clones.
  ['loose_clone_ssl_ca', PATHS.tlsCa],
  ['loose_clone_ssl_cert', PATHS.tlsCert],
  ['loose_clone_ssl_key', PATHS.tlsKey],
  // A donor's clone stages (file, page and redo copy) with their work done and estimated: the
  // controller reads them from the primary while a member clones it, and says in status how far along
  // it is (only the clone stages are instrumented; nothing else is recorded).
  ['performance_schema_instrument', 'stage/innodb/clone%=ON'],
  ['performance_schema_consumer_events_stages_current', 'ON'],
];

/** The shared my.cnf: recon8s' options, then the user's (sorted by key), then the per-member directory. */
export function renderMyCnf(clusterName: string, userOptions: Readonly<Record<string, string>> = {}): string {
  const user = Object.keys(userOptions)
    .sort()
    .map((k) => `${k}=${cnfValue(userOptions[k] ?? '')}`);
  return [
    `# my.cnf of MySQLCluster "${clusterName}", rendered by recon8s.`,
    '# server_id and report_host differ per member: init-config writes them at pod start into',
    `# ${PATHS.memberConfig}/, included at the end, with read_only and super_read_only ON: only the`,
    '# controller makes the primary writable.',
    '[mysqld]',
    ...MANAGED_OPTIONS.map(([k, v]) => `${k}=${v}`),
    ...(user.length > 0 ? ['', '# spec.mysqlConf', ...user] : []),
    '',
    `!includedir ${PATHS.memberConfig}`,
    '',
  ].join('\n');
}

/**
 * A value as mysqld's option-file reader (mysys/my_default.cc) gives it back: a value with a comment
 * character, a quote, a backslash or surrounding blanks is double-quoted with \\ and \" escaped.
 */
export function cnfValue(value: string): string {
  if (!/[#"'\\]|^\s|\s$/.test(value)) return value;
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
