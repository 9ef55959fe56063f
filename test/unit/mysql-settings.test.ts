import assert from 'node:assert/strict';
import { InvalidSpecError, resolveMySQLClusterSpec, semiSyncWaitCount } from '../../constructs/index.js';

describe('MySQLCluster settings the HA manager uses (one place for defaults)', () => {
  it('resolves the spec with the schema defaults: 3 members, failover after 30 s', () => {
    const spec = resolveMySQLClusterSpec('db', {});
    assert.equal(spec.replicas, 3);
    assert.equal(spec.failoverAfterSeconds, 30);
    assert.equal(semiSyncWaitCount(spec), 1);
  });

  it('waits for half the members rounded down by default, as spec.semiSyncReplicas documents', () => {
    const counts = [1, 2, 3, 4, 5, 9].map((replicas) => semiSyncWaitCount(resolveMySQLClusterSpec('db', { replicas })));
    assert.deepEqual(counts, [0, 1, 1, 2, 2, 4]);
  });

  it('takes spec.semiSyncReplicas as given, 0 included (semi-synchronous replication off)', () => {
    assert.equal(semiSyncWaitCount(resolveMySQLClusterSpec('db', { replicas: 3, semiSyncReplicas: 0 })), 0);
    assert.equal(semiSyncWaitCount(resolveMySQLClusterSpec('db', { replicas: 3, semiSyncReplicas: 2 })), 2);
  });

  it('refuses a spec the construct refuses, naming the field', () => {
    assert.throws(
      () => resolveMySQLClusterSpec('db', { replicas: 3, semiSyncReplicas: 3 }),
      (e: unknown) => e instanceof InvalidSpecError && /semiSyncReplicas/.test(e.message),
    );
  });
});
