// The controller's SQL to one member, through mysql2, as the administrative account the bootstrap
// creates (its password from the credentials Secret; never logged, never on a command line). Thin on
// purpose: every decision is in decide.ts; this only reads what it needs and does what it is told.
import { createConnection as createTcpConnection } from 'node:net';
import type { Socket } from 'node:net';
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { CLONE_DONATIONS_SQL, cloneDonationsFrom } from './clone-progress.js';
import type { CloneDonation } from './clone-progress.js';
import { GtidSet } from './gtid-set.js';
import type { FencingSql } from './fencing.js';
import {
  ADMIT_CLIENTS,
  FENCING_FLAGS_SQL,
  LOCK_SQL,
  SESSION_STATE_SQL,
  clientSessionsQuery,
  fence,
  fencingFlagsFrom,
  killStatement,
  killedOrGone,
  underFencingLock,
} from './fencing.js';
import { MYSQL_CLONE_USER, MYSQL_TLS_CA_PATH } from '../../constructs/index.js';
import { dropIfTimedOut, dropSession, endSession } from './session-end.js';
import type { MemberSql } from './topology.js';
import { threadState } from './topology.js';

export interface MemberCredentials {
  readonly adminUser: string;
  readonly adminPassword: string;
  readonly replicationUser: string;
  readonly replicationPassword: string;
}

export interface MemberConnectOptions {
  /** Where the member answers: its pod IP. */
  readonly host: string;
  /** The member's name in its certificate (`<pod>.<headless>`): verified, with the chain, before the password is sent. */
  readonly servername: string;
  readonly port: number;
  readonly credentials: MemberCredentials;
  /** The cluster's CA certificate (PEM): the member must present a certificate it signed. */
  readonly ca: string;
  /** @default 3000 */
  readonly connectTimeoutMs?: number;
  /**
   * Called once if the session ends other than by close() (the member closed it, its mysqld died, the
   * network reset it): a session kept between looks tells its owner at once, not at its next use.
   */
  readonly onLost?: () => void;
}

/**
 * Opens a session to a member. TLS is required and verified before the account's password is sent
 * (it crosses the pod network): the member must present a certificate signed by its cluster's CA that
 * names it (`servername`), or the handshake fails and no credential leaves. The chain alone would admit
 * any certificate of a shared issuer (a cert-manager ClusterIssuer signs other workloads' too).
 */
export async function connectMember(o: MemberConnectOptions): Promise<MemberSession> {
  const connection = await openVerified(
    { ...o, user: o.credentials.adminUser, password: o.credentials.adminPassword },
    { bigNumbers: true },
  );
  // A session the controller lost (a partition) ends within 2 minutes rather than MySQL's 8 hours: it
  // may hold the fencing lock (fencing.ts), which every later fencing of the member waits for.
  await connection.query({ sql: 'SET SESSION wait_timeout = 120', timeout: QUERY_TIMEOUT_MS }).catch((e: unknown) => {
    dropSession(connection);
    throw e;
  });
  const another = () =>
    openVerified(
      { ...o, user: o.credentials.adminUser, password: o.credentials.adminPassword },
      { multipleStatements: true },
    );
  return new MemberSession(connection, o.credentials, another, o.onLost);
}

/** Who logs in to a member, and the CA its certificate must chain to. */
export interface VerifiedLogin {
  /** Where the member answers (its pod IP, or a name). */
  readonly host: string;
  /** The name its certificate must hold (a DNS name of memberDnsNames): checked as ssl-mode=VERIFY_IDENTITY. */
  readonly servername: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  /** The cluster's CA certificate (PEM): the member must present a certificate it signed. */
  readonly ca: string;
  /** @default 3000 */
  readonly connectTimeoutMs?: number;
}

/**
 * A session to a member as `o.user` over TLS that verified the member's certificate before the password
 * was sent (connectMember says how), with the session's sql_mode as mysql2's quoting needs it.
 * `bigNumbers`: BIGINT values as strings (GTID numbers and counters past 2^53).
 */
