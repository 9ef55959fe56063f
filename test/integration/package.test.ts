/*
 * `npm pack` gives a package another project installs and uses: the tarball holds the compiled
 * constructs with their types, the bin, README.md and package.json, and nothing else; a scratch ES
 * module project installs it offline, type-checks against it (and is refused a wrong prop), synthesizes
 * with it under Node 24, can require() it from CommonJS, and runs the installed `recon8s` bin.
 * No cluster needed; about 30 s (a build, an offline npm install, two tsc runs).
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../support/run.js';
import type { InstallMethod } from '../support/package-tools.js';
import {
  assertSucceeded, childEnv, exec, explain, installTarball, packRepository, tarballEntries, tempDir, tsc, tscErrors, writeTsconfig,
} from '../support/package-tools.js';

interface K8sObject { kind: string; metadata: { name: string }; spec?: Record<string, unknown> }
interface Deployment { spec: { replicas: number; template: { spec: { containers: { image: string }[] } } } }

const kindNames = (objects: readonly K8sObject[]): string[] => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
const parseYaml = (text: string): K8sObject[] => parseAllDocuments(text).map((d) => d.toJS() as K8sObject).filter((o) => o != null);

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

// The same from a CommonJS module: compiled to require('recon8s'), which Node >= 22.12 serves from ESM.
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

const APP_YAML = `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata: { name: web, namespace: shop }
spec:
  image: nginx
  replicas: 2
`;

describe('npm pack: the package another project installs', function () {
  this.timeout(240_000);
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let work = '';
  let tarball = '';
  let consumer = '';
  let installedBy: InstallMethod;

  before(function () {
    this.timeout(240_000);
    work = tempDir('package');
    tarball = packRepository(work);
    consumer = join(work, 'consumer');
    installedBy = installTarball(consumer, tarball);
    if (installedBy !== 'npm install --offline') console.log(`      (npm install --offline failed, ENOTCACHED: the npm cache lacks a dependency; recon8s was ${installedBy})`);
    writeFileSync(join(consumer, 'main.ts'), MAIN_TS);
    writeFileSync(join(consumer, 'cjs.cts'), CJS_CTS);
    writeFileSync(join(consumer, 'bad.ts'), BAD_TS);
    writeFileSync(join(consumer, 'app.yaml'), APP_YAML);
    writeTsconfig(join(consumer, 'tsconfig.json'), ['main.ts', 'cjs.cts']);
    writeTsconfig(join(consumer, 'tsconfig.bad.json'), ['bad.ts'], { noEmit: true });
  });
  after(() => { if (work) rmSync(work, { recursive: true, force: true }); });

  it(`is recon8s-${version}.tgz with the compiled constructs and their types, the bin, README.md and package.json`, () => {
    assert.equal(tarball.endsWith(`recon8s-${version}.tgz`), true, tarball);
    const entries = tarballEntries(tarball);
    for (const required of [
      'package.json', 'README.md',
      'build/constructs/index.js', 'build/constructs/index.d.ts',
      'build/lib/cli/main.js', 'build/lib/cli/cli.js',
    ]) assert.ok(entries.includes(required), `${required} is missing from the tarball`);
    // Every module that is shipped comes with its declarations.
    for (const js of entries.filter((e) => e.endsWith('.js'))) assert.ok(entries.includes(js.replace(/\.js$/, '.d.ts')), `${js} has no .d.ts`);
  });

  it('ships nothing else: no tests, no apps/, no TypeScript sources, no source maps to sources it lacks', () => {
    const entries = tarballEntries(tarball);
    const unexpected = entries.filter((e) => !(
      e === 'package.json' || e === 'README.md' || e === 'LICENSE'
      || /^build\/(constructs|lib)\/.+(\.js|\.d\.ts)$/.test(e)
    ));
    assert.deepEqual(unexpected, []);
    assert.deepEqual(entries.filter((e) => /(^|\/)test\/|\.test\.|^apps\/|^examples\/|^bench\/|^scripts\/|tsbuildinfo/.test(e)), []);
    assert.deepEqual(entries.filter((e) => e.endsWith('.ts') && !e.endsWith('.d.ts')), []);
  });

  it('installs into another project with its dependencies, from the npm cache alone (--offline)', function () {
    // Skipped (and said so in before()) when the npm cache lacks a dependency: the other tests then ran
    // against the tarball extracted beside this repository's copies of the dependencies.
    if (installedBy !== 'npm install --offline') this.skip();
    const installed = join(consumer, 'node_modules', 'recon8s');
    assert.equal(lstatSync(installed).isSymbolicLink(), false, 'recon8s must be a copy, not a link to this repository');
    assert.equal((JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { version: string }).version, version);
    for (const dep of ['cdk8s', 'cdk8s-plus-28', 'constructs', '@kubernetes/client-node', 'yaml']) {
      assert.ok(existsSync(join(consumer, 'node_modules', dep, 'package.json')), `dependency ${dep} is not installed`);
    }
  });

  it('type-checks a strict nodenext TypeScript consumer (ESM and CommonJS) against the shipped .d.ts, with no @types/node', () => {
    const r = tsc('tsconfig.json', consumer);
    assertSucceeded(r);
    assert.ok(existsSync(join(consumer, 'out', 'main.js')) && existsSync(join(consumer, 'out', 'cjs.cjs')), explain(r));
  });

  it('refuses a wrong prop at compile time (replicas: "two"): the types are real', () => {
    const r = tsc('tsconfig.bad.json', consumer);
    assert.notEqual(r.status, 0, explain(r));
    const errors = tscErrors(r);
    assert.equal(errors.length, 1, explain(r));
    assert.match(errors[0] ?? '', /^bad\.ts\(5,\d+\): error TS2322: Type 'string' is not assignable to type 'number'\./, explain(r));
  });

  it('synthesizes the objects under Node 24', () => {
    assert.ok(existsSync(join(consumer, 'out', 'main.js')), 'the consumer did not compile (see above)');
    const r = exec(process.execPath, ['--input-type=module', '-e', "const m = await import('./out/main.js'); process.stdout.write(m.synthesize());"], { cwd: consumer, timeoutMs: 60_000 });
    assertSucceeded(r);
    const objects = parseYaml(r.stdout);
    const names = kindNames(objects);
    for (const expected of ['Deployment/web', 'StatefulSet/db', 'Service/db-primary', 'Service/db-replicas', 'PodDisruptionBudget/db-mysql']) {
      assert.ok(names.includes(expected), `${expected} not in ${names.join(', ')}`);
    }
    assert.deepEqual(names.filter((n) => n.startsWith('Secret/')), [], 'no Secret is ever synthesized');
    const web = objects.find((o) => o.kind === 'Deployment') as unknown as Deployment;
    assert.equal(web.spec.replicas, 2);
    assert.equal(web.spec.template.spec.containers[0]?.image, 'nginx');
  });

  it('is require()-able from CommonJS (exports "default", Node >= 22.12)', () => {
    assert.ok(existsSync(join(consumer, 'out', 'cjs.cjs')), 'the consumer did not compile (see above)');
    const r = exec(process.execPath, ['-e', "process.stdout.write(require('./out/cjs.cjs').synthesize())"], { cwd: consumer, timeoutMs: 60_000 });
    assertSucceeded(r);
    assert.ok(kindNames(parseYaml(r.stdout)).includes('Deployment/web'), r.stdout);
    assert.doesNotMatch(r.stderr, /ExperimentalWarning/);
  });

  it('exposes only its entry point and package.json: deep imports of internals are refused', () => {
    const script = `
      const pkg = await import('recon8s/package.json', { with: { type: 'json' } });
      let code = 'imported';
      try { await import('recon8s/build/lib/cli/cli.js'); } catch (e) { code = e.code; }
      process.stdout.write(JSON.stringify({ version: pkg.default.version, deep: code }));`;
    const r = exec(process.execPath, ['--input-type=module', '-e', script], { cwd: consumer, timeoutMs: 60_000 });
    assertSucceeded(r);
    assert.deepEqual(JSON.parse(r.stdout), { version, deep: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
  });

  it('installs the recon8s bin: recon8s render -f app.yaml prints a Deployment', () => {
    const bin = join(consumer, 'node_modules', '.bin', 'recon8s');
    const r = exec(bin, ['render', '-f', 'app.yaml'], { cwd: consumer, timeoutMs: 60_000, env: childEnv() });
    assertSucceeded(r);
    const objects = parseYaml(r.stdout);
    assert.ok(kindNames(objects).includes('Deployment/web'), r.stdout);
    assert.equal((objects.find((o) => o.kind === 'Deployment') as unknown as Deployment).spec.replicas, 2);
  });
});
