// The proof that a former primary's surplus was never acknowledged (lib/mysql/rejoin.ts): every
// condition alone and in every combination, the records it rests on as status keeps them (a controller
// restart reads them back), and how a look updates them.
import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import {
  failoverFromStatus,
  failoverToStatus,
  termFromStatus,
  termToStatus,
} from '../../lib/controller/mysql-cluster/ha/primary-records.js';
import type { MemberSql } from '../../lib/mysql/topology.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';
import type { FailoverRecord, PrimaryTerm, RejoinVerdict, SurplusFacts } from '../../lib/mysql/rejoin.js';
import {
  discardRequest,
  failoverAfterLook,
  failoverAfterUnsafeStop,
  rejoinNote,
  rejoinVerdict,
  startTerm,
  termAfterLook,
  unsafeStopHolding,
} from '../../lib/mysql/rejoin.js';

/** db-0's server_uuid: the former primary. */
const U0 = '00000000-aaaa-0000-0000-000000000000';
/** db-1's: the replica the failover promoted. */
const U1 = '11111111-aaaa-0000-0000-000000000000';
/** db-2's: a replica. */
const U2 = '22222222-aaaa-0000-0000-000000000000';
/** The primary before db-0 (its transactions every member holds). */
const A = 'aaaaaaaa-aaaa-0000-0000-000000000000';
const g = (text: string): GtidSet => GtidSet.parse(text);
const TIME = '2026-11-22T21:00:00.000Z';

const sql = (executed: string, o: Partial<MemberSql> = {}): MemberSql => ({
  serverUuid: U0,
  writable: false,
  executed: g(executed),
  received: GtidSet.EMPTY,
  semiSync: { enabled: false, waitCount: 0 },
  ...o,
});

/** db-0's term: it held U0:1-5 of its own when it became the primary, its commits waited for one acknowledgement. */
const TERM: PrimaryTerm = { member: 'db-0', serverUuid: U0, ownGtidsAtStart: g(`${U0}:1-5`), semiSyncReplicas: 1 };
/** db-1 was promoted with every replica in reach. */
const FAILOVER: FailoverRecord = { from: 'db-0', to: 'db-1', time: TIME, outOfReach: 0, term: TERM };

/**
 * db-0 is back read-only with U0:11-12, which no replica received before the failover; db-1, the
 * primary, holds U0:1-10 and its own writes since.
 */
function facts(): {
  member: { name: string; sql: MemberSql };
  primary: { name: string; executed: GtidSet };
  failover?: FailoverRecord;
} {
  return {
    member: { name: 'db-0', sql: sql(`${A}:1-100,${U0}:1-12`) },
    primary: { name: 'db-1', executed: g(`${A}:1-100,${U0}:1-10,${U1}:1-3`) },
    failover: FAILOVER,
  };
}

type Facts = ReturnType<typeof facts>;

/** Each condition of rejoinVerdict, made false, in the order the verdict checks them, and what it then says. */
const BROKEN: readonly { readonly what: string; readonly breaks: (f: Facts) => void; readonly why: RegExp }[] = [
  {
    what: 'the last failover replaced another member',
    breaks: (f) => (f.failover = f.failover && { ...f.failover, from: 'db-2' }),
    why: /not the primary the last failover replaced \(db-2 was\)/,
  },
  {
    what: 'the primary is no longer the one that failover promoted',
    breaks: (f) => (f.primary.name = 'db-2'),
    why: /the primary is db-2, not db-1, which the failover from it promoted/,
  },
  {
    what: 'its term was not recorded',
    breaks: (f) => {
      if (!f.failover) return;
      const { term: _term, ...rest } = f.failover;
      f.failover = rest;
    },
    why: /its term as the primary was not recorded/,
  },
  {
    what: 'its data is not what it was (another server_uuid)',
    breaks: (f) => (f.member.sql = { ...f.member.sql, serverUuid: U2 }),
    why: new RegExp(`its server_uuid is ${U2}, not ${U0}`),
  },
  {
    what: 'a surplus transaction of another source',
    breaks: (f) => (f.member.sql = { ...f.member.sql, executed: f.member.sql.executed.union(g(`${A}:101`)) }),
    why: new RegExp(`some of them \\(${A}:101\\) did not originate on it`),
  },
  {
    what: 'a surplus transaction of its own from before its term (a write made on it as a replica)',
    breaks: (f) => {
      const failover = f.failover;
      if (failover?.term) f.failover = { ...failover, term: { ...failover.term, ownGtidsAtStart: g(`${U0}:1-5:11`) } };
    },
    why: new RegExp(`some of them \\(${U0}:11\\) were committed on it before its term as the primary began`),
  },
  {
    what: 'semi-synchronous replication off during its term',
    breaks: (f) => {
      const failover = f.failover;
      if (failover?.term) f.failover = { ...failover, term: { ...failover.term, semiSyncReplicas: 0 } };
    },
    why: /semi-synchronous replication was off during its term/,
  },
  {
    what: 'as many replicas out of the failover’s reach as acknowledgements',
    breaks: (f) => (f.failover = f.failover && { ...f.failover, outOfReach: 1 }),
    why: /1 of its replicas were out of reach, not fewer than the 1 acknowledgement/,
  },
  {
    what: 'a transaction committed on it after the failover, at which it answered',
    breaks: (f) => (f.failover = f.failover && { ...f.failover, ownGtidsAtFailover: g(`${U0}:1-11`) }),
    why: new RegExp(`some of them \\(${U0}:12\\) were committed on it after it was replaced`),
  },
  {
    what: 'seen writable without the semi-synchronous guard since the failover',
    breaks: (f) => (f.failover = f.failover && { ...f.failover, unprovable: 'it was found writable at …' }),
    why: /^it was found writable at …$/,
  },
  {
    what: 'writable now',
    breaks: (f) => (f.member.sql = { ...f.member.sql, writable: true }),
    why: /it is writable/,
  },
];

