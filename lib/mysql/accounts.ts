// The accounts of Apps bound to a MySQLCluster (App spec.database): what must change on the primary
// for the accounts, databases and grants it has to be exactly the ones the Apps ask for. Pure: what
// the Apps ask and what the server has in, statements out (account-sql.ts sends them).
//
// Invariants:
// - A database is created when missing, never dropped.
// - An account is recon8s's only when its ATTRIBUTE says so ({"recon8s":{"app":"<ns>/<name>"}}): only
//   those are ever altered, revoked from or dropped. An account of the same name without it is someone
//   else's: the App is told, and nothing is done to it.
// - An owned account gets exactly the privileges of its access on its database: any other privilege
//   (global, on another database, on a table, the grant option) is revoked.
// - An owned account whose App no longer binds this cluster is dropped; one whose App's password is not
//   known yet (its Secret not written yet) is kept as it is.
// - Its password follows the App's Secret through password-rotation.ts's decision: during a rotation the account
//   may hold the staged `password-next` (that is no drift), and a repair never discards a retained password
//   pods may still log in with.
import { createHash } from 'node:crypto';
import type { AccountHolds, RotationFacts } from './password-rotation.js';
import { decideRotation } from './password-rotation.js';

export type DatabaseAccess = 'readWrite' | 'readOnly';

/** Privileges per access, on the App's database only. */
export const ACCESS_PRIVILEGES: Readonly<Record<DatabaseAccess, readonly string[]>> = {
  // Data and schema of the App's own tables: what an ORM's migrations need. Not routines (binary
  // logging makes CREATE FUNCTION need SUPER-level trust), not events, not GRANT OPTION.
  readWrite: [
    'SELECT',
    'INSERT',
    'UPDATE',
    'DELETE',
    'CREATE',
    'ALTER',
    'INDEX',
    'DROP',
    'REFERENCES',
    'CREATE TEMPORARY TABLES',
    'LOCK TABLES',
    'EXECUTE',
    'CREATE VIEW',
    'SHOW VIEW',
    'TRIGGER',
  ],
  readOnly: ['SELECT', 'SHOW VIEW'],
};

/** MySQL's limit on a user name. */
export const MAX_USER_LENGTH = 32;
const PREFIX = 'r8s_';
const HASH_HEX = 10;

/**
 * The account of App `name` in `namespace`: `r8s_<name, cut>_<hash>`, at most 32 characters. The hash
 * (40 bits of SHA-256 of "<namespace>/<name>") keeps Apps of the same name in other namespaces, and
 * names cut to the same prefix, apart; the readable part says whose it is.
 */
export function accountName(namespace: string, name: string): string {
  const hash = createHash('sha256').update(`${namespace}/${name}`).digest('hex').slice(0, HASH_HEX);
  const room = MAX_USER_LENGTH - PREFIX.length - 1 - HASH_HEX;
  const readable = name.slice(0, room).replace(/-+$/, '');
  return `${PREFIX}${readable}_${hash}`;
}

/**
 * Says whether the account's password is the Secret's without keeping the password: SHA-256 of the user
 * and the password (192 random bits: not guessable from it), stored in the account's attribute.
 */
export function passwordFingerprint(user: string, password: string): string {
  return createHash('sha256').update(`${user}\0${password}`).digest('hex').slice(0, 32);
}

/** A database name as GRANT reads it: "_" and "%" are wildcards there, escaped to mean themselves. */
export function grantPattern(database: string): string {
  return database.replace(/[\\_%]/g, (c) => `\\${c}`);
}

/** What one App asks of this cluster. */
export interface AccountRequest {
  /** "<namespace>/<name>" of the App. */
  readonly app: string;
  readonly user: string;
  readonly database: string;
  readonly access: DatabaseAccess;
  /** The App's password (from its Secret); undefined while the Secret is not written yet. */
  readonly password?: string;
  /** A rotation's staged password (the Secret's `password-next`), when one is staged. */
  readonly nextPassword?: string;
  /** What the App and its Secret say of a rotation (staged: set exactly when nextPassword is). */
  readonly rotation?: Omit<RotationFacts, 'account'>;
}

/** The revision of the first, generated password (a rotation's token names the others). */
export const INITIAL_PASSWORD_REVISION = '0';

/** One privilege an account holds. `on`: "*.*", "`<db pattern>`.*" or "`<db>`.`<table>`". */
export interface HeldPrivilege {
  readonly on: string;
  readonly privilege: string;
}

/** An account on the server that is recon8s's, or has the name of one. */
export interface ObservedAccount {
  readonly user: string;
  /** The App its attribute names; undefined: not recon8s's. */
  readonly app?: string;
  readonly fingerprint?: string;
  /** Whether it has a retained (secondary) password (mysql.user's additional_password). */
  readonly retainsPassword?: boolean;
  readonly privileges: readonly HeldPrivilege[];
}

export interface ObservedServer {
  readonly databases: ReadonlySet<string>;
  readonly accounts: readonly ObservedAccount[];
}

