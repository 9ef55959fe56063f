// The SQL of the Apps' accounts on the primary (accounts.ts decides): what the server has, and the
// statements. Thin on purpose. As root: granting a privilege takes holding it with the grant option,
// which the controller's own account (recon8s-admin, no data access by design) does not; the root
// password is in the same Secret the controller already reads, and crosses the network only over TLS
// that verified the member.
import type { Connection, RowDataPacket } from 'mysql2/promise';
import type { AccountStatement, HeldPrivilege, ObservedAccount, ObservedServer } from './accounts.js';
import { quoteIdentifier, statementSql } from './accounts.js';
import type { VerifiedLogin } from './member-sql.js';
import { QUERY_TIMEOUT_MS, openVerified } from './member-sql.js';
import { dropIfTimedOut, endSession } from './session-end.js';

/** root's login to the primary (see above). */
export type AccountAdminOptions = VerifiedLogin;

/** Ends a session, its socket included; a member that no longer answers does not hold it up (session-end.ts). */
export async function closeSession(c: Connection): Promise<void> {
  await endSession(c);
}

/**
 * Whether this member takes writes now: read_only and super_read_only off (only a primary is changed),
 * and, with semi-synchronous replication on, as many replicas attached as a commit waits for. Without
 * them a statement would wait for an acknowledgement with its locks held, and a client timeout does
 * not end that wait (the session is killed, the commit keeps waiting).
 */
export async function takesWrites(c: Connection): Promise<boolean> {
  const [[row]] = await c
    .query<RowDataPacket[]>({
      sql:
        'SELECT @@read_only AS ro, @@super_read_only AS sro, @@rpl_semi_sync_source_enabled AS semi, ' +
        '@@rpl_semi_sync_source_wait_for_replica_count AS waitCount, ' +
        "(SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Rpl_semi_sync_source_clients') AS clients",
      timeout: QUERY_TIMEOUT_MS,
    })
    .catch(dropIfTimedOut(c));
  if (Number(row?.ro) !== 0 || Number(row?.sro) !== 0) return false;
  return Number(row?.semi) !== 1 || Number(row?.clients ?? 0) >= Number(row?.waitCount);
}

/** A session that manages the Apps' accounts on one member. */
export class AccountSession {
  private constructor(private readonly c: Connection) {}

  static async open(o: AccountAdminOptions): Promise<AccountSession> {
    return new AccountSession(await openVerified(o));
  }

  async close(): Promise<void> {
    await closeSession(this.c);
  }

  private async rows(sql: string, values?: unknown[]): Promise<RowDataPacket[]> {
    const [rows] = await this.c
      .query<RowDataPacket[]>({ sql, values, timeout: QUERY_TIMEOUT_MS })
      .catch(dropIfTimedOut(this.c));
    return rows;
  }

  /** Whether this member takes writes now (takesWrites). */
  async writable(): Promise<boolean> {
    return takesWrites(this.c);
  }

  /**
   * The databases, and the accounts that are recon8s's (their attribute says so) or have one of `names`,
   * with every privilege they hold: global, per database, per table, and the grant option.
   */
  async observe(names: readonly string[]): Promise<ObservedServer> {
    const databases = (await this.rows('SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA')).map((r) =>
      String(r.name),
    );
    const users = await this.rows(
      `SELECT USER AS user, ATTRIBUTE AS attribute FROM information_schema.USER_ATTRIBUTES
        WHERE HOST = '%' AND (JSON_EXTRACT(ATTRIBUTE, '$.recon8s.app') IS NOT NULL${names.length ? ' OR USER IN (?)' : ''})`,
      names.length ? [names] : [],
    );
    // A retained (secondary) password, from dual passwords (password-rotation.ts): only mysql.user says so.
    const retaining = new Set(
      users.length === 0
        ? []
        : (
            await this.rows(
              `SELECT User AS user FROM mysql.user
                WHERE Host = '%' AND User IN (?) AND JSON_EXTRACT(User_attributes, '$.additional_password') IS NOT NULL`,
              [users.map((u) => String(u.user))],
            )
          ).map((r) => String(r.user)),
    );
    const accounts: ObservedAccount[] = [];
    for (const u of users) {
      const user = String(u.user);
      const marks = parseAttribute(u.attribute);
      const grantee = `'${user}'@'%'`;
      const privileges: HeldPrivilege[] = [];
      const grantable = new Set<string>();
      for (const r of await this.rows(
        'SELECT PRIVILEGE_TYPE AS p, IS_GRANTABLE AS g FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?',
        [grantee],
      )) {
        if (r.p !== 'USAGE') privileges.push({ on: '*.*', privilege: String(r.p) });
        if (r.g === 'YES') grantable.add('*.*');
      }
      for (const r of await this.rows(
        'SELECT TABLE_SCHEMA AS s, PRIVILEGE_TYPE AS p, IS_GRANTABLE AS g FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ?',
        [grantee],
      )) {
        const on = `${quoteIdentifier(String(r.s))}.*`;
        privileges.push({ on, privilege: String(r.p) });
        if (r.g === 'YES') grantable.add(on);
      }
      for (const r of await this.rows(
        'SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t, PRIVILEGE_TYPE AS p, IS_GRANTABLE AS g FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = ?',
        [grantee],
      )) {
        const on = `${quoteIdentifier(String(r.s))}.${quoteIdentifier(String(r.t))}`;
        privileges.push({ on, privilege: String(r.p) });
        if (r.g === 'YES') grantable.add(on);
      }
      for (const on of grantable) privileges.push({ on, privilege: 'GRANT OPTION' });
      accounts.push({ user, ...marks, retainsPassword: retaining.has(user), privileges });
    }
    return { databases: new Set(databases), accounts };
  }

  /** One statement (the password, when there is one, is a placeholder value: never in the SQL text). */
  async run(statement: AccountStatement): Promise<void> {
    const { sql, values } = statementSql(statement);
    await this.c.query({ sql, values: [...values], timeout: QUERY_TIMEOUT_MS }).catch(dropIfTimedOut(this.c));
  }
}

function parseAttribute(value: unknown): { app?: string; fingerprint?: string } {
  if (value === null || value === undefined) return {};
  try {
    const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as {
      recon8s?: { app?: unknown; fingerprint?: unknown };
    };
    const r = parsed.recon8s;
    return {
      ...(typeof r?.app === 'string' ? { app: r.app } : {}),
      ...(typeof r?.fingerprint === 'string' ? { fingerprint: r.fingerprint } : {}),
    };
  } catch {
    return {};
  }
}
