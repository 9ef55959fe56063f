// Fencing: how a member stops taking writes. One procedure, used by the controller before it promotes
// another member (failover, switchover, an errant primary) and by the member's own agent when it is
// cut off from every other member (self-fencing, lib/agent/isolation.ts). Both once had their own copy
// (a bash one in the pod, this one in the controller), and the two had drifted apart.

/** A statement sent on a session of its own, still running while the fencing goes on. */
export interface AsideStatement {
  /** Its session's id (PROCESSLIST ID). */
  readonly id: number;
  /** Settles when the last statement ends: rejects with its error. */
  readonly done: Promise<void>;
}

/** What fencing needs of a session to the member: thin, so that tests can play every interleaving. */
export interface FencingSql {
  /** One statement; rejects on an error or when its deadline passes. */
  exec(sql: string): Promise<void>;
  /**
   * The ids of the sessions that could write: not this one, not MySQL's own threads, not the binary-log
   * dump threads of replicas, not those of the `spare` accounts, not one that holds or awaits the global read lock.
   */
  clientSessions(spare: readonly string[]): Promise<number[]>;
  /**
   * Ends one session; one that ended meanwhile is no error. Rejects when MySQL refuses (an account
   * without SYSTEM_USER may not end root's sessions): a client left running could commit.
   */
  kill(id: number): Promise<void>;
  /**
   * Sends `statements` as one request (a multi-statement query) on a new session of their own, without
   * a deadline (the session is closed once the last has ended); resolves as soon as they are sent. One
   * request, so that MySQL runs them all even if this process goes away after sending it.
   */
  aside(statements: readonly string[]): Promise<AsideStatement>;
  /** GET_LOCK(name, seconds) on this session: whether it got the lock. */
  lock(name: string, seconds: number): Promise<boolean>;
  /** PROCESSLIST's STATE of session `id` ('' when it has none); undefined once the session has ended. */
  sessionState(id: number): Promise<string | undefined>;
  /** @@GLOBAL.rpl_semi_sync_source_enabled and @@GLOBAL.offline_mode, in one look. */
  fencingFlags(): Promise<FencingFlags>;
}

/** What fencing reads of the member before it keeps writes out. */
export interface FencingFlags {
  /** @@GLOBAL.rpl_semi_sync_source_enabled: commits wait for a replica's acknowledgement. */
  readonly semiSyncSource: boolean;
  /**
   * @@GLOBAL.offline_mode: on at the start of a fencing, it is the mark of one that did not end (which
   * may have released stranded commits) or of a member kept out (KEEP_CLIENTS_OUT): either way clients
   * stay out once this fencing ends.
   */
  readonly offline: boolean;
}

/** The query behind FencingSql.fencingFlags. */
export const FENCING_FLAGS_SQL =
  'SELECT @@GLOBAL.rpl_semi_sync_source_enabled AS semiSyncSource, @@GLOBAL.offline_mode AS offline';

/** FencingSql.fencingFlags from FENCING_FLAGS_SQL's row. */
export function fencingFlagsFrom(row: Record<string, unknown> | undefined): FencingFlags {
  return { semiSyncSource: Number(row?.semiSyncSource) === 1, offline: Number(row?.offline) === 1 };
}

export interface FenceOptions {
  /** Accounts whose sessions stay: the operator's administrative account and replication (clones, dump threads). */
  readonly spare: readonly string[];
  /**
   * How long read-only may wait for commits in flight before the member's clients are ended first.
   * The controller waits (the member may still reach its replicas: those commits get acknowledged);
   * an agent whose member is cut off does not (no commit of it can be acknowledged: 0).
   */
  readonly waitForCommitsSeconds: number;
  /**
   * How long the read-only request may wait, once queued, for what holds it up (a commit in flight, a
   * long statement's rollback) before this fencing gives up and the caller tries again.
   * @default 20
   */
  readonly readOnlyWithinSeconds?: number;
  /**
   * The member's mysqld is about to stop (its pod is being deleted, its agent answers the stop hook) and
   * nothing asks it to replicate before it does: the semi-synchronous source side is left as it is unless
   * commits are stranded. Turning it off waits for MySQL's acknowledgement receiver thread to notice (it
   * polls once a second: ~1 s on MySQL 9.7, during which every read of a global variable on the member
   * waits too: the controller's look, on the way to a switchover's promotion, and the agent's record of
   * the stop), and only what the member replicates later needs it off (its applier would wait for
   * acknowledgements). No commit waits for one once read-only holds and every client is ended; a commit
   * stranded waiting for one (read-only queued behind it) still needs the source side off, as in any
   * fencing.
   * @default false
   */
  readonly leaveSourceSide?: boolean;
  /**
   * Asked once this fencing holds the fencing lock (another may just have ended): false, and it does
   * nothing. Default: always fence.
   */
  readonly stillNeeded?: () => Promise<boolean>;
}

