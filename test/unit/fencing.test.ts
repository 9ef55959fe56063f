// One fencing (lib/mysql/fencing.ts), as the controller and the agent run it, against a fake member that
// plays what MySQL decides (checked on a real mysqld in test/integration/mysql-real.test.ts): a commit
// waits for an acknowledgement while the source side is on, and holds read-only up meanwhile; a queued
// read-only request holds every new write and commit until it is done; KILL shuts a client's socket.
// Between every two statements of the fencing, a root client (CONNECTION_ADMIN: offline_mode lets it in)
// logs in and commits, and no replica can acknowledge anything: it must never be told a commit succeeded.
import assert from 'node:assert/strict';
import type { AsideStatement, FencingFlags, FencingSql } from '../../lib/mysql/fencing.js';
import { KEEP_CLIENTS_OUT, READ_ONLY, READ_ONLY_QUEUED, clientSessionsQuery, fence } from '../../lib/mysql/fencing.js';

interface Session {
  readonly id: number;
  /** Its commit waits for an acknowledgement (it holds read-only up). */
  stranded: boolean;
  killed: boolean;
}

interface Options {
  /** Client commits are waiting for an acknowledgement when the fencing begins. */
  readonly strandedCommits?: boolean;
  /** The call (0-based, every FencingSql call counts) that fails once, as a connection lost half-way. */
  readonly failCall?: number;
  /** A statement that fails every time it is sent. */
  readonly alwaysFails?: string;
  /** Something other than a commit (a long rollback) holds read-only up, for ever. */
  readonly heldUp?: boolean;
  /** The source side is off to begin with (a cluster without semi-synchronous replication). */
  readonly semiSyncOff?: boolean;
  /** No client writes during the fencing. */
  readonly quiet?: boolean;
  /** MySQL refuses to end client sessions (an account without SYSTEM_USER, root's sessions). */
  readonly killRefused?: boolean;
  /** Another fencing holds the fencing lock throughout. */
  readonly lockHeld?: boolean;
}

class FakeMember implements FencingSql {
  readonly log: string[] = [];
  readOnly = false;
  offline = false;
  /** offline_mode was persisted on (it survives a restart of mysqld). */
  offlinePersisted = false;
  semiSync: boolean;
  /** Commits a client was told succeeded: each is lost by a failover, since no replica has it. */
  readonly acknowledged: number[] = [];
  private sessions: Session[] = [];
  private nextId = 100;
  private calls = 0;
  private request: { id: number; reject: (e: Error) => void; resolve: () => void } | undefined;

  constructor(private readonly o: Options = {}) {
    this.semiSync = !o.semiSyncOff;
    if (o.strandedCommits) for (let i = 0; i < 2; i++) this.clientCommits();
  }

  /** Writes are held: read-only is on, or a request for it waits. */
  get writesHeld(): boolean {
    return this.readOnly || this.request !== undefined;
  }

  /** A root client logs in and commits (nothing refuses root's login). */
  private clientCommits(): void {
    const s: Session = { id: this.nextId++, stranded: false, killed: false };
    this.sessions.push(s);
    if (this.writesHeld) return; // refused now, or queued behind the request and refused by read-only once it holds
    if (this.semiSync) s.stranded = true;
    else this.acknowledged.push(s.id);
  }

  private readOnlyHeldUp(): boolean {
    return Boolean(this.o.heldUp) || this.sessions.some((s) => s.stranded);
  }

  /** Every call: maybe the injected failure, then (after the statement) a client commits. */
  private async call<T>(what: string, fn: () => T): Promise<T> {
    this.log.push(what);
    const n = this.calls++;
    if (n === this.o.failCall || what === this.o.alwaysFails)
      throw new Error(`Lost connection to MySQL server during query (${what})`);
    const result = fn();
    if (!this.o.quiet) this.clientCommits();
    return result;
  }

  private setSemiSync(on: boolean): void {
    this.semiSync = on;
    if (on) return;
    for (const s of this.sessions.filter((x) => x.stranded)) {
      s.stranded = false;
      // Completes here; acknowledged to its client unless KILL shut the client's socket first.
      if (!s.killed) this.acknowledged.push(s.id);
    }
    if (this.request && !this.readOnlyHeldUp()) {
      this.readOnly = true;
      this.request.resolve();
      this.request = undefined;
    }
  }

