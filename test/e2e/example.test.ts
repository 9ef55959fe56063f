// The project's example (docs/controller.md), as a cdk8s user runs it: `cdk8s synth`, then `kubectl apply` of the CRDs and
// of dist/example.k8s.yaml where the controller runs. The database the user gets must take writes,
// and go on taking them after its primary is lost; the web App must run beside it on the node.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { Connection } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import { parseAllDocuments } from 'yaml';
import type { Controller } from '../../lib/controller/controller.js';
import { accountName } from '../../lib/mysql/accounts.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import { REFUSED_LOGINS_SQL } from '../support/mysql-counters.js';
import { runCliHere, runSynth } from '../support/run.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, useSharedNode } from './cluster.js';

/** The example's own namespace (apps/main.ts): the file is applied as written, namespace included. */
const NS = 'example';
const BOOTSTRAP_MS = 8 * 60_000;

interface AppStatus {
  status?: {
    binding?: { name?: string };
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

interface Cluster {
  status?: {
    currentPrimary?: string;
    tlsSecretName?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

describe('the example (docs/controller.md) on the real node: synthesized, applied, written to, its primary lost', function () {
  this.timeout(BOOTSTRAP_MS);
  const node = useSharedNode();
  let kc: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;
  let outdir: string;
  let password = '';

  const cluster = async (): Promise<Cluster> =>
    (await custom.getNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      plural: 'mysqlclusters',
      namespace: NS,
      name: 'db',
    })) as Cluster;

  const clusterCa = async (): Promise<string> => {
    const secret = await core.readNamespacedSecret({
      namespace: NS,
      name: (await cluster()).status?.tlsSecretName ?? '',
    });
    return Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
  };

  /** Runs statements through the Service `db-primary`, as the App's DB_HOST does. */
  async function throughPrimary(sql: string, values: unknown[] = []): Promise<unknown> {
    const service = await core.readNamespacedService({ namespace: NS, name: 'db-primary' });
    let c: Connection | undefined;
    try {
      c = await createConnection({
        host: service.spec?.clusterIP,
        port: 3306,
        user: 'root',
        password,
        // Verified with the cluster's CA (status.tlsSecretName's ca.crt), as every client of recon8s does.
        ssl: { ca: await clusterCa(), rejectUnauthorized: true },
        connectTimeout: 3000,
      });
      const [rows] = await c.query({ sql, values, timeout: 10_000 });
      return rows;
    } finally {
      c?.destroy();
    }
  }

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    outdir = mkdtempSync(join(tmpdir(), 'recon8s-example-'));
    const synth = runSynth(outdir);
    assert.equal(synth.status, 0, synth.stderr);
    await node().kubectl(['create', 'namespace', NS]);
    await node().kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=restricted']);
    controller = await startTestController(node(), { namespaces: [NS], resyncPeriodMs: 30_000 });
  });
  after(async () => {
    await controller?.stop();
    await discardNamespace(node(), NS);
    if (outdir) rmSync(outdir, { recursive: true, force: true });
  });

  it('synthesizes the database as the MySQLCluster resource, which kubectl applies with the CRDs', async () => {
    const example = readFileSync(join(outdir, 'example.k8s.yaml'), 'utf8');
    const kinds = parseAllDocuments(example).map((d) => (d.toJS() as { kind: string }).kind);
    assert.ok(kinds.includes('MySQLCluster') && !kinds.includes('StatefulSet'), kinds.join(', '));
    await node().kubectl(['apply', '--server-side', '-f', join(outdir, 'crds.k8s.yaml')]);
    await node().kubectl(['apply', '-f', join(outdir, 'example.k8s.yaml')]);
  });

  it('becomes a database that takes writes through db-primary, with the password from db-credentials', async () => {
    await eventually(
      async () => {
        const ready = (await cluster()).status?.conditions?.find((c) => c.type === 'Ready');
        assert.equal(ready?.status, 'True', JSON.stringify((await cluster()).status?.conditions));
      },
      { timeoutMs: BOOTSTRAP_MS - 60_000, intervalMs: 2000, description: 'MySQLCluster db Ready' },
    );
    const secret = await core.readNamespacedSecret({ namespace: NS, name: 'db-credentials' });
    password = Buffer.from(secret.data?.['root-password'] ?? '', 'base64').toString('utf8');
    await eventually(() => throughPrimary('CREATE DATABASE IF NOT EXISTS shop'), {
      timeoutMs: 60_000,
      intervalMs: 1000,
      description: 'a first write',
    });
    await throughPrimary('CREATE TABLE shop.orders (id INT PRIMARY KEY)');
    await throughPrimary('INSERT INTO shop.orders VALUES (1)');
  });

  it('runs the web App beside it: both replicas available, reading its own password the controller generated', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    await eventually(
      async () => {
        const d = await apps.readNamespacedDeployment({ namespace: NS, name: 'web' });
        assert.equal(d.status?.availableReplicas, 2, JSON.stringify(d.status?.conditions));
      },
      { timeoutMs: 120_000, intervalMs: 2000, description: 'Deployment web available' },
    );
  });

