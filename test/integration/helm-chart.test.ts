// The Helm chart `npm run synth` writes (dist/helm/recon8s) is the OperatorChart construct in another
// form: `helm template` renders it, with the default values and with custom ones, to exactly the
// objects the construct synthesizes with the same settings. The CRDs sit in crds/, which
// `helm uninstall` never deletes. No cluster needed; helm is built once per machine (test/helm).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Testing } from 'cdk8s';
import { parseAllDocuments, stringify } from 'yaml';
import { DEFAULT_HELM_VALUES, propsFor } from '../../apps/helm-chart.js';
import type { HelmValues } from '../../apps/helm-chart.js';
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

  const render = (values?: HelmValues): Map<string, Doc> => {
    const args = ['template', 'recon8s', chart, '--include-crds'];
    if (values) {
      const file = join(work, 'values.yaml');
      writeFileSync(file, stringify(values));
      args.push('--values', file);
    }
    const r = spawnSync(helm, args, { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    return byKey(
      parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as Doc)
        .filter((d) => d !== null),
    );
  };
  const construct = (values: HelmValues): Map<string, Doc> =>
    byKey(Testing.synth(new OperatorChart(Testing.app(), 'install', propsFor(values))) as Doc[]);

  it('passes helm lint', () => {
    const r = spawnSync(helm, ['lint', chart, '--strict'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  });

  it("renders its default values to exactly the construct's objects with default props", () => {
    const rendered = render();
    const expected = construct(DEFAULT_HELM_VALUES);
    assert.deepEqual([...rendered.keys()], [...expected.keys()]);
    for (const [k, o] of expected) assert.deepEqual(rendered.get(k), o, k);
  });

  it("renders custom values to exactly the construct's objects with the same props", () => {
    for (const values of [
      {
        namespace: 'platform',
        image: 'registry.example.com/recon8s:9.9.9',
        imagePullPolicy: 'Always',
        replicas: 1,
        resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } },
        watchedNamespaces: ['shop', 'billing'],
        credentialsNamespaces: ['shop', 'billing'],
        serviceMonitor: true,
      },
      { ...DEFAULT_HELM_VALUES, replicas: 3, credentialsNamespaces: ['shop'] },
    ] satisfies HelmValues[]) {
      const rendered = render(values);
      const expected = construct(values);
      assert.deepEqual([...rendered.keys()], [...expected.keys()], JSON.stringify(values));
      for (const [k, o] of expected) assert.deepEqual(rendered.get(k), o, `${k} with ${JSON.stringify(values)}`);
    }
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