export type AccountStatement =
  | { readonly type: 'createDatabase'; readonly database: string }
  | {
      readonly type: 'createUser';
      readonly user: string;
      readonly password: string;
      readonly app: string;
      readonly fingerprint: string;
    }
  | {
      readonly type: 'setPassword';
      readonly user: string;
      readonly password: string;
      readonly app: string;
      readonly fingerprint: string;
      /** RETAIN CURRENT PASSWORD: the password it replaces still logs in, until discarded. */
      readonly retain: boolean;
      /** Why (for Events): drift repaired, a rotation's new password, or the old one restored. */
      readonly purpose: 'repair' | 'rotate' | 'restore';
    }
  | { readonly type: 'discardOldPassword'; readonly user: string; readonly app: string; readonly rotation?: string }
  | { readonly type: 'grant'; readonly user: string; readonly on: string; readonly privileges: readonly string[] }
  | { readonly type: 'revoke'; readonly user: string; readonly on: string; readonly privileges: readonly string[] }
  | { readonly type: 'dropUser'; readonly user: string; readonly app: string };

/** How an App's account stands once the statements ran. */
export interface AccountOutcome {
  readonly app: string;
  readonly user: string;
  readonly state: 'ready' | 'pending' | 'conflict';
  readonly message: string;
  /**
   * Once the statements ran: the revision of the Secret password the account's primary password is (a
   * rotation's token, or INITIAL_PASSWORD_REVISION), and whether it retains another one. For the App's
   * controller, which sees the account only through the cluster's status.
   */
  readonly password?: { readonly revision: string; readonly retains: boolean };
}

export interface AccountPlan {
  /** In order: databases, accounts, revokes, grants, drops. */
  readonly statements: readonly AccountStatement[];
  readonly outcomes: readonly AccountOutcome[];
}

/** "`shop\_x`.*": the database level of a grant. */
export function databaseLevel(database: string): string {
  return `${quoteIdentifier(grantPattern(database))}.*`;
}

export function quoteIdentifier(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``;
}

/** The statements that make the server's accounts what the requests ask (see the invariants above). */
export function planAccounts(requests: readonly AccountRequest[], observed: ObservedServer): AccountPlan {
  const databases: AccountStatement[] = [];
  const accounts: AccountStatement[] = [];
  const revokes: AccountStatement[] = [];
  const grants: AccountStatement[] = [];
  const drops: AccountStatement[] = [];
  const outcomes: AccountOutcome[] = [];
  const byUser = new Map(observed.accounts.map((a) => [a.user, a]));
  const wantedDatabases = new Set<string>();

  for (const r of [...requests].sort((a, b) => a.app.localeCompare(b.app))) {
    const existing = byUser.get(r.user);
    if (existing && existing.app !== r.app) {
      outcomes.push({
        app: r.app,
        user: r.user,
        state: 'conflict',
        message: existing.app
          ? `account ${r.user} belongs to App ${existing.app}; it is left alone`
          : `account ${r.user} exists and was not created by recon8s; it is left alone (drop or rename it, and the App gets it)`,
      });
      continue;
    }
    if (r.password === undefined) {
      outcomes.push({
        app: r.app,
        user: r.user,
        state: 'pending',
        message: `waiting for the App's password Secret before creating account ${r.user}`,
      });
      continue;
    }
    if (!observed.databases.has(r.database) && !wantedDatabases.has(r.database)) {
      wantedDatabases.add(r.database);
      databases.push({ type: 'createDatabase', database: r.database });
    }
    const fingerprint = passwordFingerprint(r.user, r.password);
    const nextFingerprint = r.nextPassword === undefined ? undefined : passwordFingerprint(r.user, r.nextPassword);
    const revision = r.rotation?.secretRevision ?? INITIAL_PASSWORD_REVISION;
    const nextRevision = r.rotation?.staged ?? INITIAL_PASSWORD_REVISION;
    let password = { revision, retains: false };
    if (!existing) {
      accounts.push({ type: 'createUser', user: r.user, password: r.password, app: r.app, fingerprint });
    } else {
      const holds: AccountHolds =
        existing.fingerprint === fingerprint
          ? 'current'
          : nextFingerprint !== undefined && existing.fingerprint === nextFingerprint
            ? 'next'
            : 'other';
      const retains = existing.retainsPassword === true;
      password = { revision: holds === 'next' ? nextRevision : holds === 'current' ? revision : '', retains };
      const step = decideRotation({ ...r.rotation, account: { holds, retains } });
      const set = { type: 'setPassword', user: r.user, app: r.app } as const;
      if (step.kind === 'retain' && r.nextPassword !== undefined && nextFingerprint !== undefined) {
        accounts.push({
          ...set,
          password: r.nextPassword,
          fingerprint: nextFingerprint,
          retain: true,
          purpose: 'rotate',
        });
        password = { revision: nextRevision, retains: true };
      } else if (step.kind === 'restore') {
        accounts.push({ ...set, password: r.password, fingerprint, retain: true, purpose: 'restore' });
        password = { revision, retains: true };
      } else if (step.kind === 'repair') {
        accounts.push({ ...set, password: r.password, fingerprint, retain: step.retain, purpose: 'repair' });
        password = { revision, retains: retains || step.retain };
      } else if (step.kind === 'discard') {
        accounts.push({
          type: 'discardOldPassword',
          user: r.user,
          app: r.app,
          ...(step.token === undefined ? {} : { rotation: step.token }),
        });
        password = { ...password, retains: false };
      }
    }
    const on = databaseLevel(r.database);
    const wanted = ACCESS_PRIVILEGES[r.access];
    const held = existing?.privileges ?? [];
    const extra = new Map<string, string[]>();
    for (const p of held) {
      if (p.on === on && wanted.includes(p.privilege)) continue;
      extra.set(p.on, [...(extra.get(p.on) ?? []), p.privilege]);
    }
    for (const [level, privileges] of [...extra.entries()].sort(([a], [b]) => a.localeCompare(b)))
      revokes.push({ type: 'revoke', user: r.user, on: level, privileges: [...new Set(privileges)].sort() });
    const missing = wanted.filter((w) => !held.some((p) => p.on === on && p.privilege === w));
    if (missing.length > 0) grants.push({ type: 'grant', user: r.user, on, privileges: missing });
    outcomes.push({
      app: r.app,
      user: r.user,
      state: 'ready',
      message: `account ${r.user} has ${r.access} access to database ${r.database}`,
      ...(password.revision === '' ? {} : { password }),
    });
  }

  // Keyed by App: an account is kept while the App its attribute names binds this cluster.
  const requested = new Map(requests.map((r) => [r.app, r.user]));
  for (const a of [...observed.accounts].sort((x, y) => x.user.localeCompare(y.user))) {
    if (a.app === undefined || requested.get(a.app) === a.user) continue;
    drops.push({ type: 'dropUser', user: a.user, app: a.app });
  }
  return { statements: [...databases, ...accounts, ...revokes, ...grants, ...drops], outcomes };
}

