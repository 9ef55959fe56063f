import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  StorageV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubernetesObject, Recon8sResource } from '../../constructs/index.js';
import { render } from '../../constructs/index.js';
import type { Controller } from '../../lib/controller/controller.js';
import { ensureCredentials } from '../../lib/controller/mysql-cluster/credentials-secret.js';
import type { CustomResource } from '../../lib/controller/kind-controller.js';
import { createKubeClient } from '../../lib/kube/index.js';
import { stampChildren } from '../../lib/reconcile/desired.js';
import { DEFAULT_CONTROLLERS, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane } from '../controlplane/index.js';
import { SHARED_CONTROL_PLANE_HOOK_TIMEOUT_MS, freshNamespace } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';

/**
 * A StatefulSet's immutable fields that recon8s may still change, for which the controller re-creates
 * the StatefulSet around its pods (lib/controller/mysql-cluster/statefulset-replacement.ts): claim
 * templates whose size grew ("storage.size may grow": it grows the bound claims first), and the pod
 * management policy of a StatefulSet an older recon8s made (OrderedReady, Parallel since issue 43).
 * Needs its own control plane with the StatefulSet controller (creates the pods and claims, adopts
 * orphans) and the PV binder (binds claims: only bound claims may grow), plus a StorageClass that
 * allows expansion.
 */
