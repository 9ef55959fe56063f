import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AppsV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { HelmRelease, HelmValues } from '../../apps/helm-chart.js';
import { DEFAULT_HELM_VALUES, clusterScopedName, helmChart } from '../../apps/helm-chart.js';
import { operatorNames } from '../../constructs/index.js';
import { helmBinary } from '../helm/index.js';
import { eventually } from '../integration/eventually.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, freshRestrictedNamespace, useSharedNode } from './cluster.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';

interface Install {
  readonly release: HelmRelease;
  /** The one namespace it watches, where its App lives. */
  watched: string;
}

/**
 * The Helm chart (what `npm run synth` writes to dist/helm/recon8s) installed twice on the real node:
 * two releases with different names, in different namespaces, each watching its own namespace. Both
 * controllers run and each reconciles the App of its own namespace; a third release that would watch
 * a namespace already watched is refused; uninstalling both leaves nothing cluster-scoped but the CRDs
 * (which crds/ installs once and Helm never deletes). One replica each: the two-replica Deployment,
 * its Lease and its Pod Security are install.test.ts's.
 */
describe('two Helm releases of the operator on the real node', function () {
  this.timeout(180_000);
  const node = useSharedNode();
  const installs: Install[] = [
    { release: { name: 'recon8s-a', namespace: 'recon8s-helm-a' }, watched: '' },
    { release: { name: 'ops', namespace: 'recon8s-helm-b' }, watched: '' },
  ];
  let work = '';
  let helm = '';
  let chart = '';
  let clusterScopedBefore = new Set<string>();

  const clusterScoped = async (): Promise<Set<string>> => {
    const rbac = node().kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const [roles, bindings] = await Promise.all([rbac.listClusterRole(), rbac.listClusterRoleBinding()]);
    return new Set([
      ...roles.items.map((o) => `ClusterRole/${o.metadata?.name ?? ''}`),
      ...bindings.items.map((o) => `ClusterRoleBinding/${o.metadata?.name ?? ''}`),
    ]);
  };
  const runHelm = (args: readonly string[]): { status: number | null; stdout: string; stderr: string } =>
    spawnSync(helm, args, {
      encoding: 'utf8',
      timeout: 120_000,
      // Helm's caches and settings in the test's directory: the host is left as found.
      env: {
        ...process.env,
        KUBECONFIG: node().kubeconfigPath,
        HELM_CACHE_HOME: join(work, 'cache'),
        HELM_CONFIG_HOME: join(work, 'config'),
        HELM_DATA_HOME: join(work, 'data'),
      },
    });
  const install = (release: HelmRelease, values: HelmValues): ReturnType<typeof runHelm> => {
    const file = join(work, `${release.namespace}-${release.name}.yaml`);
    writeFileSync(file, stringify(values));
    return runHelm(['install', release.name, chart, '-n', release.namespace, '--create-namespace', '--values', file]);
  };
  const valuesFor = (watched: readonly string[]): HelmValues => ({
    ...DEFAULT_HELM_VALUES,
    image: node().images.operator,
    imagePullPolicy: 'Never',
    replicas: 1,
    resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '256Mi' } },
    watchedNamespaces: watched,
  });

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    helm = helmBinary();
    work = mkdtempSync(join(tmpdir(), 'recon8s-helm-e2e-'));
    // The chart as `npm run synth` writes it (apps/main.ts writes exactly these files).
    chart = join(work, 'recon8s');
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const [file, text] of Object.entries(helmChart(version))) {
      mkdirSync(dirname(join(chart, file)), { recursive: true });
      writeFileSync(join(chart, file), text);
    }
    clusterScopedBefore = await clusterScoped();
    for (const i of installs) i.watched = await freshRestrictedNamespace(node(), `${i.release.name}-apps`);
    // One after the other: the second release's guard looks at the first's Deployment.
    for (const i of installs) {
      const r = install(i.release, valuesFor([i.watched]));
      assert.equal(r.status, 0, `helm install ${i.release.name}: ${r.stderr}`);
    }
  });
  after(async function () {
    this.timeout(120_000);
    for (const i of installs) runHelm(['uninstall', i.release.name, '-n', i.release.namespace, '--wait']);
    for (const i of installs) {
      await discardNamespace(node(), i.watched);
      await discardNamespace(node(), i.release.namespace);
    }
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('runs both controllers, each in its release namespace under its release name', async () => {
    const apps = node().kubeConfig().makeApiClient(AppsV1Api);
    // Their cluster-scoped objects: new, and named apart; one ClusterRoleBinding each, of the read-only
    // node reader (Nodes and PersistentVolumes have no namespace); each watches one namespace: its
    // ClusterRole is bound there alone, by a RoleBinding.
    const added = [...(await clusterScoped())].filter((o) => !clusterScopedBefore.has(o)).sort();
    assert.deepEqual(
      added,
      installs
        .map(({ release }) => operatorNames(release.name, clusterScopedName(release)))
        .flatMap((n) => [
          `ClusterRole/${n.clusterRole}`,
          `ClusterRole/${n.credentialsRole}`,
          `ClusterRole/${n.nodeReaderRole}`,
          `ClusterRoleBinding/${n.nodeReaderRole}`,
        ])
        .sort(),
    );
    const rbac = node().kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    for (const { release, watched } of installs) {
      const n = operatorNames(release.name, clusterScopedName(release));
      const binding = await rbac.readNamespacedRoleBinding({ namespace: watched, name: n.clusterRole });
      assert.equal(binding.roleRef.name, n.clusterRole);
      assert.deepEqual(
        binding.subjects?.map((s) => `${s.kind}/${s.namespace ?? ''}/${s.name}`),
        [`ServiceAccount/${release.namespace}/${release.name}`],
      );
    }
    await Promise.all(
      installs.map(({ release }) =>
        eventually(
          async () => {
            const d = await apps.readNamespacedDeployment({ namespace: release.namespace, name: release.name });
            assert.equal(d.status?.availableReplicas, 1, JSON.stringify(d.status?.conditions));
            const args = d.spec?.template.spec?.containers[0]?.args ?? [];
            assert.ok(args.includes(`--leader-election-id=${operatorNames(release.name).leaderElectionLease}`));
          },
          {
            timeoutMs: 120_000,
            maxIntervalMs: 1000,
            description: `Deployment ${release.namespace}/${release.name} available`,
          },
        ),
      ),
    );
  });

  it('reconciles an App in each watched namespace, by the controller that watches it', async () => {
    const custom = node().kubeConfig().makeApiClient(CustomObjectsApi);
    await Promise.all(
      installs.map(async ({ release, watched }) => {
        await custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: watched,
          plural: 'apps',
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: 'App',
            metadata: { name: 'web' },
            spec: {
              image: node().images.web,
              imagePullPolicy: 'Never',
              replicas: 1,
              ports: [{ name: 'http', port: 80, targetPort: 8080 }],
              resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
            },
          },
        });
        await eventually(
          async () => {
            const cr = (await custom.getNamespacedCustomObject({
              group: GROUP,
              version: VERSION,
              namespace: watched,
              plural: 'apps',
              name: 'web',
            })) as { status?: { conditions?: { type: string; status: string }[] } };
            const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
            assert.equal(ready?.status, 'True', JSON.stringify(cr.status?.conditions));
          },
          {
            timeoutMs: 120_000,
            maxIntervalMs: 2000,
            description: `App ${watched}/web Ready (release ${release.name})`,
          },
        );
      }),
    );
    // Who applied what: each controller's log names only the namespace it watches.
    for (const { release, watched } of installs) {
      const { stdout } = await node().kubectl(['logs', '-n', release.namespace, `deployment/${release.name}`]);
      const applied = stdout
        .split('\n')
        .filter((l) => l.includes('"msg":"applied"'))
        .map((l) => (JSON.parse(l) as { namespace?: string }).namespace);
      assert.ok(applied.length > 0, `${release.name} applied nothing:\n${stdout.slice(-2000)}`);
      assert.deepEqual([...new Set(applied)], [watched], `${release.name} applies only in ${watched}`);
    }
  });

  it('refuses a third release that would watch a namespace another controller watches, or every namespace', () => {
    const [a, b] = installs;
    assert.ok(a && b);
    const third: HelmRelease = { name: 'recon8s-c', namespace: b.release.namespace };
    const overlap = install(third, valuesFor([`${b.watched}-other`, a.watched]));
    assert.notEqual(overlap.status, 0, 'an overlapping release is refused');
    assert.match(
      overlap.stderr,
      new RegExp(
        `watchedNamespaces: ${a.watched} is watched by the recon8s controller ${a.release.namespace}/${a.release.name} already`,
      ),
    );
    const everything = install(third, valuesFor([]));
    assert.notEqual(everything.status, 0, 'a release watching every namespace is refused');
    assert.match(everything.stderr, /watchedNamespaces is empty \(every namespace\), but the recon8s controller/);
    assert.notEqual(runHelm(['status', third.name, '-n', third.namespace]).status, 0, 'no release recorded');
  });

  it('uninstalls both, leaving nothing cluster-scoped but the CRDs', async () => {
    for (const { release } of installs) {
      const r = runHelm(['uninstall', release.name, '-n', release.namespace, '--wait']);
      assert.equal(r.status, 0, r.stderr);
    }
    const left = [...(await clusterScoped())].filter((o) => !clusterScopedBefore.has(o));
    assert.deepEqual(left, [], 'ClusterRoles and ClusterRoleBindings the releases left');
    const crds = await node().kubectl(['get', 'crd', `apps.${GROUP}`, `mysqlclusters.${GROUP}`, '-o', 'name']);
    assert.equal(crds.stdout.trim().split('\n').length, 2, 'the CRDs stay');
  });
});
