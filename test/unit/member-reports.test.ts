import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { MemberReportLog, memberReports } from '../../lib/controller/mysql-cluster/member-reports.js';

const pod = (
  messages: Record<string, string | undefined>,
  labels: Record<string, string> = { 'app.kubernetes.io/instance': 'shop' },
): V1Pod => ({
  metadata: { name: 'shop-2', namespace: 'db', uid: 'u-1', labels },
  spec: { containers: [] },
  status: {
    containerStatuses: Object.entries(messages).map(([name, message], i) => ({
      name,
      image: 'mysql',
      imageID: '',
      ready: false,
      restartCount: 1,
      lastState:
        message === undefined
          ? {}
          : {
              terminated: {
                exitCode: 0,
                containerID: `containerd://${name}-${i}`,
                finishedAt: new Date('2026-01-01T00:00:00Z'),
                message,
              },
            },
    })),
  },
});

describe('MySQL member reports', () => {
  it('turns a re-provisioning report into a Normal event on the cluster, naming the pod', () => {
    const [r, ...more] = memberReports(
      pod({ replication: 'ReprovisionedByClone: shop-2 was re-provisioned by clone from shop-0.shop-headless.' }),
    );
    assert.equal(more.length, 0);
    assert.deepEqual(r, {
      namespace: 'db',
      cluster: 'shop',
      type: 'Normal',
      reason: 'ReprovisionedByClone',
      message: 'pod shop-2: shop-2 was re-provisioned by clone from shop-0.shop-headless.',
      key: 'u-1/replication/containerd://replication-0',
    });
  });

  it('makes a failed re-provisioning a Warning', () => {
    assert.equal(
      memberReports(pod({ replication: 'ReprovisionFailed: shop-2 could not be re-provisioned' }))[0]?.type,
      'Warning',
    );
  });

  it('ignores terminations that are not reports, unknown reasons, and pods without a cluster label', () => {
    assert.deepEqual(memberReports(pod({ mysql: undefined, replication: 'Error: OOMKilled' })), []);
    assert.deepEqual(memberReports(pod({ replication: 'ReprovisionedByClone:no space' })), []);
    assert.deepEqual(memberReports(pod({ replication: 'ReprovisionedByClone: fine' }, {})), []);
  });

  it('cuts a long message to what an Event holds', () => {
    const [r] = memberReports(pod({ replication: `ReprovisionFailed: ${'x'.repeat(5000)}` }));
    assert.equal(r?.message.length, 1024);
  });

  it('reports each termination once, however often the pod is seen', () => {
    const log = new MemberReportLog(2);
    const reports = memberReports(pod({ replication: 'ReprovisionedByClone: done' }));
    assert.equal(log.fresh(reports).length, 1);
    assert.equal(log.fresh(reports).length, 0);
    const other = memberReports(pod({ other: 'ReprovisionedByClone: done' }));
    assert.equal(log.fresh(other).length, 1);
  });
});
