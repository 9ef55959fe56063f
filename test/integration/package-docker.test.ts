/*
 * The Dockerfile's stages replayed without Docker (test/support/package-dockerfile.ts): its COPYs from
 * the context honour .dockerignore, its RUNs run for real (npm from the npm cache alone, the test's
 * Node 24 standing in for node:24-slim), each stage in its own directory under the temp dir, so the
 * runtime stage resolves modules from its own node_modules only. Then the runtime stage is checked and
 * its ENTRYPOINT run. No Docker, no cluster; about 25 s (an offline npm ci, a build, a prune).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../support/run.js';
import type { ReplayedStage } from '../support/package-dockerfile.js';
import { execForm, instructions, parseDockerfile, replayDockerfile } from '../support/package-dockerfile.js';
import { assertSucceeded, childEnv, exec, tempDir } from '../support/package-tools.js';

const APP_YAML = `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata: { name: web, namespace: shop }
spec: { image: nginx, replicas: 2 }
`;

/** Every path under dir, relative, directories included. */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory() ? [rel, ...walk(join(dir, e.name), rel)] : [rel];
  });
}

describe('Dockerfile, replayed without Docker', function () {
  this.timeout(300_000);
  let work = '';
  let image: ReplayedStage;
  let app = '';

  before(function () {
    this.timeout(300_000);
    work = tempDir('docker');
    const stages = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
    // npm_config_offline: npm ci takes everything from the npm cache, as the repository's own npm ci left it.
    let replayed: ReplayedStage[];
    try {
      replayed = replayDockerfile(stages, REPO_ROOT, work, {
        env: childEnv({ npm_config_offline: 'true' }),
        runTimeoutMs: 240_000,
      });
    } catch (e) {
      // In CI `npm ci` has just filled the cache: a miss there is a failure, never a skip.
      if (!/ENOTCACHED/.test(String(e)) || process.env.CI === 'true') throw e;
      console.log(
        '      (skipped: npm ci --offline failed, ENOTCACHED: the npm cache lacks a package of the lockfile)',
      );
      this.skip();
    }
    image = replayed.at(-1) as ReplayedStage;
    app = join(image.root, ...image.workdir.split('/'));
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The ENTRYPOINT, with the image's `node` being the Node 24 that runs the tests. */
  const entrypoint = (args: readonly string[], input?: string): ReturnType<typeof exec> => {
    const [node, ...rest] = execForm(instructions(image.stage, 'ENTRYPOINT').at(-1)?.args ?? '') ?? [];
    assert.equal(node, 'node');
    return exec(process.execPath, [...rest, ...args], {
      cwd: app,
      timeoutMs: 60_000,
      input,
      env: { PATH: childEnv().PATH, ...image.env },
    });
  };

  it('leaves in the runtime stage only package.json, build/ and node_modules', () => {
    assert.deepEqual(readdirSync(app).sort(), ['build', 'node_modules', 'package.json']);
    assert.ok(existsSync(join(app, 'build', 'lib', 'cli', 'main.js')));
    assert.deepEqual(
      walk(join(app, 'build')).filter((p) => /\.test\.|\.ts$/.test(p) && !p.endsWith('.d.ts')),
      [],
    );
  });

  it('has production dependencies only: no dev package, no second Node, no TypeScript', () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const dev = Object.entries(lock.packages)
      .filter(([path, e]) => path !== '' && e.dev)
      .map(([path]) => path);
    assert.ok(dev.includes('node_modules/node') && dev.includes('node_modules/typescript'));
    assert.deepEqual(
      dev.filter((path) => existsSync(join(app, path))),
      [],
    );
    assert.equal(existsSync(join(app, 'node_modules', '.bin', 'node')), false);
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const dep of Object.keys(pkg.dependencies))
      assert.ok(existsSync(join(app, 'node_modules', dep, 'package.json')), `${dep} is missing`);
  });

  it('is readable by the non-root USER, who owns nothing (files o+r, directories o+rx)', () => {
    const unreadable = walk(app).filter((p) => {
      const { mode } = statSync(join(app, p));
      return statSync(join(app, p)).isDirectory() ? (mode & 0o005) !== 0o005 : (mode & 0o004) === 0;
    });
    assert.deepEqual(unreadable.slice(0, 20), []);
  });

  it('its ENTRYPOINT renders an App with the modules of the image alone', () => {
    const r = entrypoint(['render', '-f', '-'], APP_YAML);
    assertSucceeded(r);
    const kinds = parseAllDocuments(r.stdout).map((d) => (d.toJS() as { kind: string }).kind);
    assert.ok(kinds.includes('Deployment'), r.stdout);
  });

  it('its CMD is a command of the ENTRYPOINT: controller --help loads the controller and exits 0', () => {
    const cmd = execForm(instructions(image.stage, 'CMD').at(-1)?.args ?? '') ?? [];
    const r = entrypoint([...cmd, '--help']);
    assertSucceeded(r);
    assert.match(r.stdout, /^Usage: recon8s controller/);
  });
});
