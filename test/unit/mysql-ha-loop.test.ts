// The HA loop's sequences (lib/controller/mysql-cluster/ha/loop.ts) with every port faked: members over
// "SQL", their pods (labels, restarts, annotations), the status records with the API server's version
// precondition, the metrics and a clock the test moves. Each sequence runs in milliseconds; what only the
// API server decides (its preconditions on a real resource, leases) stays in
// test/integration/mysql-manager-steps.test.ts.
//
// What is asserted is what a user would notice: which member is made writable (and that no two ever are
// at once, nor one twice without a reason), the pods' role labels the Services select on, the status
// records (currentPrimary, primaryTerm, lastFailover, switchover) and the Events and counters.
import assert from 'node:assert/strict';
import type { V1Pod, V1Secret, V1StatefulSet } from '@kubernetes/client-node';
import {
  MYSQL_ROLE_LABEL,
  MYSQL_SECRET_KEYS,
  MYSQL_SWITCHOVER_ANNOTATION,
  mysqlClusterNames,
} from '../../constructs/index.js';
import type { MySQLClusterFacts } from '../../lib/controller/mysql-cluster/facts.js';
import { withKeptMembers } from '../../lib/controller/mysql-cluster/ha/kept-members.js';
import { runPass } from '../../lib/controller/mysql-cluster/ha/loop.js';
import { HaMemory } from '../../lib/controller/mysql-cluster/ha/memory.js';
import type { HaStatus } from '../../lib/controller/mysql-cluster/ha/pass.js';
import type {
  HaPorts,
  MemberActions,
  RecordedStatus,
  StepMetric,
} from '../../lib/controller/mysql-cluster/ha/ports.js';
import type { CustomResource, ManageContext, ManagedEvent, Management } from '../../lib/controller/kind-controller.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';
import type { MemberSql, Role } from '../../lib/mysql/topology.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { PollAgainError } from '../../lib/reconcile/contract.js';

const NAME = 'ha';
const NAMESPACE = 'shop';
const UID = 'uid-cluster';
const names = mysqlClusterNames(NAME);
const hostOf = (member: string): string => names.memberHost(member);
const uuidOf = (member: string): string => `${`a${member.slice(-1)}`.repeat(4)}-0000-0000-0000-000000000000`;
const FAKE_CA = '-----BEGIN CERTIFICATE-----\n(fake)\n-----END CERTIFICATE-----\n';
const NOT_AFTER = '2099-01-01T00:00:00.000Z';
const WALL_START = Date.parse('2030-01-01T00:00:00Z');

/** One fake mysqld: what it holds and how it is set up; shared by every controller's sessions to it. */
interface Mysqld {
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
}

