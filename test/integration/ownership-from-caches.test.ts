import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PolicyV1Api } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import type { RequestEvent } from '../../lib/kube/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';
import type { CustomResource } from './support/resources.js';
import { conditionOf, resourceHelpers } from './support/resources.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';
const SPEC = { image: 'nginx', replicas: 2, ports: [{ name: 'http', port: 80 }] };

/**
 * Whether a child's name is free, recon8s's or someone else's is read from the controller's caches (the
 * labelled children whole, every other object of the child types metadata only), never asked of the API
 * server: a new App costs no GET, in a namespace full of objects that are not recon8s's. And the rule the
 * caches serve is kept: an object of a child's name that recon8s does not control is never written.
 */
describe('ownership from the caches (real API server)', function () {
  this.timeout(90_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let controller: Controller | undefined;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  /** Every request the controller sent since the last reset, as `VERB resource[/subresource]`. */
  let asked: string[] = [];

  before(async function () {
    this.timeout(120_000);
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('ownership-caches');
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    // Others' objects of the child types, of other names than the Apps': what the metadata-only caches hold.
    for (let i = 0; i < 20; i++)
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: `theirs-${i}` }, data: { payload: 'x'.repeat(1024) } },
      });
    for (let i = 0; i < 3; i++)
      await core.createNamespacedService({
        namespace: ns,
        body: { metadata: { name: `theirs-${i}` }, spec: { selector: { team: 'theirs' }, ports: [{ port: 80 }] } },
      });
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'theirs', labels: { 'app.kubernetes.io/managed-by': 'Helm' } },
        spec: {
          selector: { matchLabels: { app: 'theirs' } },
          template: { metadata: { labels: { app: 'theirs' } }, spec: { containers: [{ name: 'c', image: 'c' }] } },
        },
      },
    });
    controller = await startTestController(controlPlane(), {
      namespaces: [ns],
      // No periodic reconcile inside a test: every request counted is a new App's.
      resyncPeriodMs: 30 * 60_000,
      onRequest: (e) => {
        const what = classify(e);
        if (what !== undefined) asked.push(what);
      },
    });
    await controller.synced();
  });
  after(async () => {
    await controller?.stop();
  });

  /** The GETs of single objects among what was asked (lists and watches are the caches'). */
  const objectReads = (): string[] => asked.filter((a) => a.startsWith('GET '));

  it('creates new Apps without a GET: per App one apply of its ApplySet metadata, one per child, one Event, one status', async () => {
    asked = [];
    const names = ['shop-0', 'shop-1', 'shop-2', 'shop-3', 'shop-4'];
    const resources = resourceHelpers(kc, ns);
    for (const name of names) await resources.create('apps', 'App', name, SPEC);
    await eventually(
      async () => {
        const listed = await custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'apps',
        });
        const items = (listed as { items: CustomResource[] }).items.filter((a) => names.includes(a.metadata.name));
        assert.equal(items.length, names.length);
        for (const cr of items) assert.equal(cr.status?.observedGeneration, cr.metadata.generation, cr.metadata.name);
        const applied = (await core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === 'Applied');
        assert.deepEqual(applied.map((e) => e.involvedObject.name).sort(), names);
      },
      { description: 'every App converged (status written, Applied Event recorded)' },
    );
    // Their children exist, controlled by them.
    const deployments = await apps.listNamespacedDeployment({ namespace: ns });
    const services = await core.listNamespacedService({ namespace: ns });
    const budgets = await kc.makeApiClient(PolicyV1Api).listNamespacedPodDisruptionBudget({ namespace: ns });
    for (const list of [deployments.items, services.items, budgets.items]) {
      const ours = list.filter((o) => o.metadata?.ownerReferences?.some((r) => r.kind === 'App' && r.controller));
      assert.deepEqual(ours.map((o) => o.metadata?.name).sort(), names);
    }

    assert.deepEqual(objectReads(), [], 'the controller read objects past its caches');
    // What stays, and why (docs/controller-performance.md): the ApplySet parent apply, which is also the
    // check that the App still exists before children are created; the children's applies; the Event a
    // user reads; the status, a subresource of its own (the API server ignores metadata sent to it).
    const writes = count(asked.filter((a) => !a.startsWith('LIST ') && !a.startsWith('WATCH ')));
    assert.deepEqual(writes, {
      'PATCH apps': names.length,
      'PATCH deployments': names.length,
      'PATCH services': names.length,
      'PATCH poddisruptionbudgets': names.length,
      'PATCH networkpolicies': names.length,
      'POST events': names.length,
      'PATCH apps/status': names.length,
    });
  });

  it('never writes an object of a child name that another controls, and knows whose it is without reading it', async () => {
    // A Service of the App's name, controlled by a ConfigMap (any owner but this App will do).
    const holder = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'holder' } } });
    const taken = await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: {
          name: 'taken',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'holder', uid: holder.metadata?.uid ?? '', controller: true },
          ],
        },
        spec: { selector: { team: 'holder' }, ports: [{ port: 9999 }] },
      },
    });
    asked = [];
    await resourceHelpers(kc, ns).create('apps', 'App', 'taken', SPEC);
    await eventually(
      async () => {
        const listed = await custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'apps',
          fieldSelector: 'metadata.name=taken',
        });
        const [cr] = (listed as { items: CustomResource[] }).items;
        assert.ok(cr);
        const degraded = conditionOf(cr, 'Degraded');
        assert.deepEqual([degraded?.status, degraded?.reason], ['True', 'OwnershipConflict']);
        assert.match(degraded?.message ?? '', /Service taken exists and is controlled by ConfigMap holder/);
      },
      { description: 'App taken to report the Service it may not write' },
    );
    // What is not in the way converges.
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'taken' });
    assert.equal(deployment.metadata?.ownerReferences?.[0]?.kind, 'App');

    const service = await core.readNamespacedService({ namespace: ns, name: 'taken' });
    assert.equal(service.metadata?.resourceVersion, taken.metadata?.resourceVersion, 'the Service was written');
    assert.deepEqual(
      service.metadata?.ownerReferences?.map((r) => `${r.kind}/${r.name}`),
      ['ConfigMap/holder'],
    );
    assert.equal(service.metadata?.labels, undefined);
    assert.ok(!asked.includes('PATCH services'), 'an apply of the Service was sent');
    assert.deepEqual(objectReads(), [], 'the controller read objects past its caches');
  });
});

/**
 * `VERB resource[/subresource]` of a request to a namespaced resource, as the API server names it (GET
 * of one object, LIST, WATCH, or the HTTP method of a write); undefined for anything else (/metrics, the
 * Lease is not asked for here: no leader election).
 */
function classify(e: RequestEvent): string | undefined {
  const [path = '', query = ''] = e.path.split('?');
  const parts = path.split('/').filter(Boolean);
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : undefined;
  if (rest?.[0] !== 'namespaces' || rest.length < 3) return undefined;
  const [, , resource, name, sub] = rest;
  const what = `${resource ?? ''}${sub ? `/${sub}` : ''}`;
  if (e.method !== 'GET') return `${e.method} ${what}`;
  if (name !== undefined) return `GET ${what}/${name}`;
  return new URLSearchParams(query).get('watch') === 'true' ? `WATCH ${what}` : `LIST ${what}`;
}

function count(items: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[i] = (out[i] ?? 0) + 1;
  return out;
}