export async function openVerified(
  o: VerifiedLogin,
  opts: { readonly bigNumbers?: boolean; readonly multipleStatements?: boolean } = {},
): Promise<Connection> {
  // Loaded on the first connection, not at start: a controller that has no MySQLCluster to manage
  // never needs mysql2 (~6 MiB of resident memory).
  const { createConnection } = await import('mysql2/promise');
  let connection: Connection;
  try {
    connection = await createConnection({
      ...byName(o),
      user: o.user,
      password: o.password,
      connectTimeout: o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      multipleStatements: opts.multipleStatements ?? false,
      ...(opts.bigNumbers ? { supportBigNumbers: true, bigNumberStrings: true } : {}),
    });
  } catch (e) {
    // mysql2 sends the credentials only once the TLS handshake succeeded.
    throw asCertificateError(e);
  }
  // Backslash escapes in the literals mysql2 quotes, whatever the server's sql_mode. A member that let the
  // session in and then fell silent does not keep it open.
  await connection.query({ sql: "SET SESSION sql_mode = ''", timeout: QUERY_TIMEOUT_MS }).catch((e: unknown) => {
    dropSession(connection);
    throw e;
  });
  return connection;
}

/**
 * mysql2's connection options that reach `host` (an address) but verify the certificate by `servername`:
 * mysql2 takes the name to verify from `host` (and checks none for an address), so the TCP connection to
 * the address is made here and `host` is the name. A certificate lacking the name fails the handshake
 * (ERR_TLS_CERT_ALTNAME_INVALID) before any password is sent.
 */
export function byName(o: {
  readonly host: string;
  readonly port: number;
  readonly servername: string;
  readonly ca: string;
}): {
  host: string;
  port: number;
  stream: () => Socket;
  ssl: { ca: string; rejectUnauthorized: true; verifyIdentity: true };
} {
  return {
    host: o.servername,
    port: o.port,
    stream: () => createTcpConnection({ host: o.host, port: o.port, noDelay: true }),
    ssl: { ca: o.ca, rejectUnauthorized: true, verifyIdentity: true },
  };
}

/**
 * A member whose certificate did not verify in the TLS handshake (one its cluster's CA did not sign, an
 * expired one): it was not sent a password. `verifyError` is OpenSSL's reason.
 */
export class MemberCertificateError extends Error {
  readonly verifyError: string;
  constructor(reason: string) {
    super(
      `refused the member's TLS certificate (${reason}): the cluster's CA does not vouch for it, so no credential was sent`,
    );
    this.name = 'MemberCertificateError';
    this.verifyError = reason;
  }
}

/**
 * OpenSSL's reason when a connection failed because the member's certificate did not verify; undefined
 * for any other failure. mysql2 reports every failed TLS handshake as HANDSHAKE_SSL_ERROR, overwriting
 * Node's own code, and most are not the certificate: the socket ended (a member restarting: "Client
 * network socket disconnected before secure TLS connection was established", "read ECONNRESET") or the
 * peer broke the protocol (an OpenSSL library error, e.g. "wrong version number"). Node makes a
 * verification error from OpenSSL's verify result with a message and a code only; the others carry
 * what the socket or OpenSSL said (syscall, library, the addresses).
 */
export function certificateRejection(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const err = e as { code?: unknown; message?: unknown };
  if (err.code !== 'HANDSHAKE_SSL_ERROR') return undefined;
  if (['syscall', 'errno', 'library', 'localAddress'].some((k) => k in err)) return undefined;
  // Node adds advice of its own to some ("…; if the root CA is installed locally, try running Node.js
  // with --use-system-ca"), which does not apply to a cluster's CA.
  const reason = String(err.message ?? '').replace(/; if the root CA is installed locally.*$/s, '');
  return reason === '' || /socket disconnected|ECONNRESET|EPIPE/.test(reason) ? undefined : reason;
}

/** The error to throw for a failed connection: a MemberCertificateError when the certificate was refused. */
export function asCertificateError(e: unknown): unknown {
  const reason = certificateRejection(e);
  return reason === undefined ? e : new MemberCertificateError(reason);
}

/** The deadline of a connection to a member (TLS handshake and login included). */
export const CONNECT_TIMEOUT_MS = 3_000;
/** The deadline of one statement to a member. */
export const QUERY_TIMEOUT_MS = 10_000;
/**
 * The source sends a heartbeat after this long with nothing else to send (MySQL's default is 30 s): a
 * replica that has heard nothing for a few seconds more is cut off from it, which is how the controller
 * tells a primary that its replicas cannot reach from one that is only quiet (decide.ts, failover.ts).
 */
const HEARTBEAT_PERIOD_S = 1;

/**
 * CHANGE REPLICATION SOURCE as replicateFrom sends it, placeholders first and their values in order (the
 * real-mysqld sandbox sends the same statement: test/integration/support/sandbox-cluster.ts): GTID
 * auto-positioning, TLS that verifies the source by the cluster's CA and its name, a heartbeat every
 * HEARTBEAT_PERIOD_S.
 */
