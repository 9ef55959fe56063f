// A MySQLCluster on the three-node rig (test/node/nodes.sh): one member per node
// (placement.spreadMembers: Required), the controller in this process as the other e2e files run it, a
// writer through <name>-primary and a sampler asking every member whether it is writable. The primary's
// node then loses power (its kubelet, containerd and mysqld die at once, its link goes down): a replica
// must be promoted within failoverAfterSeconds + 5 s, with every acknowledged row, and no two members
// may ever be writable or labelled primary. When the node boots again, the old primary must come back
// on it (its volume is node-local) as a replica holding the new primary's rows.
//
// This process is on the host, which routes every node's pod range but runs no kube-proxy (each node
// runs its own), so it reaches no cluster IP: the writer connects, at each connection, to the address
// the primary Service's EndpointSlices route to, which is what kube-proxy would pick.
import assert from 'node:assert/strict';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api } from '@kubernetes/client-node';
import type { RowDataPacket } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import type { Controller } from '../../lib/controller/controller.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import type { NodesCluster } from '../node/nodes.js';
import { startNodesCluster } from '../node/nodes.js';
import { E2E_OPT_OUT, NODE_HOOK_TIMEOUT_MS, freshRestrictedNamespace } from './cluster.js';
import type { ClusterObject } from './support/mysql-members.js';
import { mustSql, mysqlClusterResource, secondsSince } from './support/mysql-members.js';
import { RowWriter, dropConnection } from './support/row-writer.js';

const NAME = 'spread';
const MEMBERS = [0, 1, 2].map((i) => `${NAME}-${i}`);
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const FAILOVER_AFTER_SECONDS = 16;
const BOOTSTRAP_MS = 8 * 60_000;
const RECOVERY_MS = 3 * 60_000;

