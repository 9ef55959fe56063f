// Creating an App creates pods: without a restriction an App may run as any ServiceAccount and read any
// Secret of its namespace. With the install's allow-lists (--app-service-accounts, --app-secrets) the
// controller, against a real API server, refuses an App that names anything else before anything of it
// is applied: Degraded/ReferenceNotAllowed naming the field and the value, one Warning Event, no
// Deployment, no write while nothing changes; an App that was running before the restriction keeps its
// Deployment untouched; a compliant spec is applied at once. (What the pods name: unit/app-reference-policy.test.ts.)
import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import type { RequestEvent } from '../../lib/kube/index.js';
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
}
interface AppResource {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

describe('App ⇒ pod, limited: the install allow-lists of ServiceAccounts and Secrets (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let ns: string;
  let controller: Controller | undefined;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  const requests: RequestEvent[] = [];

  before(async function () {
    this.timeout(120_000);
    const kc = controlPlane().kubeConfig();
    ns = await freshNamespace('app-refs');
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
  });
  after(async () => {
    await controller?.stop();
  });

  const start = async (policy: { appServiceAccounts?: string[]; appSecrets?: string[] }): Promise<void> => {
    await controller?.stop();
    controller = await startTestController(controlPlane(), {
      namespaces: [ns],
      resyncPeriodMs: 60_000,
      onRequest: (e) => requests.push(e),
      ...policy,
    });
  };
  const createApp = (name: string, spec: Record<string, unknown>): Promise<unknown> =>
    custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'App',
        metadata: { name },
        spec: { image: 'nginx:1.27', ...spec },
      },
    });
  const getApp = async (name: string): Promise<AppResource> =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name,
    })) as AppResource;
  const degraded = async (name: string): Promise<Condition | undefined> =>
    (await getApp(name)).status?.conditions?.find((c) => c.type === 'Degraded');
  const deployment = (name: string): Promise<unknown> => apps.readNamespacedDeployment({ namespace: ns, name });
  const events = async (name: string, reason: string): Promise<string[]> =>
    (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })).items
      .filter((e) => e.reason === reason)
      .map((e) => e.message ?? '');
  const refusedWith = (name: string, message: RegExp): Promise<Condition> =>
    eventually(
      async () => {
        const c = await degraded(name);
        assert.equal(c?.status, 'True', JSON.stringify(c));
        assert.equal(c?.reason, 'ReferenceNotAllowed');
        assert.match(c?.message ?? '', message);
        const recorded = await events(name, 'ReferenceNotAllowed');
        assert.equal(recorded.length, 1, recorded.join('\n'));
        assert.match(recorded[0] ?? '', message);
        return c;
      },
      { timeoutMs: 20_000, description: `App ${name} to be refused` },
    );

  it('leaves an App that ran before the restriction as it was, and reports it', async () => {
    await start({});
    await createApp('legacy', { serviceAccountName: 'admin' });
    const before = (await eventually(() => deployment('legacy'), {
      description: 'the unrestricted controller to apply App legacy',
    })) as { metadata: { resourceVersion: string } };
    await start({ appServiceAccounts: [`${ns}/web`], appSecrets: [`${ns}/web-config`] });
    await refusedWith('legacy', /^spec\.serviceAccountName: ServiceAccount "admin" is not allowed/);
    const after = (await deployment('legacy')) as { metadata: { resourceVersion: string } };
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'the Deployment is not touched');
  });

  it('refuses an App running as a ServiceAccount outside the list: condition, one Event, no Deployment', async () => {
    await createApp('as-admin', { serviceAccountName: 'admin' });
    const c = await refusedWith(
      'as-admin',
      new RegExp(
        `^spec\\.serviceAccountName: ServiceAccount "admin" is not allowed: this operator's --app-service-accounts says Apps may name only the ServiceAccounts ${ns}/web$`,
      ),
    );
    assert.ok(c);
    await assert.rejects(deployment('as-admin'), (e: { code?: number }) => e.code === 404);
  });

  it('refuses an App reading a Secret outside the list in env or as an image pull Secret, naming each', async () => {
    await createApp('reads-root', {
      env: [
        { name: 'ALLOWED', valueFrom: { secretKeyRef: { name: 'web-config', key: 'k' } } },
        { name: 'ROOT', valueFrom: { secretKeyRef: { name: 'db-credentials', key: 'root-password' } } },
      ],
      imagePullSecrets: ['registry'],
    });
    await refusedWith(
      'reads-root',
      /^spec\.imagePullSecrets\[0\]: Secret "registry" is not allowed: .*; spec\.env\[ROOT\]\.valueFrom\.secretKeyRef\.name: Secret "db-credentials" is not allowed: this operator's --app-secrets says Apps may name only the Secrets .*\/web-config$/,
    );
    await assert.rejects(deployment('reads-root'), (e: { code?: number }) => e.code === 404);
  });

  it('sends nothing more while nothing changes (no retry loop of any speed)', async () => {
    const from = requests.length;
    await new Promise((r) => setTimeout(r, 3000));
    assert.ok(from > 0, "the controller's requests are seen");
    const writes = requests.slice(from).filter((e) => e.method !== 'GET');
    assert.deepEqual(
      writes.map((e) => `${e.method} ${e.path}`),
      [],
    );
    assert.equal((await events('as-admin', 'ReferenceNotAllowed')).length, 1);
  });

  it('applies an App that names only what is allowed, and a refused one once its spec complies', async () => {
    await createApp('web', {
      serviceAccountName: 'web',
      env: [{ name: 'CONFIG', valueFrom: { secretKeyRef: { name: 'web-config', key: 'k' } } }],
    });
    await eventually(() => deployment('web'), { description: 'the compliant App to be applied' });
    assert.equal((await degraded('web'))?.status, 'False');
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        name: 'as-admin',
        body: { spec: { serviceAccountName: null } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        await deployment('as-admin');
        const app = await getApp('as-admin');
        assert.equal(app.status?.observedGeneration, app.metadata.generation);
        assert.notEqual((await degraded('as-admin'))?.reason, 'ReferenceNotAllowed');
      },
      { description: 'the App to be applied once it runs as the namespace default' },
    );
  });
});
