// The cluster's own accounts, made sure of on the writable member whenever its mysqld (re)started:
// replication, the controller's administrative account and (with monitoring) the metrics sidecar's,
// with the passwords of the pod's environment (a rotated Secret reaches them at the pod's next start).
// Silent when nothing is to be done: no binary-log event at every restart.
import {
  ADMIN_GRANTS,
  ADMIN_USER,
  EXPORTER_GRANTS,
  EXPORTER_HOST,
  EXPORTER_MAX_CONNECTIONS,
  EXPORTER_USER,
  REPLICATION_USER,
} from '../../constructs/mysql-member.js';
import type { LocalSqlApi } from './local-sql.js';

export interface ClusterPasswords {
  readonly replication: string;
  readonly admin: string;
  /** Only with spec.monitoring. */
  readonly exporter?: string;
}

/** Logs in as `user` over TCP to this member, verifying its certificate against the cluster's CA. */
export type LoginCheck = (user: string, password: string) => Promise<boolean>;

/** The statements that create or re-key the accounts, with their values (passwords never in the text). */
export function accountStatements(p: ClusterPasswords): { sql: string; values: string[] }[] {
  const out: { sql: string; values: string[] }[] = [];
  if (p.exporter !== undefined) {
    // From the pod's loopback only, status and performance_schema only, a few connections at most.
    const who = `'${EXPORTER_USER}'@'${EXPORTER_HOST}'`;
    const limit = `WITH MAX_USER_CONNECTIONS ${EXPORTER_MAX_CONNECTIONS}`;
    out.push(
      { sql: `CREATE USER IF NOT EXISTS ${who} IDENTIFIED BY ? ${limit}`, values: [p.exporter] },
      { sql: `ALTER USER ${who} IDENTIFIED BY ? ${limit}`, values: [p.exporter] },
      { sql: `GRANT ${EXPORTER_GRANTS} ON *.* TO ${who}`, values: [] },
      { sql: `GRANT SELECT ON performance_schema.* TO ${who}`, values: [] },
    );
  }
  const replication = `'${REPLICATION_USER}'@'%'`;
  const admin = `'${ADMIN_USER}'@'%'`;
  out.push(
    { sql: `CREATE USER IF NOT EXISTS ${replication} IDENTIFIED BY ?`, values: [p.replication] },
    { sql: `ALTER USER ${replication} IDENTIFIED BY ?`, values: [p.replication] },
    // BACKUP_ADMIN: the primary is the clone donor for new replicas.
    { sql: `GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO ${replication}`, values: [] },
    { sql: `CREATE USER IF NOT EXISTS ${admin} IDENTIFIED BY ? REQUIRE SSL`, values: [p.admin] },
    { sql: `ALTER USER ${admin} IDENTIFIED BY ? REQUIRE SSL`, values: [p.admin] },
    { sql: `GRANT ${ADMIN_GRANTS} ON *.* TO ${admin}`, values: [] },
    { sql: `GRANT SELECT ON performance_schema.* TO ${admin}`, values: [] },
  );
  return out;
}

/** True when it changed something. Rejects when a statement failed (the agent tries again). */
export async function ensureAccounts(
  sql: Pick<LocalSqlApi, 'exec'>,
  p: ClusterPasswords,
  loginWorks: LoginCheck,
): Promise<boolean> {
  const works = await Promise.all([
    loginWorks(REPLICATION_USER, p.replication),
    loginWorks(ADMIN_USER, p.admin),
    p.exporter === undefined ? true : loginWorks(EXPORTER_USER, p.exporter),
  ]);
  if (works.every(Boolean)) return false;
  for (const s of accountStatements(p)) await sql.exec(s.sql, s.values);
  return true;
}
