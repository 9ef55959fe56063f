// `npm run pack:constructs [-- DESTINATION]`: the constructs-only package `recon8s`, for cdk8s users.
//
// This repository's own package.json is the controller package (@recon8s/controller: the CLI and the
// controller, with the Kubernetes client and their other dependencies, and the constructs they were
// built with, so the two can never skew). The constructs package is assembled from the same build:
// the compiled constructs/ and their types, README.md, LICENSE, and a package.json whose only requirements are
// cdk8s, constructs and cdk8s-plus-28 as peerDependencies (caret ranges from the versions this
// repository tests with). Nothing of lib/ and no Kubernetes client is in it.
//
// Prints the tarball's path.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The construct library's peers: what `import * as recon8s from 'recon8s'` runs on. */
export const PEERS = ['cdk8s', 'cdk8s-plus-28', 'constructs'] as const;

interface Manifest {
  readonly version: string;
  readonly license: string;
  readonly engines: Record<string, string>;
  readonly dependencies?: Record<string, string>;
}

function run(command: string, args: readonly string[], cwd: string): string {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  return r.stdout;
}

/** The constructs package's manifest, from the repository's. */
export function constructsManifest(root: Manifest): Record<string, unknown> {
  const peerDependencies = Object.fromEntries(
    PEERS.map((p) => {
      const tested = root.dependencies?.[p];
      if (!tested || !/^\d+\.\d+\.\d+$/.test(tested))
        throw new Error(`package.json pins no exact version of ${p} (got ${tested ?? 'nothing'})`);
      return [p, `^${tested}`];
    }),
  );
  return {
    name: 'recon8s',
    version: root.version,
    description:
      'cdk8s constructs for App and MySQLCluster (recon8s.dev/v1alpha1): the same constructs the recon8s controller reconciles with',
    license: root.license,
    type: 'module',
    engines: root.engines,
    exports: {
      '.': { types: './constructs/index.d.ts', default: './constructs/index.js' },
      './package.json': './package.json',
    },
    types: './constructs/index.d.ts',
    files: ['constructs', 'README.md', 'LICENSE'],
    peerDependencies,
  };
}

function main(): void {
  const destination = resolve(process.argv[2] ?? join(ROOT, 'build', 'packages'));
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
  run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], ROOT);

  const stage = join(destination, 'recon8s');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  cpSync(join(ROOT, 'build', 'constructs'), join(stage, 'constructs'), {
    recursive: true,
    filter: (path) => !path.endsWith('.map') && !path.endsWith('.tsbuildinfo'),
  });
  for (const file of ['README.md', 'LICENSE']) cpSync(join(ROOT, file), join(stage, file));
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(constructsManifest(root), null, 2)}\n`);

  for (const old of readdirSync(destination).filter((f) => /^recon8s-.*\.tgz$/.test(f))) rmSync(join(destination, old));
  const out =
    run('npm', ['pack', '--pack-destination', destination, '--silent'], stage).trim().split('\n').at(-1) ?? '';
  process.stdout.write(`${join(destination, out)}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
