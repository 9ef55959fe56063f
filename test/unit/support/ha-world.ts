// The HA loop's world with every port faked (lib/controller/mysql-cluster/ha/ports.ts): members over
// "SQL", their pods (labels, restarts, annotations, force-deletions), their data claims and Nodes, the
// status records with the API server's version precondition, the metrics and a clock the test moves.
// Shared by the HA loop's unit tests (test/unit/mysql-ha-loop.test.ts, mysql-ha-node-loss.test.ts).
import assert from 'node:assert/strict';
import type { V1Pod, V1Secret, V1StatefulSet } from '@kubernetes/client-node';
import { MYSQL_ROLE_LABEL, MYSQL_SECRET_KEYS, mysqlClusterNames } from '../../../constructs/index.js';
import type { MySQLClusterFacts } from '../../../lib/controller/mysql-cluster/facts.js';
import { runPass } from '../../../lib/controller/mysql-cluster/ha/loop.js';
import { HaMemory } from '../../../lib/controller/mysql-cluster/ha/memory.js';
import type { HaStatus } from '../../../lib/controller/mysql-cluster/ha/pass.js';
import type {
  HaPorts,
  MemberActions,
  RecordedStatus,
  StepMetric,
} from '../../../lib/controller/mysql-cluster/ha/ports.js';
import type {
  CustomResource,
  ManageContext,
  ManagedEvent,
  Management,
} from '../../../lib/controller/kind-controller.js';
import type { KubeClient } from '../../../lib/kube/index.js';
import { KubeApiError } from '../../../lib/kube/index.js';
import { GtidSet } from '../../../lib/mysql/gtid-set.js';
import type { CloneDonation } from '../../../lib/mysql/clone-progress.js';
import type { NodeLossClaim, NodeLossNode } from '../../../lib/mysql/node-loss.js';
import type { MemberSql, Role } from '../../../lib/mysql/topology.js';
import { silentLogger } from '../../../lib/observability/logger.js';

export const NAME = 'ha';
export const NAMESPACE = 'shop';
export const UID = 'uid-cluster';
export const names = mysqlClusterNames(NAME);
export const hostOf = (member: string): string => names.memberHost(member);
export const uuidOf = (member: string): string => `${`a${member.slice(-1)}`.repeat(4)}-0000-0000-0000-000000000000`;
export const FAKE_CA = '-----BEGIN CERTIFICATE-----\n(fake)\n-----END CERTIFICATE-----\n';
export const NOT_AFTER = '2099-01-01T00:00:00.000Z';
export const WALL_START = Date.parse('2030-01-01T00:00:00Z');

/** One fake mysqld: what it holds and how it is set up; shared by every controller's sessions to it. */
export interface Mysqld {
  up: boolean;
  serverUuid: string;
  writable: boolean;
  semiSyncWaitCount: number;
  executed: GtidSet;
  received: GtidSet;
  channel?: { sourceHost: string; receiver: 'ON' | 'OFF'; sourceSilentMs?: number; heartbeatMs?: number };
  /** It does not take what its source sends (a lagging or cut-off replica). */
  lagging?: boolean;
  /** The certificate it serves, and the one its mounted Secret holds (what a reload serves). */
  servedNotAfter: string;
  mountedNotAfter: string;
  /** The clones it serves as a donor (its stage events), by recipient address. */
  donating?: CloneDonation[];
}

