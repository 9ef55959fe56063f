// The agent's SQL to its own member: over the pod's socket, as root (the password read from the mounted
// credentials Secret whenever a session is opened, never logged), through a small pool so that a probe
// never waits behind the loop. A rotated root password (lib/mysql/credential-rotation.ts) reaches the pool without a
// restart: when the file says another password, new sessions come from a new pool, and the old pool is
// ended once its statements are done (a clone may run for hours on one of its sessions).
import type { Connection, Pool, PoolOptions, RowDataPacket } from 'mysql2/promise';
import { REPLICATION_USER } from '../../constructs/mysql-member.js';
import type { FencingSql } from '../mysql/fencing.js';
import {
  FENCING_FLAGS_SQL,
  LOCK_SQL,
  SESSION_STATE_SQL,
  clientSessionsQuery,
  fencingFlagsFrom,
  killStatement,
  killedOrGone,
} from '../mysql/fencing.js';
import { asCertificateError, byName } from '../mysql/member-sql.js';
import type { VerifiedLogin } from '../mysql/member-sql.js';
import type { ThreadState } from '../mysql/topology.js';
import { threadState } from '../mysql/topology.js';

/** The deadline of one statement: a probe answers within the kubelet's timeout. */
const STATEMENT_MS = 4000;
/**
 * What mysqld logs at a start that follows a crash, and never after a clean shutdown: "Starting XA crash
 * recovery..." and "XA crash recovery finished." (MySQL 9.7, seen after every SIGKILL, idle or writing,
 * and after no SIGTERM or SHUTDOWN). The binary log's recovery logs them, at SYSTEM level, which no
 * verbosity or suppression list hides; the binary log is always on in a member (my-cnf.ts).
 */
export const CRASH_RECOVERY_CODES: readonly string[] = ['MY-010229', 'MY-010232'];
/** The query behind LocalSql.replicasReceiving. */
export const REPLICAS_RECEIVING_SQL = `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Binlog Dump', 'Binlog Dump GTID') AND USER = '${REPLICATION_USER}'`;
/** MySQL's "Access denied for user": the password was refused. */
const ACCESS_DENIED = 1045;

/** The channel's threads, or undefined when the member has none configured. */
export interface ChannelThreads {
  readonly receiver: ThreadState;
  readonly applier: ThreadState;
}

/** The sessions opened with one password, and how many statements are running on them. */
interface Generation {
  readonly pool: Pool;
  readonly password: string;
  running: number;
  retired: boolean;
}

type CreatePool = (options: PoolOptions) => Pool;

export class LocalSql {
  /** The thread ids of this agent's sessions (MySQL never reuses one while the server runs). */
  private readonly own = new Set<number>();
  private current: Generation;

  private constructor(
    private readonly socketPath: string,
    private readonly password: () => string,
    private readonly createPool: CreatePool,
  ) {
    this.current = this.generation(password());
  }

  /**
   * `password`: read each time a session may be opened (the mounted Secret's file). `createPool`: mysql2's,
   * or a fake in unit tests.
   */
  static async open(socketPath: string, password: () => string, createPool?: CreatePool): Promise<LocalSql> {
    return new LocalSql(socketPath, password, createPool ?? (await import('mysql2/promise')).createPool);
  }

  private poolOptions(password: string): PoolOptions {
    return {
      socketPath: this.socketPath,
      user: 'root',
      password,
      connectionLimit: 3,
      maxIdle: 2,
      idleTimeout: 60_000,
      connectTimeout: STATEMENT_MS,
      supportBigNumbers: true,
      bigNumberStrings: true,
    };
  }

  private generation(password: string): Generation {
    const pool = this.createPool(this.poolOptions(password));
    pool.pool.on('connection', (c) => {
      if (c.threadId !== null) this.own.add(c.threadId);
      // Backslash escapes in the literals mysql2 quotes, whatever the server's sql_mode.
      void c.query("SET SESSION sql_mode = ''");
    });
    return { pool, password, running: 0, retired: false };
  }

  /** The pool of the password the Secret says now; an older one is ended once nothing runs on it. */
  private pool(): Generation {
    let password: string;
    try {
      password = this.password();
    } catch {
      return this.current; // the file cannot be read this moment: the last password it said
    }
    if (password === this.current.password) return this.current;
    const old = this.current;
    this.current = this.generation(password);
    old.retired = true;
    if (old.running === 0) void old.pool.end().catch(() => undefined);
    return this.current;
  }