export function changeSourceStatement(source: {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
}): { readonly sql: string; readonly values: readonly (string | number)[] } {
  return {
    sql: `CHANGE REPLICATION SOURCE TO SOURCE_HOST = ?, SOURCE_PORT = ?, SOURCE_USER = ?, SOURCE_PASSWORD = ?,
       SOURCE_AUTO_POSITION = 1, SOURCE_SSL = 1, SOURCE_SSL_CA = ?, SOURCE_SSL_VERIFY_SERVER_CERT = 1,
       GET_SOURCE_PUBLIC_KEY = 1, SOURCE_CONNECT_RETRY = 1, SOURCE_RETRY_COUNT = 864000,
       SOURCE_HEARTBEAT_PERIOD = ${HEARTBEAT_PERIOD_S}`,
    values: [source.host, source.port, source.user, source.password, MYSQL_TLS_CA_PATH],
  };
}

/** STOP REPLICA waits for the applier to finish the transaction it is applying. */
const STOP_REPLICA_TIMEOUT_MS = 60_000;

export class MemberSession {
  constructor(
    private readonly c: Connection,
    private readonly credentials: MemberCredentials,
    /** A second session to the same member, taking multi-statement queries (fencing's read-only request). */
    private readonly another: () => Promise<Connection>,
    onLost?: () => void,
  ) {
    // An idle connection that ends (the member closed it, its mysqld died) emits 'error': unheard, it
    // would end the process. A failure during a query reaches that query's caller as well.
    const lost = (): void => {
      if (this.closing) return;
      this.closing = true;
      onLost?.();
    };
    c.on('error', lost);
    c.on('end', lost);
  }

  private closing = false;

  /**
   * Ends the session, its socket included; a member that no longer answers (partitioned, its node
   * powered off) neither holds it up nor keeps the socket open (session-end.ts).
   */
  async close(): Promise<void> {
    this.closing = true;
    await endSession(this.c);
  }

  /**
   * Every statement has a deadline: a member cut off in the middle of one (a network partition)
   * would otherwise hold the cluster manager, and with it any failover, for ever. mysql2 rejects the
   * statement when the deadline passes but leaves it running on the session: the session is ended
   * then, so that nothing after it (the controller keeps its sessions between looks) queues behind it.
   */
  private async rows(sql: string, values?: unknown[], timeoutMs = QUERY_TIMEOUT_MS): Promise<RowDataPacket[]> {
    const [rows] = await this.c.query<RowDataPacket[]>({ sql, values, timeout: timeoutMs }).catch((e: unknown) => {
      if ((e as { code?: string }).code === 'PROTOCOL_SEQUENCE_TIMEOUT') this.closing = true;
      return dropIfTimedOut(this.c)(e);
    });
    return rows;
  }

  /** A statement that returns no rows, with the same deadline. */
  private async exec(sql: string, values?: unknown[], timeoutMs = QUERY_TIMEOUT_MS): Promise<void> {
    await this.rows(sql, values, timeoutMs);
  }