/** A statement as SQL with placeholders (mysql2 fills them client-side), the password only in `values`. */
export function statementSql(s: AccountStatement): { readonly sql: string; readonly values: readonly string[] } {
  switch (s.type) {
    case 'createDatabase':
      return { sql: `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(s.database)}`, values: [] };
    case 'createUser':
      // REQUIRE SSL: the App's password crosses the pod network, and MySQL refuses it in the clear.
      return {
        sql: "CREATE USER ?@'%' IDENTIFIED BY ? REQUIRE SSL ATTRIBUTE ?",
        values: [s.user, s.password, attribute(s.app, s.fingerprint)],
      };
    case 'setPassword':
      // Without RETAIN, MySQL keeps a secondary password as it is (it never discards one by itself).
      // REQUIRE SSL again: an account created before recon8s required it (0.1) is made to at its next password.
      return {
        sql: `ALTER USER ?@'%' IDENTIFIED BY ?${s.retain ? ' RETAIN CURRENT PASSWORD' : ''} REQUIRE SSL ATTRIBUTE ?`,
        values: [s.user, s.password, attribute(s.app, s.fingerprint)],
      };
    case 'discardOldPassword':
      return { sql: "ALTER USER ?@'%' DISCARD OLD PASSWORD", values: [s.user] };
    case 'grant':
      return { sql: `GRANT ${s.privileges.join(', ')} ON ${s.on} TO ?@'%'`, values: [s.user] };
    case 'revoke':
      return { sql: `REVOKE ${s.privileges.join(', ')} ON ${s.on} FROM ?@'%'`, values: [s.user] };
    case 'dropUser':
      return { sql: "DROP USER IF EXISTS ?@'%'", values: [s.user] };
  }
}

/** The account attribute that marks it recon8s's. */
export function attribute(app: string, fingerprint: string): string {
  return JSON.stringify({ recon8s: { app, fingerprint } });
}

/** What a statement does, in words that never hold the password (for logs and Events). */
export function describeStatement(s: AccountStatement): string {
  switch (s.type) {
    case 'createDatabase':
      return `created database ${s.database}`;
    case 'createUser':
      return `created account ${s.user} for App ${s.app}`;
    case 'setPassword':
      return describeSetPassword(s);
    case 'discardOldPassword':
      return s.rotation === undefined
        ? `discarded a retained password of account ${s.user} that recon8s did not leave`
        : `discarded the old password of account ${s.user}: every pod of App ${s.app} runs with the new one`;
    case 'grant':
      return `granted ${s.privileges.join(', ')} on ${s.on} to ${s.user}`;
    case 'revoke':
      return `revoked ${s.privileges.join(', ')} on ${s.on} from ${s.user}`;
    case 'dropUser':
      return `dropped account ${s.user}: App ${s.app} no longer binds this cluster`;
  }
}

function describeSetPassword(s: Extract<AccountStatement, { type: 'setPassword' }>): string {
  switch (s.purpose) {
    case 'rotate':
      return `set the new password of account ${s.user} (App ${s.app}'s password-next), the current one retained`;
    case 'restore':
      return `set the password of account ${s.user} to the one in App ${s.app}'s Secret again, the new one retained (its retained password had been discarded)`;
    case 'repair':
      return `set the password of account ${s.user} to the one in App ${s.app}'s Secret${s.retain ? ', the present one retained until every pod is rolled' : ''}`;
  }
}
