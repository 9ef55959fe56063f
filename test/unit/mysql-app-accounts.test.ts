// The loop around the account decision (lib/controller/mysql-cluster/app-accounts.ts), with a fake
// session and fake Secrets: when it works (and when it must not: a cache not synced, a primary not
// writable), that it leaves the primary alone while nothing changed, and what it reports.
import assert from 'node:assert/strict';
import type { KubeClient } from '../../lib/kube/index.js';
import { KubeApiError } from '../../lib/kube/errors.js';
import { silentLogger } from '../../lib/observability/logger.js';
import type { AccountStatement, ObservedServer } from '../../lib/mysql/accounts.js';
import { accountName, passwordFingerprint } from '../../lib/mysql/accounts.js';
import type { AccountActions, PrimaryView } from '../../lib/controller/mysql-cluster/app-accounts.js';
import { createAppAccounts, primaryView } from '../../lib/controller/mysql-cluster/app-accounts.js';
import type { CustomResource, ManageContext, ResourceLookup } from '../../lib/controller/kind-controller.js';
import type { MySQLClusterFacts } from '../../lib/controller/mysql-cluster/facts.js';

const NS = 'shop';
const APP_PASSWORD = 'app-password-0123456789abcdefghij';
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const cluster: CustomResource = {
  apiVersion: 'recon8s.dev/v1alpha1',
  kind: 'MySQLCluster',
  metadata: { name: 'db', namespace: NS, uid: 'db-uid' },
} as CustomResource;
const app = (name: string, database: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) =>
  ({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    metadata: { name, namespace: NS, uid: `${name}-uid`, ...extra },
    spec: { image: 'nginx', ...(database ? { database } : {}) },
  }) as CustomResource;
const PRIMARY: PrimaryView = { name: 'db-0', ip: '10.0.0.1', writable: true };

/** Secrets by name: the cluster's credentials, and each App's binding Secret owned by its App. */
function fakeClient(secrets: Record<string, { data: Record<string, string>; owner?: string }>): KubeClient {
  return {
    requestJson: (req: { path: string }) => {
      const name = decodeURIComponent(req.path.split('/').pop() ?? '');
      const s = secrets[name];
      if (!s) return Promise.reject(new KubeApiError(404, 'HTTP 404: not found', '{}', {}));
      return Promise.resolve({
        metadata: { name, ownerReferences: s.owner ? [{ controller: true, uid: s.owner }] : [] },
        data: s.data,
      });
    },
  } as unknown as KubeClient;
}

