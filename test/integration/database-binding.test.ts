// An App's database binding with the controller on a real API server (no kubelet, no mysqld: the
// account itself is proven on the real node, test/e2e/example.test.ts): the binding Secret, status.binding,
// the Deployment's wiring, and DatabaseReady saying why not, without crash loop.
import assert from 'node:assert/strict';
import type { V1Deployment } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { accountName } from '../../lib/mysql/accounts.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';
interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface AppResource {
  metadata: { uid: string };
  status?: { conditions?: Condition[]; binding?: { name?: string } };
}

describe('App database binding with the controller (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let ns: string;
  let controller: Controller;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let apps: AppsV1Api;

  before(async function () {
    this.timeout(120_000);
    const kc = controlPlane().kubeConfig();
    ns = await freshNamespace('binding');
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    controller = await startTestController(controlPlane(), { namespaces: [ns], resyncPeriodMs: 30_000 });
  });
  after(async () => {
    await controller?.stop();
  });

  const getApp = async (name: string): Promise<AppResource> =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name,
    })) as AppResource;
  const databaseReady = async (name: string): Promise<Condition | undefined> =>
    (await getApp(name)).status?.conditions?.find((c) => c.type === 'DatabaseReady');

  it('writes the binding Secret, owned by the App, and wires the Deployment to it', async () => {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'App',
        metadata: { name: 'web' },
        spec: { image: 'nginx', database: { cluster: 'db', name: 'shop', access: 'readOnly' } },
      },
    });
    const secret = await eventually(() => core.readNamespacedSecret({ namespace: ns, name: 'web-db' }), {
      timeoutMs: 30_000,
      description: 'Secret web-db',
    });
    const value = (k: string): string => Buffer.from(secret.data?.[k] ?? '', 'base64').toString('utf8');
    assert.equal(secret.type, 'servicebinding.io/mysql');
    assert.deepEqual(
      Object.fromEntries(
        ['type', 'provider', 'host', 'read-host', 'port', 'database', 'username'].map((k) => [k, value(k)]),
      ),
      {
        type: 'mysql',
        provider: 'recon8s',
        host: `db-primary.${ns}.svc`,
        'read-host': `db-replicas.${ns}.svc`,
        port: '3306',
        database: 'shop',
        username: accountName(ns, 'web'),
      },
    );
    assert.match(value('password'), /^[A-Za-z0-9_-]{32}$/);
    const app = await getApp('web');
    assert.deepEqual(
      secret.metadata?.ownerReferences?.map((r) => [r.kind, r.uid, r.controller]),
      [['App', app.metadata.uid, true]],
    );
    const deployment: V1Deployment = await eventually(
      () => apps.readNamespacedDeployment({ namespace: ns, name: 'web' }),
      {
        timeoutMs: 30_000,
        description: 'Deployment web',
      },
    );
    const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
    assert.deepEqual(
      { ...env.find((e) => e.name === 'DB_PASSWORD')?.valueFrom?.secretKeyRef },
      {
        name: 'web-db',
        key: 'password',
      },
    );
    // The password is nowhere but in the Secret.
    assert.ok(!JSON.stringify(deployment).includes(value('password')));
    assert.ok(!JSON.stringify(app).includes(value('password')));
    await eventually(async () => assert.equal((await getApp('web')).status?.binding?.name, 'web-db'), {
      timeoutMs: 30_000,
      description: 'status.binding',
    });
  });

  it('says the cluster is missing (DatabaseReady False, Degraded, an Event), then waits for its account once it exists', async () => {
    await eventually(
      async () => {
        const c = await databaseReady('web');
        assert.equal(c?.status, 'False', JSON.stringify(c));
        assert.equal(c?.reason, 'ClusterNotFound');
        assert.match(c?.message ?? '', /MySQLCluster db named in spec\.database\.cluster does not exist/);
      },
      { timeoutMs: 30_000, description: 'DatabaseReady ClusterNotFound' },
    );
    const degraded = (await getApp('web')).status?.conditions?.find((c) => c.type === 'Degraded');
    assert.equal(degraded?.reason, 'DatabaseClusterNotFound');
    const events = (await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=web' })).items;
    assert.ok(
      events.some((e) => e.reason === 'DatabaseClusterNotFound'),
      JSON.stringify(events.map((e) => e.reason)),
    );

    // The cluster appearing queues the App (no waiting for a resync): its account is pending now.
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: { replicas: 1 },
      },
    });
    await eventually(
      async () => {
        const c = await databaseReady('web');
        assert.equal(c?.status, 'False', JSON.stringify(c));
        assert.notEqual(c?.reason, 'ClusterNotFound');
      },
      { timeoutMs: 20_000, description: 'DatabaseReady no longer ClusterNotFound' },
    );
  });

  it("never touches a Secret of the binding's name that is not the App's: it says so", async () => {
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'api-db' }, stringData: { password: 'mine' } },
    });
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'App',
        metadata: { name: 'api' },
        spec: { image: 'nginx', database: { cluster: 'db', name: 'shop' } },
      },
    });
    await eventually(
      async () => {
        const c = await databaseReady('api');
        assert.equal(c?.reason, 'SecretConflict', JSON.stringify(c));
        assert.match(c?.message ?? '', /Secret api-db exists and is not this App's/);
      },
      { timeoutMs: 30_000, description: 'DatabaseReady SecretConflict' },
    );
    const secret = await core.readNamespacedSecret({ namespace: ns, name: 'api-db' });
    assert.deepEqual(Object.keys(secret.data ?? {}), ['password']);
    assert.equal(Buffer.from(secret.data?.password ?? '', 'base64').toString(), 'mine');
    assert.equal(secret.metadata?.ownerReferences, undefined);
  });

  it('changes the Secret with the binding (another database), keeping the password', async () => {
    const before = await core.readNamespacedSecret({ namespace: ns, name: 'web-db' });
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        name: 'web',
        body: { spec: { database: { cluster: 'db', name: 'orders', access: 'readOnly' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const after = await core.readNamespacedSecret({ namespace: ns, name: 'web-db' });
        assert.equal(Buffer.from(after.data?.database ?? '', 'base64').toString(), 'orders');
        assert.equal(after.data?.password, before.data?.password);
      },
      { timeoutMs: 30_000, description: 'Secret web-db says database orders' },
    );
  });
});