/** The cluster as the world has it: mysqlds, pods, the API server's record, and what was done to them. */
export class World {
  readonly mysqld = new Map<string, Mysqld>();
  readonly pods = new Map<string, V1Pod>();
  /** The MySQLCluster's status on the API server, and its version (resourceVersion). */
  status: HaStatus & Record<string, unknown> = {};
  version = 1;
  history?: string;
  annotations: Record<string, string> = {};
  spec = { replicas: 3, failoverAfterSeconds: 10 };
  stsReplicas = 3;
  updateRevision = 'rev-1';
  notAfter = NOT_AFTER;
  /** Monotonic ms. */
  t = 0;
  /** Every SQL action, as "<who> <member> <action>". */
  readonly calls: string[] = [];
  /** The members made writable, in order. */
  readonly madeWritable: string[] = [];
  /** Moments two members took writes at once (never, if the loop is right). */
  readonly doubleWritable: string[] = [];
  readonly events: ManagedEvent[] = [];
  readonly counted: StepMetric[] = [];
  readonly restarted: string[] = [];
  readonly podAnnotations: { pod: string; annotation: string; value: string }[] = [];
  /** The Nodes the API has, by name (one deleted from the API is not here). */
  readonly nodes = new Map<string, NodeLossNode>();
  /** The members' data claims the API has, by name, with the node their volume is bound to. */
  readonly claims = new Map<string, NodeLossClaim>();
  /** Every read of a Node or a claim, as "node <name>" or "claim <name>". */
  readonly kubeReads: string[] = [];
  /** Every deletion of a claim or a force-deletion of a pod, in order, as "claim <name>" or "pod <name>". */
  readonly deleted: string[] = [];
  /** The controller may not read Nodes or PersistentVolumes (its node-reader role is not bound): 403. */
  nodesForbidden = false;
  private uids = 0;
  private readonly held = new Map<string, { reached: () => void; release: Promise<void> }>();

  constructor(size = 3) {
    for (let i = 0; i < size; i++) this.addMember(`${NAME}-${i}`);
  }

  addMember(member: string): void {
    this.mysqld.set(member, {
      up: true,
      serverUuid: uuidOf(member),
      writable: false,
      semiSyncWaitCount: 0,
      executed: GtidSet.EMPTY,
      received: GtidSet.EMPTY,
      servedNotAfter: NOT_AFTER,
      mountedNotAfter: NOT_AFTER,
    });
    this.newPod(member, undefined);
  }

  /** The StatefulSet (re-)creates the member's pod from the current template. */
  newPod(member: string, role: Role | undefined): void {
    const i = Number(member.slice(-1));
    this.pods.set(member, {
      metadata: {
        name: member,
        namespace: NAMESPACE,
        uid: `uid-${member}-${++this.uids}`,
        labels: {
          'app.kubernetes.io/instance': NAME,
          'controller-revision-hash': this.updateRevision,
          ...(role ? { [MYSQL_ROLE_LABEL]: role } : {}),
        },
      },
      status: {
        podIP: `10.0.0.${i + 1}`,
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [
          {
            name: 'mysql',
            image: 'mysql',
            imageID: '',
            ready: true,
            restartCount: 0,
            state: { running: { startedAt: new Date(WALL_START) } },
          },
        ],
      },
    });
  }

  /**
   * Every member on its own node (node-<ordinal>, Ready), its pod scheduled there and its data claim on
   * a volume bound to it (local storage).
   */
  spreadOnNodes(): void {
    for (const [member, pod] of this.pods) {
      const node = `node-${member.slice(-1)}`;
      this.nodes.set(node, { name: node, ready: 'True', readySince: WALL_START, taintKeys: [] });
      pod.spec = { ...pod.spec, containers: [], nodeName: node };
      const claim = names.dataClaim(Number(member.slice(-1)));
      this.claims.set(claim, { name: claim, uid: `uid-${claim}`, deleting: false, volumeNode: node });
    }
  }

  /** The node powers off: NotReady (Unknown) since now, its mysqld gone; the pod stays in the API as it was. */
  powerOff(node: string, o: { outOfService?: boolean } = {}): void {
    const n = this.nodes.get(node);
    assert.ok(n, `no node ${node}`);
    this.nodes.set(node, {
      ...n,
      ready: 'Unknown',
      readySince: WALL_START + this.t,
      taintKeys: ['node.kubernetes.io/unreachable', ...(o.outOfService ? ['node.kubernetes.io/out-of-service'] : [])],
    });
    for (const [member, pod] of this.pods)
      if (pod.spec?.nodeName === node) {
        this.m(member).up = false;
        pod.status = { ...pod.status, conditions: [{ type: 'Ready', status: 'False' }] };
      }
  }

  /** A person (or a fencing agent) puts the out-of-service taint on the node. */
  markOutOfService(node: string): void {
    const n = this.nodes.get(node);
    assert.ok(n, `no node ${node}`);
    this.nodes.set(node, { ...n, taintKeys: [...n.taintKeys, 'node.kubernetes.io/out-of-service'] });
  }

