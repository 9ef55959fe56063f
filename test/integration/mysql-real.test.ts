// The MySQLCluster scripts against a real MySQL 9.7 (the test image's), three members replicating in
// a sandbox (support/mysql-sandbox.ts): what MySQL decides, proven on MySQL. One cluster for every
// test, in order, as a user's cluster lives.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { eventually } from './eventually.js';
import type { MySQLSandbox, SandboxMember } from './support/mysql-sandbox.js';
import { startMySQLSandbox } from './support/mysql-sandbox.js';

describe('MySQLCluster members on a real MySQL 9.7', function () {
  this.timeout(120_000);
  let sandbox: MySQLSandbox;
  let members: SandboxMember[];
  let primary: SandboxMember;

  const sql = (m: SandboxMember, text: string): string => {
    const r = m.sql(text);
    assert.ok(r.ok, `SQL on member ${m.ordinal} failed: ${r.stderr}`);
    return r.stdout.trim();
  };
  const ready = (m: SandboxMember) =>
    eventually(() => assert.ok(m.script('ready.sh').ok, `member ${m.ordinal} not ready`), {
      timeoutMs: 90_000,
      intervalMs: 250,
      maxIntervalMs: 1000,
      description: `member ${m.ordinal} ready (ready.sh)`,
    });
  const rows = (m: SandboxMember, expected: string) =>
    eventually(() => assert.equal(sql(m, 'SELECT GROUP_CONCAT(id ORDER BY id) FROM t.r'), expected), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: `rows ${expected} on member ${m.ordinal}`,
    });

  before(async function () {
    this.timeout(20 * 60_000); // the first run builds the image's root file system
    sandbox = await startMySQLSandbox();
    members = [0, 1, 2].map((i) => sandbox.member(i));
    primary = members[0] as SandboxMember;
    // In order, as the StatefulSet starts them (OrderedReady): a replica clones a ready primary.
    for (const m of members) {
      m.start();
      await ready(m);
    }
  });
  after(async () => {
    await sandbox?.stop();
  });

  it('replicates a row written on the primary to every replica, and the replicas refuse writes', async () => {
    sql(primary, 'CREATE DATABASE t; CREATE TABLE t.r (id INT PRIMARY KEY); INSERT INTO t.r VALUES (1)');
    for (const m of members.slice(1)) {
      await rows(m, '1');
      const w = m.sql('INSERT INTO t.r VALUES (2)');
      assert.equal(w.ok, false);
      assert.match(w.stderr, /super-read-only/);
    }
  });

  it('probes liveness without a failed login: Aborted_connects does not move, where the old probe moved it', () => {
    const aborted = (m: SandboxMember) =>
      Number(
        sql(m, "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Aborted_connects'"),
      );
    for (const m of members) {
      const before = aborted(m);
      for (let i = 0; i < 3; i++) {
        const r = m.script('alive.sh');
        assert.ok(r.ok, r.stderr);
        assert.match(r.stdout, /mysqld is alive/);
      }
      assert.equal(aborted(m), before, `member ${m.ordinal}`);
    }
    // The check can fail: the probe this replaced is refused and counted.
    const before = aborted(primary);
    assert.ok(primary.exec(['mysqladmin', '--no-defaults', '--socket=/var/run/mysqld/mysqld.sock', 'ping']).ok);
    assert.equal(aborted(primary), before + 1);
  });

  it('listens on 3306 only: no X Protocol', () => {
    for (const m of members) {
      const host = m.ordinal === 0 ? '127.0.0.1' : `127.0.0.${10 + m.ordinal}`;
      const tcp = (port: number) => m.exec(['bash', '-c', `exec 3<>/dev/tcp/${host}/${port}`]).ok;
      assert.equal(tcp(3306), true, `member ${m.ordinal}: 3306`);
      assert.equal(tcp(33060), false, `member ${m.ordinal}: 33060`);
      assert.equal(
        sql(
          m,
          "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'mysqlx' AND PLUGIN_STATUS = 'ACTIVE'",
        ),
        '0',
      );
    }
  });

  it('configures replication as soon as mysqld answers, not a 10 s polling period later', () => {
    // The server's own clock, in its log: ready for connections, then the sidecar's CHANGE REPLICATION SOURCE.
    for (const m of members.slice(1)) {
      const log = m.log('mysql');
      const ready = /^(\S+) 0 \[System\] \[MY-010931\] .*ready for connections.*port: 3306/m.exec(log)?.[1];
      const configured = /^(\S+) \d+ \[System\] \[MY-010597\] \[Repl\] 'CHANGE REPLICATION SOURCE TO/m.exec(log)?.[1];
      assert.ok(ready && configured, log.slice(-2000));
      const ms = Date.parse(configured) - Date.parse(ready);
      console.log(`      member ${m.ordinal}: replication configured ${ms} ms after mysqld was ready`);
      assert.ok(ms >= 0 && ms < 5000, `${ms} ms`);
    }
  });

  it('re-provisions by clone a replica whose primary purged the binary logs it needs, keeping its data until the clone replicates', async () => {
    const replica = members[2] as SandboxMember;
    const uuid = sql(replica, 'SELECT @@server_uuid');
    await replica.stop();
    // While it is away, the primary writes and its binary logs "expire".
    sql(primary, 'INSERT INTO t.r VALUES (2); FLUSH BINARY LOGS; INSERT INTO t.r VALUES (3); FLUSH BINARY LOGS');
    const current = sql(primary, 'SHOW BINARY LOG STATUS').split('\t')[0] ?? '';
    sql(primary, `PURGE BINARY LOGS TO '${current}'`);
    const primaryUuid = sql(primary, 'SELECT @@server_uuid');

    replica.start();
    await ready(replica);
    await rows(replica, '1,2,3');
    const sidecar = replica.log('replication');
    assert.match(
      sidecar,
      /the primary no longer has the binary logs this replica needs \(Got fatal error 1236 from source .*purged required binary logs/,
    );
    assert.match(
      sidecar,
      /the replication container exited with 0: ReprovisionedByClone: shop-2 was re-provisioned by clone from 127\.0\.0\.1: the primary no longer had the binary logs it needed\./,
    );
    assert.match(
      replica.log('mysql'),
      /the data directory is now a clone of the primary; the previous one is kept in \/var\/lib\/mysql\/data\.previous/,
    );
    await eventually(
      () => assert.match(replica.log('replication'), /the clone replicates; removed the previous data directory/),
      { timeoutMs: 30_000, description: 'the previous data removed' },
    );
    assert.deepEqual(readdirSync(replica.volume), ['data']);
    // A replica of its own (not the donor's identity), read-only, replicating new writes.
    assert.notEqual(sql(replica, 'SELECT @@server_uuid'), primaryUuid);
    assert.notEqual(sql(replica, 'SELECT @@server_uuid'), uuid);
    assert.equal(sql(replica, 'SELECT @@GLOBAL.super_read_only'), '1');
    sql(primary, 'INSERT INTO t.r VALUES (4)');
    await rows(replica, '1,2,3,4');
    // Nothing happened to the primary or the other replica.
    assert.equal(sql(primary, 'SELECT @@server_uuid'), primaryUuid);
    assert.equal(sql(primary, 'SELECT @@GLOBAL.read_only'), '0');
    await rows(members[1] as SandboxMember, '1,2,3,4');
  });

  it('never re-provisions a replica holding transactions the primary lacks', async () => {
    const replica = members[1] as SandboxMember;
    // An errant transaction (written on the replica by hand, outside replication) ...
    sql(replica, 'SET GLOBAL super_read_only = 0; CREATE DATABASE errant; SET GLOBAL super_read_only = 1');
    await replica.stop();
    sql(primary, 'INSERT INTO t.r VALUES (5); FLUSH BINARY LOGS');
    sql(primary, `PURGE BINARY LOGS TO '${sql(primary, 'SHOW BINARY LOG STATUS').split('\t')[0] ?? ''}'`);
    replica.start();
    // ... keeps it out of re-provisioning: it stays as it is, unready, and says why.
    await eventually(
      () =>
        assert.match(
          replica.log('replication'),
          /not re-provisioning: this member has transactions the primary does not have/,
        ),
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        description: 'the refusal',
      },
    );
    assert.equal(replica.script('ready.sh').ok, false);
    assert.deepEqual(readdirSync(replica.volume), ['data']);
    assert.equal(sql(replica, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'errant'"), '1');
    assert.doesNotMatch(replica.log('replication'), /ReprovisionedByClone/);
  });
});
