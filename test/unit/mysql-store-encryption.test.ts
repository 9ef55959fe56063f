// s3.encryption: the shipped scripts write every object through rclone's crypt remote and read every one
// back through it (scripts/store.sh). Here they run as their jobs run them against the fake mysql and
// rclone of support/mysql-scripts.ts, whose crypt remote encrypts for real (openssl, keyed with the
// password rclone is handed): what lands in the store is not the plaintext, the restore and the
// verification load what the backup wrote, and an object that does not open with the key fails the job
// naming that object. (rclone's own crypt, a real S3 and a real mysqld: not yet in a test.)
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { RESTORE_MEMBER_ENV, scriptSandbox } from './support/mysql-scripts.js';

const KEY = 'q3Jd9/Zk+0bXhY2mW1nQe7LrT5sVu8aPcFgHiKoMlNj0Ab1Cd2Ef3Gh4Ij5Kl6Mn';
const OTHER_KEY = 'Zz9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0F9e8D7c6B5a4';
const UUID = 'aaaaaaaa-0000-0000-0000-000000000000';
const NAME = '20200101T000000Z';
/** What backup.sh does with its dump and manifest (store.sh's writer), run as a script of the sandbox. */
const STORE_WRITE = `. "\${BASH_SOURCE[0]%/*}/common.sh"\n. "\${BASH_SOURCE[0]%/*}/store.sh"\nfor f in dump.sql.gz manifest.json; do store_rclone rcat "$(store_path "base/$BACKUP/$f")" <"$FROM/$f"; done\n`;

