// The agent's part of re-provisioning a replica by clone (lib/agent/reprovision.ts), on a real file
// system with a fake member session: what is decided, what is cloned where, what is kept, what is reported.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MEMBER_REPORTS } from '../../constructs/mysql-member.js';
import type { BinlogFile } from '../../lib/agent/discarded.js';
import { DISCARDS_KEPT, binlogsHolding, keepDiscardedBinlogs } from '../../lib/agent/discarded.js';
import type { LocalSql } from '../../lib/agent/local-sql.js';
import type { ReprovisionFacts } from '../../lib/agent/reprovision.js';
import type { UnsafeStop } from '../../lib/agent/stops.js';
import {
  Reprovisioner,
  dataPaths,
  discardBound,
  errorSummary,
  isPurgedLogsError,
  pendingRequest,
  reprovisionRefusal,
} from '../../lib/agent/reprovision.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';

// What a MySQL 9.7 receiver reports when the primary purged binary logs it still needs.
const PURGED = {
  errno: 13114,
  message:
    "Got fatal error 1236 from source when reading data from binary log: 'Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup.'",
};
const CLONE_PASSWORD = `cl0ne'"\\#;--`;
/** The primary's server_uuid (the cluster's writes). */
const P = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
/** This member's own: what it holds of it, the primary lacks. */
const OWN = '9f11fa47-71ca-11e1-9e33-c80aa9429562';
const g = (text: string): GtidSet => GtidSet.parse(text);
const NOW = new Date('2026-11-22T21:00:00.000Z');
const RECORD = 'discarded-2026-11-22T21-00-00-000Z';

interface FakeMemberState {
  superReadOnly: boolean;
  receiverError?: { errno: number; message: string };
  channel?: { receiver: 'ON' | 'OFF' | 'CONNECTING'; applier: 'ON' | 'OFF' | 'CONNECTING' };
  /** gtid_executed. */
  executed: string;
  /** Its binary logs, oldest first (files of those names are in its data directory). */
  binlogs: BinlogFile[];
  cloneInProgress: boolean;
  cloneError?: string;
  /** What happens meanwhile on a successful clone. */
  onClone?: () => void;
}