  /**
   * Runs `fn` on the pool of the current password. A login refused with the password read a moment
   * before is tried once more if the file changed meanwhile (a rotation switched it in between).
   */
  private async use<T>(fn: (pool: Pool) => Promise<T>, retry = true): Promise<T> {
    const g = this.pool();
    g.running++;
    try {
      return await fn(g.pool);
    } catch (e) {
      if (retry && (e as { errno?: number }).errno === ACCESS_DENIED && this.pool() !== g) return this.use(fn, false);
      throw e;
    } finally {
      g.running--;
      if (g.retired && g.running === 0) void g.pool.end().catch(() => undefined);
    }
  }

  async rows(sql: string, values?: unknown[], timeout = STATEMENT_MS): Promise<RowDataPacket[]> {
    return this.use(async (pool) => (await pool.query<RowDataPacket[]>({ sql, values, timeout }))[0]);
  }

  async exec(sql: string, values?: unknown[], timeout = STATEMENT_MS): Promise<void> {
    await this.use((pool) => pool.query({ sql, values, timeout }));
  }

  /** When mysqld started (ms since the epoch, whole seconds): a restart, however quick, changes it. */
  async startedAt(now: number): Promise<number> {
    const [row] = await this.rows(
      "SELECT VARIABLE_VALUE AS v FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'",
    );
    const uptime = Number(row?.v);
    if (!Number.isFinite(uptime)) throw new Error(`mysqld reported no Uptime (${String(row?.v)})`);
    return Math.round(now / 1000 - uptime) * 1000;
  }

  async flags(): Promise<{ readOnly: boolean; superReadOnly: boolean; semiSyncSource: boolean; offline: boolean }> {
    const [row] = await this.rows(
      `SELECT @@GLOBAL.read_only AS ro, @@GLOBAL.super_read_only AS sro, @@GLOBAL.rpl_semi_sync_source_enabled AS semi,
              @@GLOBAL.offline_mode AS offline`,
    );
    return {
      readOnly: Number(row?.ro) === 1,
      superReadOnly: Number(row?.sro) === 1,
      semiSyncSource: Number(row?.semi) === 1,
      offline: Number(row?.offline) === 1,
    };
  }

  async channel(): Promise<ChannelThreads | undefined> {
    const [row] = await this.rows(
      `SELECT c.SERVICE_STATE AS receiver, a.SERVICE_STATE AS applier
         FROM performance_schema.replication_connection_status c
         JOIN performance_schema.replication_applier_status a USING (CHANNEL_NAME) WHERE CHANNEL_NAME = ''`,
    );
    return row ? { receiver: threadState(row.receiver), applier: threadState(row.applier) } : undefined;
  }

  /** The receiver's last error while it is stopped, or undefined. */
  async stoppedReceiverError(): Promise<{ errno: number; message: string } | undefined> {
    const [row] = await this.rows(
      `SELECT LAST_ERROR_NUMBER AS errno, LAST_ERROR_MESSAGE AS message FROM performance_schema.replication_connection_status
        WHERE CHANNEL_NAME = '' AND SERVICE_STATE = 'OFF'`,
    );
    return row ? { errno: Number(row.errno), message: String(row.message ?? '') } : undefined;
  }

  async gtidExecuted(): Promise<string> {
    const [row] = await this.rows("SELECT REPLACE(@@GLOBAL.gtid_executed, CHAR(10), '') AS v");
    return String(row?.v ?? '');
  }

  async serverUuid(): Promise<string> {
    const [row] = await this.rows('SELECT @@GLOBAL.server_uuid AS v');
    return String(row?.v ?? '');
  }

  async gtidSubset(set: string, of: string): Promise<boolean> {
    const [row] = await this.rows('SELECT GTID_SUBSET(?, ?) AS v', [set, of]);
    return Number(row?.v) === 1;
  }

  async gtidSubtract(set: string, minus: string): Promise<string> {
    const [row] = await this.rows("SELECT REPLACE(GTID_SUBTRACT(?, ?), CHAR(10), '') AS v", [set, minus]);
    return String(row?.v ?? '');
  }

  /** The binary logs, oldest first (SHOW BINARY LOGS). */
  async binaryLogs(): Promise<{ name: string; bytes: number }[]> {
    return (await this.rows('SHOW BINARY LOGS')).map((r) => ({ name: String(r.Log_name), bytes: Number(r.File_size) }));
  }

  /** The GTID set executed before `log` began: its Previous_gtids event, the second of every log. */
  async previousGtids(log: string): Promise<string> {
    const rows = await this.rows('SHOW BINLOG EVENTS IN ? LIMIT 3', [log]);
    const event = rows.find((r) => r.Event_type === 'Previous_gtids');
    return String(event?.Info ?? '').replace(/\s+/g, '');
  }

