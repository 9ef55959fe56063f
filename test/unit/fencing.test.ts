// One fencing (lib/mysql/fencing.ts), as the controller and the agent run it, against a fake member
// that records what it is told and can hold read-only behind a commit waiting for an acknowledgement.
import assert from 'node:assert/strict';
import type { FencingSql } from '../../lib/mysql/fencing.js';
import { clientSessionsQuery, fence } from '../../lib/mysql/fencing.js';

interface FakeMember extends FencingSql {
  readonly log: string[];
  readOnly: boolean;
  offline: boolean;
  semiSync: boolean;
}

/**
 * A member with client sessions 11 and 12. `strandedCommit`: a commit waits for an acknowledgement no
 * replica can give, so read-only times out until the semi-synchronous source side is off.
 * `failOn`: a statement that fails once (a connection lost half-way).
 */
function member(o: { strandedCommit?: boolean; failOn?: string } = {}): FakeMember {
  let failOn = o.failOn;
  let sessions = [11, 12];
  const m: FakeMember = {
    log: [],
    readOnly: false,
    offline: false,
    semiSync: true,
    exec(sql) {
      m.log.push(sql);
      if (sql === failOn) {
        failOn = undefined;
        return Promise.reject(new Error('Lost connection to MySQL server during query'));
      }
      if (sql === 'SET GLOBAL super_read_only = ON') {
        if (o.strandedCommit && m.semiSync) return Promise.reject(new Error('Lock wait timeout exceeded'));
        m.readOnly = true;
      }
      if (sql === 'SET GLOBAL offline_mode = ON') m.offline = true;
      if (sql === 'SET GLOBAL offline_mode = OFF') m.offline = false;
      if (sql === 'SET GLOBAL rpl_semi_sync_source_enabled = OFF') m.semiSync = false;
      return Promise.resolve();
    },
    clientSessions(spare) {
      m.log.push(`list sessions sparing ${spare.join(',')}`);
      return Promise.resolve(sessions);
    },
    kill(id) {
      m.log.push(`kill ${id}`);
      sessions = sessions.filter((s) => s !== id);
      return Promise.resolve();
    },
  };
  return m;
}

const SPARE = ['recon8s-admin', 'replication'];

describe('fencing (one procedure for the controller and the agent)', () => {
  it('as the controller: read-only first, waiting for commits in flight, then every client ended and the source side off', async () => {
    const m = member();
    await fence(m, { spare: SPARE, waitForCommitsSeconds: 5 });
    assert.deepEqual(m.log, [
      'SET SESSION lock_wait_timeout = 5',
      'SET GLOBAL super_read_only = ON',
      'list sessions sparing recon8s-admin,replication',
      'kill 11',
      'kill 12',
      'SET GLOBAL rpl_semi_sync_source_enabled = OFF',
    ]);
    assert.equal(m.readOnly, true);
    assert.equal(m.semiSync, false);
  });

  it('with a stranded commit: clients refused and ended, the source side off, then read-only, then open again, in that order', async () => {
    const m = member({ strandedCommit: true });
    await fence(m, { spare: SPARE, waitForCommitsSeconds: 5 });
    assert.deepEqual(m.log, [
      'SET SESSION lock_wait_timeout = 5',
      'SET GLOBAL super_read_only = ON',
      'SET GLOBAL offline_mode = ON',
      'list sessions sparing recon8s-admin,replication',
      'kill 11',
      'kill 12',
      'SET GLOBAL rpl_semi_sync_source_enabled = OFF',
      'list sessions sparing recon8s-admin,replication',
      'SET SESSION lock_wait_timeout = 5',
      'SET GLOBAL super_read_only = ON',
      'SET GLOBAL offline_mode = OFF',
    ]);
    assert.deepEqual([m.readOnly, m.offline, m.semiSync], [true, false, false]);
    // No client could commit, and be told so, between the source side turning off and read-only:
    // every session was ended before, and offline_mode refused new ones until after.
    const semiOff = m.log.indexOf('SET GLOBAL rpl_semi_sync_source_enabled = OFF');
    assert.ok(m.log.indexOf('SET GLOBAL offline_mode = ON') < m.log.indexOf('kill 11'));
    assert.ok(m.log.lastIndexOf('kill 12') < semiOff);
    assert.ok(semiOff < m.log.lastIndexOf('SET GLOBAL super_read_only = ON'));
    assert.ok(m.log.lastIndexOf('SET GLOBAL super_read_only = ON') < m.log.indexOf('SET GLOBAL offline_mode = OFF'));
  });

  it('as the agent of a member cut off: ends the clients at once, without waiting on a commit no replica can acknowledge', async () => {
    const m = member({ strandedCommit: true });
    await fence(m, { spare: SPARE, waitForCommitsSeconds: 0 });
    assert.equal(m.log[0], 'SET GLOBAL offline_mode = ON');
    assert.equal(m.log.filter((s) => s === 'SET GLOBAL super_read_only = ON').length, 1);
    assert.deepEqual([m.readOnly, m.offline, m.semiSync], [true, false, false]);
  });

  for (const failing of [
    'SET GLOBAL offline_mode = ON',
    'SET GLOBAL rpl_semi_sync_source_enabled = OFF',
    'SET GLOBAL super_read_only = ON',
  ]) {
    it(`stops at a statement that fails (${failing}) and completes when run again`, async () => {
      const m = member({ strandedCommit: true, failOn: failing });
      await assert.rejects(fence(m, { spare: SPARE, waitForCommitsSeconds: 0 }), /Lost connection/);
      assert.equal(m.readOnly, false);
      await fence(m, { spare: SPARE, waitForCommitsSeconds: 0 });
      assert.deepEqual([m.readOnly, m.offline, m.semiSync], [true, false, false]);
    });
  }

  it("lists only sessions that could write: not its own, not MySQL's threads or replicas' dump threads, not the spared accounts", () => {
    const q = clientSessionsQuery(SPARE);
    assert.match(q.sql, /ID <> CONNECTION_ID\(\)/);
    assert.match(q.sql, /COMMAND NOT IN \('Binlog Dump', 'Binlog Dump GTID', 'Daemon'\)/);
    assert.match(q.sql, /USER NOT IN \(\?, \?, \?, \?\)/);
    assert.deepEqual(q.values, ['system user', 'event_scheduler', 'recon8s-admin', 'replication']);
  });
});
