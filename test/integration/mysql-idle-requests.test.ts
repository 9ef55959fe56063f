import assert from 'node:assert/strict';
import type { KubeConfig, V1StatefulSet } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';
import type { ResourceHelpers } from './support/resources.js';
import { resourceHelpers } from './support/resources.js';

const NAME = 'idle';
/** How long the controller is watched doing nothing. */
const QUIET_MS = 20_000;

interface Member {
  readonly name: string;
  readonly reachable: boolean;
  readonly message?: string;
}

/**
 * What a MySQLCluster costs the API server while nothing changes: its credentials Secret and the backup
 * volume it names come from watches of them by name and its pods from the pod watch, so a cluster whose pods cannot run (here: no kubelet,
 * they stay Pending for ever) sends no request at all, and is looked at again when one of its pods
 * changes. Before, every look read the Secret (1.7 GETs a second, for ever).
 */
describe('an idle MySQLCluster costs the API server nothing (real API server, pods that never start)', function () {
  this.timeout(120_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let controller: Controller | undefined;
  let resources: ResourceHelpers;
  /** Every request the controller sent, in order (what a failure names). */
  const sentLog: string[] = [];

  before(async function () {
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('mysql-idle');
    resources = resourceHelpers(kc, ns);
    controller = await startTestController(controlPlane(), {
      namespaces: [ns],
      resyncPeriodMs: 600_000,
      onRequest: (e) => sentLog.push(`${e.method} ${e.path} ${e.code}`),
    });
  });
  after(async () => {
    await controller?.stop();
  });

  /** Every request the controller's client sent (its rest_client_requests_total, all series). */
  async function requests(): Promise<number> {
    const { values } = await (controller as Controller).metrics.restClientRequests.get();
    return values.reduce((sum, v) => sum + v.value, 0);
  }
  const members = async (): Promise<readonly Member[]> =>
    ((await resources.get('mysqlclusters', NAME)) as { status?: { members?: Member[] } }).status?.members ?? [];

  it('sends no request while its pods cannot start, and looks at a pod again when it changes', async () => {
    // Its backup volume is named and missing (BackupVolumeMissing): that claim is watched by name too.
    await resources.create('mysqlclusters', 'MySQLCluster', NAME, {
      replicas: 3,
      backup: { schedule: '0 3 1 1 *', persistentVolumeClaimName: 'idle-dumps-never-created' },
    });
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const sts: V1StatefulSet = await eventually(() => apps.readNamespacedStatefulSet({ namespace: ns, name: NAME }), {
      timeoutMs: 30_000,
      description: 'the StatefulSet',
    });
    // No StatefulSet controller and no kubelet here: the pods are created as the StatefulSet would, and
    // stay Pending, without an IP.
    for (let i = 0; i < 3; i++)
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: {
            name: `${NAME}-${i}`,
            labels: { ...sts.spec?.template.metadata?.labels },
            ownerReferences: [
              {
                apiVersion: 'apps/v1',
                kind: 'StatefulSet',
                name: NAME,
                uid: sts.metadata?.uid ?? '',
                controller: true,
              },
            ],
          },
          spec: { containers: [{ name: 'mysql', image: 'mysql:9.7' }] },
        },
      });
    await eventually(
      async () => {
        const m = await members();
        assert.deepEqual(
          m.map((x) => `${x.name} ${x.reachable}`),
          ['idle-0 false', 'idle-1 false', 'idle-2 false'],
        );
      },
      { timeoutMs: 30_000, description: 'three members that do not answer, in status' },
    );
    // Settled: what the pods' creation queued is done, i.e. no request for 2 s (each attempt waits those
    // 2 s itself: eventually's first attempt runs at once, and would compare a count with itself).
    let before = await requests();
    await eventually(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const now = await requests();
        const was = before;
        before = now;
        assert.equal(now, was);
      },
      { timeoutMs: 40_000, intervalMs: 0, maxIntervalMs: 0, description: 'the controller to settle' },
    );

    const reconciles = async (): Promise<number> => {
      const { values } = await (controller as Controller).metrics.reconcileTotal.get();
      return values.reduce((sum, v) => sum + v.value, 0);
    };
    const looksBefore = await reconciles();
    const logBefore = sentLog.length;
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    const sent = (await requests()) - before;
    console.log(
      `      ${QUIET_MS / 1000} s quiet: ${sent} requests, ${(await reconciles()) - looksBefore} reconciles of the cluster`,
    );
    assert.equal(
      sent,
      0,
      `requests sent by the controller while nothing changed:\n${sentLog.slice(logBefore).join('\n')}`,
    );

    // A pod changes (scheduled, its container running, an address): the cluster is looked at again at
    // once, whatever its backoff, and the member is asked over SQL (nothing answers at that address).
    const pending = (await members()).find((m) => m.name === `${NAME}-0`)?.message;
    await core.patchNamespacedPodStatus(
      {
        namespace: ns,
        name: `${NAME}-0`,
        body: {
          status: {
            phase: 'Running',
            podIP: '192.0.2.1',
            podIPs: [{ ip: '192.0.2.1' }],
            conditions: [{ type: 'PodScheduled', status: 'True' }],
            containerStatuses: [
              { name: 'mysql', image: 'mysql:9.7', imageID: '', ready: false, restartCount: 0, state: { running: {} } },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const m = (await members()).find((x) => x.name === `${NAME}-0`);
        assert.notEqual(m?.message, pending, JSON.stringify(m));
      },
      { timeoutMs: 10_000, description: 'idle-0 looked at again' },
    );
  });
});
