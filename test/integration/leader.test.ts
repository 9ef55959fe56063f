import assert from 'node:assert/strict';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { createKubeClient, isAlreadyExists, isConflict } from '../../lib/kube/index.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { createLeaderElector, kubeLeaseLock } from '../../lib/leader/index.js';
import type { LeaderElector, LeaderElectorOptions } from '../../lib/leader/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';

interface RawLease {
  metadata: { resourceVersion: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    leaseTransitions?: number;
    acquireTime?: string;
    renewTime?: string;
  };
}

describe('leader election (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let client: KubeClient;
  // client-node's generated API, for the other holder's writes (recon8s's own client is raw JSON).
  let coordination: CoordinationV1Api;
  let namespace: string;
  const electors: LeaderElector[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };

  before(() => {
    process.on('unhandledRejection', onUnhandled);
    client = createKubeClient({ kubeconfigPath: controlPlane().kubeconfigPath });
    coordination = controlPlane().kubeConfig().makeApiClient(CoordinationV1Api);
  });
  beforeEach(async () => {
    namespace = await freshNamespace('leader');
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop({ release: false })));
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await client.close();
    assert.deepEqual(unhandled, []);
  });

  const elector = (identity: string, extra: Partial<LeaderElectorOptions> = {}): LeaderElector => {
    const e = createLeaderElector({
      client,
      namespace,
      name: 'recon8s-leader',
      identity,
      leaseDurationMs: 2_000,
      renewDeadlineMs: 1_500,
      retryPeriodMs: 300,
      onStartedLeading: () => undefined,
      ...extra,
    });
    electors.push(e);
    return e;
  };
  const lease = (): Promise<RawLease> =>
    client.requestJson<RawLease>({
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/recon8s-leader`,
    });

  it('two candidates: never two leaders; exactly one leads and the other follows it', async () => {
    const a = elector('a');
    const b = elector('b');
    a.start();
    b.start();
    await eventually(() => assert.ok(a.isLeader() || b.isLeader()), { description: 'a leader' });
    // For a few lease periods: never two leaders at once (safety).
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      assert.ok(!(a.isLeader() && b.isLeader()), 'two leaders at once');
      await new Promise((r) => setTimeout(r, 25));
    }
    const leader = await eventually(() => {
      const current = [a, b].filter((e) => e.isLeader());
      assert.equal(current.length, 1);
      return current[0] as LeaderElector;
    });
    const follower = leader === a ? b : a;
    await eventually(() => assert.equal(follower.leader(), leader.identity));
    const l = await lease();
    assert.equal(l.spec.holderIdentity, leader.identity);
    assert.equal(l.spec.leaseDurationSeconds, 2);
    assert.equal(l.spec.leaseTransitions, 0);
    assert.match(
      l.spec.renewTime ?? '',
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/,
      'MicroTime with 6 fractional digits',
    );
    assert.match(l.spec.acquireTime ?? '', /\.\d{6}Z$/);
  });

  it('a crashed leader (no release) is replaced once its lease expires', async () => {
    const events: string[] = [];
    const a = elector('a', {
      onStartedLeading: () => {
        events.push('a leads');
      },
    });
    a.start();
    await eventually(() => assert.ok(a.isLeader()));
    const b = elector('b', {
      onStartedLeading: () => {
        events.push('b leads');
      },
      onNewLeader: (who) => events.push(`b sees ${who}`),
    });
    b.start();
    await eventually(() => assert.equal(b.leader(), 'a'));
    await a.stop({ release: false });
    assert.equal((await lease()).spec.holderIdentity, 'a', 'the crashed leader still holds the lease');
    assert.equal(b.isLeader(), false);
    await eventually(() => assert.ok(b.isLeader()), { description: 'b to take over the expired lease' });
    const l = await lease();
    assert.equal(l.spec.holderIdentity, 'b');
    assert.equal(l.spec.leaseTransitions, 1);
    assert.deepEqual(events, ['a leads', 'b sees a', 'b sees b', 'b leads']);
  });

  it('release on stop hands over at once, long before the lease would expire', async () => {
    // A 60 s lease: without the release, b could not lead within this test's 10 s wait.
    const long = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 300 };
    const stoppedLeading: string[] = [];
    let aSignal: AbortSignal | undefined;
    const a = elector('a', {
      ...long,
      onStartedLeading: (signal) => {
        aSignal = signal;
      },
      onStoppedLeading: () => stoppedLeading.push('a'),
    });
    a.start();
    await eventually(() => assert.ok(a.isLeader()));
    const b = elector('b', long);
    b.start();
    await eventually(() => assert.equal(b.leader(), 'a'));
    await a.stop();
    assert.equal(aSignal?.aborted, true);
    assert.deepEqual(stoppedLeading, ['a']);
    await eventually(() => assert.ok(b.isLeader()), {
      timeoutMs: 10_000,
      description: 'b to take over the released lease',
    });
    const l = await lease();
    assert.equal(l.spec.holderIdentity, 'b');
    assert.equal(l.spec.leaseTransitions, 1);
  });

  it('the Lease lock: create of an existing lease and update with a stale resourceVersion are 409s', async () => {
    const lock = kubeLeaseLock(client, { namespace, name: 'lock-test' });
    assert.equal(await lock.get(), undefined);
    const record = {
      holderIdentity: 'x',
      leaseDurationSeconds: 15,
      leaseTransitions: 0,
      acquireTime: Date.now(),
      renewTime: Date.now(),
    };
    await lock.create(record);
    await assert.rejects(lock.create(record), (e: unknown) => isAlreadyExists(e));
    const first = await lock.get();
    assert.ok(first);
    assert.equal(first.record.renewTime, record.renewTime, 'MicroTime round-trips to the millisecond');
    await lock.update({ ...record, renewTime: record.renewTime + 1_000 }, first.resourceVersion);
    await assert.rejects(
      lock.update({ ...record, renewTime: record.renewTime + 2_000 }, first.resourceVersion),
      (e: unknown) => isConflict(e),
    );
    assert.equal((await lock.get())?.record.renewTime, record.renewTime + 1_000);
  });

  it('a holder that keeps writing the lease is never taken over, whatever its timestamps; once it is quiet, it is', async () => {
    // Someone else holds a lease whose renewTime is unset and keeps writing it: by our clock it is alive.
    await coordination.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: 'recon8s-leader' },
        spec: { holderIdentity: 'other', leaseDurationSeconds: 2, leaseTransitions: 5 },
      },
    });
    const a = elector('a');
    a.start();
    const until = Date.now() + 3_000;
    let writes = 0;
    while (Date.now() < until) {
      const l = await coordination.readNamespacedLease({ namespace, name: 'recon8s-leader' });
      l.spec = { ...l.spec, leaseTransitions: 5 + ++writes };
      await coordination.replaceNamespacedLease({ namespace, name: 'recon8s-leader', body: l }).catch(() => undefined);
      assert.equal(a.isLeader(), false, 'a lease that keeps changing is not expired');
      await new Promise((r) => setTimeout(r, 200));
    }
    await eventually(() => assert.ok(a.isLeader()), { description: 'a to take over once the other holder went quiet' });
    const l = await lease();
    assert.equal(l.spec.holderIdentity, 'a');
    assert.ok((l.spec.leaseTransitions ?? 0) > 5);
  });
});