  /** Everything decide() needs from this member, in two queries, each within `deadlineMs`. */
  async observe(deadlineMs = QUERY_TIMEOUT_MS): Promise<MemberSql> {
    const [vars] = await this.rows(
      'SELECT @@server_uuid AS uuid, @@read_only AS ro, @@gtid_executed AS executed, @@offline_mode AS offline, ' +
        '@@rpl_semi_sync_source_enabled AS semi, @@rpl_semi_sync_source_wait_for_replica_count AS waitCount, ' +
        "(SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Rpl_semi_sync_source_clients') AS clients",
      undefined,
      deadlineMs,
    );
    const [channel] = await this.rows(
      `SELECT cfg.HOST AS host, c.SERVICE_STATE AS receiver, a.SERVICE_STATE AS applier,
              c.RECEIVED_TRANSACTION_SET AS received, c.LAST_ERROR_NUMBER AS receiverErrno, c.LAST_ERROR_MESSAGE AS receiverError,
              cfg.HEARTBEAT_INTERVAL AS heartbeat, UNIX_TIMESTAMP(NOW(6)) AS nowAt,
              GREATEST(UNIX_TIMESTAMP(c.LAST_HEARTBEAT_TIMESTAMP),
                       UNIX_TIMESTAMP(c.LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP)) AS heardAt,
              (SELECT w.LAST_ERROR_MESSAGE FROM performance_schema.replication_applier_status_by_worker w
                WHERE w.CHANNEL_NAME = '' AND w.LAST_ERROR_NUMBER <> 0 LIMIT 1) AS applierError,
              (SELECT co.LAST_ERROR_MESSAGE FROM performance_schema.replication_applier_status_by_coordinator co
                WHERE co.CHANNEL_NAME = '' AND co.LAST_ERROR_NUMBER <> 0 LIMIT 1) AS coordinatorError
         FROM performance_schema.replication_connection_configuration cfg
         JOIN performance_schema.replication_connection_status c USING (CHANNEL_NAME)
         JOIN performance_schema.replication_applier_status a USING (CHANNEL_NAME)
        WHERE cfg.CHANNEL_NAME = ''`,
      undefined,
      deadlineMs,
    );
    if (!vars) throw new Error('the member returned no server variables');
    const receiver = threadState(channel?.receiver);
    const applier = threadState(channel?.applier);
    // An error only counts while the thread it belongs to is stopped: a receiver that reconnected keeps its last error.
    const applierError = applier === 'OFF' ? String(channel?.applierError ?? channel?.coordinatorError ?? '') : '';
    const error =
      applierError ||
      (receiver === 'OFF' && Number(channel?.receiverErrno ?? 0) !== 0 ? String(channel?.receiverError ?? '') : '');
    // Both times are the member's (no clock skew with the controller); a zero timestamp (never heard
    // since mysqld started) is 0 here, which says nothing about the source.
    const heardAt = Number(channel?.heardAt ?? 0);
    const silence =
      heardAt > 0 ? { sourceSilentMs: Math.max(0, Math.round((Number(channel?.nowAt) - heardAt) * 1000)) } : {};
    const heartbeat = Number(channel?.heartbeat);
    const receiverErrno = Number(channel?.receiverErrno ?? 0);
    const timing = {
      ...silence,
      ...(Number.isFinite(heartbeat) ? { heartbeatMs: Math.round(heartbeat * 1000) } : {}),
      ...(receiverErrno !== 0 ? { receiverErrno } : {}),
    };
    return {
      serverUuid: String(vars.uuid),
      writable: Number(vars.ro) === 0,
      executed: GtidSet.parse(String(vars.executed ?? '')),
      received: channel ? GtidSet.parse(String(channel.received ?? '')) : GtidSet.EMPTY,
      ...(channel?.host
        ? {
            channel: {
              sourceHost: String(channel.host),
              receiver,
              applier,
              ...(error ? { error, errorOf: applierError ? 'applier' : 'receiver' } : {}),
              ...timing,
            },
          }
        : {}),
      offline: Number(vars.offline) === 1,
      semiSync: {
        enabled: Number(vars.semi) === 1,
        waitCount: Number(vars.waitCount),
        ...(vars.clients === null || vars.clients === undefined ? {} : { clients: Number(vars.clients) }),
      },
    };
  }

  /**
   * No more writes, and no client session left that could write (fencing.ts says how). `cutOff`: none of
   * its replicas hears it, so no commit in flight can be acknowledged: not waited for.
   */
  async fence(o: { readonly cutOff?: boolean; readonly stopping?: boolean } = {}): Promise<void> {
    await fence(this.fencingSql(), {
      // The clone account's sessions (a donor's copy, which writes nothing) are spared, as they were while
      // cloning was the replication account's.
      spare: [this.credentials.adminUser, this.credentials.replicationUser, MYSQL_CLONE_USER],
      // The member may still reach its replicas: commits in flight get their acknowledgement first.
      waitForCommitsSeconds: o.cutOff ? 0 : 5,
      ...(o.stopping ? { leaveSourceSide: true } : {}),
    });
  }

  private fencingSql(): FencingSql {
    return {
      exec: (sql) => this.exec(sql),
      clientSessions: async (spare) => {
        const q = clientSessionsQuery(spare);
        return (await this.rows(q.sql, q.values)).map((r) => Number(r.id));
      },
      kill: (id) => this.exec(killStatement(id)).catch(killedOrGone),
      aside: async (statements) => {
        const c = await this.another();
        const done = (async () => {
          try {
            await c.query(statements.join(';\n'));
          } finally {
            dropSession(c);
          }
        })();
        return { id: c.threadId, done };
      },
      lock: async (name, seconds) => {
        const [row] = await this.rows(LOCK_SQL, [name, seconds], (seconds + 5) * 1000);
        return Number(row?.got) === 1;
      },
      sessionState: async (id) => {
        const [row] = await this.rows(SESSION_STATE_SQL, [id]);
        return row ? String(row.state ?? '') : undefined;
      },
      fencingFlags: async () => {
        const [row] = await this.rows(FENCING_FLAGS_SQL);
        return fencingFlagsFrom(row);
      },
    };
  }

