// The project's example (docs/controller.md), as a cdk8s user runs it: `cdk8s synth`, then `kubectl apply` of the CRDs and
// of dist/example.k8s.yaml where the controller runs. The database the user gets must take writes,
// and go on taking them after its primary is lost; the web App must run beside it on the node.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { Connection } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import { parseAllDocuments } from 'yaml';
import type { Controller } from '../../lib/controller/manager.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import { runSynth } from '../support/run.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, useSharedNode } from './cluster.js';

/** The example's own namespace (apps/main.ts): the file is applied as written, namespace included. */
const NS = 'example';
const BOOTSTRAP_MS = 6 * 60_000;

interface Cluster {
  status?: {
    currentPrimary?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

describe('the example (docs/controller.md) on the real node: synthesized, applied, written to, its primary lost', function () {
  this.timeout(BOOTSTRAP_MS);
  const node = useSharedNode();
  let kc: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;
  let outdir: string;
  let password = '';

  const cluster = async (): Promise<Cluster> =>
    (await custom.getNamespacedCustomObject({
      group: 'recon8s.dev',
      version: 'v1alpha1',
      plural: 'mysqlclusters',
      namespace: NS,
      name: 'db',
    })) as Cluster;

  /** Runs statements through the Service `db-primary`, as the App's DB_HOST does. */
  async function throughPrimary(sql: string, values: unknown[] = []): Promise<unknown> {
    const service = await core.readNamespacedService({ namespace: NS, name: 'db-primary' });
    let c: Connection | undefined;
    try {
      c = await createConnection({
        host: service.spec?.clusterIP,
        port: 3306,
        user: 'root',
        password,
        ssl: { rejectUnauthorized: false },
        connectTimeout: 3000,
      });
      const [rows] = await c.query({ sql, values, timeout: 10_000 });
      return rows;
    } finally {
      c?.destroy();
    }
  }

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    outdir = mkdtempSync(join(tmpdir(), 'recon8s-example-'));
    const synth = runSynth(outdir);
    assert.equal(synth.status, 0, synth.stderr);
    await node().kubectl(['create', 'namespace', NS]);
    await node().kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=restricted']);
    controller = await startTestController(node(), { namespaces: [NS], resyncPeriodMs: 30_000 });
  });
  after(async () => {
    await controller?.stop();
    await discardNamespace(node(), NS);
    if (outdir) rmSync(outdir, { recursive: true, force: true });
  });

  it('synthesizes the database as the MySQLCluster resource, which kubectl applies with the CRDs', async () => {
    const example = readFileSync(join(outdir, 'example.k8s.yaml'), 'utf8');
    const kinds = parseAllDocuments(example).map((d) => (d.toJS() as { kind: string }).kind);
    assert.ok(kinds.includes('MySQLCluster') && !kinds.includes('StatefulSet'), kinds.join(', '));
    await node().kubectl(['apply', '--server-side', '-f', join(outdir, 'crds.k8s.yaml')]);
    await node().kubectl(['apply', '-f', join(outdir, 'example.k8s.yaml')]);
  });

  it('becomes a database that takes writes through db-primary, with the password from db-credentials', async () => {
    await eventually(
      async () => {
        const ready = (await cluster()).status?.conditions?.find((c) => c.type === 'Ready');
        assert.equal(ready?.status, 'True', JSON.stringify((await cluster()).status?.conditions));
      },
      { timeoutMs: BOOTSTRAP_MS - 60_000, intervalMs: 2000, description: 'MySQLCluster db Ready' },
    );
    const secret = await core.readNamespacedSecret({ namespace: NS, name: 'db-credentials' });
    password = Buffer.from(secret.data?.['root-password'] ?? '', 'base64').toString('utf8');
    await eventually(() => throughPrimary('CREATE DATABASE IF NOT EXISTS shop'), {
      timeoutMs: 60_000,
      intervalMs: 1000,
      description: 'a first write',
    });
    await throughPrimary('CREATE TABLE shop.orders (id INT PRIMARY KEY)');
    await throughPrimary('INSERT INTO shop.orders VALUES (1)');
  });

  it('runs the web App beside it: both replicas available, reading the password the controller generated', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    await eventually(
      async () => {
        const d = await apps.readNamespacedDeployment({ namespace: NS, name: 'web' });
        assert.equal(d.status?.availableReplicas, 2, JSON.stringify(d.status?.conditions));
      },
      { timeoutMs: 120_000, intervalMs: 2000, description: 'Deployment web available' },
    );
  });

  it('takes writes again after its primary pod is force-deleted, and keeps what it acknowledged', async () => {
    const lost = (await cluster()).status?.currentPrimary ?? '';
    assert.match(lost, /^db-\d$/);
    await node().kubectl(['delete', 'pod', '-n', NS, lost, '--grace-period=0', '--force']);
    await eventually(() => throughPrimary('INSERT INTO shop.orders VALUES (2)'), {
      timeoutMs: 180_000,
      intervalMs: 1000,
      description: 'a write after the primary was lost',
    });
    assert.deepEqual(await throughPrimary('SELECT id FROM shop.orders ORDER BY id'), [{ id: 1 }, { id: 2 }]);
  });
});
