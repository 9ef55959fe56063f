// The HA loop's node-loss ports as the controller runs them (lib/controller/mysql-cluster/ha/kube-ports.ts),
// against the real kube-apiserver: what a Node says (Ready, since when, its taints; one deleted is left
// out), where a claim's bound volume lives (its PersistentVolume's required node affinity on
// kubernetes.io/hostname), and that the claim and pod deletions honour their uid precondition (another
// object of the name is left alone). The loop's use of them: test/unit/mysql-ha-node-loss.test.ts.
import assert from 'node:assert/strict';
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { kubePorts } from '../../lib/controller/mysql-cluster/ha/kube-ports.js';
import type { ManageContext } from '../../lib/controller/kind-controller.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { HttpMethod, PatchStrategy, createKubeClient, getObject } from '../../lib/kube/index.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';

describe('the HA loop node-loss ports (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let client: KubeClient;
  let namespace: string;
  const cleanup: string[] = [];

  const send = (method: HttpMethod, path: string, body: object, type = 'application/json'): Promise<unknown> =>
    client.requestJson({ method, path, body: JSON.stringify(body), headers: { 'Content-Type': type } });
  const ports = (): ReturnType<typeof kubePorts> =>
    kubePorts({
      client,
      cr: { apiVersion: 'recon8s.dev/v1alpha1', kind: 'MySQLCluster', metadata: { name: 'nl', namespace } },
      live: () => undefined,
      pods: [],
      prepared: { problems: [] },
      log: silentLogger,
    } as ManageContext);

  before(async () => {
    client = createKubeClient({ kubeconfigPath: controlPlane().kubeconfigPath, fieldManager: 'recon8s-tests' });
    namespace = await freshNamespace('mysql-node-loss');
  });
  after(async () => {
    for (const path of cleanup) await client.request({ method: HttpMethod.DELETE, path }).catch(() => undefined);
    await client?.close();
  });

  it("reads a Node's Ready condition, since when, and its taints; leaves out a Node the API does not have", async () => {
    const name = `${namespace}-down`;
    await send(HttpMethod.POST, '/api/v1/nodes', {
      metadata: { name },
      spec: { taints: [{ key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' }] },
    });
    cleanup.push(`/api/v1/nodes/${name}`);
    const since = '2030-01-01T00:00:00Z';
    await send(
      HttpMethod.PATCH,
      `/api/v1/nodes/${name}/status`,
      {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'Unknown',
              reason: 'NodeStatusUnknown',
              lastTransitionTime: since,
              lastHeartbeatTime: since,
            },
          ],
        },
      },
      PatchStrategy.MergePatch,
    );
    const nodes = await ports().nodeLoss.nodes([name, `${namespace}-gone`]);
    assert.deepEqual(
      nodes.map((n) => ({ name: n.name, ready: n.ready, readySince: n.readySince })),
      [{ name, ready: 'Unknown', readySince: Date.parse(since) }],
    );
    // The node lifecycle controller may add its own (not-ready): ours is among them.
    assert.ok(nodes[0]?.taintKeys.includes('node.kubernetes.io/out-of-service'), JSON.stringify(nodes));
  });

  it("finds the node a bound claim's volume is pinned to, none for a volume any node reaches, and no claim that does not exist", async () => {
    const make = async (claim: string, affinity: boolean): Promise<void> => {
      const pv = `${namespace}-${claim}`;
      await send(HttpMethod.POST, '/api/v1/persistentvolumes', {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: 'manual',
          ...(affinity
            ? {
                local: { path: '/mnt/data' },
                nodeAffinity: {
                  required: {
                    nodeSelectorTerms: [
                      { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['worker-2'] }] },
                    ],
                  },
                },
              }
            : { hostPath: { path: '/mnt/data' } }),
        },
      });
      cleanup.push(`/api/v1/persistentvolumes/${pv}`);
      await send(HttpMethod.POST, `/api/v1/namespaces/${namespace}/persistentvolumeclaims`, {
        metadata: { name: claim },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'manual',
          volumeName: pv,
          resources: { requests: { storage: '1Gi' } },
        },
      });
      // No PersistentVolume controller here: bound as it would bind it.
      await send(
        HttpMethod.PATCH,
        `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${claim}/status`,
        { status: { phase: 'Bound' } },
        PatchStrategy.MergePatch,
      );
    };
    await make('data-nl-0', true);
    await make('data-nl-1', false);
    const local = await ports().nodeLoss.claim('data-nl-0');
    assert.equal(local?.volumeNode, 'worker-2');
    assert.equal(local?.deleting, false);
    assert.ok(local?.uid);
    const network = await ports().nodeLoss.claim('data-nl-1');
    assert.ok(network && network.volumeNode === undefined, JSON.stringify(network));
    assert.equal(await ports().nodeLoss.claim('data-nl-9'), undefined);
  });

  it('deletes a claim and a pod only while they still have the uid judged from', async () => {
    await send(HttpMethod.POST, `/api/v1/namespaces/${namespace}/persistentvolumeclaims`, {
      metadata: { name: 'data-nl-2' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    await send(HttpMethod.POST, `/api/v1/namespaces/${namespace}/pods`, {
      metadata: { name: 'nl-2' },
      spec: { containers: [{ name: 'mysql', image: 'mysql' }] },
    });
    const claimPath = `/api/v1/namespaces/${namespace}/persistentvolumeclaims/data-nl-2`;
    const podPath = `/api/v1/namespaces/${namespace}/pods/nl-2`;
    const claim = await getObject<V1PersistentVolumeClaim>(client, claimPath);
    const pod = await getObject<V1Pod>(client, podPath);
    const p = ports();
    // Another object of that name (a re-created one): left alone.
    await p.nodeLoss.deleteClaim('data-nl-2', 'not-its-uid');
    await p.pods.forceDelete('nl-2', 'not-its-uid');
    assert.equal((await getObject<V1PersistentVolumeClaim>(client, claimPath))?.metadata?.deletionTimestamp, undefined);
    assert.equal((await getObject<V1Pod>(client, podPath))?.metadata?.deletionTimestamp, undefined);
    // The one judged from: deleted (a claim may wait on its protection finalizer: being deleted).
    await p.nodeLoss.deleteClaim('data-nl-2', claim?.metadata?.uid ?? '');
    await p.pods.forceDelete('nl-2', pod?.metadata?.uid ?? '');
    const after = await getObject<V1PersistentVolumeClaim>(client, claimPath);
    assert.ok(after === undefined || after.metadata?.deletionTimestamp !== undefined, JSON.stringify(after?.metadata));
    assert.equal(await getObject<V1Pod>(client, podPath), undefined, 'a pod with no grace period is gone at once');
    // Gone already: done, no error.
    await p.pods.forceDelete('nl-2', pod?.metadata?.uid ?? '');
    await p.nodeLoss.deleteClaim('data-nl-9', 'x');
  });
});