  /**
   * Semi-synchronous replication as told, then writable (super_read_only first off, then read_only).
   * Never beside a fencing (underFencingLock).
   */
  async enableWrites(waitCount: number): Promise<void> {
    await underFencingLock(this.fencingSql(), async () => {
      if (waitCount > 0) {
        await this.exec('SET GLOBAL rpl_semi_sync_source_wait_for_replica_count = ?', [waitCount]);
        await this.exec('SET GLOBAL rpl_semi_sync_source_enabled = ON');
      } else {
        await this.exec('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
      }
      // Offline since a fencing (fence()): as the primary, what it holds is the cluster's history.
      await this.exec(ADMIT_CLIENTS);
      await this.exec('SET GLOBAL super_read_only = OFF');
      await this.exec('SET GLOBAL read_only = OFF');
    });
  }

  /**
   * Replicate from `sourceHost` with GTID auto-positioning, as the replication account, over TLS that
   * verifies the source: its certificate must be signed by the cluster's CA and name `sourceHost`.
   */
  async replicateFrom(sourceHost: string, port: number): Promise<void> {
    // A receiver cut off (its source fenced: offline_mode refuses the replication account's new sessions
    // for a moment) tries again every second, for ten days: at MySQL's 60 s, or the 10 s this once used,
    // a switchover waited that long for the last transactions (the HA e2e measured 9 s of a 10 s one).
    await this.exec('STOP REPLICA', undefined, STOP_REPLICA_TIMEOUT_MS);
    const change = changeSourceStatement({
      host: sourceHost,
      port,
      user: this.credentials.replicationUser,
      password: this.credentials.replicationPassword,
    });
    await this.exec(change.sql, [...change.values]);
    await this.exec('START REPLICA');
  }

  /**
   * offline_mode off, for good (persisted: a member kept offline by a fencing stays so across a restart
   * of its mysqld until this): decide.ts asks it once the member replicates from a primary that holds
   * everything it has.
   */
  async admitClients(): Promise<void> {
    await this.exec(ADMIT_CLIENTS);
  }

  async stopReplication(): Promise<void> {
    await this.exec('STOP REPLICA', undefined, STOP_REPLICA_TIMEOUT_MS);
  }

  async stopReceiver(): Promise<void> {
    await this.exec('STOP REPLICA IO_THREAD', undefined, STOP_REPLICA_TIMEOUT_MS);
  }

  /** When the certificate this member serves expires (ISO 8601), or '' when it serves none. */
  async servedCertificateNotAfter(): Promise<string> {
    const [row] = await this.rows("SHOW GLOBAL STATUS LIKE 'Ssl_server_not_after'");
    const t = Date.parse(String(row?.Value ?? ''));
    return Number.isNaN(t) ? '' : new Date(t).toISOString();
  }

  /** The clones this member serves as a donor now (clone-progress.ts): none unless a member clones it. */
  async cloneDonations(): Promise<CloneDonation[]> {
    return cloneDonationsFrom(await this.rows(CLONE_DONATIONS_SQL));
  }

  /** Reads the certificate files again: new connections get the renewed certificate, open ones keep theirs. */
  async reloadTls(): Promise<void> {
    await this.exec('ALTER INSTANCE RELOAD TLS');
  }

  /** @@gtid_executed now. */
  async executed(): Promise<GtidSet> {
    const [row] = await this.rows('SELECT @@gtid_executed AS executed');
    return GtidSet.parse(String(row?.executed ?? ''));
  }

  /**
   * Waits until every transaction of `set` is applied here; false after `timeoutSeconds`. The applier
   * is started if it stopped (the receiver stays as it is).
   */
  async waitForApplied(set: GtidSet, timeoutSeconds: number): Promise<boolean> {
    if (set.isEmpty()) return true;
    await this.exec('START REPLICA SQL_THREAD').catch(() => undefined);
    const [row] = await this.rows(
      'SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?) AS timedOut',
      [set.toString(), timeoutSeconds],
      timeoutSeconds * 1000 + QUERY_TIMEOUT_MS,
    );
    return Number(row?.timedOut) === 0;
  }

  /** Leaves replication for good: this member is about to be the primary. */
  async leaveReplication(): Promise<void> {
    await this.exec('STOP REPLICA', undefined, STOP_REPLICA_TIMEOUT_MS);
    await this.exec('RESET REPLICA ALL');
  }
}
