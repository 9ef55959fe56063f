import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { RunResult } from '../support/run.js';
import { REPO_ROOT, runCli } from '../support/run.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { installCrds } from './support/controller.js';
import { writeUnreachableKubeconfig } from './support/unreachable.js';

/**
 * runCli without blocking this process, so that a test can act on the cluster while the CLI waits;
 * `stdout()` is what it printed so far.
 */
function runCliAsync(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): { readonly done: Promise<RunResult>; readonly stdout: () => string } {
  let stdout = '';
  const done = new Promise<RunResult>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${REPO_ROOT}lib/cli/main.ts`, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
  return { done, stdout: () => stdout };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface AppObject {
  metadata: { generation: number; managedFields?: { manager?: string }[] };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

describe('recon8s apply (real API server)', function () {
  // Generous: beside the end-to-end lanes a reconcile and the CLI's own start take seconds each.
  this.timeout(180_000);
  const controlPlane = useSharedControlPlane();
  let ns: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const appYaml = (name: string, replicas: number): string => `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata: { name: ${name}, namespace: ${ns} }
spec:
  image: nginx:1.27
  replicas: ${replicas}
  ports: [{ name: http, port: 8080, targetPort: 80 }]
`;
  const getApp = async (name: string): Promise<AppObject> =>
    (await custom.getNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name,
    })) as AppObject;
  /** What a Deployment controller would report for a finished rollout (none runs in this control plane). */
  const markRolledOut = async (name: string): Promise<void> => {
    const d = await apps.readNamespacedDeployment({ namespace: ns, name });
    const replicas = d.spec?.replicas ?? 1;
    await apps.patchNamespacedDeploymentStatus(
      {
        namespace: ns,
        name,
        body: {
          status: {
            observedGeneration: d.metadata?.generation,
            replicas,
            updatedReplicas: replicas,
            readyReplicas: replicas,
            availableReplicas: replicas,
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };

  before(async function () {
    this.timeout(120_000);
    await installCrds(controlPlane());
    ns = await freshNamespace('cli-apply');
    dir = mkdtempSync(join(tmpdir(), 'recon8s-cli-apply-'));
    env = { KUBECONFIG: controlPlane().kubeconfigPath };
    apps = controlPlane().kubeConfig().makeApiClient(AppsV1Api);
    custom = controlPlane().kubeConfig().makeApiClient(CustomObjectsApi);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('applies the App, converges it and waits until it is Ready, printing progress (exit 0)', async () => {
    const running = runCliAsync(['apply', '-f', file('web.yaml', appYaml('web', 2)), '--timeout', '120s'], env);
    // The rollout a kubelet and a Deployment controller would do, once the CLI has created the Deployment
    // and said that the App is progressing (rolled out before, the App would go straight to Ready).
    await eventually(() => apps.readNamespacedDeployment({ namespace: ns, name: 'web' }), {
      timeoutMs: 60_000,
      description: 'the CLI to create Deployment web',
    });
    await eventually(() => assert.match(running.stdout(), /^app\/web: Progressing/m), {
      timeoutMs: 60_000,
      description: 'the CLI to print that app/web is progressing',
    });
    await markRolledOut('web');
    const r = await running.done;
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal(r.stderr, '');
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines[0], 'app/web created');
    assert.match(r.stdout, /^app\/web: Progressing \((Creating|RollingOut): .+\)$/m);
    assert.equal(lines.at(-1), 'app/web: Ready (Available: 2/2 replicas available)');
    // Each state is printed once, when it changes.
    assert.equal(new Set(lines).size, lines.length, r.stdout);
    const cr = await getApp('web');
    assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
    assert.ok(
      cr.metadata.managedFields?.some((m) => m.manager === 'recon8s-cli'),
      'the App is applied as recon8s-cli',
    );
    const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'web' });
    assert.ok(
      d.metadata?.managedFields?.some((m) => m.manager === 'recon8s'),
      'children are applied as the controller, recon8s',
    );
    assert.equal(d.metadata?.ownerReferences?.[0]?.name, 'web');
  });

  it('says "unchanged" and returns at once for an App that is already Ready', () => {
    const r = runCli(['apply', '-f', join(dir, 'web.yaml'), '--timeout', '120s'], { env });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), [
      'app/web unchanged',
      'app/web: Ready (Available: 2/2 replicas available)',
    ]);
  });

  it('times out with exit 1 naming what is not ready and why (the Ready condition)', () => {
    // Created and reconciled first: the timeout then reports the Ready condition, however long the
    // first reconcile takes on a loaded machine (it once took more than the 4 s this test waited).
    const created = runCli(['apply', '-f', file('never.yaml', appYaml('never', 1)), '--no-wait'], { env });
    assert.equal(created.status, 0, created.stderr);
    assert.match(created.stdout, /^app\/never created$/m);
    const r = runCli(['apply', '-f', file('never.yaml', appYaml('never', 1)), '--timeout', '5s'], { env });
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stderr,
      /^error: timed out after 5s waiting for 1 of 1 resource to be ready:\n {2}app\/never: Ready=False \(Unavailable: 0\/1 updated replicas available \(0 updated\)\)\n$/,
    );
  });

  it('returns after one reconcile with --no-wait, the children in place', async () => {
    const r = runCli(['apply', '-f', file('quick.yaml', appYaml('quick', 1)), '--no-wait'], { env });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^app\/quick created$/m);
    assert.match(r.stdout, /not waiting/);
    await apps.readNamespacedDeployment({ namespace: ns, name: 'quick' });
  });

  it('reconciles only the resources of the file', async () => {
    // An App created by someone else in the same namespace, with no controller running.
    await custom.createNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'bystander' },
        spec: { image: 'nginx' },
      },
    });
    const r = runCli(['apply', '-f', join(dir, 'quick.yaml'), '--no-wait'], { env });
    assert.equal(r.status, 0, r.stderr);
    await assert.rejects(
      apps.readNamespacedDeployment({ namespace: ns, name: 'bystander' }),
      (e: { code?: number }) => e.code === 404,
    );
  });

  it('refuses an invalid resource with exit 2 before sending anything', async () => {
    const r = runCli(
      [
        'apply',
        '-f',
        file('invalid.yaml', `${appYaml('bad', 1)}---\n${appYaml('good', 1)}`.replace('replicas: 1', 'replicas: 1001')),
      ],
      { env },
    );
    assert.equal(r.status, 2);
    assert.match(r.stderr, /App "bad" is invalid:\n {2}- spec\.replicas: got 1001/);
    await assert.rejects(getApp('good'), (e: { code?: number }) => e.code === 404);
  });

  it('fails with exit 2 on a bad option, and when the API server cannot be reached', () => {
    const bad = runCli(['apply', '-f', join(dir, 'web.yaml'), '--timeout', 'soon'], { env });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--timeout must be a duration/);
    const kubeconfig = writeUnreachableKubeconfig(dir);
    const r = runCli(['apply', '-f', join(dir, 'web.yaml'), '--kubeconfig', kubeconfig], { env });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^error: cannot reach the API server at https:\/\/127\.0\.0\.1:1/);
  });
});
