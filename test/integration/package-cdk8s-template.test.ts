/*
 * The constructs package `recon8s` in the project `cdk8s init typescript-app` makes, the way most cdk8s
 * users start: a CommonJS project (TypeScript `module: CommonJS`, which TypeScript 5.x resolves as
 * node10, ignoring `exports`), jest with ts-jest, `cdk8s synth` through ts-node, and cdk8s-plus-33 as
 * its dependency, beside which npm installs our peer cdk8s-plus-28. The project is made by the real
 * `cdk8s init` of the cdk8s-cli this repository pins, its npm install from the npm cache first (the
 * registry for what the cache lacks). The tarball is installed into it, main.ts gets the constructs
 * (and a cdk8s-plus-33 ConfigMap, so that both cdk8s-plus versions render into one chart), main.test.ts
 * a test in the template's style, and the template's own `npm run build` (compile, test, synth) must pass
 * with its configuration untouched. No cluster needed; about 45 s warm (two npm installs, a build of the
 * package, the template's build).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../support/run.js';
import type { ExecResult } from '../support/package-tools.js';
import { assertSucceeded, childEnv, exec, explain, packConstructs, tempDir } from '../support/package-tools.js';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
}

/** The project's directory name: `cdk8s init` names the package and the chart after it. */
const PROJECT = 'hello';

// The template's main.ts has this line where the user's resources go.
const RESOURCES_PLACEHOLDER = '    // define resources here\n';
const RESOURCES = `    new recon8s.App(this, 'web', { image: 'nginx', replicas: 2 });
    new recon8s.MySQLCluster(this, 'db', {});
    new kplus.ConfigMap(this, 'settings', { metadata: { name: 'settings' }, data: { greeting: 'hello' } });
`;
const TEMPLATE_IMPORTS = "import { App, Chart, ChartProps } from 'cdk8s';\n";
const IMPORTS = `${TEMPLATE_IMPORTS}import * as kplus from 'cdk8s-plus-33';\nimport * as recon8s from 'recon8s';\n`;

// In the style of the template's main.test.ts, which it replaces.
const MAIN_TEST_TS = `import {MyChart} from './main';
import {Testing} from 'cdk8s';

describe('MyChart', () => {
  test('renders the App, the MySQLCluster and the ConfigMap', () => {
    const app = Testing.app();
    const chart = new MyChart(app, 'test-chart');
    const results = Testing.synth(chart);
    const names = results.map((o) => o.kind + '/' + o.metadata.name);
    expect(names).toEqual(expect.arrayContaining(['Deployment/web', 'MySQLCluster/db', 'ConfigMap/settings']));
  });
});
`;

// Neither the upgrade check of the cdk8s CLI nor npm's audit and funding requests: each asks a server.
const QUIET = { CDK8S_CHECK_UPGRADE: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };

describe('the constructs package in a `cdk8s init typescript-app` project (CommonJS, jest, cdk8s-plus-33)', function () {
  this.timeout(120_000);
  let work = '';
  let project = '';
  let init: ExecResult;
  let build: ExecResult | undefined;

  before(function () {
    // A fresh machine fills the npm cache from the registry here: some 400 packages.
    this.timeout(600_000);
    work = tempDir('cdk8s-template');
    const tarball = packConstructs(work);
    project = join(work, PROJECT);
    mkdirSync(project);
    init = exec(join(REPO_ROOT, 'node_modules', '.bin', 'cdk8s'), ['init', 'typescript-app'], {
      cwd: project,
      // The template's post-init hook runs a plain `npm install`: npm reads this from the environment.
      env: childEnv({ ...QUIET, npm_config_prefer_offline: 'true' }),
      timeoutMs: 480_000,
    });
    assertInitialized(init);
    assertSucceeded(
      exec('npm', ['install', tarball, '--prefer-offline'], { cwd: project, env: childEnv(QUIET), timeoutMs: 120_000 }),
    );

    const mainTs = readFileSync(join(project, 'main.ts'), 'utf8');
    assert.ok(mainTs.includes(RESOURCES_PLACEHOLDER) && mainTs.includes(TEMPLATE_IMPORTS), mainTs);
    writeFileSync(
      join(project, 'main.ts'),
      mainTs.replace(TEMPLATE_IMPORTS, IMPORTS).replace(RESOURCES_PLACEHOLDER, RESOURCES),
    );
    writeFileSync(join(project, 'main.test.ts'), MAIN_TEST_TS);
    // The snapshot of the placeholder test main.test.ts no longer has; `npm test -- -u` would delete it too.
    rmSync(join(project, '__snapshots__'), { recursive: true, force: true });
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('is the project the template makes: CommonJS TypeScript, jest with ts-jest, cdk8s-plus-33', () => {
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      type?: string;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
    };
    assert.equal(manifest.type, undefined, 'no "type": "module": its .js files are CommonJS');
    assert.equal(manifest.scripts.build, 'npm run compile && npm run test && npm run synth');
    assert.equal(manifest.scripts.test, 'jest');
    assert.ok(manifest.dependencies['cdk8s-plus-33'], JSON.stringify(manifest.dependencies));
    const tsconfig = JSON.parse(readFileSync(join(project, 'tsconfig.json'), 'utf8')) as {
      compilerOptions: { module: string; moduleResolution?: string };
    };
    assert.equal(tsconfig.compilerOptions.module.toLowerCase(), 'commonjs');
    assert.equal(tsconfig.compilerOptions.moduleResolution, undefined, 'TypeScript picks node10 for CommonJS');
    assert.match(readFileSync(join(project, 'jest.config.js'), 'utf8'), /ts-jest/);
  });

  it('installs recon8s with its peer cdk8s-plus-28 beside cdk8s-plus-33, on one cdk8s and one constructs', () => {
    for (const pkg of ['recon8s', 'cdk8s-plus-28', 'cdk8s-plus-33'])
      assert.ok(existsSync(join(project, 'node_modules', pkg, 'package.json')), `${pkg} is not installed`);
    // Every copy of each; npm ls also fails on a peer it finds unmet or invalid.
    const r = exec('npm', ['ls', 'cdk8s', 'constructs', '--all', '--parseable'], {
      cwd: project,
      env: childEnv(QUIET),
      timeoutMs: 60_000,
    });
    assertSucceeded(r);
    assert.deepEqual(
      [...new Set(r.stdout.split('\n').filter((l) => l !== ''))].sort(),
      [join(project, 'node_modules', 'cdk8s'), join(project, 'node_modules', 'constructs')],
      'both cdk8s-plus versions must build on the same cdk8s and constructs',
    );
  });

  it("passes the template's own `npm run build`: tsc, jest (ts-jest), cdk8s synth (ts-node)", () => {
    // CI=true: jest then writes no snapshot, wherever this runs.
    build = exec('npm', ['run', 'build'], {
      cwd: project,
      env: childEnv({ ...QUIET, CI: 'true' }),
      timeoutMs: 300_000,
    });
    assertSucceeded(build);
    // jest writes its summary to stderr.
    assert.match(build.stderr, /^Tests:\s+1 passed, 1 total$/m, explain(build));
    assert.match(
      build.stdout + build.stderr,
      new RegExp(`Synthesizing application\\s+- dist/${PROJECT}\\.k8s\\.yaml`),
      explain(build),
    );
  });

  it('synthesizes the App, the MySQLCluster and the cdk8s-plus-33 ConfigMap into dist/', () => {
    const synthesized = join(project, 'dist', `${PROJECT}.k8s.yaml`);
    // Checked after the build, not before: jest's import of main.ts writes dist/ too (its app.synth()).
    assert.ok(
      build?.status === 0 && existsSync(synthesized),
      'npm run build failed or synthesized nothing (see above)',
    );
    const objects = parseAllDocuments(readFileSync(synthesized, 'utf8'))
      .map((d) => d.toJS() as K8sObject)
      .filter((o) => o != null);
    const names = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    // The database is the resource the controller reconciles; the App its own objects.
    assert.deepEqual(names.sort(), [
      'ConfigMap/settings',
      'Deployment/web',
      'MySQLCluster/db',
      'NetworkPolicy/web',
      'PodDisruptionBudget/web',
    ]);
    assert.deepEqual(
      names.filter((n) => n.startsWith('Secret/')),
      [],
      'no Secret is ever synthesized',
    );
    assert.deepEqual(objects.find((o) => o.metadata.name === 'settings')?.data, { greeting: 'hello' });
  });
});

/**
 * `cdk8s init` succeeded, or stopped at the one step that needs a server other than the npm registry:
 * its post-init hook runs `npm install`, then `cdk8s import` of the Kubernetes API, whose schema it
 * downloads from raw.githubusercontent.com, then compiles, tests and synthesizes the placeholder. The
 * test needs none of the imported classes (the template's main.ts uses none either) and runs the
 * compile, test and synth itself, with the constructs in.
 */
function assertInitialized(r: ExecResult): void {
  if (r.status === 0) return;
  assert.match(r.stderr, /Could not find a schema for k8s version/, explain(r));
  assert.match(r.stderr, /Command failed: npm run import/, explain(r));
}
