import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import { runCli } from '../support/run.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, freshRestrictedNamespace, useSharedNode } from './cluster.js';

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
  status?: { observedGeneration?: number; readyReplicas?: number; conditions?: Condition[] };
}

/**
 * An App on the real node, with the controller running: its pods start under Pod Security "restricted"
 * (the defaults recon8s promises), its Service answers, a new image rolls out with the status following
 * the real rollout, and deleting it removes everything.
 */
describe('an App on the real node', function () {
  this.timeout(180_000);
  const node = useSharedNode();
  let ns: string;
  let controller: Controller;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let apps: AppsV1Api;

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    const kc = node().kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    ns = await freshRestrictedNamespace(node(), 'app');
    controller = await startTestController(node(), { namespaces: [ns], resyncPeriodMs: 30_000 });
  });
  after(async () => {
    await controller?.stop();
    await discardNamespace(node(), ns);
  });

  const getApp = async (): Promise<AppResource> =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name: 'web',
    })) as AppResource;
  const ready = (app: AppResource): Condition | undefined => app.status?.conditions?.find((c) => c.type === 'Ready');
  /** What a client pod gets from the App's Service, by name (cluster DNS) through its ClusterIP. */
  const fetchThroughService = async (): Promise<string> => {
    const { stdout } = await node().kubectl([
      'exec',
      '-n',
      ns,
      'client',
      '--',
      'bash',
      '-c',
      `exec 3<>/dev/tcp/web.${ns}.svc.cluster.local/80 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`,
    ]);
    return stdout;
  };

  it('runs its pods under "restricted" and answers through its Service', async () => {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'App',
        metadata: { name: 'web' },
        spec: {
          image: node().images.web,
          imagePullPolicy: 'Never',
          replicas: 2,
          ports: [{ name: 'http', port: 80, targetPort: 8080 }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
          resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
        },
      },
    });
    // A client in the same restricted namespace, to call the Service from inside the pod network.
    await node().kubectl(
      ['apply', '-n', ns, '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'client' },
        spec: {
          securityContext: {
            runAsUser: 999,
            runAsGroup: 999,
            runAsNonRoot: true,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'client',
              image: node().images.mysql,
              imagePullPolicy: 'Never',
              command: ['sleep', 'infinity'],
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      }),
    );
    await eventually(
      async () => {
        const app = await getApp();
        assert.equal(ready(app)?.status, 'True', JSON.stringify(app.status));
        assert.equal(app.status?.readyReplicas, 2);
        assert.equal(app.status?.observedGeneration, app.metadata.generation);
      },
      { timeoutMs: 120_000, description: 'App web Ready with 2 pods' },
    );
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/instance=web' });
    assert.equal(pods.items.filter((p) => p.status?.phase === 'Running').length, 2);
    await eventually(async () => assert.match(await fetchThroughService(), /recon8s-web version=1 host=web-/), {
      timeoutMs: 60_000,
      description: 'an answer through the Service',
    });
  });

  it('rolls out a new image, with status following the real rollout', async () => {
    const before = await getApp();
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        name: 'web',
        body: { spec: { image: node().images.webV2 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // The controller sees the rollout under way before it sees it done.
    await eventually(
      async () => {
        const app = await getApp();
        assert.equal(app.status?.observedGeneration, before.metadata.generation + 1);
      },
      { timeoutMs: 30_000, description: 'the new generation observed' },
    );
    await eventually(
      async () => {
        const app = await getApp();
        assert.equal(ready(app)?.status, 'True', JSON.stringify(app.status?.conditions));
        assert.equal(app.status?.readyReplicas, 2);
        const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'web' });
        assert.equal(deployment.status?.updatedReplicas, 2);
        assert.equal(deployment.status?.replicas, 2, 'old pods are gone');
      },
      { timeoutMs: 120_000, description: 'the rollout to finish and status to say Ready' },
    );
    // kube-proxy may still route to a deleted old pod for a moment (each such try takes seconds to fail).
    await eventually(async () => assert.match(await fetchThroughService(), /recon8s-web version=2 /), {
      timeoutMs: 90_000,
      description: 'the new version answering',
    });
  });

  const getNamed = async (name: string): Promise<AppResource> =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name,
    })) as AppResource;
  const degraded = (app: AppResource): Condition | undefined =>
    app.status?.conditions?.find((c) => c.type === 'Degraded');
  const appYaml = (name: string, spec: Record<string, unknown>): string =>
    JSON.stringify({ apiVersion: `${GROUP}/${VERSION}`, kind: 'App', metadata: { name, namespace: ns }, spec });

  it('counts only updated pods as READY while a rollout is stuck on an image that does not exist, and names the pod', async () => {
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        name: 'web',
        body: { spec: { image: 'recon8s.test/does-not-exist:1' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const app = await getApp();
        // The two old pods still serve; the new one cannot start: 0 of the current spec are ready.
        assert.equal(app.status?.readyReplicas, 0, JSON.stringify(app.status));
        assert.equal(degraded(app)?.reason, 'ImagePullFailed');
        assert.match(
          degraded(app)?.message ?? '',
          /^pod web-[a-z0-9]+-[a-z0-9]+: ErrImageNeverPull \(container app\): Container image "recon8s\.test\/does-not-exist:1" is not present with pull policy of Never$/,
        );
        assert.match(
          ready(app)?.message ?? '',
          /^0\/2 updated replicas available \(1 updated, 2 old still available\); pod web-/,
        );
      },
      { timeoutMs: 60_000, description: 'READY 0 and Degraded naming the new pod' },
    );
    const { stdout } = await node().kubectl(['get', 'apps.recon8s.dev', 'web', '-n', ns, '--no-headers']);
    assert.match(stdout, /^web\s+recon8s\.test\/does-not-exist:1\s+2\s+0\s+ImagePullFailed\s+ImagePullFailed\s/);
    // Back to the image that runs, for the test after this one.
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        name: 'web',
        body: { spec: { image: node().images.webV2 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  });

  it('names a pod whose image does not exist and one no node can hold, in Degraded, an Event and recon8s apply --timeout', async () => {
    const small = { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } };
    const specs = {
      noimage: { image: 'recon8s.test/does-not-exist:1', imagePullPolicy: 'Never', resources: small },
      // 64 cores on a 2-core node.
      toobig: {
        image: node().images.web,
        imagePullPolicy: 'Never',
        resources: { requests: { cpu: '64', memory: '16Mi' }, limits: { memory: '64Mi' } },
      },
    };
    for (const [name, spec] of Object.entries(specs))
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'App', metadata: { name }, spec },
      });
    const expected = {
      noimage: [
        'ImagePullFailed',
        /^pod noimage-[a-z0-9]+-[a-z0-9]+: ErrImageNeverPull \(container app\): Container image "recon8s\.test\/does-not-exist:1" is not present with pull policy of Never$/,
      ],
      toobig: [
        'PodUnschedulable',
        /^pod toobig-[a-z0-9]+-[a-z0-9]+: Unschedulable: 0\/1 nodes are available: 1 Insufficient cpu\.$/,
      ],
    } as const;
    await eventually(
      async () => {
        for (const [name, [reason, message]] of Object.entries(expected)) {
          const app = await getNamed(name);
          assert.deepEqual([degraded(app)?.status, degraded(app)?.reason], ['True', reason], name);
          assert.match(degraded(app)?.message ?? '', message);
          assert.equal(ready(app)?.reason, reason);
          const events = await core.listNamespacedEvent({
            namespace: ns,
            fieldSelector: `involvedObject.name=${name}`,
          });
          assert.deepEqual(
            events.items.filter((e) => e.reason === reason).map((e) => [e.type, e.involvedObject.kind]),
            [['Warning', 'App']],
            `one ${reason} Event on App ${name}`,
          );
        }
      },
      { timeoutMs: 60_000, description: 'Degraded, Ready and an Event naming each pod and why it cannot run' },
    );
    const r = runCli(['apply', '-f', '-', '--timeout', '10s'], {
      input: Object.entries(specs)
        .map(([name, spec]) => appYaml(name, spec))
        .join('\n---\n'),
      env: { KUBECONFIG: node().kubeconfigPath },
    });
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stderr,
      /^ {2}app\/noimage: Ready=False \(ImagePullFailed: 0\/1 updated replicas available \(1 updated\); pod noimage-\S+: ErrImageNeverPull \(container app\): Container image "recon8s\.test\/does-not-exist:1" is not present with pull policy of Never\)$/m,
    );
    assert.match(
      r.stderr,
      /^ {2}app\/toobig: Ready=False \(PodUnschedulable: 0\/1 updated replicas available \(1 updated\); pod toobig-\S+: Unschedulable: 0\/1 nodes are available: 1 Insufficient cpu\.\)$/m,
    );
    for (const name of Object.keys(specs))
      await custom.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'apps',
        name,
      });
  });

  it('removes everything when the App is deleted', async () => {
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'apps',
      name: 'web',
      body: { propagationPolicy: 'Foreground' },
    });
    await eventually(
      async () => {
        const [deployments, services, pods] = await Promise.all([
          apps.listNamespacedDeployment({ namespace: ns }),
          core.listNamespacedService({ namespace: ns }),
          core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/instance=web' }),
        ]);
        assert.deepEqual([deployments.items.length, services.items.length, pods.items.length], [0, 0, 0]);
      },
      { timeoutMs: 120_000, description: 'the Deployment, Service and pods to be gone' },
    );
  });
});
