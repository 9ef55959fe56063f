// `npm run pack:constructs [-- DESTINATION]`: the constructs-only package `recon8s`, for cdk8s users.
//
// This repository's own package.json is the controller package (@recon8s/controller: the CLI and the
// controller, with the Kubernetes client and their other dependencies, and the constructs they were
// built with, so the two can never skew). The constructs package is assembled from the same build:
// the compiled constructs/ and their types, a README for construct users (docs/constructs.md), LICENSE, and a
// package.json whose only requirements are
// cdk8s, constructs and cdk8s-plus-28 as peerDependencies (caret ranges from the versions this
// repository tests with). Nothing of lib/ and no Kubernetes client is in it.
//
// The constructs ship twice: as ES modules (constructs/, what the controller and ESM projects load) and
// compiled to CommonJS (constructs-cjs/, tsconfig.constructs-cjs.json), which `require('recon8s')`
// gets. Node >= 22.12 could require() the ES modules, but tools with a module loader of their own
// cannot: jest, which `cdk8s init typescript-app` sets up, fails on the first `export`.
//
// Prints the tarball's path.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The construct library's peers: what `import * as recon8s from 'recon8s'` runs on. */
export const PEERS = ['cdk8s', 'cdk8s-plus-28', 'constructs'] as const;
/** The CommonJS build's directory, in build/ and in the package. */
const CJS_DIR = 'constructs-cjs';

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
    // Each condition has its own declarations, in a directory of its module format, so that TypeScript
    // under node16/nodenext types `import` as ESM and `require` as CommonJS. The dual-package hazard (an
    // ESM and a CommonJS copy of the classes in one process) is harmless here: the constructs keep no
    // module state, their one marker on constructs is a registered Symbol.for() that both copies share,
    // and cdk8s and constructs, whose classes they extend and test with instanceof, are CommonJS-only, so
    // one copy of each. The one difference a user could meet: an InvalidSpecError thrown by one copy is
    // no instanceof the other's (its name is 'InvalidSpecError' in both).
    exports: {
      '.': {
        import: { types: './constructs/index.d.ts', default: './constructs/index.js' },
        require: { types: `./${CJS_DIR}/index.d.ts`, default: `./${CJS_DIR}/index.js` },
      },
      './package.json': './package.json',
    },
    // For resolvers that ignore `exports` (TypeScript's moduleResolution node10, what `module: commonjs`
    // implies up to TypeScript 5.x, and old bundlers): they only ever require().
    main: `./${CJS_DIR}/index.js`,
    types: `./${CJS_DIR}/index.d.ts`,
    files: ['constructs', CJS_DIR, 'README.md', 'LICENSE'],
    peerDependencies,
  };
}

function main(): void {
  const destination = resolve(process.argv[2] ?? join(ROOT, 'build', 'packages'));
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  run(process.execPath, [tsc, '-p', 'tsconfig.build.json'], ROOT);
  const cjsBuild = join(ROOT, 'build', CJS_DIR);
  // Emptied first: tsc only ever adds, and a module since removed from constructs/ must not ship.
  rmSync(cjsBuild, { recursive: true, force: true });
  run(process.execPath, [tsc, '-p', 'tsconfig.constructs-cjs.json'], ROOT);
  // Without it, the .js files would be ES modules to Node and their .d.ts ESM to TypeScript: the
  // nearest package.json (this repository's in build/, the package's once installed) says "module".
  writeFileSync(join(cjsBuild, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);

  const stage = join(destination, 'recon8s');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  for (const dir of ['constructs', CJS_DIR])
    cpSync(join(ROOT, 'build', dir), join(stage, dir), {
      recursive: true,
      filter: (path) => !path.endsWith('.map') && !path.endsWith('.tsbuildinfo'),
    });
  cpSync(join(ROOT, 'LICENSE'), join(stage, 'LICENSE'));
  writeFileSync(join(stage, 'README.md'), packageReadme(readFileSync(join(ROOT, 'docs', 'constructs.md'), 'utf8')));
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(constructsManifest(root), null, 2)}\n`);

  for (const old of readdirSync(destination).filter((f) => /^recon8s-.*\.tgz$/.test(f))) rmSync(join(destination, old));
  const out =
    run('npm', ['pack', '--pack-destination', destination, '--silent'], stage).trim().split('\n').at(-1) ?? '';
  process.stdout.write(`${join(destination, out)}\n`);
}

/** Where the repository's files are read on the web: the package's README links there. */
export const REPOSITORY_BLOB = 'https://github.com/recon8s/recon8s/blob/main';

/**
 * The package's README: the page for construct users (docs/constructs.md), not the repository's README
 * (its quickstart, tests and benchmarks are for people in a checkout). Its relative links point into
 * docs/, which the package does not ship, so they become links to the repository.
 */
export function packageReadme(constructsPage: string): string {
  return constructsPage.replace(/\]\((?!https?:|#)([^)]+)\)/g, (_, target: string) => {
    const path = target.startsWith('../') ? target.slice(3) : `docs/${target}`;
    return `](${REPOSITORY_BLOB}/${path})`;
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
