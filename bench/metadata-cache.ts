// What the ownership check's metadata-only caches cost (docs/controller-performance.md): a namespace
// with many objects that are not recon8s's (10,000 ConfigMaps by default, each with a few KiB of data)
// and some that are (labelled managed-by=recon8s), watched the way the controller watches them. Prints
// the heap the cache holds, the bytes its list brought, and the same for a cache holding the foreign
// objects whole (what recon8s must not do). Needs --expose-gc: `npm run bench:metadata-cache`.
import { parseArgs } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { NOT_CHILD_SELECTOR, ownershipMetadata } from '../lib/controller/watches.js';
import { createInformer } from '../lib/informer/index.js';
import type { Informer, InformerOptions } from '../lib/informer/index.js';
import { createKubeClient } from '../lib/kube/index.js';
import type { KubeClient } from '../lib/kube/index.js';
import { startControlPlane } from '../test/controlplane/index.js';
import { runPool } from './pool.js';

const { values } = parseArgs({
  options: {
    foreign: { type: 'string', default: '10000' },
    ours: { type: 'string', default: '1000' },
    'data-bytes': { type: 'string', default: '2048' },
  },
});
const foreign = Number(values.foreign);
const ours = Number(values.ours);
const dataBytes = Number(values['data-bytes']);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:metadata-cache)');

const heapMiB = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

/** The heap an informer's store holds once synced, and the bytes its list brought. */
async function measure(
  client: KubeClient,
  label: string,
  opts: Partial<InformerOptions<KubernetesObject>>,
  namespace: string,
): Promise<void> {
  let listBytes = 0;
  const counting: KubeClient = {
    ...client,
    request: async (req) => {
      const r = await client.request(req);
      listBytes += r.body.length;
      return r;
    },
    requestJson: async <T>(req: Parameters<KubeClient['requestJson']>[0]) =>
      JSON.parse((await counting.request(req)).body) as T,
  };
  const before = heapMiB();
  const informer: Informer<KubernetesObject> = createInformer<KubernetesObject>({
    client: counting,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    namespace,
    ...opts,
  });
  await informer.start();
  const held = heapMiB() - before;
  const n = informer.store.size;
  console.log(
    `${label}: ${n} objects, heap ${held.toFixed(1)} MiB (${n ? Math.round((held * 2 ** 20) / n) : 0} B each), list ${(listBytes / 2 ** 20).toFixed(1)} MiB`,
  );
  await informer.stop();
}

const cp = await startControlPlane({ controllers: [] });
try {
  const client = createKubeClient({ kubeconfigPath: cp.kubeconfigPath });
  const namespace = 'busy';
  await client.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }),
    headers: { 'Content-Type': 'application/json' },
  });
  const create = (name: string, labels: Record<string, string>): Promise<unknown> =>
    client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, labels },
        data: { payload: 'x'.repeat(dataBytes) },
      }),
      headers: { 'Content-Type': 'application/json' },
    });
  const t0 = performance.now();
  const made = await runPool(
    Array.from({ length: foreign + ours }, (_, i) => i),
    32,
    async (i) => {
      await create(
        i < foreign ? `foreign-${i}` : `ours-${i}`,
        i < foreign ? { team: 'other' } : { 'app.kubernetes.io/managed-by': 'recon8s' },
      );
    },
  );
  if (made.errors.length) throw new Error(`${made.errors.length} creates failed: ${String(made.errors[0])}`);
  console.log(
    `created ${foreign} foreign and ${ours} recon8s ConfigMaps (${dataBytes} B of data each) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  await measure(
    client,
    'metadata-only cache (as the controller: managed-by!=recon8s, ownership fields only)',
    { metadataOnly: true, labelSelector: NOT_CHILD_SELECTOR, transform: ownershipMetadata },
    namespace,
  );
  await measure(client, 'metadata-only, every field of metadata', { metadataOnly: true }, namespace);
  await measure(client, 'whole objects (what recon8s must not hold)', { labelSelector: NOT_CHILD_SELECTOR }, namespace);
  await client.close();
} finally {
  await cp.stop();
}
