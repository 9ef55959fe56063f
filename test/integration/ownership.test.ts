import assert from 'node:assert/strict';
import { valueOf } from '../../lib/observability/metrics.js';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  PolicyV1Api,
} from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';
import type { Condition, CustomResource, ResourceHelpers } from './support/resources.js';
import { conditionOf, resourceHelpers } from './support/resources.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';

/**
 * "Never touch what isn't ours": an object of a child's name that recon8s does not control — a user's,
 * another tool's, another recon8s resource's — is never modified, adopted or pruned; the resource says so.
 * And drift is judged on the fields recon8s owns only, with the API's list semantics: other managers'
 * containers, env entries and volumes beside ours are not drift.
 */
describe('ownership (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let controller: Controller | undefined;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let resources: ResourceHelpers;
  let apps: AppsV1Api;
  let objects: KubernetesObjectApi;

  before(async function () {
    this.timeout(120_000);
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('ownership');
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
    resources = resourceHelpers(kc, ns);
    apps = kc.makeApiClient(AppsV1Api);
    objects = KubernetesObjectApi.makeApiClient(kc);
    controller = await startTestController(controlPlane(), { namespaces: [ns], resyncPeriodMs: 3_000 });
  });
  after(async () => {
    await controller?.stop();
  });

  const create: ResourceHelpers['create'] = (...args) => resources.create(...args);
  const getCr: ResourceHelpers['get'] = (...args) => resources.get(...args);
  const events: ResourceHelpers['events'] = (...args) => resources.events(...args);
  const degraded = (cr: CustomResource): Condition | undefined => conditionOf(cr, 'Degraded');
  /** Applies as another tool would (its own field manager), returning the stored object. */
  const applyAs = (manager: string, o: Record<string, unknown>): Promise<KubernetesObject> =>
    objects.patch(
      { ...o, metadata: { ...(o.metadata as object), namespace: ns } } as KubernetesObject,
      undefined,
      undefined,
      manager,
      true,
      PatchStrategy.ServerSideApply,
    );

  it("leaves a user's Service and a Helm-style Deployment of the App's name alone, says so, and converges the rest", async function () {
    this.timeout(120_000);
    await applyAs('kubectl', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector: { team: 'mine' }, ports: [{ port: 9999 }] },
    });
    await applyAs('helm', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', labels: { 'app.kubernetes.io/managed-by': 'Helm' } },
      spec: {
        replicas: 5,
        selector: { matchLabels: { app: 'helm-web' } },
        template: {
          metadata: { labels: { app: 'helm-web' } },
          spec: { containers: [{ name: 'helm', image: 'helm-image' }] },
        },
      },
    });
    await create('apps', 'App', 'web', { image: 'nginx', replicas: 2, ports: [{ name: 'http', port: 80 }] });
    await eventually(
      async () => {
        const cr = await getCr('apps', 'web');
        assert.deepEqual([degraded(cr)?.status, degraded(cr)?.reason], ['True', 'OwnershipConflict']);
        assert.match(
          degraded(cr)?.message ?? '',
          /Deployment web exists and is controlled by no one \(written by helm\)/,
        );
        assert.match(
          degraded(cr)?.message ?? '',
          /Service web exists and is controlled by no one \(written by kubectl\)/,
        );
        assert.ok((await events('web')).some((e) => e.type === 'Warning' && e.reason === 'OwnershipConflict'));
        // What is not in the way still converges.
        await kc.makeApiClient(PolicyV1Api).readNamespacedPodDisruptionBudget({ namespace: ns, name: 'web' });
      },
      { description: 'an OwnershipConflict condition and Event, and the PodDisruptionBudget' },
    );
    const service = await core.readNamespacedService({ namespace: ns, name: 'web' });
    assert.deepEqual(service.spec?.selector, { team: 'mine' });
    assert.deepEqual(
      service.spec?.ports?.map((p) => p.port),
      [9999],
    );
    assert.equal(service.metadata?.ownerReferences, undefined, "the user's Service was adopted");
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'web' });
    assert.equal(deployment.spec?.replicas, 5);
    assert.deepEqual(
      deployment.spec?.template.spec?.containers.map((c) => c.name),
      ['helm'],
    );
    assert.equal(deployment.metadata?.ownerReferences, undefined);
    const told = (await events('web')).map((e) => e.message ?? '').join('\n');
    assert.doesNotMatch(told, /created (Service|Deployment) web/, 'an Event claims recon8s created what it did not');

    // Deleting the App never takes the user's objects with it.
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name: 'web',
    });
    await eventually(
      async () => {
        const left = await kc
          .makeApiClient(PolicyV1Api)
          .readNamespacedPodDisruptionBudget({ namespace: ns, name: 'web' })
          .catch(() => undefined);
        assert.equal(left, undefined, `PodDisruptionBudget web: ${JSON.stringify(left?.metadata)}`);
        // The garbage collector learns of a new CRD's kind on its own discovery period (30 s): allow for a fresh one.
      },
      { timeoutMs: 75_000, description: "the App's own PodDisruptionBudget to be collected" },
    );
    await core.readNamespacedService({ namespace: ns, name: 'web' });
    await apps.readNamespacedDeployment({ namespace: ns, name: 'web' });
  });

  it('lets an App and a MySQLCluster of the same name live side by side, and deleting one spares the other', async () => {
    await create('apps', 'App', 'db', { image: 'adminer', replicas: 2, ports: [{ name: 'http', port: 8080 }] });
    await create('mysqlclusters', 'MySQLCluster', 'db', { replicas: 2 });
    const policy = kc.makeApiClient(PolicyV1Api);
    await eventually(
      async () => {
        for (const plural of ['apps', 'mysqlclusters']) {
          const cr = await getCr(plural, 'db');
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation, plural);
          assert.equal(degraded(cr)?.status, 'False', `${plural}: ${degraded(cr)?.message}`);
        }
        await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'db' });
        await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'db-mysql' });
      },
      { description: 'both converged with a PodDisruptionBudget each' },
    );
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name: 'db',
    });
    await eventually(
      async () => {
        await assert.rejects(
          policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'db' }),
          (e: { code?: number }) => e.code === 404,
        );
      },
      { timeoutMs: 30_000, description: "the App's PodDisruptionBudget to be collected" },
    );
    const pdb = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'db-mysql' });
    assert.equal(pdb.metadata?.ownerReferences?.[0]?.kind, 'MySQLCluster');
  });

  it('reports a name two recon8s resources would both render, and never takes it from the first', async () => {
    await create('mysqlclusters', 'MySQLCluster', 'shop', { replicas: 1 });
    await eventually(() => core.readNamespacedService({ namespace: ns, name: 'shop-primary' }), {
      description: 'Service shop-primary',
    });
    const first = await core.readNamespacedService({ namespace: ns, name: 'shop-primary' });
    await create('apps', 'App', 'shop-primary', { image: 'proxy', ports: [{ name: 'sql', port: 3306 }] });
    await eventually(
      async () => {
        const cr = await getCr('apps', 'shop-primary');
        assert.equal(degraded(cr)?.reason, 'OwnershipConflict');
        assert.match(degraded(cr)?.message ?? '', /Service shop-primary exists and is controlled by MySQLCluster shop/);
      },
      { description: "the App to report the MySQLCluster's Service" },
    );
    // Resyncs (every 3 s) come and go: the Service stays the MySQLCluster's, untouched.
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const now = await core.readNamespacedService({ namespace: ns, name: 'shop-primary' });
    assert.equal(now.metadata?.resourceVersion, first.metadata?.resourceVersion, 'the Service was written');
  });

  it("takes other managers' containers, env entries and volumes beside its own for no drift: a cold restart sends no write", async function () {
    this.timeout(90_000);
    await create('apps', 'App', 'mesh', {
      image: 'nginx',
      replicas: 1,
      env: [{ name: 'MODE', value: 'prod' }],
      ports: [{ name: 'http', port: 80 }],
    });
    await eventually(
      async () => {
        const cr = await getCr('apps', 'mesh');
        assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
      },
      { description: 'App mesh converged' },
    );
    // A mutating webhook or a mesh injector would do this: its own container, env entry, volume and mount.
    const live = await apps.readNamespacedDeployment({ namespace: ns, name: 'mesh' });
    const ours = live.spec?.template.spec?.containers[0];
    await applyAs('injector', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'mesh' },
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'sidecar', image: 'proxy:1' },
              {
                name: ours?.name,
                env: [{ name: 'INJECTED', value: 'yes' }],
                volumeMounts: [{ name: 'certs', mountPath: '/certs' }],
              },
            ],
            volumes: [{ name: 'certs', emptyDir: {} }],
          },
        },
      },
    });
    await controller?.stop();
    const eventsBefore = (await events('mesh')).length;
    controller = await startTestController(controlPlane(), { namespaces: [ns], resyncPeriodMs: 3_000 });
    await controller.synced();
    // Two resyncs at least: every resource here reconciled from a cold cache, more than once.
    const reconciles = async (): Promise<number> =>
      controller ? valueOf(controller.metrics.reconcileTotal, { controller: 'recon8s', result: 'success' }) : 0;
    await eventually(
      async () => {
        const n = await reconciles();
        assert.ok(n >= 12, `${n} reconciles`);
      },
      { timeoutMs: 45_000, description: 'two resyncs' },
    );
    const writes = (await controller.metrics.registry.metrics())
      .split('\n')
      .filter(
        (l) =>
          l.startsWith('rest_client_requests_total{') &&
          /method="(POST|PUT|PATCH|DELETE)"/.test(l) &&
          !l.includes('code="201"'),
      );
    const patchCount = writes
      .filter((l) => l.includes('method="PATCH"'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    assert.equal(patchCount, 0, `PATCH requests after a cold restart: ${writes.join(' | ')}`);
    const after = await events('mesh');
    assert.equal(
      after.length,
      eventsBefore,
      `new Events: ${after
        .slice(eventsBefore)
        .map((e) => e.message)
        .join('; ')}`,
    );
    const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'mesh' });
    assert.deepEqual(d.spec?.template.spec?.containers.map((c) => c.name).sort(), [ours?.name, 'sidecar'].sort());
  });
});
