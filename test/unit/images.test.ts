/*
 * The pieces of the test-image builder that need no root and no network: cache keys, the cache's
 * build-once-under-a-lock contract (real flock, real files), OCI archives written and read back,
 * and the operator image's configuration as the Dockerfile declares it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedBuild, contentKey } from '../images/cache.js';
import {
  CONTAINERD_NAME_ANNOTATION,
  OCI_REF_ANNOTATION,
  indexDocument,
  inspectArchive,
  tagOf,
  writeArchive,
  writeLayer,
} from '../images/oci.js';
import { configFromStage } from '../images/operator.js';
import { parseDockerfile } from '../support/package-dockerfile.js';
import { REPO_ROOT } from '../support/run.js';

describe('test images: cache keys', () => {
  it('depend on every part, not on the order they are given in', () => {
    const key = contentKey({ a: 'x', b: Buffer.from('y') });
    assert.equal(contentKey({ b: 'y', a: 'x' }), key);
    assert.notEqual(contentKey({ a: 'x', b: 'z' }), key);
    assert.notEqual(contentKey({ a: 'x' }), key);
  });

  it('cannot be forged by moving bytes between a name and its value', () => {
    assert.notEqual(contentKey({ ab: 'c' }), contentKey({ a: 'bc' }));
    assert.notEqual(contentKey({ a: 'b', c: '' }), contentKey({ a: 'bc' }));
  });
});

describe('test images: the cache', function () {
  this.timeout(30_000);
  let root = '';
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'recon8s-images-cache-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const build = (key: string, calls: string[], opts: { fail?: boolean; delayMs?: number } = {}) =>
    cachedBuild({
      name: 'thing',
      key,
      root,
      log: () => undefined,
      build: async (dir) => {
        calls.push(key);
        if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
        if (opts.fail) throw new Error('recipe broken');
        writeFileSync(join(dir, 'out'), key);
      },
    });

  it('builds an entry once; the next call finds it without building', async () => {
    const calls: string[] = [];
    const first = await build('a'.repeat(64), calls);
    const second = await build('a'.repeat(64), calls);
    assert.deepEqual(calls, ['a'.repeat(64)]);
    assert.equal(second.dir, first.dir);
    assert.notEqual(first.builtInMs, undefined);
    assert.equal(second.builtInMs, undefined);
    assert.equal(readFileSync(join(first.dir, 'out'), 'utf8'), 'a'.repeat(64));
  });

  it('builds once when two callers ask at the same time: the second waits on the lock', async () => {
    const calls: string[] = [];
    const [x, y] = await Promise.all([
      build('b'.repeat(64), calls, { delayMs: 300 }),
      build('b'.repeat(64), calls, { delayMs: 300 }),
    ]);
    assert.deepEqual(calls, ['b'.repeat(64)]);
    assert.equal(x.dir, y.dir);
  });

  it('builds once when another process holds the lock, and only after it lets go', async () => {
    const calls: string[] = [];
    mkdirSync(root, { recursive: true });
    // A process that holds the lock for a while and meanwhile completes the entry, as another test run would.
    const entry = join(root, `thing-${'c'.repeat(24)}`);
    const other = spawn(
      'flock',
      [join(root, '.thing.lock'), 'sh', '-c', 'sleep 0.5; mkdir "$1"; echo theirs > "$1/out"', 'sh', entry],
      { stdio: 'ignore' },
    );
    const done = new Promise((resolve) => other.once('close', resolve));
    await new Promise((r) => setTimeout(r, 150));
    const got = await build('c'.repeat(64), calls);
    assert.deepEqual(calls, []);
    assert.equal(readFileSync(join(got.dir, 'out'), 'utf8'), 'theirs\n');
    await done;
  });

  it('leaves nothing behind when a build fails, and builds again next time', async () => {
    const calls: string[] = [];
    await assert.rejects(build('d'.repeat(64), calls, { fail: true }), /recipe broken/);
    assert.deepEqual(
      readdirSync(root).filter((e) => !e.startsWith('.')),
      [],
    );
    await build('d'.repeat(64), calls);
    assert.equal(calls.length, 2);
  });

  it('keeps the three most recently used entries of a name', async () => {
    const calls: string[] = [];
    for (const k of ['1', '2', '3', '4', '5']) await build(k.repeat(64), calls);
    assert.deepEqual(
      readdirSync(root)
        .filter((e) => !e.startsWith('.'))
        .sort(),
      ['3', '4', '5'].map((k) => `thing-${k.repeat(24)}`),
    );
  });
});

describe('test images: OCI archives', function () {
  this.timeout(30_000);
  let work = '';
  before(() => {
    work = mkdtempSync(join(tmpdir(), 'recon8s-images-oci-'));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('names each index entry with the full reference for containerd and the tag for OCI', () => {
    const manifest = {
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      digest: `sha256:${'0'.repeat(64)}`,
      size: 1,
    };
    const index = indexDocument([{ manifest, ref: 'recon8s.test/web:2' }]) as {
      manifests: { annotations: Record<string, string> }[];
    };
    assert.deepEqual(index.manifests[0]?.annotations, {
      [CONTAINERD_NAME_ANNOTATION]: 'recon8s.test/web:2',
      [OCI_REF_ANNOTATION]: '2',
    });
  });

  it('refuses references an import could not name', () => {
    assert.equal(tagOf('localhost:5000/a/b:v1.2'), 'v1.2');
    for (const bad of ['recon8s.test/web', 'Recon8s.test/web:1', 'localhost:5000/web', 'web:'])
      assert.throws(() => tagOf(bad), /expected a lower-case name and a tag/, bad);
  });

  it('writes an archive that reads back with every digest checked, two refs sharing one layer', async () => {
    const rootfs = join(work, 'rootfs');
    mkdirSync(join(rootfs, 'etc'), { recursive: true });
    writeFileSync(join(rootfs, 'etc', 'hello'), 'hello\n');
    const layer = join(work, 'layer.tar');
    await writeLayer(rootfs, layer, { keepOwners: false });
    const out = join(work, 'image.tar');
    const config = { user: '1:1', entrypoint: ['/bin/x'], env: ['A=1'], workingDir: '/', exposedPorts: ['80/tcp'] };
    await writeArchive({
      layer,
      out,
      images: [
        { refs: ['example.test/a:1', 'example.test/b:1'], config },
        { refs: ['example.test/a:2'], config: { ...config, env: ['A=2'] } },
      ],
    });
    assert.equal(existsSync(layer), false);
    const archive = await inspectArchive(out);
    assert.deepEqual([...archive.images.keys()], ['example.test/a:1', 'example.test/b:1', 'example.test/a:2']);
    const a1 = archive.images.get('example.test/a:1');
    assert.equal(a1?.manifest.digest, archive.images.get('example.test/b:1')?.manifest.digest);
    assert.notEqual(a1?.manifest.digest, archive.images.get('example.test/a:2')?.manifest.digest);
    assert.deepEqual(a1?.config.config, {
      User: '1:1',
      Env: ['A=1'],
      Entrypoint: ['/bin/x'],
      WorkingDir: '/',
      ExposedPorts: { '80/tcp': {} },
    });
    const listing = spawnSync('tar', ['-xOf', out, `blobs/sha256/${a1?.manifest.document.layers[0]?.digest.slice(7)}`]);
    assert.match(
      spawnSync('tar', ['-tv'], { input: listing.stdout }).stdout.toString(),
      /^-\S+ 0\/0 .* \.\/etc\/hello$/m,
    );
  });

  it('is refused when a blob does not match its digest', async () => {
    const copy = join(work, 'tampered');
    mkdirSync(copy);
    assert.equal(spawnSync('tar', ['-xf', join(work, 'image.tar'), '-C', copy]).status, 0);
    const index = JSON.parse(readFileSync(join(copy, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
    const manifest = JSON.parse(
      readFileSync(join(copy, 'blobs', 'sha256', index.manifests[0]?.digest.slice(7) ?? ''), 'utf8'),
    ) as { layers: { digest: string }[] };
    writeFileSync(join(copy, 'blobs', 'sha256', manifest.layers[0]?.digest.slice(7) ?? ''), 'not the layer');
    assert.equal(
      spawnSync('tar', ['-cf', join(work, 'tampered.tar'), '-C', copy, 'oci-layout', 'index.json', 'blobs']).status,
      0,
    );
    await assert.rejects(inspectArchive(join(work, 'tampered.tar')), /descriptor says/);
  });
});

describe('test images: the operator image configuration', () => {
  it("is what the Dockerfile's runtime stage declares", () => {
    const stage = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).at(-1);
    assert.ok(stage);
    const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const config = configFromStage(stage, '/app', {});
    assert.equal(config.user, '65532:65532');
    assert.deepEqual(config.entrypoint, ['node', '--max-semi-space-size=4', 'build/lib/cli/main.js']);
    assert.deepEqual(config.cmd, ['controller']);
    assert.deepEqual(config.exposedPorts, ['8080/tcp', '8081/tcp']);
    assert.equal(config.labels?.['org.opencontainers.image.version'], version);
  });

  it('refuses a Dockerfile whose USER a kubelet could not check against runAsNonRoot', () => {
    const [stage] = parseDockerfile('FROM x\nUSER nonroot\nENTRYPOINT ["node"]\n');
    assert.ok(stage);
    assert.throws(() => configFromStage(stage, '/', {}), /USER is "nonroot", expected a numeric uid/);
  });
});
