import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import { render } from '../../constructs/index.js';
import type { Recon8sResource } from '../../constructs/index.js';
import { ChildApplier } from '../../lib/controller/apply-children.js';
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
      const live: LiveObject = await applier.apply(service);
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
});
