// The accounts of the Apps bound to a MySQLCluster (App spec.database), made on its primary: the loop
// around lib/mysql/accounts.ts (the decision) and lib/mysql/account-sql.ts (the SQL).
//
// Contract: called on every manage() of a cluster (after the HA step, which it never holds up: any
// failure here is reported and logged, never thrown). It works only when something may have changed:
// the bound Apps (from the cache; never from a cache that has not synced: an empty list would drop
// every account), the primary, or a minute has passed (to repair drift), or the last pass left an App
// waiting. Otherwise it returns what it last found, which the cluster's status.accounts keeps saying.
// Only a writable primary is changed; the replicas get the accounts by replication.
import type { V1Pod } from '@kubernetes/client-node';
import type { AppDatabase, MySQLAccountStatus } from '../../../constructs/index.js';
import {
  APP,
  DATABASE_BINDING_SECRET_KEYS,
  MYSQL_PORT,
  MYSQL_SECRET_KEYS,
  MYSQL_SYSTEM_SCHEMAS,
  PASSWORD_NEXT_KEY,
  PASSWORD_REVISION_ANNOTATION,
  ROTATE_CREDENTIALS_ANNOTATION,
  databaseBindingSecretName,
  mysqlClusterNames,
} from '../../../constructs/index.js';
import { rotationFactsOf, rotationStatusOf } from '../app/binding-rotation.js';
import { rotationInFlight } from '../../mysql/password-rotation.js';
import type { AccountStatement, AccountRequest, DatabaseAccess } from '../../mysql/accounts.js';
import { accountName, describeStatement, planAccounts } from '../../mysql/accounts.js';
import type { AccountAdminOptions } from '../../mysql/account-sql.js';
import { AccountSession } from '../../mysql/account-sql.js';
import type { CustomResource, EventType, ManageContext } from '../kind-controller.js';
import { readSecret } from './credentials-secret.js';
import type { MySQLClusterFacts } from './facts.js';

/** How often accounts that are as they should be are looked at again (someone may have changed them). */
const RESYNC_MS = 60_000;
/** How long manage() waits for a pass before it reports what it has (the pass goes on). */
const WAIT_MS = 2_000;
const DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

type Event = { readonly type: EventType; readonly reason: string; readonly message: string };

/** What the account loop needs of one session (an AccountSession, or a fake in tests of the loop). */
export type AccountActions = Pick<AccountSession, 'writable' | 'observe' | 'run' | 'close'>;

export interface AppAccountsOptions {
  readonly open?: (o: AccountAdminOptions) => Promise<AccountActions>;
  /** Monotonic milliseconds. */
  readonly now?: () => number;
}

export interface AccountsResult {
  /** status.accounts (undefined: say nothing, no App was ever bound). */
  readonly accounts?: MySQLAccountStatus[];
  readonly events: readonly Event[];
}

interface Memo {
  readonly key: string;
  readonly at: number;
  readonly settled: boolean;
  readonly accounts: MySQLAccountStatus[];
}

/** The primary as the HA manager left it. */
export interface PrimaryView {
  readonly name: string;
  readonly ip?: string;
  readonly writable: boolean;
}

/** The Apps' accounts of one cluster: what its passes found, held by the cluster's runtime (cluster-runtime.ts). */
export type AppAccounts = ReturnType<typeof createAppAccounts>;

