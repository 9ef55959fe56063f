import assert from 'node:assert/strict';
import type { V1Secret } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { jsonLogger } from '../../lib/observability/logger.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';

/**
 * The generated credentials Secret lives exactly as long as the data it unlocks: it is owned by (and
 * garbage collected with) the MySQLCluster only while pvcRetention.whenDeleted is Delete. Switching the
 * policy moves the ownerReference both ways, so deleting a cluster never keeps volumes whose passwords it
 * deleted.
 */
describe('credentials follow the retention policy (real API server)', function () {
  this.timeout(90_000);
  const controlPlane = useSharedControlPlane();
  let ns: string;
  let controller: Controller | undefined;
  const logLines: string[] = [];

  before(async function () {
    this.timeout(120_000);
    ns = await freshNamespace('retention');
    controller = await startTestController(controlPlane(), {
      namespaces: [ns],
      logger: jsonLogger({ level: 'debug', write: (l) => logLines.push(l) }),
    });
  });
  after(async () => {
    await controller?.stop();
  });

  it("moves the generated Secret's ownerReference with pvcRetention.whenDeleted, and keeps it when the cluster goes", async () => {
    const kc = controlPlane().kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const patch = (whenDeleted: string): Promise<object> =>
      custom.patchNamespacedCustomObject(
        {
          group: 'recon8s.dev',
          version: 'v1alpha1',
          namespace: ns,
          plural: 'mysqlclusters',
          name: 'db',
          body: { spec: { pvcRetention: { whenDeleted } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    const owners = async (): Promise<string[]> =>
      (
        (await core.readNamespacedSecret({ namespace: ns, name: 'db-credentials' })).metadata?.ownerReferences ?? []
      ).map((r) => `${r.kind}/${r.name}`);
    const created = (await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: { replicas: 1, pvcRetention: { whenDeleted: 'Delete' } },
      },
    })) as { metadata: { uid: string } };
    await eventually(async () => assert.deepEqual(await owners(), ['MySQLCluster/db']), {
      description: 'the Secret owned while the data is deleted with the cluster',
    });
    const original: V1Secret = await core.readNamespacedSecret({ namespace: ns, name: 'db-credentials' });
    assert.deepEqual(Object.keys(original.data ?? {}).sort(), [
      'admin-password',
      'backup-password',
      'clone-password',
      'exporter-password',
      'replication-password',
      'root-password',
    ]);

    await patch('Retain');
    await eventually(async () => assert.deepEqual(await owners(), []), {
      description: 'the ownerReference removed once the data is retained',
    });
    await patch('Delete');
    await eventually(async () => assert.deepEqual(await owners(), ['MySQLCluster/db']), {
      description: 'the ownerReference back',
    });
    await patch('Retain');
    await eventually(async () => assert.deepEqual(await owners(), []), {
      description: 'the ownerReference removed again',
    });

    await custom.deleteNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      name: 'db',
      body: { propagationPolicy: 'Foreground' },
    });
    await eventually(
      async () => {
        await assert.rejects(
          custom.getNamespacedCustomObject({
            group: 'recon8s.dev',
            version: 'v1alpha1',
            namespace: ns,
            plural: 'mysqlclusters',
            name: 'db',
          }),
          (e: { code?: number }) => e.code === 404,
        );
      },
      { timeoutMs: 60_000, description: `MySQLCluster db (uid ${created.metadata.uid}) to be gone` },
    );
    const kept = await core.readNamespacedSecret({ namespace: ns, name: 'db-credentials' });
    assert.deepEqual(kept.data, original.data, 'the passwords of the retained data are kept, unchanged');
  });

  it('adds the missing admin-password to a Secret it generated before that key existed, keeping the other passwords and following the retention policy', async () => {
    const kc = controlPlane().kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    // A Secret as an earlier recon8s generated it for cluster "old": two keys, not owned (Retain).
    const before = await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: {
          name: 'old-credentials',
          labels: {
            'app.kubernetes.io/managed-by': 'recon8s',
            'app.kubernetes.io/instance': 'old',
            'recon8s.dev/generated-for': 'old',
          },
        },
        type: 'Opaque',
        stringData: { 'root-password': 'earlier-root-password', 'replication-password': 'earlier-replication' },
      },
    });
    // The same cluster, now deleting its data with it: the Secret is to be owned too.
    await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'old' },
        spec: { replicas: 1, pvcRetention: { whenDeleted: 'Delete' } },
      },
    });
    const after = await eventually(
      async () => {
        const secret = await core.readNamespacedSecret({ namespace: ns, name: 'old-credentials' });
        assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
          'admin-password',
          'backup-password',
          'clone-password',
          'exporter-password',
          'replication-password',
          'root-password',
        ]);
        assert.deepEqual(
          (secret.metadata?.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`),
          ['MySQLCluster/old'],
        );
        const cr = (await custom.getNamespacedCustomObject({
          group: 'recon8s.dev',
          version: 'v1alpha1',
          namespace: ns,
          plural: 'mysqlclusters',
          name: 'old',
        })) as { status?: { conditions?: { type: string; status: string; reason: string }[] } };
        const degraded = cr.status?.conditions?.find((c) => c.type === 'Degraded');
        assert.equal(degraded?.status, 'False', degraded?.reason);
        return secret;
      },
      { timeoutMs: 30_000, description: 'the Secret completed and owned, the cluster not Degraded' },
    );
    for (const key of ['root-password', 'replication-password'])
      assert.equal(after.data?.[key], before.data?.[key], `${key} is unchanged`);
    const admin = Buffer.from(after.data?.['admin-password'] ?? '', 'base64').toString('utf8');
    assert.ok(admin.length >= 24, 'a generated admin password');
    assert.ok(!logLines.join('\n').includes(admin), 'the new password appears in a log line');
  });
});
