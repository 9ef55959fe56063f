import assert from 'node:assert/strict';
import type { KubernetesObject as LiveObject, V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import type { Recon8sResource } from '../../constructs/index.js';
import { render } from '../../constructs/index.js';
import { APP_POD_SELECTOR, observeApp } from '../../lib/controller/app/app-controller.js';
import { createEventRecorder } from '../../lib/controller/events.js';
import { MYSQL_MEMBER_SELECTOR } from '../../lib/controller/mysql-cluster/member-reports.js';
import { observeMySQL } from '../../lib/controller/mysql-cluster/mysql-cluster-controller.js';
import type { CustomResource, LiveLookup } from '../../lib/controller/kind-controller.js';
import { withProblems, withUnavailable } from '../../lib/controller/status.js';
import { silentLogger } from '../../lib/observability/logger.js';
import type { ConditionInput } from '../../lib/reconcile/conditions.js';
import { podProblemEvents, podProblems, summarizePodProblems } from '../../lib/reconcile/pod-problems.js';

const resource = (kind: 'App' | 'MySQLCluster', spec: Record<string, unknown>): CustomResource => ({
  apiVersion: 'recon8s.dev/v1alpha1',
  kind,
  metadata: { name: kind === 'App' ? 'web' : 'shop', namespace: 'prod', uid: `uid-${kind}`, generation: 1 },
  spec,
});

const controller = (kind: string, name: string, uid = 'x'): V1OwnerReference => ({
  apiVersion: kind === 'ReplicaSet' || kind === 'StatefulSet' ? 'apps/v1' : 'batch/v1',
  kind,
  name,
  uid,
  controller: true,
});

/** A pod that cannot pull its image, controlled by `owner`. */
const stuckPod = (name: string, owner?: V1OwnerReference, labels: Record<string, string> = {}): V1Pod => ({
  metadata: { name, namespace: 'prod', uid: `uid-${name}`, labels, ...(owner ? { ownerReferences: [owner] } : {}) },
  spec: { containers: [{ name: 'web', image: 'recon8s.test/does-not-exist:1' }] },
  status: {
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True' }],
    containerStatuses: [
      {
        name: 'web',
        image: 'recon8s.test/does-not-exist:1',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: {
          waiting: {
            reason: 'ErrImageNeverPull',
            message: 'Container image "recon8s.test/does-not-exist:1" is not present with pull policy of Never',
          },
        },
      },
    ],
  },
});

/** The live children: what render() made, controlled by `uid`. */
function liveChildren(cr: CustomResource, uid: string | undefined): LiveLookup {
  const objects = render(cr as unknown as Recon8sResource);
  return (apiVersion, kind, name) => {
    const o = objects.find((x) => x.apiVersion === apiVersion && x.kind === kind && x.metadata.name === name);
    if (!o) return undefined;
    return {
      ...o,
      metadata: {
        ...o.metadata,
        ...(uid ? { ownerReferences: [{ ...controller(kind, cr.metadata.name, uid) }] } : {}),
      },
      status: {},
    } as LiveObject;
  };
}

const now = new Date('2026-11-25T16:00:00Z');

describe('pods in the status of their resource', () => {
  describe("an App's pods", () => {
    const app = resource('App', { image: 'recon8s.test/does-not-exist:1', replicas: 2 });
    const rendered = render(app as unknown as Recon8sResource);
    const labels = { 'app.kubernetes.io/instance': 'web', 'pod-template-hash': '5d8f' };

    it("are its Deployment's ReplicaSets' pods, and no pod that only carries its labels", () => {
      const ours = stuckPod('web-5d8f-abcde', controller('ReplicaSet', 'web-5d8f'), labels);
      const observed = observeApp(app, rendered, liveChildren(app, app.metadata.uid), [
        ours,
        stuckPod('web-impostor', undefined, labels),
        stuckPod('web-other-rs', controller('ReplicaSet', 'other-5d8f'), labels),
        stuckPod('web-5d8f-job', controller('Job', 'web-5d8f'), labels),
      ]);
      assert.deepEqual(
        observed.pods?.map((p) => p.metadata?.name),
        ['web-5d8f-abcde'],
      );
    });

    it("are none when the Deployment of that name is someone else's (the ownership rule)", () => {
      const pods = [stuckPod('web-5d8f-abcde', controller('ReplicaSet', 'web-5d8f'), labels)];
      assert.deepEqual(observeApp(app, rendered, liveChildren(app, 'someone-else'), pods).pods, []);
      assert.deepEqual(observeApp(app, rendered, liveChildren(app, undefined), pods).pods, []);
    });

    it('are watched by a selector that no MySQL pod matches', () => {
      assert.equal(APP_POD_SELECTOR, 'app.kubernetes.io/managed-by=recon8s,!app.kubernetes.io/component');
      assert.match(MYSQL_MEMBER_SELECTOR, /app\.kubernetes\.io\/component in \(database,backup\)/);
    });
  });

  describe("a MySQLCluster's pods", () => {
    const cluster = resource('MySQLCluster', {
      replicas: 1,
      backup: { schedule: '0 3 * * *', persistentVolumeClaimName: 'shop-backups' },
    });
    const rendered = render(cluster as unknown as Recon8sResource);

    it('are its members and the pods of its backup jobs, nothing else', () => {
      const observed = observeMySQL(
        cluster,
        rendered,
        liveChildren(cluster, cluster.metadata.uid),
        'shop-credentials',
        [
          stuckPod('shop-0', controller('StatefulSet', 'shop')),
          stuckPod('shop-backup-29400000-x1', controller('Job', 'shop-backup-29400000')),
          stuckPod('shop-backup-manual-x1', controller('Job', 'shop-backup-manual')),
          stuckPod('other-0', controller('StatefulSet', 'other')),
          stuckPod('loose-0'),
        ],
      );
      assert.deepEqual(
        observed.pods?.map((p) => p.metadata?.name),
        ['shop-0', 'shop-backup-29400000-x1'],
      );
    });

    it("are none when the StatefulSet is someone else's", () => {
      const observed = observeMySQL(cluster, rendered, liveChildren(cluster, 'someone-else'), 'shop-credentials', [
        stuckPod('shop-0', controller('StatefulSet', 'shop')),
      ]);
      assert.deepEqual(observed.pods, []);
    });
  });

  describe('conditions', () => {
    const unavailable: ConditionInput[] = [
      { type: 'Ready', status: 'False', reason: 'Unavailable', message: '0/2 updated replicas available (1 updated)' },
      { type: 'Progressing', status: 'True', reason: 'RollingOut', message: 'rolling out' },
      { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'no problems found' },
    ];

    it('name the pod and its reason in Degraded and in Ready, never "no problems found"', () => {
      const problems = summarizePodProblems(podProblems([stuckPod('web-5d8f-abcde')], now));
      const [ready, , degraded] = withProblems(unavailable, problems);
      const said =
        'pod web-5d8f-abcde: ErrImageNeverPull (container web): Container image "recon8s.test/does-not-exist:1" is not present with pull policy of Never';
      assert.deepEqual(degraded, { type: 'Degraded', status: 'True', reason: 'ImagePullFailed', message: said });
      assert.deepEqual(ready, {
        type: 'Ready',
        status: 'False',
        reason: 'ImagePullFailed',
        message: `0/2 updated replicas available (1 updated); ${said}`,
      });
    });

    it('make Ready say why a resource whose pods run cannot work (writes waiting), keeping what it said', () => {
      const ready: ConditionInput = {
        type: 'Ready',
        status: 'True',
        reason: 'Available',
        message: '1/1 replicas available',
      };
      const [r] = withUnavailable([ready], { reason: 'WaitingForReplicaAck', message: 'writes wait' });
      assert.deepEqual(r, {
        type: 'Ready',
        status: 'False',
        reason: 'WaitingForReplicaAck',
        message: 'writes wait; 1/1 replicas available',
      });
      assert.deepEqual(withUnavailable([ready], undefined), [ready]);
      // A pod problem, when there is one, is the reason given.
      const [first] = withProblems(
        withUnavailable([ready], { reason: 'WaitingForReplicaAck', message: 'writes wait' }),
        [{ reason: 'ImagePullFailed', message: 'pod shop-1: …' }],
      );
      assert.equal(first?.reason, 'ImagePullFailed');
    });
  });

  describe('Events', () => {
    it('record one Event per pod problem however often it is seen, and however its message changes', async () => {
      const posted: string[] = [];
      const recorder = createEventRecorder(
        {
          requestJson: <T>(o: { body?: string }): Promise<T> => {
            posted.push(o.body ?? '');
            return Promise.resolve({} as T);
          },
        },
        silentLogger,
      );
      const app = resource('App', {});
      const pod = stuckPod('web-5d8f-abcde');
      for (let i = 0; i < 3; i++) {
        const changed = structuredClone(pod);
        const waiting = changed.status?.containerStatuses?.[0]?.state?.waiting;
        if (waiting) waiting.message = `${waiting.message ?? ''} (seen ${i})`;
        for (const e of podProblemEvents(podProblems([changed], now)))
          recorder.record(app, 'Warning', e.reason, e.message, { once: `${app.metadata.uid ?? ''}/${e.key}` });
      }
      await new Promise((r) => setImmediate(r));
      assert.equal(posted.length, 1);
      const event = JSON.parse(posted[0] ?? '{}') as { reason: string; type: string; message: string };
      assert.equal(event.reason, 'ImagePullFailed');
      assert.equal(event.type, 'Warning');
      assert.match(event.message, /^pod web-5d8f-abcde: ErrImageNeverPull \(container web\): Container image/);
    });
  });
});