  m(member: string): Mysqld {
    const m = this.mysqld.get(member);
    if (!m) throw new Error(`no member ${member}`);
    return m;
  }

  /** The primary takes `n` writes (acknowledged by its semi-synchronous replicas: replication is synchronous here). */
  commit(member: string, n = 1): void {
    const m = this.m(member);
    assert.ok(m.up && m.writable, `${member} takes no writes`);
    const from = m.executed.ofServer(m.serverUuid).count() + 1;
    m.executed = m.executed.union(GtidSet.parse(`${m.serverUuid}:${from}-${from + n - 1}`));
    this.replicate();
  }

  /** Every replica that receives from a member that is up takes what it holds (but a lagging one). */
  replicate(): void {
    for (const m of this.mysqld.values()) {
      const source = [...this.mysqld].find(([name]) => hostOf(name) === m.channel?.sourceHost)?.[1];
      if (!m.up || !source?.up || m.channel?.receiver !== 'ON' || m.lagging) continue;
      m.received = m.received.union(source.executed);
      m.executed = m.executed.union(source.executed);
    }
  }

  /** Members up and writable now. */
  writable(): string[] {
    return [...this.mysqld].filter(([, m]) => m.up && m.writable).map(([n]) => n);
  }

  roles(): Record<string, string | undefined> {
    return Object.fromEntries([...this.pods].map(([n, p]) => [n, p.metadata?.labels?.[MYSQL_ROLE_LABEL]]));
  }

  /** Holds `who`'s next wait for a candidate to apply; resolves once it is held, with its release. */
  hold(who: string): { held: Promise<void>; release: () => void } {
    let reached = (): void => undefined;
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (reached = r));
    this.held.set(who, { reached, release: new Promise<void>((r) => (release = r)) });
    return { held, release };
  }

  by(who: string): string[] {
    return this.calls.filter((c) => c.startsWith(`${who} `)).map((c) => c.slice(who.length + 1));
  }

  /** A session of `who` to the member at `ip`, as MemberSession answers (only while its mysqld is up). */
  session(who: string, ip: string): MemberActions {
    const name = [...this.pods].find(([, p]) => p.status?.podIP === ip)?.[0] ?? '';
    const m = this.m(name);
    const did = (what: string): void => void this.calls.push(`${who} ${name} ${what}`);
    const reach = (): void => {
      if (!m.up) throw Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST' });
    };
    const s: MemberActions = {
      close: async () => undefined,
      observe: async (): Promise<MemberSql> => {
        reach();
        return {
          serverUuid: m.serverUuid,
          writable: m.writable,
          executed: m.executed,
          received: m.channel ? m.received : GtidSet.EMPTY,
          ...(m.channel ? { channel: { applier: 'ON' as const, ...m.channel } } : {}),
          semiSync: { enabled: m.semiSyncWaitCount > 0, waitCount: m.semiSyncWaitCount },
        };
      },
      cloneDonations: async () => {
        reach();
        return m.donating ?? [];
      },
      fence: async (o) => {
        reach();
        did(o?.cutOff ? 'fence (cut off)' : o?.stopping ? 'fence (stopping)' : 'fence');
        m.writable = false;
        m.semiSyncWaitCount = 0;
      },
      enableWrites: async (waitCount) => {
        reach();
        did('enableWrites');
        const others = this.writable().filter((n) => n !== name);
        if (others.length > 0) this.doubleWritable.push(`${name} made writable while ${others.join(', ')} was`);
        if (!m.writable) this.madeWritable.push(name);
        m.writable = true;
        m.semiSyncWaitCount = waitCount;
      },
      replicateFrom: async (sourceHost) => {
        reach();
        did(`replicateFrom ${sourceHost}`);
        m.channel = { sourceHost, receiver: 'ON' };
        this.replicate();
      },
      stopReplication: async () => {
        reach();
        did('stopReplication');
        delete m.channel;
      },
      admitClients: async () => {
        reach();
        did('admitClients');
      },
      stopReceiver: async () => {
        reach();
        did('stopReceiver');
        if (m.channel) m.channel = { ...m.channel, receiver: 'OFF' };
      },
      executed: async () => {
        reach();
        return m.executed;
      },
      servedCertificateNotAfter: async () => {
        reach();
        return m.servedNotAfter;
      },
      reloadTls: async () => {
        reach();
        did('reloadTls');
        m.servedNotAfter = m.mountedNotAfter;
      },
      waitForApplied: async (set) => {
        reach();
        did('waitForApplied');
        const gate = this.held.get(who);
        if (gate) {
          this.held.delete(who);
          gate.reached();
          await gate.release;
        }
        // The applier applies what the receiver wrote to the relay log.
        m.executed = m.executed.union(m.received);
        return set.isSubsetOf(m.executed);
      },
      leaveReplication: async () => {
        reach();
        did('leaveReplication');
        delete m.channel;
      },
    };
    return s;
  }
}

