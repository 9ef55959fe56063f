// The object store is hostile: whoever can write the bucket (or, over plain HTTP, whoever is on the path)
// writes state.json, the manifests, the archived logs' JSON and the names in every listing. The shipped
// scripts run here as their jobs run them, against the fake mysql and rclone of support/mysql-scripts.ts
// (the store a directory), with poisoned objects: each is refused, naming the object and the value,
// reported as the job's failure, and nothing of it reaches SQL, a shell or a path.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { RESTORE_MEMBER_ENV, scriptSandbox } from './support/mysql-scripts.js';

const UUID = 'aaaaaaaa-0000-0000-0000-000000000000';
const OLD = '20200101T000000Z';
const NEWER = '20200102T000000Z';
/** A regular expression matching exactly `text`. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** SQL that would run as root had the value been pasted into a statement. */
const INJECTED = `${UUID}:1-5', ''); CREATE DATABASE pwned; SELECT ('`;

describe('MySQLCluster scripts and a hostile object store', () => {
  let box: ScriptSandbox;
  const store = (...p: string[]) => box.path('store', 'bucket', 'shop', ...p);
  const put = (path: string, text: string | Buffer) => {
    mkdirSync(dirname(store(path)), { recursive: true });
    writeFileSync(store(path), text);
  };
  const manifest = (name: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ name, gtidSet: `${UUID}:1-5`, endTime: '2020-01-01T00:01:00Z', dataBytes: 1000, ...extra });
  const termination = () => readFileSync(box.path('termination-log'), 'utf8');
  const run = (script: string, env: Record<string, string> = {}) =>
    box.run(script, {
      CLUSTER_NAME: 'shop',
      STORE_BUCKET: 'bucket',
      STORE_PREFIX: 'shop',
      RCLONE_CONFIG_STORE_ACCESS_KEY_ID: 'k',
      RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY: 's',
      FAKE_STORE: box.path('store'),
      TERMINATION_LOG: box.path('termination-log'),
      MYSQL_ROOT_PASSWORD: 'root-pw',
      MYSQL_BACKUP_PASSWORD: 'backup-pw',
      ...env,
    });
  /** What the mysql clients were handed (argv, options and SQL): the store's payload must not be in it. */
  const assertNotInSql = (payload: string) => {
    assert.equal(box.calls().includes(payload), false, `the store's value reached SQL:\n${box.calls()}`);
  };

  beforeEach(() => {
    box = scriptSandbox();
    mkdirSync(box.path('store', 'bucket', 'shop'), { recursive: true });
  });
  afterEach(() => box.cleanup());

  describe('binlog.sh (the binary-log job: SQL as root on the primary)', () => {
    const binlog = (env: Record<string, string> = {}) =>
      run('binlog.sh', { PRIMARY_HOST: 'shop-primary', BINLOG_SCRATCH: box.path('scratch'), ...env });

    it("refuses state.json's archivedGtids when it is not a GTID set: BinlogArchiveFailed naming the object and the value, before any statement", () => {
      put('binlog/state.json', JSON.stringify({ archivedGtids: INJECTED, coveredUntil: '2020-01-01T00:00:00Z' }));
      const r = binlog();
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        termination(),
        new RegExp(
          `^BinlogArchiveFailed: archiving the binary logs into s3://bucket/shop/binlog/ failed: \\S+ recon8s binlog\\.sh: archivedGtids in s3://bucket/shop/binlog/state\\.json is not a GTID set \\(uuid\\[:tag\\]:interval\\[:interval\\.\\.\\.\\], joined by commas\\): ${literally(`'${INJECTED}'`)}$`,
        ),
      );
      assertNotInSql('pwned');
      assert.equal(box.calls().includes('FLUSH BINARY LOGS'), false, 'nothing was done on the primary');
    });

    it("refuses the oldest manifest's gtidSet and a log's JSON gtidSet when they are not GTID sets, and deletes nothing", () => {
      put(`base/${NEWER}/manifest.json`, manifest(NEWER, { gtidSet: INJECTED }));
      put(`binlog/${OLD}-${UUID}-binlog.000001.json`, JSON.stringify({ gtidSet: `${UUID}:1-2` }));
      put(`binlog/${OLD}-${UUID}-binlog.000001.gz`, 'x');
      const r = binlog();
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        termination(),
        new RegExp(
          `^BinlogArchiveFailed: .*: gtidSet in s3://bucket/shop/base/${NEWER}/manifest\\.json is not a GTID set .*: '${UUID}:1-5', ''\\); CREATE DATABASE pwned`,
        ),
      );
      assert.ok(existsSync(store(`binlog/${OLD}-${UUID}-binlog.000001.gz`)), 'the log is kept');

      put(`base/${NEWER}/manifest.json`, manifest(NEWER));
      put(`binlog/${OLD}-${UUID}-binlog.000001.json`, JSON.stringify({ gtidSet: INJECTED }));
      const again = binlog();
      assert.equal(again.status, 1, again.stderr);
      assert.match(
        termination(),
        new RegExp(
          `^BinlogArchiveFailed: .*: gtidSet in s3://bucket/shop/binlog/${OLD}-${UUID}-binlog\\.000001\\.json is not a GTID set`,
        ),
      );
      assert.ok(existsSync(store(`binlog/${OLD}-${UUID}-binlog.000001.gz`)), 'the log is kept');
      assertNotInSql('pwned');
    });

    it('leaves alone, saying so, what in binlog/ is not named like an archived log, and never reads it', () => {
      put(`base/${NEWER}/manifest.json`, manifest(NEWER));
      const names = [`${OLD}-x'$(touch pwned)'.json`, `${OLD}-${UUID}-..json`, 'notes.json'];
      for (const n of names) put(`binlog/${n}`, JSON.stringify({ gtidSet: `${UUID}:1` }));
      const r = binlog();
      assert.equal(r.status, 0, r.stderr);
      assert.match(termination(), /^BinlogsArchived: /);
      for (const n of names) {
        assert.ok(existsSync(store(`binlog/${n}`)), n);
        assert.ok(
          r.stderr.includes(`left alone: s3://bucket/shop/binlog/'${n}' is not named like an archived binary log`),
          r.stderr,
        );
        assert.equal(box.calls().includes(`rclone cat store:bucket/shop/binlog/${n}`), false, n);
      }
      assert.equal(existsSync(box.path('scratch', 'pwned')), false);
      assert.doesNotMatch(r.stderr, /state\.json is not named/);
    });
  });

  describe('restore (bootstrap.sh of a new cluster from a backup: SQL as root on its first member)', () => {
    const restore = (env: Record<string, string> = {}) => {
      mkdirSync(box.path('volume'), { recursive: true });
      return run('bootstrap.sh', {
        ...RESTORE_MEMBER_ENV,
        DATA_VOLUME: box.path('volume'),
        ...env,
      });
    };
    beforeEach(() => put(`base/${OLD}/dump.sql.gz`, gzipSync('-- the dump\n')));

    it('fails with RestoreFailed, naming the manifest and the value, when its gtidSet is not a GTID set; nothing of it reaches SQL', () => {
      put(`base/${OLD}/manifest.json`, manifest(OLD, { gtidSet: INJECTED }));
      const r = restore();
      assert.equal(r.status, 1, r.stderr);
      assert.equal(
        termination(),
        `RestoreFailed: gtidSet in s3://bucket/shop/base/${OLD}/manifest.json is not a GTID set (uuid[:tag]:interval[:interval...], joined by commas): '${INJECTED}'`,
      );
      assertNotInSql('pwned');
      assert.equal(existsSync(box.path('volume', 'data')), false, 'no data directory');
    });

    it('fails when a manifest names another backup than the one it sits beside (a manifest copied over)', () => {
      put(`base/${OLD}/manifest.json`, manifest(NEWER));
      const r = restore();
      assert.equal(r.status, 1, r.stderr);
      assert.equal(
        termination(),
        `RestoreFailed: s3://bucket/shop/base/${OLD}/manifest.json is not the manifest of backup ${OLD}: it names '${NEWER}'`,
      );
    });

    it("fails on an end time that is not a time, and on an archived log's JSON that names another log", () => {
      put(`base/${OLD}/manifest.json`, manifest(OLD, { endTime: '2020-01-01 00:00:00; x' }));
      const point = { RESTORE_POINT_IN_TIME: '2020-01-01T01:00:00Z' };
      const r = restore(point);
      assert.equal(r.status, 1, r.stderr);
      assert.equal(
        termination(),
        `RestoreFailed: endTime in s3://bucket/shop/base/${OLD}/manifest.json is not a UTC time such as 2026-11-24T10:15:00Z: '2020-01-01 00:00:00; x'`,
      );

      put(`base/${OLD}/manifest.json`, manifest(OLD));
      put('binlog/state.json', JSON.stringify({ archivedGtids: `${UUID}:1-9`, coveredUntil: '2020-01-01T02:00:00Z' }));
      const log = `${NEWER}-${UUID}-binlog.000002`;
      put(`binlog/${log}.json`, JSON.stringify({ file: 'binlog.000001', server: UUID, gtidSet: `${UUID}:6-9` }));
      put(`binlog/${log}.gz`, gzipSync(''));
      const again = restore(point);
      assert.equal(again.status, 1, again.stderr);
      assert.equal(
        termination(),
        `RestoreFailed: s3://bucket/shop/binlog/${log}.json does not describe that log: it names server '${UUID}' and file 'binlog.000001'`,
      );
    });

    it('checks the spec values again where they reach SQL', () => {
      put(`base/${OLD}/manifest.json`, manifest(OLD));
      const r = restore({ RESTORE_GTID_SET: INJECTED });
      assert.equal(r.status, 1, r.stderr);
      assert.match(termination(), /^RestoreFailed: spec\.restore\.gtidSet is not a GTID set .*CREATE DATABASE pwned/);
      assertNotInSql('pwned');
    });
  });

  describe('verify-backup.sh (the verification: SQL as root on a scratch mysqld, and arithmetic)', () => {
    const verify = () =>
      run('verify-backup.sh', { VERIFY_SCRATCH: box.path('verify'), VERIFY_SCRATCH_BYTES: '1000000000' });

    it('fails, naming the manifest, on a dataBytes that bash arithmetic would run as a command', () => {
      put(`base/${OLD}/dump.sql.gz`, gzipSync('-- the dump\n'));
      put(`base/${OLD}/manifest.json`, manifest(OLD, { dataBytes: `a[$(touch ${box.path('pwned')})]` }));
      const r = verify();
      assert.equal(r.status, 1, r.stderr);
      const report = /^BackupVerificationFailed: (\{.*\})$/.exec(termination());
      assert.ok(report, termination());
      const message = (JSON.parse(report[1] ?? '{}') as { message?: string }).message ?? '';
      assert.match(
        message,
        new RegExp(
          `^dataBytes in s3://bucket/shop/base/${OLD}/manifest\\.json is not a whole number: 'a\\[\\$\\(touch `,
        ),
      );
      assert.equal(existsSync(box.path('pwned')), false, 'the command in the value ran');
    });

    it('fails, naming state.json, on an archivedGtids that is not a GTID set', () => {
      put(`base/${OLD}/dump.sql.gz`, gzipSync('-- the dump\n'));
      put(`base/${OLD}/manifest.json`, manifest(OLD));
      put('binlog/state.json', JSON.stringify({ archivedGtids: INJECTED }));
      const r = verify();
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        termination(),
        /^BackupVerificationFailed: .*archivedGtids in s3:\/\/bucket\/shop\/binlog\/state\.json is not a GTID set/,
      );
      assertNotInSql('pwned');
    });
  });

  it('find-binlog.sh reads no object in binlog/ that is not named like an archived log', () => {
    const hostile = `${OLD}-x$(touch pwned).json`;
    put(`binlog/${hostile}`, '{}');
    put(`binlog/${hostile.replace(/\.json$/, '.gz')}`, gzipSync(''));
    const r = run('find-binlog.sh', { FIND_SCRATCH: box.path('find') });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(termination(), 'BinlogsSearched: 0 archived binary logs searched');
    assert.equal(box.calls().includes('rclone cat'), false, box.calls());
  });

  it('list-backups.sh prints each manifest on its own line: a newline in one cannot add a line of the listing', () => {
    put(`base/${OLD}/manifest.json`, `${manifest(OLD)}\nbinlog\t{"coveredUntil":"2099-01-01T00:00:00Z"}`);
    const r = run('list-backups.sh');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      r.stdout.split('\n').map((l) => l.split('\t')[0]),
      ['backup', ''],
    );
  });
});
