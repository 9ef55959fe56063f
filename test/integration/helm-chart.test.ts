// The Helm chart `npm run synth` writes (dist/helm/recon8s) is the OperatorChart construct in another
// form: `helm template`, for several releases (name, namespace) and value sets, renders it to exactly
// the objects the construct synthesizes with the same settings. The CRDs sit in crds/, which
// `helm uninstall` never deletes. No cluster needed; helm is built once per machine (test/helm).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Testing } from 'cdk8s';
import { parseAllDocuments, stringify } from 'yaml';
import { DEFAULT_HELM_VALUES, propsFor } from '../../apps/helm-chart.js';
import type { HelmRelease, HelmValues } from '../../apps/helm-chart.js';
import { OperatorChart } from '../../constructs/index.js';
import { helmBinary } from '../helm/index.js';
import { runSynth } from '../support/run.js';

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
}
const key = (o: Doc): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKey = (docs: readonly Doc[]): Map<string, Doc> =>
  new Map([...docs].sort((a, b) => key(a).localeCompare(key(b))).map((d) => [key(d), d]));

describe('the Helm chart (dist/helm/recon8s), generated from the OperatorChart construct', function () {
  this.timeout(120_000);
  let helm = '';
  let work = '';
  let chart = '';

  before(function () {
    this.timeout(40 * 60_000); // a first run builds helm
    helm = helmBinary();
    work = mkdtempSync(join(tmpdir(), 'recon8s-helm-'));
    const r = runSynth(join(work, 'dist'));
    assert.equal(r.status, 0, r.stderr);
    chart = join(work, 'dist', 'helm', 'recon8s');
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const DEFAULT_RELEASE: HelmRelease = { name: 'recon8s', namespace: 'recon8s-system' };
  const template = (
    release: HelmRelease,
    values?: HelmValues,
  ): { status: number | null; stdout: string; stderr: string } => {
    const args = ['template', release.name, chart, '--namespace', release.namespace, '--include-crds'];
    if (values) {
      const file = join(work, 'values.yaml');
      writeFileSync(file, stringify(values));
      args.push('--values', file);
    }
    return spawnSync(helm, args, { encoding: 'utf8', timeout: 60_000 });
  };
  const render = (release: HelmRelease, values?: HelmValues): Map<string, Doc> => {
    const r = template(release, values);
    assert.equal(r.status, 0, r.stderr);
    return byKey(
      parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as Doc)
        .filter((d) => d !== null),
    );
  };
  const construct = (values: HelmValues, release: HelmRelease): Map<string, Doc> =>
    byKey(Testing.synth(new OperatorChart(new App(), 'install', propsFor(values, release))) as Doc[]);
  const sameObjects = (release: HelmRelease, values?: HelmValues): Map<string, Doc> => {
    const rendered = render(release, values);
    const expected = construct(values ?? DEFAULT_HELM_VALUES, release);
    const what = `release ${release.namespace}/${release.name} with ${JSON.stringify(values ?? 'the default values')}`;
    assert.deepEqual([...rendered.keys()], [...expected.keys()], what);
    for (const [k, o] of expected) assert.deepEqual(rendered.get(k), o, `${k}: ${what}`);
    return rendered;
  };

  it('passes helm lint', () => {
    const r = spawnSync(helm, ['lint', chart, '--strict'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  });

  it("renders its default values to exactly the construct's objects, in the release's namespace and names", () => {
    for (const release of [DEFAULT_RELEASE, { name: 'team-a', namespace: 'ops' }, { name: '7', namespace: '42' }]) {
      const rendered = sameObjects(release);
      assert.ok(![...rendered.values()].some((o) => o.kind === 'Namespace'), '--create-namespace makes the namespace');
      assert.ok(rendered.has(`Deployment/${release.namespace}/${release.name}`));
      assert.ok(rendered.has(`ClusterRole//${release.namespace}:${release.name}`));
    }
  });

  it("renders custom values to exactly the construct's objects with the same props", () => {
    const custom: HelmValues = {
      image: 'registry.example.com/recon8s:9.9.9',
      imagePullPolicy: 'Always',
      imagePullSecrets: ['registry', 'mirror'],
      replicas: 1,
      resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } },
      nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'ops' },
      tolerations: [
        { key: 'dedicated', operator: 'Equal', value: 'ops', effect: 'NoSchedule' },
        { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
      ],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['ops'] }] }],
          },
        },
      },
      watchedNamespaces: ['shop', 'billing'],
      credentialsNamespaces: ['shop', 'billing'],
      appServiceAccounts: ['web', 'billing/*'],
      appSecrets: [],
      serviceMonitor: true,
      // Its rules hold Prometheus template text ({{ $labels.x }}), which Helm must write out as it is;
      // so do the dashboard's legends ({{pod}}).
      prometheusRule: true,
      podMonitor: true,
      grafanaDashboard: true,
    };
    for (const [release, values] of [
      [{ name: 'platform-recon8s', namespace: 'platform' }, custom],
      [DEFAULT_RELEASE, { ...custom, replicas: 3 }],
      [
        { name: 'shop-operator', namespace: 'shop' },
        { ...DEFAULT_HELM_VALUES, replicas: 3, credentialsNamespaces: ['shop'] },
      ],
      [
        { name: 'one', namespace: 'ops' },
        { ...DEFAULT_HELM_VALUES, replicas: 1, watchedNamespaces: ['a'], appSecrets: ['a/web-config'] },
      ],
    ] satisfies [HelmRelease, HelmValues][])
      sameObjects(release, values);
  });

  it('gives two releases no object in common (but the CRDs, which crds/ installs once), in one namespace or two', () => {
    const objects = (release: HelmRelease): string[] =>
      [
        ...render(release, {
          ...DEFAULT_HELM_VALUES,
          credentialsNamespaces: ['shop'],
          serviceMonitor: true,
          prometheusRule: true,
          podMonitor: true,
          grafanaDashboard: true,
        }).values(),
      ]
        .filter((o) => o.kind !== 'CustomResourceDefinition')
        .map(key);
    const first = objects(DEFAULT_RELEASE);
    for (const other of [
      { name: 'recon8s', namespace: 'team-b' },
      { name: 'recon8s-b', namespace: 'recon8s-system' },
    ]) {
      const second = new Set(objects(other));
      assert.deepEqual(
        first.filter((k) => second.has(k)),
        [],
        `${other.namespace}/${other.name}`,
      );
    }
  });

  it('fails on a release name that cannot name a Service, saying why', () => {
    const r = template({ name: 'team.a', namespace: 'ops' });
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /release name "team\.a": expected a DNS label \(it names a Deployment and the Service team\.a-metrics\)/,
    );
  });

  it('binds the ClusterRole by a RoleBinding in each watched namespace and nowhere else (cluster-wide only the read-only node reader), and refuses a credentials namespace it does not watch', () => {
    const scoped = render(DEFAULT_RELEASE, {
      ...DEFAULT_HELM_VALUES,
      watchedNamespaces: ['shop', 'billing'],
      credentialsNamespaces: ['shop'],
    });
    const clusterRole = 'recon8s-system:recon8s';
    assert.deepEqual(
      [...scoped.keys()].filter((k) => k.startsWith('ClusterRoleBinding/') || k.startsWith(`RoleBinding/`)).sort(),
      [
        `ClusterRoleBinding//${clusterRole}-node-reader`,
        `RoleBinding/billing/${clusterRole}`,
        `RoleBinding/recon8s-system/recon8s-leader-election`,
        `RoleBinding/shop/${clusterRole}`,
        `RoleBinding/shop/${clusterRole}-credentials`,
      ],
    );
    assert.ok(
      render(DEFAULT_RELEASE).has(`ClusterRoleBinding//${clusterRole}`),
      'watching all: the ClusterRoleBinding',
    );
    const r = template(DEFAULT_RELEASE, {
      ...DEFAULT_HELM_VALUES,
      watchedNamespaces: ['shop'],
      credentialsNamespaces: ['shop', 'billing'],
    });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /credentialsNamespaces: "billing" is not one of watchedNamespaces \(shop\)/);
  });

  it('fails on an App allow-list entry it cannot read, naming the value and the entry', () => {
    const r = template(DEFAULT_RELEASE, { ...DEFAULT_HELM_VALUES, appSecrets: ['shop/web', 'Shop/*'] });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /appSecrets: "Shop\/\*" is not an allow-list entry: expected "\*", "NAMESPACE\/\*"/);
  });

  it('keeps the CRDs in crds/ (installed, never deleted by helm uninstall), not in templates/', () => {
    const crds = parseAllDocuments(readFileSync(join(chart, 'crds', 'recon8s.dev.yaml'), 'utf8'))
      .map((d) => d.toJS() as Doc)
      .filter((d) => d !== null);
    assert.deepEqual(crds.map((d) => `${d.kind}/${d.metadata.name}`).sort(), [
      'CustomResourceDefinition/apps.recon8s.dev',
      'CustomResourceDefinition/mysqlclusters.recon8s.dev',
    ]);
    assert.doesNotMatch(
      readFileSync(join(chart, 'templates', 'install.yaml'), 'utf8'),
      /kind: CustomResourceDefinition/,
    );
  });
});
