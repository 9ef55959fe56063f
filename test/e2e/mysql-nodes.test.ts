// A MySQLCluster on the multi-node rig (test/node/nodes.sh): four worker nodes, three members, one per
// node (placement.spreadMembers: Required), so that one node is free for a member re-created elsewhere;
// the controller in this process as the other e2e files run it. Every node fault runs under a writer
// through <name>-primary (no acknowledged row may be lost), the register workload of mysql-ha.test.ts
// (support/registers.ts: its history must be linearizable) and a sampler asking every member whether
// it is writable (never two). The faults, in sequence on the one cluster, each leaving it healthy:
// - a replica lost with its node: powered off, the controller waits and says why (status, Event); once
//   the node carries node.kubernetes.io/out-of-service it removes the member's pod and node-bound claim
//   and the member comes back by clone on the free node, with no person involved;
// - the primary's kubelet stopped while mysqld serves: no failover;
// - the primary's kubelet stopped, then its node cut off the network (the replicas no longer hear it): one
//   failover, the old primary read-only by its agent before the new one is writable; it rejoins after the
//   heal and the kubelet's start;
// - `kubectl drain` of the primary's node: a switchover before the eviction, the drain completes;
// - the primary's node cut off the network: its agent makes it read-only before another is writable,
//   and it rejoins after the cut heals;
// - the primary's node powered off: a replica promoted within failoverAfterSeconds + 5 s; while it is off,
//   a drain of another member's node is held by the PodDisruptionBudget (no eviction, writes go on); when
//   the node boots again the old primary comes back on it (its volume is node-local) with the new
//   primary's rows, and then that drain goes through.
//
// This process is on the host, which routes every node's pod range but runs no kube-proxy (each node
// runs its own), so it reaches no cluster IP: the clients connect, at each connection, to the address
// the primary Service's EndpointSlices route to, which is what kube-proxy would pick.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { CoreV1Event, KubeConfig, V1Pod } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, PolicyV1Api } from '@kubernetes/client-node';
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import type { Controller } from '../../lib/controller/controller.js';
import { OUT_OF_SERVICE_TAINT } from '../../lib/mysql/node-loss.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import type { LoggedLine, NodesCluster } from '../node/nodes.js';
import { startNodesCluster } from '../node/nodes.js';
import { E2E_OPT_OUT, NODE_HOOK_TIMEOUT_MS, freshRestrictedNamespace } from './cluster.js';
import type { ClusterObject } from './support/mysql-members.js';
import { mustSql, mysqlClusterResource, secondsSince } from './support/mysql-members.js';
import type { RegisterRun } from './support/registers.js';
import { RegisterTable, assertLinearizable, clusterCa } from './support/registers.js';
import { RowWriter, dropConnection } from './support/row-writer.js';

const run = promisify(execFile);
const NAME = 'spread';
const MEMBERS = [0, 1, 2].map((i) => `${NAME}-${i}`);
const NODES = 4;
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const FAILOVER_AFTER_SECONDS = 16;
const BOOTSTRAP_MS = 8 * 60_000;
const RECOVERY_MS = 3 * 60_000;
/** A member re-created on another node joins by clone. */
const CLONE_MS = 6 * 60_000;
/** How long the kubelet stays stopped: past NotReady (16 s), short of the unreachable taint's eviction (30 s after). */
const KUBELET_STOPPED_MS = 35_000;
/** How long a drain the PodDisruptionBudget holds is left retrying (kubectl retries an eviction every 5 s). */
const HELD_DRAIN_SECONDS = 15;
/** The PodDisruptionBudget the constructs give the members (constructs/mysql/disruption-budget.ts): maxUnavailable 1. */
const BUDGET = `${NAME}-mysql`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Sampler {
  /** Stops, and returns every violation seen: two members writable, or two labelled primary. */
  stop: () => Promise<string[]>;
  /** The first wall-clock time (ms) each member was seen writable. */
  readonly firstWritable: Map<string, number>;
}

/** The primary's node cut off the network: what the figures and the fencing check need. */
interface CutOff {
  readonly old: string;
  readonly node: string;
  readonly promoted: string;
  readonly cutWall: number;
  readonly cutAt: number;
  readonly promotedAt: number;
  /** The old primary's agent's log, read from its node's disk while the cut lasts. */
  readonly agentLog: readonly LoggedLine[];
  /** The line where it made the old primary read-only. */
  readonly fenced: LoggedLine | undefined;
}

