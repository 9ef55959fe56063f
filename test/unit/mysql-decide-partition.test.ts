// decide() on a partial partition: the controller reaches the primary, the primary reaches none of its
// replicas (they reach each other and the controller). Its agent fences it; the controller must fail
// over to a replica, the primary fenced first, and never for a replica that is only lagging, restarting
// or reconnecting, nor while one replica still hears the primary. Table cases, then every combination
// of what a primary and two replicas can say about it (lib/mysql/failover.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import { decide } from '../../lib/mysql/decide.js';
import type { ClusterView, MemberView, ReplicationChannel, Step } from '../../lib/mysql/topology.js';
import { HEARTBEAT_GRACE_MS } from '../../lib/mysql/failover.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const X = '9f11fa47-71ca-11e1-9e33-c80aa9429562';
const g = (text: string): GtidSet => GtidSet.parse(text);
const name = (ordinal: number): string => `db-${ordinal}`;
const host = (ordinal: number): string => `db-${ordinal}.db-members`;
const F = 30_000;
/** The heartbeat period replicateFrom sets. */
const HEARTBEAT = 1_000;

/** The primary db-0 as it answers the controller: by default self-fenced by its agent (read-only, semi-sync off). */
function primary(o: { writable?: boolean; semi?: boolean; executed?: string } = {}): MemberView {
  return {
    name: name(0),
    ordinal: 0,
    host: host(0),
    role: 'primary',
    ready: o.writable ?? false,
    outdated: false,
    sql: {
      serverUuid: '00000000-0000-0000-0000-000000000000',
      writable: o.writable ?? false,
      executed: g(o.executed ?? `${A}:1-10`),
      received: GtidSet.EMPTY,
      semiSync: { enabled: o.semi ?? o.writable ?? false, waitCount: 1 },
    },
  };
}

/** A replica of db-0 that last heard from it `silentMs` ago. */
function replica(
  ordinal: number,
  silentMs: number | undefined,
  o: { executed?: string; received?: string; channel?: Partial<ReplicationChannel> } = {},
): MemberView {
  return {
    name: name(ordinal),
    ordinal,
    host: host(ordinal),
    role: 'replica',
    ready: true,
    outdated: false,
    sql: {
      serverUuid: `0000000${ordinal}-0000-0000-0000-000000000000`,
      writable: false,
      executed: g(o.executed ?? `${A}:1-${7 + ordinal}`),
      received: g(o.received ?? (ordinal === 1 ? `${A}:8-10` : '')),
      channel: {
        sourceHost: host(0),
        receiver: 'CONNECTING',
        applier: 'ON',
        heartbeatMs: HEARTBEAT,
        ...(silentMs !== undefined ? { sourceSilentMs: silentMs } : {}),
        ...o.channel,
      },
      semiSync: { enabled: false, waitCount: 0 },
    },
  };
}

function down(ordinal: number): MemberView {
  return {
    name: name(ordinal),
    ordinal,
    host: host(ordinal),
    role: 'replica',
    ready: false,
    outdated: false,
    error: 'connect ECONNREFUSED',
  };
}

function view(members: MemberView[], overrides: Partial<ClusterView> = {}): ClusterView {
  return {
    members,
    replicas: 3,
    primary: name(0),
    primaryHost: host(0),
    failoverAfterMs: F,
    waitCount: 1,
    knownErrant: new Set(),
    ...overrides,
  };
}

const step = (v: ClusterView): Step => decide(v).step;
const reason = (s: Step): string | undefined => (s.type === 'wait' ? s.reason : undefined);

