import assert from 'node:assert/strict';
import { ApiException, V1MicroTime } from '@kubernetes/client-node';
import { ManualClock } from '../support/manual-clock.js';
import { createLeaderElector, fromSpec, toSpec } from '../../lib/leader/index.js';
import type {
  LeaderElectionRecord,
  LeaderElector,
  LeaderElectorOptions,
  LeaseLock,
  LockedRecord,
} from '../../lib/leader/index.js';

/* A fake Lease "API server": one record with a resourceVersion, shared by every elector's lock. */
class FakeLeaseServer {
  record: LeaderElectionRecord | undefined;
  rv = 0;
  readonly writes: { by: string; record: LeaderElectionRecord }[] = [];

  lock(name: string): FakeLock {
    return new FakeLock(this, name);
  }
}

const conflict = (reason = 'Conflict'): ApiException<string> =>
  new ApiException(
    409,
    reason,
    JSON.stringify({ kind: 'Status', code: 409, reason, message: 'the object has been modified' }),
    {},
  );

class FakeLock implements LeaseLock {
  readonly description: string;
  /** Every request fails (network partition). */
  failing = false;
  /** Every request hangs until aborted. */
  hanging = false;
  /** Runs between this lock's get and its next update (to inject a concurrent write). */
  beforeUpdate: (() => void) | undefined;
  calls = 0;

  constructor(
    private readonly server: FakeLeaseServer,
    private readonly name: string,
  ) {
    this.description = `ns/${name}`;
  }

  private async io(signal?: AbortSignal): Promise<void> {
    this.calls++;
    await Promise.resolve();
    if (this.hanging) {
      await new Promise<void>((_resolve, reject) => {
        if (signal?.aborted) reject(new DOMException('aborted', 'AbortError'));
        signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')), { once: true });
      });
    }
    if (this.failing) throw Object.assign(new TypeError('fetch failed'), { cause: new Error('connect ECONNREFUSED') });
  }

  async get(signal?: AbortSignal): Promise<LockedRecord | undefined> {
    await this.io(signal);
    const r = this.server.record;
    return r === undefined ? undefined : { record: { ...r }, resourceVersion: String(this.server.rv) };
  }

  async create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
    await this.io(signal);
    if (this.server.record !== undefined) throw conflict('AlreadyExists');
    this.server.record = { ...record };
    this.server.rv++;
    this.server.writes.push({ by: this.name, record: { ...record } });
  }

  async update(record: LeaderElectionRecord, resourceVersion: string, signal?: AbortSignal): Promise<void> {
    const hook = this.beforeUpdate;
    this.beforeUpdate = undefined;
    hook?.();
    await this.io(signal);
    if (resourceVersion !== String(this.server.rv)) throw conflict();
    this.server.record = { ...record };
    this.server.rv++;
    this.server.writes.push({ by: this.name, record: { ...record } });
  }
}

interface Candidate {
  readonly elector: LeaderElector;
  readonly lock: FakeLock;
  readonly log: string[];
  signal: AbortSignal | undefined;
}

function candidate(
  server: FakeLeaseServer,
  clock: ManualClock,
  id: string,
  extra: Partial<LeaderElectorOptions> = {},
): Candidate {
  const lock = server.lock(id);
  const c: Candidate = {
    lock,
    log: [],
    signal: undefined,
    elector: undefined as unknown as LeaderElector,
  };
  (c as { elector: LeaderElector }).elector = createLeaderElector({
    lock,
    identity: id,
    clock,
    random: () => 0,
    onStartedLeading: (signal) => {
      c.signal = signal;
      c.log.push('started');
    },
    onStoppedLeading: () => c.log.push('stopped'),
    onNewLeader: (who) => c.log.push(`leader ${who}`),
    hooks: { onLeaderChange: (is) => c.log.push(`isLeader ${is}`) },
    ...extra,
  });
  return c;
}

