// Backups go to S3-compatible object storage through rclone, streamed (no local copy of the dump). Proven
// here on a real S3 server (versitygw, test/s3) with the very rclone the mysql test image carries,
// run from its root file system with chroot: configuration by environment only, a multipart upload
// from a pipe read back byte for byte, listing, and how a wrong key and a missing bucket fail.
// Loopback works inside the chroot (it shares the network namespace), so the server listens on 127.0.0.1.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { mysqlRootfs } from '../images/index.js';
import type { S3Server } from '../s3/index.js';
import { rcloneEnvironment, startS3Server } from '../s3/index.js';

interface RcloneResult {
  readonly status: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

interface JsonEntry {
  readonly Path: string;
  readonly Name: string;
  readonly Size: number;
  readonly IsDir: boolean;
}

const MiB = 1024 * 1024;
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

describe('S3 object store (versitygw) with the mysql image’s rclone', function () {
  this.timeout(60_000);
  let s3: S3Server;
  let rootfs: string;

  before(async function () {
    // A first run builds versitygw and the image's root file system (see test/README.md, What a run costs).
    this.timeout(40 * 60_000);
    if (process.getuid?.() !== 0) throw new Error('running the image’s rclone needs chroot: run the tests as root');
    rootfs = await mysqlRootfs();
    s3 = await startS3Server({ host: '127.0.0.1' });
    await s3.createBucket('backups');
  });

  after(async () => {
    await s3?.stop();
  });

  /** The image's rclone, configured by environment alone (credentials included: nothing secret on argv). */
  const rclone = (args: readonly string[], o: { input?: Buffer; settings?: Record<string, string> } = {}) => {
    const r = spawnSync('/usr/sbin/chroot', [rootfs, '/usr/bin/rclone', ...args], {
      input: o.input,
      env: { PATH: '/usr/bin:/bin', ...rcloneEnvironment(s3, 'store', o.settings) },
      maxBuffer: 64 * MiB,
      timeout: 45_000,
    });
    // rclone that fails early stops reading its input, as it would in a pipeline (where the writer gets SIGPIPE).
    if (r.error && (r.error as NodeJS.ErrnoException).code !== 'EPIPE') throw r.error;
    return { status: r.status, stdout: r.stdout, stderr: r.stderr.toString('utf8') } satisfies RcloneResult;
  };
  const ok = (r: RcloneResult, what: string): RcloneResult => {
    assert.equal(r.status, 0, `${what} failed (exit ${r.status}):\n${r.stderr}`);
    return r;
  };
  /** rclone's exit code for a failed command is 1 (3: directory not found), never a signal. */
  const failed = (r: RcloneResult, code: number, what: string): RcloneResult => {
    assert.equal(r.status, code, `${what}: expected exit ${code}, got ${r.status}:\n${r.stderr}`);
    return r;
  };
  const list = (path: string): JsonEntry[] =>
    JSON.parse(ok(rclone(['lsjson', '-R', path]), `lsjson ${path}`).stdout.toString('utf8')) as JsonEntry[];

  const dump = randomBytes(20 * MiB);

  it('streams ~20 MiB from a pipe as a multipart upload, and cat returns the same bytes', () => {
    // 5 MiB parts (S3's minimum): four of them, so the multipart path really runs.
    ok(
      rclone(['rcat', 'store:backups/prefix/x.gz'], { input: dump, settings: { CHUNK_SIZE: '5M' } }),
      'rcat of the dump',
    );
    const log = s3.tail(200);
    assert.match(
      log,
      /POST \| \/backups\/prefix\/x\.gz \| - \| uploads=/,
      `no CreateMultipartUpload in the server log:\n${log}`,
    );
    assert.match(
      log,
      /PUT \| \/backups\/prefix\/x\.gz \| - \| partNumber=4&/,
      `no fourth part in the server log:\n${log}`,
    );
    // The server wrote one plain file of the whole size (its posix backend: bucket/prefix/key).
    assert.equal(statSync(join(s3.dataDir, 'backups', 'prefix', 'x.gz')).size, dump.length);

    const back = ok(rclone(['cat', 'store:backups/prefix/x.gz']), 'cat of the dump').stdout;
    assert.equal(back.length, dump.length);
    assert.equal(sha256(back), sha256(dump));
  });

  it('lsjson lists the object with its size', () => {
    const objects = list('store:backups').filter((e) => !e.IsDir);
    assert.deepEqual(
      objects.map((e) => ({ path: e.Path, size: e.Size })),
      [{ path: 'prefix/x.gz', size: dump.length }],
    );
  });

  it('a wrong secret key fails with a non-zero exit naming the signature mismatch, and writes nothing', () => {
    const wrong = { SECRET_ACCESS_KEY: randomBytes(24).toString('base64url') };
    const listing = failed(rclone(['lsjson', 'store:backups'], { settings: wrong }), 1, 'lsjson with a wrong secret');
    assert.match(listing.stderr, /SignatureDoesNotMatch/);
    assert.match(listing.stderr, /StatusCode: 403/);

    const upload = failed(
      rclone(['rcat', 'store:backups/prefix/denied.gz'], { input: randomBytes(MiB), settings: wrong }),
      1,
      'rcat with a wrong secret',
    );
    assert.match(upload.stderr, /SignatureDoesNotMatch/);
    assert.ok(!existsSync(join(s3.dataDir, 'backups', 'prefix', 'denied.gz')), 'the denied upload was written');
  });

  it('a missing bucket fails clearly (NoSuchBucket), small or multipart, and is not created', () => {
    const small = failed(
      rclone(['rcat', 'store:nosuch/x.gz'], { input: Buffer.from('hello') }),
      1,
      'rcat into a missing bucket',
    );
    assert.match(small.stderr, /NoSuchBucket: The specified bucket does not exist/);

    const large = failed(
      rclone(['rcat', 'store:nosuch/x.gz'], { input: randomBytes(6 * MiB), settings: { CHUNK_SIZE: '5M' } }),
      1,
      'a multipart rcat into a missing bucket',
    );
    assert.match(large.stderr, /CreateMultipartUpload.*NoSuchBucket/);

    const listing = failed(rclone(['lsjson', 'store:nosuch']), 3, 'lsjson of a missing bucket');
    assert.match(listing.stderr, /directory not found/);
    assert.ok(!existsSync(join(s3.dataDir, 'nosuch')), 'the missing bucket was created');
  });

  it('without no_check_bucket, rclone would create a missing bucket itself (why rcloneEnvironment sets it)', () => {
    ok(
      rclone(['rcat', 'store:created-by-rclone/x'], {
        input: Buffer.from('hello'),
        settings: { NO_CHECK_BUCKET: 'false' },
      }),
      'rcat without no_check_bucket',
    );
    assert.ok(existsSync(join(s3.dataDir, 'created-by-rclone')), 'rclone did not create the bucket');
  });

  it('cat of a missing key exits 0 with no output: a restore must check the key first (lsjson --stat)', () => {
    // S3 has no directories: rclone takes a missing key for an empty "directory" and prints nothing.
    const missing = rclone(['cat', 'store:backups/prefix/missing.gz']);
    assert.equal(missing.status, 0, missing.stderr);
    assert.equal(missing.stdout.length, 0);

    const stat = (path: string): JsonEntry =>
      JSON.parse(ok(rclone(['lsjson', '--stat', path]), `lsjson --stat ${path}`).stdout.toString('utf8')) as JsonEntry;
    assert.equal(stat('store:backups/prefix/missing.gz').IsDir, true);
    assert.deepEqual((({ IsDir, Size }) => ({ IsDir, Size }))(stat('store:backups/prefix/x.gz')), {
      IsDir: false,
      Size: dump.length,
    });
  });
});