describe('decide: a primary that answers but that none of its replicas hears (partial partition)', () => {
  it('leaves a primary its agent fenced read-only, and says why, until failoverAfterMs', () => {
    const s = step(view([primary(), replica(1, 20_000), replica(2, 21_000)]));
    assert.equal(reason(s), 'PrimaryIsolated');
    // The shortest silence counts: the failover is timed from the last time any replica heard it.
    assert.match(s.type === 'wait' ? s.message : '', /db-0 for 20 s .*failover after 30 s/);
  });

  it('lets a writable primary its replicas do not hear carry on until then, and reports it', () => {
    const d = decide(view([primary({ writable: true }), replica(1, 10_000), replica(2, 10_000)]));
    assert.equal(d.step.type, 'steady');
    assert.deepEqual(
      d.problems.map((p) => p.reason),
      ['PrimaryIsolated'],
    );
  });

  it('fences the primary first once no replica heard it for failoverAfterMs, timed from the last contact', () => {
    assert.equal(reason(step(view([primary(), replica(1, F - 1), replica(2, 40_000)]))), 'PrimaryIsolated');
    assert.deepEqual(step(view([primary({ writable: true }), replica(1, F), replica(2, 40_000)])), {
      type: 'fence',
      member: 'db-0',
      writable: true,
      cutOffMs: F,
    });
    // Read-only but still guarding commits (the agent's fencing was cut short): fenced all the same.
    assert.deepEqual(step(view([primary({ semi: true }), replica(1, F), replica(2, F)])), {
      type: 'fence',
      member: 'db-0',
      writable: false,
      cutOffMs: F,
    });
  });

  it('then stops the receivers, then promotes the replica holding everything, recording what the old primary held', () => {
    assert.deepEqual(step(view([primary(), replica(1, F), replica(2, F, { channel: { receiver: 'ON' } })])), {
      type: 'stopReceivers',
      members: ['db-1', 'db-2'],
    });
    const off = { channel: { receiver: 'OFF' as const } };
    const s = step(view([primary(), replica(1, F + 3_000, off), replica(2, F + 3_000, off)]));
    assert.equal(s.type, 'promote');
    if (s.type !== 'promote') return;
    assert.equal(s.from, 'db-0');
    assert.equal(s.to, 'db-1');
    assert.ok(s.mustApply.equals(g(`${A}:1-10`)));
    assert.equal(s.outOfReach, 0);
    assert.equal(s.fromExecuted?.toString(), `${A}:1-10`);
    assert.equal(s.cutOffMs, F + 3_000);
  });

  it('waits, the primary left as it is, when no replica can safely take over', () => {
    // db-2 holds an errant transaction: an acknowledged write may be only on db-0 and db-2.
    const errant = replica(2, F, { executed: `${A}:1-9,${X}:1` });
    const s = step(view([primary(), replica(1, F), errant], { knownErrant: new Set(['db-2']) }));
    assert.equal(reason(s), 'FailoverWaiting');
    assert.match(s.type === 'wait' ? s.message : '', /no replica has heard from the primary db-0/);
    // Candidates that diverged: none holds every transaction.
    const diverged = [primary(), replica(1, F, { received: `${A}:10` }), replica(2, F, { executed: `${A}:1-9` })];
    assert.equal(reason(step(view(diverged))), 'FailoverWaiting');
  });

  it('starts a receiver someone stopped again rather than counting its silence, while no failover is due', () => {
    const stopped = replica(2, 20_000, { channel: { receiver: 'OFF', applier: 'OFF' } });
    assert.deepEqual(step(view([primary(), replica(1, 20_000), stopped])), {
      type: 'replicate',
      member: 'db-2',
      source: 'db-0',
      sourceHost: host(0),
    });
  });

  describe('never a failover in the ordinary cases', () => {
    const fresh = 400;
    it('a replica that is merely lagging (it hears the primary, applies behind)', () => {
      const lagging = replica(1, fresh, { executed: `${A}:1-2`, received: `${A}:3-10`, channel: { receiver: 'ON' } });
      const members = [primary({ writable: true }), lagging, replica(2, fresh, { channel: { receiver: 'ON' } })];
      assert.equal(step(view(members)).type, 'steady');
    });

    it('a replica that is restarting (it does not answer), while the other is cut off', () => {
      assert.deepEqual(step(view([primary(), replica(1, 90_000), down(2)])), {
        type: 'enableWrites',
        member: 'db-0',
        waitCount: 1,
      });
    });

    it('a restarted replica that has not heard from the primary since it started (no last contact)', () => {
      assert.equal(step(view([primary({ writable: true }), replica(1, undefined), replica(2, 90_000)])).type, 'steady');
    });

    it('replicas the primary refuses (their password, their TLS): they reach it, and a new primary would refuse them too', () => {
      for (const receiverErrno of [1045, 2026, 2061, 3159]) {
        const refused = { channel: { receiverErrno } };
        const members = [primary({ writable: true }), replica(1, 90_000, refused), replica(2, 90_000, refused)];
        assert.equal(step(view(members)).type, 'steady', `errno ${receiverErrno}`);
        // One refused, one cut off (errno 2003, cannot connect): one replica still reaches the primary.
        const mixed = [
          primary(),
          replica(1, 90_000, refused),
          replica(2, 90_000, { channel: { receiverErrno: 2003 } }),
        ];
        assert.notEqual(step(view(mixed)).type, 'fence', `errno ${receiverErrno} beside 2003`);
      }
      // Both cannot connect (2003) or lost the connection (2013): cut off, fenced first.
      const cut = [
        primary({ writable: true }),
        replica(1, 90_000, { channel: { receiverErrno: 2003 } }),
        replica(2, 90_000, { channel: { receiverErrno: 2013 } }),
      ];
      assert.equal(step(view(cut)).type, 'fence');
    });

    it('a replica whose receiver is reconnecting for a moment (heartbeat overdue by less than failoverAfterMs)', () => {
      const s = step(view([primary({ writable: true }), replica(1, 5_000), replica(2, 5_000)]));
      assert.equal(s.type, 'steady');
      // Within the heartbeat and its grace it is not even overdue.
      const d = decide(
        view([primary({ writable: true }), replica(1, HEARTBEAT + HEARTBEAT_GRACE_MS), replica(2, 90_000)]),
      );
      assert.deepEqual(d.problems, []);
    });

    it('one replica cut off while the other still hears the primary', () => {
      const members = (p: MemberView): MemberView[] => [
        p,
        replica(1, 90_000),
        replica(2, fresh, { channel: { receiver: 'ON' } }),
      ];
      assert.equal(step(view(members(primary({ writable: true })))).type, 'steady');
      // A primary that is read-only (restarted) is made writable again: one replica acknowledges.
      assert.deepEqual(step(view(members(primary()))), { type: 'enableWrites', member: 'db-0', waitCount: 1 });
    });

    it("an idle channel from before recon8s set its heartbeat (MySQL's 30 s period)", () => {
      const legacy = { channel: { heartbeatMs: 30_000 } };
      const members = [primary({ writable: true }), replica(1, 31_000, legacy), replica(2, 31_000, legacy)];
      assert.equal(step(view(members)).type, 'steady');
    });

    it('a primary that needs no acknowledgement (semiSyncReplicas 0) takes writes without its replicas', () => {
      const p = primary({ writable: true, semi: false });
      assert.equal(step(view([p, replica(1, 90_000), replica(2, 90_000)], { waitCount: 0 })).type, 'steady');
    });
  });

  describe('over every combination of a primary that answers and two replicas', () => {
    interface ReplicaState {
      readonly answers: boolean;
      readonly receiver: ReplicationChannel['receiver'];
      readonly silentMs?: number;
      readonly heartbeatMs: number;
      readonly errant: boolean;
    }
    const replicaStates: ReplicaState[] = [{ answers: false, receiver: 'OFF', heartbeatMs: HEARTBEAT, errant: false }];
    for (const receiver of ['ON', 'CONNECTING', 'OFF'] as const)
      for (const silentMs of [undefined, 400, 10_000, F, 90_000])
        for (const heartbeatMs of [HEARTBEAT, 30_000])
          for (const errant of [false, true])
            replicaStates.push({
              answers: true,
              receiver,
              ...(silentMs !== undefined ? { silentMs } : {}),
              heartbeatMs,
              errant,
            });

    const replicaOf = (ordinal: number, s: ReplicaState): MemberView => {
      if (!s.answers) return down(ordinal);
      const executed = `${A}:1-${7 + ordinal}${s.errant ? `,${X}:${ordinal}` : ''}`;
      return replica(ordinal, s.silentMs, { executed, channel: { receiver: s.receiver, heartbeatMs: s.heartbeatMs } });
    };
    /** Heard by the primary's replica within its heartbeat (and grace): the primary reaches it. */
    const hears = (s: ReplicaState): boolean =>
      s.answers && (s.silentMs === undefined || s.silentMs <= s.heartbeatMs + HEARTBEAT_GRACE_MS);

    it('fails over only from a primary none of its replicas hears for failoverAfterMs, fenced first, and never loses a received transaction', () => {
      let n = 0;
      let failedOver = 0;
      for (const writable of [true, false])
        for (const semi of [true, false])
          for (const s1 of replicaStates)
            for (const s2 of replicaStates) {
              n++;
              const p = primary({ writable, semi });
              const members = [p, replicaOf(1, s1), replicaOf(2, s2)];
              const errant = new Set([s1, s2].flatMap((r, i) => (r.errant ? [name(i + 1)] : [])));
              const v = view(members, { knownErrant: errant });
              const s = step(v);
              const where = `${JSON.stringify(s)} for primary ${writable ? 'rw' : 'ro'}${semi ? '+semi' : ''}, db-1 ${JSON.stringify(s1)}, db-2 ${JSON.stringify(s2)}`;
              const followers = [s1, s2].filter((r) => r.answers && !r.errant);
              const someoneHears = [s1, s2].some((r) => !r.errant && hears(r));
              const unasked = [s1, s2].some((r) => !r.answers);
              const shortest = Math.min(...followers.map((r) => r.silentMs ?? 0));
              const failover =
                s.type === 'promote' || s.type === 'stopReceivers' || (s.type === 'fence' && s.member === 'db-0');
              if (failover) {
                failedOver++;
                assert.ok(
                  !someoneHears && !unasked && followers.length > 0,
                  `failed over from a primary a replica hears: ${where}`,
                );
                assert.ok(shortest >= F, `failed over before failoverAfterMs: ${where}`);
                assert.ok(errant.size === 0, `failed over with a replica that may hold the only copy: ${where}`);
              }
              // Never two writable: the replicas stop receiving and one is promoted only once the
              // primary is read-only and guards no commit.
              if (s.type === 'promote' || s.type === 'stopReceivers')
                assert.ok(!writable && !semi, `failed over from a primary not fenced: ${where}`);
              if (s.type === 'fence') assert.equal(s.cutOffMs !== undefined, s.member === 'db-0', where);
              if (s.type === 'promote') {
                assert.ok(!errant.has(s.to), where);
                for (const m of members.slice(1))
                  if (m.sql && !errant.has(m.name))
                    assert.ok(
                      m.sql.executed.union(m.sql.received).isSubsetOf(s.mustApply),
                      `loses ${m.name}'s: ${where}`,
                    );
              }
              // No flapping: a read-only primary none of its replicas hears is never made writable again.
              if (!writable && !someoneHears && !unasked && followers.length > 0)
                assert.notEqual(s.type, 'enableWrites', `made writable again: ${where}`);
              // And the failover happens when it is due and safe.
              if (!someoneHears && !unasked && followers.length === 2 && shortest >= F)
                assert.ok(failover, `no failover from a primary cut off for ${shortest} ms: ${where}`);
            }
      assert.ok(n > 5_000, `only ${n} views`);
      assert.ok(failedOver > 0);
    });
  });
});
