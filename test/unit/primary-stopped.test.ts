// What tells the controller that a primary's mysqld does not run (primary-stopped.ts): each sign alone,
// and what is not one (a pod shutting down gracefully, a restart counted before the last good look).
import assert from 'node:assert/strict';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { mysqlRestarts, primaryStopped } from '../../lib/controller/mysql-cluster/primary-stopped.js';

const running: V1ContainerStatus['state'] = { running: { startedAt: new Date(0) } };
function pod(mysql: Partial<V1ContainerStatus> = {}, o: { uid?: string; deleting?: boolean } = {}): V1Pod {
  return {
    metadata: { name: 'db-0', uid: o.uid ?? 'u1', ...(o.deleting ? { deletionTimestamp: new Date(0) } : {}) },
    status: {
      containerStatuses: [
        { name: 'agent', image: '', imageID: '', ready: true, restartCount: 7, state: running },
        { name: 'mysql', image: '', imageID: '', ready: true, restartCount: 2, state: running, ...mysql },
      ],
    },
  };
}
const last = { uid: 'u1', restarts: 2 };

describe('primaryStopped (what says a primary does not run)', () => {
  it('says nothing of a running pod that answers nothing but refuses nothing (silent: a partition)', () => {
    assert.equal(primaryStopped(pod(), last, false), undefined);
    assert.equal(primaryStopped(pod(), undefined, false), undefined);
  });

  it('says nothing of a pod shutting down gracefully whose mysqld still runs', () => {
    assert.equal(primaryStopped(pod({}, { deleting: true }), last, false), undefined);
  });

  it('knows a deleted pod, a replaced pod, an exited, waiting or restarted mysql container, a refused connection', () => {
    assert.equal(primaryStopped(undefined, last, false), 'its pod was deleted');
    assert.equal(primaryStopped(pod({}, { uid: 'u2' }), last, false), 'its pod was replaced');
    assert.equal(
      primaryStopped(pod({ state: { terminated: { exitCode: 137 } } }), last, false),
      'its mysql container exited (exit code 137)',
    );
    assert.equal(
      primaryStopped(pod({ state: { waiting: { reason: 'CrashLoopBackOff' } } }), undefined, false),
      'its mysql container is not running (CrashLoopBackOff)',
    );
    assert.equal(primaryStopped(pod({ restartCount: 3 }), last, false), 'its mysql container restarted');
    assert.match(primaryStopped(pod(), last, true) ?? '', /refused the connection/);
  });

  it("counts only the mysql container's restarts, and only those after the last good look", () => {
    assert.equal(mysqlRestarts(pod()), 2);
    assert.equal(primaryStopped(pod({ restartCount: 3 }), undefined, false), undefined);
    assert.equal(primaryStopped(pod({ restartCount: 2 }), last, false), undefined);
  });
});