describe('leader election (fake lease, manual clock)', () => {
  let server: FakeLeaseServer;
  let clock: ManualClock;
  let running: Candidate[];

  beforeEach(() => {
    server = new FakeLeaseServer();
    clock = new ManualClock();
    running = [];
  });
  afterEach(async () => {
    for (const c of running) {
      c.lock.failing = false;
      c.lock.hanging = false;
    }
    await Promise.all(running.map((c) => c.elector.stop({ release: false })));
    assert.equal(clock.pending(), 0, 'no timer left behind');
  });

  const start = (id: string, extra: Partial<LeaderElectorOptions> = {}): Candidate => {
    const c = candidate(server, clock, id, extra);
    running.push(c);
    c.elector.start();
    return c;
  };

  it('acquires an absent lease: holder, 15 s duration, microsecond times, 0 transitions', async () => {
    const a = start('a');
    await clock.flush();
    assert.equal(a.elector.isLeader(), true);
    assert.deepEqual(a.log, ['leader a', 'isLeader true', 'started']);
    assert.equal(a.signal?.aborted, false);
    const r = server.record;
    assert.equal(r?.holderIdentity, 'a');
    assert.equal(r?.leaseDurationSeconds, 15);
    assert.equal(r?.leaseTransitions, 0);
    assert.equal(r?.acquireTime, clock.now());
    assert.equal(r?.renewTime, clock.now());
    assert.match(
      JSON.stringify(toSpec(r as LeaderElectionRecord)),
      /"renewTime":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"/,
    );
  });

  it('renews every retryPeriod, keeping acquireTime and leaseTransitions', async () => {
    const a = start('a');
    await clock.flush();
    const acquiredAt = clock.now();
    await clock.advance(2_000);
    assert.equal(server.record?.renewTime, acquiredAt + 2_000);
    await clock.advance(2_000);
    assert.equal(server.record?.renewTime, acquiredAt + 4_000);
    assert.equal(server.record?.acquireTime, acquiredAt);
    assert.equal(server.record?.leaseTransitions, 0);
    assert.equal(a.elector.isLeader(), true);
  });

  it('a second candidate does not acquire a lease that keeps being renewed, and learns the leader', async () => {
    const a = start('a');
    await clock.flush();
    const b = start('b');
    await clock.advance(60_000);
    assert.equal(a.elector.isLeader(), true);
    assert.equal(b.elector.isLeader(), false);
    assert.equal(b.elector.leader(), 'a');
    assert.deepEqual(b.log, ['leader a']);
    assert.ok(server.writes.every((w) => w.by === 'a'));
  });

  it('steps down when renewing fails for renewDeadline, before anyone else may take over', async () => {
    const a = start('a');
    await clock.flush();
    const b = start('b');
    await clock.flush();
    const lastRenew = clock.now();
    a.lock.failing = true;
    await clock.advance(9_999);
    assert.equal(a.elector.isLeader(), true, 'still leader within the renew deadline');
    await clock.advance(2_001);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(a.signal?.aborted, true);
    assert.deepEqual(a.log.slice(-2), ['isLeader false', 'stopped']);
    const steppedDownAt = clock.now();
    // b may only take over once the record stayed unchanged for 15 s by b's clock
    assert.equal(b.elector.isLeader(), false);
    assert.ok(steppedDownAt < lastRenew + 15_000);
    await clock.advance(lastRenew + 15_000 - clock.now() + 2_001);
    assert.equal(b.elector.isLeader(), true);
    assert.equal(server.record?.holderIdentity, 'b');
    assert.equal(server.record?.leaseTransitions, 1);
  });

  it('a renew request that hangs is abandoned at the renew deadline', async () => {
    const a = start('a');
    await clock.flush();
    a.lock.hanging = true;
    await clock.advance(9_000);
    assert.equal(a.elector.isLeader(), true);
    await clock.advance(1_000);
    assert.equal(a.elector.isLeader(), false);
    assert.deepEqual(a.log.slice(-2), ['isLeader false', 'stopped']);
  });

  it('takes over a crashed leader’s lease only after it expired by our own clock, incrementing leaseTransitions', async () => {
    const a = start('a');
    await clock.flush();
    const b = start('b');
    await clock.advance(4_000);
    const lastChange = clock.now();
    await a.elector.stop({ release: false }); // crash: no release
    assert.equal(server.record?.holderIdentity, 'a');
    await clock.advance(14_000);
    assert.equal(b.elector.isLeader(), false, 'not before leaseDuration');
    await clock.advance(lastChange + 15_000 + 2_000 - clock.now());
    assert.equal(b.elector.isLeader(), true);
    assert.equal(server.record?.holderIdentity, 'b');
    assert.equal(server.record?.leaseTransitions, 1);
    assert.equal(server.record?.acquireTime, server.record?.renewTime);
    assert.deepEqual(b.log, ['leader a', 'leader b', 'isLeader true', 'started']);
  });

  it('ignores the holder’s timestamps: a skewed holder that keeps renewing is never taken over', async () => {
    // A holder whose clock is 20 years behind renews every 2 s: its renewTime always looks expired to us.
    server.record = {
      holderIdentity: 'skewed',
      leaseDurationSeconds: 15,
      acquireTime: 0,
      renewTime: 0,
      leaseTransitions: 0,
    };
    server.rv = 1;
    const b = start('b');
    for (let i = 0; i < 30; i++) {
      await clock.advance(2_000);
      server.record = { ...server.record, renewTime: (server.record.renewTime ?? 0) + 2_000 };
      server.rv++;
    }
    assert.equal(b.elector.isLeader(), false);
  });

  it('optimistic concurrency: a conflicting write makes the attempt fail; it succeeds on the next try', async () => {
    server.record = { holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 3 };
    server.rv = 7;
    const a = candidate(server, clock, 'a');
    running.push(a);
    a.lock.beforeUpdate = () => {
      server.rv++; // someone else wrote in between: our resourceVersion is stale now
    };
    a.elector.start();
    await clock.flush();
    assert.equal(a.elector.isLeader(), false);
    await clock.advance(2_000);
    assert.equal(a.elector.isLeader(), true);
    assert.equal(server.record?.leaseTransitions, 4);
  });

  it('two candidates racing to create the lease: exactly one leads', async () => {
    const a = start('a');
    const b = start('b');
    await clock.advance(10_000);
    assert.equal([a, b].filter((c) => c.elector.isLeader()).length, 1);
    assert.equal(
      server.writes.filter((w) => w.record.leaseTransitions === 0 && w.record.acquireTime === w.record.renewTime)
        .length >= 1,
      true,
    );
  });

  it('release on stop: waits for the leader work to settle, empties the holder, and another acquires at once', async () => {
    let finishWork: () => void = () => undefined;
    const order: string[] = [];
    const a = start('a', {
      onStartedLeading: (signal) =>
        new Promise<void>((resolve) => {
          signal.addEventListener('abort', () => {
            order.push('work aborted');
            finishWork = () => {
              order.push('work done');
              resolve();
            };
          });
        }),
      onStoppedLeading: () => order.push('stopped'),
    });
    await clock.flush();
    const b = start('b');
    await clock.advance(4_000);
    const stopping = a.elector.stop();
    await clock.flush();
    assert.deepEqual(order, ['work aborted']);
    assert.equal(server.record?.holderIdentity, 'a', 'not released while the work still runs');
    finishWork();
    await stopping;
    assert.deepEqual(order, ['work aborted', 'work done', 'stopped']);
    assert.equal(server.record?.holderIdentity, '');
    assert.equal(server.record?.leaseDurationSeconds, 1);
    assert.equal(server.record?.leaseTransitions, 0);
    await clock.advance(2_000);
    assert.equal(b.elector.isLeader(), true, 'handed over within one retry period');
    assert.equal(server.record?.leaseTransitions, 1);
  });

  it('release does not wait forever for leader work that never stops', async () => {
    const a = start('a', { onStartedLeading: () => new Promise<void>(() => undefined) });
    await clock.flush();
    const stopping = a.elector.stop();
    await clock.advance(10_000);
    await stopping;
    assert.equal(server.record?.holderIdentity, '');
  });

  it('competes again after losing leadership (reacquire) unless told not to', async () => {
    const a = start('a');
    await clock.flush();
    a.lock.failing = true;
    await clock.advance(12_000);
    assert.equal(a.elector.isLeader(), false);
    a.lock.failing = false;
    await clock.advance(4_000);
    assert.equal(a.elector.isLeader(), true, 'it still held the lease, so it renews it');
    assert.deepEqual(a.log.filter((l) => l === 'started').length, 2);
  });

  it('rejects inconsistent durations', () => {
    const lock = new FakeLeaseServer().lock('x');
    const base = { lock, identity: 'x', onStartedLeading: () => undefined };
    assert.throws(
      () => createLeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }),
      /leaseDuration must be greater/,
    );
    assert.throws(
      () => createLeaderElector({ ...base, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }),
      /retryPeriod\*1.2/,
    );
    assert.throws(() => createLeaderElector({ ...base, retryPeriodMs: 0 }), /> 0/);
  });

  it('reads MicroTime fields whether client-node hands them over as strings or Dates', () => {
    const r = fromSpec({
      holderIdentity: 'h',
      renewTime: '2026-01-01T00:00:01.123456Z' as unknown as V1MicroTime,
      acquireTime: new V1MicroTime(Date.UTC(2026, 0, 1)),
    });
    assert.equal(r.renewTime, Date.UTC(2026, 0, 1, 0, 0, 1, 123));
    assert.equal(r.acquireTime, Date.UTC(2026, 0, 1));
    assert.equal(r.leaseTransitions, 0);
  });
});
