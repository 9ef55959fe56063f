// A MySQLCluster's life on the real node beyond its steady state: scaling out (new members clone and
// replicate) and back. (Backup-to-restore and delete-and-re-create are next: a restored dump was seen
// not to reach the restored cluster's replica, a product bug to fix first.)
import assert from 'node:assert/strict';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/manager.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import { NODE_HOOK_TIMEOUT_MS, freshRestrictedNamespace, useSharedNode } from './cluster.js';
import { mustSql } from './support/mysql-members.js';

const NAME = 'db';
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
/** The first start of a 3-member cluster takes 40-60 s on 2 cores; each cloned member 20-40 s. */
const BOOTSTRAP_MS = 5 * 60_000;
const members = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${name}-${i}`);

interface Condition { type: string; status: string }
interface MySQLClusterObject { status?: { readyReplicas?: number; conditions?: Condition[] } }

describe('MySQLCluster lifecycle on a real node (MySQL 9.7)', function () {
  this.timeout(2 * BOOTSTRAP_MS);
  const node = useSharedNode();
  let kc: KubeConfig;
  let ns: string;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;

  const sql = (pod: string, text: string) => mustSql(kc, ns, pod, text);
  const pod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ namespace: ns, name });
  const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const podExists = async (name: string) => (await core.listNamespacedPod({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items.length > 0;
  const cluster = async (name: string) => (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as MySQLClusterObject;
  const setReplicas = (replicas: number) => custom.patchNamespacedCustomObject(
    { ...GROUP, namespace: ns, name: NAME, body: { spec: { replicas } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );

  function createCluster(name: string, replicas: number) {
    return custom.createNamespacedCustomObject({
      ...GROUP, namespace: ns,
      body: {
        apiVersion: 'recon8s.dev/v1alpha1', kind: 'MySQLCluster', metadata: { name },
        spec: {
          version: '9.7', image: node().images.mysql, imagePullPolicy: 'Never', replicas,
          storage: { size: '1Gi' },
          resources: { requests: { cpu: '100m', memory: '384Mi' }, limits: { memory: '1Gi' } },
        },
      },
    });
  }
  const createMain = () => createCluster(NAME, 3);

  /** Every member Ready, and the MySQLCluster saying so. */
  async function allReady(name: string, n: number, timeoutMs = BOOTSTRAP_MS): Promise<void> {
    const started = Date.now();
    await eventually(async () => {
      for (const m of members(name, n)) assert.ok(isReady(await pod(m)), `${m} is not ready`);
      const cr = await cluster(name);
      assert.equal(cr.status?.readyReplicas, n);
      assert.equal(cr.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    }, { timeoutMs, intervalMs: 1000, maxIntervalMs: 2000, description: `${members(name, n).join(', ')} Ready` });
    console.log(`      ${name}: ${n} members Ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  /** The rows of the test table on a member, once it has them all. */
  async function rowsOn(member: string, expected: string): Promise<void> {
    await eventually(async () => assert.equal(await sql(member, 'SELECT GROUP_CONCAT(id ORDER BY id) FROM e2e.t'), expected), {
      timeoutMs: 60_000, intervalMs: 500, maxIntervalMs: 2000, description: `rows ${expected} on ${member}`,
    });
  }

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    ns = await freshRestrictedNamespace(node(), 'mysql-lifecycle');
    controller = await startTestController(node(), { namespaces: [ns], resyncPeriodMs: 30_000 });
    await createMain();
    await allReady(NAME, 3);
    await sql(`${NAME}-0`, 'CREATE DATABASE e2e; CREATE TABLE e2e.t (id INT PRIMARY KEY, note VARCHAR(64)); INSERT INTO e2e.t VALUES (1, "before scaling")');
  });
  after(async () => { await controller?.stop(); });

  it('scales 3→5 (the new members clone and replicate) and back to 3, staying Ready with every row', async () => {
    await setReplicas(5);
    await allReady(NAME, 5);
    await sql(`${NAME}-0`, 'INSERT INTO e2e.t VALUES (2, "after scaling out")');
    // Row 1 was written before members 3 and 4 existed (they got it by clone), row 2 after (by replication).
    for (const m of [`${NAME}-3`, `${NAME}-4`]) {
      await rowsOn(m, '1,2');
      assert.equal(await sql(m, 'SELECT @@GLOBAL.super_read_only'), '1', `${m} is a read-only replica`);
    }

    await setReplicas(3);
    await eventually(async () => {
      assert.equal(await podExists(`${NAME}-4`), false);
      assert.equal(await podExists(`${NAME}-3`), false);
    }, { timeoutMs: BOOTSTRAP_MS, intervalMs: 1000, description: `${NAME}-3 and ${NAME}-4 gone` });
    await allReady(NAME, 3);
    await sql(`${NAME}-0`, 'INSERT INTO e2e.t VALUES (3, "after scaling back")');
    for (const m of members(NAME, 3)) await rowsOn(m, '1,2,3');
  });
});