/** The statement that ends one session: a client of it is never told that a commit in flight succeeded. */
export const killStatement = (id: number): string => `KILL CONNECTION ${Math.trunc(id)}`;

/**
 * Keeps every client but the operator's and replication's accounts (CONNECTION_ADMIN) out of a fenced
 * member that may hold commits a failover discards, across restarts of its mysqld (persisted).
 */
export const KEEP_CLIENTS_OUT = 'SET PERSIST offline_mode = ON';

/** Lets clients in again, for good: the member's data is the cluster's history (decide.ts's invariant 7). */
export const ADMIT_CLIENTS = 'SET PERSIST offline_mode = OFF';

/** The statement that makes a member read-only. */
export const READ_ONLY = 'SET GLOBAL super_read_only = ON';

/**
 * MySQL's global read lock, held by the session that sets read-only. `SET GLOBAL super_read_only = ON` on
 * a writable member takes that lock twice (read_only, then super_read_only) and lets writes through in
 * between, which read_only does not refuse to accounts with CONNECTION_ADMIN: seen on MySQL 9.7, a root
 * write acknowledged between them. Holding the lock across both leaves no such gap.
 */
export const READ_LOCK = 'FLUSH TABLES WITH READ LOCK';

/** What the read-only request sends, on a session of its own. */
export const READ_ONLY_REQUEST: readonly string[] = [
  // At its maximum (a year): the request is withdrawn only by fence(), never by a timeout.
  'SET SESSION lock_wait_timeout = 31536000',
  READ_LOCK,
  READ_ONLY,
  'UNLOCK TABLES',
];

/**
 * The states of a session waiting to take the global read lock, or holding it and waiting for the
 * tables or the commits in flight: while it is in one, every write and commit that begins waits for it.
 */
export const READ_ONLY_QUEUED = /^Waiting for (global read lock|table flush|commit lock)$/;

/** The query behind FencingSql.clientSessions, for mysql2 (`spare` as placeholders). */
export function clientSessionsQuery(spare: readonly string[]): { sql: string; values: string[] } {
  const placeholders = ['system user', 'event_scheduler', ...spare].map(() => '?').join(', ');
  return {
    // A session that holds the global read lock, or waits for it, cannot write: another fencing's
    // request, whose end would let writes through (between its statements it shows no query).
    sql: `SELECT p.ID AS id FROM information_schema.PROCESSLIST p
           WHERE p.ID <> CONNECTION_ID() AND p.USER NOT IN (${placeholders})
             AND p.COMMAND NOT IN ('Binlog Dump', 'Binlog Dump GTID', 'Daemon')
             AND NOT EXISTS (SELECT 1 FROM performance_schema.metadata_locks l
                              WHERE l.OWNER_THREAD_ID = PS_THREAD_ID(p.ID)
                                AND l.OBJECT_TYPE = 'GLOBAL' AND l.LOCK_TYPE = 'SHARED')`,
    values: ['system user', 'event_scheduler', ...spare],
  };
}

/** KILL of a session that has ended meanwhile: MySQL's ER_NO_SUCH_THREAD, no error for fencing. */
export const killedOrGone = (e: unknown): void => {
  if ((e as { errno?: number } | null)?.errno !== 1094) throw e;
};

/** The query behind FencingSql.lock. */
export const LOCK_SQL = 'SELECT GET_LOCK(?, ?) AS got';

/** The query behind FencingSql.sessionState. */
export const SESSION_STATE_SQL = 'SELECT STATE AS state FROM information_schema.PROCESSLIST WHERE ID = ?';

/** MySQL's user-level lock that lets one fencing of a member run at a time (the agent's or the controller's). */
export const FENCING_LOCK = 'recon8s.fencing';

