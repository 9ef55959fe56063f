// The cluster's own accounts, made sure of on the writable member whenever its mysqld (re)started:
// replication, the controller's administrative account and (with monitoring) the metrics sidecar's,
// with the passwords of the mounted credentials Secret (credential-files.ts). An account that cannot log in
// with its password is created or re-keyed, except one a rotation has set to the passwords of another
// revision than the one this member reads (the kubelet updates the mounted Secret some time after the
// Secret changed): re-keying it would set an older password than the Secret's again, and undo the
// rotation. Silent when nothing is to be done: no binary-log event at every restart.
import type { RowDataPacket } from 'mysql2/promise';
import {
  ADMIN_GRANTS,
  ADMIN_USER,
  EXPORTER_GRANTS,
  EXPORTER_HOST,
  EXPORTER_MAX_CONNECTIONS,
  EXPORTER_USER,
  FORMER_EXPORTER_HOST,
  REPLICATION_USER,
} from '../../constructs/mysql-member.js';
import type { LocalSqlApi } from './local-sql.js';

export interface ClusterPasswords {
  readonly replication: string;
  readonly admin: string;
  /** Only with spec.monitoring. */
  readonly exporter?: string;
  /** The rotation these passwords are of (credential-files.ts); absent: not known (as if never rotated). */
  readonly revision?: string;
}

/**
 * Logs in as `user` to this member the way that account logs in: over TCP, verifying the member's
 * certificate against the cluster's CA (replication, the administrative account), or over the local
 * socket (the exporter's account, which exists for the socket only).
 */
export type LoginCheck = (user: string, password: string) => Promise<boolean>;

type Statement = { sql: string; values: string[] };

/** Each account's statements: create it if missing, set its password, grant what it needs. */
function statementsByAccount(p: ClusterPasswords): { user: string; host: string; statements: Statement[] }[] {
  const out: { user: string; host: string; statements: Statement[] }[] = [];
  if (p.exporter !== undefined) {
    // Over the local socket only, status and performance_schema only, a few connections at most.
    const who = `'${EXPORTER_USER}'@'${EXPORTER_HOST}'`;
    const limit = `WITH MAX_USER_CONNECTIONS ${EXPORTER_MAX_CONNECTIONS}`;
    out.push({
      user: EXPORTER_USER,
      host: EXPORTER_HOST,
      statements: [
        // The account as it was before the sidecar moved to the socket (a TCP login from the pod's
        // loopback): gone, so that no password of the exporter's logs in over TCP.
        { sql: `DROP USER IF EXISTS '${EXPORTER_USER}'@'${FORMER_EXPORTER_HOST}'`, values: [] },
        { sql: `CREATE USER IF NOT EXISTS ${who} IDENTIFIED BY ? ${limit}`, values: [p.exporter] },
        { sql: `ALTER USER ${who} IDENTIFIED BY ? ${limit}`, values: [p.exporter] },
        { sql: `GRANT ${EXPORTER_GRANTS} ON *.* TO ${who}`, values: [] },
        { sql: `GRANT SELECT ON performance_schema.* TO ${who}`, values: [] },
      ],
    });
  }
  const replication = `'${REPLICATION_USER}'@'%'`;
  const admin = `'${ADMIN_USER}'@'%'`;
  out.push(
    {
      user: REPLICATION_USER,
      host: '%',
      statements: [
        { sql: `CREATE USER IF NOT EXISTS ${replication} IDENTIFIED BY ?`, values: [p.replication] },
        { sql: `ALTER USER ${replication} IDENTIFIED BY ?`, values: [p.replication] },
        // BACKUP_ADMIN: the primary is the clone donor for new replicas.
        { sql: `GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO ${replication}`, values: [] },
      ],
    },
    {
      user: ADMIN_USER,
      host: '%',
      statements: [
        { sql: `CREATE USER IF NOT EXISTS ${admin} IDENTIFIED BY ? REQUIRE SSL`, values: [p.admin] },
        { sql: `ALTER USER ${admin} IDENTIFIED BY ? REQUIRE SSL`, values: [p.admin] },
        { sql: `GRANT ${ADMIN_GRANTS} ON *.* TO ${admin}`, values: [] },
        { sql: `GRANT SELECT ON performance_schema.* TO ${admin}`, values: [] },
      ],
    },
  );
  return out;
}

/** The statements that create or re-key the accounts, with their values (passwords never in the text). */
export function accountStatements(p: ClusterPasswords): Statement[] {
  return statementsByAccount(p).flatMap((a) => a.statements);
}

/**
 * The revision a rotation recorded on each account it set (lib/mysql/cluster-account-sql.ts writes it
 * into the account's ATTRIBUTE), by `user@host`; accounts no rotation touched are absent.
 */
export const ROTATED_REVISIONS_SQL = `SELECT USER AS user, HOST AS host,
  JSON_UNQUOTE(JSON_EXTRACT(ATTRIBUTE, '$.recon8s.revision')) AS revision
  FROM information_schema.USER_ATTRIBUTES WHERE JSON_EXTRACT(ATTRIBUTE, '$.recon8s.revision') IS NOT NULL`;

/** What ensureAccounts did: the accounts it created or re-keyed, and those it left to the rotation. */
export interface EnsuredAccounts {
  readonly updated: readonly string[];
  readonly kept: readonly { readonly user: string; readonly revision: string; readonly reads: string }[];
}

/** Rejects when a statement failed (the agent tries again). */
export async function ensureAccounts(
  sql: Pick<LocalSqlApi, 'exec' | 'rows'>,
  p: ClusterPasswords,
  loginWorks: LoginCheck,
): Promise<EnsuredAccounts> {
  const accounts = statementsByAccount(p);
  const passwords: Record<string, string | undefined> = {
    [REPLICATION_USER]: p.replication,
    [ADMIN_USER]: p.admin,
    [EXPORTER_USER]: p.exporter,
  };
  const works = await Promise.all(accounts.map((a) => loginWorks(a.user, passwords[a.user] ?? '')));
  const failing = accounts.filter((_, i) => !works[i]);
  if (failing.length === 0) return { updated: [], kept: [] };
  const rotated = new Map(
    (await sql.rows(ROTATED_REVISIONS_SQL)).map((r: RowDataPacket) => [
      `${String(r.user)}@${String(r.host)}`,
      String(r.revision),
    ]),
  );
  const updated: string[] = [];
  const kept: { user: string; revision: string; reads: string }[] = [];
  for (const a of failing) {
    const revision = rotated.get(`${a.user}@${a.host}`);
    if (revision !== undefined && revision !== p.revision) {
      kept.push({ user: a.user, revision, reads: p.revision ?? 'none' });
      continue;
    }
    for (const s of a.statements) await sql.exec(s.sql, s.values);
    updated.push(a.user);
  }
  return { updated, kept };
}
