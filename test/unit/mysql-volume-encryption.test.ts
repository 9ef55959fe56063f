// spec.backup.encryption: a backup to a volume (persistentVolumeClaimName) encrypted in the job with the
// key of a Secret, through rclone's crypt remote over the volume's directory (scripts/encryption.sh), as
// s3.encryption encrypts what goes to a store. The construct: what the backup job's pod gets (rclone, the
// key as a file, never its value); the validation: the combination with s3 refused, naming the field. The
// script: backup.sh against the fake mysql and rclone of support/mysql-scripts.ts, whose crypt encrypts
// for real (openssl, keyed with the password rclone is handed). On real mysqld and real rclone:
// test/integration/mysql-real.test.ts ("encrypts a backup to a volume…").
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { V1Container, V1CronJob } from '@kubernetes/client-node';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { scriptSandbox } from './support/mysql-scripts.js';
import { assertMySQLProblem, invalidMySQL, synthMySQL } from './support/mysql-synth.js';

const KEY = 'q3Jd9/Zk+0bXhY2mW1nQe7LrT5sVu8aPcFgHiKoMlNj0Ab1Cd2Ef3Gh4Ij5Kl6Mn';
const OTHER_KEY = 'Zz9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0F9e8D7c6B5a4';
const BACKUP_PASSWORD = `b4ckup'"\\;--`;
const ENCRYPTED = {
  schedule: '@daily',
  persistentVolumeClaimName: 'dumps',
  encryption: { secretRef: { name: 'backup-key' } },
};

