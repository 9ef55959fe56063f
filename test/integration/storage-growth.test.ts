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
import type { Controller } from '../../lib/controller/manager.js';
import { DEFAULT_CONTROLLERS, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane } from '../controlplane/index.js';
import { SHARED_CONTROL_PLANE_HOOK_TIMEOUT_MS, freshNamespace } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';

/**
 * "storage.size may grow": a StatefulSet's claim templates are immutable, so the controller grows
 * the bound claims and re-creates the StatefulSet around its pods. Needs its own control plane with
 * the StatefulSet controller (creates the claims) and the PV binder (binds them: only bound claims
 * may grow), plus a StorageClass that allows expansion.
 */
describe('growing MySQL storage (real API server, StatefulSet and PV controllers)', function () {
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
});