describe('MySQLCluster scripts with an encrypted object store (s3.encryption)', () => {
  let box: ScriptSandbox;
  const store = (...p: string[]) => box.path('store', 'bucket', 'shop', ...p);
  const termination = () => readFileSync(box.path('termination-log'), 'utf8');
  const run = (script: string, key: string, env: Record<string, string> = {}) => {
    writeFileSync(box.path('key'), `${key}\n`);
    return box.run(script, {
      CLUSTER_NAME: 'shop',
      STORE_BUCKET: 'bucket',
      STORE_PREFIX: 'shop',
      RCLONE_CONFIG_STORE_ACCESS_KEY_ID: 'k',
      RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY: 's',
      STORE_ENCRYPTION_KEY_FILE: box.path('key'),
      FAKE_STORE: box.path('store'),
      TERMINATION_LOG: box.path('termination-log'),
      MYSQL_ROOT_PASSWORD: 'root-pw',
      MYSQL_BACKUP_PASSWORD: 'backup-pw',
      ...env,
    });
  };
  /**
   * A backup as backup.sh writes it into the store: through store.sh's own rclone and path (backup.sh
   * itself needs a real server for its checksums' snapshot; it runs whole on a real one in the
   * integration test).
   */
  const backup = (name: string, key = KEY) => {
    const manifest = JSON.stringify({ name, gtidSet: `${UUID}:1-5`, endTime: '2020-01-01T00:01:00Z', dataBytes: 1000 });
    writeFileSync(box.path('dump.sql.gz'), gzipSync('-- the dump\nCREATE TABLE t (i INT);\n'));
    writeFileSync(box.path('manifest.json'), manifest);
    const r = run('store-write.sh', key, { BACKUP: name, FROM: box.path() });
    assert.equal(r.status, 0, r.stderr);
  };
  const restore = (key: string) => {
    mkdirSync(box.path('volume'), { recursive: true });
    return run('bootstrap.sh', key, {
      ...RESTORE_MEMBER_ENV,
      DATA_VOLUME: box.path('volume'),
    });
  };

  beforeEach(() => {
    box = scriptSandbox();
    mkdirSync(store(), { recursive: true });
    mkdirSync(box.path('scratch'));
    writeFileSync(join(box.scripts, 'store-write.sh'), STORE_WRITE);
  });
  afterEach(() => box.cleanup());

  it('the jobs write every object encrypted (a dump and manifest as backup.sh writes them, state.json by binlog.sh): none is readable in the store, and the key is on no command line', () => {
    backup(NAME);
    const r = run('binlog.sh', KEY, { PRIMARY_HOST: 'shop-primary', BINLOG_SCRATCH: box.path('scratch') });
    assert.equal(r.status, 0, r.stderr);
    assert.match(termination(), /^BinlogsArchived: /);
    for (const path of [`base/${NAME}/dump.sql.gz`, `base/${NAME}/manifest.json`, 'binlog/state.json']) {
      const bytes = readFileSync(store(path));
      assert.equal(bytes.subarray(0, 6).toString(), 'RCLONE', `${path}: crypt's header`);
      assert.throws(() => gunzipSync(bytes), `${path} is not a gzip stream`);
      for (const plain of ['the dump', `"name":"${NAME}"`, 'archivedGtids', 'coveredUntil'])
        assert.equal(bytes.includes(plain), false, `${plain} in ${path}`);
    }
    // The fakes log every argv (mysql's, rclone's): the key is in none, nor in the job's output.
    assert.equal(box.calls().includes(KEY), false, box.calls());
    assert.equal(r.stderr.includes(KEY), false, r.stderr);
  });

  it('the restore loads what the backup wrote, decrypted; with another key it fails naming the object and saying why', () => {
    backup(NAME);
    const name = NAME;
    const wrong = restore(OTHER_KEY);
    assert.equal(wrong.status, 1, wrong.stderr);
    assert.equal(
      termination(),
      `RestoreFailed: cannot read s3://bucket/shop/base/${name}/manifest.json: failed to authenticate decrypted block - bad password?: it was not written with this encryption key (another key, no encryption, or changed since)`,
    );
    assert.equal(box.calls().includes('-- the dump'), false, 'nothing was loaded');

    const right = restore(KEY);
    // The dump reached the new member's mysql as SQL: decrypted and gunzipped.
    assert.ok(box.calls().includes('STDIN\n-- the dump\n'), `${right.stderr}\n${box.calls()}`);
  });

  it('an object written without encryption is refused by name, not read as plaintext (state.json in a binary-log run)', () => {
    mkdirSync(store('binlog'), { recursive: true });
    writeFileSync(store('binlog', 'state.json'), JSON.stringify({ archivedGtids: `${UUID}:1-5` }));
    const r = run('binlog.sh', KEY, { PRIMARY_HOST: 'shop-primary', BINLOG_SCRATCH: box.path('scratch') });
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      termination(),
      /^BinlogArchiveFailed: .*cannot read s3:\/\/bucket\/shop\/binlog\/state\.json: not an encrypted file - bad magic string: it was not written with this encryption key/,
    );
    assert.equal(box.calls().includes('FLUSH BINARY LOGS'), false, 'nothing was done on the primary');
  });

  it('the verification fails naming the dump when the dump does not open with the key (swapped for one written without it)', () => {
    backup(NAME);
    const name = NAME;
    writeFileSync(store('base', name, 'dump.sql.gz'), gzipSync('-- another dump\n'.repeat(10)));
    const r = run('verify-backup.sh', KEY, { VERIFY_SCRATCH: box.path('verify'), VERIFY_SCRATCH_BYTES: '1000000000' });
    assert.equal(r.status, 1, r.stderr);
    const report = /^BackupVerificationFailed: (\{.*\})$/.exec(termination());
    assert.ok(report, termination());
    assert.match(
      (JSON.parse(report[1] ?? '{}') as { message?: string }).message ?? '',
      new RegExp(
        `^backup ${name} cannot be restored: cannot read s3://bucket/shop/base/${name}/dump\\.sql\\.gz: not an encrypted file - bad magic string`,
      ),
    );
    assert.equal(box.calls().includes('another dump'), false, 'nothing of it was loaded');
  });

  it('refuses a key that is not one line of 32 or more base64 or hex characters, without showing it', () => {
    const r = run('list-backups.sh', 'hunter2-but-longer with a space!!');
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      termination(),
      /is not one line of 32 to 1024 base64 or hex characters \(e\.g\. from openssl rand -base64 48\): it has 33 characters$/,
    );
    assert.equal(termination().includes('hunter2'), false);
    assert.equal(box.calls().includes('rclone lsf'), false, 'the store was not used');
  });
});
