/*
 * `npm run pack:constructs` gives the package cdk8s users install, `recon8s`: the tarball holds the
 * compiled constructs with their types, twice (ES modules for `import`, CommonJS for `require`),
 * README.md and package.json, and nothing else; its only requirements are its peers (cdk8s,
 * constructs, cdk8s-plus-28). A scratch ES module project installs it offline with no Kubernetes
 * client in node_modules, type-checks against it (and is refused a wrong prop), synthesizes with it
 * under Node 24, and gets the CommonJS build from require() in a Node that cannot require() ES modules;
 * another one does the same on the lowest peer versions its ranges allow. The project
 * `cdk8s init typescript-app` makes (CommonJS, jest) is package-cdk8s-template.test.ts; the controller
 * package, package-controller.test.ts. No cluster needed; about 40 s (a build, two offline npm
 * installs, two tsc runs).
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../support/run.js';
import type { InstallMethod } from '../support/package-tools.js';
import {
  assertSucceeded,
  exec,
  explain,
  installTarball,
  installTarballWith,
  packConstructs,
  tarballEntries,
  tempDir,
  tsc,
  tscErrors,
  writeTsconfig,
} from '../support/package-tools.js';

interface K8sObject {
  kind: string;
  metadata: { name: string };
  spec?: Record<string, unknown>;
}
interface Deployment {
  spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
}

const kindNames = (objects: readonly K8sObject[]): string[] =>
  objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
const parseYaml = (text: string): K8sObject[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject)
    .filter((o) => o != null);

// A consumer as the README shows it: `import * as recon8s from 'recon8s'`, next to cdk8s.
const MAIN_TS = `import { App as Cdk8sApp, Chart } from 'cdk8s';
import * as recon8s from 'recon8s';

export function synthesize(): string {
  const app = new Cdk8sApp();
  const chart = new Chart(app, 'shop', { namespace: 'shop', disableResourceNameHashes: true });
  new recon8s.App(chart, 'web', { image: 'nginx', replicas: 2 });
  const db = new recon8s.MySQLCluster(chart, 'db', {});
  const secret: string = db.credentialsSecretName;
  void secret;
  return app.synthYaml();
}
`;

// The same from a CommonJS module: compiled to require('recon8s'), which the `require` condition serves.
const CJS_CTS = `import { App as Cdk8sApp, Chart } from 'cdk8s';
import * as recon8s from 'recon8s';

export function synthesize(): string {
  const app = new Cdk8sApp();
  new recon8s.App(new Chart(app, 'cjs', { disableResourceNameHashes: true }), 'web', { image: 'nginx' });
  return app.synthYaml();
}
`;

// Line 5 is the only error.
const BAD_TS = `import { App as Cdk8sApp, Chart } from 'cdk8s';
import * as recon8s from 'recon8s';

const chart = new Chart(new Cdk8sApp(), 'shop');
new recon8s.App(chart, 'web', { image: 'nginx', replicas: 'two' });
`;

describe('the constructs package `recon8s` (npm run pack:constructs), as a cdk8s project installs it', function () {
  this.timeout(240_000);
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let work = '';
  let tarball = '';
  let consumer = '';
  let installedBy: InstallMethod;

  before(function () {
    this.timeout(240_000);
    work = tempDir('package');
    tarball = packConstructs(work);
    consumer = join(work, 'consumer');
    installedBy = installTarball(consumer, tarball);
    if (installedBy !== 'npm install')
      console.log(`      (npm install could reach neither the npm cache nor the registry; recon8s was ${installedBy})`);
    writeFileSync(join(consumer, 'main.ts'), MAIN_TS);
    writeFileSync(join(consumer, 'cjs.cts'), CJS_CTS);
    writeFileSync(join(consumer, 'bad.ts'), BAD_TS);
    writeTsconfig(join(consumer, 'tsconfig.json'), ['main.ts', 'cjs.cts']);
    writeTsconfig(join(consumer, 'tsconfig.bad.json'), ['bad.ts'], { noEmit: true });
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it(`is recon8s-${version}.tgz with the compiled constructs and their types, as ES modules and as CommonJS, README.md and package.json`, () => {
    assert.equal(tarball.endsWith(`recon8s-${version}.tgz`), true, tarball);
    const entries = tarballEntries(tarball);
    for (const required of [
      'package.json',
      'README.md',
      'constructs/index.js',
      'constructs/index.d.ts',
      'constructs/operator/operator-chart.js',
      'constructs-cjs/index.js',
      'constructs-cjs/index.d.ts',
      'constructs-cjs/package.json',
    ])
      assert.ok(entries.includes(required), `${required} is missing from the tarball`);
    // Every module that is shipped comes with its declarations.
    for (const js of entries.filter((e) => e.endsWith('.js')))
      assert.ok(entries.includes(js.replace(/\.js$/, '.d.ts')), `${js} has no .d.ts`);
    // Both builds have the same modules.
    const modules = (dir: string): string[] =>
      entries.filter((e) => e.startsWith(`${dir}/`) && e !== `${dir}/package.json`).map((e) => e.slice(dir.length));
    assert.deepEqual(modules('constructs-cjs'), modules('constructs'));
    // What makes the CommonJS build CommonJS to Node and TypeScript: the package says "module".
    const cjsMarker = JSON.parse(
      exec('tar', ['-xzf', tarball, '-O', 'package/constructs-cjs/package.json'], { cwd: work, timeoutMs: 30_000 })
        .stdout,
    ) as unknown;
    assert.deepEqual(cjsMarker, { type: 'commonjs' });
  });

  it('ships nothing else: no controller (lib/), no tests, no apps/, no TypeScript sources, no source maps', () => {
    const entries = tarballEntries(tarball);
    const unexpected = entries.filter(
      (e) =>
        !(
          e === 'package.json' ||
          e === 'README.md' ||
          e === 'LICENSE' ||
          e === 'constructs-cjs/package.json' ||
          /^constructs(-cjs)?\/.+(\.js|\.d\.ts)$/.test(e)
        ),
    );
    assert.deepEqual(unexpected, []);
    assert.deepEqual(
      entries.filter((e) => /(^|\/)test\/|\.test\.|^apps\/|^examples\/|^bench\/|^scripts\/|tsbuildinfo/.test(e)),
      [],
    );
    assert.deepEqual(
      entries.filter((e) => e.endsWith('.ts') && !e.endsWith('.d.ts')),
      [],
    );
  });

  it('ships a README written for construct users (docs/constructs.md), not the repository README with its tests and benchmarks', () => {
    const readme = exec('tar', ['-xzf', tarball, '-O', 'package/README.md'], { cwd: work, timeoutMs: 30_000 }).stdout;
    assert.match(readme, /^# The constructs, for cdk8s and TypeScript users$/m);
    assert.match(readme, /npm install \/path\/to\/recon8s-<version>\.tgz/);
    assert.doesNotMatch(readme, /npm test|npm run bench|## Quickstart/);
    // The package ships no docs/: every link leaves it for the web.
    const links = [...readme.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1] ?? '');
    assert.ok(links.length > 0);
    assert.deepEqual(
      links.filter((l) => !/^https:\/\//.test(l)),
      [],
    );
  });

  it('requires nothing but its peers (cdk8s, constructs, cdk8s-plus-28), as caret ranges', () => {
    const manifest = JSON.parse(
      exec('tar', ['-xzf', tarball, '-O', 'package/package.json'], { cwd: work, timeoutMs: 30_000 }).stdout,
    ) as Record<string, unknown>;
    assert.equal(manifest.dependencies, undefined);
    assert.equal(manifest.bin, undefined);
    const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    assert.deepEqual(
      manifest.peerDependencies,
      Object.fromEntries(['cdk8s', 'cdk8s-plus-28', 'constructs'].map((p) => [p, `^${root.dependencies[p]}`])),
    );
  });

  it('installs into another project with its peers and no Kubernetes client (npm install, the npm cache first)', function () {
    // Skipped (and said so in before()) on a developer's machine that reaches no registry and whose
    // npm cache lacks a dependency: the other tests then ran against the tarball extracted beside this
    // repository's copies of the peers.
    if (installedBy !== 'npm install') {
      // CI reaches the registry: a failed install there is a failure, never a skip.
      if (process.env.CI === 'true')
        throw new Error(`npm install failed in CI (CI=true) with no registry in reach; recon8s was ${installedBy}`);
      this.skip();
    }
    const installed = join(consumer, 'node_modules', 'recon8s');
    assert.equal(lstatSync(installed).isSymbolicLink(), false, 'recon8s must be a copy, not a link to this repository');
    assert.equal(
      (JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { version: string }).version,
      version,
    );
    for (const dep of ['cdk8s', 'cdk8s-plus-28', 'constructs']) {
      assert.ok(existsSync(join(consumer, 'node_modules', dep, 'package.json')), `peer ${dep} is not installed`);
    }
    for (const absent of ['@kubernetes/client-node', 'prom-client', 'diff', '@recon8s/controller']) {
      assert.equal(
        existsSync(join(consumer, 'node_modules', absent)),
        false,
        `${absent} is installed in a constructs-only project`,
      );
    }
  });

  it('synthesizes on the lowest peer versions its ranges allow, from both builds', function () {
    this.timeout(240_000);
    const manifest = JSON.parse(
      exec('tar', ['-xzf', tarball, '-O', 'package/package.json'], { cwd: work, timeoutMs: 30_000 }).stdout,
    ) as { peerDependencies: Record<string, string> };
    const lowest = Object.entries(manifest.peerDependencies).map(([p, range]) => `${p}@${range.replace(/^\^/, '')}`);
    const oldest = join(work, 'oldest');
    installTarballWith(oldest, tarball, lowest);
    for (const spec of lowest) {
      const [name = '', v] = spec.split(/@(?=[^@]*$)/);
      assert.equal(
        (JSON.parse(readFileSync(join(oldest, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
          .version,
        v,
        name,
      );
    }
    const synthesize =
      "const app = new App(); const c = new Chart(app, 'c', { disableResourceNameHashes: true }); new recon8s.App(c, 'web', { image: 'nginx' }); new recon8s.MySQLCluster(c, 'db', {}); process.stdout.write(app.synthYaml());";
    // Both builds: the ES modules imported, the CommonJS required (with require() of ES modules off).
    for (const args of [
      [
        '--input-type=module',
        '-e',
        `import { App, Chart } from 'cdk8s'; import * as recon8s from 'recon8s'; ${synthesize}`,
      ],
      [
        '--no-experimental-require-module',
        '--input-type=commonjs',
        '-e',
        `const { App, Chart } = require('cdk8s'); const recon8s = require('recon8s'); ${synthesize}`,
      ],
    ]) {
      const r = exec(process.execPath, args, { cwd: oldest, timeoutMs: 60_000 });
      assertSucceeded(r);
      const names = kindNames(parseYaml(r.stdout));
      for (const expected of ['Deployment/web', 'MySQLCluster/db'])
        assert.ok(names.includes(expected), `${expected} not in ${names.join(', ')}`);
    }
  });

  it('type-checks a strict nodenext TypeScript consumer (ESM and CommonJS) against the shipped .d.ts, each against its own build, with no @types/node', () => {
    const r = tsc('tsconfig.json', consumer, ['--explainFiles']);
    assertSucceeded(r);
    assert.ok(existsSync(join(consumer, 'out', 'main.js')) && existsSync(join(consumer, 'out', 'cjs.cjs')), explain(r));
    // --explainFiles names each file and who imported it: the entry points' importers, one for each.
    const importers = (entry: string): string[] => {
      const lines = r.stdout.split('\n');
      const at = lines.findIndex((l) => l === `node_modules/recon8s/${entry}`);
      assert.notEqual(at, -1, `${entry} is not in the program:\n${r.stdout}`);
      const reasons = lines.slice(
        at + 1,
        lines.findIndex((l, i) => i > at && !l.startsWith(' ')),
      );
      return reasons.flatMap((l) => /Imported via 'recon8s' from file '([^']+)'/.exec(l)?.[1] ?? []);
    };
    assert.deepEqual(importers('constructs/index.d.ts'), ['main.ts']);
    assert.deepEqual(importers('constructs-cjs/index.d.ts'), ['cjs.cts']);
  });

  it('refuses a wrong prop at compile time (replicas: "two"): the types are real', () => {
    const r = tsc('tsconfig.bad.json', consumer);
    assert.notEqual(r.status, 0, explain(r));
    const errors = tscErrors(r);
    assert.equal(errors.length, 1, explain(r));
    assert.match(
      errors[0] ?? '',
      /^bad\.ts\(5,\d+\): error TS2322: Type 'string' is not assignable to type 'number'\./,
      explain(r),
    );
  });

  it('synthesizes the objects under Node 24', () => {
    assert.ok(existsSync(join(consumer, 'out', 'main.js')), 'the consumer did not compile (see above)');
    const r = exec(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('./out/main.js'); process.stdout.write(m.synthesize());"],
      { cwd: consumer, timeoutMs: 60_000 },
    );
    assertSucceeded(r);
    const objects = parseYaml(r.stdout);
    const names = kindNames(objects);
    // The database is the resource the controller reconciles; the App its own objects.
    assert.deepEqual(names, ['Deployment/web', 'MySQLCluster/db', 'NetworkPolicy/web', 'PodDisruptionBudget/web']);
    assert.deepEqual(
      names.filter((n) => n.startsWith('Secret/')),
      [],
      'no Secret is ever synthesized',
    );
    const web = objects.find((o) => o.kind === 'Deployment') as unknown as Deployment;
    assert.equal(web.spec.replicas, 2);
    assert.equal(web.spec.template.spec.containers[0]?.image, 'nginx');
  });

  it('gives CommonJS its CommonJS build (exports "require"), which synthesizes where require() of ES modules is off', () => {
    assert.ok(existsSync(join(consumer, 'out', 'cjs.cjs')), 'the consumer did not compile (see above)');
    // What a module loader of its own (jest) or a Node before 22.12 allows: a require()d ES module throws.
    const r = exec(
      process.execPath,
      [
        '--no-experimental-require-module',
        '-e',
        "process.stdout.write(JSON.stringify({ resolved: require.resolve('recon8s'), yaml: require('./out/cjs.cjs').synthesize() }))",
      ],
      { cwd: consumer, timeoutMs: 60_000 },
    );
    assertSucceeded(r);
    const { resolved, yaml } = JSON.parse(r.stdout) as { resolved: string; yaml: string };
    assert.equal(resolved, join(consumer, 'node_modules', 'recon8s', 'constructs-cjs', 'index.js'));
    assert.ok(kindNames(parseYaml(yaml)).includes('Deployment/web'), yaml);
  });

  it('keeps the ES modules for import', () => {
    const r = exec(
      process.execPath,
      ['--input-type=module', '-e', "process.stdout.write(import.meta.resolve('recon8s'))"],
      { cwd: consumer, timeoutMs: 60_000 },
    );
    assertSucceeded(r);
    assert.equal(r.stdout, pathToFileURL(join(consumer, 'node_modules', 'recon8s', 'constructs', 'index.js')).href);
  });

  it('exposes only its entry point and package.json: deep imports of internals are refused', () => {
    const script = `
      const pkg = await import('recon8s/package.json', { with: { type: 'json' } });
      const deep = [];
      for (const path of ['recon8s/constructs/app/app.js', 'recon8s/constructs-cjs/app/app.js']) {
        try { await import(path); deep.push('imported'); } catch (e) { deep.push(e.code); }
      }
      process.stdout.write(JSON.stringify({ version: pkg.default.version, deep }));`;
    const r = exec(process.execPath, ['--input-type=module', '-e', script], { cwd: consumer, timeoutMs: 60_000 });
    assertSucceeded(r);
    assert.deepEqual(JSON.parse(r.stdout), {
      version,
      deep: ['ERR_PACKAGE_PATH_NOT_EXPORTED', 'ERR_PACKAGE_PATH_NOT_EXPORTED'],
    });
  });
});