/** A controller process: its memory of the cluster, its leadership, and one pass of its loop at a time. */
export class Controller {
  memory = new HaMemory();
  readonly leadership = new AbortController();
  woken = 0;

  constructor(
    readonly world: World,
    readonly who = 'ctl',
  ) {}

  ports(): HaPorts {
    const w = this.world;
    return {
      connect: async ({ host }) => {
        const name = [...w.pods].find(([, p]) => p.status?.podIP === host)?.[0];
        if (!name || !w.m(name).up) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return w.session(this.who, host);
      },
      agentUnsafeStops: () => Promise.resolve([]),
      pods: {
        label: async (pod, role) => {
          const p = w.pods.get(pod);
          if (p?.metadata) p.metadata = { ...p.metadata, labels: { ...p.metadata.labels, [MYSQL_ROLE_LABEL]: role } };
        },
        restart: async (pod) => {
          w.restarted.push(pod);
          // The StatefulSet re-creates it from the new template; its mysqld starts read-only and resumes
          // replicating from its volume's settings.
          w.newPod(pod, undefined);
          const m = w.m(pod);
          m.writable = false;
          m.semiSyncWaitCount = 0;
        },
        annotate: async (pod, annotation, value) => {
          w.podAnnotations.push({ pod, annotation, value });
        },
        forceDelete: async (pod, uid) => {
          if (w.pods.get(pod)?.metadata?.uid !== uid) return;
          w.deleted.push(`pod ${pod}`);
          w.pods.delete(pod);
        },
      },
      nodeLoss: {
        nodes: async (names) => {
          for (const n of names) w.kubeReads.push(`node ${n}`);
          if (w.nodesForbidden) throw new KubeApiError(403, 'nodes "node-1" is forbidden', '{}', {});
          return names.flatMap((n) => {
            const node = w.nodes.get(n);
            return node ? [structuredClone(node)] : [];
          });
        },
        claim: async (name) => {
          w.kubeReads.push(`claim ${name}`);
          const claim = w.claims.get(name);
          return claim && structuredClone(claim);
        },
        deleteClaim: async (name, uid) => {
          if (w.claims.get(name)?.uid !== uid) return;
          w.deleted.push(`claim ${name}`);
          w.claims.delete(name);
        },
      },
      records: {
        read: async () => ({ version: String(w.version), status: structuredClone(w.status) }),
        patch: async (version, fields) => {
          if (version !== String(w.version)) return false;
          w.status = mergePatch(w.status, fields) as typeof w.status;
          w.version++;
          return true;
        },
        ensureHistory: async (first, beforeWrite) => {
          if (w.history !== undefined) return;
          beforeWrite();
          w.history = first;
        },
      },
      metrics: { member: () => undefined, cluster: () => undefined, count: (metric) => w.counted.push(metric) },
      clock: { now: () => w.t, wallClock: () => new Date(WALL_START + w.t) },
    };
  }

