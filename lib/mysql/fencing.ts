// Fencing: how a member stops taking writes. One procedure, used by the controller before it promotes
// another member (failover, switchover, an errant primary) and by the member's own agent when it is
// cut off from every other member (self-fencing, lib/agent/isolation.ts). Both once had their own copy
// (a bash one in the pod, this one in the controller), and the two had drifted apart.

/** What fencing needs of a session to the member: thin, so that tests can play every interleaving. */
export interface FencingSql {
  /** One statement; rejects on an error or when its deadline passes. */
  exec(sql: string): Promise<void>;
  /**
   * The ids of the sessions that could write: not this one, not MySQL's own threads, not the binary-log
   * dump threads of replicas, not those of the `spare` accounts.
   */
  clientSessions(spare: readonly string[]): Promise<number[]>;
  /** Ends one session; one that ended meanwhile is no error. */
  kill(id: number): Promise<void>;
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
}

/** The statement that ends one session: a client of it is never told that a commit in flight succeeded. */
export const killStatement = (id: number): string => `KILL CONNECTION ${Math.trunc(id)}`;

/** The query behind FencingSql.clientSessions, for mysql2 (`spare` as placeholders). */
export function clientSessionsQuery(spare: readonly string[]): { sql: string; values: string[] } {
  const placeholders = ['system user', 'event_scheduler', ...spare].map(() => '?').join(', ');
  return {
    sql: `SELECT ID AS id FROM information_schema.PROCESSLIST
           WHERE ID <> CONNECTION_ID() AND USER NOT IN (${placeholders})
             AND COMMAND NOT IN ('Binlog Dump', 'Binlog Dump GTID', 'Daemon')`,
    values: ['system user', 'event_scheduler', ...spare],
  };
}

async function killClients(sql: FencingSql, spare: readonly string[]): Promise<void> {
  for (const id of await sql.clientSessions(spare)) await sql.kill(id);
}

/**
 * Makes the member read-only and ends every client session that could still write; the semi-synchronous
 * source side ends up off (a former primary's applier would otherwise wait for ever for acknowledgements
 * of what it replicates, log_replica_updates).
 *
 * A commit waiting for an acknowledgement holds the commit lock read-only needs, and MySQL (9.7) does
 * not end that wait when its session is killed: with no replica able to acknowledge it (the member is
 * cut off), super_read_only would wait for ever. So, when read-only did not come within
 * `waitForCommitsSeconds` (or at once for a member known to be cut off): offline_mode ends the sessions
 * of accounts without CONNECTION_ADMIN and refuses new ones, the remaining client sessions are killed
 * (KILL shuts their sockets: no client is told a commit succeeded), the source side is turned off, which
 * lets such a commit complete here, unacknowledged, and only then is the member made read-only and
 * offline_mode turned off again. No client can commit, and be told so, between the source side turning
 * off and read-only. Safe to run again from any point: it rejects on the first statement that fails,
 * and the caller tries again.
 */
export async function fence(sql: FencingSql, o: FenceOptions): Promise<void> {
  if (o.waitForCommitsSeconds > 0) {
    await sql.exec(`SET SESSION lock_wait_timeout = ${Math.ceil(o.waitForCommitsSeconds)}`);
    const readOnly = await sql.exec('SET GLOBAL super_read_only = ON').then(
      () => true,
      () => false,
    );
    if (readOnly) {
      await killClients(sql, o.spare);
      await sql.exec('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
      return;
    }
  }
  await sql.exec('SET GLOBAL offline_mode = ON');
  await killClients(sql, o.spare);
  await sql.exec('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
  // A session that logged in between the first round and offline_mode (CONNECTION_ADMIN accounts).
  await killClients(sql, o.spare);
  await sql.exec('SET SESSION lock_wait_timeout = 5');
  await sql.exec('SET GLOBAL super_read_only = ON');
  await sql.exec('SET GLOBAL offline_mode = OFF');
}