export function createAppAccounts(opts: AppAccountsOptions = {}) {
  const open = opts.open ?? ((o: AccountAdminOptions) => AccountSession.open(o));
  const now = opts.now ?? ((): number => performance.now());
  let memo: Memo | undefined;
  /** The pass under way, and what finished passes said that manage() has not reported yet. */
  let running: Promise<void> | undefined;
  let reported: { accounts?: MySQLAccountStatus[]; events: Event[] } | undefined;

  return {
    /** A pass is under way (it logs in as root with the Secret it read when it began). */
    busy(): boolean {
      return running !== undefined;
    },
    /**
     * Starts a pass (unless one is under way) and waits for it a moment at most: a primary that stops
     * answering in the middle of a pass must not delay the failover step of the next manage().
     */
    async sync(ctx: ManageContext<MySQLClusterFacts>, primary: PrimaryView | undefined): Promise<AccountsResult> {
      let run = running;
      if (!run) {
        run = syncOnce(ctx, primary, memo, (m) => (memo = m))
          .then((r) => {
            reported = { accounts: r.accounts, events: [...(reported?.events ?? []), ...r.events] };
          })
          .catch((e: unknown) => {
            // Said in the log, tried again at the next poll; the status keeps what was last found.
            ctx.log.warn('app accounts', { error: `could not manage the Apps' accounts: ${describe(e)}` });
            if (memo) memo = { ...memo, settled: false };
          })
          .finally(() => (running = undefined));
        running = run;
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([run, new Promise<void>((resolve) => (timer = setTimeout(resolve, WAIT_MS)))]);
      clearTimeout(timer);
      const found = reported;
      reported = { ...(found?.accounts ? { accounts: found.accounts } : {}), events: [] };
      return { ...(found?.accounts ? { accounts: found.accounts } : {}), events: found?.events ?? [] };
    },
  };

  async function syncOnce(
    ctx: ManageContext<MySQLClusterFacts>,
    primary: PrimaryView | undefined,
    last: Memo | undefined,
    remember: (m: Memo) => void,
  ): Promise<AccountsResult> {
    const { cr, client } = ctx;
    const namespace = cr.metadata.namespace ?? '';
    const apps = ctx.resources?.list(APP.kind, namespace);
    // No cache (or not synced yet): what is bound is unknown, so nothing is changed.
    if (!apps) return { accounts: last?.accounts, events: [] };
    const bound = apps
      .filter((a) => !a.metadata.deletionTimestamp && databaseOf(a)?.cluster === cr.metadata.name)
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const key = JSON.stringify([
      primary?.name,
      bound.map((a) => [
        a.metadata.name,
        a.metadata.uid,
        databaseOf(a)?.name,
        databaseOf(a)?.access,
        // A rotation's facts on the App (its Secret's are looked at on every pass while one is under way).
        a.metadata.annotations?.[ROTATE_CREDENTIALS_ANNOTATION],
        a.metadata.annotations?.[PASSWORD_REVISION_ANNOTATION],
        rotationStatusOf(a),
      ]),
    ]);
    if (last && last.key === key && last.settled && now() - last.at < RESYNC_MS)
      return { accounts: last.accounts, events: [] };
    if (!last && bound.length === 0 && primary?.writable !== true) return { events: [] };

    const invalid = bound.filter((a) => !validDatabase(databaseOf(a)?.name));
    const valid = bound.filter((a) => validDatabase(databaseOf(a)?.name));
    const statusOf = (a: CustomResource, ready: boolean, reason: string, message: string): MySQLAccountStatus => ({
      app: a.metadata.name,
      user: accountName(namespace, a.metadata.name),
      database: databaseOf(a)?.name,
      access: databaseOf(a)?.access ?? 'readWrite',
      ready,
      ...(ready ? {} : { reason }),
      message,
    });
    const invalidStatus = invalid.map((a) =>
      statusOf(
        a,
        false,
        'Conflict',
        `database ${JSON.stringify(databaseOf(a)?.name)} is not one an App may have (a MySQL system schema, or not a plain identifier)`,
      ),
    );

    if (!primary?.writable || !primary.ip) {
      // The accounts are kept as they were (they replicate); the new ones wait for a primary.
      const waiting = valid
        .filter((a) => !last?.accounts.some((s) => s.app === a.metadata.name && s.ready))
        .map((a) =>
          statusOf(
            a,
            false,
            'WaitingForPrimary',
            'waiting for a writable primary whose writes replicas acknowledge, to create the account',
          ),
        );
      const kept = (last?.accounts ?? []).filter((s) => s.ready && valid.some((a) => a.metadata.name === s.app));
      const accounts = [...kept, ...waiting, ...invalidStatus].sort((a, b) => a.app.localeCompare(b.app));
      remember({ key, at: now(), settled: false, accounts });
      return { ...(accounts.length > 0 ? { accounts } : {}), events: [] };
    }

    const names = mysqlClusterNames(cr.metadata.name, ctx.prepared.facts?.credentialsSecretName);
    const read = ctx.secrets ?? ((ns: string, n: string) => readSecret(client, ns, n));
    const credentials = await read(namespace, names.credentialsSecret);
    const rootPassword = decode(credentials?.data?.[MYSQL_SECRET_KEYS.rootPassword]);
    // No password goes to a member that could not be verified (the TLS Secret's problem is reported).
    const ca = ctx.prepared.facts?.tls?.caPem;
    if (!rootPassword || !ca) return { accounts: last?.accounts, events: [] };
    // The Apps' passwords, from their Secrets (watched by name once read), only from a Secret the App owns.
    const requests: AccountRequest[] = [];
    for (const a of valid) {
      const db = databaseOf(a);
      if (!db) continue;
      const secret = await read(namespace, databaseBindingSecretName(a.metadata.name));
      const owned = secret?.metadata?.ownerReferences?.some((r) => r.controller && r.uid === a.metadata.uid);
      const password = owned ? decode(secret?.data?.[DATABASE_BINDING_SECRET_KEYS.password]) : undefined;
      const nextPassword = owned ? decode(secret?.data?.[PASSWORD_NEXT_KEY]) : undefined;
      requests.push({
        app: `${namespace}/${a.metadata.name}`,
        user: accountName(namespace, a.metadata.name),
        database: db.name,
        access: (db.access ?? 'readWrite') as DatabaseAccess,
        ...(password ? { password } : {}),
        // The rotation (lib/mysql/password-rotation.ts decides; the SQL steps are this side's): the staged password, and
        // what the App and its Secret say.
        ...(password && secret && nextPassword ? { nextPassword } : {}),
        ...(password && secret ? { rotation: rotationFactsOf(a, secret) } : {}),
      });
    }

    ctx.signal?.throwIfAborted();
    const session = await open({
      host: primary.ip,
      servername: names.memberHost(primary.name),
      port: MYSQL_PORT,
      user: 'root',
      password: rootPassword,
      ca,
    });
    const events: Event[] = [];
    const failed = new Map<string, string>();
    let plan;
    try {
      // super_read_only may have come on since the HA step looked: a replica is never written to.
      if (!(await session.writable())) return { accounts: last?.accounts, events: [] };
      const observed = await session.observe(requests.map((r) => r.user));
      plan = planAccounts(requests, observed);
      for (const statement of plan.statements) {
        ctx.signal?.throwIfAborted();
        const user = 'user' in statement ? statement.user : undefined;
        if (user && failed.has(user)) continue;
        try {
          await session.run(statement);
          ctx.log.info('app account', { did: describeStatement(statement) });
          events.push({ type: 'Normal', reason: eventReason(statement), message: describeStatement(statement) });
        } catch (e) {
          const message = `${describeStatement(statement).replace(/^\w+/, (w) => `could not have ${w}`)}: ${describe(e)}`;
          ctx.log.warn('app account', { error: message });
          events.push({ type: 'Warning', reason: 'AccountFailed', message });
          if (user) failed.set(user, message);
          else
            for (const r of requests)
              if (statement.type === 'createDatabase' && r.database === statement.database) failed.set(r.user, message);
        }
      }
    } finally {
      await session.close();
    }

    const accounts = [
      ...plan.outcomes.map((o): MySQLAccountStatus => {
        const app = bound.find((a) => `${namespace}/${a.metadata.name}` === o.app);
        const base = app ? statusOf(app, true, '', o.message) : { app: o.app, user: o.user, ready: true };
        const failure = failed.get(o.user);
        if (failure) return { ...base, ready: false, reason: 'Failed', message: failure };
        if (o.state === 'ready')
          return {
            ...base,
            ready: true,
            message: o.message,
            // What the App's side of a rotation reads of the account (never a password: a revision token).
            ...(o.password ? { passwordRevision: o.password.revision, retainsPassword: o.password.retains } : {}),
          };
        return {
          ...base,
          ready: false,
          reason: o.state === 'conflict' ? 'Conflict' : 'AccountPending',
          message: o.message,
        };
      }),
      ...invalidStatus,
    ].sort((a, b) => a.app.localeCompare(b.app));
    // While a rotation is under way every pass looks again: its next step may be this side's.
    const rotating = requests.some((r) => r.rotation !== undefined && rotationInFlight(r.rotation) !== undefined);
    remember({
      key,
      at: now(),
      settled: !rotating && accounts.every((a) => a.ready || a.reason === 'Conflict'),
      accounts,
    });
    return { ...(accounts.length > 0 ? { accounts } : {}), events };
  }
}

function databaseOf(cr: CustomResource): AppDatabase | undefined {
  return (cr.spec as { database?: AppDatabase } | undefined)?.database;
}

/** The schema and admission refuse these already; checked again before any grant. */
function validDatabase(name: string | undefined): boolean {
  return (
    name !== undefined &&
    DATABASE_NAME.test(name) &&
    !(MYSQL_SYSTEM_SCHEMAS as readonly string[]).includes(name.toLowerCase())
  );
}

function decode(v: string | undefined): string | undefined {
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8') || undefined;
}

function eventReason(s: AccountStatement): string {
  switch (s.type) {
    case 'createDatabase':
      return 'DatabaseCreated';
    case 'createUser':
      return 'AccountCreated';
    case 'setPassword':
      return s.purpose === 'repair' ? 'AccountPasswordSet' : 'AccountPasswordRetained';
    case 'discardOldPassword':
      return 'AccountOldPasswordDiscarded';
    case 'grant':
    case 'revoke':
      return 'AccountGrantsChanged';
    case 'dropUser':
      return 'AccountDropped';
  }
}

/** A mysql2 error in its own words: its code and message, never its `sql` (which holds the password). */
function describe(e: unknown): string {
  const err = e as { code?: string; sqlMessage?: string; message?: string };
  return `${err.code ? `${err.code}: ` : ''}${err.sqlMessage ?? err.message ?? String(e)}`.slice(0, 300);
}

/**
 * The primary's pod IP and whether it takes writes now: writable when the HA step last looked, and its
 * commits not waiting for a replica's acknowledgement (`writesWait`): a statement would wait with them,
 * holding its locks past any client timeout (a killed session does not end that wait).
 */
export function primaryView(
  fields: Record<string, unknown>,
  pods: readonly V1Pod[],
  writesWait: boolean,
): PrimaryView | undefined {
  const name = fields.currentPrimary;
  if (typeof name !== 'string') return undefined;
  const member = ((fields.members ?? []) as { name: string; writable?: boolean }[]).find((m) => m.name === name);
  const ip = pods.find((p) => p.metadata?.name === name)?.status?.podIP;
  return { name, writable: member?.writable === true && !writesWait, ...(ip ? { ip } : {}) };
}
