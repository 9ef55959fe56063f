import assert from 'node:assert/strict';
import { valueOf } from '../../lib/observability/metrics.js';
import { request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import type { KubeConfig, KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { jsonLogger } from '../../lib/observability/logger.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
}
interface CustomResource {
  metadata: { name: string; uid: string; generation: number; labels?: Record<string, string> };
  status?: {
    observedGeneration?: number;
    conditions?: Condition[];
    readyReplicas?: number;
    replicas?: number;
    endpoint?: string;
    primaryEndpoint?: string;
    selector?: string;
  };
}

describe('controller (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let controller: Controller;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let objects: KubernetesObjectApi;
  const logLines: string[] = [];

  before(async function () {
    this.timeout(120_000);
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('controller');
    custom = kc.makeApiClient(CustomObjectsApi);
    apps = kc.makeApiClient(AppsV1Api);
    core = kc.makeApiClient(CoreV1Api);
    objects = KubernetesObjectApi.makeApiClient(kc);
    controller = await startTestController(controlPlane(), {
      namespaces: [ns],
      resyncPeriodMs: 3_000,
      logger: jsonLogger({ level: 'debug', write: (l) => logLines.push(l) }),
    });
  });
  after(async () => {
    await controller?.stop();
  });

  const createApp = (name: string, spec: Record<string, unknown>): Promise<object> =>
    custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'App', metadata: { name }, spec },
    });
  const getCr = async (plural: string, name: string): Promise<CustomResource> =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural,
      name,
    })) as CustomResource;
  const patchSpec = (plural: string, name: string, spec: Record<string, unknown>): Promise<object> =>
    custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace: ns, plural, name, body: { spec } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const deployment = (name: string): Promise<V1Deployment> => apps.readNamespacedDeployment({ namespace: ns, name });
  const condition = (cr: CustomResource, type: string): Condition | undefined =>
    cr.status?.conditions?.find((c) => c.type === type);
  const eventsFor = async (name: string): Promise<{ reason?: string; message?: string; type?: string }[]> =>
    (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })).items;
  /** What a Deployment controller would report for a finished rollout (none runs in this control plane). */
  const markRolledOut = async (name: string): Promise<void> => {
    const d = await deployment(name);
    const replicas = d.spec?.replicas ?? 1;
    await apps.patchNamespacedDeploymentStatus(
      {
        namespace: ns,
        name,
        body: {
          status: {
            observedGeneration: d.metadata?.generation,
            replicas,
            updatedReplicas: replicas,
            readyReplicas: replicas,
            availableReplicas: replicas,
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };

  describe('an App', () => {
    before(async () => {
      await createApp('web', {
        image: 'nginx:1.27',
        replicas: 2,
        ports: [{ name: 'http', port: 8080, targetPort: 80 }],
        env: [{ name: 'GREETING', value: 'hello' }],
      });
    });

    it('gets a Deployment and a Service owned by it, with ApplySet membership', async () => {
      const cr = await getCr('apps', 'web');
      await eventually(
        async () => {
          const d = await deployment('web');
          const svc = await core.readNamespacedService({ namespace: ns, name: 'web' });
          for (const o of [d, svc]) {
            assert.deepEqual(plain(o.metadata?.ownerReferences), [
              {
                apiVersion: `${GROUP}/${VERSION}`,
                kind: 'App',
                name: 'web',
                uid: cr.metadata.uid,
                controller: true,
                blockOwnerDeletion: true,
              },
            ]);
            assert.match(o.metadata?.labels?.['applyset.kubernetes.io/part-of'] ?? '', /^applyset-.+-v1$/);
          }
          assert.equal(d.spec?.replicas, 2);
          assert.deepEqual(
            svc.spec?.ports?.map((p) => [p.port, p.targetPort]),
            [[8080, 80]],
          );
        },
        { description: 'the children of App web' },
      );
      await eventually(
        async () => {
          const parent = await getCr('apps', 'web');
          assert.match(parent.metadata.labels?.['applyset.kubernetes.io/id'] ?? '', /^applyset-.+-v1$/);
        },
        { description: 'App web to be labelled as an ApplySet parent' },
      );
    });

    it('reports Ready only once the Deployment is rolled out, with observedGeneration and the endpoint', async () => {
      await eventually(
        async () => {
          const cr = await getCr('apps', 'web');
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
          assert.equal(condition(cr, 'Ready')?.status, 'False');
          assert.equal(condition(cr, 'Progressing')?.status, 'True');
          assert.equal(cr.status?.endpoint, `web.${ns}.svc:8080`);
        },
        { description: 'App web to report a rollout in progress' },
      );
      await markRolledOut('web');
      await eventually(
        async () => {
          const cr = await getCr('apps', 'web');
          assert.deepEqual([condition(cr, 'Ready')?.status, condition(cr, 'Ready')?.reason], ['True', 'Available']);
          assert.equal(condition(cr, 'Progressing')?.status, 'False');
          assert.equal(condition(cr, 'Degraded')?.status, 'False');
          assert.equal(cr.status?.readyReplicas, 2);
        },
        { description: 'App web to be Ready' },
      );
    });

    it('updates the Deployment when the spec changes', async () => {
      await patchSpec('apps', 'web', { replicas: 3, env: [{ name: 'GREETING', value: 'bonjour' }] });
      await eventually(
        async () => {
          const d = await deployment('web');
          assert.equal(d.spec?.replicas, 3);
          assert.deepEqual(plain(d.spec?.template.spec?.containers[0]?.env), [{ name: 'GREETING', value: 'bonjour' }]);
          const cr = await getCr('apps', 'web');
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
          assert.equal(condition(cr, 'Ready')?.status, 'False', 'a new rollout is not Ready yet');
        },
        { description: 'the Deployment to follow the spec' },
      );
    });

    it('reverts a field we own that another manager changed, and keeps fields it does not own', async () => {
      // Someone scales by hand and annotates: replicas is ours, the annotation is theirs.
      await objects.patch(
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: ns, annotations: { 'example.com/owner': 'team-a' } },
          spec: { replicas: 7 },
        } as KubernetesObject,
        undefined,
        undefined,
        'intruder',
        true,
        PatchStrategy.ServerSideApply,
      );
      await eventually(
        async () => {
          const d = await deployment('web');
          assert.equal(d.spec?.replicas, 3);
        },
        { description: 'replicas to be reverted to 3' },
      );
      await patchSpec('apps', 'web', { env: [{ name: 'GREETING', value: 'hallo' }] });
      await eventually(
        async () => {
          const d = await deployment('web');
          assert.equal(d.spec?.template.spec?.containers[0]?.env?.[0]?.value, 'hallo');
          assert.equal(d.metadata?.annotations?.['example.com/owner'], 'team-a');
        },
        { description: 'a foreign annotation to survive a spec change' },
      );
    });

    it('recreates a child deleted by hand', async () => {
      const before = await core.readNamespacedService({ namespace: ns, name: 'web' });
      await core.deleteNamespacedService({ namespace: ns, name: 'web' });
      await eventually(
        async () => {
          const svc = await core.readNamespacedService({ namespace: ns, name: 'web' });
          assert.notEqual(svc.metadata?.uid, before.metadata?.uid);
        },
        { description: 'Service web to be recreated' },
      );
    });

    it('prunes the Service when the ports are removed, and says so in an Event', async () => {
      await custom.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'apps',
          name: 'web',
          body: [{ op: 'remove', path: '/spec/ports' }],
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
      await eventually(
        async () => {
          await assert.rejects(
            core.readNamespacedService({ namespace: ns, name: 'web' }),
            (e: { code?: number }) => e.code === 404,
          );
          const cr = await getCr('apps', 'web');
          assert.equal(cr.status?.endpoint, undefined);
        },
        { description: 'Service web to be pruned' },
      );
      await eventually(
        async () => {
          assert.ok((await eventsFor('web')).some((e) => e.reason === 'Pruned' && /Service web/.test(e.message ?? '')));
        },
        { description: 'a Pruned event' },
      );
    });
  });

  describe('autoscaling', () => {
    it('leaves replicas to the HorizontalPodAutoscaler', async () => {
      await createApp('scaled', {
        image: 'nginx',
        resources: { requests: { cpu: '100m' } },
        autoscaling: { minReplicas: 2, maxReplicas: 6 },
      });
      await eventually(
        async () => {
          await apps.readNamespacedDeployment({ namespace: ns, name: 'scaled' });
        },
        { description: 'Deployment scaled' },
      );
      // The HPA controller (its own field manager) sets replicas through the scale subresource.
      await apps.patchNamespacedDeploymentScale(
        { namespace: ns, name: 'scaled', body: { spec: { replicas: 5 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await patchSpec('apps', 'scaled', { env: [{ name: 'A', value: '1' }] });
      await eventually(
        async () => {
          const d = await deployment('scaled');
          assert.equal(d.spec?.template.spec?.containers[0]?.env?.[0]?.value, '1');
          assert.equal(d.spec?.replicas, 5, "the autoscaler's replicas survive our apply");
          assert.ok(
            !d.metadata?.managedFields?.some(
              (m) => m.manager === 'recon8s' && JSON.stringify(m.fieldsV1).includes('"f:replicas"'),
            ),
            'recon8s does not own replicas',
          );
        },
        { description: "the Deployment to keep the autoscaler's replicas" },
      );
    });
  });

  describe('a quiet cluster', () => {
    it("sends no write request over a resync (the API server's own request counts)", async function () {
      this.timeout(90_000);
      await eventually(
        async () => {
          const cr = await getCr('apps', 'web');
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
        },
        { description: 'convergence before measuring' },
      );
      // Let in-flight work settle (status writes after the last changes), then measure a quiet window.
      await eventually(
        async () => assert.equal(await valueOf(controller.metrics.workqueue.depth, { name: 'recon8s' }), 0),
        { timeoutMs: 20_000 },
      );
      const writesBefore = await apiServerWrites(kc);
      const controllerWritesBefore = await controllerWrites(controller);
      const reconcilesBefore = await reconciles(controller);
      // resyncPeriodMs is 3 s: wait until every resource here has been reconciled again at least twice.
      await eventually(
        async () => {
          const n = await reconciles(controller);
          assert.ok(n >= reconcilesBefore + 6, `${n - reconcilesBefore} reconciles so far`);
        },
        { timeoutMs: 30_000, description: 'two resyncs' },
      );
      const writesAfter = await apiServerWrites(kc);
      assert.deepEqual(
        diffCounts(writesBefore, writesAfter),
        {},
        'write requests seen by the API server during resync',
      );
      assert.equal(await controllerWrites(controller), controllerWritesBefore);
    });
  });

  describe('a problem only the controller can judge', () => {
    it('reports a missing user-supplied Secret as a condition and an Event, and recovers when it appears', async () => {
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'mysqlclusters',
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'MySQLCluster',
          metadata: { name: 'orders' },
          spec: { replicas: 1, credentialsSecretName: 'orders-passwords' },
        },
      });
      await eventually(
        async () => {
          const cr = await getCr('mysqlclusters', 'orders');
          assert.deepEqual(
            [condition(cr, 'Degraded')?.status, condition(cr, 'Degraded')?.reason],
            ['True', 'CredentialsMissing'],
          );
          assert.match(condition(cr, 'Degraded')?.message ?? '', /orders-passwords/);
          assert.ok((await eventsFor('orders')).some((e) => e.type === 'Warning' && e.reason === 'CredentialsMissing'));
        },
        { description: 'a CredentialsMissing condition and Event' },
      );
      // The user's Secret is never created for them.
      await assert.rejects(
        core.readNamespacedSecret({ namespace: ns, name: 'orders-passwords' }),
        (e: { code?: number }) => e.code === 404,
      );
      await core.createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: { name: 'orders-passwords' },
          stringData: {
            'root-password': 'correct-horse-battery',
            'replication-password': 'staple-staple-staple',
            'admin-password': 'battery-horse-correct',
            'clone-password': 'horse-staple-battery',
            'backup-password': 'staple-battery-horse',
          },
        },
      });
      await custom.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'mysqlclusters',
          name: 'orders',
          body: { metadata: { annotations: { touched: 'now' } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await eventually(
        async () => {
          const cr = await getCr('mysqlclusters', 'orders');
          assert.equal(condition(cr, 'Degraded')?.status, 'False');
          assert.equal(cr.status?.primaryEndpoint, `orders-primary.${ns}.svc:3306`);
        },
        { description: 'the Degraded condition to clear' },
      );
      const secret = await core.readNamespacedSecret({ namespace: ns, name: 'orders-passwords' });
      assert.equal(secret.metadata?.ownerReferences, undefined, 'a user Secret is never owned');
    });

    it('reports an invalid spec (a probe on an undeclared port) and recovers when it is fixed', async () => {
      await createApp('probed', {
        image: 'nginx',
        ports: [{ name: 'http', port: 80 }],
        readinessProbe: { httpGet: { port: 'metrics' } },
      });
      await eventually(
        async () => {
          const cr = await getCr('apps', 'probed');
          assert.deepEqual(
            [condition(cr, 'Degraded')?.status, condition(cr, 'Degraded')?.reason],
            ['True', 'InvalidSpec'],
          );
          assert.match(
            condition(cr, 'Degraded')?.message ?? '',
            /spec\.readinessProbe: got .*"metrics".*, expected a probe port name/,
          );
          assert.ok((await eventsFor('probed')).some((e) => e.type === 'Warning' && e.reason === 'InvalidSpec'));
        },
        { description: 'an InvalidSpec condition and Event' },
      );
      await assert.rejects(deployment('probed'), (e: { code?: number }) => e.code === 404);
      await patchSpec('apps', 'probed', { readinessProbe: { httpGet: { port: 'http' } } });
      await eventually(
        async () => {
          await deployment('probed');
          const cr = await getCr('apps', 'probed');
          assert.equal(condition(cr, 'Degraded')?.status, 'False');
        },
        { description: 'App probed to recover' },
      );
    });
  });

  describe('generated credentials', () => {
    it('creates the Secret once and never shows a password in a condition, an Event or a log line', async () => {
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'mysqlclusters',
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'MySQLCluster',
          metadata: { name: 'db' },
          spec: { replicas: 2 },
        },
      });
      const secret = await eventually(() => core.readNamespacedSecret({ namespace: ns, name: 'db-credentials' }), {
        description: 'Secret db-credentials',
      });
      const passwords = Object.values(secret.data ?? {}).map((b64) => Buffer.from(b64, 'base64').toString('utf8'));
      assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
        'admin-password',
        'backup-password',
        'clone-password',
        'exporter-password',
        'replication-password',
        'root-password',
      ]);
      assert.equal(passwords.length, 6);
      assert.ok(passwords.every((p) => p.length >= 24));
      await eventually(
        async () => {
          await apps.readNamespacedStatefulSet({ namespace: ns, name: 'db' });
        },
        { description: 'StatefulSet db' },
      );
      // Touch the cluster: a reconcile must not regenerate the Secret.
      await patchSpec('mysqlclusters', 'db', { mysqlConf: { max_connections: '200' } });
      await eventually(
        async () => {
          const cm = await core.readNamespacedConfigMap({ namespace: ns, name: 'db-config' });
          assert.match(JSON.stringify(cm.data), /max_connections/);
        },
        { description: 'the config change' },
      );
      const again = await core.readNamespacedSecret({ namespace: ns, name: 'db-credentials' });
      assert.equal(again.metadata?.resourceVersion, secret.metadata?.resourceVersion);
      const cr = await getCr('mysqlclusters', 'db');
      const events = await core.listNamespacedEvent({ namespace: ns });
      const everywhere = [JSON.stringify(cr.status), JSON.stringify(events.items), ...logLines].join('\n');
      for (const p of passwords) assert.ok(!everywhere.includes(p), 'a generated password leaked');
    });
  });
});

/** A client-node model instance as plain JSON, for deep comparison. */
const plain = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY', 'CREATE', 'UPDATE']);
const OUR_RESOURCES = new Set([
  'apps',
  'mysqlclusters',
  'deployments',
  'services',
  'configmaps',
  'statefulsets',
  'horizontalpodautoscalers',
  'poddisruptionbudgets',
  'cronjobs',
  'networkpolicies',
  'events',
  'secrets',
]);

/** `apiserver_request_total` of write verbs on the resources the controller touches, by verb/resource/subresource/code. */
async function apiServerWrites(kc: KubeConfig): Promise<Record<string, number>> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('no cluster');
  const opts: RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const text = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(`${server}/metrics`, opts, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!WRITE_VERBS.has(labels.verb ?? '') || !OUR_RESOURCES.has(labels.resource ?? '')) continue;
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''} ${labels.code}`;
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

function diffCounts(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v !== (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
}

async function controllerWrites(c: Controller): Promise<number> {
  return (await c.metrics.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('rest_client_requests_total{') && /method="(POST|PUT|PATCH|DELETE)"/.test(l))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function reconciles(c: Controller): Promise<number> {
  return (await c.metrics.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('controller_runtime_reconcile_total{'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}
