import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseBenchArgs } from '../../bench/args.js';
import { buildWorkload, renderResource } from '../../bench/workload.js';
import { peerBinaryPath, peerSources, sourceHash } from '../../bench/peer-build.js';

describe('bench arguments', () => {
  it('runs recon8s alone, one round, when neither --peer nor --rounds is given', () => {
    const a = parseBenchArgs([]);
    assert.equal(a?.rounds, 1);
    assert.equal(a?.peerDir, undefined);
  });

  it('takes --rounds and resolves --peer to an absolute folder', () => {
    const a = parseBenchArgs(['--apps', '100', '--rounds', '3', '--peer', '../shared/peers/cr-app']);
    assert.equal(a?.apps, 100);
    assert.equal(a?.rounds, 3);
    assert.equal(a?.peerDir, resolve('../shared/peers/cr-app'));
  });

  it('measures no window at rest unless --idle-seconds asks for one, and rejects a negative one', () => {
    assert.equal(parseBenchArgs([])?.idleSeconds, 0);
    assert.equal(parseBenchArgs(['--apps', '0', '--mysql', '50', '--idle-seconds', '120'])?.idleSeconds, 120);
    assert.throws(() => parseBenchArgs(['--idle-seconds=-1']), /--idle-seconds must be a whole number >= 0, got "-1"/);
  });

  it('rejects --rounds that is not a whole number >= 1, naming the flag and the value', () => {
    assert.throws(() => parseBenchArgs(['--rounds', '0']), /--rounds must be a whole number >= 1, got "0"/);
    assert.throws(() => parseBenchArgs(['--rounds', '1.5']), /--rounds must be a whole number >= 1, got "1.5"/);
  });

  it('rejects an empty --peer and a --peer without a value', () => {
    assert.throws(() => parseBenchArgs(['--peer', '']), /--peer must name the peer's folder/);
    assert.throws(() => parseBenchArgs(['--peer']), /--peer/);
  });
});

describe('bench peer build cache', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'recon8s-peer-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('hashes go.mod, go.sum and .go sources; a changed source gives a new cache entry, a README does not', async () => {
    await writeFile(join(dir, 'go.mod'), 'module x\n');
    await writeFile(join(dir, 'main.go'), 'package main\n');
    await writeFile(join(dir, 'README.md'), 'docs\n');
    await mkdir(join(dir, 'pkg'));
    await writeFile(join(dir, 'pkg', 'a.go'), 'package pkg\n');
    await writeFile(join(dir, 'pkg', 'a_test.go'), 'package pkg\n');
    const files = await peerSources(dir);
    assert.deepEqual(files, [join(dir, 'go.mod'), join(dir, 'main.go'), join(dir, 'pkg', 'a.go')]);
    const h1 = await sourceHash(dir, files);
    await writeFile(join(dir, 'README.md'), 'other docs\n');
    assert.equal(await sourceHash(dir, await peerSources(dir)), h1);
    await writeFile(join(dir, 'pkg', 'a.go'), 'package pkg\n// changed\n');
    const h2 = await sourceHash(dir, await peerSources(dir));
    assert.notEqual(h2, h1);
    assert.notEqual(peerBinaryPath(h2, 'cr-app', '/c'), peerBinaryPath(h1, 'cr-app', '/c'));
    assert.equal(peerBinaryPath(h1, 'cr-app', '/c'), `/c/${h1}/cr-app`);
  });

  it('refuses a folder that is not a Go module, naming it', async () => {
    await writeFile(join(dir, 'main.go'), 'package main\n');
    await assert.rejects(peerSources(dir), new RegExp(`--peer ${dir}: expected a Go module folder with a go.mod`));
  });
});

describe('bench arguments with --peer', () => {
  it('defaults --mysql to 0 with --peer (and to 50 without)', () => {
    assert.equal(parseBenchArgs(['--peer', 'p'])?.mysql, 0);
    assert.equal(parseBenchArgs([])?.mysql, 50);
    assert.equal(parseBenchArgs(['--peer', 'p', '--mysql', '0'])?.mysql, 0);
  });

  it('rejects MySQLClusters with --peer, naming the flag, the value and what is expected', () => {
    assert.throws(
      () => parseBenchArgs(['--peer', 'p', '--mysql', '5']),
      /--mysql 5 cannot be used with --peer: the peer reconciles Apps only; expected --mysql 0/,
    );
  });

  it("compares the peer's job by default with --peer (realistic without), and takes --workload to say otherwise", () => {
    assert.equal(parseBenchArgs(['--peer', 'p'])?.workload, 'peer-job');
    assert.equal(parseBenchArgs([])?.workload, 'realistic');
    assert.equal(parseBenchArgs(['--peer', 'p', '--workload', 'realistic'])?.workload, 'realistic');
    assert.throws(() => parseBenchArgs(['--workload', 'huge']), /--workload must be realistic or peer-job, got "huge"/);
  });

  it("peer-job renders exactly the peer's children, a Deployment and a Service per App", () => {
    const kinds = (w: 'realistic' | 'peer-job') =>
      buildWorkload(20, 0, w)
        .flatMap((r) => renderResource(r, 'ns'))
        .map((o) => o.kind)
        .reduce<Record<string, number>>((acc, k) => ({ ...acc, [k]: (acc[k] ?? 0) + 1 }), {});
    assert.deepEqual(kinds('peer-job'), { Deployment: 20, Service: 20 });
    assert.deepEqual(kinds('realistic'), {
      Deployment: 20,
      Service: 20,
      PodDisruptionBudget: 20,
      HorizontalPodAutoscaler: 2,
      NetworkPolicy: 20,
    });
  });
});
