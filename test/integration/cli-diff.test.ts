import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { RunResult } from '../support/run.js';
import { runCli } from '../support/run.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { installCrds } from './support/controller.js';
import { writeUnreachableKubeconfig } from './support/unreachable.js';

const ESC = String.fromCharCode(27);
const ANSI = new RegExp(`${ESC}\\[`);
const stripAnsi = (s: string): string => s.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '');

/** The changed lines of a unified diff (not the ---/+++ file headers). */
const changedLines = (diff: string): string[] =>
  diff.split('\n').filter((l) => /^[-+]/.test(l) && !/^(---|\+\+\+) /.test(l));
/** `old new` of every file of a unified diff. */
const files = (diff: string): string[] => {
  const out: string[] = [];
  const lines = diff.split('\n');
  lines.forEach((l, i) => {
    if (l.startsWith('--- ') && lines[i + 1]?.startsWith('+++ '))
      out.push(`${l.slice(4)} ${lines[i + 1]?.slice(4) ?? ''}`);
  });
  return out;
};

describe('recon8s diff (real API server)', function () {
  this.timeout(90_000);
  const controlPlane = useSharedControlPlane();
  let ns: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const appYaml = (spec: string, name = 'web'): string => `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata:
  name: ${name}
  namespace: ${ns}
spec:
  image: nginx:1.27
${spec}`;
  const WEB = '  replicas: 2\n  ports:\n    - { name: http, port: 8080, targetPort: 80 }\n';
  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const diff = (path: string, ...more: string[]): RunResult => runCli(['diff', '-f', path, ...more], { env });
  const noAnsi = (r: RunResult): void => {
    assert.doesNotMatch(r.stdout, ANSI, 'piped output has no colour');
    assert.doesNotMatch(r.stderr, ANSI);
  };

  before(async function () {
    this.timeout(120_000);
    await installCrds(controlPlane());
    ns = await freshNamespace('cli-diff');
    dir = mkdtempSync(join(tmpdir(), 'recon8s-cli-diff-'));
    // KUBECONFIG, as a user's shell would have it (no --kubeconfig).
    env = { KUBECONFIG: controlPlane().kubeconfigPath, NO_COLOR: undefined };
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows a new App and all its children as created, exit 1, and writes nothing', async () => {
    const r = diff(file('new.yaml', appYaml(WEB)));
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stderr, '');
    noAnsi(r);
    assert.deepEqual(files(r.stdout), [
      `/dev/null recon8s/recon8s.dev/v1alpha1/App/${ns}/web`,
      `/dev/null recon8s/apps/v1/Deployment/${ns}/web`,
      `/dev/null recon8s/v1/Service/${ns}/web`,
      `/dev/null recon8s/policy/v1/PodDisruptionBudget/${ns}/web`,
      `/dev/null recon8s/networking.k8s.io/v1/NetworkPolicy/${ns}/web`,
    ]);
    assert.ok(
      changedLines(r.stdout).every((l) => l.startsWith('+')),
      'only additions',
    );
    assert.match(r.stdout, /\n\+kind: Deployment\n/);
    assert.ok(r.stdout.includes('\n+  replicas: 2\n'));
    // The owner does not exist yet: no made-up uid; the noise is gone.
    assert.match(r.stdout, /\n\+ {6}kind: App\n\+ {6}name: web\n\+spec:\n/);
    assert.doesNotMatch(r.stdout, /uid:|resourceVersion:|managedFields:|creationTimestamp:|desired-hash|^\+status:/m);
    // A dry run only.
    const apps = controlPlane().kubeConfig().makeApiClient(AppsV1Api);
    await assert.rejects(
      apps.readNamespacedDeployment({ namespace: ns, name: 'web' }),
      (e: { code?: number }) => e.code === 404,
    );
  });

  it('is empty, exit 0, once the App is applied and reconciled', () => {
    const path = file('web.yaml', appYaml(WEB));
    const applied = runCli(['apply', '-f', path, '--no-wait', '--timeout', '30s'], { env });
    assert.equal(applied.status, 0, applied.stderr);
    const r = diff(path);
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, '');
  });

  it('shows a changed replicas as exactly -replicas: 2 / +replicas: 3, on the App and on its Deployment', () => {
    const r = diff(
      file('scaled.yaml', appYaml(WEB.replace('replicas: 2', 'replicas: 3'))),
      '--kubeconfig',
      controlPlane().kubeconfigPath,
    );
    assert.equal(r.status, 1, r.stderr);
    noAnsi(r);
    assert.deepEqual(files(r.stdout), [
      `live/recon8s.dev/v1alpha1/App/${ns}/web recon8s/recon8s.dev/v1alpha1/App/${ns}/web`,
      `live/apps/v1/Deployment/${ns}/web recon8s/apps/v1/Deployment/${ns}/web`,
    ]);
    assert.deepEqual(changedLines(r.stdout), ['-  replicas: 2', '+  replicas: 3', '-  replicas: 2', '+  replicas: 3']);
    assert.match(r.stdout, /@@ -\d+,7 \+\d+,7 @@\n/, 'three lines of context around the change');
  });

  it('shows a change made by hand to a field recon8s owns as what the controller would revert', async () => {
    const objects = KubernetesObjectApi.makeApiClient(controlPlane().kubeConfig());
    await objects.patch(
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: ns },
        spec: { replicas: 7 },
      } as KubernetesObject,
      undefined,
      undefined,
      'intruder',
      true,
      PatchStrategy.ServerSideApply,
    );
    const r = diff(file('web.yaml', appYaml(WEB)));
    assert.equal(r.status, 1, r.stderr);
    assert.deepEqual(files(r.stdout), [`live/apps/v1/Deployment/${ns}/web recon8s/apps/v1/Deployment/${ns}/web`]);
    assert.deepEqual(changedLines(r.stdout), ['-  replicas: 7', '+  replicas: 2']);
    const back = runCli(['apply', '-f', join(dir, 'web.yaml'), '--no-wait'], { env });
    assert.equal(back.status, 0, back.stderr);
    assert.equal(diff(join(dir, 'web.yaml')).status, 0);
  });

  it('shows the Service as pruned when the ports are removed, and the NetworkPolicy as admitting none (and prunes nothing)', async () => {
    const r = diff(file('no-ports.yaml', appYaml('  replicas: 2\n')));
    assert.equal(r.status, 1, r.stderr);
    noAnsi(r);
    assert.deepEqual(files(r.stdout), [
      `live/recon8s.dev/v1alpha1/App/${ns}/web recon8s/recon8s.dev/v1alpha1/App/${ns}/web`,
      `live/apps/v1/Deployment/${ns}/web recon8s/apps/v1/Deployment/${ns}/web`,
      `live/networking.k8s.io/v1/NetworkPolicy/${ns}/web recon8s/networking.k8s.io/v1/NetworkPolicy/${ns}/web`,
      `live/v1/Service/${ns}/web /dev/null`,
    ]);
    // Its port is no longer declared: the policy's only ingress rule goes.
    const policy = r.stdout.slice(
      r.stdout.indexOf(`--- live/networking.k8s.io/v1/NetworkPolicy/${ns}/web`),
      r.stdout.indexOf(`--- live/v1/Service/${ns}/web`),
    );
    assert.match(policy, /^- {2}ingress:$/m);
    assert.ok(
      changedLines(policy).every((l) => l.startsWith('-')),
      policy,
    );
    const service = r.stdout.slice(r.stdout.indexOf(`--- live/v1/Service/${ns}/web`));
    assert.match(service, /^--- live\/v1\/Service\/\S+\n\+\+\+ \/dev\/null\n@@ -1,\d+ \+0,0 @@\n-apiVersion: v1\n/);
    assert.ok(changedLines(service).every((l) => l.startsWith('-')));
    assert.doesNotMatch(service, /clusterIP: None|^-status:/m);
    const core = controlPlane().kubeConfig().makeApiClient(CoreV1Api);
    await core.readNamespacedService({ namespace: ns, name: 'web' });
  });

  it('colours only when asked to (--color=always): piped output gets none', () => {
    const path = join(dir, 'no-ports.yaml');
    const coloured = diff(path, '--color=always');
    assert.equal(coloured.status, 1, coloured.stderr);
    assert.ok(coloured.stdout.includes(`${ESC}[31m-  ports:${ESC}[0m`), coloured.stdout);
    assert.ok(coloured.stdout.includes(`${ESC}[36m@@ `));
    assert.ok(coloured.stdout.includes(`${ESC}[1m--- live/`));
    assert.equal(stripAnsi(coloured.stdout), diff(path).stdout);
    assert.doesNotMatch(diff(path, '--color=never').stdout, ANSI);
    const bad = diff(path, '--color=sometimes');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--color must be auto, always or never/);
  });

  it('refuses an invalid resource with exit 2, naming the field, before contacting the cluster', () => {
    const r = runCli(['diff', '-f', file('invalid.yaml', appYaml('  replicas: -1\n'))], {
      env: { KUBECONFIG: join(dir, 'nowhere.kubeconfig') },
    });
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /App "web" is invalid/);
    assert.match(r.stderr, /spec\.replicas: got -1/);
  });

  it('says so, exit 2, when the API server refuses the change (a rule only it can judge), naming the field', () => {
    const db = (size: string): string => `apiVersion: recon8s.dev/v1alpha1
kind: MySQLCluster
metadata: { name: db, namespace: ${ns} }
spec: { replicas: 1, storage: { size: ${size} } }
`;
    const applied = runCli(['apply', '-f', file('db.yaml', db('10Gi')), '--no-wait'], { env });
    assert.equal(applied.status, 0, applied.stderr);
    assert.equal(diff(join(dir, 'db.yaml')).status, 0);
    // Storage may grow but never shrink: a transition rule of the CRD, judged on update only.
    const r = diff(file('db-smaller.yaml', db('5Gi')));
    assert.equal(r.status, 2, r.stdout);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^error: MySQLCluster \S+\/db was refused: .*spec\.storage\.size.*may grow but never shrink/m,
    );
  });

  it('renders a MySQLCluster\u2019s NetworkPolicy for the operator named by --operator-namespace (recon8s-system by default)', () => {
    const path = file(
      'policy-db.yaml',
      `apiVersion: recon8s.dev/v1alpha1\nkind: MySQLCluster\nmetadata: { name: fenced, namespace: ${ns} }\nspec: { replicas: 1 }\n`,
    );
    /** The namespaces the new NetworkPolicy's namespaceSelectors name. */
    const operatorNamespaces = (r: RunResult): string[] => {
      assert.equal(r.status, 1, r.stderr);
      const policy = r.stdout.split(/^--- /m).find((f) => f.includes(`NetworkPolicy/${ns}/fenced-mysql`));
      assert.ok(policy, `no NetworkPolicy in the diff:\n${files(r.stdout).join('\n')}`);
      return [...policy.matchAll(/kubernetes\.io\/metadata\.name: (\S+)/g)].map((m) => m[1] ?? '');
    };
    assert.deepEqual(operatorNamespaces(diff(path)), ['recon8s-system']);
    assert.deepEqual(operatorNamespaces(diff(path, '--operator-namespace', 'ops')), ['ops']);
    const bad = diff(path, '--operator-pod-labels', 'no-equals-sign');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--operator-pod-labels must be KEY=VALUE pairs .*got "no-equals-sign"/);
  });

  it('says so, exit 2, when the API server cannot be reached', () => {
    const kubeconfig = writeUnreachableKubeconfig(dir);
    const r = diff(join(dir, 'web.yaml'), '--kubeconfig', kubeconfig);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^error: cannot reach the API server at https:\/\/127\.0\.0\.1:1/);
  });

  it('shows nothing for a resource whose children match, next to one that would be created', async () => {
    const custom = controlPlane().kubeConfig().makeApiClient(CustomObjectsApi);
    const both = `${appYaml(WEB)}---\n${appYaml('  replicas: 1\n', 'other')}`;
    const r = diff(file('both.yaml', both));
    assert.equal(r.status, 1, r.stderr);
    assert.ok(
      files(r.stdout).every((f) => f.includes('/other')),
      files(r.stdout).join('\n'),
    );
    await assert.rejects(
      custom.getNamespacedCustomObject({
        group: 'recon8s.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'apps',
        name: 'other',
      }),
      (e: { code?: number }) => e.code === 404,
    );
  });
});
