// A MySQL member's report (a container's termination message, see lib/controller/member-reports.ts)
// becomes one Event on its MySQLCluster, recorded by the controller from the pod status the kubelet
// writes. No kubelet runs here: the pod status is written as the kubelet would.
import assert from 'node:assert/strict';
import type { CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';

const MESSAGE =
  'db-0 was re-provisioned by clone from db-primary: the primary no longer has the binary logs this replica needs (Got fatal error 1236 from source when reading data from binary log). Its previous data directory is kept until the clone replicates.';

describe('MySQL member reports (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let core: CoreV1Api;
  let controller: Controller | undefined;

  before(async function () {
    this.timeout(120_000);
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('member-reports');
    core = kc.makeApiClient(CoreV1Api);
    controller = await startTestController(controlPlane(), { namespaces: [ns] });
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'mysqlclusters',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: { replicas: 1 },
      },
    });
    // A member's pod as the StatefulSet would create it, by its labels (it stays Pending: there is no node).
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: {
          name: 'db-0',
          labels: {
            'app.kubernetes.io/managed-by': 'recon8s',
            'app.kubernetes.io/name': 'mysql',
            'app.kubernetes.io/instance': 'db',
            'app.kubernetes.io/component': 'database',
          },
        },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 999, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'agent',
              image: 'mysql:8.4',
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      },
    });
  });
  after(async () => {
    await controller?.stop();
  });

  /** What the kubelet writes once the agent container exited with `message` and was started again. */
  const terminated = (message: string, containerId: string, restartCount: number) =>
    core.patchNamespacedPodStatus(
      {
        namespace: ns,
        name: 'db-0',
        body: {
          status: {
            containerStatuses: [
              {
                name: 'agent',
                image: 'mysql:8.4',
                imageID: '',
                ready: false,
                restartCount,
                started: true,
                state: { running: { startedAt: new Date() } },
                lastState: {
                  terminated: {
                    exitCode: 0,
                    reason: 'Completed',
                    message,
                    containerID: `containerd://${containerId}`,
                    startedAt: new Date(),
                    finishedAt: new Date(),
                  },
                },
              },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
  const reports = async (): Promise<CoreV1Event[]> =>
    (
      await core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: 'involvedObject.kind=MySQLCluster,involvedObject.name=db',
      })
    ).items.filter((e) => e.reason === 'ReprovisionedByClone' || e.reason === 'ReprovisionFailed');

  it('records a re-provisioning reported by a member as one Event on its MySQLCluster', async () => {
    await terminated(`ReprovisionedByClone: ${MESSAGE}`, 'aaa', 1);
    const [event] = await eventually(
      async () => {
        const found = await reports();
        assert.equal(found.length, 1);
        return found;
      },
      { description: 'the ReprovisionedByClone Event' },
    );
    assert.equal(event?.type, 'Normal');
    assert.equal(event?.message, `pod db-0: ${MESSAGE}`);
    assert.equal(event?.source?.component, 'recon8s');
  });

  it('records it once, across pod updates and a controller restart', async () => {
    await terminated(`ReprovisionedByClone: ${MESSAGE}`, 'aaa', 2);
    await controller?.stop();
    controller = await startTestController(controlPlane(), { namespaces: [ns] });
    // A later, different report proves the new controller looked at the pod.
    await terminated('ReprovisionFailed: db-0 could not be re-provisioned by clone: ERROR 3862 (HY000)', 'bbb', 3);
    await eventually(
      async () =>
        assert.deepEqual((await reports()).map((e) => e.reason).sort(), ['ReprovisionFailed', 'ReprovisionedByClone']),
      { description: 'the ReprovisionFailed Event' },
    );
    const failed = (await reports()).find((e) => e.reason === 'ReprovisionFailed');
    assert.equal(failed?.type, 'Warning');
  });

  it('records nothing for a termination that is not a report', async () => {
    await terminated('ShutDown: a message of the image itself', 'ccc', 4);
    await terminated(`ReprovisionedByClone: ${MESSAGE} (again)`, 'ddd', 5);
    await eventually(async () => assert.equal((await reports()).length, 3), { description: 'the third report' });
    const all = (await core.listNamespacedEvent({ namespace: ns })).items;
    assert.equal(
      all.some((e) => e.reason === 'ShutDown' || (e.message ?? '').includes('a message of the image')),
      false,
    );
  });
});