describe('MySQLCluster on three worker nodes, one member per node (MySQL 9.7)', function () {
  this.timeout(RECOVERY_MS + 60_000);
  let rig: NodesCluster | undefined;
  let kc: KubeConfig;
  let ns = '';
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let discovery: DiscoveryV1Api;
  let controller: Controller | undefined;
  let rootPassword = '';
  const running: RowWriter[] = [];
  const samplers: { stop: () => Promise<string[]> }[] = [];

  const the = (): NodesCluster => {
    assert.ok(rig, 'the rig is not up');
    return rig;
  };
  const sql = (member: string, text: string) => mustSql(kc, ns, member, text);
  const pod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ namespace: ns, name });
  const cluster = async () =>
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name: NAME })) as ClusterObject;
  const primary = async () => (await cluster()).status?.currentPrimary ?? '';

  /** Every member answers and serves: the primary writable, the others replicating from it. */
  async function healthy(timeoutMs: number): Promise<void> {
    await eventually(
      async () => {
        const status = (await cluster()).status;
        assert.equal(status?.members?.length, 3, JSON.stringify(status?.members));
        for (const m of status?.members ?? []) {
          assert.ok(m.reachable, `${m.name} answers`);
          if (m.name === status?.currentPrimary) assert.equal(m.role, 'primary');
          else assert.ok(m.role === 'replica' && m.replicating, `${m.name} replicates: ${JSON.stringify(m)}`);
        }
        for (const name of MEMBERS)
          assert.ok(
            (await pod(name)).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
            `${name} Ready`,
          );
      },
      { timeoutMs, intervalMs: 1000, description: 'every member serving' },
    );
  }

  /** The address <name>-primary routes to now: a ready endpoint of its EndpointSlices. */
  async function primaryServiceEndpoint(): Promise<string> {
    const slices = await discovery.listNamespacedEndpointSlice({
      namespace: ns,
      labelSelector: `kubernetes.io/service-name=${NAME}-primary`,
    });
    const ready = slices.items
      .flatMap((s) => s.endpoints ?? [])
      .filter((e) => e.conditions?.ready !== false)
      .flatMap((e) => e.addresses);
    if (ready.length === 0) throw new Error(`${NAME}-primary has no ready endpoint`);
    return ready[0] ?? '';
  }

  /** Watches for two writable members or two primary labels, every 300 ms, until stopped (as mysql-ha). */
  function sampler(): { stop: () => Promise<string[]> } {
    const violations: string[] = [];
    let stopped = false;
    const run = (async () => {
      while (!stopped) {
        const pods = (
          await core.listNamespacedPod({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${NAME}` })
        ).items;
        const labelled = pods.filter((p) => p.metadata?.labels?.['recon8s.dev/role'] === 'primary');
        if (labelled.length > 1)
          violations.push(`labelled primary: ${labelled.map((p) => p.metadata?.name).join(', ')}`);
        const writable: string[] = [];
        await Promise.all(
          pods.map(async (p) => {
            if (!p.status?.podIP) return;
            try {
              const c = await createConnection({
                host: p.status.podIP,
                port: 3306,
                user: 'root',
                password: rootPassword,
                ssl: { rejectUnauthorized: false },
                connectTimeout: 1000,
              });
              try {
                const [rows] = await c.query<RowDataPacket[]>({
                  sql: 'SELECT @@GLOBAL.read_only AS ro',
                  timeout: 2000,
                });
                if (Number(rows[0]?.ro) === 0) writable.push(p.metadata?.name ?? '');
              } finally {
                dropConnection(c);
              }
            } catch {
              // Not answering (its node is off): not writable.
            }
          }),
        );
        if (writable.length > 1) violations.push(`writable: ${writable.join(', ')}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    const handle = {
      stop: async () => {
        stopped = true;
        await run;
        return violations;
      },
    };
    samplers.push(handle);
    return handle;
  }

  before(async function () {
    if (E2E_OPT_OUT) {
      // As every end-to-end file: only by the developer's explicit choice, never in CI.
      if (process.env.CI === 'true')
        throw new Error('RECON8S_E2E=skip is set in CI (CI=true): the end-to-end tests must run there; unset it.');
      this.skip();
    }
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    rig = await startNodesCluster({ nodes: 3, images: ['mysql', 'operator'] });
    kc = rig.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    discovery = kc.makeApiClient(DiscoveryV1Api);
    ns = await freshRestrictedNamespace(rig, 'mysql-nodes');
    controller = await startTestController(rig, { namespaces: [ns], resyncPeriodMs: 30_000 });
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(rig.images.mysql, NAME, 3, {
        failoverAfterSeconds: FAILOVER_AFTER_SECONDS,
        placement: { spreadMembers: 'Required' },
      }),
    });
    await healthy(BOOTSTRAP_MS);
    const secret = await core.readNamespacedSecret({ namespace: ns, name: `${NAME}-credentials` });
    rootPassword = Buffer.from(secret.data?.['root-password'] ?? '', 'base64').toString('utf8');
    await sql(await primary(), 'CREATE DATABASE nodes; CREATE TABLE nodes.w (id INT PRIMARY KEY)');
  });

  afterEach(async () => {
    await Promise.all([...running.splice(0).map((w) => w.stop()), ...samplers.splice(0).map((s) => s.stop())]);
  });

  after(async function () {
    this.timeout(10 * 60_000);
    await controller?.stop();
    await rig?.stop();
  });

  it('runs one member on each node, each on a volume of its own node', async () => {
    const placed = await Promise.all(MEMBERS.map(async (m) => (await pod(m)).spec?.nodeName ?? ''));
    assert.deepEqual([...placed].sort(), [...the().nodes], `members on ${placed.join(', ')}`);
    for (const [i, member] of MEMBERS.entries()) {
      const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: `data-${member}` });
      const volume = claim.spec?.volumeName ?? '';
      assert.ok(volume.startsWith(`${placed[i]}-pv-`), `${member} on ${placed[i]} is bound to ${volume}`);
    }
  });

  /** What the power-off test leaves for the next: the node powered off and the member that was primary on it. */
  let poweredOff: { node: string; member: string } | undefined;

  it(`promotes a replica within failoverAfterSeconds + 5 s when the primary's node powers off, losing no acknowledged row and never two writable`, async () => {
    const old = await primary();
    const node = (await pod(old)).spec?.nodeName ?? '';
    assert.ok(the().nodes.includes(node), `${old} runs on ${node}`);
    const writer = new RowWriter({ host: primaryServiceEndpoint, password: rootPassword, table: 'nodes.w', first: 1 });
    running.push(writer);
    writer.start();
    await writer.more(20, 30_000, 'before the power off');
    const watch = sampler();

    const poweredOffAt = performance.now();
    await the().powerOff(node);
    poweredOff = { node, member: old };
    await eventually(async () => assert.notEqual(await primary(), old), {
      timeoutMs: RECOVERY_MS,
      intervalMs: 200,
      description: `a new primary after ${node} (under ${old}) powered off`,
    });
    const promotedAt = performance.now();
    await writer.more(20, RECOVERY_MS, 'through the new primary');
    const lastFailure = writer.failures.filter((t) => t > poweredOffAt).at(-1) ?? poweredOffAt;
    const promoted = await primary();
    console.log(
      `      ${node} (under ${old}) powered off: ${promoted} primary after ${secondsSince(poweredOffAt, promotedAt)}; writes failed for ${secondsSince(poweredOffAt, lastFailure)} (${writer.failures.length} failed attempts)`,
    );
    await writer.stop();
    assert.deepEqual(await watch.stop(), [], 'never two members writable or labelled primary');
    assert.ok(MEMBERS.includes(promoted) && promoted !== old, `promoted ${promoted}`);
    assert.notEqual((await pod(promoted)).spec?.nodeName, node, `${promoted} runs on another node`);
    const present = new Set((await sql(promoted, 'SELECT id FROM nodes.w')).split('\n').map(Number));
    assert.deepEqual(
      writer.acknowledged.filter((id) => !present.has(id)),
      [],
      `acknowledged rows missing on ${promoted}`,
    );
    const boundMs = (FAILOVER_AFTER_SECONDS + 5) * 1000;
    assert.ok(
      promotedAt - poweredOffAt <= boundMs,
      `a new primary after ${secondsSince(poweredOffAt, promotedAt)}, more than failoverAfterSeconds (${FAILOVER_AFTER_SECONDS}) + 5 s`,
    );
  });

  it('brings the old primary back as a replica on its own node, with the new primary’s rows, when that node boots again', async () => {
    assert.ok(poweredOff, 'the power-off test did not power a node off');
    const { node, member } = poweredOff;
    const bootedAt = performance.now();
    await the().powerOn(node);
    await healthy(RECOVERY_MS);
    console.log(`      ${node} booted: ${member} serving again after ${secondsSince(bootedAt)}`);
    // Its volume is node-local: the member can only have come back on the node it was on.
    assert.equal((await pod(member)).spec?.nodeName, node);
    const promoted = await primary();
    assert.notEqual(promoted, member);
    const checksum = async (m: string) => (await sql(m, 'CHECKSUM TABLE nodes.w')).split('\t')[1];
    await eventually(async () => assert.equal(await checksum(member), await checksum(promoted)), {
      timeoutMs: 60_000,
      intervalMs: 1000,
      description: `the rows of ${promoted} on ${member}`,
    });
  });
});