  exec(sql: string): Promise<void> {
    return this.call(sql, () => {
      if (sql === READ_ONLY) {
        if (this.readOnlyHeldUp()) throw new Error('Lock wait timeout exceeded; try restarting transaction');
        this.readOnly = true;
      }
      if (sql === 'SET GLOBAL offline_mode = ON' || sql === KEEP_CLIENTS_OUT) this.offline = true;
      if (sql === 'SET GLOBAL offline_mode = OFF') this.offline = false;
      if (sql === KEEP_CLIENTS_OUT) this.offlinePersisted = true;
      if (sql === 'SET GLOBAL rpl_semi_sync_source_enabled = OFF') this.setSemiSync(false);
      if (sql === 'SET GLOBAL rpl_semi_sync_source_enabled = ON') this.setSemiSync(true);
    });
  }

  clientSessions(spare: readonly string[]): Promise<number[]> {
    return this.call(`list sessions sparing ${spare.join(',')}`, () =>
      this.sessions.filter((s) => !s.killed).map((s) => s.id),
    );
  }

  kill(id: number): Promise<void> {
    return this.call(`kill ${id}`, () => {
      if (this.o.killRefused && this.sessions.some((x) => x.id === id))
        throw Object.assign(new Error(`You are not owner of thread ${id}`), { errno: 1095 });
      if (this.request?.id === id) {
        this.request.reject(new Error('Query execution was interrupted'));
        this.request = undefined;
      }
      const s = this.sessions.find((x) => x.id === id);
      if (s) s.killed = true; // a stranded commit stays stranded: MySQL does not end that wait
    });
  }

  aside(statements: readonly string[]): Promise<AsideStatement> {
    return this.call(`aside: ${statements.join('; ')}`, () => {
      const id = this.nextId++;
      if (!this.readOnlyHeldUp()) {
        this.readOnly = true;
        return { id, done: Promise.resolve() };
      }
      let settle: Pick<NonNullable<FakeMember['request']>, 'resolve' | 'reject'> | undefined;
      const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      if (settle) this.request = { id, ...settle };
      return { id, done };
    });
  }

  lock(name: string, seconds: number): Promise<boolean> {
    return this.call(`lock ${name} ${seconds}`, () => !this.o.lockHeld);
  }

  sessionState(id: number): Promise<string | undefined> {
    return this.call(`state of ${id}`, () => (this.request?.id === id ? 'Waiting for commit lock' : undefined));
  }

  fencingFlags(): Promise<FencingFlags> {
    return this.call('flags?', () => ({ semiSyncSource: this.semiSync, offline: this.offline }));
  }
}

const SPARE = ['recon8s-admin', 'replication'];
const AS_AGENT = { spare: SPARE, waitForCommitsSeconds: 0, readOnlyWithinSeconds: 0.3 };
const AS_CONTROLLER = { spare: SPARE, waitForCommitsSeconds: 5, readOnlyWithinSeconds: 0.3 };
const done = (m: FakeMember) => [m.readOnly, m.offline, m.semiSync];