describe('re-creating a MySQL StatefulSet around its pods (real API server, StatefulSet and PV controllers)', function () {
  this.timeout(90_000);
  let controlPlane: ControlPlane;
  let kc: KubeConfig;
  let controller: Controller | undefined;
  let ns: string;

  before(async function () {
    this.timeout(SHARED_CONTROL_PLANE_HOOK_TIMEOUT_MS);
    controlPlane = await startControlPlane({
      controllers: [...DEFAULT_CONTROLLERS, 'statefulset', 'persistentvolume-binder', 'persistentvolume-expander'],
    });
    kc = controlPlane.kubeConfig();
    ns = await freshNamespace('storage', { controlPlane });
    const storage = kc.makeApiClient(StorageV1Api);
    await storage.createStorageClass({
      body: {
        metadata: { name: 'expandable' },
        provisioner: 'kubernetes.io/no-provisioner',
        allowVolumeExpansion: true,
        volumeBindingMode: 'Immediate',
      },
    });
    const core = kc.makeApiClient(CoreV1Api);
    await core.createPersistentVolume({
      body: {
        metadata: { name: 'pv-data-0' },
        spec: {
          storageClassName: 'expandable',
          capacity: { storage: '5Gi' },
          accessModes: ['ReadWriteOnce'],
          hostPath: { path: '/tmp/recon8s-pv-0' },
        },
      },
    });
    await storage.createStorageClass({
      body: {
        metadata: { name: 'fixed' },
        provisioner: 'kubernetes.io/no-provisioner',
        allowVolumeExpansion: false,
        volumeBindingMode: 'Immediate',
      },
    });
    for (const i of [0, 1]) {
      await core.createPersistentVolume({
        body: {
          metadata: { name: `pv-fixed-${i}` },
          spec: {
            storageClassName: 'fixed',
            capacity: { storage: '5Gi' },
            accessModes: ['ReadWriteOnce'],
            hostPath: { path: `/tmp/recon8s-pv-fixed-${i}` },
          },
        },
      });
    }
    controller = await startTestController(controlPlane, { namespaces: [ns] });
  });
  after(async () => {
    await controller?.stop();
    await controlPlane?.stop();
  });

  it('grows the bound claims and re-creates the StatefulSet without deleting its pods', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: { replicas: 1, storage: { size: '1Gi', storageClassName: 'expandable' } },
      },
    });
    const claim = await eventually(
      async () => {
        const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-db-0' });
        assert.equal(pvc.status?.phase, 'Bound');
        return pvc;
      },
      { timeoutMs: 30_000, description: 'claim data-db-0 to be created and bound' },
    );
    const pod = await eventually(() => core.readNamespacedPod({ namespace: ns, name: 'db-0' }), {
      timeoutMs: 30_000,
      description: 'pod db-0',
    });
    const before = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'db' });

    await custom.patchNamespacedCustomObject(
      {
        group: 'recon8s.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'mysqlclusters',
        name: 'db',
        body: { spec: { storage: { size: '2Gi' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    await eventually(
      async () => {
        const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-db-0' });
        assert.equal(pvc.spec?.resources?.requests?.storage, '2Gi');
        assert.equal(pvc.metadata?.uid, claim.metadata?.uid, 'the same claim, grown');
        const sts = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'db' });
        assert.notEqual(sts.metadata?.uid, before.metadata?.uid, 'the StatefulSet was re-created');
        assert.equal(sts.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '2Gi');
      },
      { timeoutMs: 45_000, description: 'the claim to grow and the StatefulSet to be re-created' },
    );
    const after = await core.readNamespacedPod({ namespace: ns, name: 'db-0' });
    assert.equal(after.metadata?.uid, pod.metadata?.uid, 'the pod survived (orphaned, then adopted)');
    const cr = (await custom.getNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      name: 'db',
    })) as { status?: { conditions?: { type: string; status: string; reason: string }[] } };
    assert.notEqual(cr.status?.conditions?.find((c) => c.type === 'Degraded')?.status, 'True');
  });

  it('reports a claim that cannot grow, still converges every other change, and grows once the class allows it', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    const patch = (body: Record<string, unknown>): Promise<object> =>
      custom.patchNamespacedCustomObject(
        { group: 'recon8s.dev', version: 'v1alpha1', namespace: ns, plural: 'mysqlclusters', name: 'fixed', body },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    type Cr = {
      metadata: { generation: number };
      status?: {
        observedGeneration?: number;
        conditions?: { type: string; status: string; reason: string; message: string }[];
      };
    };
    const getCr = async (): Promise<Cr> =>
      (await custom.getNamespacedCustomObject({
        group: 'recon8s.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'mysqlclusters',
        name: 'fixed',
      })) as Cr;
    await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'fixed' },
        spec: { replicas: 1, storage: { size: '1Gi', storageClassName: 'fixed' } },
      },
    });
    await eventually(
      async () => {
        const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-fixed-0' });
        assert.equal(pvc.status?.phase, 'Bound');
      },
      { timeoutMs: 30_000, description: 'claim data-fixed-0 bound' },
    );

    await patch({ spec: { storage: { size: '2Gi' } } });
    await eventually(
      async () => {
        const degraded = (await getCr()).status?.conditions?.find((c) => c.type === 'Degraded');
        assert.deepEqual([degraded?.status, degraded?.reason], ['True', 'StorageResizeRefused']);
        assert.match(degraded?.message ?? '', /PersistentVolumeClaim data-fixed-0 cannot grow to 2Gi/);
      },
      { timeoutMs: 30_000, description: 'a StorageResizeRefused condition naming the claim' },
    );
    const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=fixed' });
    assert.ok(events.items.some((e) => e.type === 'Warning' && e.reason === 'StorageResizeRefused'));

    // Not wedged: another change still reaches the StatefulSet, and status follows the new generation.
    await patch({ spec: { replicas: 2 } });
    await eventually(
      async () => {
        const sts = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'fixed' });
        assert.equal(sts.spec?.replicas, 2);
        assert.equal(
          sts.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage,
          '1Gi',
          'the templates keep the size the claims have',
        );
        const cr = await getCr();
        assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
      },
      { timeoutMs: 30_000, description: 'replicas 2 on the StatefulSet despite the refused growth' },
    );

    // The documented way forward: let the class expand; the next reconcile grows the claims.
    await kc
      .makeApiClient(StorageV1Api)
      .patchStorageClass(
        { name: 'fixed', body: { allowVolumeExpansion: true } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await patch({ metadata: { annotations: { 'example.com/retry': 'now' } } });
    await eventually(
      async () => {
        const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-fixed-0' });
        assert.equal(pvc.spec?.resources?.requests?.storage, '2Gi');
        const degraded = (await getCr()).status?.conditions?.find((c) => c.type === 'Degraded');
        assert.notEqual(degraded?.reason, 'StorageResizeRefused');
      },
      { timeoutMs: 45_000, description: 'the claim to grow once the class allows it' },
    );
  });

  it('replaces the OrderedReady StatefulSet of an older recon8s by a Parallel one, keeping every pod and claim', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    // What an older recon8s left: its StatefulSet, OrderedReady, with the pods it started. Made while no
    // controller runs (as during an upgrade), as that controller applied it: rendered, stamped, applied.
    await controller?.stop();
    controller = undefined;
    const cr = (await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'older' },
        spec: { replicas: 3 },
      },
    })) as Recon8sResource & { metadata: { uid: string } };
    const rendered = render(cr).find((o) => o.kind === 'StatefulSet');
    assert.ok(rendered, 'the cluster renders a StatefulSet');
    assert.equal((rendered.spec as { podManagementPolicy?: string }).podManagementPolicy, 'Parallel');
    const older: KubernetesObject = {
      ...rendered,
      spec: { ...(rendered.spec as Record<string, unknown>), podManagementPolicy: 'OrderedReady' },
    };
    const [stamped] = stampChildren([older], {
      apiVersion: 'recon8s.dev/v1alpha1',
      group: 'recon8s.dev',
      kind: 'MySQLCluster',
      name: 'older',
      namespace: ns,
      uid: cr.metadata.uid,
    });
    assert.ok(stamped);
    const client = createKubeClient({ kubeConfig: kc });
    try {
      // Its credentials Secret first, as it did (without it, the claims below would make the new
      // controller refuse to invent passwords for data that exists).
      const credentials = await ensureCredentials(client, cr as unknown as CustomResource);
      assert.equal(credentials.state, 'created');
      await client.apply(stamped.object);
    } finally {
      await client.close();
    }
    // No kubelet here: stand in for it for older-0 only. OrderedReady then creates older-1, and never
    // older-2 while older-1 is not Ready (what left a whole-cluster restart without its members).
    const pod = (name: string) => core.readNamespacedPod({ namespace: ns, name });
    await eventually(() => pod('older-0'), { timeoutMs: 30_000, description: 'pod older-0 (OrderedReady: the first)' });
    await core.patchNamespacedPodStatus(
      {
        namespace: ns,
        name: 'older-0',
        body: {
          status: {
            phase: 'Running',
            conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date() }],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(() => pod('older-1'), {
      timeoutMs: 30_000,
      description: 'pod older-1, once older-0 is Ready (OrderedReady)',
    });
    const before = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'older' });
    assert.equal(before.spec?.podManagementPolicy, 'OrderedReady');
    const pods = await Promise.all(['older-0', 'older-1'].map(pod));
    const claims = await Promise.all(
      ['data-older-0', 'data-older-1'].map((name) => core.readNamespacedPersistentVolumeClaim({ namespace: ns, name })),
    );
    await assert.rejects(pod('older-2'), 'OrderedReady starts no third member while the second is not Ready');

    // The upgraded controller.
    controller = await startTestController(controlPlane, { namespaces: [ns] });
    const after = await eventually(
      async () => {
        const sts = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'older' });
        assert.notEqual(sts.metadata?.uid, before.metadata?.uid, 'the StatefulSet was re-created');
        assert.equal(sts.spec?.podManagementPolicy, 'Parallel');
        // Parallel: the third member is created although the second is not Ready.
        await pod('older-2');
        return sts;
      },
      { timeoutMs: 60_000, description: 'a Parallel StatefulSet in place of the OrderedReady one, and older-2' },
    );
    for (const kept of pods) {
      const now = await eventually(
        async () => {
          const p = await pod(kept.metadata?.name ?? '');
          assert.equal(
            p.metadata?.ownerReferences?.find((r) => r.controller)?.uid,
            after.metadata?.uid,
            'adopted by the new StatefulSet',
          );
          return p;
        },
        { timeoutMs: 30_000, description: `pod ${kept.metadata?.name ?? ''} adopted by the new StatefulSet` },
      );
      assert.equal(now.metadata?.uid, kept.metadata?.uid, `pod ${kept.metadata?.name ?? ''} was never deleted`);
      assert.equal(now.metadata?.deletionTimestamp, undefined);
    }
    for (const kept of claims) {
      const now = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: kept.metadata?.name ?? '' });
      assert.equal(now.metadata?.uid, kept.metadata?.uid, `claim ${kept.metadata?.name ?? ''} kept`);
    }
    const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=older' });
    const recreated = events.items.find((e) => e.reason === 'StatefulSetRecreated');
    assert.match(recreated?.message ?? '', /podManagementPolicy OrderedReady → Parallel/);
    assert.ok(
      !events.items.some((e) => e.reason === 'ApplyFailed'),
      'the refused apply was never reported as a failure',
    );
  });
});
