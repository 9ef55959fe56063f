import assert from 'node:assert/strict';
import type { KubeConfig, V1Container, V1ContainerStatus, V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { runCli, runCliHere } from '../support/run.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';
import { kubectl } from './support/kubectl.js';
import type { CustomResource, ResourceHelpers } from './support/resources.js';
import { conditionOf, resourceHelpers } from './support/resources.js';

/**
 * The wiring from a pod's status to its resource's status, Events and the CLI: this control plane has
 * no kubelet and no workload controllers, so the test does what they would (a ReplicaSet, a pod, the
 * pod status the kubelet writes, copied from the real node). What the kubelet really says is
 * test/e2e/app.test.ts's; what recon8s makes of every state is test/unit/pod-problems.test.ts's.
 */
describe('pods that cannot run, in status (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let controller: Controller;
  let resources: ResourceHelpers;
  let apps: AppsV1Api;
  let core: CoreV1Api;

  before(async function () {
    this.timeout(120_000);
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('pod-status');
    resources = resourceHelpers(kc, ns);
    apps = kc.makeApiClient(AppsV1Api);
    core = kc.makeApiClient(CoreV1Api);
    controller = await startTestController(controlPlane(), { namespaces: [ns], resyncPeriodMs: 2_000 });
  });
  after(async () => {
    await controller?.stop();
  });

  const owner = (kind: string, o: { metadata?: { name?: string; uid?: string } }): V1OwnerReference => ({
    apiVersion: 'apps/v1',
    kind,
    name: o.metadata?.name ?? '',
    uid: o.metadata?.uid ?? '',
    controller: true,
  });
  const container = (name: string): V1Container => ({ name, image: 'recon8s.test/does-not-exist:1' });
  const waiting = (name: string, reason: string, message: string): V1ContainerStatus => ({
    name,
    image: 'recon8s.test/does-not-exist:1',
    imageID: '',
    ready: false,
    restartCount: 0,
    started: false,
    state: { waiting: { reason, message } },
  });
  /** A pod as the workload controller makes it (metadata) with the status the kubelet would write. */
  const podWithStatus = async (
    namespace: string,
    metadata: V1Pod['metadata'],
    spec: V1Pod['spec'],
    status: V1Pod['status'],
  ): Promise<void> => {
    const name = metadata?.name ?? '';
    await core.createNamespacedPod({ namespace, body: { metadata, spec } });
    await core.patchNamespacedPodStatus(
      { namespace, name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  /** What the Deployment controller would do: the ReplicaSet of the App's Deployment and one pod of it. */
  const deploymentPod = async (namespace: string, app: string, pod: string, status: V1Pod['status']): Promise<void> => {
    const d = await eventually(() => apps.readNamespacedDeployment({ namespace, name: app }), {
      description: `Deployment ${app}`,
    });
    const hash = '6b8d9c7f5';
    const labels = { ...(d.spec?.template.metadata?.labels ?? {}), 'pod-template-hash': hash };
    const rs = await apps.createNamespacedReplicaSet({
      namespace,
      body: {
        metadata: { name: `${app}-${hash}`, labels, ownerReferences: [owner('Deployment', d)] },
        spec: {
          replicas: 1,
          selector: { matchLabels: { ...(d.spec?.selector.matchLabels ?? {}), 'pod-template-hash': hash } },
          template: { metadata: { labels }, spec: { containers: [container(app)] } },
        },
      },
    });
    await podWithStatus(
      namespace,
      { name: pod, labels, ownerReferences: [owner('ReplicaSet', rs)] },
      { containers: [container(app)] },
      status,
    );
  };
  const neverPull = {
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True' }],
    containerStatuses: [
      waiting(
        'badimg',
        'ErrImageNeverPull',
        'Container image "recon8s.test/does-not-exist:1" is not present with pull policy of Never',
      ),
    ],
  };
  const said =
    'pod badimg-6b8d9c7f5-x7k2p: ErrImageNeverPull (container badimg): Container image "recon8s.test/does-not-exist:1" is not present with pull policy of Never';

  it("names an App's pod that cannot pull its image in Degraded, Ready, kubectl get and one Event, and forgets it once it runs", async () => {
    await resources.create('apps', 'App', 'badimg', {
      image: 'recon8s.test/does-not-exist:1',
      imagePullPolicy: 'Never',
    });
    await deploymentPod(ns, 'badimg', 'badimg-6b8d9c7f5-x7k2p', neverPull);
    // A pod with the App's labels that no ReplicaSet of its Deployment controls is not its pod.
    const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'badimg' });
    await podWithStatus(
      ns,
      { name: 'badimg-impostor', labels: d.spec?.template.metadata?.labels },
      { containers: [container('badimg')] },
      { ...neverPull, containerStatuses: [waiting('badimg', 'ImagePullBackOff', 'impostor')] },
    );

    let cr: CustomResource | undefined;
    await eventually(
      async () => {
        cr = await resources.get('apps', 'badimg');
        assert.deepEqual(conditionOf(cr, 'Degraded'), {
          ...conditionOf(cr, 'Degraded'),
          status: 'True',
          reason: 'ImagePullFailed',
          message: said,
        });
        assert.equal(conditionOf(cr, 'Ready')?.reason, 'ImagePullFailed');
        assert.match(conditionOf(cr, 'Ready')?.message ?? '', new RegExp(`; ${said.replace(/[.()]/g, '\\$&')}$`));
      },
      { description: 'Degraded and Ready to name the pod that cannot pull its image' },
    );
    const r = kubectl(controlPlane(), ['get', 'apps.recon8s.dev', 'badimg', '-n', ns]);
    assert.match(r.stdout, /badimg\s+recon8s\.test\/does-not-exist:1\s+1\s+0\s+ImagePullFailed\s+ImagePullFailed\s/);
    // Several resyncs (2 s) see the same problem: still one Event.
    const reconciles = controller.metrics.reconcileTotal;
    const { valueOf } = await import('../../lib/observability/metrics.js');
    const before = await valueOf(reconciles, { controller: 'recon8s', result: 'success' });
    await eventually(
      async () => assert.ok((await valueOf(reconciles, { controller: 'recon8s', result: 'success' })) >= before + 3),
      {
        timeoutMs: 20_000,
        description: 'a few reconciles',
      },
    );
    const pulls = (await resources.events('badimg')).filter((e) => e.reason === 'ImagePullFailed');
    assert.deepEqual(
      pulls.map((e) => [e.type, e.message]),
      [['Warning', said]],
    );

    // The kubelet pulled it after all (someone imported the image) and the container runs.
    await core.patchNamespacedPodStatus(
      {
        namespace: ns,
        name: 'badimg-6b8d9c7f5-x7k2p',
        body: {
          status: {
            phase: 'Running',
            containerStatuses: [
              {
                ...waiting('badimg', '', ''),
                ready: true,
                started: true,
                state: { running: { startedAt: new Date() } },
              },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const now = await resources.get('apps', 'badimg');
        assert.equal(conditionOf(now, 'Degraded')?.reason, 'AsExpected', JSON.stringify(now.status));
      },
      { description: 'Degraded to clear once the pod runs' },
    );
  });

  it("names a MySQL member stuck in Init:ImagePullBackOff in Degraded, in the member's note and in recon8s status", async () => {
    await resources.create('mysqlclusters', 'MySQLCluster', 'stuckdb', { replicas: 1 });
    const sts = await eventually(() => apps.readNamespacedStatefulSet({ namespace: ns, name: 'stuckdb' }), {
      description: 'StatefulSet stuckdb',
    });
    const template = sts.spec?.template;
    const init = template?.spec?.initContainers?.[0]?.name ?? '';
    const main = template?.spec?.containers[0]?.name ?? '';
    const backoff =
      'Back-off pulling image "recon8s.test/mysql:does-not-exist": ErrImagePull: failed to pull and unpack image "recon8s.test/mysql:does-not-exist": failed to resolve reference "recon8s.test/mysql:does-not-exist": failed to do request: Head "https://recon8s.test/v2/mysql/manifests/does-not-exist": dial tcp: lookup recon8s.test on 10.255.255.53:53: no such host';
    await podWithStatus(
      ns,
      { name: 'stuckdb-0', labels: template?.metadata?.labels, ownerReferences: [owner('StatefulSet', sts)] },
      { initContainers: [container(init)], containers: [container(main)] },
      {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'True' }],
        initContainerStatuses: [waiting(init, 'ImagePullBackOff', backoff)],
        containerStatuses: [
          { ...waiting(main, 'PodInitializing', ''), state: { waiting: { reason: 'PodInitializing' } } },
        ],
      },
    );
    const note =
      'Init:ImagePullBackOff: failed to pull and unpack image "recon8s.test/mysql:does-not-exist": failed to resolve reference "recon8s.test/mysql:does-not-exist": failed to do request: Head "https://recon8s.test/v2/mysql/manifests/does-not-exist": dial tcp: lookup recon8s.test on 10.255.255.53:53: no such host';
    await eventually(
      async () => {
        const cr = (await resources.get('mysqlclusters', 'stuckdb')) as CustomResource & {
          status?: { members?: { name: string; message?: string }[] };
        };
        assert.equal(conditionOf(cr, 'Degraded')?.reason, 'ImagePullFailed');
        assert.equal(
          conditionOf(cr, 'Degraded')?.message,
          `pod stuckdb-0: Init:ImagePullBackOff (container ${init}): ${note.slice('Init:ImagePullBackOff: '.length)}`,
        );
        assert.deepEqual(
          cr.status?.members?.map((m) => [m.name, m.message]),
          [['stuckdb-0', note]],
        );
      },
      { description: "Degraded and the member's note to name the image that cannot be pulled" },
    );
    const status = await runCliHere(['status', 'stuckdb', '-n', ns, '--kubeconfig', controlPlane().kubeconfigPath]);
    assert.equal(status.code, 0, status.err);
    assert.match(
      status.out,
      /stuckdb-0\s+none\s+no\s+-\s+-\s+Init:ImagePullBackOff: failed to pull and unpack image "recon8s\.test\/mysql:does-not-exist"/,
    );
    assert.doesNotMatch(status.out, /ECONNREFUSED|no IP address/);
  });

  it('makes recon8s apply --timeout name the pod, with no controller running', async () => {
    const alone = await freshNamespace('pod-status-cli');
    const yaml = `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata: {name: badimg, namespace: ${alone}}
spec: {image: "recon8s.test/does-not-exist:1", imagePullPolicy: Never}
`;
    const env = { KUBECONFIG: controlPlane().kubeconfigPath };
    const created = runCli(['apply', '-f', '-', '--no-wait'], { input: yaml, env });
    assert.equal(created.status, 0, created.stderr);
    await deploymentPod(alone, 'badimg', 'badimg-6b8d9c7f5-x7k2p', neverPull);
    const r = runCli(['apply', '-f', '-', '--timeout', '5s'], { input: yaml, env });
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    assert.equal(
      r.stderr,
      `error: timed out after 5s waiting for 1 of 1 resource to be ready:\n  app/badimg: Ready=False (ImagePullFailed: 0/1 updated replicas available (0 updated); ${said})\n`,
    );
  });
});