describe('fencing (one procedure for the controller and the agent)', () => {
  it('as the controller, with no commit waiting: read-only at once, then every client ended and the source side off', async () => {
    const m = new FakeMember({ quiet: true });
    await fence(m, AS_CONTROLLER);
    assert.deepEqual(m.log.slice(0, 4), [
      'SET SESSION lock_wait_timeout = 3',
      READ_ONLY,
      // The session outlives the fencing: its next statements wait for locks as long as MySQL's default.
      'SET SESSION lock_wait_timeout = DEFAULT',
      'list sessions sparing recon8s-admin,replication',
    ]);
    assert.deepEqual(m.log.slice(-1), ['SET GLOBAL rpl_semi_sync_source_enabled = OFF']);
    // Nothing was released: clients were never kept out, and offline_mode is no business of this path.
    assert.ok(!m.log.some((s) => s.includes('offline_mode')), m.log.join('\n'));
    assert.deepEqual(done(m), [true, false, false]);
    assert.deepEqual(m.acknowledged, []);
  });

  for (const [who, options] of [
    ['the agent (read-only never waited for)', AS_AGENT],
    ['the controller', AS_CONTROLLER],
  ] as const) {
    it(`for a member about to stop, as ${who}, with no commit waiting: read-only, every client ended, the source side left as it is (turning it off waits ~1 s for MySQL)`, async () => {
      const m = new FakeMember({ quiet: true });
      await fence(m, { ...options, leaveSourceSide: true });
      assert.ok(!m.log.includes('SET GLOBAL rpl_semi_sync_source_enabled = OFF'), m.log.join('\n'));
      assert.ok(m.log.some((s) => s.startsWith('list sessions')));
      assert.deepEqual(done(m), [true, false, true]);
      assert.deepEqual(m.acknowledged, []);
    });

    it(`for a member about to stop, as ${who}, with commits stranded: the source side goes off all the same (read-only waits for it), nothing acknowledged, and it stays offline`, async () => {
      const m = new FakeMember({ strandedCommits: true });
      await fence(m, { ...options, leaveSourceSide: true });
      assert.deepEqual(done(m), [true, true, false]);
      assert.ok(m.offlinePersisted);
      assert.deepEqual(m.acknowledged, []);
    });
  }

  it('with commits stranded: the source side goes off only while read-only waits queued, after every client was ended', async () => {
    const m = new FakeMember({ strandedCommits: true });
    await fence(m, AS_AGENT);
    // The released commits may be discarded by a failover: no ordinary client may read them, even after a restart.
    assert.deepEqual(done(m), [true, true, false]);
    assert.ok(m.offlinePersisted, 'offline_mode persisted');
    assert.equal(m.log.at(-2), KEEP_CLIENTS_OUT);
    assert.deepEqual(m.acknowledged, [], 'commits acknowledged though no replica acknowledged them');
    const off = m.log.indexOf('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
    const queued = m.log.findIndex((s) => s.startsWith('state of'));
    assert.ok(m.log.indexOf('SET GLOBAL offline_mode = ON') < m.log.findIndex((s) => s.startsWith('kill')));
    assert.deepEqual(m.log.slice(0, 2), ['lock recon8s.fencing 10', 'flags?']);
    assert.ok(queued > 0 && queued < off, m.log.join('\n'));
    // Persisted before anything is released: a fencing cut short after that still keeps clients out.
    assert.ok(m.log.indexOf(KEEP_CLIENTS_OUT) < off, m.log.join('\n'));
    assert.equal(m.log.at(-1), "DO RELEASE_LOCK('recon8s.fencing')");
    assert.ok(
      m.log.slice(queued, off).some((s) => s.startsWith('kill')),
      'the clients that logged in meanwhile ended',
    );
  });

  for (const [who, options] of [
    ['the agent', AS_AGENT],
    ['the controller', AS_CONTROLLER],
  ] as const) {
    // How many calls a complete fencing makes, to fail each of them in turn.
    const calls = async () => {
      const m = new FakeMember({ strandedCommits: true });
      await fence(m, options);
      return m.log.length;
    };
    it(`as ${who}: whichever call fails, no write is ever acknowledged, writes stay held or acknowledged by a replica, and the next try completes`, async () => {
      const n = await calls();
      assert.ok(n > 10, `${n} calls`);
      for (let failCall = 0; failCall < n; failCall++) {
        const m = new FakeMember({ strandedCommits: true, failCall });
        // A failed first try at read-only (the controller's) is no failure: it goes on as when it times out.
        const outcome = await fence(m, options).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (outcome !== undefined) assert.match(String(outcome), /Lost connection/, `call ${failCall} failing`);
        assert.deepEqual(m.acknowledged, [], `call ${failCall} failing: ${m.log.join(' | ')}`);
        // Left writable, the member needs a replica's acknowledgement for every commit again.
        assert.ok(m.writesHeld || m.semiSync, `call ${failCall} failing left it open: ${m.log.join(' | ')}`);
        await fence(m, options);
        // Stranded commits were released by one of the two tries: the member stays offline, persisted.
        assert.deepEqual(done(m), [true, true, false], `call ${failCall} failing, then again: ${m.log.join(' | ')}`);
        assert.ok(m.offlinePersisted, `call ${failCall} failing, then again: not persisted: ${m.log.join(' | ')}`);
        assert.deepEqual(m.acknowledged, [], `call ${failCall} failing, then again`);
      }
    });
  }

  for (const [who, options] of [
    ['the agent', AS_AGENT],
    ['the controller', AS_CONTROLLER],
  ] as const)
    it(`as ${who}, a member kept offline by an earlier fencing is fenced again (read-only at once) and stays offline`, async () => {
      const m = new FakeMember({ strandedCommits: true });
      await fence(m, AS_AGENT);
      assert.deepEqual(done(m), [true, true, false]);
      await fence(m, options);
      assert.deepEqual(done(m), [true, true, false], m.log.join('\n'));
      assert.deepEqual(m.acknowledged, []);
    });

  it('stops before the source side goes off when MySQL refuses to end a client (the account lacks SYSTEM_USER): nothing acknowledged, nothing released', async () => {
    const m = new FakeMember({ strandedCommits: true, killRefused: true });
    await assert.rejects(fence(m, AS_AGENT), /not owner of thread/);
    assert.deepEqual(m.acknowledged, []);
    assert.equal(m.semiSync, true);
    assert.ok(!m.log.includes('SET GLOBAL rpl_semi_sync_source_enabled = OFF'), m.log.join('\n'));
  });

  it('does nothing when, once it holds the fencing lock, it is no longer needed (another fencing ended meanwhile)', async () => {
    const m = new FakeMember({ strandedCommits: true, quiet: true });
    await fence(m, { ...AS_AGENT, stillNeeded: () => Promise.resolve(false) });
    assert.deepEqual(m.log, ['lock recon8s.fencing 10', "DO RELEASE_LOCK('recon8s.fencing')"]);
    assert.equal(m.readOnly, false);
  });

  it('one fencing of a member at a time: while another holds the fencing lock, nothing is done', async () => {
    const m = new FakeMember({ strandedCommits: true, lockHeld: true });
    await assert.rejects(fence(m, AS_AGENT), /another fencing of this member/);
    assert.deepEqual(
      m.log.filter((s) => !s.startsWith('lock') && !s.startsWith('DO RELEASE_LOCK')),
      [],
    );
  });

  it('when read-only does not come after the source side is off: the source side on again, then the request withdrawn', async () => {
    const m = new FakeMember({ strandedCommits: true, heldUp: true });
    await assert.rejects(fence(m, AS_AGENT), /read-only did not come within 0.3 s/);
    assert.deepEqual([m.readOnly, m.writesHeld, m.semiSync], [false, false, true]);
    const on = m.log.indexOf('SET GLOBAL rpl_semi_sync_source_enabled = ON');
    const withdrawn = m.log.findLastIndex((s) => s.startsWith('kill'));
    assert.ok(on > 0 && on < withdrawn, m.log.join('\n'));
    assert.deepEqual(m.acknowledged, []);
  });

  it('when the source side cannot be turned on again, the request stays queued: writes held, never let through', async () => {
    const m = new FakeMember({
      strandedCommits: true,
      heldUp: true,
      alwaysFails: 'SET GLOBAL rpl_semi_sync_source_enabled = ON',
    });
    await assert.rejects(fence(m, AS_AGENT), /Lost connection/);
    assert.deepEqual([m.readOnly, m.writesHeld, m.semiSync], [false, true, false]);
    assert.deepEqual(m.acknowledged, []);
  });

  it('a member without semi-synchronous replication: the source side is never turned on by a fencing that gives up', async () => {
    const m = new FakeMember({ semiSyncOff: true, heldUp: true });
    await assert.rejects(fence(m, AS_AGENT), /did not come/);
    assert.equal(m.semiSync, false);
    assert.ok(!m.log.includes('SET GLOBAL rpl_semi_sync_source_enabled = ON'));
  });

  it("lists only sessions that could write: not its own, not MySQL's threads or replicas' dump threads, not the spared accounts, not a session holding or awaiting the global read lock", () => {
    const q = clientSessionsQuery(SPARE);
    assert.match(q.sql, /p\.ID <> CONNECTION_ID\(\)/);
    assert.match(q.sql, /COMMAND NOT IN \('Binlog Dump', 'Binlog Dump GTID', 'Daemon'\)/);
    assert.match(q.sql, /p\.USER NOT IN \(\?, \?, \?, \?\)/);
    assert.match(q.sql, /OBJECT_TYPE = 'GLOBAL' AND l\.LOCK_TYPE = 'SHARED'/);
    assert.deepEqual(q.values, ['system user', 'event_scheduler', 'recon8s-admin', 'replication']);
  });

  it("knows MySQL's states of a queued read-only request, and nothing else", () => {
    for (const s of ['Waiting for global read lock', 'Waiting for table flush', 'Waiting for commit lock'])
      assert.match(s, READ_ONLY_QUEUED);
    for (const s of ['', 'starting', 'Waiting for table metadata lock', 'executing'])
      assert.doesNotMatch(s, READ_ONLY_QUEUED);
  });
});
