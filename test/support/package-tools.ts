/*
 * Helpers of the packaging tests: child processes with bounded time, run under the Node that runs the
 * tests (Node 24, the `node` devDependency), `npm pack` of a clean copy of the repository, and a scratch
 * project that installs the tarball from the npm cache alone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { REPO_ROOT } from './run.js';

/** The directory of the Node running the tests; children find `node` there first (npm, tsc and bins use `#!/usr/bin/env node`). */
export const NODE_BIN_DIR = dirname(process.execPath);

/**
 * The environment of child processes. PATH starts with the test's Node and has no directory of this
 * repository (npm test and npx put its node_modules/.bin there: it must not stand in for a missing
 * tool). Left out: the `npm_*` variables of an enclosing `npm test`, which describe this repository
 * (npm_config_local_prefix would make an npm in a scratch directory work on this repository), except
 * the cache and registry in effect; NODE_OPTIONS and NODE_PATH (a loader such as tsx cannot be found
 * from a scratch directory, and modules must resolve from the scratch project alone).
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if ((!/^npm_/i.test(k) || /^npm_config_(cache|registry)$/i.test(k)) && k !== 'NODE_OPTIONS' && k !== 'NODE_PATH')
      env[k] = v;
  }
  const path = (process.env.PATH ?? '').split(delimiter).filter((p) => p !== '' && !p.startsWith(REPO_ROOT));
  return { ...env, PATH: [NODE_BIN_DIR, ...path].join(delimiter), npm_config_update_notifier: 'false', ...extra };
}

export interface ExecResult {
  readonly command: string;
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly error: Error | undefined;
}

/** Runs a command to completion, killed after `timeoutMs`. */
export function exec(
  command: string,
  args: readonly string[],
  opts: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv; input?: string },
): ExecResult {
  const r = spawnSync(command, args, {
    cwd: opts.cwd,
    env: opts.env ?? childEnv(),
    input: opts.input,
    encoding: 'utf8',
    timeout: opts.timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 << 20,
  });
  return {
    command: [command, ...args].join(' '),
    status: r.status,
    signal: r.signal,
    stdout: r.stdout ?? '',
    stderr: r.stderr ?? '',
    error: r.error,
  };
}