/** What runs through a fault: the writer, the registers, the sampler. */
interface Workload {
  readonly writer: RowWriter;
  readonly registers: RegisterRun;
  readonly watch: Sampler;
}

describe('MySQLCluster on four worker nodes, one member per node (MySQL 9.7): node faults', function () {
  this.timeout(RECOVERY_MS + 60_000);
  let rig: NodesCluster | undefined;
  let kc: KubeConfig;
  let ns = '';
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let discovery: DiscoveryV1Api;
  let policy: PolicyV1Api;
  let controller: Controller | undefined;
  let rootPassword = '';
  let registerTable: RegisterTable | undefined;
  let writers = 0;
  /** The ready address of <name>-primary, followed in the background (the register clients read it at each connection). */
  let endpoint = '';
  let following = true;
  let follower: Promise<void> | undefined;
  const running: RowWriter[] = [];
  const samplers: Sampler[] = [];
  const registerRuns: RegisterRun[] = [];
  /** Nodes a test left tainted, cordoned, powered off, cut off or without a kubelet, to be put back if it failed midway. */
  const toRestore: {
    node: string;
    powerOn?: true;
    untaint?: true;
    uncordon?: true;
    heal?: true;
    startKubelet?: true;
  }[] = [];

  const the = (): NodesCluster => {
    assert.ok(rig, 'the rig is not up');
    return rig;
  };
  const sql = (member: string, text: string) => mustSql(kc, ns, member, text);
  const pod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ namespace: ns, name });
  const nodeOf = async (member: string): Promise<string> => (await pod(member)).spec?.nodeName ?? '';
  const cluster = async () =>
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name: NAME })) as ClusterObject & {
      status?: { lastFailover?: { from?: string; to?: string; time?: string } };
    };
  const primary = async () => (await cluster()).status?.currentPrimary ?? '';
  /** kubectl on the rig, without blocking this process (the writer and the sampler keep running). */
  const kubectl = async (...args: string[]): Promise<string> =>
    (
      await run(the().binaries.kubectl, [`--kubeconfig=${the().kubeconfigPath}`, ...args], {
        maxBuffer: 16 << 20,
        timeout: 10 * 60_000,
      })
    ).stdout;
  const clusterEvents = async (): Promise<CoreV1Event[]> =>
    (
      await core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: `involvedObject.kind=MySQLCluster,involvedObject.name=${NAME}`,
      })
    ).items;
  const ready = (p: V1Pod): boolean =>
    (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  /** How many failovers the controller has made (its FailedOver Events, counted). */
  const failovers = async () =>
    (await clusterEvents()).filter((e) => e.reason === 'FailedOver').reduce((n, e) => n + (e.count ?? 1), 0);

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
        for (const name of MEMBERS) assert.ok(ready(await pod(name)), `${name} Ready`);
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
    const addresses = slices.items
      .flatMap((s) => s.endpoints ?? [])
      .filter((e) => e.conditions?.ready !== false)
      .flatMap((e) => e.addresses);
    if (addresses.length === 0) throw new Error(`${NAME}-primary has no ready endpoint`);
    return addresses[0] ?? '';
  }

  /** Watches for two writable members or two primary labels, every 300 ms, until stopped (as mysql-ha). */
  function sampler(): Sampler {
    const violations: string[] = [];
    const firstWritable = new Map<string, number>();
    let stopped = false;
    const loop = (async () => {
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
            let c: Connection | undefined;
            try {
              c = await createConnection({
                host: p.status.podIP,
                port: 3306,
                user: 'root',
                password: rootPassword,
                ssl: { rejectUnauthorized: false },
                connectTimeout: 1000,
              });
              const [rows] = await c.query<RowDataPacket[]>({ sql: 'SELECT @@GLOBAL.read_only AS ro', timeout: 2000 });
              if (Number(rows[0]?.ro) === 0) {
                const name = p.metadata?.name ?? '';
                writable.push(name);
                if (!firstWritable.has(name)) firstWritable.set(name, Date.now());
              }
            } catch {
              // Not answering (its node is off or cut off): not writable as far as anyone here can tell.
            } finally {
              dropConnection(c);
            }
          }),
        );
        if (writable.length > 1) violations.push(`writable: ${writable.join(', ')}`);
        await sleep(300);
      }
    })();
    const handle: Sampler = {
      firstWritable,
      stop: async () => {
        stopped = true;
        await loop;
        return violations;
      },
    };
    samplers.push(handle);
    return handle;
  }

  /** The writer, the registers and the sampler, each going before the fault starts. */
  async function workload(): Promise<Workload> {
    const writer = new RowWriter({
      host: primaryServiceEndpoint,
      password: rootPassword,
      table: 'nodes.w',
      first: ++writers * 1_000_000,
    });
    running.push(writer);
    writer.start();
    if (!registerTable) throw new Error('the register table was not created (see the before hook)');
    const registers = registerTable.start(() => endpoint);
    registerRuns.push(registers);
    await Promise.all([writer.more(20, 30_000, 'before the fault'), registers.more(20, 30_000)]);
    return { writer, registers, watch: sampler() };
  }

  /** How long writes failed after `from` (first to last failed attempt), and how many attempts. */
  function writesFailed(writer: RowWriter, from: number): string {
    const failed = writer.failures.filter((t) => t > from);
    if (failed.length === 0) return 'no write failed';
    return `writes failed for ${secondsSince(failed[0] ?? from, failed.at(-1) ?? from)} (${failed.length} failed attempts, the first ${secondsSince(from, failed[0])} after the fault)`;
  }

  /**
   * After a fault under `w`: 20 more rows and register operations through the primary there is now,
   * never two writable or labelled primary, every acknowledged row on the primary, and the registers'
   * history linearizable (asserted last). `marks`: the fault's instants, printed with the history.
   */
  async function safely(w: Workload, what: string, marks: Record<string, number>): Promise<void> {
    await Promise.all([w.writer.more(20, RECOVERY_MS, `after ${what}`), w.registers.more(20, RECOVERY_MS)]);
    await w.writer.stop();
    const checked = await w.registers.check(what, marks);
    assert.deepEqual(await w.watch.stop(), [], 'never two members writable or labelled primary');
    const now = await primary();
    const present = new Set((await sql(now, 'SELECT id FROM nodes.w')).split('\n').map(Number));
    assert.deepEqual(
      w.writer.acknowledged.filter((id) => !present.has(id)),
      [],
      `acknowledged rows missing on ${now}`,
    );
    assertLinearizable(checked);
  }

  /** Every member holds the primary's rows (CHECKSUM TABLE). */
  async function sameRows(): Promise<void> {
    const checksum = async (m: string) => (await sql(m, 'CHECKSUM TABLE nodes.w')).split('\t')[1];
    await eventually(
      async () => {
        const reference = await checksum(await primary());
        for (const m of MEMBERS) assert.equal(await checksum(m), reference, `the rows of ${m}`);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'the primary’s rows on every member' },
    );
  }

  /**
   * Cuts the primary's node off the network, waits for a new primary, 20 more rows and register
   * operations through it, and reads the old primary's agent's log from its node's disk while the cut
   * lasts: once it heals, a member holding transactions the new primary never received is
   * re-provisioned, and the pod's logs go with it. The caller heals.
   */
  async function cutOffPrimary(w: Workload, old: string, node: string): Promise<CutOff> {
    const cutWall = Date.now();
    const cutAt = performance.now();
    await the().cutNetwork(node);
    toRestore.push({ node, heal: true });
    await eventually(async () => assert.notEqual(await primary(), old), {
      timeoutMs: RECOVERY_MS,
      intervalMs: 200,
      description: `a new primary after ${node} (under ${old}) was cut off`,
    });
    const promotedAt = performance.now();
    const promoted = await primary();
    await Promise.all([w.writer.more(20, RECOVERY_MS, 'through the new primary'), w.registers.more(20, RECOVERY_MS)]);
    const agentLog = the().containerLog(node, ns, old, 'agent');
    const fenced = agentLog.find((l) => /reached no other member/.test(l.text) && l.at.getTime() >= cutWall);
    return { old, node, promoted, cutWall, cutAt, promotedAt, agentLog, fenced };
  }

  /** When the old primary was made read-only and the new one seen writable, measured from the cut. */
  function cutFigures(cut: CutOff, w: Workload): string {
    const fencedWall = cut.fenced?.at.getTime();
    const writableWall = w.watch.firstWritable.get(cut.promoted);
    return `${cut.old} read-only by its agent after ${fencedWall === undefined ? '(not in its log)' : `${((fencedWall - cut.cutWall) / 1000).toFixed(1)} s`}, ${cut.promoted} primary after ${secondsSince(cut.cutAt, cut.promotedAt)} (writable seen after ${writableWall === undefined ? '?' : `${((writableWall - cut.cutWall) / 1000).toFixed(1)} s`}); ${writesFailed(w.writer, cut.cutAt)}`;
  }

  /** The old primary's agent made it read-only before the sampler first saw the new primary writable. */
  function assertFencedFirst(cut: CutOff, w: Workload): void {
    const fencedWall = cut.fenced?.at.getTime();
    const writableWall = w.watch.firstWritable.get(cut.promoted);
    assert.ok(
      fencedWall !== undefined,
      `${cut.old}'s agent never said it fenced itself:\n${cut.agentLog
        .slice(-20)
        .map((l) => `${l.at.toISOString()} ${l.text}`)
        .join('\n')}`,
    );
    assert.ok(
      writableWall !== undefined && fencedWall < writableWall,
      `${cut.old} fenced at ${cut.fenced?.at.toISOString()} (${cut.fenced?.text}), ${cut.promoted} writable at ${writableWall}`,
    );
  }

  before(async function () {
    if (E2E_OPT_OUT) {
      // As every end-to-end file: only by the developer's explicit choice, never in CI.
      if (process.env.CI === 'true')
        throw new Error('RECON8S_E2E=skip is set in CI (CI=true): the end-to-end tests must run there; unset it.');
      this.skip();
    }
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    rig = await startNodesCluster({ nodes: NODES, images: ['mysql', 'operator'] });
    kc = rig.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    discovery = kc.makeApiClient(DiscoveryV1Api);
    policy = kc.makeApiClient(PolicyV1Api);
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
    endpoint = await primaryServiceEndpoint();
    follower = (async () => {
      while (following) {
        endpoint = await primaryServiceEndpoint().catch(() => '');
        await sleep(200);
      }
    })();
    registerTable = await RegisterTable.create({
      host: endpoint,
      rootPassword,
      ca: await clusterCa(core, custom, ns, NAME),
    });
  });

  afterEach(async function () {
    this.timeout(5 * 60_000);
    await Promise.all([
      ...running.splice(0).map((w) => w.stop()),
      ...samplers.splice(0).map((s) => s.stop()),
      ...registerRuns.splice(0).map((r) => r.stop()),
    ]);
    // A test that failed midway leaves its node as the next one needs it.
    for (const r of toRestore.splice(0)) {
      if (r.untaint) await kubectl('taint', 'nodes', r.node, `${OUT_OF_SERVICE_TAINT}-`).catch(() => undefined);
      if (r.uncordon) await kubectl('uncordon', r.node).catch(() => undefined);
      if (r.heal)
        await the()
          .heal(r.node)
          .catch(() => undefined);
      if (r.startKubelet)
        await the()
          .startKubelet(r.node)
          .catch(() => undefined);
      if (r.powerOn)
        await the()
          .powerOn(r.node)
          .catch(() => undefined);
    }
  });

  after(async function () {
    this.timeout(10 * 60_000);
    following = false;
    await follower;
    await controller?.stop();
    await rig?.stop();
  });

  it('runs one member on each of three nodes, each on a volume of its own node', async () => {
    const placed = await Promise.all(MEMBERS.map(nodeOf));
    assert.equal(new Set(placed).size, 3, `members on ${placed.join(', ')}`);
    for (const [i, member] of MEMBERS.entries()) {
      assert.ok(the().nodes.includes(placed[i] ?? ''), `${member} on ${placed[i]}`);
      const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: `data-${member}` });
      const volume = claim.spec?.volumeName ?? '';
      assert.ok(volume.startsWith(`${placed[i]}-pv-`), `${member} on ${placed[i]} is bound to ${volume}`);
    }
  });

  it('brings a replica lost with its node back on another node by clone once the node is out of service, and says why it waits before', async function () {
    this.timeout(2 * RECOVERY_MS + CLONE_MS);
    const current = await primary();
    const lost = MEMBERS.find((m) => m !== current) ?? '';
    const node = await nodeOf(lost);
    const occupied = new Set(await Promise.all(MEMBERS.map(nodeOf)));
    const free = the().nodes.filter((n) => !occupied.has(n));
    const oldUid = (await pod(lost)).metadata?.uid;
    const w = await workload();

    const poweredOffAt = performance.now();
    await the().powerOff(node);
    toRestore.push({ node, powerOn: true });
    // Without the taint, nothing says the node is down: the member is left, and the cluster says why.
    const said = await eventually(
      async () => {
        const degraded = (await cluster()).status?.conditions?.find((c) => c.type === 'Degraded');
        assert.equal(degraded?.status, 'True', JSON.stringify(degraded));
        assert.match(degraded?.message ?? '', new RegExp(node));
        const event = (await clusterEvents()).find((e) => e.reason === 'NodeNotReady' && e.message?.includes(lost));
        assert.ok(event, 'no NodeNotReady Event naming the member');
        return { degraded, event };
      },
      { timeoutMs: RECOVERY_MS, intervalMs: 500, description: `the cluster saying why ${lost} on ${node} waits` },
    );
    const saidAt = performance.now();
    // Its pod is kept while only NotReady says the node may be down (the unreachable taint's eviction
    // may mark it deleting; nothing force-deletes it).
    await sleep(5_000);
    assert.equal((await pod(lost)).metadata?.uid, oldUid, `${lost}'s pod was removed without the taint`);
    console.log(
      `      ${node} (under ${lost}) powered off: after ${secondsSince(poweredOffAt, saidAt)} the cluster said: ${said.degraded?.message}`,
    );

    const taintedAt = performance.now();
    await kubectl('taint', 'nodes', node, `${OUT_OF_SERVICE_TAINT}=nodeshutdown:NoExecute`);
    toRestore.push({ node, untaint: true });
    const removedAt = await eventually(
      async () => {
        const p = await pod(lost).catch(() => undefined);
        assert.notEqual(p?.metadata?.uid, oldUid, `${lost}'s old pod is still there`);
        return performance.now();
      },
      { timeoutMs: RECOVERY_MS, intervalMs: 200, description: `${lost}'s pod removed` },
    );
    const back = await eventually(
      async () => {
        const p = await pod(lost);
        assert.ok(free.includes(p.spec?.nodeName ?? ''), `${lost} on ${p.spec?.nodeName}, not on ${free.join(', ')}`);
        assert.ok(ready(p), `${lost} not Ready`);
        return p;
      },
      { timeoutMs: CLONE_MS, intervalMs: 1000, description: `${lost} Ready on another node` },
    );
    const readyAt = performance.now();
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: `data-${lost}` });
    assert.ok(
      (claim.spec?.volumeName ?? '').startsWith(`${back.spec?.nodeName}-pv-`),
      `${lost}'s new claim is bound to ${claim.spec?.volumeName}`,
    );
    const recovered = (await clusterEvents()).find((e) => e.reason === 'MemberLostWithNode');
    assert.ok(recovered, 'no MemberLostWithNode Event');
    console.log(
      `      ${node} tainted ${OUT_OF_SERVICE_TAINT}: ${lost}'s pod and claim removed after ${secondsSince(taintedAt, removedAt)}, ${lost} Ready on ${back.spec?.nodeName} after ${secondsSince(taintedAt, readyAt)} (${secondsSince(poweredOffAt, readyAt)} after the power off); ${writesFailed(w.writer, poweredOffAt)}`,
    );
    await safely(w, 'the node loss', { 'the power off': poweredOffAt, 'the taint': taintedAt, 'Ready again': readyAt });
    await healthy(RECOVERY_MS);
    await sameRows();
    // The node comes back empty of members: the next tests have it free.
    await kubectl('taint', 'nodes', node, `${OUT_OF_SERVICE_TAINT}-`);
    await the().powerOn(node);
    toRestore.splice(0);
  });

  it("keeps the primary when only its node's kubelet stops (mysqld serving, the replicas hearing it)", async function () {
    this.timeout(KUBELET_STOPPED_MS + 2 * RECOVERY_MS);
    const old = await primary();
    const node = await nodeOf(old);
    const failoverBefore = (await cluster()).status?.lastFailover?.time;
    const w = await workload();
    const stoppedAt = performance.now();
    await the().stopKubelet(node);
    const seen = new Set<string>();
    let notReadyAt: number | undefined;
    while (performance.now() - stoppedAt < KUBELET_STOPPED_MS) {
      seen.add(await primary());
      if (notReadyAt === undefined) {
        const n = await core.readNode({ name: node });
        if (n.status?.conditions?.some((c) => c.type === 'Ready' && c.status !== 'True'))
          notReadyAt = performance.now();
      }
      await sleep(500);
    }
    await the().startKubelet(node);
    const startedAt = performance.now();
    console.log(
      `      ${node}'s kubelet (under ${old}) stopped ${secondsSince(stoppedAt, startedAt)}, the node NotReady after ${notReadyAt === undefined ? 'never' : secondsSince(stoppedAt, notReadyAt)}: primaries seen ${[...seen].join(', ')}; ${writesFailed(w.writer, stoppedAt)}`,
    );
    // Its pods are reached again (exec goes through its kubelet) once they are Ready.
    await healthy(RECOVERY_MS);
    await safely(w, 'the stopped kubelet', { 'the stop': stoppedAt, 'the start': startedAt });
    assert.deepEqual([...seen], [old], 'the primary changed while its mysqld served');
    assert.equal((await cluster()).status?.lastFailover?.time, failoverBefore, 'a failover was recorded');
  });

  it("fails over once when the primary's kubelet is dead and its node is then cut off: the old primary read-only before the new one is writable, back after the heal and the kubelet's start", async function () {
    this.timeout(4 * RECOVERY_MS);
    const old = await primary();
    const node = await nodeOf(old);
    const failoversBefore = await failovers();
    const w = await workload();
    const stoppedAt = performance.now();
    await the().stopKubelet(node);
    toRestore.push({ node, startKubelet: true });
    // Its mysqld serves on without the kubelet, and the replicas hear it (the test above shows that no
    // failover follows); now they stop hearing it too.
    await w.writer.more(5, 30_000, 'with the kubelet stopped');
    const cut = await cutOffPrimary(w, old, node);
    await the().heal(node);
    const healedAt = performance.now();
    await the().startKubelet(node);
    toRestore.splice(0);
    await healthy(RECOVERY_MS);
    const backAt = performance.now();
    const failed = (await failovers()) - failoversBefore;
    const record = (await cluster()).status?.lastFailover;
    console.log(
      `      ${node}'s kubelet (under ${old}) stopped, then ${node} cut off ${secondsSince(stoppedAt, cut.cutAt)} later: ${cutFigures(cut, w)}; healed and the kubelet started, ${old} back after ${secondsSince(healedAt, backAt)}; ${failed} failover(s), ${record?.from} to ${record?.to}`,
    );
    await safely(w, 'the stopped kubelet and the cut', {
      'the kubelet stop': stoppedAt,
      'the cut': cut.cutAt,
      'a new primary': cut.promotedAt,
      'the heal': healedAt,
    });
    assertFencedFirst(cut, w);
    assert.equal(failed, 1, 'one failover');
    assert.deepEqual([record?.from, record?.to], [old, cut.promoted], 'the failover recorded');
    assert.equal(await primary(), cut.promoted, `${cut.promoted} still primary once ${old} is back`);
    await sameRows();
  });

  it('switches over before `kubectl drain` evicts the primary, and the drain completes', async function () {
    this.timeout(3 * RECOVERY_MS);
    const old = await primary();
    const node = await nodeOf(old);
    const failoversBefore = await failovers();
    const w = await workload();
    const drainAt = performance.now();
    toRestore.push({ node, uncordon: true });
    const drained = kubectl('drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=300s').then(() =>
      performance.now(),
    );
    drained.catch(() => undefined);
    await eventually(async () => assert.notEqual(await primary(), old), {
      timeoutMs: RECOVERY_MS,
      intervalMs: 200,
      description: `a new primary after the drain of ${node} (under ${old})`,
    });
    const promotedAt = performance.now();
    const drainedAt = await drained;
    const promoted = await primary();
    const switched = (await clusterEvents()).some((e) => e.reason === 'SwitchedOver' && e.message?.includes(promoted));
    const failedOver = (await failovers()) > failoversBefore;
    console.log(
      `      ${node} (under ${old}) drained: ${promoted} primary after ${secondsSince(drainAt, promotedAt)}, the drain done after ${secondsSince(drainAt, drainedAt)}; ${writesFailed(w.writer, drainAt)}; ${switched ? 'a switchover' : 'no SwitchedOver Event'}${failedOver ? ', a failover' : ''}`,
    );
    await safely(w, 'the drain', { 'the drain': drainAt, 'a new primary': promotedAt, drained: drainedAt });
    assert.ok(
      switched && !failedOver,
      `the drain's change of primary was ${failedOver ? 'a failover' : 'no switchover'}`,
    );
    await kubectl('uncordon', node);
    toRestore.splice(0);
    await healthy(RECOVERY_MS);
    assert.equal(await nodeOf(old), node, `${old} back on its own node (its volume is there)`);
  });

  it('fences the primary cut off the network before another is writable, and it rejoins once the cut heals', async function () {
    this.timeout(3 * RECOVERY_MS);
    const old = await primary();
    const node = await nodeOf(old);
    const w = await workload();
    const cut = await cutOffPrimary(w, old, node);
    await the().heal(node);
    toRestore.splice(0);
    const healedAt = performance.now();
    await healthy(RECOVERY_MS);
    const backAt = performance.now();
    console.log(
      `      ${node} (under ${old}) cut off: ${cutFigures(cut, w)}; healed, ${old} back after ${secondsSince(healedAt, backAt)}`,
    );
    await safely(w, 'the network cut', { 'the cut': cut.cutAt, 'a new primary': cut.promotedAt, 'the heal': healedAt });
    assertFencedFirst(cut, w);
    await sameRows();
  });

  /** What the power-off test leaves for the next: the node powered off, when, and the member that was primary on it. */
  let poweredOff: { node: string; member: string; at: number } | undefined;
  /** The node whose drain the PodDisruptionBudget held, and its member. */
  let held: { node: string; member: string } | undefined;

  it(`promotes a replica (printing how soon) when the primary's node powers off, losing no acknowledged row and never two writable`, async () => {
    const old = await primary();
    const node = await nodeOf(old);
    const w = await workload();
    const poweredOffAt = performance.now();
    await the().powerOff(node);
    poweredOff = { node, member: old, at: poweredOffAt };
    await eventually(async () => assert.notEqual(await primary(), old), {
      timeoutMs: RECOVERY_MS,
      intervalMs: 200,
      description: `a new primary after ${node} (under ${old}) powered off`,
    });
    const promotedAt = performance.now();
    const promoted = await primary();
    const event = (await clusterEvents()).find(
      (e) => e.reason === 'FailedOver' && e.message?.startsWith(`promoted ${promoted}: the primary ${old} `),
    );
    console.log(
      `      ${node} (under ${old}) powered off: ${promoted} primary after ${secondsSince(poweredOffAt, promotedAt)}; ${writesFailed(w.writer, poweredOffAt)}; the controller: ${event?.message ?? '(no FailedOver Event)'}`,
    );
    await safely(w, 'the power off', { 'the power off': poweredOffAt, 'a new primary': promotedAt });
    assert.notEqual(await nodeOf(promoted), node, `${promoted} runs on another node`);
    // The time to the new primary is printed above, never asserted (a slower machine takes longer to
    // notice): docs/mysql-ha.md's node-fault table has the figures against failoverAfterSeconds + 5 s.
  });

  it('holds `kubectl drain` of a second member’s node on the PodDisruptionBudget while the powered-off member is down: nothing evicted, writes go on', async function () {
    this.timeout(2 * RECOVERY_MS);
    assert.ok(poweredOff, 'the power-off test did not power a node off');
    const down = poweredOff;
    const current = await primary();
    const member = MEMBERS.find((m) => m !== current && m !== down.member) ?? '';
    const node = await nodeOf(member);
    const live = [current, member];
    const uids = await Promise.all(live.map(async (m) => (await pod(m)).metadata?.uid));
    // The budget counts the member down once its pod is not Ready, which the node's NotReady makes it
    // (16 s after the power off on the rig; 40 s by default): before that, Kubernetes allows an eviction.
    const budget = await eventually(
      async () => {
        const b = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: BUDGET });
        assert.equal(b.status?.disruptionsAllowed, 0, JSON.stringify(b.status));
        return b;
      },
      { timeoutMs: RECOVERY_MS, intervalMs: 500, description: `${BUDGET} allowing no disruption` },
    );
    const heldAt = performance.now();
    const w = await workload();
    const acknowledgedBefore = w.writer.acknowledged.length;
    const drainAt = performance.now();
    toRestore.push({ node, uncordon: true });
    const drain = await run(
      the().binaries.kubectl,
      [
        `--kubeconfig=${the().kubeconfigPath}`,
        'drain',
        node,
        '--ignore-daemonsets',
        '--delete-emptydir-data',
        `--timeout=${HELD_DRAIN_SECONDS}s`,
      ],
      { timeout: 5 * 60_000 },
    ).then(
      () => undefined,
      (e: unknown) => e as { code?: number; stderr?: string },
    );
    const drainEndedAt = performance.now();
    const acknowledgedDuring = w.writer.acknowledged.length - acknowledgedBefore;
    const failedDuring = w.writer.failures.filter((t) => t >= drainAt && t <= drainEndedAt).length;
    const refusals = (drain?.stderr ?? '').split('\n').filter((l) => /disruption budget/.test(l));
    console.log(
      `      ${down.node} (under ${down.member}) off: ${BUDGET} allowed no disruption ${secondsSince(down.at, heldAt)} after the power off (${budget.status?.currentHealthy} healthy, ${budget.status?.desiredHealthy} needed); \`kubectl drain ${node}\` (under ${member}) ${drain === undefined ? 'completed' : `exited ${drain.code} after ${secondsSince(drainAt, drainEndedAt)}, ${refusals.length} evictions refused: ${refusals.at(-1)?.trim()}`}; ${acknowledgedDuring} writes acknowledged meanwhile, ${failedDuring} failed`,
    );
    assert.ok(drain, `the drain of ${node} completed while ${down.member} was down`);
    assert.ok(refusals.length > 0, `the drain did not report the disruption budget:\n${drain.stderr}`);
    for (const [i, m] of live.entries()) {
      const p = await pod(m);
      assert.equal(p.metadata?.uid, uids[i], `${m}'s pod was replaced`);
      assert.equal(p.metadata?.deletionTimestamp, undefined, `${m}'s pod is being deleted`);
    }
    assert.ok(acknowledgedDuring > 0, 'no write was acknowledged during the drain');
    assert.equal(failedDuring, 0, `writes failed during the drain: ${w.writer.errors.slice(-3).join(' | ')}`);
    await kubectl('uncordon', node);
    toRestore.splice(0);
    await safely(w, 'the held drain', { 'the drain': drainAt, 'its end': drainEndedAt });
    held = { node, member };
  });

  it('brings the old primary back as a replica on its own node, with the new primary’s rows, when that node boots again', async () => {
    assert.ok(poweredOff, 'the power-off test did not power a node off');
    const { node, member } = poweredOff;
    const bootedAt = performance.now();
    await the().powerOn(node);
    await healthy(RECOVERY_MS);
    console.log(`      ${node} booted: ${member} serving again after ${secondsSince(bootedAt)}`);
    // Its volume is node-local: the member can only have come back on the node it was on.
    assert.equal(await nodeOf(member), node);
    assert.notEqual(await primary(), member);
    await sameRows();
  });

  it('lets that drain through once every member is back (the budget allows one), and the member rejoins when its node is uncordoned', async function () {
    this.timeout(3 * RECOVERY_MS);
    assert.ok(held, 'the held-drain test did not drain a node');
    const { node, member } = held;
    const oldUid = (await pod(member)).metadata?.uid;
    const w = await workload();
    const drainAt = performance.now();
    toRestore.push({ node, uncordon: true });
    await kubectl('drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=300s');
    const drainedAt = performance.now();
    const evicted = (await pod(member).catch(() => undefined))?.metadata?.uid !== oldUid;
    await kubectl('uncordon', node);
    toRestore.splice(0);
    await healthy(RECOVERY_MS);
    const backAt = performance.now();
    console.log(
      `      \`kubectl drain ${node}\` (under ${member}) with every member back: done after ${secondsSince(drainAt, drainedAt)}${evicted ? '' : ' (nothing evicted)'}; uncordoned, ${member} back after ${secondsSince(drainedAt, backAt)}; ${writesFailed(w.writer, drainAt)}`,
    );
    await safely(w, 'the drain let through', { 'the drain': drainAt, drained: drainedAt, back: backAt });
    assert.ok(evicted, `the drain of ${node} completed without evicting ${member}`);
    assert.equal(await nodeOf(member), node, `${member} back on its own node (its volume is there)`);
    await sameRows();
  });
});