describe('agent: re-provisioning a replica by clone', () => {
  let dir: string;
  let member: FakeMemberState;
  let donor: { writable: boolean; executed: string; serverUuid?: string } | Error;
  let statements: { sql: string; values?: unknown[] }[];
  let reports: string[];
  let logs: string[];
  let unsafeStops: UnsafeStop[];
  const volume = (...p: string[]) => join(dir, 'volume', ...p);
  const annotate = (reprovision?: string) =>
    writeFileSync(
      join(dir, 'annotations'),
      [
        'kubernetes.io/config.seen="2026-11-22T20:00:00.000000000Z"',
        ...(reprovision === undefined ? [] : [`recon8s.dev/reprovision=${JSON.stringify(reprovision)}`]),
        'recon8s.dev/config-hash="0123abcd"',
        '',
      ].join('\n'),
    );

  const sql = (): LocalSql =>
    ({
      flags: () => Promise.resolve({ readOnly: true, superReadOnly: member.superReadOnly, semiSyncSource: false }),
      stoppedReceiverError: () => Promise.resolve(member.receiverError),
      channel: () => Promise.resolve(member.channel),
      gtidExecuted: () => Promise.resolve(member.executed),
      gtidSubset: (a: string, b: string) => Promise.resolve(g(a).isSubsetOf(g(b))),
      gtidSubtract: (a: string, b: string) => Promise.resolve(g(a).subtract(g(b)).toString()),
      binaryLogs: () => Promise.resolve(member.binlogs.map((b) => ({ name: b.name, bytes: b.bytes }))),
      previousGtids: (log: string) => Promise.resolve(member.binlogs.find((b) => b.name === log)?.previousGtids ?? ''),
      cloneInProgress: () => Promise.resolve(member.cloneInProgress),
      exec: (text: string, values?: unknown[]) => {
        statements.push({ sql: text, values });
        if (text.startsWith('CLONE INSTANCE')) {
          if (member.cloneError) return Promise.reject(new Error(member.cloneError));
          // The server writes the clone into the directory named.
          const target = String(values?.[3]);
          mkdirSync(target);
          writeFileSync(join(target, 'mysql.ibd'), 'cloned');
          member.onClone?.();
        }
        return Promise.resolve();
      },
    }) as unknown as LocalSql;

  const reprovisioner = () =>
    new Reprovisioner({
      sql: sql(),
      paths: dataPaths(volume(), 'data', join(dir, 'annotations')),
      primaryHost: 'shop-primary',
      clonePassword: () => CLONE_PASSWORD,
      memberName: 'shop-1',
      askDonor: () => (donor instanceof Error ? Promise.reject(donor) : Promise.resolve(donor)),
      report: (reason, message) => (reports.push(`${MEMBER_REPORTS[reason]}: ${message}`), Promise.resolve()),
      log: (m) => void logs.push(m),
      unsafeStops: () => Promise.resolve(unsafeStops),
      now: () => NOW,
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'recon8s-agent-reprovision-'));
    mkdirSync(volume('data'), { recursive: true });
    writeFileSync(volume('data', 'mysql.ibd'), 'own');
    member = { superReadOnly: true, executed: `${P}:1-5`, binlogs: [], cloneInProgress: false };
    donor = { writable: true, executed: `${P}:1-9` };
    statements = [];
    reports = [];
    logs = [];
    unsafeStops = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('clones the primary beside the data directory, reports it, and stops mysqld so that the pod restarts on the clone', async () => {
    member.receiverError = PURGED;
    assert.equal(await reprovisioner().look(), 'restarting');
    assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.cloned']);
    assert.equal(
      readFileSync(volume('data', 'mysql.ibd'), 'utf8'),
      'own',
      'the data is untouched until mysqld restarts',
    );
    assert.deepEqual(
      statements.map((s) => s.sql),
      [
        'SET GLOBAL clone_valid_donor_list = ?',
        'CLONE INSTANCE FROM ?@?:3306 IDENTIFIED BY ? DATA DIRECTORY = ? REQUIRE SSL',
        'SHUTDOWN',
      ],
    );
    assert.deepEqual(statements[0]?.values, ['shop-primary:3306']);
    // As the clone account (the replication account cannot clone), its password a value, never in the text.
    assert.deepEqual(statements[1]?.values, ['recon8s-clone', 'shop-primary', CLONE_PASSWORD, volume('data.clone')]);
    assert.equal(reports.length, 1);
    assert.match(
      reports[0] ?? '',
      /^ReprovisionedByClone: shop-1 was re-provisioned by clone from shop-primary: the primary no longer has the binary logs this replica needs \(Got fatal error 1236[^]*\)\. Its previous data directory is kept until the clone replicates\.$/,
    );
  });

  it('removes what an interrupted attempt left before cloning again', async () => {
    member.receiverError = PURGED;
    mkdirSync(volume('data.clone'));
    writeFileSync(volume('data.clone', 'half'), '');
    assert.equal(await reprovisioner().look(), 'restarting');
    assert.deepEqual(readdirSync(volume('data.cloned')), ['mysql.ibd']);
  });

  it('reports a failed clone without the statement, and leaves the data as it was', async () => {
    member.receiverError = PURGED;
    member.cloneError = `You have an error in your SQL syntax; check the manual near 'IDENTIFIED BY '${CLONE_PASSWORD}'' at line 1`;
    assert.equal(await reprovisioner().look(), 'failed');
    assert.deepEqual(readdirSync(volume()), ['data']);
    assert.equal(reports.length, 1);
    assert.match(
      reports[0] ?? '',
      /^ReprovisionFailed: shop-1 could not be re-provisioned by clone from shop-primary: You have an error in your SQL syntax; check the manual; its data is unchanged/,
    );
    for (const text of [...reports, ...logs]) assert.ok(!text.includes(CLONE_PASSWORD), text);
  });

  const refusals: [string, () => void, RegExp][] = [
    ['a member that is not super-read-only', () => (member.superReadOnly = false), /this member is writable/],
    [
      'a member with transactions the primary does not have',
      () => (member.executed = `${P}:1-5,${OWN}:1`),
      /transactions the primary does not have/,
    ],
    [
      'a donor that is not writable',
      () => (donor = { writable: false, executed: '' }),
      /shop-primary is read-only, not a primary/,
    ],
    [
      'a donor that does not answer',
      () => (donor = new Error('connect ETIMEDOUT')),
      /does not answer: connect ETIMEDOUT/,
    ],
    ['while a clone is under way', () => (member.cloneInProgress = true), /a clone is under way/],
  ];
  for (const [what, arrange, why] of refusals) {
    it(`never clones over ${what}, and says why once`, async () => {
      member.receiverError = PURGED;
      arrange();
      const r = reprovisioner();
      assert.equal(await r.look(), 'nothing');
      assert.equal(await r.look(), 'nothing');
      assert.deepEqual(statements, []);
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.equal(logs.length, 1);
      assert.match(logs[0] ?? '', why);
    });
  }

  it('leaves any other receiver error alone: no clone (the controller decides)', async () => {
    member.receiverError = {
      errno: 13117,
      message: 'Fatal error: The replica I/O thread stops because source and replica have equal MySQL server UUIDs',
    };
    assert.equal(await reprovisioner().look(), 'nothing');
    assert.deepEqual(statements, []);
    assert.equal(isPurgedLogsError({ errno: 13114, message: 'some other 13114' }), false);
  });

  it('keeps the previous data directory until the clone replicates, then removes it', async () => {
    mkdirSync(volume('data.previous'));
    member.channel = { receiver: 'CONNECTING', applier: 'ON' };
    const r = reprovisioner();
    await r.forgetPreviousData();
    assert.ok(existsSync(volume('data.previous')));
    member.channel = { receiver: 'ON', applier: 'ON' };
    await r.forgetPreviousData();
    assert.deepEqual(readdirSync(volume()), ['data']);
    assert.match(logs.join('\n'), /the clone replicates; removed the previous data directory/);
  });

  describe('on request (the recon8s.dev/reprovision pod annotation)', () => {
    it('re-provisions a replicating member, even with transactions the primary lacks, and records the request', async () => {
      member.executed = `${P}:1-5,${OWN}:1`;
      annotate('2026-11-22T21:00:00Z');
      assert.equal(await reprovisioner().look(), 'restarting');
      assert.equal(readFileSync(volume('reprovision-request.done'), 'utf8'), '2026-11-22T21:00:00Z');
      assert.match(
        reports[0] ?? '',
        /the pod's recon8s\.dev\/reprovision annotation asks for it \(2026-11-22T21:00:00Z\)/,
      );
      // What it discarded is recorded, as for the controller's request (below).
      assert.match(reports[0] ?? '', new RegExp(`It discarded ${OWN}:1; no binary log holding them was found`));
      assert.equal(readFileSync(volume(RECORD, 'gtids'), 'utf8'), `${OWN}:1\n`);
    });

    it('does not re-provision again for a request it already handled, and does again for a new value', async () => {
      annotate('one');
      writeFileSync(volume('reprovision-request.done'), 'one');
      assert.equal(await reprovisioner().look(), 'nothing');
      annotate('two');
      assert.equal(await reprovisioner().look(), 'restarting');
      assert.equal(readFileSync(volume('reprovision-request.done'), 'utf8'), 'two');
    });

    it('does nothing without the annotation, with an empty one, or without the annotations file', () => {
      assert.equal(pendingRequest('a="b"\n', ''), undefined);
      assert.equal(pendingRequest('recon8s.dev/reprovision=""\n', ''), undefined);
      assert.equal(pendingRequest('', ''), undefined);
      assert.equal(pendingRequest('recon8s.dev/reprovision="x \\"y\\""\n', ''), 'x "y"');
    });

    it('keeps a request it may not carry out yet (the donor is not a primary) for later', async () => {
      annotate('later');
      donor = { writable: false, executed: '' };
      assert.equal(await reprovisioner().look(), 'nothing');
      assert.equal(existsSync(volume('reprovision-request.done')), false);
      donor = { writable: true, executed: '' };
      assert.equal(await reprovisioner().look(), 'restarting');
    });

    it('does not record a request whose clone failed, so that it is tried again', async () => {
      annotate('retry');
      member.cloneError = 'Clone Donor Error: 3862';
      assert.equal(await reprovisioner().look(), 'failed');
      assert.equal(existsSync(volume('reprovision-request.done')), false);
    });
  });

  describe("on the controller's request: a former primary's surplus, never acknowledged", () => {
    /** db-0 was the primary: its last two commits (OWN:11-12) reached no replica; binlog.000003 holds them. */
    const formerPrimary = (): void => {
      member.executed = `${P}:1-5,${OWN}:1-12`;
      donor = { writable: true, executed: `${P}:1-9,${OWN}:1-10` };
      member.binlogs = [
        { name: 'binlog.000001', bytes: 100, previousGtids: '' },
        { name: 'binlog.000002', bytes: 200, previousGtids: `${P}:1-5,${OWN}:1-4` },
        { name: 'binlog.000003', bytes: 300, previousGtids: `${P}:1-5,${OWN}:1-10` },
      ];
      for (const b of member.binlogs) writeFileSync(volume('data', b.name), b.name);
    };
    /** What start-mysqld.sh does before mysqld starts on the clone (adopt_clone). */
    const restartOnClone = (): void => {
      renameSync(volume('data'), volume('data.previous'));
      renameSync(volume('data.cloned'), volume('data'));
    };

    it('discards exactly the set the annotation carries, recording it and the binary logs that hold it first, and keeps those logs once the clone replicates', async () => {
      formerPrimary();
      annotate(`discard-unacknowledged:${OWN}:11-12`);
      assert.equal(discardBound(`discard-unacknowledged:${OWN}:11-12`), `${OWN}:11-12`);
      assert.equal(await reprovisioner().look(), 'restarting');
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.cloned', RECORD, 'reprovision-request.done']);
      assert.equal(readFileSync(volume(RECORD, 'gtids'), 'utf8'), `${OWN}:11-12\n`);
      assert.equal(readFileSync(volume(RECORD, 'binlogs'), 'utf8'), 'binlog.000003\n');
      assert.match(readFileSync(volume(RECORD, 'README'), 'utf8'), /mysqlbinlog --verbose --include-gtids=/);
      assert.match(
        reports[0] ?? '',
        new RegExp(
          `^ReprovisionedByClone: shop-1 was re-provisioned by clone from shop-primary: the controller asks for it .*never acknowledged to a client\\. It discarded ${OWN}:11-12; the binary logs holding them \\(binlog\\.000003\\) are kept in .*${RECORD}\\. Its previous data directory is kept until the clone replicates\\.$`,
        ),
      );

      restartOnClone();
      member.channel = { receiver: 'ON', applier: 'ON' };
      await reprovisioner().forgetPreviousData();
      assert.deepEqual(readdirSync(volume()).sort(), ['data', RECORD, 'reprovision-request.done']);
      assert.deepEqual(readdirSync(volume(RECORD)).sort(), ['README', 'binlog.000003', 'binlogs', 'gtids', 'kept']);
      assert.equal(readFileSync(volume(RECORD, 'binlog.000003'), 'utf8'), 'binlog.000003');
      assert.match(logs.join('\n'), new RegExp(`kept binlog\\.000003 in .*${RECORD}`));
    });

    it('refuses a clone that would discard more than the set the annotation carries (the primary changed since), and says why once', async () => {
      formerPrimary();
      annotate(`discard-unacknowledged:${OWN}:12`);
      const r = reprovisioner();
      assert.equal(await r.look(), 'nothing');
      assert.equal(await r.look(), 'nothing');
      assert.deepEqual(statements, []);
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.deepEqual(logs, [
        `not re-provisioning: a clone would discard ${OWN}:11-12, beyond the transactions the controller found never acknowledged (${OWN}:12); a new value of the recon8s.dev/reprovision annotation, from a person, discards them all`,
      ]);
    });

    it("refuses to discard, at the controller's request, what it held when a stop of its mysqld was found unsafe (a graceful shutdown may have acknowledged it); a person's request still does", async () => {
      formerPrimary();
      annotate(`discard-unacknowledged:${OWN}:11-12`);
      // A stop not fenced, found at the start after it, when it held up to 11 (12 came later).
      unsafeStops = [
        {
          found: '2026-11-28T04:00:00.000Z',
          why: 'it was shut down cleanly without its agent fencing it first',
          executed: `${P}:1-9,${OWN}:1-11`,
        },
      ];
      const r = reprovisioner();
      assert.equal(await r.look(), 'nothing');
      assert.deepEqual(statements, []);
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.deepEqual(logs, [
        `not re-provisioning: this member held ${OWN}:11 when a stop of its mysqld was found unsafe at 2026-11-28T04:00:00.000Z (it was shut down cleanly without its agent fencing it first), so they may have been acknowledged to a client; a new value of the recon8s.dev/reprovision annotation, from a person, discards them`,
      ]);
      // An unsafe stop before any of them does not hold them.
      unsafeStops = [{ found: '2026-11-28T03:00:00.000Z', why: 'earlier', executed: `${P}:1-9,${OWN}:1-10` }];
      assert.equal(await reprovisioner().look(), 'restarting');
      // A person's request is theirs to judge.
      rmSync(volume(), { recursive: true, force: true });
      mkdirSync(volume('data'), { recursive: true });
      formerPrimary();
      unsafeStops = [{ found: '2026-11-28T04:00:00.000Z', why: 'unfenced', executed: `${P}:1-9,${OWN}:1-12` }];
      annotate('by-hand-1');
      assert.equal(await reprovisioner().look(), 'restarting');
    });

    it('does not use a clone made while the primary changed (another member may have been the donor), and tries again', async () => {
      formerPrimary();
      annotate(`discard-unacknowledged:${OWN}:11-12`);
      donor = { writable: true, executed: `${P}:1-9,${OWN}:1-10`, serverUuid: P };
      const afterFailover = { writable: true, executed: `${P}:1-4,${OWN}:1-10`, serverUuid: OWN };
      member.onClone = () => (donor = afterFailover);
      assert.equal(await reprovisioner().look(), 'nothing');
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.match(
        logs.at(-1) ?? '',
        new RegExp(
          `^not using the clone: the primary answering now \\(${OWN}\\) is not the one it was checked against \\(${P}\\)`,
        ),
      );
      // Checked against the new primary, the clone would discard more than the request allows.
      assert.equal(await reprovisioner().look(), 'nothing');
      assert.match(logs.at(-1) ?? '', /beyond the transactions the controller found never acknowledged/);
      assert.deepEqual(reports, []);
    });

    it('removes the record of a clone that failed, and what an interrupted attempt left', async () => {
      formerPrimary();
      mkdirSync(volume('discarded-2026-01-01T00-00-00-000Z.pending'));
      annotate(`discard-unacknowledged:${OWN}:11-12`);
      member.cloneError = 'Clone Donor Error: 3862';
      assert.equal(await reprovisioner().look(), 'failed');
      assert.deepEqual(readdirSync(volume()), ['data']);
    });
  });

  describe('the binary logs a discard keeps', () => {
    const logs3: BinlogFile[] = [
      { name: 'b.1', bytes: 100, previousGtids: '' },
      { name: 'b.2', bytes: 200, previousGtids: `${P}:1-5` },
      { name: 'b.3', bytes: 300, previousGtids: `${P}:1-9,${OWN}:1-2` },
    ];

    it('are those holding any discarded transaction: a log holds what the next one adds, the last one what gtid_executed adds', () => {
      const executed = `${P}:1-12,${OWN}:1-3`;
      assert.deepEqual(binlogsHolding(logs3, executed, `${OWN}:3`, 1e9), { keep: ['b.3'], left: [] });
      assert.deepEqual(binlogsHolding(logs3, executed, `${OWN}:2-3`, 1e9), { keep: ['b.2', 'b.3'], left: [] });
      assert.deepEqual(binlogsHolding(logs3, executed, `${P}:1`, 1e9), { keep: ['b.1'], left: [] });
      assert.deepEqual(binlogsHolding(logs3, executed, `${OWN}:9`, 1e9), { keep: [], left: [] });
    });

    it('are kept up to the bound, the newest first, the others named as not kept', () => {
      const executed = `${P}:1-12,${OWN}:1-3`;
      const all = `${P}:1-12,${OWN}:1-3`;
      assert.deepEqual(binlogsHolding(logs3, executed, all, 500), { keep: ['b.2', 'b.3'], left: ['b.1'] });
      assert.deepEqual(binlogsHolding(logs3, executed, all, 299), { keep: [], left: ['b.1', 'b.2', 'b.3'] });
    });

    it(`are kept for the last ${DISCARDS_KEPT} discards only, the oldest removed first, each moved once`, async () => {
      mkdirSync(volume('data.previous'));
      for (let i = 1; i <= DISCARDS_KEPT + 1; i++) {
        mkdirSync(volume(`discarded-2026-0${i}`));
        writeFileSync(volume(`discarded-2026-0${i}`, 'binlogs'), `binlog.00000${i}\n../escape\n`);
        if (i < DISCARDS_KEPT + 1) writeFileSync(volume(`discarded-2026-0${i}`, 'kept'), '');
      }
      writeFileSync(volume('data.previous', `binlog.00000${DISCARDS_KEPT + 1}`), 'the surplus');
      const done = await keepDiscardedBinlogs(volume(), volume('data.previous'));
      assert.deepEqual(readdirSync(volume()).sort(), [
        'data',
        'data.previous',
        ...[2, 3, 4].map((i) => `discarded-2026-0${i}`),
      ]);
      assert.equal(
        readFileSync(volume('discarded-2026-04', `binlog.00000${DISCARDS_KEPT + 1}`), 'utf8'),
        'the surplus',
      );
      assert.equal(done.length, 2);
      assert.deepEqual(await keepDiscardedBinlogs(volume(), volume('data.previous')), [], 'once');
    });
  });

  it('decides from the facts alone: a person may discard errant transactions, nobody may clone over a writable member', () => {
    const facts = (f: Partial<ReprovisionFacts>): ReprovisionFacts => ({
      memberSuperReadOnly: true,
      donor: { writable: true, executed: '' },
      subsetOfDonor: true,
      discards: '',
      cloneInProgress: false,
      ...f,
    });
    assert.equal(reprovisionRefusal(facts({}), 'p', false), undefined);
    assert.equal(reprovisionRefusal(facts({ subsetOfDonor: false }), 'p', true), undefined);
    assert.match(reprovisionRefusal(facts({ memberSuperReadOnly: false }), 'p', true) ?? '', /writable/);
    assert.equal(errorSummary("ERROR 1064: near 'secret' at line 1.\nmore"), 'ERROR 1064:');
  });
});
