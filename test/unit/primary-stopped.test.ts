// What tells the controller that a primary's mysqld exited (primary-stopped.ts): its container, as the
// kubelet reports it, for the pod that last answered; and what is not enough (a pod gone or replaced, a
// pod shutting down gracefully, a restart counted before the last good look, a replica that restarted).
import assert from 'node:assert/strict';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { AnsweringPod } from '../../lib/controller/mysql-cluster/ha/primary-stopped.js';
import {
  BOOTSTRAP_ON_DATA_MS,
  buildingDataDirectory,
  mysqlRestarts,
  primaryStopped,
} from '../../lib/controller/mysql-cluster/ha/primary-stopped.js';

const running: V1ContainerStatus['state'] = { running: { startedAt: new Date(0) } };
function pod(
  name: string,
  mysql: Partial<V1ContainerStatus> = {},
  o: { uid?: string; deleting?: boolean } = {},
): V1Pod {
  return {
    metadata: { name, uid: o.uid ?? `${name}-u1`, ...(o.deleting ? { deletionTimestamp: new Date(0) } : {}) },
    status: {
      containerStatuses: [
        { name: 'agent', image: '', imageID: '', ready: true, restartCount: 7, state: running },
        { name: 'mysql', image: '', imageID: '', ready: true, restartCount: 2, state: running, ...mysql },
      ],
    },
  };
}
/** The pods now: db-0 (the primary) as given, db-1 and db-2 as they were. */
const now = (primary: V1Pod | undefined, replica1 = pod('db-1')): Map<string, V1Pod> =>
  new Map([primary, replica1, pod('db-2')].flatMap((p) => (p ? [[p.metadata?.name ?? '', p] as const] : [])));
/** Every member's pod at the last good look: uid `<name>-u1`, two restarts each. */
const last: ReadonlyMap<string, AnsweringPod> = new Map(
  ['db-0', 'db-1', 'db-2'].map((n) => [n, { uid: `${n}-u1`, restarts: 2 }]),
);
const stopped = (pods: Map<string, V1Pod>, baseline = last) => primaryStopped('db-0', pods, baseline);

describe('primaryStopped (what says a primary mysqld exited)', () => {
  it('knows a mysql container that exited or restarted since the last good look', () => {
    assert.equal(
      stopped(now(pod('db-0', { state: { terminated: { exitCode: 137 } } }))),
      'its mysql container exited (exit code 137)',
    );
    assert.equal(
      stopped(now(pod('db-0', { state: { terminated: { exitCode: 1, reason: 'Error' } } }))),
      'its mysql container exited (Error)',
    );
    assert.equal(stopped(now(pod('db-0', { restartCount: 3 }))), 'its mysql container restarted');
  });

  it('says nothing of a running container, whatever else happens to the pod: silent, shutting down, gone or replaced', () => {
    assert.equal(stopped(now(pod('db-0'))), undefined);
    assert.equal(stopped(now(pod('db-0', {}, { deleting: true }))), undefined);
    // A pod deleted with no grace period leaves the API while its containers still run on the node.
    assert.equal(stopped(now(undefined)), undefined);
    assert.equal(stopped(now(pod('db-0', { restartCount: 0 }, { uid: 'db-0-u2' }))), undefined);
  });

  it('says nothing without a last good look of the same pod to compare with', () => {
    assert.equal(stopped(now(pod('db-0', { restartCount: 3 })), new Map()), undefined);
  });

  it('says nothing when a replica restarted or was replaced since (it may have lost what it acknowledged)', () => {
    const exited = pod('db-0', { state: { terminated: { exitCode: 137 } } });
    assert.equal(stopped(now(exited, pod('db-1', { restartCount: 3 }))), undefined);
    assert.equal(stopped(now(exited, pod('db-1', {}, { uid: 'db-1-u2' }))), undefined);
  });

  it("counts only the mysql container's restarts", () => {
    assert.equal(mysqlRestarts(pod('db-0')), 2);
    assert.equal(mysqlRestarts(undefined), 0);
  });
});

describe('buildingDataDirectory (a member whose bootstrap builds a data directory from nothing)', () => {
  const at = Date.parse('2026-12-07T10:00:00Z');
  const bootstrapping = (state: V1ContainerStatus['state']): V1Pod => ({
    metadata: { name: 'db-1' },
    status: {
      initContainerStatuses: [{ name: 'bootstrap', image: '', imageID: '', ready: false, restartCount: 0, state }],
    },
  });
  it('is one whose bootstrap has run longer than it does on a data directory that exists', () => {
    const since = (ms: number) => bootstrapping({ running: { startedAt: new Date(at - ms) } });
    assert.equal(buildingDataDirectory(since(BOOTSTRAP_ON_DATA_MS + 1000), at), true);
    assert.equal(buildingDataDirectory(since(2000), at), false, 'a bootstrap that just began may find data');
  });
  it('is not one whose bootstrap ended (it has a data directory), nor one with no status yet', () => {
    assert.equal(buildingDataDirectory(bootstrapping({ terminated: { exitCode: 0 } }), at), false);
    assert.equal(buildingDataDirectory({ metadata: { name: 'db-1' } }, at), false);
  });
});
