// The HA loop's sequences (lib/controller/mysql-cluster/ha/loop.ts) with every port faked: members over
// "SQL", their pods (labels, restarts, annotations), the status records with the API server's version
// precondition, the metrics and a clock the test moves. Each sequence runs in milliseconds; what only the
// API server decides (its preconditions on a real resource, leases) stays in
// test/integration/mysql-manager-steps.test.ts.
//
// What is asserted is what a user would notice: which member is made writable (and that no two ever are
// at once, nor one twice without a reason), the pods' role labels the Services select on, the status
// records (currentPrimary, primaryTerm, lastFailover, switchover) and the Events and counters.
import assert from 'node:assert/strict';
import { MYSQL_SWITCHOVER_ANNOTATION } from '../../constructs/index.js';
import { withKeptMembers } from '../../lib/controller/mysql-cluster/ha/kept-members.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';
import { PollAgainError } from '../../lib/reconcile/contract.js';
import {
  Controller,
  NAME,
  WALL_START,
  World,
  assertOnePrimary,
  eventOf,
  healthyCluster,
  hostOf,
  reasons,
  uuidOf,
} from './support/ha-world.js';

describe('the HA loop with fake ports (failover, switchover, scale-down, rotation, leadership)', () => {
  it('brings a new cluster up: ha-0 recorded first, then writable with semi-synchronous replication, replicas following', async () => {
    const world = new World();
    const ctl = new Controller(world);
    await ctl.pass();
    assertOnePrimary(world, 'ha-0');
    assert.deepEqual(world.madeWritable, ['ha-0']);
    assert.equal(world.history, 'ha-0');
    assert.equal(world.m('ha-0').semiSyncWaitCount, 1);
    assert.deepEqual(world.roles(), { 'ha-0': 'primary', 'ha-1': 'replica', 'ha-2': 'replica' });
    assert.deepEqual(reasons(world.events), ['PrimaryElected', 'PrimaryWritable']);
    // The election is recorded before ha-0 takes a single write.
    assert.ok(world.calls.indexOf('ctl ha-0 enableWrites') >= 0);
    // Steady: nothing more is done, and it is looked at again at the healthy poll.
    world.calls.length = 0;
    world.t += 5_000;
    const steady = await ctl.pass();
    assert.deepEqual(world.calls, []);
    assert.equal(steady.requeueAfterMs, 5_000);
  });

  describe('failover, by each rule that says the primary is lost', () => {
    it('a primary that does not answer: failoverAfterSeconds after it last answered, to the replica holding everything', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      world.t += 1_000;
      const waiting = await ctl.pass();
      assert.deepEqual(reasons(waiting.problems), ['PrimaryUnreachable']);
      assert.equal(world.status.currentPrimary, 'ha-0');
      assert.deepEqual(world.writable(), [], 'nobody takes writes while the primary may still');
      world.t += 8_000;
      await ctl.pass();
      assert.equal(world.status.currentPrimary, 'ha-0', '9 s is not 10');
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assert.deepEqual(world.by('ctl').slice(0, 4), [
        'ha-1 stopReceiver',
        'ha-2 stopReceiver',
        'ha-1 waitForApplied',
        'ha-1 leaveReplication',
      ]);
      assert.equal(world.roles()['ha-0'], 'none');
      assert.deepEqual(
        { from: world.status.lastFailover?.from, to: world.status.lastFailover?.to },
        { from: 'ha-0', to: 'ha-1' },
      );
      assert.match(
        eventOf(world, 'FailedOver')?.message ?? '',
        /^promoted ha-1: the primary ha-0 was lost \(down 10\.0 s\)/,
      );
      assert.deepEqual(world.counted, [{ kind: 'failover' }]);
      // Writes go on on ha-1, and ha-2 receives them.
      world.commit('ha-1', 3);
      assert.ok(world.m('ha-1').executed.isSubsetOf(world.m('ha-2').executed));
    });

    it('a primary whose mysql container restarted: at once, not after failoverAfterSeconds', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      const status = world.pods.get('ha-0')?.status?.containerStatuses?.[0];
      if (status) status.restartCount = 1;
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.match(eventOf(world, 'FailedOver')?.message ?? '', /\(down 1\.0 s: its mysql container restarted\)/);
    });

    it('a primary back read-only after it was down (it restarted): replaced at once by a replica holding all it had', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      world.t += 1_000;
      await ctl.pass();
      Object.assign(world.m('ha-0'), { up: true, writable: false, semiSyncWaitCount: 0 });
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1'], 'ha-0 is never made writable again');
      assert.equal(world.status.lastFailover?.ownGtidsAtFailover, `${uuidOf('ha-0')}:1-5`);
    });

    it('a primary that answers but none of its replicas hears: fenced first, then failed over from, never writable again meanwhile', async () => {
      const { world, ctl } = await healthyCluster();
      const unheardFor = (ms: number): void => {
        for (const r of ['ha-1', 'ha-2']) {
          const m = world.m(r);
          m.lagging = true;
          m.channel = { sourceHost: hostOf('ha-0'), receiver: 'ON', sourceSilentMs: ms, heartbeatMs: 1_000 };
        }
      };
      unheardFor(4_000);
      await ctl.pass();
      assert.deepEqual(world.calls, [], 'a writable primary carries on until failoverAfterSeconds');
      // Its agent fences it (it reaches no replica): the loop leaves it so.
      Object.assign(world.m('ha-0'), { writable: false, semiSyncWaitCount: 0 });
      unheardFor(6_000);
      const waiting = await ctl.pass();
      assert.deepEqual(reasons(waiting.problems), ['PrimaryIsolated']);
      assert.deepEqual(world.calls, [], 'never made writable again');
      // failoverAfterSeconds since a replica last heard it; say its fencing did not hold (writable).
      Object.assign(world.m('ha-0'), { writable: true, semiSyncWaitCount: 1 });
      unheardFor(10_000);
      await ctl.pass();
      assert.equal(world.status.currentPrimary, 'ha-1');
      assert.equal(world.by('ctl')[0], 'ha-0 fence (cut off)');
      assert.deepEqual(world.writable(), ['ha-1']);
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assert.match(eventOf(world, 'FailedOver')?.message ?? '', /heard by none of its replicas for 10 s/);
    });

    it('a primary back with another data directory (its volume lost): never writable again, replaced at once', async () => {
      const { world, ctl } = await healthyCluster();
      Object.assign(world.m('ha-0'), {
        serverUuid: 'ffffffff-0000-0000-0000-000000000000',
        executed: GtidSet.EMPTY,
        writable: false,
        semiSyncWaitCount: 0,
      });
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1'], 'the empty ha-0 is never made writable');
      assert.match(eventOf(world, 'FailedOver')?.message ?? '', /^promoted ha-1: the primary ha-0 was lost/);
      assert.equal(world.status.lastFailover?.from, 'ha-0');
    });

    it('never without a majority: two of three members gone, nobody is promoted', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      world.m('ha-2').up = false;
      world.t += 1_000;
      await ctl.pass();
      world.t += 60_000;
      const waiting = await ctl.pass();
      assert.deepEqual(reasons(waiting.problems), ['NoQuorum']);
      assert.equal(world.status.currentPrimary, 'ha-0');
      assert.deepEqual(world.madeWritable, ['ha-0']);
    });
  });

  describe('switchover', () => {
    it('to the member a person asks for: the old primary fenced before the new one takes writes, done once', async () => {
      const { world, ctl } = await healthyCluster();
      world.annotations[MYSQL_SWITCHOVER_ANNOTATION] = 'ha-2@req-1';
      await ctl.pass();
      assertOnePrimary(world, 'ha-2');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-2']);
      const calls = world.by('ctl');
      assert.ok(calls.indexOf('ha-0 fence') < calls.indexOf('ha-2 enableWrites'), calls.join('\n'));
      assert.deepEqual(world.status.switchover, {
        requestId: 'ha-2@req-1',
        outcome: 'Done',
        message: eventOf(world, 'SwitchedOver')?.message,
      });
      assert.match(eventOf(world, 'SwitchedOver')?.message ?? '', /^ha-2 is the primary instead of ha-0 \(requested\)/);
      assert.deepEqual(world.counted, [{ kind: 'switchover', outcome: 'done' }]);
      // The annotation stays: the request is not handled again.
      world.calls.length = 0;
      world.t += 5_000;
      await ctl.pass();
      assert.deepEqual(world.calls, []);
      assert.equal(world.counted.length, 1);
    });

    it('refused, with the reason, when the member asked for is already the primary or not a member', async () => {
      const { world, ctl } = await healthyCluster();
      world.annotations[MYSQL_SWITCHOVER_ANNOTATION] = 'ha-0@req-2';
      await ctl.pass();
      assert.equal(world.status.switchover?.outcome, 'Refused');
      assert.match(eventOf(world, 'SwitchoverRefused')?.message ?? '', /ha-0 is already the primary/);
      world.annotations[MYSQL_SWITCHOVER_ANNOTATION] = 'ha-7@req-3';
      await ctl.pass();
      assert.match(world.status.switchover?.message ?? '', /ha-7 is not a member/);
      assertOnePrimary(world, 'ha-0');
      assert.deepEqual(world.counted, [
        { kind: 'switchover', outcome: 'refused' },
        { kind: 'switchover', outcome: 'refused' },
      ]);
    });
  });

  it('a primary whose pod is stopping (drained) while it answers: a replica takes over at once, and it is never writable again', async () => {
    const { world, ctl } = await healthyCluster();
    const pod = world.pods.get('ha-0');
    if (pod?.metadata) pod.metadata.deletionTimestamp = new Date(WALL_START);
    world.t += 1_000;
    await ctl.pass();
    assert.equal(world.status.currentPrimary, 'ha-1');
    assert.deepEqual(world.writable(), ['ha-1']);
    assert.ok(world.by('ctl').includes('ha-0 fence (stopping)'));
    assert.match(eventOf(world, 'SwitchedOver')?.message ?? '', /\(its pod is stopping\)/);
    // Looked at again while it stops: nothing is asked of it, and it stays read-only.
    const before = world.calls.length;
    world.t += 1_000;
    await ctl.pass();
    assert.ok(!world.calls.slice(before).some((c) => c.startsWith('ctl ha-0 ')), world.calls.join('\n'));
    assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
    assert.deepEqual(world.doubleWritable, []);
  });

  it("says in status how far along a member cloning the primary is, from the primary's answer, while that member is not Ready", async () => {
    const { world, ctl } = await healthyCluster();
    const pod = world.pods.get('ha-2');
    assert.ok(pod?.status);
    pod.status = { ...pod.status, conditions: [{ type: 'Ready', status: 'False' }] };
    world.m('ha-0').donating = [
      { recipientHost: pod.status.podIP ?? '', stage: 'file copy', doneMiB: 140, totalMiB: 377 },
    ];
    world.t += 1_000;
    await ctl.pass();
    const member = (name: string) => world.status.members?.find((m) => m.name === name);
    assert.deepEqual(member('ha-2')?.cloning, { from: 'ha-0', stage: 'file copy', doneMiB: 140, totalMiB: 377 });
    assert.equal(member('ha-1')?.cloning, undefined);
    // Done: Ready again, and the primary serves no clone; the field goes.
    world.m('ha-0').donating = [];
    pod.status = { ...pod.status, conditions: [{ type: 'Ready', status: 'True' }] };
    world.t += 1_000;
    await ctl.pass();
    assert.equal(member('ha-2')?.cloning, undefined);
  });

  it('scale-down: a leaving replica is kept until a remaining replica holds what it acknowledged, then let go at once', async () => {
    const { world, ctl } = await healthyCluster();
    // ha-1 lags: ha-2 alone acknowledged the last writes.
    world.m('ha-1').lagging = true;
    world.commit('ha-0', 2);
    world.spec.replicas = 2;
    const rendered = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: NAME }, spec: { replicas: 2 } };
    const applied = (): number | undefined => {
      const live = ctl.context().live('apps/v1', 'StatefulSet', NAME);
      const amended = withKeptMembers(ctl.context().cr, rendered, live, ctl.memory.keptMembers);
      return (amended.spec as { replicas?: number }).replicas;
    };
    assert.equal(applied(), 3, 'before any look at the new spec, every member stays');
    const held = await ctl.pass();
    assert.deepEqual(world.by('ctl'), ['ha-2 stopReceiver']);
    assert.equal(world.roles()['ha-2'], 'none', 'out of the replicas Service first');
    assert.match(
      held.problems.find((p) => p.reason === 'ScaleDownWaiting')?.message ?? '',
      /keeps 3 members for now: ha-2 holds transactions no remaining replica has received yet/,
    );
    assert.equal(applied(), 3);
    assert.equal(ctl.woken, 0);
    // ha-1 catches up: ha-2 may go, and the smaller StatefulSet is applied at once.
    world.m('ha-1').lagging = false;
    world.t += 1_000;
    const safe = await ctl.pass();
    assert.deepEqual(safe.problems, []);
    assert.equal(applied(), 2);
    assert.equal(ctl.woken, 1);
    // The StatefulSet removes ha-2: two members, steady.
    world.stsReplicas = 2;
    world.pods.delete('ha-2');
    world.mysqld.delete('ha-2');
    world.calls.length = 0;
    world.t += 5_000;
    await ctl.pass();
    assert.deepEqual(world.calls, []);
    assertOnePrimary(world, 'ha-0');
    assert.deepEqual(
      (world.status.members ?? []).map((m) => m.name),
      ['ha-0', 'ha-1'],
    );
  });

  describe('rotation', () => {
    it('a rolling update re-creates the replicas highest first, then switches over before it re-creates the primary', async () => {
      const { world, ctl } = await healthyCluster();
      world.updateRevision = 'rev-2';
      for (let i = 0; i < 8 && world.restarted.length < 3; i++) {
        world.t += 1_000;
        await ctl.pass();
      }
      assert.deepEqual(world.restarted, ['ha-2', 'ha-1', 'ha-0']);
      assert.equal(world.status.currentPrimary, 'ha-1', 'the most advanced updated replica, then the lowest ordinal');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assert.deepEqual(
        reasons(world.events).filter((r) => r === 'RollingUpdate' || r === 'SwitchedOver'),
        ['RollingUpdate', 'RollingUpdate', 'SwitchedOver', 'RollingUpdate'],
      );
      await ctl.passUntil(() => world.m('ha-0').channel?.sourceHost === hostOf('ha-1'));
      assertOnePrimary(world, 'ha-1');
      assert.equal(world.counted.filter((c) => c.kind === 'failover').length, 0);
    });

    it('a renewed certificate: every member reloads it without a restart, once', async () => {
      const { world, ctl } = await healthyCluster();
      world.notAfter = '2100-01-01T00:00:00.000Z';
      for (const m of world.mysqld.values()) m.mountedNotAfter = world.notAfter;
      await ctl.pass();
      assert.deepEqual(reasons(world.events), ['CertificateReloaded', 'CertificateReloaded', 'CertificateReloaded']);
      assert.deepEqual(world.restarted, []);
      world.events.length = 0;
      world.t += 5_000;
      await ctl.pass();
      assert.deepEqual(world.events, []);
    });
  });

  describe('leadership', () => {
    it('a leader deposed in the middle of a promotion does nothing more once it knows, while the new leader promotes', async () => {
      const { world } = await healthyCluster();
      const old = new Controller(world, 'old');
      world.m('ha-0').up = false;
      await old.pass();
      world.t += 11_000;
      const gate = world.hold('old');
      const promoting = old.pass();
      promoting.catch(() => undefined);
      await gate.held;
      assert.deepEqual(world.by('old'), ['ha-1 stopReceiver', 'ha-2 stopReceiver', 'ha-1 waitForApplied']);

      // Its lease is lost; the next leader starts with no memory and fails over.
      old.leadership.abort();
      const next = new Controller(world, 'new');
      await next.pass();
      world.t += 11_000;
      await next.pass();
      assertOnePrimary(world, 'ha-1');
      const version = world.version;
      const calls = world.by('old').length;

      // The old leader's wait ends: nothing more, to the members or to the records.
      gate.release();
      await assert.rejects(promoting, (e: Error) => e.name === 'AbortError');
      assert.equal(world.by('old').length, calls, world.by('old').join('\n'));
      assert.equal(world.version, version);
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assertOnePrimary(world, 'ha-1');
    });

    it('a leader that does not know it was deposed is refused when it records a promotion judged from a replaced primary', async () => {
      const { world } = await healthyCluster();
      const stale = new Controller(world, 'stale');
      world.m('ha-0').up = false;
      await stale.pass();
      world.t += 11_000;
      const judgedFrom = structuredClone(world.status);
      // Another controller recorded ha-2 meanwhile; this one's cache still says ha-0.
      world.status = { ...world.status, currentPrimary: 'ha-2' };
      world.version++;
      await assert.rejects(
        stale.pass({ status: judgedFrom }),
        (e: unknown) =>
          e instanceof PollAgainError &&
          /records ha-2 primary now, not ha-0 as judged .*: ha-1 was not recorded as the primary, and is not promoted/.test(
            e.message,
          ),
      );
      assert.ok(!world.by('stale').includes('ha-1 enableWrites'));
      assert.deepEqual(world.writable(), [], 'no member was made writable');
      assert.deepEqual(world.doubleWritable, []);
      assert.equal(world.status.currentPrimary, 'ha-2');
    });
  });
});
