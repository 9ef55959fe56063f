import assert from 'node:assert/strict';
import type { V1Secret } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/manager.js';
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

  before(async function () {
    this.timeout(120_000);
    ns = await freshNamespace('retention');
    controller = await startTestController(controlPlane(), { namespaces: [ns] });
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
});