const verdictOf = (f: Facts): RejoinVerdict | undefined => rejoinVerdict(f as SurplusFacts);

describe('rejoin: a former primary whose surplus provably was never acknowledged', () => {
  it('is discarded when every condition holds, naming exactly the surplus', () => {
    const v = verdictOf(facts());
    assert.equal(v?.kind, 'discard');
    assert.equal(v.surplus.toString(), `${U0}:11-12`);
    assert.equal(v.member, 'db-0');
  });

  it('is discarded as well when it answered at the failover holding every one of them (it had restarted)', () => {
    const f = facts();
    f.failover = { ...FAILOVER, ownGtidsAtFailover: g(`${U0}:1-12`) };
    assert.equal(verdictOf(f)?.kind, 'discard');
  });

  it('is no verdict for a member holding nothing the primary lacks', () => {
    const f = facts();
    f.member.sql = sql(`${A}:1-100,${U0}:1-10`);
    assert.equal(verdictOf(f), undefined);
  });

  for (const { what, breaks, why } of BROKEN)
    it(`stays manual when ${what}, and says why`, () => {
      const f = facts();
      breaks(f);
      const v = verdictOf(f);
      assert.equal(v?.kind, 'manual');
      assert.match(v.why, why);
      assert.match(
        rejoinNote(v),
        /^not discarded automatically: .*; re-provision it by clone \(kubectl annotate pod db-0 recon8s\.dev\/reprovision=<any new value>\) to discard them$/,
      );
    });

  it('is discarded only when every condition holds, whichever combination fails, and names the first that fails (exhaustive)', () => {
    for (const answered of [false, true])
      for (let mask = 0; mask < 1 << BROKEN.length; mask++) {
        const f = facts();
        if (answered) f.failover = { ...FAILOVER, ownGtidsAtFailover: g(`${U0}:1-12`) };
        BROKEN.forEach((b, i) => mask & (1 << i) && b.breaks(f));
        const v = verdictOf(f);
        const first = BROKEN.findIndex((_b, i) => mask & (1 << i));
        const where = `answered at the failover: ${answered}; broken: ${BROKEN.filter((_b, i) => mask & (1 << i))
          .map((b) => b.what)
          .join(', ')}`;
        if (first < 0) {
          assert.equal(v?.kind, 'discard', where);
          continue;
        }
        assert.equal(v?.kind, 'manual', where);
        assert.match(v.why, BROKEN[first]?.why ?? /never/, where);
      }
  });

  it("stays manual for a person's write on a replica that was never the primary", () => {
    // db-2 replicated from db-0, then from db-1; someone wrote on it directly.
    const f: Facts = {
      member: { name: 'db-2', sql: sql(`${A}:1-100,${U0}:1-10,${U1}:1-3,${U2}:1`, { serverUuid: U2 }) },
      primary: { name: 'db-1', executed: g(`${A}:1-100,${U0}:1-10,${U1}:1-3`) },
      failover: FAILOVER,
    };
    const v = verdictOf(f);
    assert.equal(v?.kind, 'manual');
    assert.match(v.why, /not the primary the last failover replaced \(db-0 was\)/);
    assert.equal(v.surplus.toString(), `${U2}:1`);
    const { failover: _failover, ...none } = f;
    const never = verdictOf(none);
    assert.match(never?.kind === 'manual' ? never.why : '', /^no failover from it is recorded/);
  });

  it("stays manual for a former primary holding a person's write made on it while it was a replica, whose client was told it committed", () => {
    // db-0 was a replica, someone wrote U0:6 on it directly, then it was promoted (its term began at U0:1-6),
    // and no replica received U0:6 before it was lost.
    const f = facts();
    f.member.sql = sql(`${A}:1-100,${U0}:1-6`);
    f.primary.executed = g(`${A}:1-100,${U0}:1-5`);
    f.failover = { ...FAILOVER, term: { ...TERM, ownGtidsAtStart: g(`${U0}:1-6`) } };
    const v = verdictOf(f);
    assert.equal(
      v?.kind === 'manual' && v.why,
      `some of them (${U0}:6) were committed on it before its term as the primary began: a write made on it as a replica`,
    );
  });

  describe('asked once', () => {
    it('is "requested" once its agent was asked to discard it, and its note says so', () => {
      const f = facts();
      f.failover = { ...FAILOVER, discardRequested: g(`${U0}:11-12`) };
      const v = verdictOf(f);
      assert.equal(v?.kind, 'requested');
      assert.match(
        rejoinNote(v),
        /^they were never acknowledged \(it was the primary until the failover to db-1 at .*\): its agent was asked to re-provision it by clone, discarding them; the binary logs holding them are kept on its volume/,
      );
    });

    it('stays manual once it holds more than its agent was asked to discard', () => {
      const f = facts();
      f.failover = { ...FAILOVER, discardRequested: g(`${U0}:11`) };
      const v = verdictOf(f);
      assert.equal(
        v?.kind === 'manual' && v.why,
        `it holds more (${U0}:12) than its agent was asked to discard (${U0}:11)`,
      );
    });

    it('asks its agent with an annotation value that carries the set it may discard', () => {
      assert.equal(discardRequest(g(`${U0}:11-12`)), `discard-unacknowledged:${U0}:11-12`);
    });
  });

  describe('the records, as status keeps them (what a restarted controller reads back)', () => {
    it('read back to the same verdict', () => {
      const full: FailoverRecord = {
        ...FAILOVER,
        ownGtidsAtFailover: g(`${U0}:1-12`),
        discardRequested: g(`${U0}:11-12`),
      };
      for (const record of [FAILOVER, full, { ...FAILOVER, unprovable: 'seen writable' }]) {
        const back = failoverFromStatus(JSON.parse(JSON.stringify(failoverToStatus(record))));
        assert.deepEqual(back && failoverToStatus(back), failoverToStatus(record));
        const f = facts();
        const restarted = { ...f, ...(back ? { failover: back } : {}) };
        assert.deepEqual(verdictOf(restarted)?.kind, verdictOf({ ...f, failover: record })?.kind);
      }
      assert.deepEqual(termFromStatus(termToStatus(TERM)), TERM);
    });

    it('prove nothing once a part cannot be read', () => {
      assert.equal(termFromStatus({ ...termToStatus(TERM), ownGtidsAtStart: 'not a set' }), undefined);
      const noTerm = failoverFromStatus({
        ...failoverToStatus(FAILOVER),
        term: { ...termToStatus(TERM), ownGtidsAtStart: '?' },
      });
      assert.equal(noTerm?.term, undefined);
      const unread = verdictOf({ ...facts(), ...(noTerm ? { failover: noTerm } : {}) });
      assert.match(unread?.kind === 'manual' ? unread.why : '', /its term as the primary was not recorded/);
      const garbled = failoverFromStatus({ ...failoverToStatus(FAILOVER), ownGtidsAtFailover: '?' });
      const v = verdictOf({ ...facts(), ...(garbled ? { failover: garbled } : {}) });
      assert.equal(v?.kind === 'manual' && v.why, 'status.lastFailover.ownGtidsAtFailover is not a GTID set');
    });
  });

  describe('the term, as looks update it', () => {
    const primary = (o: Partial<MemberSql>): { name: string; sql: MemberSql } => ({
      name: 'db-0',
      sql: sql(`${A}:1-100,${U0}:1-8`, { writable: true, semiSync: { enabled: true, waitCount: 1 }, ...o }),
    });

    it('begins, when a primary is chosen, with its own transactions then and the wait it is made writable with', () => {
      assert.deepEqual(startTerm('db-0', sql(`${A}:1-100,${U0}:1-5`), 2), {
        member: 'db-0',
        serverUuid: U0,
        ownGtidsAtStart: g(`${U0}:1-5`),
        semiSyncReplicas: 2,
      });
    });

    it('begins at the first look for a primary chosen before terms were recorded, with what it waits for then', () => {
      assert.deepEqual(termAfterLook(undefined, primary({}), 1), { ...TERM, ownGtidsAtStart: g(`${U0}:1-8`) });
      assert.equal(
        termAfterLook(undefined, primary({ semiSync: { enabled: false, waitCount: 1 } }), 1).semiSyncReplicas,
        0,
      );
      // Read-only (it waits to be made writable): the wait it will be given.
      assert.equal(termAfterLook(undefined, primary({ writable: false }), 2).semiSyncReplicas, 2);
      // Another member: a term of its own.
      assert.equal(termAfterLook({ ...TERM, member: 'db-2' }, primary({}), 1).member, 'db-0');
    });

    it("is kept as it is when its member answers with another server_uuid (it lost its data): the term still says what the cluster's data was", () => {
      const lost = { ...TERM, serverUuid: U2 };
      assert.equal(termAfterLook(lost, primary({}), 1), lost);
      assert.equal(termAfterLook(lost, primary({ writable: false }), 2), lost);
    });

    it('is lowered when the writable primary waits for fewer acknowledgements, never raised, and kept as it is otherwise', () => {
      const two = { ...TERM, semiSyncReplicas: 2 };
      assert.equal(termAfterLook(two, primary({}), 2).semiSyncReplicas, 1);
      assert.equal(termAfterLook(two, primary({ semiSync: { enabled: false, waitCount: 2 } }), 2).semiSyncReplicas, 0);
      assert.equal(termAfterLook(TERM, primary({ semiSync: { enabled: true, waitCount: 2 } }), 2), TERM);
      // Read-only (fenced for a switchover): it takes no write, whatever its settings.
      assert.equal(
        termAfterLook(two, primary({ writable: false, semiSync: { enabled: false, waitCount: 0 } }), 2),
        two,
      );
    });
  });

  describe('the failover, as looks at its former primary update it', () => {
    const former = (o: Partial<MemberSql>): { name: string; sql: MemberSql } => ({
      name: 'db-0',
      sql: sql(`${U0}:1-12`, o),
    });

    it('is unprovable from a look that finds it writable without semi-synchronous replication waiting as its term did', () => {
      const off = failoverAfterLook(FAILOVER, former({ writable: true }), TIME);
      assert.match(
        off?.unprovable ?? '',
        new RegExp(
          `^it was found writable at ${TIME}, after it was replaced, with its commits waiting for 0 acknowledgement`,
        ),
      );
      const fewer = { ...FAILOVER, term: { ...TERM, semiSyncReplicas: 2 } };
      assert.ok(
        failoverAfterLook(fewer, former({ writable: true, semiSync: { enabled: true, waitCount: 1 } }), TIME)
          ?.unprovable,
      );
      // Without a term, a writable former primary proves nothing either.
      const { term: _term, ...noTerm } = FAILOVER;
      assert.ok(
        failoverAfterLook(noTerm, former({ writable: true, semiSync: { enabled: true, waitCount: 1 } }), TIME)
          ?.unprovable,
      );
    });

    it('is kept as it is for a deposed primary still guarded (a partition healed before it fenced itself), a read-only one, another member, one that does not answer', () => {
      for (const look of [
        former({ writable: true, semiSync: { enabled: true, waitCount: 1 } }),
        former({}),
        { name: 'db-2', sql: sql('', { writable: true }) },
        { name: 'db-0' },
        undefined,
      ])
        assert.equal(failoverAfterLook(FAILOVER, look, TIME), FAILOVER);
      const gone = { ...FAILOVER, unprovable: 'first reason' };
      assert.equal(failoverAfterLook(gone, former({ writable: true }), TIME), gone, 'the first reason stays');
    });
  });
  describe("a stop of the former primary's mysqld that could have acknowledged commits alone (condition 11)", () => {
    const stop = (executed: string, found = TIME) => ({ found, why: 'shut down cleanly, not fenced', executed });
    it('holds the surplus it shares with what mysqld held at that stop, the first such stop', () => {
      const surplus = g(`${U0}:11-12`);
      assert.equal(unsafeStopHolding(surplus, []), undefined);
      assert.equal(unsafeStopHolding(surplus, [stop(`${U0}:1-10`)]), undefined, 'a stop before them holds none');
      const found = unsafeStopHolding(surplus, [stop(`${U0}:1-10`), stop(`${U0}:1-11`, 'second'), stop(`${U0}:1-12`)]);
      assert.equal(found?.stop.found, 'second');
      assert.equal(found.held.toString(), `${U0}:11`);
    });
    it('makes the proof unprovable with the reason the condition shows, once: the first reason stays', () => {
      const found = { stop: stop(`${U0}:1-12`), held: g(`${U0}:11-12`) };
      const after = failoverAfterUnsafeStop(FAILOVER, found);
      assert.equal(
        after.unprovable,
        `its agent found a stop of its mysqld at ${TIME} that could have acknowledged commits alone (shut down cleanly, not fenced), when it held ${U0}:11-12`,
      );
      const f = facts();
      f.failover = after;
      const v = verdictOf(f);
      assert.equal(v?.kind, 'manual');
      assert.match(rejoinNote(v), /^not discarded automatically: its agent found a stop of its mysqld/);
      const gone = { ...FAILOVER, unprovable: 'first reason' };
      assert.equal(failoverAfterUnsafeStop(gone, found), gone);
    });
  });
});
