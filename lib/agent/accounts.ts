// The cluster's own accounts, made sure of on the writable member whenever its mysqld (re)started:
// replication, cloning, the backup jobs', the controller's administrative account and (with monitoring)
// the metrics sidecar's, with the passwords of the mounted credentials Secret (credential-files.ts). This is
// also how a cluster of an earlier version gains an account (its primary's agent, once it runs this
// version, creates it) and loses a privilege an account no longer has (replication's BACKUP_ADMIN and
// REPLICATION CLIENT, revoked once the clone account exists): on the primary, replicated, no restart. An account that cannot log in
// with its password is created or re-keyed, except one a rotation has set to the passwords of another
// revision than the one this member reads (the kubelet updates the mounted Secret some time after the
// Secret changed): re-keying it would set an older password than the Secret's again, and undo the
// rotation. Silent when nothing is to be done: no binary-log event at every restart.
import type { RowDataPacket } from 'mysql2/promise';
import {
  ADMIN_GRANTS,
  ADMIN_USER,
  BACKUP_GRANTS,
  BACKUP_USER,
  CLONE_GRANTS,
  CLONE_USER,
  EXPORTER_GRANTS,
  EXPORTER_HOST,
  EXPORTER_MAX_CONNECTIONS,
  EXPORTER_USER,
  FORMER_EXPORTER_HOST,
  REPLICATION_GRANTS,
  REPLICATION_USER,
} from '../../constructs/mysql-member.js';
import type { LocalSqlApi } from './local-sql.js';

export interface ClusterPasswords {
  readonly replication: string;
  readonly admin: string;
  readonly clone: string;
  readonly backup: string;
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
  // TLS required of each: the scripts and the agent log in with VERIFY_IDENTITY, and MySQL then refuses
  // these passwords in the clear. The clone account first: replication gives up BACKUP_ADMIN after it.
  const tlsAccount = (user: string, password: string, grants: string): (typeof out)[number] => {
    const who = `'${user}'@'%'`;
    return {
      user,
      host: '%',
      statements: [
        { sql: `CREATE USER IF NOT EXISTS ${who} IDENTIFIED BY ? REQUIRE SSL`, values: [password] },
        { sql: `ALTER USER ${who} IDENTIFIED BY ? REQUIRE SSL`, values: [password] },
        { sql: `GRANT ${grants} ON *.* TO ${who}`, values: [] },
      ],
    };
  };
  out.push(
    tlsAccount(CLONE_USER, p.clone, CLONE_GRANTS),
    tlsAccount(BACKUP_USER, p.backup, BACKUP_GRANTS),
    {
      user: REPLICATION_USER,
      host: '%',
      statements: [
        { sql: `CREATE USER IF NOT EXISTS ${replication} IDENTIFIED BY ?`, values: [p.replication] },
        { sql: `ALTER USER ${replication} IDENTIFIED BY ?`, values: [p.replication] },
        { sql: `GRANT ${REPLICATION_GRANTS} ON *.* TO ${replication}`, values: [] },
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

/**
 * What earlier versions granted the replication account beyond REPLICATION_GRANTS, where it still holds
 * it: BACKUP_ADMIN (a dynamic privilege: mysql.global_grants) and REPLICATION CLIENT (static: mysql.user).
 */
export const FORMER_REPLICATION_GRANTS_SQL = `SELECT PRIV AS privilege FROM mysql.global_grants
  WHERE USER = ? AND HOST = '%' AND PRIV = 'BACKUP_ADMIN'
  UNION ALL SELECT 'REPLICATION CLIENT' FROM mysql.user WHERE User = ? AND Host = '%' AND Repl_client_priv = 'Y'`;

/** What ensureAccounts did: the accounts it created or re-keyed, and those it left to the rotation. */
export interface EnsuredAccounts {
  readonly updated: readonly string[];
  /** The privileges it revoked from the replication account (held since an earlier version). */
  readonly revoked?: readonly string[];
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
    [CLONE_USER]: p.clone,
    [BACKUP_USER]: p.backup,
    [EXPORTER_USER]: p.exporter,
  };
  const works = await Promise.all(accounts.map((a) => loginWorks(a.user, passwords[a.user] ?? '')));
  const failing = accounts.filter((_, i) => !works[i]);
  if (failing.length === 0) return { updated: [], kept: [], ...(await revokeFormerGrants(sql)) };
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
  // Replication gives up cloning only now that the clone account exists (it logs in, was just made, or a
  // rotation set it): a member that must clone always has an account to clone as.
  return { updated, kept, ...(await revokeFormerGrants(sql)) };
}

/** Silent when the replication account holds nothing more than REPLICATION_GRANTS. */
async function revokeFormerGrants(sql: Pick<LocalSqlApi, 'exec' | 'rows'>): Promise<{ revoked?: readonly string[] }> {
  const held = (await sql.rows(FORMER_REPLICATION_GRANTS_SQL, [REPLICATION_USER, REPLICATION_USER])).map((r) =>
    String((r as RowDataPacket).privilege),
  );
  if (held.length === 0) return {};
  await sql.exec(`REVOKE ${held.join(', ')} ON *.* FROM '${REPLICATION_USER}'@'%'`, []);
  return { revoked: held };
}