  const getApp = async (name: string): Promise<AppStatus> =>
    (await custom.getNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      plural: 'apps',
      namespace: NS,
      name,
    })) as AppStatus;
  const databaseReady = (name: string) =>
    eventually(
      async () => {
        const app = await getApp(name);
        const c = app.status?.conditions?.find((x) => x.type === 'DatabaseReady');
        assert.equal(c?.status, 'True', JSON.stringify(app.status));
        assert.equal(app.status?.binding?.name, `${name}-db`);
      },
      { timeoutMs: 120_000, intervalMs: 2000, description: `App ${name} DatabaseReady` },
    );

  it('gives the web App an account of its own on shop, never root: DatabaseReady, and a binding Secret', async () => {
    await databaseReady('web');
    const secret = await core.readNamespacedSecret({ namespace: NS, name: 'web-db' });
    const value = (k: string) => Buffer.from(secret.data?.[k] ?? '', 'base64').toString('utf8');
    assert.equal(secret.type, 'servicebinding.io/mysql');
    assert.equal(value('type'), 'mysql');
    assert.equal(value('database'), 'shop');
    assert.equal(value('username'), accountName(NS, 'web'));
    assert.equal(value('host'), `db-primary.${NS}.svc`);
    assert.equal(secret.metadata?.ownerReferences?.[0]?.kind, 'App');
    assert.match(value('password'), /^[A-Za-z0-9_-]{32}$/);
  });

  it('lets a bound App pod write in its database with its own account, and refuses it any other database and mysql', async function () {
    this.timeout(240_000);
    await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'apps',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'sql-client' },
        spec: {
          image: node().images.mysql,
          imagePullPolicy: 'Never',
          command: ['sleep', 'infinity'],
          // The mysql image's own uid.
          securityContext: { runAsUser: 999, runAsGroup: 999 },
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '256Mi' } },
          database: { cluster: 'db', name: 'shop' },
        },
      },
    });
    await databaseReady('sql-client');
    const pod = await eventually(
      async () => {
        const pods = await core.listNamespacedPod({
          namespace: NS,
          labelSelector: 'app.kubernetes.io/instance=sql-client',
        });
        const running = pods.items.find((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
        assert.ok(running?.metadata?.name, 'no running sql-client pod');
        return running.metadata.name;
      },
      { timeoutMs: 120_000, intervalMs: 2000, description: 'a running sql-client pod' },
    );
    /**
     * SQL from inside the App's pod, as its account: the user and password from the mounted binding
     * ($SERVICE_BINDING_ROOT/database), into a client option file (never on a command line), the
     * host and database from the injected DB_HOST and DB_NAME.
     */
    const inPod = async (sql: string): Promise<{ ok: boolean; out: string }> => {
      const script = [
        'set -eu',
        'b="$SERVICE_BINDING_ROOT/database"',
        'printf "[client]\\nuser=%s\\npassword=%s\\n" "$(cat "$b/username")" "$(cat "$b/password")" > /tmp/client.cnf',
        'test "$(cat "$b/username")" = "$DB_USER"',
        // The server is verified with the CA the binding carries, by the name the App uses (DB_HOST).
        'test -s "$DB_SSL_CA"',
        'exec mysql --defaults-extra-file=/tmp/client.cnf --host="$DB_HOST" --port="$DB_PORT" --ssl-mode=VERIFY_IDENTITY --ssl-ca="$DB_SSL_CA" --batch --skip-column-names "$DB_NAME" -e "$1"',
      ].join('\n');
      try {
        const { stdout } = await node().kubectl(['exec', '-n', NS, pod, '--', 'bash', '-c', script, 'sql', sql]);
        return { ok: true, out: stdout.trim() };
      } catch (e) {
        return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
      }
    };
    const write = await eventually(
      async () => {
        const r = await inPod(
          'CREATE TABLE IF NOT EXISTS visits (id INT PRIMARY KEY); REPLACE INTO visits VALUES (1); SELECT COUNT(*) FROM visits',
        );
        assert.ok(r.ok, r.out);
        return r.out;
      },
      { timeoutMs: 60_000, intervalMs: 2000, description: 'a write in shop from the App pod' },
    );
    assert.equal(write, '1');
    assert.equal((await inPod('SELECT CURRENT_USER()')).out, `${accountName(NS, 'sql-client')}@%`);
    // The rows written as root earlier are in the same database.
    assert.equal((await inPod('SELECT COUNT(*) FROM orders')).out, '1');
    const otherDb = await inPod('CREATE DATABASE other');
    assert.equal(otherDb.ok, false);
    assert.match(otherDb.out, /Access denied/);
    const mysqlSchema = await inPod('SELECT COUNT(*) FROM mysql.user');
    assert.equal(mysqlSchema.ok, false);
    assert.match(mysqlSchema.out, /denied/);
  });

  it("rotates the sql-client App's password while each of its pods logs in afresh and writes twice a second: no failed login or write, every pod replaced, the old password refused after", async function () {
    this.timeout(6 * 60_000);
    const user = accountName(NS, 'sql-client');
    await throughPrimary('CREATE TABLE shop.ticks (pod VARCHAR(253) NOT NULL, n INT NOT NULL, PRIMARY KEY (pod, n))');
    // A client as an application runs one: a new login per write, with the password its pod started with
    // (DB_PASSWORD), verified TLS; a write that fails leaves a hole in its pod's sequence of n. It ends on
    // SIGTERM between two writes, as a well-behaved application does.
    const loop = [
      "trap 'exit 0' TERM",
      'printf "[client]\\nuser=%s\\npassword=%s\\n" "$DB_USER" "$DB_PASSWORD" > /tmp/client.cnf',
      'n=0',
      'while :; do',
      '  n=$((n + 1))',
      '  mysql --defaults-extra-file=/tmp/client.cnf --host="$DB_HOST" --port="$DB_PORT" --ssl-mode=VERIFY_IDENTITY --ssl-ca="$DB_SSL_CA" "$DB_NAME" -e "INSERT INTO ticks VALUES (\'$HOSTNAME\', $n)" || echo "write $n failed" >&2',
      '  sleep 0.5 & wait $!',
      'done',
    ].join('\n');
    await node().kubectl([
      'patch',
      'apps.recon8s.dev',
      'sql-client',
      '-n',
      NS,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { command: ['bash', '-c', loop] } }),
    ]);
    const ticks = async (): Promise<{ pod: string; n: number }[]> =>
      (await throughPrimary('SELECT pod, n FROM shop.ticks ORDER BY pod, n')) as { pod: string; n: number }[];
    // Writing from a pod of the new template: its rows keep coming.
    const before = await eventually(
      async () => {
        const rows = await ticks();
        assert.ok(rows.length >= 5, `${rows.length} writes so far`);
        return new Set(rows.map((r) => r.pod));
      },
      { timeoutMs: 120_000, intervalMs: 2000, description: 'the sql-client pods writing' },
    );
    const binding = async () => {
      const secret = await core.readNamespacedSecret({ namespace: NS, name: 'sql-client-db' });
      return Buffer.from(secret.data?.password ?? '', 'base64').toString('utf8');
    };
    const oldPassword = await binding();
    // Refused logins as the primary counts them: a login a pod tried with a discarded password is one,
    // even at the end of the pod's life, where it leaves no hole in the sequence.
    const refused = async () =>
      Number(((await throughPrimary(REFUSED_LOGINS_SQL)) as Record<string, unknown>[])[0]?.SUM_ERROR_RAISED ?? 0);
    const refusedBefore = await refused();
    const started = performance.now();
    const rotated = await runCliHere([
      'rotate-credentials',
      'app',
      'sql-client',
      '-n',
      NS,
      '--kubeconfig',
      node().kubeconfigPath,
      '--wait',
      '--timeout',
      '4m',
    ]);
    const seconds = (performance.now() - started) / 1000;
    assert.equal(rotated.code, 0, `${rotated.out}${rotated.err}`);
    assert.notEqual(await binding(), oldPassword);
    // A few more writes from the pods with the new password, then every pod's sequence is looked at.
    await new Promise((r) => setTimeout(r, 3000));
    const rows = await ticks();
    const byPod = new Map<string, number[]>();
    for (const r of rows) byPod.set(r.pod, [...(byPod.get(r.pod) ?? []), r.n]);
    const holes = [...byPod].flatMap(([pod, ns]) =>
      ns.flatMap((n, i) => (n === i + 1 ? [] : [`${pod}: write ${i + 1} missing`])).slice(0, 1),
    );
    assert.deepEqual(holes, [], "a write failed (a hole in a pod's sequence)");
    assert.equal(await refused(), refusedBefore, 'logins refused during the rotation');
    const after = [...byPod.keys()].filter((p) => !before.has(p));
    assert.ok(after.length > 0, `no pod of the new password wrote (${[...byPod.keys()].join(', ')})`);
    const pods = await core.listNamespacedPod({
      namespace: NS,
      labelSelector: 'app.kubernetes.io/instance=sql-client',
    });
    assert.deepEqual(
      pods.items.map((p) => p.metadata?.name).filter((name) => name && before.has(name)),
      [],
      'a pod that started with the old password is still there',
    );
    console.log(
      `      rotation: ${seconds.toFixed(1)} s; ${rows.length} writes from ${byPod.size} pods, each a new login, none failed`,
    );
    // The old password is refused on the primary; the new one logs in.
    const service = await core.readNamespacedService({ namespace: NS, name: 'db-primary' });
    const login = async (pw: string) => {
      const c = await createConnection({
        host: service.spec?.clusterIP,
        port: 3306,
        user,
        password: pw,
        ssl: { ca: await clusterCa(), rejectUnauthorized: true },
        connectTimeout: 3000,
      });
      c.destroy();
    };
    await assert.rejects(login(oldPassword), /Access denied/);
    assert.equal(await refused(), refusedBefore + 1, 'the counter sees a refused login');
    await login(await binding());
  });

  it('drops the account when its App is deleted, and keeps its data', async () => {
    const user = accountName(NS, 'sql-client');
    await custom.deleteNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'apps',
      name: 'sql-client',
    });
    await eventually(
      async () =>
        assert.deepEqual(await throughPrimary('SELECT COUNT(*) AS n FROM mysql.user WHERE user = ?', [user]), [
          { n: 0 },
        ]),
      { timeoutMs: 60_000, intervalMs: 1000, description: `account ${user} dropped` },
    );
    assert.deepEqual(await throughPrimary('SELECT id FROM shop.visits'), [{ id: 1 }]);
    // The web App's account is still there.
    assert.deepEqual(
      await throughPrimary('SELECT COUNT(*) AS n FROM mysql.user WHERE user = ?', [accountName(NS, 'web')]),
      [{ n: 1 }],
    );
  });

  it('takes writes again after its primary pod is force-deleted, and keeps what it acknowledged', async () => {
    const lost = (await cluster()).status?.currentPrimary ?? '';
    assert.match(lost, /^db-\d$/);
    await node().kubectl(['delete', 'pod', '-n', NS, lost, '--grace-period=0', '--force']);
    await eventually(() => throughPrimary('INSERT INTO shop.orders VALUES (2)'), {
      timeoutMs: 180_000,
      intervalMs: 1000,
      description: 'a write after the primary was lost',
    });
    assert.deepEqual(await throughPrimary('SELECT id FROM shop.orders ORDER BY id'), [{ id: 1 }, { id: 2 }]);
  });
});
