import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { EXAMPLE_DB, EXAMPLE_WEB, EXAMPLE_WEB_GRANT } from '../../apps/examples.js';
import { InvalidSpecError, render } from '../../constructs/index.js';
import type { KubernetesObject, Recon8sResource } from '../../constructs/index.js';
import { runSynth } from '../support/run.js';

const key = (o: { kind: string; metadata: { name: string } }): string => `${o.kind}/${o.metadata.name}`;
const byKey = (objects: readonly KubernetesObject[]): Map<string, KubernetesObject> =>
  new Map(objects.map((o) => [key(o), o]));

interface Env {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: unknown };
}

/** Every `env` entry of every container anywhere in the objects. */
function envVars(value: unknown): Env[] {
  if (Array.isArray(value)) return value.flatMap(envVars);
  if (!value || typeof value !== 'object') return [];
  const o = value as Record<string, unknown>;
  const own = Array.isArray(o.env) ? (o.env as Env[]) : [];
  return [...own, ...Object.values(o).flatMap(envVars)];
}

/** Every string value anywhere in the objects. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

/** Untyped input, as the CLI and the controller have it: render() validates it anyway. */
const renderUntyped = (input: unknown): KubernetesObject[] => render(input as Recon8sResource);

describe('render()', () => {
  const web = {
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'web', namespace: 'example' },
    // The example grants it the database: its own account, never root's.
    spec: {
      ...EXAMPLE_WEB,
      database: { cluster: 'db', name: EXAMPLE_WEB_GRANT.database, access: EXAMPLE_WEB_GRANT.access ?? 'readWrite' },
    },
  } as const;
  const db = {
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'MySQLCluster',
    metadata: { name: 'db', namespace: 'example' },
    spec: EXAMPLE_DB,
  } as const;

  it('has the example as resources in examples/, equal to the constructs example', () => {
    const read = (file: string): unknown =>
      parseAllDocuments(readFileSync(new URL(`../../examples/${file}`, import.meta.url), 'utf8'))[0]?.toJS();
    assert.deepEqual(read('app.yaml'), web);
    assert.deepEqual(read('mysqlcluster.yaml'), db);
  });

  describe('parity with cdk8s synth', () => {
    let outdir: string;
    let synthesized: KubernetesObject[];
    before(function () {
      this.timeout(120_000);
      outdir = mkdtempSync(join(tmpdir(), 'recon8s-synth-'));
      const r = runSynth(outdir);
      assert.equal(r.status, 0, r.stderr);
      synthesized = parseAllDocuments(readFileSync(join(outdir, 'example.k8s.yaml'), 'utf8')).map(
        (d) => d.toJS() as KubernetesObject,
      );
    });
    after(() => rmSync(outdir, { recursive: true, force: true }));

    it('synthesizes the granted web App as the App resource, whose objects come only through render()', () => {
      const synth = byKey(synthesized);
      assert.deepEqual(synth.get('App/web'), web);
      const rendered = render(web);
      assert.ok(rendered.some((o) => o.kind === 'Deployment'));
      for (const o of rendered) assert.equal(synth.has(key(o)), false, `${key(o)} was synthesized`);
    });

    it('synthesizes a MySQLCluster as the resource the controller renders, its objects only through render()', () => {
      // A MySQLCluster is a database only with the controller that elects its primary: synth gives the
      // resource, and render() of it what the controller applies.
      const synth = byKey(synthesized);
      assert.deepEqual(synth.get('MySQLCluster/db'), db);
      const dbObjects = render(db);
      assert.ok(dbObjects.some((o) => o.kind === 'StatefulSet'));
      for (const o of dbObjects) assert.equal(synth.has(key(o)), false, `${key(o)} was synthesized`);
      assert.deepEqual([...synth.keys()].sort(), ['App/web', 'MySQLCluster/db', 'PersistentVolumeClaim/db-backups']);
    });

    it('writes no Secret, and every password variable comes from a secretKeyRef', () => {
      // Every manifest file, the operator install (install.yaml) included; the Helm chart is install.yaml templated (helm-chart.test.ts).
      const files = readdirSync(outdir, { recursive: true, encoding: 'utf8' }).filter(
        (f) => f.endsWith('.yaml') && !f.startsWith('helm'),
      );
      const docs = files.flatMap((f) =>
        parseAllDocuments(readFileSync(join(outdir, f), 'utf8')).map((d) => d.toJS() as KubernetesObject),
      );
      assert.ok(!docs.some((o) => o.kind === 'Secret'));
      // And what the controller renders from the resources (the example App's DB_PASSWORD).
      const renderedDocs = docs
        .filter((o) => o.kind === 'App' || o.kind === 'MySQLCluster')
        .flatMap((o) => render(o as never));
      const envs = envVars([...docs, ...renderedDocs]).filter((e) => /PASSWORD|SECRET|TOKEN/i.test(e.name));
      assert.ok(envs.length > 0, 'expected password variables to be wired');
      for (const e of envs) {
        assert.equal(e.value, undefined, `${e.name} has a literal value`);
        assert.ok(e.valueFrom?.secretKeyRef, `${e.name} does not come from a Secret`);
      }
    });
  });

  it('is deterministic: the same input gives byte-identical output', () => {
    assert.equal(JSON.stringify(render(db)), JSON.stringify(render(db)));
    assert.equal(JSON.stringify(render(web)), JSON.stringify(render(web)));
  });

  it('does not depend on the environment (cdk8s reads CDK8S_DISABLE_SORT)', () => {
    const before = JSON.stringify(render(db));
    process.env.CDK8S_DISABLE_SORT = '1';
    try {
      assert.equal(JSON.stringify(render(db)), before);
    } finally {
      delete process.env.CDK8S_DISABLE_SORT;
    }
  });

  it('puts every child in the resource namespace with the managed-by label', () => {
    for (const o of [...render(web), ...render(db)]) {
      assert.equal(o.metadata.namespace, 'example', key(o));
      assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'recon8s', key(o));
    }
  });

  it('references passwords only through secretKeyRef', () => {
    const out = render(db);
    assert.ok(!out.some((o) => o.kind === 'Secret'));
    const envs = strings(out).filter((s) => /PASSWORD/.test(s));
    assert.ok(envs.length > 0, 'expected password variables to be wired');
    const json = JSON.stringify(out);
    for (const m of json.matchAll(/"name":"(MYSQL_[A-Z_]*PASSWORD)"(,"value":)?/g))
      assert.equal(m[2], undefined, `${m[1]} has a literal value`);
  });

  it('renders a resource without a namespace for the namespace of whoever applies it', () => {
    const out = render({ ...web, metadata: { name: 'web' } });
    assert.ok(out.every((o) => o.metadata.namespace === undefined));
  });

  it('fails with every problem of an invalid resource listed', () => {
    assert.throws(
      () =>
        renderUntyped({
          apiVersion: 'recon8s.dev/v1alpha1',
          kind: 'App',
          metadata: { name: 'web' },
          spec: { replicas: -1 },
        }),
      (e: unknown) => {
        assert.ok(e instanceof InvalidSpecError);
        const text = e.message;
        assert.match(text, /spec\.image: missing, expected .*\(required\)/);
        assert.match(text, /spec\.replicas: got -1, expected an integer from 0 to 1000/);
        return true;
      },
    );
  });

  it('fails on an unknown kind or apiVersion, naming them', () => {
    assert.throws(
      () => renderUntyped({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' }, spec: {} }),
      /kind: got "Pod", expected one of "App", "MySQLCluster"/,
    );
    assert.throws(
      () => renderUntyped({ apiVersion: 'recon8s.dev/v1', kind: 'App', metadata: { name: 'x' }, spec: { image: 'x' } }),
      /apiVersion: got "recon8s.dev\/v1", expected "recon8s.dev\/v1alpha1"/,
    );
  });

  it('fails when the name is missing', () => {
    assert.throws(
      () => renderUntyped({ apiVersion: 'recon8s.dev/v1alpha1', kind: 'App', metadata: {}, spec: { image: 'x' } }),
      /metadata\.name: missing, expected a non-empty name/,
    );
  });
});
