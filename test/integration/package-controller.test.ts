/*
 * `npm pack` of this repository gives the controller package, @recon8s/controller: the CLI and the
 * controller with the constructs they were built with, and their runtime dependencies (the Kubernetes
 * client among them). A scratch project installs it offline and runs the installed `recon8s` bin, and
 * the real kubectl finds the same CLI as the plugin `kubectl recon8s` (against the shared control plane).
 * The constructs-only package `recon8s` is package.test.ts. About 30 s.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { installCrds } from './support/controller.js';
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

  describe('as the kubectl plugin kubectl-recon8s (the real kubectl, the shared control plane)', () => {
    const controlPlane = useSharedControlPlane();
    let ns = '';
    before(async function () {
      this.timeout(120_000);
      await installCrds(controlPlane());
      ns = await freshNamespace('kubectl-plugin');
      const custom = controlPlane().kubeConfig().makeApiClient(CustomObjectsApi);
      const target = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters', namespace: ns };
      await custom.createNamespacedCustomObject({
        ...target,
        body: { apiVersion: 'recon8s.dev/v1alpha1', kind: 'MySQLCluster', metadata: { name: 'db' }, spec: {} },
      });
      // The topology as a controller would have reported it; none runs here.
      const created = (await custom.getNamespacedCustomObject({ ...target, name: 'db' })) as Record<string, unknown>;
      await custom.replaceNamespacedCustomObjectStatus({
        ...target,
        name: 'db',
        body: {
          ...created,
          status: {
            currentPrimary: 'db-0',
            members: [
              { name: 'db-0', role: 'primary', reachable: true, writable: true },
              { name: 'db-1', role: 'replica', reachable: true, writable: false, replicating: true },
            ],
          },
        },
      });
    });

    // kubectl finds a plugin as an executable named kubectl-<name> on PATH: the package bin of that name.
    const kubectl = (args: readonly string[]) =>
      exec(controlPlane().binaries.kubectl, args, {
        cwd: project,
        timeoutMs: 60_000,
        env: childEnv({
          PATH: [join(project, 'node_modules', '.bin'), childEnv().PATH].join(delimiter),
          KUBECONFIG: controlPlane().kubeconfigPath,
        }),
      });

    it('kubectl plugin list finds it in the installed bin directory', () => {
      const r = kubectl(['plugin', 'list', '--name-only']);
      assertSucceeded(r);
      assert.match(r.stdout, /^kubectl-recon8s$/m);
    });

    it('kubectl recon8s status db -n NS prints the topology of MySQLCluster db', () => {
      const r = kubectl(['recon8s', 'status', 'db', '-n', ns]);
      assertSucceeded(r);
      assert.match(r.stdout, new RegExp(`^MySQLCluster ${ns}/db: primary db-0$`, 'm'));
      assert.match(r.stdout, /^db-0 +primary +yes +yes +- *$/m);
      assert.match(r.stdout, /^db-1 +replica +yes +no +yes *$/m);
    });

    it('kubectl recon8s passes on the exit code and error of the CLI (a cluster that does not exist: 2)', () => {
      const r = kubectl(['recon8s', 'status', 'nowhere', '-n', ns]);
      assert.equal(r.status, 2, `${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /nowhere does not exist/);
    });
  });
});
