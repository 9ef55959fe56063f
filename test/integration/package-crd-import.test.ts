/*
 * The other way to use recon8s from cdk8s: `cdk8s import` of the CRDs that `cdk8s synth` writes gives
 * typed classes (App, MySqlCluster) that a separate cdk8s project compiles against; a wrong field does
 * not compile; and what the classes synthesize passes `recon8s render`, the same validation the API
 * server and the controller apply. Offline, no cluster; about 15 s.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT, runCli, runSynth } from '../support/run.js';
import { assertSucceeded, exec, explain, tempDir, tsc, tscErrors, writeTsconfig } from '../support/package-tools.js';

const MAIN_TS = `import { App as Cdk8sApp, Chart } from 'cdk8s';
import { App, MySqlCluster, MySqlClusterSpecStorageSize } from './imports/recon8s.dev.js';

export function synthesize(): string {
  const app = new Cdk8sApp();
  const chart = new Chart(app, 'shop', { namespace: 'shop' });
  new App(chart, 'web', { metadata: { name: 'web' }, spec: { image: 'nginx', replicas: 2 } });
  new MySqlCluster(chart, 'db', {
    metadata: { name: 'db' },
    spec: { replicas: 3, version: '8.4', storage: { size: MySqlClusterSpecStorageSize.fromString('20Gi') } },
  });
  return app.synthYaml();
}
`;

// One error on each of lines 5 (wrong type), 6 (unknown field) and 7 (required field missing).
const BAD_TS = `import { App as Cdk8sApp, Chart } from 'cdk8s';
import { App } from './imports/recon8s.dev.js';

const chart = new Chart(new Cdk8sApp(), 'shop');
new App(chart, 'a', { spec: { image: 'nginx', replicas: 'two' } });
new App(chart, 'b', { spec: { image: 'nginx', replica: 2 } });
new App(chart, 'c', { spec: { replicas: 2 } });
`;

describe('cdk8s import of the recon8s CRDs', function () {
  this.timeout(120_000);
  let work = '';
  let project = '';
  let generated = '';

  before(function () {
    this.timeout(120_000);
    work = tempDir('crd-import');
    const synth = runSynth(join(work, 'synth'), { CDK8S_CHECK_UPGRADE: 'false' });
    assert.equal(synth.status, 0, synth.stderr);
    // A separate cdk8s project: its own package.json; cdk8s and constructs are this repository's.
    project = join(work, 'project');
    mkdirSync(join(project, 'node_modules'), { recursive: true });
    writeFileSync(join(project, 'package.json'), '{ "name": "crd-consumer", "private": true, "type": "module" }\n');
    for (const dep of ['cdk8s', 'constructs'])
      symlinkSync(join(REPO_ROOT, 'node_modules', dep), join(project, 'node_modules', dep), 'dir');
    const imported = exec(
      join(REPO_ROOT, 'node_modules', '.bin', 'cdk8s'),
      [
        'import',
        join(work, 'synth', 'crds.k8s.yaml'),
        '--language',
        'typescript',
        '--output',
        'imports',
        '--no-check-upgrade',
      ],
      { cwd: project, timeoutMs: 90_000 },
    );
    assertSucceeded(imported);
    generated = join(project, 'imports', 'recon8s.dev.ts');
    writeFileSync(join(project, 'main.ts'), MAIN_TS);
    writeFileSync(join(project, 'bad.ts'), BAD_TS);
    writeTsconfig(join(project, 'tsconfig.json'), ['main.ts']);
    writeTsconfig(join(project, 'tsconfig.bad.json'), ['bad.ts'], { noEmit: true });
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('generates App and MySqlCluster classes for recon8s.dev/v1alpha1', () => {
    assert.ok(existsSync(generated), `${generated} was not generated`);
    const source = readFileSync(generated, 'utf8');
    assert.match(source, /export class App extends ApiObject/);
    assert.match(source, /export class MySqlCluster extends ApiObject/);
    assert.match(source, /apiVersion: 'recon8s\.dev\/v1alpha1',\s+kind: 'App'/);
    assert.match(source, /apiVersion: 'recon8s\.dev\/v1alpha1',\s+kind: 'MySQLCluster'/);
    assert.match(source, /readonly image: string;/, 'spec.image is required');
  });

  it('a separate cdk8s project compiles against them (strict, nodenext)', () => {
    assertSucceeded(tsc('tsconfig.json', project));
  });

  it('a wrong field type, an unknown field and a missing required field do not compile', () => {
    const r = tsc('tsconfig.bad.json', project);
    assert.notEqual(r.status, 0, explain(r));
    const errors = tscErrors(r);
    assert.equal(errors.length, 3, explain(r));
    assert.match(
      errors[0] ?? '',
      /^bad\.ts\(5,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/,
      explain(r),
    );
    assert.match(errors[1] ?? '', /^bad\.ts\(6,\d+\): error TS2561: .*'replica'/, explain(r));
    assert.match(errors[2] ?? '', /^bad\.ts\(7,\d+\): error TS2741: Property 'image' is missing/, explain(r));
  });

  it('what they synthesize is a valid App and MySQLCluster for recon8s render', () => {
    assert.ok(existsSync(join(project, 'out', 'main.js')), 'the project did not compile (see above)');
    const synth = exec(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('./out/main.js'); process.stdout.write(m.synthesize());"],
      { cwd: project, timeoutMs: 60_000 },
    );
    assertSucceeded(synth);
    const resources = parseAllDocuments(synth.stdout).map(
      (d) => d.toJS() as { apiVersion: string; kind: string; spec: Record<string, unknown> },
    );
    assert.deepEqual(
      resources.map((r) => `${r.apiVersion} ${r.kind}`),
      ['recon8s.dev/v1alpha1 App', 'recon8s.dev/v1alpha1 MySQLCluster'],
    );
    assert.deepEqual(resources[1]?.spec, { replicas: 3, version: '8.4', storage: { size: '20Gi' } });
    const file = join(work, 'resources.yaml');
    writeFileSync(file, synth.stdout);
    const rendered = runCli(['render', '-f', file, '-o', 'json']);
    assert.equal(rendered.status, 0, rendered.stderr);
    const kinds = (JSON.parse(rendered.stdout) as { items: { kind: string; metadata: { name: string } }[] }).items.map(
      (o) => `${o.kind}/${o.metadata.name}`,
    );
    for (const expected of ['Deployment/web', 'StatefulSet/db'])
      assert.ok(kinds.includes(expected), `${expected} not in ${kinds.join(', ')}`);
  });
});
