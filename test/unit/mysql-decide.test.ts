import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import { decide } from '../../lib/mysql/decide.js';
import type {
  ClusterView,
  Decision,
  MemberSql,
  MemberView,
  ReplicationChannel,
  Step,
} from '../../lib/mysql/topology.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';

/** The uuid of the cluster's writes. */
const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
/** The uuid of a member that took writes of its own (errant transactions). */
const X = '9f11fa47-71ca-11e1-9e33-c80aa9429562';
const g = (text: string): GtidSet => GtidSet.parse(text);

const name = (ordinal: number): string => `db-${ordinal}`;
const host = (ordinal: number): string => `db-${ordinal}.db-members`;

interface MemberOptions {
  role?: MemberView['role'];
  ready?: boolean;
  outdated?: boolean;
  error?: string;
}

/** A member that answered. */
function member(ordinal: number, sql: Partial<MemberSql>, options: MemberOptions = {}): MemberView {
  return {
    name: name(ordinal),
    ordinal,
    host: host(ordinal),
    ...('role' in options ? { role: options.role } : {}),
    ready: options.ready ?? true,
    outdated: options.outdated ?? false,
    ...(options.error ? { error: options.error } : {}),
    sql: {
      serverUuid: `0000000${ordinal}-0000-0000-0000-000000000000`,
      writable: false,
      executed: GtidSet.EMPTY,
      received: GtidSet.EMPTY,
      semiSync: { enabled: false, waitCount: 0 },
      ...sql,
    },
  };
}

/** A member whose pod exists but that did not answer. */
function silent(ordinal: number, options: MemberOptions = {}): MemberView {
  return {
    name: name(ordinal),
    ordinal,
    host: host(ordinal),
    ...('role' in options ? { role: options.role } : {}),
    ready: options.ready ?? false,
    outdated: options.outdated ?? false,
    error: options.error ?? 'connect ECONNREFUSED',
  };
}

/** A member that presented a certificate the cluster's CA does not vouch for: refused, so it did not answer. */
function refused(
  ordinal: number,
  options: MemberOptions = {},
  reason = 'unable to verify the first certificate',
): MemberView {
  return { ...silent(ordinal, { ready: true, ...options }), certificateRejected: reason };
}

/** A writable primary with semi-synchronous replication waiting for one replica, labelled primary. */
function primary(
  ordinal: number,
  executed: string,
  options: MemberOptions = {},
  sql: Partial<MemberSql> = {},
): MemberView {
  return member(
    ordinal,
    { writable: true, executed: g(executed), semiSync: { enabled: true, waitCount: 1 }, ...sql },
    { role: 'primary', ...options },
  );
}

function channel(from: number, overrides: Partial<ReplicationChannel> = {}): ReplicationChannel {
  return { sourceHost: host(from), receiver: 'ON', applier: 'ON', ...overrides };
}

/** A read-only member replicating from `from`, labelled replica. */
function replica(
  ordinal: number,
  executed: string,
  options: MemberOptions & { from?: number; received?: string; channel?: Partial<ReplicationChannel> } = {},
): MemberView {
  return member(
    ordinal,
    {
      executed: g(executed),
      received: g(options.received ?? ''),
      channel: channel(options.from ?? 0, options.channel),
    },
    { role: 'replica', ...options },
  );
}

function replicaSql(ordinal: number): MemberSql {
  const sql = replica(ordinal, `${A}:1-10`).sql;
  if (!sql) throw new Error('a replica answers');
  return sql;
}

/** Three members, db-0 the recorded primary, waiting for one acknowledgement. */
function view(members: MemberView[], overrides: Partial<ClusterView> = {}): ClusterView {
  return {
    members,
    replicas: 3,
    primary: name(0),
    primaryHost: host(0),
    failoverAfterMs: 30_000,
    waitCount: 1,
    knownErrant: new Set(),
    ...overrides,
  };
}

const healthy = (): MemberView[] => [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), replica(2, `${A}:1-9`)];

const step = (v: ClusterView): Step => decide(v).step;

