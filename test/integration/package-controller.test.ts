/*
 * `npm pack` of this repository gives the controller package, @recon8s/controller: the CLI and the
 * controller with the constructs they were built with, and their runtime dependencies (the Kubernetes
 * client among them). A scratch project installs it offline and runs the installed `recon8s` bin.
 * The constructs-only package `recon8s` is package.test.ts. No cluster needed; about 30 s.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../support/run.js';
import {
  assertSucceeded,
  childEnv,
  exec,
  installTarball,
  packRepository,
  tarballEntries,
  tempDir,
} from '../support/package-tools.js';

const APP_YAML = `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata: { name: web, namespace: shop }
spec:
  image: nginx
  replicas: 2
`;

interface K8sObject {
  kind: string;
  metadata: { name: string };
  spec?: { replicas?: number };
}

describe('the controller package @recon8s/controller (npm pack), as an operator user installs it', function () {
  this.timeout(240_000);
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let work = '';
  let tarball = '';
  let project = '';

  before(function () {
    this.timeout(240_000);
    work = tempDir('package-controller');
    tarball = packRepository(work);
    project = join(work, 'project');
    installTarball(project, tarball);
    writeFileSync(join(project, 'app.yaml'), APP_YAML);
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it(`is recon8s-controller-${version}.tgz with the compiled controller, CLI and constructs, and their types`, () => {
    assert.equal(tarball.endsWith(`recon8s-controller-${version}.tgz`), true, tarball);
    const entries = tarballEntries(tarball);
    for (const required of [
      'package.json',
      'README.md',
      'build/lib/cli/main.js',
      'build/lib/controller/reconciler.js',
      'build/constructs/index.js',
    ]) {
      assert.ok(entries.includes(required), `${required} is missing from the tarball`);
    }
    for (const js of entries.filter((e) => e.endsWith('.js')))
      assert.ok(entries.includes(js.replace(/\.js$/, '.d.ts')), `${js} has no .d.ts`);
    assert.deepEqual(
      entries.filter(
        (e) =>
          !(
            e === 'package.json' ||
            e === 'README.md' ||
            e === 'LICENSE' ||
            /^build\/(constructs|lib)\/.+(\.js|\.d\.ts)$/.test(e)
          ),
      ),
      [],
    );
  });

  it('installs with its runtime dependencies, the Kubernetes client among them', () => {
    for (const dep of [
      '@kubernetes/client-node',
      'prom-client',
      'diff',
      'yaml',
      'cdk8s',
      'cdk8s-plus-28',
      'constructs',
    ]) {
      assert.ok(existsSync(join(project, 'node_modules', dep, 'package.json')), `dependency ${dep} is not installed`);
    }
  });

  it('installs the recon8s bin: recon8s render -f app.yaml prints a Deployment; --help lists the commands', () => {
    const bin = join(project, 'node_modules', '.bin', 'recon8s');
    const r = exec(bin, ['render', '-f', 'app.yaml'], { cwd: project, timeoutMs: 60_000, env: childEnv() });
    assertSucceeded(r);
    const objects = parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as K8sObject)
      .filter((o) => o != null);
    const deployment = objects.find((o) => o.kind === 'Deployment');
    assert.equal(deployment?.metadata.name, 'web', r.stdout);
    assert.equal(deployment?.spec?.replicas, 2);
    const help = exec(bin, ['--help'], { cwd: project, timeoutMs: 60_000, env: childEnv() });
    assertSucceeded(help);
    for (const command of ['controller', 'render', 'diff', 'apply'])
      assert.match(help.stdout, new RegExp(`\\b${command}\\b`));
  });
});