function fakeSession(server: {
  observed: ObservedServer;
  writable?: boolean;
  fail?: (s: AccountStatement) => boolean;
}) {
  const runs: AccountStatement[] = [];
  let opened = 0;
  const session: AccountActions = {
    writable: () => Promise.resolve(server.writable ?? true),
    observe: () => Promise.resolve(server.observed),
    run: (s) => {
      if (server.fail?.(s))
        return Promise.reject(
          Object.assign(new Error('x'), { code: 'ER_X', sqlMessage: 'refused', sql: `has ${APP_PASSWORD}` }),
        );
      runs.push(s);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
  return {
    runs,
    opened: () => opened,
    open: () => {
      opened++;
      return Promise.resolve(session);
    },
  };
}

const lookup = (apps: CustomResource[] | undefined): ResourceLookup => ({
  get: () => undefined,
  list: () => apps,
});
const ctx = (apps: CustomResource[] | undefined, client: KubeClient): ManageContext<MySQLClusterFacts> =>
  ({
    client,
    cr: cluster,
    live: () => undefined,
    pods: [],
    prepared: {
      problems: [],
      facts: {
        credentialsSecretName: 'db-credentials',
        tlsSecretName: 'db-tls',
        tls: { caPem: 'a CA (the fake sessions verify nothing)', notAfter: '2099-01-01T00:00:00.000Z' },
      },
    },
    log: silentLogger,
    resources: lookup(apps),
  }) as ManageContext<MySQLClusterFacts>;
const secrets = {
  'db-credentials': { data: { 'root-password': b64('root') } },
  'web-db': { data: { password: b64(APP_PASSWORD) }, owner: 'web-uid' },
};
const empty: ObservedServer = { databases: new Set(), accounts: [] };

describe('App accounts loop (cluster manager)', () => {
  it("takes the cluster's steps of a rotation: the staged password set with the current one retained, reported by revision, and looks again on every pass while it is under way", async () => {
    let t = 0;
    const user = accountName(NS, 'web');
    const NEXT = 'next-password-0123456789abcdefghij';
    const observed: ObservedServer = {
      databases: new Set(['shop']),
      accounts: [
        {
          user,
          app: `${NS}/web`,
          fingerprint: passwordFingerprint(user, APP_PASSWORD),
          retainsPassword: false,
          privileges: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'CREATE', 'ALTER', 'INDEX', 'DROP', 'REFERENCES']
            .concat(['CREATE TEMPORARY TABLES', 'LOCK TABLES', 'EXECUTE', 'CREATE VIEW', 'SHOW VIEW', 'TRIGGER'])
            .map((privilege) => ({ on: '`shop`.*', privilege })),
        },
      ],
    };
    const fake = fakeSession({ observed });
    const accounts = createAppAccounts({ open: fake.open, now: () => t });
    const web = app(
      'web',
      { cluster: 'db', name: 'shop', access: 'readWrite' },
      { annotations: { 'recon8s.dev/rotate-credentials': 'T1' } },
    );
    const staged = {
      ...secrets,
      'web-db': { data: { password: b64(APP_PASSWORD), 'password-next': b64(NEXT) }, owner: 'web-uid' },
    };
    // The fake client has no annotations: a password-next without its token is the rotation asked for.
    const r = await accounts.sync(ctx([web], fakeClient(staged)), PRIMARY);
    assert.deepEqual(
      fake.runs.map((s) => (s.type === 'setPassword' ? [s.type, s.retain, s.purpose, s.password === NEXT] : [s.type])),
      [['setPassword', true, 'rotate', true]],
    );
    assert.equal(r.accounts?.[0]?.passwordRevision, 'T1');
    assert.equal(r.accounts?.[0]?.retainsPassword, true);
    assert.deepEqual(
      r.events.map((e) => e.reason),
      ['AccountPasswordRetained'],
    );
    assert.ok(!JSON.stringify(r).includes(NEXT));
    // Still under way: the next pass goes to the primary again (nothing memoized as settled).
    t += 1000;
    await accounts.sync(ctx([web], fakeClient(staged)), PRIMARY);
    assert.equal(fake.opened(), 2);
  });

  it('makes the account of a bound App on a writable primary and reports it ready, with Events that hold no password', async () => {
    let t = 0;
    const fake = fakeSession({ observed: empty });
    const accounts = createAppAccounts({ open: fake.open, now: () => t });
    const web = app('web', { cluster: 'db', name: 'shop', access: 'readWrite' });
    const r = await accounts.sync(ctx([web, app('other', undefined)], fakeClient(secrets)), PRIMARY);
    assert.deepEqual(
      fake.runs.map((s) => s.type),
      ['createDatabase', 'createUser', 'grant'],
    );
    assert.deepEqual(r.accounts, [
      {
        app: 'web',
        user: accountName(NS, 'web'),
        database: 'shop',
        access: 'readWrite',
        ready: true,
        message: `account ${accountName(NS, 'web')} has readWrite access to database shop`,
        passwordRevision: '0',
        retainsPassword: false,
      },
    ]);
    assert.deepEqual(
      r.events.map((e) => e.reason),
      ['DatabaseCreated', 'AccountCreated', 'AccountGrantsChanged'],
    );
    assert.ok(!JSON.stringify(r).includes(APP_PASSWORD));
    // Nothing changed: the primary is left alone, the status says the same, until the resync.
    t += 30_000;
    const again = await accounts.sync(ctx([web], fakeClient(secrets)), PRIMARY);
    assert.equal(fake.opened(), 1);
    assert.deepEqual(again.accounts, r.accounts);
    t += 31_000;
    await accounts.sync(ctx([web], fakeClient(secrets)), PRIMARY);
    assert.equal(fake.opened(), 2, 'looked again after a minute');
  });

  it('changes nothing while the cache has not synced (an empty list would drop every account)', async () => {
    const fake = fakeSession({ observed: empty });
    const r = await createAppAccounts({ open: fake.open }).sync(ctx(undefined, fakeClient(secrets)), PRIMARY);
    assert.equal(fake.opened(), 0);
    assert.equal(r.accounts, undefined);
  });

  it('takes the primary as writable only while its commits are not waiting for a replica', () => {
    const fields = { currentPrimary: 'db-0', members: [{ name: 'db-0', writable: true }] };
    const pods = [{ metadata: { name: 'db-0' }, status: { podIP: '10.0.0.1' } }];
    assert.deepEqual(primaryView(fields, pods, false), PRIMARY);
    assert.equal(primaryView(fields, pods, true)?.writable, false);
    assert.equal(
      primaryView({ ...fields, members: [{ name: 'db-0', writable: false }] }, pods, false)?.writable,
      false,
    );
    assert.equal(primaryView({}, pods, false), undefined);
  });

  it('never writes to a member that is not writable: a new account waits, a ready one is still reported', async () => {
    let t = 0;
    const fake = fakeSession({ observed: empty });
    const accounts = createAppAccounts({ open: fake.open, now: () => t });
    const web = app('web', { cluster: 'db', name: 'shop' });
    const waiting = await accounts.sync(ctx([web], fakeClient(secrets)), { ...PRIMARY, writable: false });
    assert.equal(fake.opened(), 0);
    assert.equal(waiting.accounts?.[0]?.reason, 'WaitingForPrimary');
    await accounts.sync(ctx([web], fakeClient(secrets)), PRIMARY);
    t += 1000;
    const failover = await accounts.sync(ctx([web], fakeClient(secrets)), { name: 'db-1', writable: false });
    assert.equal(failover.accounts?.[0]?.ready, true);
    // super_read_only came on after the HA step looked: nothing is run.
    const readOnly = fakeSession({ observed: empty, writable: false });
    await createAppAccounts({ open: readOnly.open }).sync(ctx([web], fakeClient(secrets)), PRIMARY);
    assert.equal(readOnly.opened(), 1);
    assert.deepEqual(readOnly.runs, []);
  });

  it('waits for an App whose Secret is not written (or not its own), and looks again at the next poll', async () => {
    const fake = fakeSession({ observed: empty });
    const accounts = createAppAccounts({ open: fake.open, now: () => 0 });
    const api = app('api', { cluster: 'db', name: 'shop' });
    const foreign = { ...secrets, 'api-db': { data: { password: b64('theirs') }, owner: 'someone-else' } };
    const r = await accounts.sync(ctx([api], fakeClient(foreign)), PRIMARY);
    assert.deepEqual(fake.runs, []);
    assert.equal(r.accounts?.[0]?.reason, 'AccountPending');
    await accounts.sync(ctx([api], fakeClient(foreign)), PRIMARY);
    assert.equal(fake.opened(), 2, 'not settled: looked at again');
  });

  it('reports a statement MySQL refuses (its code and message, never the statement), and tries again', async () => {
    const fake = fakeSession({ observed: empty, fail: (s) => s.type === 'createUser' });
    const accounts = createAppAccounts({ open: fake.open, now: () => 0 });
    const web = app('web', { cluster: 'db', name: 'shop' });
    const r = await accounts.sync(ctx([web], fakeClient(secrets)), PRIMARY);
    assert.equal(r.accounts?.[0]?.ready, false);
    assert.equal(r.accounts?.[0]?.reason, 'Failed');
    assert.match(r.accounts?.[0]?.message ?? '', /ER_X: refused/);
    assert.ok(!JSON.stringify(r).includes(APP_PASSWORD));
    assert.ok(r.events.some((e) => e.type === 'Warning' && e.reason === 'AccountFailed'));
    // The grant of an account that could not be created is not tried.
    assert.ok(!fake.runs.some((s) => s.type === 'grant'));
    await accounts.sync(ctx([web], fakeClient(secrets)), PRIMARY);
    assert.equal(fake.opened(), 2);
  });

  it('drops the account of an App that is deleted or being deleted, or that binds another cluster', async () => {
    const user = accountName(NS, 'web');
    const observed: ObservedServer = {
      databases: new Set(['shop']),
      accounts: [{ user, app: `${NS}/web`, privileges: [] }],
    };
    for (const apps of [
      [],
      [app('web', { cluster: 'db', name: 'shop' }, { deletionTimestamp: '2026-01-01T00:00:00Z' })],
      [app('web', { cluster: 'other', name: 'shop' })],
    ]) {
      const fake = fakeSession({ observed });
      const r = await createAppAccounts({ open: fake.open }).sync(ctx(apps, fakeClient(secrets)), PRIMARY);
      assert.deepEqual(fake.runs, [{ type: 'dropUser', user, app: `${NS}/web` }]);
      assert.equal(r.accounts, undefined);
    }
  });

  it('refuses a system schema even if admission was bypassed, and grants nothing on it', async () => {
    const fake = fakeSession({ observed: empty });
    const r = await createAppAccounts({ open: fake.open }).sync(
      ctx([app('web', { cluster: 'db', name: 'MySQL' })], fakeClient(secrets)),
      PRIMARY,
    );
    assert.deepEqual(fake.runs, []);
    assert.equal(r.accounts?.[0]?.reason, 'Conflict');
  });
});