  /** What the reconcile hands the loop: the resource and its pods as the cache has them now. */
  context(cache: { status?: RecordedStatus } = {}): ManageContext<MySQLClusterFacts> {
    const w = this.world;
    const cr: CustomResource = {
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'MySQLCluster',
      metadata: { name: NAME, namespace: NAMESPACE, uid: UID, annotations: { ...w.annotations } },
      spec: { ...w.spec },
      status: structuredClone(cache.status ?? w.status) as Record<string, unknown>,
    };
    const sts: V1StatefulSet = {
      metadata: {
        name: NAME,
        ownerReferences: [{ apiVersion: 'v', kind: 'MySQLCluster', name: NAME, uid: UID, controller: true }],
      },
      spec: { replicas: w.stsReplicas, selector: {}, serviceName: NAME, template: {} },
      status: { replicas: w.stsReplicas, updateRevision: w.updateRevision },
    };
    const secret: V1Secret = {
      data: {
        [MYSQL_SECRET_KEYS.adminPassword]: Buffer.from('admin-pw').toString('base64'),
        [MYSQL_SECRET_KEYS.replicationPassword]: Buffer.from('repl-pw').toString('base64'),
      },
    };
    return {
      client: {} as KubeClient,
      cr,
      live: (_v, kind) => (kind === 'StatefulSet' ? sts : undefined),
      pods: [...w.pods.values()].map((p) => structuredClone(p)),
      prepared: {
        problems: [],
        facts: {
          credentialsSecretName: names.credentialsSecret,
          tlsSecretName: `${NAME}-tls`,
          tls: { caPem: FAKE_CA, notAfter: w.notAfter },
        },
      },
      secrets: () => Promise.resolve(secret),
      log: silentLogger,
      signal: this.leadership.signal,
      wake: () => this.woken++,
    };
  }

  /** One pass; what it reports is written to status as the reconcile writes it. */
  async pass(cache?: { status?: RecordedStatus }): Promise<Management> {
    this.world.replicate();
    const management = await runPass(this.context(cache), this.memory, this.ports());
    this.world.status = { ...this.world.status, ...management.fields };
    this.world.version++;
    this.world.events.push(...management.events);
    return management;
  }

  /** Passes `every` ms apart until `until` holds (at most `max`). */
  async passUntil(until: () => boolean, o: { every?: number; max?: number } = {}): Promise<Management> {
    let last = await this.pass();
    for (let i = 0; !until() && i < (o.max ?? 10); i++) {
      this.world.t += o.every ?? 1_000;
      last = await this.pass();
    }
    assert.ok(until(), `not reached after ${o.max ?? 10} passes: ${this.world.calls.join('\n')}`);
    return last;
  }
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const base = typeof target === 'object' && target !== null && !Array.isArray(target) ? target : {};
  const merged = Object.entries({ ...base, ...patch }).map(([k, v]): [string, unknown] => [
    k,
    k in patch ? mergePatch((base as Record<string, unknown>)[k], v) : v,
  ]);
  return Object.fromEntries(merged.filter(([k]) => (patch as Record<string, unknown>)[k] !== null));
}

export const reasons = (events: readonly { reason: string }[]): string[] => events.map((e) => e.reason);
export const eventOf = (w: World, reason: string): ManagedEvent | undefined =>
  w.events.find((e) => e.reason === reason);

/** A new cluster brought up by the loop itself: ha-0 the first primary, ha-1 and ha-2 its replicas, 5 writes. */
export async function healthyCluster(o: { size?: number } = {}): Promise<{ world: World; ctl: Controller }> {
  const world = new World(o.size);
  world.spec.replicas = o.size ?? 3;
  world.stsReplicas = o.size ?? 3;
  const ctl = new Controller(world);
  await ctl.pass();
  assertOnePrimary(world, 'ha-0');
  world.commit(`${NAME}-0`, 5);
  world.events.length = 0;
  world.calls.length = 0;
  return { world, ctl };
}

/** What every sequence ends with: one writable member, the recorded primary, labelled alone. */
export function assertOnePrimary(world: World, primary: string): void {
  assert.deepEqual(world.doubleWritable, []);
  assert.deepEqual(world.writable(), [primary]);
  assert.equal(world.status.currentPrimary, primary);
  assert.equal(world.status.primaryTerm?.member, primary);
  const labelled = Object.entries(world.roles()).filter(([, r]) => r === 'primary');
  assert.deepEqual(labelled, [[primary, 'primary']]);
  for (const [name, m] of world.mysqld)
    if (name !== primary && m.up)
      assert.equal(m.channel?.sourceHost, hostOf(primary), `${name} replicates from ${primary}`);
}