/** A readable account of a finished command, for assertion messages. */
export function explain(r: ExecResult): string {
  const how = r.error ? r.error.message : r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
  return `${r.command}: ${how}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;
}

export function assertSucceeded(r: ExecResult): void {
  assert.equal(r.status, 0, explain(r));
}

export function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `recon8s-${name}-`));
}

/** Top-level entries never copied for packing: installed, generated or local state. */
const NOT_SOURCES = new Set(['.git', 'node_modules', 'build', 'dist', 'coverage', '.cache']);

/**
 * `npm pack` as a fresh clone would run it (prepack builds into an empty build/): the working tree is
 * copied to `workDir/src` without build output or installed modules, node_modules is linked back, and
 * the tarball is written to `workDir/pack`. Packing a copy also leaves this repository's build/ alone
 * while others work in it.
 */
export function packRepository(workDir: string): string {
  const src = copyRepository(workDir);
  const out = join(workDir, 'pack');
  mkdirSync(out, { recursive: true });
  assertSucceeded(exec('npm', ['pack', '--pack-destination', out], { cwd: src, timeoutMs: 120_000 }));
  const tarballs = readdirSync(out).filter((f) => f.endsWith('.tgz'));
  assert.equal(tarballs.length, 1, `npm pack wrote ${tarballs.join(', ') || 'nothing'}`);
  return join(out, tarballs[0] ?? '');
}

/** `npm run pack:constructs` in a clean copy of the repository: the constructs-only package `recon8s`. */
export function packConstructs(workDir: string): string {
  const src = copyRepository(workDir);
  const out = join(workDir, 'pack-constructs');
  const r = exec(process.execPath, ['--import', 'tsx', join(src, 'scripts', 'pack-constructs.ts'), out], {
    cwd: src,
    timeoutMs: 180_000,
  });
  assertSucceeded(r);
  const tarballs = readdirSync(out).filter((f) => f.endsWith('.tgz'));
  assert.equal(tarballs.length, 1, `pack:constructs wrote ${tarballs.join(', ') || 'nothing'}`);
  return join(out, tarballs[0] ?? '');
}

/** The working tree copied to `workDir/src` without build output or installed modules; node_modules linked back. */
function copyRepository(workDir: string): string {
  const src = join(workDir, 'src');
  if (readdirSync(workDir).includes('src')) return src;
  cpSync(REPO_ROOT, src, {
    recursive: true,
    filter: (path) => {
      const rel = path.slice(REPO_ROOT.length).replace(/^[\\/]+/, '');
      return !NOT_SOURCES.has(rel.split(/[\\/]/)[0] ?? '') && !rel.endsWith('.tgz');
    },
  });
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(src, 'node_modules'), 'dir');
  return src;
}

/** The paths in a tarball (`tar -tzf`), without npm's leading `package/`. */
export function tarballEntries(tarball: string): string[] {
  const r = exec('tar', ['-tzf', tarball], { cwd: dirname(tarball), timeoutMs: 30_000 });
  assertSucceeded(r);
  return r.stdout
    .split('\n')
    .filter((l) => l !== '' && !l.endsWith('/'))
    .map((l) => l.replace(/^package\//, ''))
    .sort();
}

/** How the package got into the scratch project. */
export type InstallMethod = 'npm install' | 'extracted, dependencies linked';

/**
 * Creates an ES module project in `dir` and installs the tarball with `npm install --prefer-offline`:
 * its dependencies and peers come from the npm cache, which `npm ci` of this repository filled, and
 * their registry metadata (the version lists a range is resolved against, which `npm ci` never
 * fetches, so a fresh machine's cache lacks them) from the registry. When the registry cannot be
 * reached either, the tarball is extracted into node_modules/<its name> and this repository's copies
 * of its dependencies and peers are linked beside it, as npm would lay them out.
 */
export function installTarball(dir: string, tarball: string): InstallMethod {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'recon8s-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  const r = exec('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: dir,
    timeoutMs: 120_000,
  });
  if (r.status === 0) return 'npm install';
  assert.match(r.stderr, /ENOTCACHED|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT/, explain(r));

  const manifest = JSON.parse(
    exec('tar', ['-xzf', tarball, '-O', 'package/package.json'], { cwd: dir, timeoutMs: 30_000 }).stdout,
  ) as {
    name: string;
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    bin?: Record<string, string>;
  };
  const pkgDir = join(dir, 'node_modules', manifest.name);
  mkdirSync(pkgDir, { recursive: true });
  assertSucceeded(
    exec('tar', ['-xzf', tarball, '-C', pkgDir, '--strip-components=1'], { cwd: dir, timeoutMs: 30_000 }),
  );
  for (const dep of Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })) {
    mkdirSync(dirname(join(dir, 'node_modules', dep)), { recursive: true });
    symlinkSync(join(REPO_ROOT, 'node_modules', dep), join(dir, 'node_modules', dep), 'dir');
  }
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  for (const [name, target] of Object.entries(manifest.bin ?? {})) {
    chmodSync(join(pkgDir, target), 0o755);
    symlinkSync(join('..', manifest.name, target), join(dir, 'node_modules', '.bin', name));
  }
  return 'extracted, dependencies linked';
}

/**
 * Creates an ES module project in `dir` with the tarball and exactly these versions of other packages
 * (e.g. the lowest its peer ranges allow), from the npm cache where it has them and the registry
 * otherwise: npm refuses an exact version it has not seen the registry's list of versions for when offline.
 */
export function installTarballWith(dir: string, tarball: string, packages: readonly string[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'recon8s-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  assertSucceeded(
    exec('npm', ['install', tarball, ...packages, '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: dir,
      timeoutMs: 180_000,
    }),
  );
}

/** A strict, nodenext tsconfig; `types: []` so that nothing leans on @types/node being there. */
export function writeTsconfig(
  path: string,
  files: readonly string[],
  compilerOptions: Record<string, unknown> = {},
): void {
  writeFileSync(
    path,
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'es2023',
          lib: ['es2023'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          skipLibCheck: false,
          types: [],
          outDir: 'out',
          rootDir: '.',
          ...compilerOptions,
        },
        files,
      },
      null,
      2,
    )}\n`,
  );
}

/** This repository's TypeScript compiler on a project file. */
export function tsc(project: string, cwd: string, extraArgs: readonly string[] = []): ExecResult {
  return exec(join(REPO_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', project, '--pretty', 'false', ...extraArgs], {
    cwd,
    timeoutMs: 90_000,
  });
}

/** The `error TS...` lines of a tsc run. */
export function tscErrors(r: ExecResult): string[] {
  return r.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
}