/**
 * Ends every client session but `keep`. `strict`: a KILL MySQL refuses stops the fencing (before the
 * source side is off, a client left running could commit); once read-only holds, none can.
 */
async function killClients(sql: FencingSql, spare: readonly string[], keep: number, strict: boolean): Promise<void> {
  for (const id of await sql.clientSessions(spare))
    if (id !== keep) await (strict ? sql.kill(id) : sql.kill(id).catch(() => undefined));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `settled`, at most `ms`; the timer does not outlive it. */
async function settledWithin(settled: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  clearTimeout(timer);
}

/**
 * Makes the member read-only and ends every client session that could still write; the semi-synchronous
 * source side ends up off (a former primary's applier would otherwise wait for ever for acknowledgements
 * of what it replicates, log_replica_updates).
 *
 * A commit waiting for an acknowledgement holds the commit lock read-only needs, and MySQL (9.7) does
 * not end that wait when its session is killed: with no replica able to acknowledge it (the member is
 * cut off), read-only would wait for ever, and only turning the source side off releases it. But with
 * the source side off, any commit is acknowledged to its client at once, by no replica: an account with
 * CONNECTION_ADMIN (root) passes offline_mode and a kill round, logs in again and would commit writes a
 * failover then loses. So the source side is turned off only while a read-only request is queued on a
 * session of its own (READ_ONLY_REQUEST: the global read lock, read-only under it, in one request that
 * MySQL runs to its end even if the fencing process dies): from then on no write can begin before
 * read-only holds, and every session that could have begun one before has been ended (a KILL MySQL
 * refuses stops the fencing first). (The first, quick try of the controller sets read-only alone: the
 * source side is still on then, so a write slipping through its gap still needs a replica's
 * acknowledgement.) In order, when read-only did not come within `waitForCommitsSeconds` (or at once
 * for a member known to be cut off), one fencing of the member at a time (FENCING_LOCK: the agent's and
 * the controller's may overlap): offline_mode (sessions of accounts without CONNECTION_ADMIN end, new
 * ones are refused); every client session killed (KILL shuts its socket: no client is told that a
 * commit in flight succeeded); read-only requested aside, and seen queued; the sessions that logged in
 * meanwhile killed; the source side off (the stranded commits complete here, unacknowledged, to
 * clients already gone); read-only holds; offline_mode off, unless stranded commits may have been
 * released, by this fencing or by an earlier one that did not end (offline_mode was on when this one
 * began): then it stays on, persisted before the source side goes off, so that no client reads a commit
 * a failover may discard (KEEP_CLIENTS_OUT).
 *
 * Safe to stop at any point: it rejects on the first statement that fails and the caller tries again.
 * If read-only does not come, the source side is turned on again before the request is withdrawn; if
 * even that fails, the request stays queued (no write gets through it), never the other way round.
 * offline_mode left on a writable member is the mark of a fencing that did not end: the agent finishes
 * it (lib/agent/agent.ts).
 */
export async function fence(sql: FencingSql, o: FenceOptions): Promise<void> {
  if (o.waitForCommitsSeconds > 0) {
    // read-only takes the global read lock twice (read_only, then super_read_only): half each.
    await sql.exec(`SET SESSION lock_wait_timeout = ${Math.ceil(o.waitForCommitsSeconds / 2)}`);
    const readOnly = await sql.exec(READ_ONLY).then(
      () => true,
      () => false,
    );
    // The session outlives the fencing (the controller keeps its sessions between looks, the agent its
    // pool's): what comes next on it waits for locks as MySQL's default says.
    await sql.exec('SET SESSION lock_wait_timeout = DEFAULT');
    if (readOnly) {
      await killClients(sql, o.spare, -1, false);
      if (!o.leaveSourceSide) await sql.exec('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
      // offline_mode is left as it is: one that a fencing left on is lifted only once the member's data is
      // known to be the cluster's history (decide.ts), never here.
      return;
    }
  }
  await underFencingLock(sql, async () => {
    if (o.stillNeeded && !(await o.stillNeeded())) return;
    await fenceHoldingWrites(sql, o);
  });
}

/**
 * Runs `fn` holding FENCING_LOCK on this session: no fencing of the member runs meanwhile (fencing, and
 * making the member writable, which interleaved with a fencing's last steps would leave it writable
 * with no acknowledgement asked).
 */
export async function underFencingLock<T>(sql: Pick<FencingSql, 'lock' | 'exec'>, fn: () => Promise<T>): Promise<T> {
  if (!(await sql.lock(FENCING_LOCK, 10))) throw new Error('another fencing of this member did not end within 10 s');
  const release = (): Promise<void> => sql.exec(`DO RELEASE_LOCK('${FENCING_LOCK}')`);
  let result: T;
  try {
    result = await fn();
  } catch (e) {
    await release().catch(() => undefined);
    throw e;
  }
  // Not released: the session still holds the lock, and whoever holds the session must end it (the
  // controller keeps its sessions between looks) rather than block every later fencing of the member.
  await release();
  return result;
}

/** fence()'s procedure for a member whose read-only does not come at once (fence() says why and how). */
async function fenceHoldingWrites(sql: FencingSql, o: FenceOptions): Promise<void> {
  const before = await sql.fencingFlags();
  // Clients stay out once this fencing ends: stranded commits this fencing or an earlier one released
  // may be on the member (the earlier one's mark: offline_mode on now).
  let keepOut = before.offline;
  const clientsBack = (): Promise<void> => sql.exec(keepOut ? KEEP_CLIENTS_OUT : 'SET GLOBAL offline_mode = OFF');
  await sql.exec('SET GLOBAL offline_mode = ON');
  try {
    await killClients(sql, o.spare, -1, true);
  } catch (e) {
    // Nothing released here: clients may come back unless an earlier fencing kept them out.
    await clientsBack().catch(() => undefined);
    throw e;
  }
  const request = await sql.aside(READ_ONLY_REQUEST);
  const readOnly: { outcome: 'waiting' | 'done' | Error } = { outcome: 'waiting' };
  const settled = request.done.then(
    () => {
      readOnly.outcome = 'done';
    },
    (e: unknown) => {
      readOnly.outcome = e instanceof Error ? e : new Error(String(e));
    },
  );
  const withinSeconds = o.readOnlyWithinSeconds ?? 20;
  const deadline = Date.now() + withinSeconds * 1000;
  let sourceSideOff = false;
  try {
    // Until read-only holds, or is queued (what every later write then waits behind).
    while (readOnly.outcome === 'waiting') {
      const state = await sql.sessionState(request.id);
      if (state !== undefined && READ_ONLY_QUEUED.test(state)) break;
      if (Date.now() > deadline) throw new Error(`read-only was neither set nor queued within ${withinSeconds} s`);
      await sleep(20);
    }
    if (readOnly.outcome === 'waiting') {
      // Every session that could have begun a write before the request was queued, ended.
      await killClients(sql, o.spare, request.id, true);
      if (before.semiSyncSource) {
        // Persisted before anything is released: whatever fails after, no client reads a released commit.
        await sql.exec(KEEP_CLIENTS_OUT);
        keepOut = true;
        sourceSideOff = true;
        await sql.exec('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
      }
      await settledWithin(settled, deadline - Date.now());
    }
    if (readOnly.outcome instanceof Error) throw readOnly.outcome;
    if (readOnly.outcome === 'waiting') throw new Error(`read-only did not come within ${withinSeconds} s`);
  } catch (e) {
    // The acknowledgement writes need comes back first, and only then is the request withdrawn (while it
    // waits, writes queue behind it); if turning the source side on fails, the request stays.
    if (sourceSideOff && readOnly.outcome !== 'done') await sql.exec('SET GLOBAL rpl_semi_sync_source_enabled = ON');
    if (readOnly.outcome === 'waiting') await sql.kill(request.id).catch(() => undefined);
    // Every commit needs its acknowledgement again (or read-only holds): clients may come back, unless
    // stranded commits may have been released (then the member stays offline, and the fencing that did
    // not end is finished: by the caller's next try, or by the agent, lib/agent/agent.ts).
    await clientsBack().catch(() => undefined);
    throw e;
  }
  await killClients(sql, o.spare, -1, false);
  // Off already where stranded commits needed it; left as it is for a member about to stop.
  if (!o.leaveSourceSide) await sql.exec('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
  // Commits stranded waiting for an acknowledgement were released, unacknowledged: no replica may have
  // them, and a failover would discard them. A client that read one would have read a write that
  // never was: the member serves no client until it is known to hold nothing the primary lacks
  // (decide.ts admits it then). With nothing released, now or by an earlier fencing, clients may come back.
  await clientsBack();
}