describe('decide (MySQL cluster manager)', () => {
  it('is steady on a healthy cluster', () => {
    const d = decide(view(healthy()));
    assert.deepEqual(d.step, { type: 'steady' });
    assert.deepEqual(d.problems, []);
    assert.equal(d.errant.size, 0);
  });

  it('reports every member: role, reachability, how far behind', () => {
    const d = decide(view([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), silent(2, { error: 'timeout' })]));
    assert.deepEqual(d.members, [
      { name: 'db-0', role: 'primary', reachable: true, writable: true },
      { name: 'db-1', role: 'replica', reachable: true, writable: false, replicating: true, behind: 0 },
      { name: 'db-2', role: 'none', reachable: false, message: 'timeout' },
    ]);
    const lagging = decide(view(healthy())).members.find((m) => m.name === 'db-2');
    assert.equal(lagging?.behind, 1);
  });

  describe('the first primary', () => {
    it('bootstraps pod 0 of a new cluster while the others do not answer yet', () => {
      assert.deepEqual(
        step(view([member(0, {}), silent(1), silent(2)], { primary: undefined, primaryHost: undefined })),
        {
          type: 'bootstrap',
          member: 'db-0',
        },
      );
    });

    it('bootstraps the lowest ordinal among empty members', () => {
      assert.deepEqual(step(view([member(1, {}), member(0, {}), member(2, {})], { primary: undefined })), {
        type: 'bootstrap',
        member: 'db-0',
      });
    });

    it('bootstraps the one writable member when no primary is recorded', () => {
      const members = [member(0, { executed: g(`${A}:1-3`) }), member(1, { writable: true, executed: g(`${A}:1-5`) })];
      assert.deepEqual(step(view(members, { primary: undefined })), { type: 'bootstrap', member: 'db-1' });
    });

    it('waits (PrimaryAmbiguous) when two members are writable', () => {
      const members = [member(0, { writable: true }), member(1, { writable: true }), member(2, {})];
      const s = step(view(members, { primary: undefined }));
      assert.equal(s.type, 'wait');
      assert.equal(s.type === 'wait' && s.reason, 'PrimaryAmbiguous');
    });

    it('waits when no member answers', () => {
      const s = step(view([silent(0), silent(1), silent(2)], { primary: undefined }));
      assert.equal(s.type === 'wait' && s.reason, 'NoMemberAnswers');
    });

    it("bootstraps the member holding every other one's history", () => {
      const members = [
        member(0, { executed: g(`${A}:1-3`) }),
        member(1, { executed: g(`${A}:1-3`), received: g(`${A}:4-8`) }),
        member(2, { executed: g(`${A}:1-5`) }),
      ];
      assert.deepEqual(step(view(members, { primary: undefined })), { type: 'bootstrap', member: 'db-1' });
    });

    it('waits when histories diverged (no member holds everything)', () => {
      const members = [member(0, { executed: g(`${A}:1-3`) }), member(1, { executed: g(`${X}:1`) }), member(2, {})];
      const s = step(view(members, { primary: undefined }));
      assert.equal(s.type === 'wait' && s.reason, 'PrimaryAmbiguous');
    });

    it('waits for silent members before choosing among members with data', () => {
      const s = step(view([member(0, { executed: g(`${A}:1-3`) }), silent(1), member(2, {})], { primary: undefined }));
      assert.equal(s.type === 'wait' && s.reason, 'MembersUnreachable');
      assert.match(s.type === 'wait' ? s.message : '', /db-1/);
    });

    it('bootstraps a restored member without waiting for silent members that build a data directory from nothing (they wait in their bootstrap to clone it)', () => {
      const restored = member(0, { executed: g(`${A}:1-30`) });
      const building = (o: number): MemberView => ({ ...silent(o), buildingDataDirectory: true });
      assert.deepEqual(step(view([restored, building(1), building(2)], { primary: undefined })), {
        type: 'bootstrap',
        member: 'db-0',
      });
      // One silent member that might hold data is still waited for.
      const s = step(view([restored, building(1), silent(2)], { primary: undefined }));
      assert.equal(s.type === 'wait' && s.reason, 'MembersUnreachable');
      assert.match(s.type === 'wait' ? s.message : '', /db-2/);
      assert.doesNotMatch(s.type === 'wait' ? s.message : '', /db-1/);
    });
  });

  describe('fencing', () => {
    it('fences a writable member that is not the primary before anything else', () => {
      const members = [
        primary(0, `${A}:1-10`, { role: undefined }, { writable: false }),
        member(1, { writable: true, executed: g(`${A}:1-10`) }, { role: 'primary' }),
        replica(2, `${A}:1-9`, { role: 'none' }),
      ];
      assert.deepEqual(step(view(members)), { type: 'fence', member: 'db-1', writable: true });
    });

    it('fences before failing over from a lost primary', () => {
      const members = [
        silent(0),
        member(1, { writable: true, executed: g(`${A}:1-10`) }, { role: 'replica' }),
        replica(2, `${A}:1-9`),
      ];
      assert.deepEqual(step(view(members, { primaryDownMs: 600_000 })), {
        type: 'fence',
        member: 'db-1',
        writable: true,
      });
    });

    it('fences before a switchover or a rolling update', () => {
      const members = [
        primary(0, `${A}:1-10`, { outdated: true }),
        replica(1, `${A}:1-10`, { outdated: true }),
        member(2, { writable: true, executed: g(`${A}:1-9`) }, { role: 'replica' }),
      ];
      assert.deepEqual(step(view(members, { switchover: { id: 'r1', to: 'db-1' } })), {
        type: 'fence',
        member: 'db-2',
        writable: true,
      });
    });

    it('turns the source side of semi-synchronous replication off on a read-only former primary', () => {
      // Its applier would wait for ever for acknowledgements of what it replicates.
      const members = [
        primary(0, `${A}:1-10`),
        { ...replica(1, `${A}:1-10`), sql: { ...replicaSql(1), semiSync: { enabled: true, waitCount: 1 } } },
        replica(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members)), { type: 'fence', member: 'db-1', writable: false });
    });
  });

  describe('role labels', () => {
    it('removes a stale primary label before the primary gets it', () => {
      const members = [
        primary(0, `${A}:1-10`, { role: 'replica' }),
        replica(1, `${A}:1-10`, { role: 'primary' }),
        replica(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members)), { type: 'label', member: 'db-1', role: 'none' });
    });

    it('removes a stale primary label from a member that does not answer', () => {
      const members = [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), silent(2, { role: 'primary' })];
      assert.deepEqual(step(view(members)), { type: 'label', member: 'db-2', role: 'none' });
    });

    it('labels the writable primary', () => {
      const members = [primary(0, `${A}:1-10`, { role: undefined }), replica(1, `${A}:1-10`), replica(2, `${A}:1-10`)];
      assert.deepEqual(step(view(members)), { type: 'label', member: 'db-0', role: 'primary' });
    });

    it('labels a replica that replicates from the primary', () => {
      const members = [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`, { role: undefined }), replica(2, `${A}:1-10`)];
      assert.deepEqual(step(view(members)), { type: 'label', member: 'db-1', role: 'replica' });
    });
  });

  describe('the primary takes writes', () => {
    it('enables writes on a read-only primary that is not down, with the wait count', () => {
      const members = [
        primary(0, `${A}:1-10`, {}, { writable: false }),
        replica(1, `${A}:1-10`),
        replica(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members, { waitCount: 2 })), { type: 'enableWrites', member: 'db-0', waitCount: 2 });
    });

    it('enables writes again when semi-synchronous replication does not match', () => {
      const off = [primary(0, `${A}:1`, {}, { semiSync: { enabled: false, waitCount: 0 } }), replica(1, `${A}:1`)];
      assert.deepEqual(step(view(off, { replicas: 2 })), { type: 'enableWrites', member: 'db-0', waitCount: 1 });
      const count = [primary(0, `${A}:1`, {}, { semiSync: { enabled: true, waitCount: 2 } }), replica(1, `${A}:1`)];
      assert.deepEqual(step(view(count, { replicas: 2 })), { type: 'enableWrites', member: 'db-0', waitCount: 1 });
      const unwanted = [primary(0, `${A}:1`, {}, { semiSync: { enabled: true, waitCount: 1 } })];
      assert.deepEqual(step(view(unwanted, { replicas: 1, waitCount: 0 })), {
        type: 'enableWrites',
        member: 'db-0',
        waitCount: 0,
      });
      const single = [primary(0, `${A}:1`, {}, { semiSync: { enabled: false, waitCount: 0 } })];
      assert.deepEqual(step(view(single, { replicas: 1, waitCount: 0 })), { type: 'steady' });
    });

    it('enables writes before labelling the primary', () => {
      const members = [primary(0, `${A}:1-10`, { role: undefined }, { writable: false }), replica(1, `${A}:1-10`)];
      assert.deepEqual(step(view(members, { replicas: 2 })), { type: 'enableWrites', member: 'db-0', waitCount: 1 });
    });
  });

  describe('writes waiting for an acknowledgement', () => {
    const semi = (clients?: number, waitCount = 1): Partial<MemberSql> => ({
      semiSync: { enabled: true, waitCount, ...(clients === undefined ? {} : { clients }) },
    });

    it('says so while a new primary has no semi-synchronous replica connected (its first replica still starting)', () => {
      const d = decide(view([primary(0, `${A}:1-2`, {}, semi(0)), silent(1), silent(2)]));
      assert.equal(
        d.writesWait,
        'writes wait until a replica acknowledges them: the primary db-0 waits for 1 semi-synchronous replica and none is connected (until then commits block, and clients see timeouts or "Lost connection")',
      );
      // Not a fault to fix: no Degraded problem, and the manager still points the replicas at the primary.
      assert.deepEqual(d.problems, []);
    });

    it('says how many are connected when it waits for more than that', () => {
      const d = decide(
        view([primary(0, `${A}:1-2`, {}, semi(1, 2)), replica(1, `${A}:1-2`), silent(2)], { waitCount: 2 }),
      );
      assert.match(d.writesWait ?? '', /waits for 2 semi-synchronous replicas and 1 is connected/);
    });

    it('is quiet once enough replicas acknowledge, and when nothing waits (read-only, or semi-synchronous replication off)', () => {
      assert.equal(decide(view([primary(0, `${A}:1-2`, {}, semi(1)), replica(1, `${A}:1-2`)])).writesWait, undefined);
      assert.equal(decide(view(healthy())).writesWait, undefined);
      const readOnly = primary(0, `${A}:1-2`, {}, { ...semi(0), writable: false });
      assert.equal(decide(view([readOnly, silent(1)])).writesWait, undefined);
      const alone = primary(0, `${A}:1`, {}, { semiSync: { enabled: false, waitCount: 0 } });
      assert.equal(decide(view([alone], { replicas: 1, waitCount: 0 })).writesWait, undefined);
      assert.equal(decide(view([silent(0), silent(1)], { primary: undefined })).writesWait, undefined);
    });

    it("counts the replicas connected to the primary when the primary's own count is not known", () => {
      // Without Rpl_semi_sync_source_clients: a receiver that is still connecting acknowledges nothing yet.
      const connecting = replica(1, `${A}:1-2`, { channel: { receiver: 'CONNECTING' } });
      assert.match(decide(view([primary(0, `${A}:1-2`), connecting, silent(2)])).writesWait ?? '', /none is connected/);
      assert.equal(decide(view([primary(0, `${A}:1-2`), replica(1, `${A}:1-2`), silent(2)])).writesWait, undefined);
      // An errant member acknowledges nothing that counts.
      const errant = replica(1, `${A}:1-2,${X}:1`);
      assert.match(decide(view([primary(0, `${A}:1-2`), errant, silent(2)])).writesWait ?? '', /none is connected/);
    });
  });

  describe('replicas follow the primary', () => {
    it('points a member without a channel at the primary', () => {
      const members = [primary(0, `${A}:1-10`), member(1, { executed: g(`${A}:1-4`) }), replica(2, `${A}:1-10`)];
      assert.deepEqual(step(view(members)), { type: 'replicate', member: 'db-1', source: 'db-0', sourceHost: host(0) });
    });

    it('points a member replicating from an old primary at the new one', () => {
      const members = [
        replica(0, `${A}:1-10`, { from: 2 }),
        primary(1, `${A}:1-10`),
        replica(2, `${A}:1-10`, { from: 1 }),
      ];
      assert.deepEqual(step(view(members, { primary: 'db-1', primaryHost: host(1) })), {
        type: 'replicate',
        member: 'db-0',
        source: 'db-1',
        sourceHost: host(1),
      });
    });

    it('restarts replication whose applier stopped without an error', () => {
      const members = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`),
        replica(2, `${A}:1-9`, { channel: { applier: 'OFF' } }),
      ];
      assert.deepEqual(step(view(members)), { type: 'replicate', member: 'db-2', source: 'db-0', sourceHost: host(0) });
    });

    it('counts a receiver that is connecting as replicating', () => {
      const members = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`),
        replica(2, `${A}:1-9`, { channel: { receiver: 'CONNECTING' } }),
      ];
      assert.deepEqual(step(view(members)), { type: 'steady' });
    });

    it('reports a channel that stopped on an error instead of restarting it, and takes the replica out of service', () => {
      const members = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`),
        replica(2, `${A}:1-3`, { channel: { receiver: 'OFF', error: 'Got fatal error 1236: purged binary logs' } }),
      ];
      const d = decide(view(members));
      assert.deepEqual(d.step, { type: 'label', member: 'db-2', role: 'none' });
      assert.equal(d.problems[0]?.reason, 'ReplicationFailed');
      assert.match(d.problems[0]?.message ?? '', /db-2.*1236/);

      const unlabelled = [
        members[0],
        members[1],
        replica(2, `${A}:1-3`, { role: 'none', channel: { receiver: 'OFF', error: 'boom' } }),
      ];
      const again = decide(view(unlabelled.filter((m): m is MemberView => m !== undefined)));
      assert.deepEqual(again.step, { type: 'steady' });
      assert.deepEqual(
        again.problems.map((p) => p.reason),
        ['ReplicationFailed'],
      );
    });

    it('restarts a receiver that stopped on reaching no source (a restart of every member), and no other stopped receiver', () => {
      const unreachable = (receiverErrno: number, errorOf: 'receiver' | 'applier' = 'receiver'): MemberView[] => [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`),
        replica(2, `${A}:1-9`, {
          role: 'none',
          channel: {
            receiver: 'OFF',
            errorOf,
            receiverErrno,
            error: `Error connecting to source 'replication@db-0': Can't connect to MySQL server (111)`,
          },
        }),
      ];
      for (const errno of [2002, 2003, 2005, 2013])
        assert.deepEqual(
          step(view(unreachable(errno))),
          { type: 'replicate', member: 'db-2', source: 'db-0', sourceHost: host(0) },
          `errno ${errno}`,
        );
      // Refused by the source (access denied, TLS), or the applier stopped on its own error: reported, not restarted.
      for (const [errno, errorOf] of [
        [1045, 'receiver'],
        [2026, 'receiver'],
        [2003, 'applier'],
      ] as const) {
        const d = decide(view(unreachable(errno, errorOf)));
        assert.deepEqual(d.step, { type: 'steady' }, `errno ${errno} of the ${errorOf}`);
        assert.deepEqual(
          d.problems.map((p) => p.reason),
          ['ReplicationFailed'],
        );
      }
    });
  });

  describe('errant transactions', () => {
    const errantMembers = (role: MemberView['role'], receiver: 'ON' | 'OFF' = 'ON'): MemberView[] => [
      primary(0, `${A}:1-10`),
      replica(1, `${A}:1-10,${X}:1-2`, { role, channel: { receiver } }),
      replica(2, `${A}:1-10`),
    ];

    it('takes the role label off an errant member, then stops its replication', () => {
      const d = decide(view(errantMembers('replica')));
      assert.deepEqual(d.step, { type: 'label', member: 'db-1', role: 'none' });
      assert.deepEqual([...d.errant], ['db-1']);
      assert.equal(d.problems.length, 1);
      assert.equal(d.problems[0]?.reason, 'ErrantTransactions');
      assert.ok(d.problems[0]?.message.includes(`${X}:1-2`));
      assert.deepEqual(step(view(errantMembers('none'))), { type: 'stopReplication', member: 'db-1' });
    });

    it('asks a person to re-provision an errant member, unless a note says what becomes of its transactions', () => {
      const [asked] = decide(view(errantMembers('none'))).problems;
      assert.match(
        asked?.message ?? '',
        /never promoted; re-provision it by clone \(kubectl annotate pod db-1 recon8s\.dev\/reprovision=<any new value>\) to discard them$/,
      );
      const note = 'they were never acknowledged: its agent re-provisions it';
      const [noted] = decide(view(errantMembers('none'), { errantNotes: new Map([['db-1', note]]) })).problems;
      assert.equal(
        noted?.message,
        `member db-1 holds transactions the primary lacks (${X}:1-2): it is excluded from both Services and never promoted; ${note}`,
      );
    });

    it('keeps a replica that applied commits the primary made after it was read (received from the primary): no relabel', () => {
      // The looks read members in parallel: db-2 applied A:11 after the primary was read without it.
      const members = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`, { received: `${A}:1-10` }),
        replica(2, `${A}:1-11`, { received: `${A}:1-11` }),
      ];
      const d = decide(view(members));
      assert.deepEqual(d.step, { type: 'steady' });
      assert.equal(d.errant.size, 0);
      assert.deepEqual(d.problems, []);
      assert.equal(d.members.find((m) => m.name === 'db-2')?.role, 'replica');
    });

    it('still finds errant what a replica holds beyond the primary and did not receive from it', () => {
      // Written on the replica itself, or received from another source than the primary.
      for (const m of [
        replica(1, `${A}:1-10,${X}:1`, { received: `${A}:1-10` }),
        replica(1, `${A}:1-11`, { received: `${A}:1-11`, from: 2 }),
        replica(1, `${A}:1-11`, { received: `${A}:1-10` }),
      ]) {
        const d = decide(view([primary(0, `${A}:1-10`), m, replica(2, `${A}:1-10`)]));
        assert.deepEqual([...d.errant], ['db-1'], JSON.stringify(m.sql?.channel));
        assert.deepEqual(d.step, { type: 'label', member: 'db-1', role: 'none' });
      }
    });

    it('leaves an errant member alone once it serves nothing and does not replicate', () => {
      const d = decide(view(errantMembers('none', 'OFF')));
      assert.deepEqual(d.step, { type: 'steady' });
      assert.deepEqual([...d.errant], ['db-1']);
      const status = d.members.find((m) => m.name === 'db-1');
      assert.equal(status?.role, 'none');
      assert.equal(status?.errantTransactions, `${X}:1-2`);
    });

    it('never points an errant member without a channel at the primary', () => {
      const members = [
        primary(0, `${A}:1-10`),
        member(1, { executed: g(`${X}:1`) }, { role: 'none' }),
        replica(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members)), { type: 'steady' });
    });

    it('remembers an errant member while the primary cannot be compared with', () => {
      const members = [
        silent(0),
        replica(1, `${A}:1-10,${X}:1`, { role: 'none', channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`),
      ];
      const d = decide(view(members, { knownErrant: new Set(['db-1']), primaryDownMs: 1_000 }));
      assert.deepEqual([...d.errant], ['db-1']);
      assert.deepEqual(
        d.problems.map((p) => p.reason),
        ['ErrantTransactions'],
      );
      assert.match(d.problems[0]?.message ?? '', /unknown/);
    });

    it('forgets a member known errant once the primary holds its transactions (re-provisioned)', () => {
      const d = decide(view(healthy(), { knownErrant: new Set(['db-1']) }));
      assert.equal(d.errant.size, 0);
      assert.deepEqual(d.step, { type: 'steady' });
    });

    it('never promotes a member known errant, even the most advanced one', () => {
      const members = [
        silent(0),
        replica(1, `${A}:1-10,${X}:1`, { role: 'none', channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
      ];
      // With one acknowledgement per commit, the errant member may hold the only copy of an
      // acknowledged write: no failover from 3 members then, only a wait that says why.
      const s = step(view(members, { knownErrant: new Set(['db-1']), primaryDownMs: 60_000 }));
      assert.equal(s.type === 'wait' && s.reason, 'FailoverWaiting');
      assert.match(s.type === 'wait' ? s.message : '', /1 of its 2 replicas cannot be compared/);
      // With 5 members and 2 acknowledgements per commit, another candidate holds every acknowledged write.
      const five = [
        silent(0),
        replica(1, `${A}:1-10,${X}:1`, { role: 'none', channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
        replica(3, `${A}:1-8`, { channel: { receiver: 'OFF' } }),
        replica(4, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
      ];
      const s5 = step(view(five, { replicas: 5, waitCount: 2, knownErrant: new Set(['db-1']), primaryDownMs: 60_000 }));
      // db-1, errant, is the one replica that is not a candidate: recorded for rejoin.ts's proof.
      assert.deepEqual(s5, { type: 'promote', from: 'db-0', to: 'db-2', mustApply: g(`${A}:1-9`), outOfReach: 1 });
      // The spec was raised to 2 after the primary took writes with 1 (its term records 1): a commit may
      // have been acknowledged by db-1 alone. Counted on the term's, not the spec's: it waits.
      const raised = step(
        view(five, {
          replicas: 5,
          waitCount: 2,
          termWaitCount: 1,
          knownErrant: new Set(['db-1']),
          primaryDownMs: 60_000,
        }),
      );
      assert.equal(raised.type === 'wait' && raised.reason, 'FailoverWaiting');
      assert.match(
        raised.type === 'wait' ? raised.message : '',
        /1 of its 4 replicas cannot be compared: an acknowledged write may be only there \(its commits waited for 1 acknowledgement\(s\)\)/,
      );
      // A scale-down from 5 to 3 under way: db-3 and db-4 still exist, silent, and may hold commits they
      // acknowledged. With one acknowledgement per commit, no failover to db-1 or db-2 while they cannot be compared.
      const scaling = [
        silent(0),
        replica(1, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
        silent(3),
        silent(4),
      ];
      const down = step(view(scaling, { replicas: 3, waitCount: 1, primaryDownMs: 60_000 }));
      assert.equal(down.type === 'wait' && down.reason, 'NoQuorum');
      assert.match(down.type === 'wait' ? down.message : '', /only 2 of 5 members answer/);
      const db3 = replica(3, `${A}:1-9`, { channel: { receiver: 'OFF' } });
      const waiting = step(
        view([...scaling.slice(0, 3), db3, silent(4)], { replicas: 3, waitCount: 1, primaryDownMs: 60_000 }),
      );
      assert.equal(waiting.type === 'wait' && waiting.reason, 'FailoverWaiting');
      assert.match(waiting.type === 'wait' ? waiting.message : '', /1 of its 4 replicas cannot be compared/);
      // A term that waited for more than the spec asks now counts as the spec's (never more than asked).
      assert.equal(
        step(
          view(five, {
            replicas: 5,
            waitCount: 2,
            termWaitCount: 3,
            knownErrant: new Set(['db-1']),
            primaryDownMs: 60_000,
          }),
        ).type,
        'promote',
      );
    });

    it('waits while a replica that may hold the only copy of an acknowledged write does not answer', () => {
      // db-2 does not answer and may have acknowledged A:10; db-0 restarted with A:10, db-1 lacks it.
      const members = [
        primary(0, `${A}:1-10`, {}, { writable: false, semiSync: { enabled: false, waitCount: 0 } }),
        replica(1, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
        silent(2),
      ];
      const restarted = step(view(members, { primaryDownMs: 1_000 }));
      assert.deepEqual(restarted, { type: 'enableWrites', member: 'db-0', waitCount: 1 });
    });

    it('refuses a switchover to an errant member', () => {
      const s = step(view(errantMembers('none', 'OFF'), { switchover: { id: 'r1', to: 'db-1' } }));
      assert.equal(s.type, 'refuseSwitchover');
      assert.match(s.type === 'refuseSwitchover' ? s.message : '', /errant/);
    });
  });

  describe('failover', () => {
    const lost = (r1: Partial<ReplicationChannel> = {}, r2: Partial<ReplicationChannel> = {}): MemberView[] => [
      silent(0, { role: 'primary', error: 'connect ETIMEDOUT' }),
      replica(1, `${A}:1-8`, { received: `${A}:9-10`, channel: r1 }),
      replica(2, `${A}:1-9`, { channel: r2 }),
    ];

    it('waits while the primary has been unreachable for less than failoverAfterMs', () => {
      const s = step(view(lost(), { primaryDownMs: 29_000 }));
      assert.equal(s.type === 'wait' && s.reason, 'PrimaryUnreachable');
      assert.match(s.type === 'wait' ? s.message : '', /db-0.*29 s.*ETIMEDOUT.*30 s/);
    });

    describe('a primary known not to run (ClusterView.primaryStopped)', () => {
      const stopped = 'its mysql container restarted';
      it('is failed over at once with semi-synchronous replication: receivers stopped, then the promotion, saying why', () => {
        assert.deepEqual(step(view(lost(), { primaryDownMs: 0, primaryStopped: stopped })), {
          type: 'stopReceivers',
          members: ['db-1', 'db-2'],
        });
        const s = step(
          view(lost({ receiver: 'OFF' }, { receiver: 'OFF' }), { primaryDownMs: 1_000, primaryStopped: stopped }),
        );
        assert.equal(s.type === 'promote' && s.to, 'db-1');
        assert.equal(s.type === 'promote' && s.stopped, stopped);
      });

      it('waits failoverAfterMs all the same without semi-synchronous replication', () => {
        const s = step(view(lost(), { primaryDownMs: 1_000, primaryStopped: stopped, waitCount: 0 }));
        assert.equal(s.type === 'wait' && s.reason, 'PrimaryUnreachable');
      });

      it('still needs a majority, and every acknowledged commit covered', () => {
        const two = [silent(0, { role: 'primary' }), silent(1), replica(2, `${A}:1-10`)];
        const s = step(view(two, { primaryDownMs: 0, primaryStopped: stopped }));
        assert.equal(s.type === 'wait' && s.reason, 'NoQuorum');
        const five = [
          silent(0, { role: 'primary' }),
          replica(1, `${A}:1-10`),
          replica(2, `${A}:1-10`),
          replica(3, `${A}:1-10`),
          silent(4),
        ];
        const f = step(view(five, { replicas: 5, waitCount: 1, primaryDownMs: 0, primaryStopped: stopped }));
        assert.equal(f.type === 'wait' && f.reason, 'FailoverWaiting');
      });

      it('names no reason once failoverAfterMs passed anyway', () => {
        const s = step(
          view(lost({ receiver: 'OFF' }, { receiver: 'OFF' }), { primaryDownMs: 30_000, primaryStopped: stopped }),
        );
        assert.equal(s.type === 'promote' && s.stopped, undefined);
      });
    });

    it('stops the receivers of the candidates that still receive, first', () => {
      assert.deepEqual(step(view(lost(), { primaryDownMs: 30_000 })), {
        type: 'stopReceivers',
        members: ['db-1', 'db-2'],
      });
      assert.deepEqual(step(view(lost({ receiver: 'OFF' }, { receiver: 'CONNECTING' }), { primaryDownMs: 30_000 })), {
        type: 'stopReceivers',
        members: ['db-2'],
      });
    });

    it('promotes the candidate holding what every other one received, with what it must apply', () => {
      const s = step(view(lost({ receiver: 'OFF' }, { receiver: 'OFF' }), { primaryDownMs: 60_000 }));
      assert.equal(s.type, 'promote');
      if (s.type !== 'promote') return;
      assert.equal(s.from, 'db-0');
      assert.equal(s.to, 'db-1');
      assert.ok(s.mustApply.equals(g(`${A}:1-10`)));
    });

    it('prefers an updated candidate, then the lowest ordinal, among equals', () => {
      const members = (outdated1: boolean): MemberView[] => [
        silent(0),
        replica(1, `${A}:1-10`, { outdated: outdated1, channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-10`, { channel: { receiver: 'OFF' } }),
      ];
      const promoted = (v: ClusterView): string | undefined => {
        const s = step(v);
        return s.type === 'promote' ? s.to : undefined;
      };
      assert.equal(promoted(view(members(false), { primaryDownMs: 60_000 })), 'db-1');
      assert.equal(promoted(view(members(true), { primaryDownMs: 60_000 })), 'db-2');
    });

    it('promotes an outdated candidate when only it holds everything', () => {
      const members = [
        silent(0),
        replica(1, `${A}:1-10`, { outdated: true, channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
      ];
      const s = step(view(members, { primaryDownMs: 60_000 }));
      assert.equal(s.type === 'promote' && s.to, 'db-1');
    });

    it('has members that followed a lost primary resume replicating from it while no failover is due (a restart of every pod)', () => {
      // Every pod restarted while db-2 was the primary: only db-0 answers yet (the others still
      // start), its replication stopped (skip_replica_start); it must connect again to become ready.
      const members = [replica(0, `${A}:1-9`, { from: 2, role: 'none', channel: { receiver: 'OFF', applier: 'OFF' } })];
      const s = step(view(members, { primary: 'db-2', primaryHost: host(2), primaryDownMs: 600_000 }));
      assert.deepEqual(s, { type: 'replicate', member: 'db-0', source: 'db-2', sourceHost: host(2) });
      const stopped = [
        replica(0, `${A}:1-9`, { from: 2, channel: { receiver: 'OFF', applier: 'OFF', error: 'boom' } }),
      ];
      const w = step(view(stopped, { primary: 'db-2', primaryHost: host(2), primaryDownMs: 600_000 }));
      assert.equal(w.type === 'wait' && w.reason, 'NoQuorum');
    });

    it('waits without a majority of the members answering', () => {
      const members = [silent(0), replica(1, `${A}:1-10`, { channel: { receiver: 'OFF' } }), silent(2)];
      const s = step(view(members, { primaryDownMs: 600_000 }));
      assert.equal(s.type === 'wait' && s.reason, 'NoQuorum');
      assert.match(s.type === 'wait' ? s.message : '', /majority/);
      const five = [silent(0), replica(1, `${A}:1`), replica(2, `${A}:1`), silent(3), silent(4)];
      const s5 = step(view(five, { replicas: 5, primaryDownMs: 600_000 }));
      assert.equal(s5.type === 'wait' && s5.reason, 'NoQuorum');
    });

    it('waits when the candidates diverged (none holds every transaction)', () => {
      const members = [
        silent(0),
        replica(1, `${A}:1-8`, { received: `${A}:10`, channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
      ];
      const s = step(view(members, { primaryDownMs: 60_000 }));
      assert.equal(s.type === 'wait' && s.reason, 'FailoverWaiting');
      assert.match(s.type === 'wait' ? s.message : '', /lose/);
    });

    it('waits when no replica that followed the primary answers', () => {
      const members = [silent(0), member(1, { executed: g(`${A}:1-10`) }), member(2, { executed: g(`${A}:1-10`) })];
      const s = step(view(members, { primaryDownMs: 60_000 }));
      assert.equal(s.type === 'wait' && s.reason, 'FailoverWaiting');
    });

    it('fails over from a primary whose pod is gone', () => {
      const members = [
        replica(1, `${A}:1-10`, { channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-10`, { channel: { receiver: 'OFF' } }),
      ];
      const s = step(view(members, { primaryDownMs: 60_000 }));
      assert.equal(s.type === 'promote' && s.to, 'db-1');
    });

    it('takes the primary label off the lost primary before failing over', () => {
      const members = [
        silent(0, { role: 'primary' }),
        replica(1, `${A}:1-10`, { role: 'primary' }),
        replica(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members, { primary: 'db-0', primaryDownMs: 60_000 })), {
        type: 'label',
        member: 'db-1',
        role: 'none',
      });
    });

    describe('a primary back read-only after a restart', () => {
      const restarted = (r1: Partial<ReplicationChannel>, r2: Partial<ReplicationChannel>): MemberView[] => [
        primary(0, `${A}:1-10`, {}, { writable: false }),
        replica(1, `${A}:1-10`, { channel: r1 }),
        replica(2, `${A}:1-9`, { channel: r2 }),
      ];

      it('fails over at once to a replica that safely can take over', () => {
        assert.deepEqual(step(view(restarted({}, {}), { primaryDownMs: 1_000 })), {
          type: 'stopReceivers',
          members: ['db-1', 'db-2'],
        });
        const s = step(view(restarted({ receiver: 'OFF' }, { receiver: 'OFF' }), { primaryDownMs: 1_000 }));
        assert.equal(s.type, 'promote');
        assert.equal(s.type === 'promote' && s.to, 'db-1');
        assert.equal(s.type === 'promote' && s.from, 'db-0');
        // What the restarted primary held when it was replaced, and that no replica was out of reach.
        assert.equal(s.type === 'promote' && s.fromExecuted?.toString(), `${A}:1-10`);
        assert.equal(s.type === 'promote' && s.outOfReach, 0);
      });

      it('takes writes again itself when no replica can', () => {
        const diverged = [
          primary(0, `${A}:1-10`, {}, { writable: false }),
          replica(1, `${A}:1-8`, { received: `${A}:10`, channel: { receiver: 'OFF' } }),
          replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
        ];
        assert.deepEqual(step(view(diverged, { primaryDownMs: 1_000 })), {
          type: 'enableWrites',
          member: 'db-0',
          waitCount: 1,
        });
        const alone = [primary(0, `${A}:1-10`, {}, { writable: false }), silent(1), silent(2)];
        // With the primary alone there is no majority: it does not fail over, and takes writes again.
        assert.deepEqual(step(view(alone, { primaryDownMs: 1_000 })), {
          type: 'enableWrites',
          member: 'db-0',
          waitCount: 1,
        });
      });
    });

    it('does not fail over from a primary that answers and is writable', () => {
      assert.deepEqual(step(view(healthy(), { primaryDownMs: 600_000 })), { type: 'steady' });
    });
  });

  describe('switchover requests', () => {
    it('switches over to a healthy replica, naming the request', () => {
      assert.deepEqual(step(view(healthy(), { switchover: { id: 'r1', to: 'db-2' } })), {
        type: 'switchover',
        from: 'db-0',
        to: 'db-2',
        requestId: 'r1',
      });
    });

    it('chooses the replica furthest ahead when no target is given', () => {
      assert.deepEqual(step(view(healthy(), { switchover: { id: 'r2' } })), {
        type: 'switchover',
        from: 'db-0',
        to: 'db-1',
        requestId: 'r2',
      });
      const ahead2 = [primary(0, `${A}:1-10`), replica(1, `${A}:1-8`), replica(2, `${A}:1-9`)];
      assert.deepEqual(step(view(ahead2, { switchover: { id: 'r3' } })), {
        type: 'switchover',
        from: 'db-0',
        to: 'db-2',
        requestId: 'r3',
      });
    });

    it('chooses, among replicas that received everything, the one with the least left to apply (one just cloned back has a backlog), then the lowest ordinal', () => {
      const backlog = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-4`, { received: `${A}:5-10` }),
        replica(2, `${A}:1-9`, { received: `${A}:10` }),
      ];
      for (const v of [
        view(backlog, { switchover: { id: 'r4' } }),
        view(backlog.map((m, i) => (i === 0 ? { ...m, terminating: true } : m))),
      ])
        assert.equal((step(v) as { to?: string }).to, 'db-2');
      const even = [primary(0, `${A}:1-10`), replica(1, `${A}:1-9`, { received: `${A}:10` }), replica(2, `${A}:1-9`)];
      assert.equal((step(view(even, { switchover: { id: 'r5' } })) as { to?: string }).to, 'db-1');
    });

    const refused = (v: ClusterView, pattern: RegExp): void => {
      const s = step(v);
      assert.equal(s.type, 'refuseSwitchover');
      assert.equal(s.type === 'refuseSwitchover' && s.requestId, v.switchover?.id);
      assert.match(s.type === 'refuseSwitchover' ? s.message : '', pattern);
    };

    it('refuses a switchover to the primary itself', () => {
      refused(view(healthy(), { switchover: { id: 'r', to: 'db-0' } }), /already the primary/);
    });

    it('refuses a switchover to an unknown member', () => {
      refused(view(healthy(), { switchover: { id: 'r', to: 'db-7' } }), /not a member.*db-0, db-1, db-2/);
    });

    it('waits for a replica that is not ready or not replicating yet, and refuses once it waited too long', () => {
      const unready = [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`, { ready: false }), replica(2, `${A}:1-10`)];
      const waiting = step(view(unready, { switchover: { id: 'r', to: 'db-1', waitedMs: 1_000 } }));
      assert.equal(waiting.type === 'wait' && waiting.reason, 'SwitchoverWaiting');
      assert.match(waiting.type === 'wait' ? waiting.message : '', /not a healthy replica/);
      refused(view(unready, { switchover: { id: 'r', to: 'db-1', waitedMs: 60_000 } }), /not a healthy replica/);
      const broken = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`, { role: 'none', channel: { receiver: 'OFF', error: 'boom' } }),
        replica(2, `${A}:1-10`),
      ];
      refused(view(broken, { switchover: { id: 'r', to: 'db-1', waitedMs: 60_000 } }), /not a healthy replica/);
      const gone = [primary(0, `${A}:1-10`), silent(1), replica(2, `${A}:1-10`)];
      refused(view(gone, { switchover: { id: 'r', to: 'db-1', waitedMs: 60_000 } }), /not a healthy replica/);
    });

    it('points the candidate at the primary while its switchover waits (that is what makes it healthy)', () => {
      const members = [
        primary(0, `${A}:1-10`),
        member(1, { executed: g(`${A}:1-10`) }, { role: 'none' }),
        replica(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members, { switchover: { id: 'r', to: 'db-1' } })), {
        type: 'replicate',
        member: 'db-1',
        source: 'db-0',
        sourceHost: host(0),
      });
    });

    it('refuses when no target is given and no replica is healthy, after waiting', () => {
      const members = [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`, { ready: false }), silent(2)];
      const waiting = step(view(members, { switchover: { id: 'r' } }));
      assert.equal(waiting.type === 'wait' && waiting.reason, 'SwitchoverWaiting');
      refused(view(members, { switchover: { id: 'r', waitedMs: 60_000 } }), /no healthy replica/);
    });

    it('is not handled while the primary is lost (failover comes first)', () => {
      const members = [silent(0), replica(1, `${A}:1-10`), replica(2, `${A}:1-10`)];
      const s = step(view(members, { primaryDownMs: 1_000, switchover: { id: 'r', to: 'db-1' } }));
      assert.equal(s.type === 'wait' && s.reason, 'PrimaryUnreachable');
    });
  });

  describe('rolling update', () => {
    const cluster = (outdated: [boolean, boolean, boolean], primaryOrdinal = 0): MemberView[] =>
      [0, 1, 2].map((o) =>
        o === primaryOrdinal
          ? primary(o, `${A}:1-10`, { outdated: outdated[o] })
          : replica(o, `${A}:1-10`, { outdated: outdated[o], from: primaryOrdinal }),
      );

    it('restarts outdated replicas, highest ordinal first', () => {
      assert.deepEqual(step(view(cluster([true, true, true]))), { type: 'restart', member: 'db-2' });
      assert.deepEqual(step(view(cluster([true, true, false]))), { type: 'restart', member: 'db-1' });
      assert.deepEqual(step(view(cluster([true, true, true], 2), { primary: 'db-2', primaryHost: host(2) })), {
        type: 'restart',
        member: 'db-1',
      });
    });

    it('switches over from an outdated primary to an updated healthy replica', () => {
      assert.deepEqual(step(view(cluster([true, false, false]))), { type: 'switchover', from: 'db-0', to: 'db-1' });
    });

    it('restarts a single member', () => {
      // Semi-synchronous replication is configured first (no replica can acknowledge).
      assert.deepEqual(step(view([primary(0, `${A}:1`, { outdated: true })], { replicas: 1, waitCount: 0 })), {
        type: 'enableWrites',
        member: 'db-0',
        waitCount: 0,
      });
      const single = [primary(0, `${A}:1`, { outdated: true }, { semiSync: { enabled: false, waitCount: 0 } })];
      assert.deepEqual(step(view(single, { replicas: 1, waitCount: 0 })), { type: 'restart', member: 'db-0' });
    });

    it('restarts nothing while any member is unhealthy', () => {
      const notReady = cluster([true, true, false]);
      notReady[2] = replica(2, `${A}:1-10`, { ready: false });
      assert.deepEqual(step(view(notReady)), { type: 'steady' });
      const missing = cluster([false, true, true]).slice(0, 2);
      assert.deepEqual(step(view(missing)), { type: 'steady' });
      const unreachable = [...cluster([false, true, false]).slice(0, 2), silent(2)];
      assert.deepEqual(step(view(unreachable)), { type: 'steady' });
      const errant = cluster([false, true, false]);
      errant[2] = replica(2, `${A}:1-10,${X}:1`, { role: 'none', channel: { receiver: 'OFF' } });
      assert.deepEqual(step(view(errant)), { type: 'steady' });
      const broken = cluster([false, true, false]);
      broken[2] = replica(2, `${A}:1-10`, { role: 'none', channel: { receiver: 'OFF', error: 'boom' } });
      assert.deepEqual(step(view(broken)).type, 'steady');
    });

    it('waits for an updated replica before restarting the outdated primary', () => {
      const members = cluster([true, false, false]);
      members[1] = replica(1, `${A}:1-10`, { outdated: true, ready: true });
      members[2] = replica(2, `${A}:1-10`, { outdated: true });
      // Every replica outdated: replicas go first.
      assert.deepEqual(step(view(members)), { type: 'restart', member: 'db-2' });
    });
  });

  describe('scale-down', () => {
    it('switches over from a primary beyond spec.replicas to a member below it', () => {
      const members = [
        replica(0, `${A}:1-9`, { from: 2 }),
        replica(1, `${A}:1-10`, { from: 2 }),
        primary(2, `${A}:1-10`),
      ];
      assert.deepEqual(step(view(members, { replicas: 2, primary: 'db-2', primaryHost: host(2) })), {
        type: 'switchover',
        from: 'db-2',
        to: 'db-1',
      });
    });

    it('waits when no member below spec.replicas can take over', () => {
      const members = [
        replica(0, `${A}:1-10`, { from: 2, ready: false }),
        replica(1, `${A}:1-10`, { from: 2 }),
        primary(2, `${A}:1-10`),
      ];
      const s = step(view(members, { replicas: 1, primary: 'db-2', primaryHost: host(2) }));
      assert.equal(s.type === 'wait' && s.reason, 'ScaleDownWaiting');
    });

    // 3 → 2: the StatefulSet still holds db-2 (heldReplicas 3) until it is safe to lose.
    const shrinking = (members: MemberView[], overrides: Partial<ClusterView> = {}): ClusterView =>
      view(members, { replicas: 2, heldReplicas: 3, ...overrides });
    const stopped = { receiver: 'OFF' as const };

    it('takes a leaving replica out of the replicas Service, then stops its receiver, keeping it meanwhile', () => {
      const first = decide(shrinking([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), replica(2, `${A}:1-10`)]));
      assert.deepEqual(first.step, { type: 'label', member: 'db-2', role: 'none' });
      assert.equal(first.kept.keep, 3);
      const second = decide(
        shrinking([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), replica(2, `${A}:1-10`, { role: 'none' })]),
      );
      assert.deepEqual(second.step, { type: 'stopReceivers', members: ['db-2'] });
      assert.equal(second.kept.keep, 3);
      assert.match(second.kept.why ?? '', /db-2 still receives/);
    });

    it('lets a leaving replica go once a remaining replica holds all it received, and never restarts its receiver', () => {
      const leaving = replica(2, `${A}:1-9`, { role: 'none', received: `${A}:1-10`, channel: stopped });
      const d = decide(shrinking([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), leaving]));
      assert.deepEqual(d.step, { type: 'steady' });
      assert.deepEqual(d.kept, { keep: 2 });
    });

    it('keeps a leaving replica that alone acknowledged the last commits, until a remaining one has them', () => {
      // db-1 lagging (or cut off): db-2 acknowledged 10 alone.
      const leaving = replica(2, `${A}:1-10`, { role: 'none', channel: stopped });
      const d = decide(shrinking([primary(0, `${A}:1-10`), replica(1, `${A}:1-8`), leaving]));
      assert.equal(d.kept.keep, 3);
      assert.equal(d.step.type === 'wait' && d.step.reason, 'ScaleDownWaiting');
      assert.match(
        d.step.type === 'wait' ? d.step.message : '',
        /keeps 3 members for now: db-2 holds transactions no remaining replica has received yet/,
      );
      // What a remaining replica received counts, applied or not.
      const caughtUp = decide(
        shrinking([primary(0, `${A}:1-10`), replica(1, `${A}:1-8`, { received: `${A}:9-10` }), leaving]),
      );
      assert.equal(caughtUp.kept.keep, 2);
    });

    it('keeps nothing of a cluster that never had a primary (no write was ever acknowledged)', () => {
      const d = decide(
        shrinking([member(0, {}), silent(1), silent(2)], { primary: undefined, primaryHost: undefined }),
      );
      assert.deepEqual(d.kept, { keep: 2 });
    });

    it('keeps a leaving member that does not answer, or has no pod, or whose primary does not answer', () => {
      for (const [members, why] of [
        [[primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), silent(2)], /db-2 does not answer/],
        [[primary(0, `${A}:1-10`), replica(1, `${A}:1-10`)], /db-2 has no pod now/],
        [
          [silent(0), replica(1, `${A}:1-10`), replica(2, `${A}:1-10`, { role: 'none', channel: stopped })],
          /the primary does not answer/,
        ],
      ] as const) {
        const kept = decide(shrinking([...members])).kept;
        assert.equal(kept.keep, 3);
        assert.match(kept.why ?? '', why);
      }
    });

    it('keeps the primary until a replica took over, and members up to the highest one not yet safe', () => {
      const members = [
        replica(0, `${A}:1-10`, { from: 2 }),
        replica(1, `${A}:1-10`, { from: 2 }),
        primary(2, `${A}:1-10`),
        replica(3, `${A}:1-10`, { role: 'none', from: 2, channel: stopped }),
      ];
      const v = shrinking(members, { primary: 'db-2', primaryHost: host(2), heldReplicas: 4 });
      const d = decide(v);
      assert.deepEqual(d.step, { type: 'switchover', from: 'db-2', to: 'db-0' });
      // db-3 could go, db-2 not yet: the StatefulSet shrinks from the top.
      assert.equal(d.kept.keep, 3);
    });

    it('counts on as many remaining replicas as each commit waited for acknowledgements', () => {
      // 5 → 3, two acknowledgements per commit: what db-3 and db-4 hold must be on db-1 and db-2.
      const members = (db2: string): MemberView[] => [
        primary(0, `${A}:1-10`, {}, { semiSync: { enabled: true, waitCount: 2 } }),
        replica(1, `${A}:1-10`),
        replica(2, db2),
        replica(3, `${A}:1-10`, { role: 'none', channel: stopped }),
        replica(4, `${A}:1-10`, { role: 'none', channel: stopped }),
      ];
      const v = (db2: string, termWaitCount?: number): ClusterView =>
        view(members(db2), {
          replicas: 3,
          heldReplicas: 5,
          waitCount: 2,
          ...(termWaitCount !== undefined ? { termWaitCount } : {}),
        });
      assert.equal(decide(v(`${A}:1-9`)).kept.keep, 5);
      assert.equal(decide(v(`${A}:1-10`)).kept.keep, 3);
      // A term whose commits waited for one acknowledgement: one remaining replica with them is enough.
      assert.equal(decide(v(`${A}:1-9`, 1)).kept.keep, 3);
    });

    it('lets every leaving member go down to one, once their receivers stopped, and reads nothing into their silence', () => {
      const quiet = { receiver: 'OFF' as const, sourceSilentMs: 120_000, heartbeatMs: 1_000 };
      const members = [
        primary(0, `${A}:1-10`),
        replica(1, `${A}:1-10`, { role: 'none', channel: quiet }),
        replica(2, `${A}:1-10`, { role: 'none', channel: quiet }),
      ];
      const d = decide(view(members, { replicas: 1, heldReplicas: 3 }));
      assert.deepEqual(d.step, { type: 'steady' });
      assert.deepEqual(d.kept, { keep: 1 });
    });

    it('compares an errant leaving member by what it holds of the primary only', () => {
      const errant = replica(2, `${A}:1-10,${X}:1`, { role: 'none', channel: stopped });
      const d = decide(shrinking([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), errant]));
      assert.ok(d.errant.has('db-2'));
      assert.equal(d.kept.keep, 2);
    });

    it('counts a member the StatefulSet still holds in a failover, with or without its pod', () => {
      // 5 → 4: db-4 acknowledged 10 alone and its pod is gone for a moment; the others lack 10.
      const lost = [
        silent(0, { role: 'primary' }),
        ...[1, 2, 3].map((o) => replica(o, `${A}:1-9`, { channel: stopped })),
      ];
      const down = { replicas: 4, heldReplicas: 5, primaryDownMs: 60_000 };
      const held = step(view(lost, down));
      assert.equal(held.type === 'wait' && held.reason, 'FailoverWaiting');
      // The StatefulSet down to spec.replicas: db-4 was safe to lose, and a remaining replica is promoted.
      assert.equal(step(view(lost, { ...down, heldReplicas: 4 })).type, 'promote');
    });
  });

  describe('a primary whose pod is stopping (deleted, evicted, drained: its agent fenced it for the stop)', () => {
    const stopping = (sql: Partial<MemberSql> = {}): MemberView => ({
      ...primary(0, `${A}:1-10`, {}, sql),
      terminating: true,
    });
    const fenced = { writable: false, semiSync: { enabled: false, waitCount: 1 } };

    it('is switched over from at once to the most advanced healthy replica, fenced by its hook or not yet', () => {
      for (const p of [stopping(fenced), stopping()])
        assert.deepEqual(step(view([p, replica(1, `${A}:1-9`), replica(2, `${A}:1-10`)])), {
          type: 'switchover',
          from: 'db-0',
          to: 'db-2',
          stopping: true,
        });
    });

    it('is never made writable again: with no healthy replica, a wait that says why', () => {
      const s = step(view([stopping(fenced), replica(1, `${A}:1-10`, { ready: false }), silent(2)]));
      assert.deepEqual(s.type === 'wait' && [s.reason, s.message], [
        'PrimaryStopping',
        "the primary db-0's pod is stopping and no healthy replica can take over yet",
      ]);
    });

    it('is a primary that is down once it no longer answers: the failover rules, not a switchover', () => {
      const gone: MemberView = { ...silent(0, { role: 'primary' }), terminating: true };
      const s = step(view([gone, replica(1, `${A}:1-10`), replica(2, `${A}:1-10`)], { primaryDownMs: 1_000 }));
      assert.equal(s.type === 'wait' && s.reason, 'PrimaryUnreachable');
    });
  });

  describe('a member whose certificate was refused', () => {
    const CERT = 'unable to verify the first certificate';

    it('is reported in status and as MemberCertificateRejected, and otherwise left as a member that does not answer', () => {
      const members = [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), refused(2, { role: 'replica' })];
      const d = decide(view(members));
      assert.deepEqual(d.step, { type: 'steady' }, 'nothing is done to it: not relabelled, not re-pointed');
      assert.deepEqual(
        d.members.find((m) => m.name === 'db-2'),
        {
          name: 'db-2',
          role: 'replica',
          reachable: false,
          message: `certificate rejected: ${CERT}; no credential was sent`,
        },
      );
      assert.deepEqual(d.problems, []);
      assert.equal(d.rejected.length, 1);
      assert.equal(d.rejected[0]?.reason, 'MemberCertificateRejected');
      assert.match(
        d.rejected[0]?.message ?? '',
        new RegExp(
          `^member db-2 presented a TLS certificate the cluster's CA does not vouch for \\(${CERT}\\): refused before any credential was sent; .*never compared, fenced or promoted`,
        ),
      );
      // Decided as a member that does not answer: the same step, problems and roles.
      const asSilent = decide(
        view([members[0] as MemberView, members[1] as MemberView, silent(2, { role: 'replica' })]),
      );
      assert.deepEqual(asSilent.step, d.step);
      assert.deepEqual(asSilent.rejected, []);
      assert.deepEqual(
        asSilent.members.map(({ message: _m, ...rest }) => rest),
        d.members.map(({ message: _m, ...rest }) => rest),
      );
    });

    it('says it before what its pod says', () => {
      const d = decide(
        view([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), refused(2, { error: 'CrashLoopBackOff: …' })]),
      );
      assert.match(d.members[2]?.message ?? '', /^certificate rejected: /);
    });

    it('is one problem per distinct reason, naming every member refused for it and which is the primary', () => {
      const d = decide(
        view(
          [
            refused(0, { role: 'primary' }),
            refused(1, { role: 'replica' }),
            refused(2, { role: 'replica' }, 'certificate has expired'),
          ],
          {
            primaryDownMs: 1_000,
          },
        ),
      );
      assert.deepEqual(
        d.rejected.map((p) => p.message.replace(/:.*$/, '')),
        [
          `members db-0 (the primary), db-1 presented a TLS certificate the cluster's CA does not vouch for (${CERT})`,
          "member db-2 presented a TLS certificate the cluster's CA does not vouch for (certificate has expired)",
        ],
      );
    });

    it('as the primary, is waited for with the reason, then failed over from exactly as a primary that does not answer', () => {
      const members = (p: MemberView): MemberView[] => [
        p,
        replica(1, `${A}:1-10`, { channel: { receiver: 'OFF' } }),
        replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
      ];
      const waiting = decide(view(members(refused(0, { role: 'primary' })), { primaryDownMs: 1_000 }));
      assert.equal(waiting.step.type === 'wait' && waiting.step.reason, 'PrimaryUnreachable');
      assert.match(
        waiting.step.type === 'wait' ? waiting.step.message : '',
        new RegExp(
          `^the primary db-0 has not answered for 1 s \\(certificate rejected: ${CERT}; no credential was sent\\)`,
        ),
      );
      for (const primaryDownMs of [1_000, 30_000]) {
        const asRefused = decide(view(members(refused(0, { role: 'primary' })), { primaryDownMs }));
        const asSilent = decide(view(members(silent(0, { role: 'primary' })), { primaryDownMs }));
        if (asSilent.step.type === 'wait')
          assert.equal(asRefused.step.type === 'wait' && asRefused.step.reason, asSilent.step.reason);
        else assert.deepEqual(asRefused.step, asSilent.step);
      }
      assert.equal(step(view(members(refused(0, { role: 'primary' })), { primaryDownMs: 30_000 })).type, 'promote');
    });
  });

  describe('a recorded primary that answers without its data (invariant 6, PrimaryDataLost)', () => {
    /** The term db-0 began: its data directory then, and what it held. */
    const TERM0 = { serverUuid: '00000000-0000-0000-0000-000000000000', ownGtidsAtStart: g(`${A}:1-5`) };
    /** db-0 back with an empty, new data directory (its volume was lost), read-only as every member starts. */
    const empty = (sql: Partial<MemberSql> = {}): MemberView =>
      member(0, { serverUuid: 'eeeeeeee-0000-0000-0000-000000000000', ...sql }, { role: 'primary' });
    /** The others hold the data, read-only, their receivers towards db-0 stopped or failing. */
    const holders = (): MemberView[] => [
      replica(1, `${A}:1-10`, { channel: { receiver: 'OFF' } }),
      replica(2, `${A}:1-9`, { channel: { receiver: 'OFF' } }),
    ];
    const lostView = (members: MemberView[], o: Partial<ClusterView> = {}): ClusterView =>
      view(members, { primaryTerm: TERM0, ...o });

    it('is failed over from at once to the member holding the most, which is not called errant, and says why', () => {
      const d = decide(lostView([empty(), ...holders()]));
      assert.equal(d.step.type, 'promote');
      assert.equal(d.step.type === 'promote' && d.step.to, 'db-1');
      assert.equal(d.errant.size, 0, 'a member holding the data called errant');
      assert.ok(!d.problems.some((p) => p.reason === 'ErrantTransactions'), JSON.stringify(d.problems));
      const lost = d.problems.find((p) => p.reason === 'PrimaryDataLost');
      assert.match(lost?.message ?? '', /db-0 came back with another data directory.*never made writable again/);
      assert.deepEqual(
        d.members.find((m) => m.name === 'db-0'),
        { name: 'db-0', role: 'primary', reachable: true, writable: false, message: lost?.message.split(';')[0] },
      );
    });

    it('stops the receivers first when they still run, as for any failover', () => {
      const running = [replica(1, `${A}:1-10`), replica(2, `${A}:1-9`)];
      assert.deepEqual(step(lostView([empty(), ...running])), { type: 'stopReceivers', members: ['db-1', 'db-2'] });
    });

    it('is never made writable, whatever else holds: no quorum, a single member, no semi-synchronous replication', () => {
      const cases: ClusterView[] = [
        lostView([empty(), replica(1, `${A}:1-10`, { channel: { receiver: 'OFF' } }), silent(2)]),
        lostView([empty()], { replicas: 1, waitCount: 0 }),
        lostView([empty(), silent(1), silent(2)]),
        lostView([empty(), ...holders()], { waitCount: 0, primaryDownMs: 1_000 }),
      ];
      for (const v of cases) {
        const d = decide(v);
        assert.notEqual(d.step.type, 'enableWrites', JSON.stringify(d.step));
        assert.notEqual(d.step.type, 'bootstrap', JSON.stringify(d.step));
        if (d.step.type === 'wait') {
          assert.equal(d.step.reason, 'PrimaryDataLost');
          assert.match(d.step.message, /^the primary db-0 came back with another data directory/);
        }
      }
      // With a majority and no semi-synchronous replication, it is not waited out either.
      const s = step(lostView([empty(), ...holders()], { waitCount: 0, primaryDownMs: 1_000 }));
      assert.equal(s.type, 'promote');
      // Two of three do not answer: the wait says both why the primary is out and what the failover waits for.
      const w = step(cases[0] as ClusterView);
      assert.match(w.type === 'wait' ? w.message : '', /another data directory.*; .*1 of 3 members answer/s);
    });

    it('is made read-only first when it is writable (a controller that missed the restart, another tool)', () => {
      const d = decide(lostView([empty({ writable: true, semiSync: { enabled: true, waitCount: 1 } }), ...holders()]));
      assert.deepEqual(d.step, { type: 'fence', member: 'db-0', writable: true });
      assert.match(d.problems[0]?.message ?? '', /made read-only before anything else/);
    });

    it('is lost too with its own server_uuid but without what it held when its term began (its data rolled back)', () => {
      const rolledBack = member(0, { executed: g(`${A}:1-3`) }, { role: 'primary' });
      const d = decide(lostView([rolledBack, ...holders()]));
      assert.equal(d.step.type, 'promote');
      assert.match(
        d.problems.find((p) => p.reason === 'PrimaryDataLost')?.message ?? '',
        /without transactions .*:4-5/,
      );
    });

    it("holding its term's data, a restarted primary is made writable again as before", () => {
      const back = member(0, { executed: g(`${A}:1-10`) }, { role: 'primary' });
      const members = [back, replica(1, `${A}:1-9`, { channel: { receiver: 'OFF' } }), silent(2)];
      assert.deepEqual(step(lostView(members, { primaryDownMs: 1_000 })), {
        type: 'enableWrites',
        member: 'db-0',
        waitCount: 1,
      });
      // A term that names nothing it lacks changes nothing at all.
      assert.deepEqual(decide(lostView(healthy())), decide(view(healthy())));
    });

    it('is never a source again: members that followed it are not pointed back at it', () => {
      const idle = [replica(1, `${A}:1-10`, { channel: { receiver: 'OFF', applier: 'OFF' } }), silent(2)];
      const s = step(lostView([empty(), ...idle]));
      assert.equal(s.type === 'wait' && s.reason, 'PrimaryDataLost');
    });
  });

  describe('a member kept offline by a fencing that released commits (invariant 7)', () => {
    it('is admitted once it replicates from the primary and holds nothing the primary lacks', () => {
      const members = [primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), { ...replica(2, `${A}:1-9`) }];
      const offline = members.map((m) => (m.name === 'db-2' && m.sql ? { ...m, sql: { ...m.sql, offline: true } } : m));
      assert.deepEqual(step(view(offline)), { type: 'admitClients', member: 'db-2' });
    });

    it('is not admitted while it holds transactions the primary lacks (what the fencing released): it stays out', () => {
      const errantOffline = member(
        2,
        { executed: g(`${A}:1-9,${X}:1`), offline: true, channel: channel(0, { receiver: 'OFF', applier: 'OFF' }) },
        { role: 'none' },
      );
      const d = decide(view([primary(0, `${A}:1-10`), replica(1, `${A}:1-10`), errantOffline]));
      assert.ok(d.errant.has('db-2'));
      assert.notDeepEqual(d.step, { type: 'admitClients', member: 'db-2' });
    });

    it('is first pointed at the primary when it does not replicate yet, and admitted after', () => {
      const notYet = member(1, { executed: g(`${A}:1-10`), offline: true }, { role: 'none' });
      const s = step(view([primary(0, `${A}:1-10`), notYet, replica(2, `${A}:1-10`)]));
      assert.equal(s.type, 'replicate');
    });
  });

  describe('invariants over every combination of three members', () => {
    type Receiver = 'ON' | 'OFF';
    interface State {
      reachable: boolean;
      writable: boolean;
      errant: boolean;
      receiver: Receiver;
    }
    const states: State[] = [];
    for (const reachable of [true, false])
      for (const writable of reachable ? [true, false] : [false])
        for (const errant of [true, false])
          for (const receiver of reachable ? (['ON', 'OFF'] as const) : (['OFF'] as const))
            states.push({ reachable, writable, errant, receiver });

    /** Members' histories: each replica a little behind or holding some received transactions. */
    const executedOf = (ordinal: number, isPrimary: boolean, errant: boolean): GtidSet =>
      isPrimary ? g(`${A}:1-10`) : g(`${A}:1-${7 + ordinal}${errant ? `,${X}:${ordinal + 1}` : ''}`);
    const receivedOf = (ordinal: number): GtidSet => (ordinal === 1 ? g(`${A}:8-10`) : GtidSet.EMPTY);

    function* views(): Generator<{ view: ClusterView; errant: Set<string> }> {
      for (const recorded of [undefined, 0, 1, 2])
        for (const s0 of states)
          for (const s1 of states)
            for (const s2 of states)
              for (const [primaryDownMs, primaryStopped] of [
                [undefined, undefined],
                [1_000, undefined],
                [1_000, 'its pod was deleted'],
                [60_000, undefined],
              ] as const) {
                if (recorded === undefined && primaryDownMs !== undefined) continue;
                const sourceHost = host(recorded ?? 0);
                const errant = new Set<string>();
                const members = [s0, s1, s2].map((s, ordinal): MemberView => {
                  const isPrimary = ordinal === recorded;
                  if (s.errant && !isPrimary) errant.add(name(ordinal));
                  // Errant db-1 still carries the replica label; errant db-0 and db-2 had it removed already.
                  const role = isPrimary ? 'primary' : s.errant && ordinal !== 1 ? 'none' : 'replica';
                  if (!s.reachable) return silent(ordinal, { role });
                  return member(
                    ordinal,
                    {
                      writable: s.writable,
                      executed: executedOf(ordinal, isPrimary, s.errant),
                      received: isPrimary ? GtidSet.EMPTY : receivedOf(ordinal),
                      // The source side is on where a member took writes (the primary, a writable member).
                      semiSync: { enabled: isPrimary || s.writable, waitCount: 1 },
                      ...(isPrimary ? {} : { channel: { sourceHost, receiver: s.receiver, applier: 'ON' } }),
                    },
                    { role },
                  );
                });
                yield {
                  view: {
                    members,
                    replicas: 3,
                    ...(recorded !== undefined ? { primary: name(recorded), primaryHost: host(recorded) } : {}),
                    ...(primaryDownMs !== undefined ? { primaryDownMs } : {}),
                    ...(primaryStopped !== undefined ? { primaryStopped } : {}),
                    failoverAfterMs: 30_000,
                    waitCount: 1,
                    knownErrant: errant,
                  },
                  errant,
                };
              }
    }

    it('keeps the invariants of decide.ts whatever the members answer', () => {
      let n = 0;
      const seen = new Set<string>();
      for (const { view: v, errant } of views()) {
        n++;
        let d: Decision;
        try {
          d = decide(v);
        } catch (e) {
          assert.fail(`decide threw on ${describeView(v)}: ${String(e)}`);
        }
        const s = d.step;
        seen.add(s.type);
        const where = (): string => `${JSON.stringify(s)} for ${describeView(v)}`;
        const answering = v.members.filter((m) => m.sql).length;

        // Errant members are never promoted and never switched over to, and are reported.
        if (s.type === 'promote' || s.type === 'switchover') {
          assert.ok(!errant.has(s.to), `promoted an errant member: ${where()}`);
          assert.ok(!d.errant.has(s.to), `promoted a member it reports errant: ${where()}`);
          assert.notEqual(s.to, v.primary, `promoted the primary itself: ${where()}`);
          assert.equal(s.from, v.primary, where());
        }
        if (v.primary !== undefined) assert.deepEqual([...d.errant].sort(), [...errant].sort(), where());
        assert.equal(d.problems.filter((p) => p.reason === 'ErrantTransactions').length, d.errant.size, where());

        // No promotion without a majority, nor before the primary is down long enough (or restarted).
        if (s.type === 'promote') {
          assert.ok(answering * 2 > v.replicas, `promoted without a majority: ${where()}`);
          const p = v.members.find((m) => m.name === v.primary);
          const restarted = p?.sql !== undefined && !p.sql.writable && v.primaryDownMs !== undefined;
          // Known not to run, with semi-synchronous replication: nothing it acknowledged is lost by not waiting.
          const stopped = p?.sql === undefined && v.primaryStopped !== undefined && v.waitCount > 0;
          assert.ok(
            restarted || stopped || (v.primaryDownMs ?? 0) >= v.failoverAfterMs,
            `promoted too early: ${where()}`,
          );
          // The promoted member holds every transaction any candidate received.
          for (const m of v.members)
            if (m.sql && m.name !== v.primary && !errant.has(m.name) && m.sql.channel?.sourceHost === v.primaryHost)
              assert.ok(m.sql.executed.union(m.sql.received).isSubsetOf(s.mustApply), `loses ${m.name}'s: ${where()}`);
          // What it records for the proof of rejoin.ts: the replicas out of reach, and what a primary
          // that answered held (a silent one, nothing).
          const candidates = v.members.filter(
            (m) => m.sql && m.name !== v.primary && !errant.has(m.name) && m.sql.channel?.sourceHost === v.primaryHost,
          ).length;
          assert.equal(s.outOfReach, Math.max(v.replicas - 1, candidates) - candidates, where());
          assert.equal(s.fromExecuted?.toString(), p?.sql?.executed.toString(), where());
          if (!restarted)
            assert.ok(s.outOfReach < Math.max(v.waitCount, 1), `promoted with too many out of reach: ${where()}`);
        }
        if (s.type === 'stopReceivers') for (const m of s.members) assert.ok(!errant.has(m), where());

        // Only the recorded primary is made writable or labelled primary; bootstrap only without one.
        if (s.type === 'enableWrites') assert.equal(s.member, v.primary, `enableWrites on a non-primary: ${where()}`);
        if (s.type === 'label' && s.role === 'primary') assert.equal(s.member, v.primary, where());
        if (s.type === 'label' && s.role === 'replica') assert.ok(!errant.has(s.member), where());
        if (s.type === 'replicate') assert.ok(!errant.has(s.member), `errant member replicates: ${where()}`);
        if (s.type === 'bootstrap') assert.equal(v.primary, undefined, where());
        if (s.type === 'fence') assert.notEqual(s.member, v.primary, where());

        // Fencing first: with a recorded primary, any other writable member is fenced before anything.
        const writableOther = v.members.some((m) => m.name !== v.primary && m.sql?.writable);
        if (v.primary !== undefined && writableOther) assert.equal(s.type, 'fence', `did not fence first: ${where()}`);
        if (v.primary === undefined && v.members.filter((m) => m.sql?.writable).length > 1)
          assert.equal(s.type === 'wait' && s.reason, 'PrimaryAmbiguous', where());

        // A member whose certificate was refused is decided exactly as one that does not answer (it is
        // never promoted, and counts against a majority), and is reported.
        const refusedView = {
          ...v,
          members: v.members.map((m) => (m.sql ? m : { ...m, certificateRejected: 'certificate has expired' })),
        };
        const r = decide(refusedView);
        const withoutMessage = (x: Step): unknown => (x.type === 'wait' ? { ...x, message: '' } : x);
        assert.deepEqual(withoutMessage(r.step), withoutMessage(s), `refused is not silent: ${where()}`);
        assert.deepEqual(r.problems, d.problems, where());
        assert.deepEqual([...r.errant], [...d.errant], where());
        assert.deepEqual(r.rejected.length, answering < v.members.length ? 1 : 0, where());
      }
      assert.ok(n >= 10_000, `only ${n} views`);
      // The combinations reach every kind of step that applies to them.
      for (const type of [
        'bootstrap',
        'fence',
        'label',
        'enableWrites',
        'stopReplication',
        'stopReceivers',
        'promote',
        'wait',
        'replicate',
      ])
        assert.ok(seen.has(type), `never reached ${type}`);
    });

    it("keeps invariants 6 and 7 whatever the members answer: a primary without its term's data is never made writable nor a source, the members holding the data are never errant for it, and offline members are admitted only when the primary holds all they have", () => {
      let n = 0;
      let admitted = 0;
      for (const { view: v, errant } of views()) {
        const p = v.members.find((m) => m.name === v.primary);
        if (!p?.sql) continue;
        n++;
        // Its data directory replaced by an empty one (writable or not, as the combination says).
        const lostSql: MemberSql = {
          ...p.sql,
          serverUuid: 'eeeeeeee-0000-0000-0000-000000000000',
          executed: GtidSet.EMPTY,
        };
        const lost: ClusterView = {
          ...v,
          // What status recorded while the primary could be compared with stays known (knownErrant).
          primaryTerm: { serverUuid: p.sql.serverUuid, ownGtidsAtStart: g(`${A}:1-5`) },
          members: v.members.map((m) => (m === p ? { ...m, sql: lostSql } : m)),
        };
        const d = decide(lost);
        const s = d.step;
        const where = (): string => `${JSON.stringify(s)} for ${describeView(lost)}`;
        assert.notEqual(s.type, 'enableWrites', `made a primary without its data writable: ${where()}`);
        assert.notEqual(s.type, 'bootstrap', where());
        if (s.type === 'replicate')
          assert.notEqual(s.sourceHost, v.primaryHost, `pointed at a primary without its data: ${where()}`);
        if (s.type === 'promote' || s.type === 'switchover') {
          assert.notEqual(s.to, v.primary, where());
          assert.ok(!errant.has(s.to), `promoted an errant member: ${where()}`);
        }
        // Only what is errant against the data is reported errant: never for holding what the primary lost.
        for (const m of d.errant) assert.ok(errant.has(m), `called ${m} errant for holding the data: ${where()}`);
        if (lostSql.writable && !v.members.some((m) => m !== p && m.sql?.writable))
          assert.deepEqual(s, { type: 'fence', member: v.primary, writable: true }, where());
        const said =
          d.problems.some((x) => x.reason === 'PrimaryDataLost') ||
          (s.type === 'wait' && s.reason === 'PrimaryDataLost');
        assert.ok(said, `PrimaryDataLost not said: ${where()}`);

        // Invariant 7, on the same combination with the primary holding its data and every replica offline.
        const offline: ClusterView = {
          ...v,
          members: v.members.map((m) => (m !== p && m.sql ? { ...m, sql: { ...m.sql, offline: true } } : m)),
        };
        const o = decide(offline).step;
        if (o.type === 'admitClients') {
          admitted++;
          const m = offline.members.find((x) => x.name === o.member);
          assert.ok(m?.sql && !errant.has(o.member), `admitted an errant member: ${JSON.stringify(o)}`);
          assert.equal(m.sql.channel?.sourceHost, v.primaryHost, `admitted a member not replicating from the primary`);
          assert.ok(m.sql.executed.isSubsetOf(p.sql.executed.union(g(`${A}:1-10`))), 'admitted a member holding more');
        }
      }
      assert.ok(n >= 5_000, `only ${n} views`);
      assert.ok(admitted > 0, 'never admitted an offline member');
    });
  });
});

function describeView(v: ClusterView): string {
  const members = v.members.map((m) =>
    m.sql
      ? `${m.name}{${m.sql.writable ? 'rw' : 'ro'} ${m.sql.executed.toString()} recv=${m.sql.received.toString()} ch=${m.sql.channel?.receiver ?? '-'}}`
      : `${m.name}{down}`,
  );
  return `primary=${v.primary ?? '-'} downMs=${v.primaryDownMs ?? '-'} knownErrant=[${[...v.knownErrant].join(',')}] ${members.join(' ')}`;
}