/** The cluster as the world has it: mysqlds, pods, the API server's record, and what was done to them. */
class World {
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
class Controller {
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

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const base = typeof target === 'object' && target !== null && !Array.isArray(target) ? target : {};
  const merged = Object.entries({ ...base, ...patch }).map(([k, v]): [string, unknown] => [
    k,
    k in patch ? mergePatch((base as Record<string, unknown>)[k], v) : v,
  ]);
  return Object.fromEntries(merged.filter(([k]) => (patch as Record<string, unknown>)[k] !== null));
}

const reasons = (events: readonly { reason: string }[]): string[] => events.map((e) => e.reason);
const eventOf = (w: World, reason: string): ManagedEvent | undefined => w.events.find((e) => e.reason === reason);

/** A new cluster brought up by the loop itself: ha-0 the first primary, ha-1 and ha-2 its replicas, 5 writes. */
async function healthyCluster(o: { size?: number } = {}): Promise<{ world: World; ctl: Controller }> {
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
function assertOnePrimary(world: World, primary: string): void {
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

describe('the HA loop with fake ports (failover, switchover, scale-down, rotation, leadership)', () => {
  it('brings a new cluster up: ha-0 recorded first, then writable with semi-synchronous replication, replicas following', async () => {
    const world = new World();
    const ctl = new Controller(world);
    await ctl.pass();
    assertOnePrimary(world, 'ha-0');
    assert.deepEqual(world.madeWritable, ['ha-0']);
    assert.equal(world.history, 'ha-0');
    assert.equal(world.m('ha-0').semiSyncWaitCount, 1);
    assert.deepEqual(world.roles(), { 'ha-0': 'primary', 'ha-1': 'replica', 'ha-2': 'replica' });
    assert.deepEqual(reasons(world.events), ['PrimaryElected', 'PrimaryWritable']);
    // The election is recorded before ha-0 takes a single write.
    assert.ok(world.calls.indexOf('ctl ha-0 enableWrites') >= 0);
    // Steady: nothing more is done, and it is looked at again at the healthy poll.
    world.calls.length = 0;
    world.t += 5_000;
    const steady = await ctl.pass();
    assert.deepEqual(world.calls, []);
    assert.equal(steady.requeueAfterMs, 5_000);
  });

  describe('failover, by each rule that says the primary is lost', () => {
    it('a primary that does not answer: failoverAfterSeconds after it last answered, to the replica holding everything', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      world.t += 1_000;
      const waiting = await ctl.pass();
      assert.deepEqual(reasons(waiting.problems), ['PrimaryUnreachable']);
      assert.equal(world.status.currentPrimary, 'ha-0');
      assert.deepEqual(world.writable(), [], 'nobody takes writes while the primary may still');
      world.t += 8_000;
      await ctl.pass();
      assert.equal(world.status.currentPrimary, 'ha-0', '9 s is not 10');
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assert.deepEqual(world.by('ctl').slice(0, 4), [
        'ha-1 stopReceiver',
        'ha-2 stopReceiver',
        'ha-1 waitForApplied',
        'ha-1 leaveReplication',
      ]);
      assert.equal(world.roles()['ha-0'], 'none');
      assert.deepEqual(
        { from: world.status.lastFailover?.from, to: world.status.lastFailover?.to },
        { from: 'ha-0', to: 'ha-1' },
      );
      assert.match(
        eventOf(world, 'FailedOver')?.message ?? '',
        /^promoted ha-1: the primary ha-0 was lost \(down 10\.0 s\)/,
      );
      assert.deepEqual(world.counted, [{ kind: 'failover' }]);
      // Writes go on on ha-1, and ha-2 receives them.
      world.commit('ha-1', 3);
      assert.ok(world.m('ha-1').executed.isSubsetOf(world.m('ha-2').executed));
    });

    it('a primary whose mysql container restarted: at once, not after failoverAfterSeconds', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      const status = world.pods.get('ha-0')?.status?.containerStatuses?.[0];
      if (status) status.restartCount = 1;
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.match(eventOf(world, 'FailedOver')?.message ?? '', /\(down 1\.0 s: its mysql container restarted\)/);
    });

    it('a primary back read-only after it was down (it restarted): replaced at once by a replica holding all it had', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      world.t += 1_000;
      await ctl.pass();
      Object.assign(world.m('ha-0'), { up: true, writable: false, semiSyncWaitCount: 0 });
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1'], 'ha-0 is never made writable again');
      assert.equal(world.status.lastFailover?.ownGtidsAtFailover, `${uuidOf('ha-0')}:1-5`);
    });

    it('a primary that answers but none of its replicas hears: fenced first, then failed over from, never writable again meanwhile', async () => {
      const { world, ctl } = await healthyCluster();
      const unheardFor = (ms: number): void => {
        for (const r of ['ha-1', 'ha-2']) {
          const m = world.m(r);
          m.lagging = true;
          m.channel = { sourceHost: hostOf('ha-0'), receiver: 'ON', sourceSilentMs: ms, heartbeatMs: 1_000 };
        }
      };
      unheardFor(4_000);
      await ctl.pass();
      assert.deepEqual(world.calls, [], 'a writable primary carries on until failoverAfterSeconds');
      // Its agent fences it (it reaches no replica): the loop leaves it so.
      Object.assign(world.m('ha-0'), { writable: false, semiSyncWaitCount: 0 });
      unheardFor(6_000);
      const waiting = await ctl.pass();
      assert.deepEqual(reasons(waiting.problems), ['PrimaryIsolated']);
      assert.deepEqual(world.calls, [], 'never made writable again');
      // failoverAfterSeconds since a replica last heard it; say its fencing did not hold (writable).
      Object.assign(world.m('ha-0'), { writable: true, semiSyncWaitCount: 1 });
      unheardFor(10_000);
      await ctl.pass();
      assert.equal(world.status.currentPrimary, 'ha-1');
      assert.equal(world.by('ctl')[0], 'ha-0 fence (cut off)');
      assert.deepEqual(world.writable(), ['ha-1']);
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assert.match(eventOf(world, 'FailedOver')?.message ?? '', /heard by none of its replicas for 10 s/);
    });

    it('a primary back with another data directory (its volume lost): never writable again, replaced at once', async () => {
      const { world, ctl } = await healthyCluster();
      Object.assign(world.m('ha-0'), {
        serverUuid: 'ffffffff-0000-0000-0000-000000000000',
        executed: GtidSet.EMPTY,
        writable: false,
        semiSyncWaitCount: 0,
      });
      world.t += 1_000;
      await ctl.pass();
      assertOnePrimary(world, 'ha-1');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1'], 'the empty ha-0 is never made writable');
      assert.match(eventOf(world, 'FailedOver')?.message ?? '', /^promoted ha-1: the primary ha-0 was lost/);
      assert.equal(world.status.lastFailover?.from, 'ha-0');
    });

    it('never without a majority: two of three members gone, nobody is promoted', async () => {
      const { world, ctl } = await healthyCluster();
      world.m('ha-0').up = false;
      world.m('ha-2').up = false;
      world.t += 1_000;
      await ctl.pass();
      world.t += 60_000;
      const waiting = await ctl.pass();
      assert.deepEqual(reasons(waiting.problems), ['NoQuorum']);
      assert.equal(world.status.currentPrimary, 'ha-0');
      assert.deepEqual(world.madeWritable, ['ha-0']);
    });
  });

  describe('switchover', () => {
    it('to the member a person asks for: the old primary fenced before the new one takes writes, done once', async () => {
      const { world, ctl } = await healthyCluster();
      world.annotations[MYSQL_SWITCHOVER_ANNOTATION] = 'ha-2@req-1';
      await ctl.pass();
      assertOnePrimary(world, 'ha-2');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-2']);
      const calls = world.by('ctl');
      assert.ok(calls.indexOf('ha-0 fence') < calls.indexOf('ha-2 enableWrites'), calls.join('\n'));
      assert.deepEqual(world.status.switchover, {
        requestId: 'ha-2@req-1',
        outcome: 'Done',
        message: eventOf(world, 'SwitchedOver')?.message,
      });
      assert.match(eventOf(world, 'SwitchedOver')?.message ?? '', /^ha-2 is the primary instead of ha-0 \(requested\)/);
      assert.deepEqual(world.counted, [{ kind: 'switchover', outcome: 'done' }]);
      // The annotation stays: the request is not handled again.
      world.calls.length = 0;
      world.t += 5_000;
      await ctl.pass();
      assert.deepEqual(world.calls, []);
      assert.equal(world.counted.length, 1);
    });

    it('refused, with the reason, when the member asked for is already the primary or not a member', async () => {
      const { world, ctl } = await healthyCluster();
      world.annotations[MYSQL_SWITCHOVER_ANNOTATION] = 'ha-0@req-2';
      await ctl.pass();
      assert.equal(world.status.switchover?.outcome, 'Refused');
      assert.match(eventOf(world, 'SwitchoverRefused')?.message ?? '', /ha-0 is already the primary/);
      world.annotations[MYSQL_SWITCHOVER_ANNOTATION] = 'ha-7@req-3';
      await ctl.pass();
      assert.match(world.status.switchover?.message ?? '', /ha-7 is not a member/);
      assertOnePrimary(world, 'ha-0');
      assert.deepEqual(world.counted, [
        { kind: 'switchover', outcome: 'refused' },
        { kind: 'switchover', outcome: 'refused' },
      ]);
    });
  });

  it('a primary whose pod is stopping (drained) while it answers: a replica takes over at once, and it is never writable again', async () => {
    const { world, ctl } = await healthyCluster();
    const pod = world.pods.get('ha-0');
    if (pod?.metadata) pod.metadata.deletionTimestamp = new Date(WALL_START);
    world.t += 1_000;
    await ctl.pass();
    assert.equal(world.status.currentPrimary, 'ha-1');
    assert.deepEqual(world.writable(), ['ha-1']);
    assert.ok(world.by('ctl').includes('ha-0 fence (stopping)'));
    assert.match(eventOf(world, 'SwitchedOver')?.message ?? '', /\(its pod is stopping\)/);
    // Looked at again while it stops: nothing is asked of it, and it stays read-only.
    const before = world.calls.length;
    world.t += 1_000;
    await ctl.pass();
    assert.ok(!world.calls.slice(before).some((c) => c.startsWith('ctl ha-0 ')), world.calls.join('\n'));
    assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
    assert.deepEqual(world.doubleWritable, []);
  });

  it('scale-down: a leaving replica is kept until a remaining replica holds what it acknowledged, then let go at once', async () => {
    const { world, ctl } = await healthyCluster();
    // ha-1 lags: ha-2 alone acknowledged the last writes.
    world.m('ha-1').lagging = true;
    world.commit('ha-0', 2);
    world.spec.replicas = 2;
    const rendered = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: NAME }, spec: { replicas: 2 } };
    const applied = (): number | undefined => {
      const live = ctl.context().live('apps/v1', 'StatefulSet', NAME);
      const amended = withKeptMembers(ctl.context().cr, rendered, live, ctl.memory.keptMembers);
      return (amended.spec as { replicas?: number }).replicas;
    };
    assert.equal(applied(), 3, 'before any look at the new spec, every member stays');
    const held = await ctl.pass();
    assert.deepEqual(world.by('ctl'), ['ha-2 stopReceiver']);
    assert.equal(world.roles()['ha-2'], 'none', 'out of the replicas Service first');
    assert.match(
      held.problems.find((p) => p.reason === 'ScaleDownWaiting')?.message ?? '',
      /keeps 3 members for now: ha-2 holds transactions no remaining replica has received yet/,
    );
    assert.equal(applied(), 3);
    assert.equal(ctl.woken, 0);
    // ha-1 catches up: ha-2 may go, and the smaller StatefulSet is applied at once.
    world.m('ha-1').lagging = false;
    world.t += 1_000;
    const safe = await ctl.pass();
    assert.deepEqual(safe.problems, []);
    assert.equal(applied(), 2);
    assert.equal(ctl.woken, 1);
    // The StatefulSet removes ha-2: two members, steady.
    world.stsReplicas = 2;
    world.pods.delete('ha-2');
    world.mysqld.delete('ha-2');
    world.calls.length = 0;
    world.t += 5_000;
    await ctl.pass();
    assert.deepEqual(world.calls, []);
    assertOnePrimary(world, 'ha-0');
    assert.deepEqual(
      (world.status.members ?? []).map((m) => m.name),
      ['ha-0', 'ha-1'],
    );
  });

  describe('rotation', () => {
    it('a rolling update re-creates the replicas highest first, then switches over before it re-creates the primary', async () => {
      const { world, ctl } = await healthyCluster();
      world.updateRevision = 'rev-2';
      for (let i = 0; i < 8 && world.restarted.length < 3; i++) {
        world.t += 1_000;
        await ctl.pass();
      }
      assert.deepEqual(world.restarted, ['ha-2', 'ha-1', 'ha-0']);
      assert.equal(world.status.currentPrimary, 'ha-1', 'the most advanced updated replica, then the lowest ordinal');
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assert.deepEqual(
        reasons(world.events).filter((r) => r === 'RollingUpdate' || r === 'SwitchedOver'),
        ['RollingUpdate', 'RollingUpdate', 'SwitchedOver', 'RollingUpdate'],
      );
      await ctl.passUntil(() => world.m('ha-0').channel?.sourceHost === hostOf('ha-1'));
      assertOnePrimary(world, 'ha-1');
      assert.equal(world.counted.filter((c) => c.kind === 'failover').length, 0);
    });

    it('a renewed certificate: every member reloads it without a restart, once', async () => {
      const { world, ctl } = await healthyCluster();
      world.notAfter = '2100-01-01T00:00:00.000Z';
      for (const m of world.mysqld.values()) m.mountedNotAfter = world.notAfter;
      await ctl.pass();
      assert.deepEqual(reasons(world.events), ['CertificateReloaded', 'CertificateReloaded', 'CertificateReloaded']);
      assert.deepEqual(world.restarted, []);
      world.events.length = 0;
      world.t += 5_000;
      await ctl.pass();
      assert.deepEqual(world.events, []);
    });
  });

  describe('leadership', () => {
    it('a leader deposed in the middle of a promotion does nothing more once it knows, while the new leader promotes', async () => {
      const { world } = await healthyCluster();
      const old = new Controller(world, 'old');
      world.m('ha-0').up = false;
      await old.pass();
      world.t += 11_000;
      const gate = world.hold('old');
      const promoting = old.pass();
      promoting.catch(() => undefined);
      await gate.held;
      assert.deepEqual(world.by('old'), ['ha-1 stopReceiver', 'ha-2 stopReceiver', 'ha-1 waitForApplied']);

      // Its lease is lost; the next leader starts with no memory and fails over.
      old.leadership.abort();
      const next = new Controller(world, 'new');
      await next.pass();
      world.t += 11_000;
      await next.pass();
      assertOnePrimary(world, 'ha-1');
      const version = world.version;
      const calls = world.by('old').length;

      // The old leader's wait ends: nothing more, to the members or to the records.
      gate.release();
      await assert.rejects(promoting, (e: Error) => e.name === 'AbortError');
      assert.equal(world.by('old').length, calls, world.by('old').join('\n'));
      assert.equal(world.version, version);
      assert.deepEqual(world.madeWritable, ['ha-0', 'ha-1']);
      assertOnePrimary(world, 'ha-1');
    });

    it('a leader that does not know it was deposed is refused when it records a promotion judged from a replaced primary', async () => {
      const { world } = await healthyCluster();
      const stale = new Controller(world, 'stale');
      world.m('ha-0').up = false;
      await stale.pass();
      world.t += 11_000;
      const judgedFrom = structuredClone(world.status);
      // Another controller recorded ha-2 meanwhile; this one's cache still says ha-0.
      world.status = { ...world.status, currentPrimary: 'ha-2' };
      world.version++;
      await assert.rejects(
        stale.pass({ status: judgedFrom }),
        (e: unknown) =>
          e instanceof PollAgainError &&
          /records ha-2 primary now, not ha-0 as judged .*: ha-1 was not recorded as the primary, and is not promoted/.test(
            e.message,
          ),
      );
      assert.ok(!world.by('stale').includes('ha-1 enableWrites'));
      assert.deepEqual(world.writable(), [], 'no member was made writable');
      assert.deepEqual(world.doubleWritable, []);
      assert.equal(world.status.currentPrimary, 'ha-2');
    });
  });
});