  /**
   * Whether InnoDB recovered from a crash when this mysqld started: its last run ended without shutting
   * down (killed, out of memory, the node lost). performance_schema.error_log holds this run's messages.
   */
  async recoveredFromCrash(): Promise<boolean> {
    const [row] = await this.rows(
      `SELECT COUNT(*) AS n FROM performance_schema.error_log WHERE ERROR_CODE IN (${CRASH_RECOVERY_CODES.map(() => '?').join(', ')})`,
      [...CRASH_RECOVERY_CODES],
    );
    return Number(row?.n) > 0;
  }

  /** How many replicas receive from this member now (the replication account's binary-log dump threads; not a backup's mysqlbinlog). */
  async replicasReceiving(): Promise<number> {
    const [row] = await this.rows(REPLICAS_RECEIVING_SQL);
    return Number(row?.n ?? 0);
  }

  async cloneInProgress(): Promise<boolean> {
    const [row] = await this.rows('SELECT STATE AS v FROM performance_schema.clone_status');
    return row?.v === 'In Progress';
  }

  /**
   * Runs `fn` on one session of the pool (fencing sets a session variable, and its statements must
   * follow each other on one connection). The sessions it would end leave out every session of this
   * agent's pool: they are the agent's own, not clients'.
   */
  async fencingSession<T>(fn: (sql: FencingSql) => Promise<T>): Promise<T> {
    return this.use(async (pool) => this.onOneSession(await pool.getConnection(), fn));
  }

  private async onOneSession<T>(
    c: Awaited<ReturnType<Pool['getConnection']>>,
    fn: (sql: FencingSql) => Promise<T>,
  ): Promise<T> {
    try {
      return await fn({
        exec: async (sql) => {
          await c.query({ sql, timeout: STATEMENT_MS });
        },
        clientSessions: async (spare) => {
          const q = clientSessionsQuery(spare);
          const [rows] = await c.query<RowDataPacket[]>({ sql: q.sql, values: q.values, timeout: STATEMENT_MS });
          return rows.map((r) => Number(r.id)).filter((id) => !this.own.has(id));
        },
        kill: async (id) => {
          await c.query({ sql: killStatement(id), timeout: STATEMENT_MS }).catch(killedOrGone);
        },
        // A session of its own, outside the pool (never returned to it holding a lock, never taking one
        // of the probes' places), that takes multi-statement queries.
        aside: async (statements) => {
          const single = this.createPool({
            ...this.poolOptions(this.password()),
            connectionLimit: 1,
            maxIdle: 0,
            multipleStatements: true,
          });
          const other = await single.getConnection().catch(async (e: unknown) => {
            await single.end().catch(() => undefined);
            throw e;
          });
          if (other.threadId !== null) this.own.add(other.threadId);
          const done = (async () => {
            try {
              await other.query(statements.join(';\n'));
            } finally {
              other.destroy();
              await single.end().catch(() => undefined);
            }
          })();
          return { id: Number(other.threadId), done };
        },
        lock: async (name, seconds) => {
          const [[row]] = await c.query<RowDataPacket[]>({
            sql: LOCK_SQL,
            values: [name, seconds],
            timeout: (seconds + 5) * 1000,
          });
          return Number(row?.got) === 1;
        },
        sessionState: async (id) => {
          const [[row]] = await c.query<RowDataPacket[]>({
            sql: SESSION_STATE_SQL,
            values: [id],
            timeout: STATEMENT_MS,
          });
          return row ? String(row.state ?? '') : undefined;
        },
        fencingFlags: async () => {
          const [[row]] = await c.query<RowDataPacket[]>({ sql: FENCING_FLAGS_SQL, timeout: STATEMENT_MS });
          return fencingFlagsFrom(row);
        },
      });
    } finally {
      c.release();
    }
  }

  async close(): Promise<void> {
    this.current.retired = true;
    await this.current.pool.end().catch(() => undefined);
  }
}

/** What the agent asks of its member's session: LocalSql, or a fake in unit tests. */
export type LocalSqlApi = Omit<LocalSql, 'close'>;

/**
 * A session over TCP to a member (this one, a peer, the primary) that sends the password only to a
 * server whose certificate the cluster's CA signed for `servername` (as ssl-mode=VERIFY_IDENTITY, through
 * the controller's byName): the chain alone would admit any certificate of a shared issuer. A refused
 * certificate is a MemberCertificateError naming the name it lacked.
 */
export async function connectVerified(
  // The name its certificate must carry: the agent verifies its members by the primary Service's
  // (AgentConfig.memberTlsName), which the one certificate of all members carries.
  o: Omit<VerifiedLogin, 'connectTimeoutMs'> & { readonly timeoutMs: number },
): Promise<Connection> {
  const { createConnection } = await import('mysql2/promise');
  try {
    return await createConnection({
      ...byName(o),
      user: o.user,
      password: o.password,
      connectTimeout: o.timeoutMs,
    });
  } catch (e) {
    throw asCertificateError(e);
  }
}