describe('MySQLCluster backups to a volume, encrypted (spec.backup.encryption)', () => {
  describe('the backup job', () => {
    const pod = (backup: unknown) =>
      (
        synthMySQL({ backup } as Parameters<typeof synthMySQL>[0]).objects.find(
          (o) => o.kind === 'CronJob' && o.metadata?.name === 'shop-backup',
        ) as V1CronJob | undefined
      )?.spec?.jobTemplate.spec?.template.spec;
    const env = (c: V1Container | undefined, name: string) => c?.env?.find((e) => e.name === name);

    it('gets rclone from encryption.rcloneImage and the key as a file of its Secret (0440, read-only), never by value or in the environment', () => {
      const spec = pod(ENCRYPTED);
      const rclone = spec?.initContainers?.find((c) => c.name === 'rclone');
      assert.equal(rclone?.image, 'docker.io/rclone/rclone:1.75.2');
      assert.equal(
        pod({ ...ENCRYPTED, encryption: { ...ENCRYPTED.encryption, rcloneImage: 'example.com/rclone:1' } })
          ?.initContainers?.[0]?.image,
        'example.com/rclone:1',
      );
      assert.deepEqual(spec?.volumes?.find((v) => v.name === 'backup-key')?.secret, {
        secretName: 'backup-key',
        items: [{ key: 'encryption-key', path: 'key' }],
        defaultMode: 0o440,
      });
      const backup = spec?.containers.find((c) => c.name === 'backup');
      assert.equal(env(backup, 'BACKUP_ENCRYPTION_KEY_FILE')?.value, '/etc/recon8s/backup-key/key');
      assert.deepEqual(
        backup?.volumeMounts?.find((m) => m.name === 'backup-key'),
        { name: 'backup-key', mountPath: '/etc/recon8s/backup-key', readOnly: true },
      );
      assert.ok(backup?.volumeMounts?.some((m) => m.name === 'tools' && m.mountPath === '/opt/recon8s-tools'));
      assert.ok(backup?.volumeMounts?.some((m) => m.name === 'backup' && m.mountPath === '/backup'));
      assert.equal(
        (backup?.env ?? []).some((e) => e.valueFrom?.secretKeyRef?.name === 'backup-key'),
        false,
        'the key is not an environment variable',
      );
      // Not encrypted: no rclone, no key.
      const plain = pod({ schedule: '@daily', persistentVolumeClaimName: 'dumps' });
      assert.equal(plain?.initContainers, undefined);
      assert.deepEqual(
        plain?.volumes?.map((v) => v.name),
        ['scripts', 'backup', 'tmp', 'tls'],
      );
      assert.equal(env(plain?.containers[0], 'BACKUP_ENCRYPTION_KEY_FILE'), undefined);
    });

    it('is refused with s3 (whose encryption is s3.encryption), and with a key reference that is no Secret name, naming the field', () => {
      const store = { bucket: 'shop-backups', prefix: 'prod/shop', credentialsSecretName: 'store-keys' };
      assertMySQLProblem(
        invalidMySQL({ backup: { schedule: '@daily', s3: store, encryption: ENCRYPTED.encryption } }).error,
        {
          field: 'spec.backup.encryption',
          value: {
            secretRef: { name: 'backup-key', key: 'encryption-key' },
            rcloneImage: 'docker.io/rclone/rclone:1.75.2',
          },
          expected: /encryption is for persistentVolumeClaimName: an object store is encrypted by s3\.encryption/,
        },
      );
      assertMySQLProblem(
        invalidMySQL({ backup: { ...ENCRYPTED, encryption: { secretRef: { name: 'Backup Key' } } } }).error,
        { field: 'spec.backup.encryption.secretRef.name', value: 'Backup Key', expected: /a DNS subdomain name/ },
      );
    });
  });

  describe('backup.sh', () => {
    let box: ScriptSandbox;
    const dir = () => box.path('backup');
    const termination = () => readFileSync(box.path('termination-log'), 'utf8');
    const backup = (key: string | undefined, env: Record<string, string> = {}) => {
      if (key !== undefined) writeFileSync(box.path('key'), `${key}\n`);
      return box.run('backup.sh', {
        CLUSTER_NAME: 'shop',
        BACKUP_HOST: 'shop-replicas',
        BACKUP_RETAIN: '3',
        BACKUP_DIR: dir(),
        MYSQL_BACKUP_PASSWORD: BACKUP_PASSWORD,
        TERMINATION_LOG: box.path('termination-log'),
        BACKUP_ENCRYPTION_KEY_FILE: box.path('key'),
        ...env,
      });
    };
    /** What the file holds, opened with `key` as any rclone's crypt remote over the volume opens it. */
    const decrypt = (file: string, key: string) =>
      spawnSync(join(box.dir, 'bin', 'rclone'), ['cat', `secure:${file}`], {
        env: {
          ...process.env,
          FAKE_DIR: box.fakeDir,
          RCLONE_CONFIG_SECURE_REMOTE: dir(),
          RCLONE_CONFIG_SECURE_PASSWORD: `obscured:${key}`,
        },
      });
    const fresh = () => readdirSync(dir()).filter((f) => /^shop-\d{8}T\d{6}Z\.sql\.gz\.crypt$/.test(f));

    beforeEach(() => {
      box = scriptSandbox();
      mkdirSync(dir());
    });
    afterEach(() => box.cleanup());

    it('writes <name>-<time>.sql.gz.crypt, which holds nothing readable without the key and opens with it to the gzipped dump; the key is on no command line', () => {
      const r = backup(KEY);
      assert.equal(r.status, 0, r.stderr);
      const [file, ...more] = fresh();
      assert.ok(file, readdirSync(dir()).join(' '));
      assert.deepEqual(more, []);
      assert.deepEqual(readdirSync(dir()), [file], 'no partial file, no plaintext beside it');
      const bytes = readFileSync(join(dir(), file));
      assert.equal(bytes.subarray(0, 8).toString('latin1'), 'RCLONE\0\0', "crypt's header");
      assert.throws(() => gunzipSync(bytes), 'not a gzip stream');
      assert.equal(bytes.includes('the dump'), false);
      const opened = decrypt(file, KEY);
      assert.equal(opened.status, 0, opened.stderr.toString());
      assert.match(gunzipSync(opened.stdout).toString(), /^-- the dump\n/);
      const other = decrypt(file, OTHER_KEY);
      assert.notEqual(other.status, 0);
      assert.match(other.stderr.toString(), /bad password/);
      // The report names the encrypted file; nothing the fakes were run with holds the key.
      assert.match(termination(), new RegExp(`^BackupCompleted: .*"location":"${join(dir(), file)}"`));
      assert.equal(box.calls().includes(KEY), false, box.calls());
    });

    it('keeps the newest BACKUP_RETAIN backups of this cluster, encrypted or written before encryption, and never another cluster\u2019s', () => {
      const older = [
        'shop-20200101T000000Z.sql.gz',
        'shop-20200102T000000Z.sql.gz.crypt',
        'shop-20200103T000000Z.sql.gz',
        'shop-20200104T000000Z.sql.gz.crypt',
      ];
      const foreign = ['shop-eu-20200101T000000Z.sql.gz.crypt', 'shop-notes.txt'];
      for (const f of [...older, ...foreign]) writeFileSync(join(dir(), f), 'x');
      const r = backup(KEY);
      assert.equal(r.status, 0, r.stderr);
      const made = fresh().filter((f) => !older.includes(f));
      assert.equal(made.length, 1);
      assert.deepEqual(readdirSync(dir()).sort(), [...foreign, ...older.slice(-2), ...made].sort());
    });

    it('fails before it dumps anything on a key it cannot read or that is not one, saying which and its length (never the key), as it fails on a broken store', () => {
      const missing = backup(undefined, { BACKUP_ENCRYPTION_KEY_FILE: box.path('no-such-key') });
      assert.equal(missing.status, 1);
      assert.match(
        termination(),
        /^recon8s gave up: cannot read the backup volume's encryption key \(.*no-such-key, from the Secret that backup\.encryption\.secretRef names\)/,
      );
      rmSync(box.path('termination-log'));
      const short = backup('too short');
      assert.equal(short.status, 1);
      assert.match(termination(), /encryption key .* is not .*: it has 9 characters/);
      assert.equal(termination().includes('too short'), false);
      assert.deepEqual(readdirSync(dir()), []);
      assert.equal(existsSync(join(box.fakeDir, 'calls')) && /mysqldump/.test(box.calls()), false, 'nothing dumped');
    });
  });
});
