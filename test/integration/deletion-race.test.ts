import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import { render } from '../../constructs/index.js';
import type { Recon8sResource } from '../../constructs/index.js';
import { CREATE_ONLY, ChildApplier } from '../../lib/controller/apply-children.js';
import { createKubeClient } from '../../lib/kube/index.js';
import { stampChildren } from '../../lib/reconcile/desired.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { installCrds } from './support/controller.js';

/**
 * The race behind "a deleted MySQLCluster's children came back": a reconcile judges a child against
 * the object it read, the garbage collector deletes that child (its owner is being deleted), then the
 * reconcile's apply arrives. Server-side apply creates what is missing, so that apply used to bring the
 * child back. Here the two steps are taken in that order, deterministically, against the real API
 * server: the apply carries the uid it was judged against, and the API server refuses it.
 */
describe('an apply never resurrects a child deleted after it was judged (real API server)', () => {
  const controlPlane = useSharedControlPlane();

  it('is refused (409) instead of re-creating the deleted child', async () => {
    await installCrds(controlPlane());
    const ns = await freshNamespace('race');
    const kc = controlPlane().kubeConfig();
    const client = createKubeClient({ kubeConfig: kc });
    const core = kc.makeApiClient(CoreV1Api);
    try {
      const applied: unknown = await client.apply({
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'racer', namespace: ns },
        spec: { image: 'nginx', ports: [{ name: 'http', port: 80 }] },
      });
      const cr = applied as Recon8sResource & { apiVersion: string; metadata: { uid: string } };
      const [service] = stampChildren(
        render(cr).filter((o) => o.kind === 'Service'),
        {
          apiVersion: cr.apiVersion,
          kind: 'App',
          group: 'recon8s.dev',
          namespace: ns,
          name: 'racer',
          uid: cr.metadata.uid,
        },
      );
      assert.ok(service);
      const applier = new ChildApplier(client);
      const live: LiveObject = await applier.apply(service, CREATE_ONLY);
      // The reconcile has judged the child (read it, decided to send it) ...
      assert.ok(live.metadata?.uid);
      // ... the garbage collector deletes it ...
      await core.deleteNamespacedService({ namespace: ns, name: 'racer' });
      // ... and the reconcile's apply arrives.
      await assert.rejects(
        applier.apply(service, live.metadata.uid),
        (e: { code?: number; body?: unknown }) => e.code === 409 && /uid mismatch/.test(String(e.body)),
      );
      await assert.rejects(
        core.readNamespacedService({ namespace: ns, name: 'racer' }),
        (e: { code?: number }) => e.code === 404,
        'the deleted Service came back',
      );
    } finally {
      await client.close();
    }
  });
  /**
   * The race the metadata-only caches leave open: the caches say no object has the child's name, then
   * someone else creates one, then the reconcile's apply (with force) arrives. It carries a
   * resourceVersion no object has, so the API server refuses it whatever exists, and creates the child
   * when nothing does.
   */
  it('never takes over an object someone else created after the caches were read, and still creates a missing one', async () => {
    await installCrds(controlPlane());
    const ns = await freshNamespace('race-create');
    const kc = controlPlane().kubeConfig();
    const client = createKubeClient({ kubeConfig: kc });
    const core = kc.makeApiClient(CoreV1Api);
    try {
      const appliedCr: unknown = await client.apply({
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'late', namespace: ns },
        spec: { image: 'nginx', ports: [{ name: 'http', port: 80 }] },
      });
      const cr = appliedCr as Recon8sResource & { apiVersion: string; metadata: { uid: string } };
      const children = stampChildren(render(cr), {
        apiVersion: cr.apiVersion,
        kind: 'App',
        group: 'recon8s.dev',
        namespace: ns,
        name: 'late',
        uid: cr.metadata.uid,
      });
      const service = children.find((c) => c.object.kind === 'Service');
      const deployment = children.find((c) => c.object.kind === 'Deployment');
      assert.ok(service && deployment);
      const applier = new ChildApplier(client);
      // The reconcile found no object named "late" in its caches; before its apply arrives, a user
      // creates a Service of that name (no owner, no label: nothing a conflict on ownerReferences catches).
      const theirs = await core.createNamespacedService({
        namespace: ns,
        body: { metadata: { name: 'late' }, spec: { selector: { team: 'mine' }, ports: [{ port: 9999 }] } },
      });
      await assert.rejects(
        applier.apply(service, CREATE_ONLY),
        (e: { code?: number }) => e.code === 409,
        'the apply went through',
      );
      const after = await core.readNamespacedService({ namespace: ns, name: 'late' });
      assert.equal(after.metadata?.resourceVersion, theirs.metadata?.resourceVersion, 'the Service was written');
      assert.equal(after.metadata?.ownerReferences, undefined, 'the Service was adopted');
      assert.deepEqual(after.spec?.selector, { team: 'mine' });
      // Where nothing has the name, the same precondition creates the child, owned by the App.
      const created = await applier.apply(deployment, CREATE_ONLY);
      assert.equal(created.metadata?.ownerReferences?.[0]?.uid, cr.metadata.uid);
    } finally {
      await client.close();
    }
  });
});
