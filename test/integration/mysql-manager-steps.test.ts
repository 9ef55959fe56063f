// The MySQLCluster manager's step sequences, against the real kube-apiserver (status, pod labels, the
// credentials Secret) with fake members over "SQL" and a clock the test moves, so that a promotion can
// be held in the middle, exactly where a leader change hurts, and time can be told exactly:
// - leader safety: a controller that is no longer the leader must not act on a MySQLCluster, not after
//   it learns it is deposed (its signal is aborted), and not by recording a promotion judged from a
//   resource another controller has changed since (the API server refuses it);
// - failure detection: the failover delay runs from the last look that found the primary answering;
// - a member found silent (a partition) is never waited on again by the steps of a failover;
// - a primary that answers but that none of its replicas hears (a partial partition) is fenced, without
//   waiting for its commits, then failed over from, and never made writable again meanwhile;
// - a replica keeps its role label through a look that could not read it or read it ahead of the primary;
// - a former primary back with a commit no replica received is asked once (its pod's reprovision
//   annotation, status, one Event) to rejoin by clone, across a controller restart, and rejoins; a
//   person's write on a replica is left for a person to judge;
// - a member whose certificate is refused (MemberCertificateError) is reported in status, in Degraded and
//   by one Warning Event per pod and reason (recorded through the real Event recorder), and is failed
//   over from exactly as a member that does not answer.
import assert from 'node:assert/strict';
import type { V1ConfigMap, V1ContainerStatus, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { MANAGED_BY, MYSQL_CLUSTER, MYSQL_HISTORY_KEYS, mysqlClusterNames } from '../../constructs/index.js';
import type { MySQLClusterFacts } from '../../lib/controller/mysql-cluster/facts.js';
import type { ConnectMember, MemberActions } from '../../lib/controller/mysql-cluster/ha/ports.js';
import { kubePorts } from '../../lib/controller/mysql-cluster/ha/kube-ports.js';
import { withKeptMembers } from '../../lib/controller/mysql-cluster/ha/kept-members.js';
import { runPass } from '../../lib/controller/mysql-cluster/ha/loop.js';
import { HaMemory } from '../../lib/controller/mysql-cluster/ha/memory.js';
import { createEventRecorder, recordManaged } from '../../lib/controller/events.js';
import type { CustomResource, ManageContext, Management, Manager } from '../../lib/controller/kind-controller.js';
import { withProblems } from '../../lib/controller/status.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { HttpMethod, PatchStrategy, apiError, createKubeClient } from '../../lib/kube/index.js';
import type { MemberSql, ThreadState } from '../../lib/mysql/topology.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';
import { MemberCertificateError } from '../../lib/mysql/member-sql.js';
import type { UnsafeStop } from '../../lib/mysql/rejoin.js';
import { createControllerMetrics } from '../../lib/observability/controller-metrics.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { Registry, valueOf } from '../../lib/observability/metrics.js';
import { PollAgainError } from '../../lib/reconcile/contract.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { installCrds } from './support/controller.js';

const NAME = 'ha';
const MEMBERS = [0, 1, 2].map((i) => `${NAME}-${i}`);
/** ha-0's server_uuid: the cluster's writes, ha-0 being the first primary. */
const SOURCE = 'a0a0a0a0-0000-0000-0000-000000000000';
/** Each member's server_uuid. */
const serverUuid = (member: string): string =>
  member === `${NAME}-0` ? SOURCE : `b0b0b0b0-0000-0000-0000-00000000000${member.slice(-1)}`;
const names = mysqlClusterNames(NAME);
/** The fake members verify nothing: any CA will do, as long as the manager has one (it never connects without). */
const FAKE_CA = '-----BEGIN CERTIFICATE-----\n(fake)\n-----END CERTIFICATE-----\n';
/** The credentials Secret's passwords: no Event or status may ever hold one. */
const PASSWORDS = {
  'root-password': 'root-pw-3f9a1c',
  'replication-password': 'repl-pw-77d0e2',
  'admin-password': 'admin-pw-b41c08',
  'clone-password': 'clone-pw-5e21d7',
  'backup-password': 'backup-pw-c90a44',
};

/** One fake member's state, shared by every controller's sessions to it. */
interface Member {
  /**
   * It answers. When not, a connection is reset (ECONNRESET: no answer that says why), or, with
   * `refuses`, refused (ECONNREFUSED: its pod is there and nothing listens on MySQL's port).
   */
  up: boolean;
  refuses?: boolean;
  /**
   * Cut off: a connection attempt fails with ETIMEDOUT (the deadline passed), or hangs until
   * `release()` (a look that waited on it would never end).
   */
  partition?: 'timesOut' | 'hangs';
  writable: boolean;
  executed: string;
  /** Received from its source (default: its executed set, when it has a channel). */
  received?: string;
  /** Its next `count` observe() calls fail with `error` (a transient read failure). */
  failReads?: { error: string; count: number };
  /**
   * It presents a certificate the cluster's CA does not vouch for (OpenSSL's reason): a connection to it
   * fails in the TLS handshake with MemberCertificateError, and no session (nor credential) reaches it.
   */
  certificate?: string;
  channel?: {
    sourceHost: string;
    receiver: ThreadState;
    applier: ThreadState;
    sourceSilentMs?: number;
    heartbeatMs?: number;
  };
}

/** The members, what each controller did to them, and a gate that can hold a controller's promotion. */
class FakeMembers {
  readonly state = new Map<string, Member>();
  readonly calls: string[] = [];
  /** Connection attempts per member. */
  readonly attempts = new Map<string, number>();
  /** Every session opened, by whom and to which member, whether it was closed, and how to end it under its owner. */
  readonly sessions: { who: string; member: string; closed: boolean; lose: () => void }[] = [];
  /** Attempts held by a hanging partition. */
  private readonly hanging: (() => void)[] = [];
  private readonly held = new Map<string, { reached: () => void; release: Promise<void> }>();

  constructor() {
    this.state.set(`${NAME}-0`, { up: false, writable: true, executed: `${SOURCE}:1-10` });
    for (const m of MEMBERS.slice(1))
      this.state.set(m, {
        up: true,
        writable: false,
        executed: `${SOURCE}:1-10`,
        channel: { sourceHost: names.memberHost(`${NAME}-0`), receiver: 'CONNECTING', applier: 'ON' },
      });
  }

  /** Holds `who`'s next wait for a replica to apply; resolves once it is held, with its release. */
  hold(who: string): { held: Promise<void>; release: () => void } {
    let reached = (): void => undefined;
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (reached = r));
    this.held.set(who, { reached, release: new Promise<void>((r) => (release = r)) });
    return { held, release };
  }

  connect(who: string, ips: ReadonlyMap<string, string>): ConnectMember {
    return async ({ host, onLost }) => {
      const name = ips.get(host) ?? '';
      const member = this.state.get(name);
      this.attempts.set(name, (this.attempts.get(name) ?? 0) + 1);
      const timedOut = (): Error => Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' });
      if (member?.partition === 'timesOut') throw timedOut();
      if (member?.partition === 'hangs')
        await new Promise<void>((_resolve, reject) => this.hanging.push(() => reject(timedOut())));
      if (!member?.up)
        throw member?.refuses
          ? Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
          : Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      if (member.certificate !== undefined) throw new MemberCertificateError(member.certificate);
      const did = (what: string): void => {
        this.calls.push(`${who} ${name} ${what}`);
      };
      const record = { who, member: name, closed: false, ended: false, lose: (): void => undefined };
      record.lose = () => {
        record.ended = true;
        onLost?.();
      };
      this.sessions.push(record);
      /** What a session finds on every call: a member cut off, stopped, or a session that ended. */
      const reach = async (): Promise<void> => {
        if (member.partition === 'timesOut')
          throw Object.assign(new Error('Query inactivity timeout'), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' });
        if (member.partition === 'hangs')
          await new Promise<void>((_resolve, reject) => this.hanging.push(() => reject(timedOut())));
        if (!member.up || record.ended || record.closed)
          throw Object.assign(new Error('Connection lost: The server closed the connection.'), {
            code: 'PROTOCOL_CONNECTION_LOST',
          });
      };
      const actions: MemberActions = {
        close: async () => {
          record.closed = true;
        },
        cloneDonations: async () => {
          await reach();
          return [];
        },
        observe: async (): Promise<MemberSql> => {
          const failure = member.failReads;
          if (failure) {
            if (--failure.count <= 0) delete member.failReads;
            throw Object.assign(new Error(failure.error), { code: 'PROTOCOL_CONNECTION_LOST' });
          }
          return {
            serverUuid: serverUuid(name),
            writable: member.writable,
            executed: GtidSet.parse(member.executed),
            received: member.channel ? GtidSet.parse(member.received ?? member.executed) : GtidSet.EMPTY,
            ...(member.channel ? { channel: member.channel } : {}),
            semiSync: { enabled: member.writable, waitCount: member.writable ? 1 : 0 },
          };
        },
        fence: async (o) => {
          did(o?.cutOff ? 'fence (cut off)' : o?.stopping ? 'fence (stopping)' : 'fence');
          member.writable = false;
        },
        enableWrites: async () => {
          did('enableWrites');
          member.writable = true;
        },
        replicateFrom: async (sourceHost: string) => {
          did(`replicateFrom ${sourceHost}`);
          member.channel = { sourceHost, receiver: 'ON', applier: 'ON' };
        },
        stopReplication: async () => {
          did('stopReplication');
          delete member.channel;
        },
        admitClients: async () => {
          did('admitClients');
        },
        stopReceiver: async () => {
          did('stopReceiver');
          if (member.channel) member.channel = { ...member.channel, receiver: 'OFF' };
        },
        executed: async () => GtidSet.parse(member.executed),
        servedCertificateNotAfter: async () => '2099-01-01T00:00:00.000Z',
        reloadTls: async () => {
          did('reloadTls');
        },
        waitForApplied: async () => {
          did('waitForApplied');
          const gate = this.held.get(who);
          if (gate) {
            this.held.delete(who);
            gate.reached();
            await gate.release;
          }
          return true;
        },
        leaveReplication: async () => {
          did('leaveReplication');
          delete member.channel;
        },
      };
      // Every call but close() first reaches the member, as a session does.
      return Object.fromEntries(
        Object.entries(actions).map(([key, f]) => [
          key,
          key === 'close'
            ? f
            : async (...args: unknown[]) => {
                await reach();
                return (f as (...a: unknown[]) => Promise<unknown>)(...args);
              },
        ]),
      ) as MemberActions;
    };
  }

  /** Ends every hanging connection attempt (it times out). */
  release(): void {
    for (const end of this.hanging.splice(0)) end();
  }

  /** What `who` did, in order. */
  by(who: string): string[] {
    return this.calls.filter((c) => c.startsWith(`${who} `)).map((c) => c.slice(who.length + 1));
  }

  writable(): string[] {
    return [...this.state].filter(([, m]) => m.writable && m.up).map(([n]) => n);
  }
}

describe('MySQLCluster manager steps (real API server, fake members)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let client: KubeClient;
  let namespace: string;
  let ips: Map<string, string>;
  const path = (): string =>
    `/apis/${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}/namespaces/${namespace}/${MYSQL_CLUSTER.plural}/${NAME}`;
  const read = (): Promise<CustomResource> => client.requestJson<CustomResource>({ path: path() });

  before(async () => {
    await installCrds(controlPlane());
    client = createKubeClient({ kubeconfigPath: controlPlane().kubeconfigPath, fieldManager: 'recon8s-tests' });
  });
  after(() => client?.close());

  /** A cluster whose recorded primary ha-0 is down; ha-1 and ha-2 followed it and answer. */
  beforeEach(async () => {
    namespace = await freshNamespace('mysql-leader');
    const post = (p: string, body: object): Promise<unknown> =>
      client.requestJson({
        method: HttpMethod.POST,
        path: p,
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' },
      });
    await post(
      `/apis/${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}/namespaces/${namespace}/${MYSQL_CLUSTER.plural}`,
      {
        apiVersion: `${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}`,
        kind: MYSQL_CLUSTER.kind,
        metadata: { name: NAME },
        spec: { replicas: 3, failoverAfterSeconds: 10 },
      },
    );
    await client.request({
      method: HttpMethod.PATCH,
      path: `${path()}/status`,
      body: JSON.stringify({ status: { currentPrimary: `${NAME}-0` } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    await post(`/api/v1/namespaces/${namespace}/secrets`, {
      metadata: { name: names.credentialsSecret },
      stringData: PASSWORDS,
    });
    ips = new Map();
    for (const [i, member] of MEMBERS.entries()) {
      // Pods the labels go to (no kubelet here: they never run, which the manager never asks).
      await post(`/api/v1/namespaces/${namespace}/pods`, {
        metadata: {
          name: member,
          labels: { 'app.kubernetes.io/instance': NAME, 'recon8s.dev/role': i ? 'replica' : 'primary' },
        },
        spec: { containers: [{ name: 'mysql', image: 'mysql:9.7' }] },
      });
      ips.set(`10.9.9.${i + 1}`, member);
    }
  });

  /** What the reconcile hands the manager: the resource, its pods as the cache has them, its StatefulSet. */
  function context(
    cr: CustomResource,
    signal?: AbortSignal,
    podOf = (pod: V1Pod): V1Pod | undefined => pod,
  ): ManageContext<MySQLClusterFacts> {
    const pods: V1Pod[] = MEMBERS.flatMap((m, i) => {
      const pod = podOf({
        metadata: {
          name: m,
          namespace,
          uid: `uid-${m}`,
          labels: { 'app.kubernetes.io/instance': NAME, 'recon8s.dev/role': i ? 'replica' : 'primary' },
        },
        status: {
          podIP: `10.9.9.${i + 1}`,
          conditions: [{ type: 'Ready', status: i ? 'True' : 'False' }],
          containerStatuses: [
            {
              name: 'mysql',
              image: 'mysql:9.7',
              imageID: '',
              ready: i > 0,
              restartCount: 0,
              state: { running: { startedAt: new Date(0) } },
            },
          ],
        },
      });
      return pod ? [pod] : [];
    });
    const sts: V1StatefulSet = {
      metadata: {
        name: NAME,
        ownerReferences: [
          { apiVersion: 'v', kind: 'MySQLCluster', name: NAME, uid: cr.metadata.uid ?? '', controller: true },
        ],
      },
    };
    return {
      client,
      cr,
      live: (_v, kind) => (kind === 'StatefulSet' ? sts : undefined),
      pods,
      prepared: {
        problems: [],
        facts: {
          credentialsSecretName: `${NAME}-credentials`,
          tlsSecretName: `${NAME}-tls`,
          tls: { caPem: FAKE_CA, notAfter: '2099-01-01T00:00:00.000Z' },
        },
      },
      log: silentLogger,
      ...(signal ? { signal } : {}),
    };
  }

  /** A controller: a manager of its own, on a clock the test moves. */
  function controller(
    who: string,
    members: FakeMembers,
    agentUnsafeStops: (ip: string) => Promise<readonly UnsafeStop[] | undefined> = () => Promise.resolve([]),
  ): {
    manage: (ctx: ManageContext<MySQLClusterFacts>) => Promise<unknown>;
    clock: { t: number };
    manager: Manager<MySQLClusterFacts>;
  } {
    const clock = { t: 0 };
    let memory = new HaMemory();
    const options = {
      connect: members.connect(who, ips),
      clock: { now: () => clock.t, wallClock: () => new Date() },
      agentUnsafeStops,
    };
    const manager: Manager<MySQLClusterFacts> = {
      manage: (ctx) => runPass(ctx, memory, kubePorts(ctx, options)),
      amend: (cr, child, live) => withKeptMembers(cr, child, live, memory.keptMembers),
      forget: () => {
        memory.close();
        memory = new HaMemory();
      },
      close: () => Promise.resolve(memory.close()),
    };
    return { manage: (ctx) => manager.manage(ctx), clock, manager };
  }

  it('stops a promotion in its tracks once leadership is lost, while the new leader promotes', async () => {
    const members = new FakeMembers();
    const old = controller('old', members);
    const leadership = new AbortController();
    // The old leader notices the primary is down, then, past failoverAfterSeconds, starts promoting.
    await old.manage(context(await read(), leadership.signal));
    old.clock.t = 11_000;
    const gate = members.hold('old');
    const promoting = old.manage(context(await read(), leadership.signal));
    promoting.catch(() => undefined);
    await gate.held;
    assert.deepEqual(members.by('old'), ['ha-1 stopReceiver', 'ha-2 stopReceiver', 'ha-1 waitForApplied']);

    // Its lease is lost: the signal is aborted. The new leader takes over and fails over completely.
    leadership.abort();
    const next = controller('new', members);
    await next.manage(context(await read()));
    next.clock.t = 11_000;
    await next.manage(context(await read()));
    const recorded = await read();
    assert.equal((recorded.status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    assert.deepEqual(members.writable(), ['ha-1']);

    // The old leader's wait ends: it must do nothing more, to the members or to the resource.
    const calls = members.by('old').length;
    gate.release();
    await assert.rejects(promoting, (e: Error) => e.name === 'AbortError');
    assert.equal(
      members.by('old').length,
      calls,
      `the old leader acted after it was deposed: ${members.by('old').join(', ')}`,
    );
    assert.equal((await read()).metadata.resourceVersion, recorded.metadata.resourceVersion);
    assert.deepEqual(members.writable(), ['ha-1']);
  });

  it('fails over failoverAfterSeconds after the primary last answered, not after the first look that found it gone', async () => {
    const members = new FakeMembers();
    const primary = members.state.get(`${NAME}-0`) as Member;
    primary.up = true;
    const ctl = controller('ctl', members);
    await ctl.manage(context(await read()));
    assert.deepEqual(members.by('ctl'), [], 'a healthy cluster: nothing to do');
    // It stops answering right after that look; the next look (a steady poll, 4 s on) finds it gone.
    primary.up = false;
    ctl.clock.t = 4_000;
    await ctl.manage(context(await read()));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
    // failoverAfterSeconds (10) after it last answered: promoted.
    ctl.clock.t = 10_000;
    await ctl.manage(context(await read()));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    assert.deepEqual(members.writable(), ['ha-1']);
  });

  describe('a primary whose mysqld crashed (its container exited or restarted) or may still run', () => {
    const primaryPod = (change: (pod: V1Pod) => V1Pod | undefined) => (pod: V1Pod) =>
      pod.metadata?.name === `${NAME}-0` ? change(pod) : pod;
    const mysqlContainer = (pod: V1Pod, c: Partial<V1ContainerStatus>) => ({
      ...pod,
      status: {
        ...pod.status,
        containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({ ...s, ...c })),
      },
    });
    /**
     * A controller that looked once at a healthy cluster, whose primary ha-0 then stopped answering
     * (refused), and its next look 1 s later, with the pods as `podOf` makes them.
     */
    const lostAfterOneLook = async (podOf: (pod: V1Pod) => V1Pod | undefined) => {
      const members = new FakeMembers();
      const primary = members.state.get(`${NAME}-0`) as Member;
      primary.up = true;
      const ctl = controller('ctl', members);
      await ctl.manage(context(await read()));
      const before = members.by('ctl');
      primary.up = false;
      primary.refuses = true;
      ctl.clock.t = 1_000;
      const management = (await ctl.manage(context(await read(), undefined, podOf))) as Management;
      return { members, ctl, management, before };
    };
    const cases: readonly {
      readonly what: string;
      readonly podOf: (pod: V1Pod) => V1Pod | undefined;
      readonly why: RegExp;
    }[] = [
      {
        what: 'its mysql container restarted',
        podOf: primaryPod((p) => mysqlContainer(p, { restartCount: 1 })),
        why: /its mysql container restarted/,
      },
      {
        what: 'its mysql container exited',
        podOf: primaryPod((p) =>
          mysqlContainer(p, { state: { terminated: { exitCode: 137, reason: 'Error' } }, restartCount: 0 }),
        ),
        why: /its mysql container exited \(Error\)/,
      },
    ];
    for (const c of cases)
      it(`fails over at once, not after failoverAfterSeconds, with semi-synchronous replication: ${c.what}`, async () => {
        const { members, management: done, before } = await lostAfterOneLook(c.podOf);
        assert.deepEqual(before, [], 'a healthy cluster: nothing to do');
        assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
        assert.deepEqual(members.by('ctl').slice(0, 3), [
          'ha-1 stopReceiver',
          'ha-2 stopReceiver',
          'ha-1 waitForApplied',
        ]);
        assert.deepEqual(members.writable(), ['ha-1']);
        const message = done.events.find((e) => e.reason === 'FailedOver')?.message ?? '';
        assert.match(message, /the primary ha-0 was lost \(down 1\.0 s: /);
        assert.match(message, c.why);
      });

    const notEnough: readonly { readonly what: string; readonly podOf: (pod: V1Pod) => V1Pod | undefined }[] = [
      // Force-deleted: the object is gone while its containers may run on for a moment on the node.
      { what: 'its pod deleted', podOf: primaryPod(() => undefined) },
      {
        what: 'its pod replaced',
        podOf: primaryPod((p) => ({ ...p, metadata: { ...p.metadata, uid: 'uid-new' }, status: {} })),
      },
      // A mysqld shutting down stops listening before it ends its sessions; a proxy may refuse for it.
      { what: 'its pod refusing connections', podOf: (p) => p },
      {
        what: 'its container restarted while a replica restarted too (it may have lost what it acknowledged)',
        podOf: (p) =>
          p.metadata?.name === `${NAME}-0` || p.metadata?.name === `${NAME}-1`
            ? mysqlContainer(p, { restartCount: 1 })
            : p,
      },
    ];
    for (const c of notEnough)
      it(`waits failoverAfterSeconds for a primary that does not answer with only ${c.what}`, async () => {
        const { members, management: waiting } = await lostAfterOneLook(c.podOf);
        assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
        assert.deepEqual(members.by('ctl'), []);
        assert.deepEqual(
          waiting.problems.map((p) => p.reason),
          ['PrimaryUnreachable'],
        );
      });

    it("looks again within 250 ms while the lost primary's replacement pod runs its mysql container (its mysqld answering is the proof the failover waits for), and at the usual poll otherwise", async () => {
      const replaced = primaryPod((p) => ({ ...p, metadata: { ...p.metadata, uid: 'uid-new' } }));
      assert.equal((await lostAfterOneLook(replaced)).management.requeueAfterMs, 250);
      const starting = primaryPod((p) => ({ ...p, metadata: { ...p.metadata, uid: 'uid-new' }, status: {} }));
      assert.equal((await lostAfterOneLook(starting)).management.requeueAfterMs, 1_000);
      assert.equal((await lostAfterOneLook((p) => p)).management.requeueAfterMs, 1_000);
    });

    it('waits failoverAfterSeconds all the same without semi-synchronous replication (nothing else bounds what it acknowledged)', async () => {
      await client.request({
        method: HttpMethod.PATCH,
        path: path(),
        body: JSON.stringify({ spec: { semiSyncReplicas: 0 } }),
        headers: { 'Content-Type': PatchStrategy.MergePatch },
      });
      const restarted = primaryPod((p) => mysqlContainer(p, { restartCount: 1 }));
      const { ctl, management: waiting } = await lostAfterOneLook(restarted);
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
      assert.deepEqual(
        waiting.problems.map((p) => p.reason),
        ['PrimaryUnreachable'],
      );
      ctl.clock.t = 10_000;
      await ctl.manage(context(await read()));
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    });

    it('waits failoverAfterSeconds for a primary whose pod shuts down gracefully and no longer answers: it may still commit', async () => {
      const terminating = primaryPod((p) => ({ ...p, metadata: { ...p.metadata, deletionTimestamp: new Date() } }));
      const { members } = await lostAfterOneLook(terminating);
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
      assert.deepEqual(members.by('ctl'), []);
    });

    it('switches over at once from a primary whose pod is being deleted while it still answers (its agent fenced it for the stop), and never makes it writable again', async () => {
      const members = new FakeMembers();
      (members.state.get(`${NAME}-0`) as Member).up = true;
      const ctl = controller('ctl', members);
      await ctl.manage(context(await read()));
      const terminating = primaryPod((p) => ({ ...p, metadata: { ...p.metadata, deletionTimestamp: new Date() } }));
      ctl.clock.t = 1_000;
      // No replica receives from it yet (still connecting): none could catch up with it, so none takes over.
      const waiting = (await ctl.manage(context(await read(), undefined, terminating))) as Management;
      assert.deepEqual(
        waiting.problems.map((p) => p.reason),
        ['PrimaryStopping'],
      );
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
      for (const m of MEMBERS.slice(1)) {
        const replica = members.state.get(m) as Member;
        if (replica.channel) replica.channel = { ...replica.channel, receiver: 'ON' };
      }
      ctl.clock.t = 2_000;
      const done = (await ctl.manage(context(await read(), undefined, terminating))) as Management;
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
      assert.deepEqual(members.writable(), ['ha-1']);
      assert.ok(members.by('ctl').includes('ha-0 fence (stopping)'), members.by('ctl').join('\n'));
      assert.match(
        done.events.find((e) => e.reason === 'SwitchedOver')?.message ?? '',
        /^ha-1 is the primary instead of ha-0 \(its pod is stopping\)/,
      );
      // Looked at again while it stops: nothing is asked of it.
      const after = members.by('ctl').length;
      await ctl.manage(context(await read(), undefined, terminating));
      assert.ok(
        !members
          .by('ctl')
          .slice(after)
          .some((c) => c.startsWith('ha-0 ')),
        members.by('ctl').join('\n'),
      );
    });

    // A pod deleted with no grace period leaves the API at once (one DELETED event: the cache never holds it
    // being deleted) and its containers stop only after its stop hook; the StatefulSet re-creates it meanwhile.
    const forceDeleted: readonly { readonly what: string; readonly podOf: (pod: V1Pod) => V1Pod | undefined }[] = [
      {
        what: 'its pod still in the cache, being deleted',
        podOf: primaryPod((p) => ({ ...p, metadata: { ...p.metadata, deletionTimestamp: new Date() } })),
      },
      { what: 'its pod gone from the cache', podOf: primaryPod(() => undefined) },
      {
        what: 'its pod replaced by one not started yet',
        podOf: primaryPod((p) => ({ ...p, metadata: { ...p.metadata, uid: 'uid-new' }, status: {} })),
      },
    ];
    for (const c of forceDeleted)
      it(`switches over at once from a primary whose pod was deleted with no grace period while its mysqld still answers on the session kept to it: ${c.what}`, async () => {
        const members = new FakeMembers();
        (members.state.get(`${NAME}-0`) as Member).up = true;
        for (const m of MEMBERS.slice(1)) {
          const replica = members.state.get(m) as Member;
          if (replica.channel) replica.channel = { ...replica.channel, receiver: 'ON' };
        }
        const ctl = controller('ctl', members);
        await ctl.manage(context(await read()));
        await client.request({
          method: HttpMethod.DELETE,
          path: `/api/v1/namespaces/${namespace}/pods/${NAME}-0`,
          body: JSON.stringify({ gracePeriodSeconds: 0 }),
          headers: { 'Content-Type': 'application/json' },
        });
        ctl.clock.t = 1_000;
        const done = (await ctl.manage(context(await read(), undefined, c.podOf))) as Management;
        assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
        assert.deepEqual(members.writable(), ['ha-1']);
        assert.ok(members.by('ctl').includes('ha-0 fence (stopping)'), members.by('ctl').join('\n'));
        assert.equal(members.attempts.get(`${NAME}-0`), 1, 'asked on the session kept to it, never a new one');
        assert.match(
          done.events.find((e) => e.reason === 'SwitchedOver')?.message ?? '',
          /^ha-1 is the primary instead of ha-0 \(its pod is stopping\)/,
        );
        assert.ok(
          members.sessions.filter((x) => x.member === `${NAME}-0`).every((x) => x.closed),
          'its session ended once it is no longer the primary',
        );
      });

    it('never asks the former address of a primary whose pod was deleted with no grace period on a new session: with its kept session ended, it waits as for any lost primary', async () => {
      const members = new FakeMembers();
      const old = members.state.get(`${NAME}-0`) as Member;
      old.up = true;
      const ctl = controller('ctl', members);
      await ctl.manage(context(await read()));
      members.sessions.find((x) => x.member === `${NAME}-0`)?.lose();
      ctl.clock.t = 1_000;
      const waiting = (await ctl.manage(
        context(
          await read(),
          undefined,
          primaryPod(() => undefined),
        ),
      )) as Management;
      assert.equal(members.attempts.get(`${NAME}-0`), 1);
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
      assert.deepEqual(
        waiting.problems.map((p) => p.reason),
        ['PrimaryUnreachable'],
      );
    });
  });

  describe('sessions kept between looks', () => {
    const reachable = (m: Management): string[] =>
      (m.fields.members as { name: string; reachable: boolean }[]).filter((x) => x.reachable).map((x) => x.name);

    it('opens one session per member for any number of looks at a healthy cluster, and ends none', async () => {
      const members = healthyMembers();
      const ctl = controller('ctl', members);
      for (let i = 0; i < 5; i++) {
        ctl.clock.t = i * 5_000;
        await ctl.manage(context(await read()));
      }
      assert.deepEqual(Object.fromEntries(members.attempts), { 'ha-0': 1, 'ha-1': 1, 'ha-2': 1 });
      assert.deepEqual(
        members.sessions.filter((x) => x.closed),
        [],
      );
      assert.deepEqual(members.by('ctl'), []);
    });

    it('wakes the cluster at once when a kept session ends under it, and the next look opens a new one', async () => {
      const members = healthyMembers();
      const ctl = controller('ctl', members);
      let woken = 0;
      const ctx = async (): Promise<ManageContext<MySQLClusterFacts>> => ({
        ...context(await read()),
        wake: () => woken++,
      });
      await ctl.manage(await ctx());
      assert.equal(woken, 0);
      members.sessions.find((x) => x.member === `${NAME}-0`)?.lose();
      assert.equal(woken, 1, 'woken once by the session that ended');
      const next = (await ctl.manage(await ctx())) as Management;
      assert.equal(members.attempts.get(`${NAME}-0`), 2);
      assert.deepEqual(reachable(next), MEMBERS);
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
      assert.equal(woken, 1, 'closing a session it dropped wakes nothing');
    });

    it('asks a member once more, on a new session, when its kept one fails in a look, before it counts as not answering', async () => {
      const members = healthyMembers();
      const ctl = controller('ctl', members);
      await ctl.manage(context(await read()));
      (members.state.get(`${NAME}-1`) as Member).failReads = { error: 'Connection lost', count: 1 };
      const next = (await ctl.manage(context(await read()))) as Management;
      assert.deepEqual(reachable(next), MEMBERS);
      assert.equal(members.attempts.get(`${NAME}-1`), 2);
      assert.ok(members.sessions.filter((x) => x.member === `${NAME}-1`)[0]?.closed, 'the failed session was ended');
    });

    it("ends a member's session when its pod is replaced, and every session once the cluster is forgotten or the term ends", async () => {
      const members = healthyMembers();
      const ctl = controller('ctl', members);
      const cr = await read();
      await ctl.manage(context(cr));
      const replaced = (pod: V1Pod): V1Pod =>
        pod.metadata?.name === `${NAME}-2` ? { ...pod, metadata: { ...pod.metadata, uid: 'uid-ha-2-new' } } : pod;
      await ctl.manage(context(await read(), undefined, replaced));
      assert.equal(members.attempts.get(`${NAME}-2`), 2);
      assert.deepEqual(
        members.sessions.filter((x) => x.closed).map((x) => x.member),
        [`${NAME}-2`],
      );
      ctl.manager.forget(cr.metadata.uid ?? '');
      await eventually(async () => assert.ok(members.sessions.every((x) => x.closed)), {
        timeoutMs: 5_000,
        description: 'every session ended once the cluster is forgotten',
      });
      await ctl.manage(context(await read()));
      assert.ok(members.sessions.some((x) => !x.closed));
      await ctl.manager.close?.();
      assert.ok(
        members.sessions.every((x) => x.closed),
        'every session ended with the term',
      );
    });
  });

  it('exports the failover and switchover counters at 0 from its first look, so that the first failover is an increase Prometheus sees', async () => {
    // A series that first appears at 1 has no increase for Prometheus (increase(), changes()): without
    // the 0, the first failover after the controller started raised no Recon8sMySQLFailedOver.
    const members = new FakeMembers();
    const primary = members.state.get(`${NAME}-0`) as Member;
    primary.up = true;
    const metrics = createControllerMetrics(new Registry());
    const ctl = controller('ctl', members);
    const labels = { namespace, cluster: NAME };
    await ctl.manage({ ...context(await read()), metrics });
    assert.equal(await valueOf(metrics.mysqlFailovers, labels), 0);
    const exported = await metrics.registry.metrics();
    assert.match(
      exported,
      new RegExp(`^recon8s_mysql_failovers_total\\{namespace="${namespace}",cluster="${NAME}"\\} 0$`, 'm'),
    );
    for (const outcome of ['done', 'failed', 'refused'])
      assert.match(
        exported,
        new RegExp(`^recon8s_mysql_switchovers_total\\{[^}]*outcome="${outcome}"[^}]*\\} 0$`, 'm'),
      );
    primary.up = false;
    ctl.clock.t = 4_000;
    await ctl.manage({ ...context(await read()), metrics });
    ctl.clock.t = 10_000;
    await ctl.manage({ ...context(await read()), metrics });
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    assert.equal(await valueOf(metrics.mysqlFailovers, labels), 1);
  });

  it("records the cluster's history once it has a primary (what every member's bootstrap reads before it would start an empty database): owned by the cluster, never rewritten, not even by a failover", async () => {
    const members = new FakeMembers();
    const primary = members.state.get(`${NAME}-0`) as Member;
    primary.up = true;
    const ctl = controller('ctl', members);
    const history = (): Promise<V1ConfigMap> =>
      client.requestJson<V1ConfigMap>({ path: `/api/v1/namespaces/${namespace}/configmaps/${names.history}` });
    await ctl.manage(context(await read()));
    const first = await history();
    assert.deepEqual(first.data, { [MYSQL_HISTORY_KEYS.firstPrimary]: `${NAME}-0` });
    assert.equal(first.metadata?.ownerReferences?.[0]?.uid, (await read()).metadata.uid);
    assert.equal(first.metadata?.labels?.['app.kubernetes.io/managed-by'], MANAGED_BY);
    // No ApplySet membership: nothing ever prunes it while the cluster exists.
    assert.ok(!Object.keys(first.metadata?.labels ?? {}).some((k) => k.startsWith('applyset.kubernetes.io')));
    primary.up = false;
    ctl.clock.t = 4_000;
    await ctl.manage(context(await read()));
    ctl.clock.t = 10_000;
    await ctl.manage(context(await read()));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, `${NAME}-1`);
    const after = await history();
    assert.equal(after.metadata?.resourceVersion, first.metadata?.resourceVersion);
    assert.deepEqual(after.data, first.data);
  });

  it('fails over from a primary that answers but that none of its replicas hears, fencing it first, without making it writable again meanwhile', async () => {
    const members = new FakeMembers();
    const primary = members.state.get(`${NAME}-0`) as Member;
    primary.up = true;
    /** Every replica last heard from ha-0 `ms` ago (heartbeat every second). */
    const unheardFor = (ms: number): void => {
      for (const m of MEMBERS.slice(1)) {
        const s = members.state.get(m) as Member;
        s.channel = {
          sourceHost: names.memberHost(`${NAME}-0`),
          receiver: 'ON',
          applier: 'ON',
          sourceSilentMs: ms,
          heartbeatMs: 1000,
        };
      }
    };
    const ctl = controller('ctl', members);
    unheardFor(4_000);
    await ctl.manage(context(await read()));
    assert.deepEqual(members.by('ctl'), [], 'a writable primary carries on until failoverAfterSeconds');
    // Its agent fences it (it reaches no other member): the controller leaves it so.
    primary.writable = false;
    unheardFor(6_000);
    const waiting = (await ctl.manage(context(await read()))) as Management;
    assert.deepEqual(members.by('ctl'), [], 'never made writable again');
    assert.deepEqual(
      waiting.problems.map((p) => p.reason),
      ['PrimaryIsolated'],
    );
    // failoverAfterSeconds (10) since a replica last heard it; say its fencing did not hold (writable).
    primary.writable = true;
    unheardFor(10_000);
    const done = (await ctl.manage(context(await read()))) as Management;
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    assert.deepEqual(members.by('ctl').slice(0, 4), [
      'ha-0 fence (cut off)',
      'ha-1 stopReceiver',
      'ha-2 stopReceiver',
      'ha-1 waitForApplied',
    ]);
    assert.deepEqual(members.writable(), ['ha-1']);
    const reasons = done.events.map((e) => e.reason);
    assert.ok(reasons.includes('PrimaryIsolated'), reasons.join(', '));
    assert.match(
      done.events.find((e) => e.reason === 'FailedOver')?.message ?? '',
      /ha-0 was lost \(heard by none of its replicas for 10 s\)/,
    );
  });

  it('never fails over on one failed look after a long silence of its own (a delayed poll)', async () => {
    const members = new FakeMembers();
    const primary = members.state.get(`${NAME}-0`) as Member;
    primary.up = true;
    const ctl = controller('ctl', members);
    await ctl.manage(context(await read()));
    primary.up = false;
    // The controller looks again only a minute later (a backlog): the primary is down from then on.
    ctl.clock.t = 60_000;
    await ctl.manage(context(await read()));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
    ctl.clock.t = 61_000;
    await ctl.manage(context(await read()));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-0');
  });

  it('is refused when it records a promotion judged from a primary another controller has replaced since', async () => {
    const members = new FakeMembers();
    const stale = controller('stale', members);
    await stale.manage(context(await read()));
    stale.clock.t = 11_000;
    const judgedFrom = await read();
    // Another controller promoted ha-2 meanwhile; this one still judges from ha-0 being the primary.
    await client.request({
      method: HttpMethod.PATCH,
      path: `${path()}/status`,
      body: JSON.stringify({ status: { currentPrimary: 'ha-2' } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    await assert.rejects(
      stale.manage(context(judgedFrom)),
      (e: unknown) =>
        e instanceof PollAgainError &&
        /records ha-2 primary now, not ha-0 as judged .*: ha-1 was not recorded as the primary, and is not promoted/.test(
          e.message,
        ),
    );
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-2');
    assert.deepEqual(members.writable(), [], 'no member was made writable');
    assert.ok(!members.by('stale').includes('ha-1 enableWrites'));
  });

  it('records a promotion though its own status writes moved the resource on since it was read', async () => {
    const members = new FakeMembers();
    const ctl = controller('ctl', members);
    await ctl.manage(context(await read()));
    ctl.clock.t = 11_000;
    const judgedFrom = await read();
    // A status write that leaves the primary as it is (this controller's, the cache not caught up yet).
    await client.request({
      method: HttpMethod.PATCH,
      path: `${path()}/status`,
      body: JSON.stringify({ status: { members: [] } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    await ctl.manage(context(judgedFrom));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    assert.deepEqual(members.writable(), ['ha-1']);
  });
  it('never waits on the lost primary once a look found it silent: the failover steps go on without it', async () => {
    const members = new FakeMembers();
    const lost = members.state.get(`${NAME}-0`) as Member;
    // Cut off: the first look waits for its connection to time out, and judges it silent.
    lost.partition = 'timesOut';
    const ctl = controller('ctl', members);
    await ctl.manage(context(await read()));
    assert.equal(members.attempts.get(`${NAME}-0`), 1);
    // From now on a connection to it hangs: a look that waited on it would never end.
    lost.partition = 'hangs';
    ctl.clock.t = 11_000;
    await ctl.manage(context(await read()));
    assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
    assert.deepEqual(members.by('ctl'), [
      'ha-1 stopReceiver',
      'ha-2 stopReceiver',
      'ha-1 waitForApplied',
      'ha-1 leaveReplication',
      'ha-1 enableWrites',
      `ha-2 replicateFrom ${names.memberHost('ha-1')}`,
    ]);
    // Six looks and their steps, and the lost primary was asked twice, in the background: one probe
    // (is it back?) and one try to fence it; without waiting, it would be one attempt per look.
    assert.equal(members.attempts.get(`${NAME}-0`), 3);
    const labels = await podRoles();
    assert.deepEqual(labels, { 'ha-0': 'none', 'ha-1': 'primary', 'ha-2': 'replica' });

    // The partition heals, the old primary still writable (it had not fenced itself yet): once a probe
    // finds it answering, a look connects to it and fences it.
    members.release();
    lost.partition = undefined;
    lost.up = true;
    for (let i = 0; i < 3 && members.writable().length > 1; i++) await ctl.manage(context(await read()));
    assert.deepEqual(members.writable(), ['ha-1']);
    assert.ok(members.by('ctl').includes('ha-0 fence'), members.by('ctl').join(', '));
  });

  it('keeps the role labels through a look that cannot read a replica or reads one ahead of the primary', async () => {
    const members = new FakeMembers();
    const primary = members.state.get(`${NAME}-0`) as Member;
    primary.up = true;
    for (const m of MEMBERS.slice(1))
      (members.state.get(m) as Member).channel = {
        sourceHost: names.memberHost(`${NAME}-0`),
        receiver: 'ON',
        applier: 'ON',
      };
    const ctl = controller('ctl', members);
    await ctl.manage(context(await read()));
    assert.deepEqual(members.by('ctl'), [], 'a healthy cluster: nothing to do');
    // ha-2 applied a commit the primary made after it was read (the looks read members in parallel).
    const ahead = members.state.get(`${NAME}-2`) as Member;
    ahead.executed = `${SOURCE}:1-11`;
    await ctl.manage(context(await read()));
    // ha-1 cannot be read for one look (its kept session dropped, and the new one the look tried too).
    (members.state.get(`${NAME}-1`) as Member).failReads = {
      error: 'Connection lost: The server closed the connection.',
      count: 2,
    };
    const management = (await ctl.manage(context(await read()))) as Management;
    primary.executed = `${SOURCE}:1-11`;
    await ctl.manage(context(await read()));
    assert.deepEqual(members.by('ctl'), [], 'no step: no member relabelled, no replication stopped');
    assert.deepEqual(await podRoles(), { 'ha-0': 'primary', 'ha-1': 'replica', 'ha-2': 'replica' });
    const reported = management.fields.members as { name: string; role: string; reachable: boolean }[];
    assert.deepEqual(
      reported.map((m) => `${m.name} ${m.role}${m.reachable ? '' : ' (not reachable)'}`),
      ['ha-0 primary', 'ha-1 replica (not reachable)', 'ha-2 replica'],
    );
    assert.deepEqual(management.problems, []);
  });

  it('backs off looking at a cluster that cannot move, never beyond a healthy poll, and looks again at once after a change', async () => {
    const members = new FakeMembers();
    for (const m of MEMBERS) (members.state.get(m) as Member).up = false;
    const ctl = controller('ctl', members);
    // The clock stands still: each look finds exactly what the one before found.
    const polls: (number | undefined)[] = [];
    const look = async (): Promise<void> => {
      polls.push(((await ctl.manage(context(await read()))) as Management).requeueAfterMs);
    };
    for (let i = 0; i < 5; i++) await look();
    // A member answers again: something new, looked at again within a second.
    (members.state.get(`${NAME}-1`) as Member).up = true;
    await look();
    assert.deepEqual(polls, [1_000, 2_000, 4_000, 5_000, 5_000, 1_000]);
  });

  it('keeps a leaving replica in the StatefulSet until a remaining replica holds what it acknowledged, then lets it go at once', async () => {
    const members = healthyMembers();
    // ha-1 lags (or was cut off): ha-2 alone acknowledged 9 and 10.
    (members.state.get(`${NAME}-1`) as Member).executed = `${SOURCE}:1-8`;
    await client.request({
      method: HttpMethod.PATCH,
      path: path(),
      body: JSON.stringify({ spec: { replicas: 2 } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    const ctl = controller('ctl', members);
    const cr = await read();
    // The StatefulSet as the construct renders it for spec.replicas 2, and as it exists: 3 members.
    const rendered = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: NAME }, spec: { replicas: 2 } };
    const live: V1StatefulSet = {
      metadata: {
        name: NAME,
        ownerReferences: [
          { apiVersion: 'v', kind: 'MySQLCluster', name: NAME, uid: cr.metadata.uid ?? '', controller: true },
        ],
      },
      spec: { replicas: 3, selector: {}, serviceName: NAME, template: {} },
    };
    const applied = (): unknown => (ctl.manager.amend?.(cr, rendered, live).spec as { replicas?: number }).replicas;
    let woken = 0;
    const look = async (): Promise<Management> =>
      (await ctl.manage({
        ...context(await read()),
        live: (_v, kind) => (kind === 'StatefulSet' ? live : undefined),
        wake: () => woken++,
      })) as Management;
    assert.equal(applied(), 3, 'before any look at the new spec, every member stays');

    const held = await look();
    assert.deepEqual(members.by('ctl'), ['ha-2 stopReceiver']);
    // Re-created around its pods (storage growth): with the members kept.
    assert.equal((ctl.manager.amend?.(cr, rendered, undefined).spec as { replicas?: number }).replicas, 3);
    assert.equal((await podRoles())[`${NAME}-2`], 'none', 'out of the replicas Service first');
    assert.equal(applied(), 3);
    assert.match(
      held.problems.find((p) => p.reason === 'ScaleDownWaiting')?.message ?? '',
      /keeps 3 members for now: ha-2 holds transactions no remaining replica has received yet/,
    );
    assert.equal(woken, 0);
    // Looked at again, its receiver stays stopped.
    await look();
    assert.deepEqual(members.by('ctl'), ['ha-2 stopReceiver']);

    (members.state.get(`${NAME}-1`) as Member).executed = `${SOURCE}:1-10`;
    const safe = await look();
    assert.equal(applied(), 2);
    assert.equal(woken, 1, 'the smaller StatefulSet is applied at once, not at the next poll');
    assert.deepEqual(
      safe.problems.filter((p) => p.reason === 'ScaleDownWaiting'),
      [],
    );
    await look();
    assert.equal(woken, 1, 'woken once, not at every look');
    // A judgement of fewer members than the StatefulSet has now says nothing of the others.
    const grown: V1StatefulSet = {
      ...live,
      spec: { ...(live.spec as NonNullable<V1StatefulSet['spec']>), replicas: 5 },
    };
    assert.equal((ctl.manager.amend?.(cr, rendered, grown).spec as { replicas?: number }).replicas, 5);
  });

  describe('a member holding transactions the primary lacks', () => {
    /** The cluster's Events of `reason`, as the API server has them. */
    const eventsOf = async (reason: string): Promise<{ type?: string; message?: string; count?: number }[]> =>
      (
        await client.requestJson<{ items: { type?: string; message?: string; count?: number }[] }>({
          path: `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent(`reason=${reason}`)}`,
        })
      ).items;
    const pod = (name: string): Promise<V1Pod> =>
      client.requestJson<V1Pod>({ path: `/api/v1/namespaces/${namespace}/pods/${name}` });
    const statusOf = async (): Promise<{
      currentPrimary?: string;
      primaryTerm?: Record<string, unknown>;
      lastFailover?: Record<string, unknown>;
    }> => (await read()).status as never;
    /**
     * ha-0, the primary, commits SOURCE:11, which no replica receives (the commit waits for its
     * acknowledgement), and is killed; `ctl`'s looks fail over to ha-1. ha-0, as the members hold it.
     */
    const killedHoldingOneUnacknowledged = async (
      members: FakeMembers,
      ctl: { clock: { t: number } },
      look: () => Promise<Management>,
    ): Promise<Member> => {
      const old = members.state.get(`${NAME}-0`) as Member;
      old.executed = `${SOURCE}:1-11`;
      old.up = false;
      ctl.clock.t = 4_000;
      await look();
      ctl.clock.t = 11_000;
      await look();
      return old;
    };

    it('a former primary back with a commit no replica received: asked once to rejoin by clone, with an Event naming it, across a controller restart; then it rejoins', async () => {
      const members = healthyMembers();
      let ctl = controller('ctl', members);
      const look = looker(() => ctl);
      // The first look records ha-0's term (it was chosen before terms were recorded): what it holds so
      // far counts as from before it.
      await look();
      assert.deepEqual((await statusOf()).primaryTerm, {
        member: 'ha-0',
        serverUuid: SOURCE,
        ownGtidsAtStart: `${SOURCE}:1-10`,
        semiSyncReplicas: 1,
      });

      const old = await killedHoldingOneUnacknowledged(members, ctl, look);
      const failedOver = await statusOf();
      assert.equal(failedOver.currentPrimary, 'ha-1');
      assert.deepEqual(failedOver.lastFailover && { ...failedOver.lastFailover, time: '' }, {
        from: 'ha-0',
        to: 'ha-1',
        time: '',
        outOfReach: 0,
        term: { member: 'ha-0', serverUuid: SOURCE, ownGtidsAtStart: `${SOURCE}:1-10`, semiSyncReplicas: 1 },
      });

      // The controller restarts (nothing in memory), then ha-0 comes back read-only, holding SOURCE:11.
      ctl = controller('restarted', members);
      old.up = true;
      old.writable = false;
      let management = await look();
      const request = `discard-unacknowledged:${SOURCE}:11`;
      assert.equal((await pod('ha-0')).metadata?.annotations?.['recon8s.dev/reprovision'], request);
      assert.equal((await statusOf()).lastFailover?.discardRequested, `${SOURCE}:11`);
      const errant = management.problems.find((p) => p.reason === 'ErrantTransactions');
      assert.match(
        errant?.message ?? '',
        new RegExp(
          `^member ha-0 holds transactions the primary lacks \\(${SOURCE}:11\\): it is excluded from both Services and never promoted; they were never acknowledged \\(it was the primary until the failover to ha-1 at [^)]+\\): its agent is asked to re-provision it by clone, discarding them`,
        ),
      );
      assert.ok(!members.by('restarted').some((c) => c.startsWith('ha-0 replicateFrom')), 'never replicates meanwhile');

      // Looked at again (and again by another controller): nothing asked twice, one Event.
      await look();
      const asked = (await pod('ha-0')).metadata?.resourceVersion;
      await look();
      ctl = controller('another', members);
      management = await look();
      assert.equal((await pod('ha-0')).metadata?.resourceVersion, asked, 'the pod was not annotated again');
      assert.match(
        management.problems.find((p) => p.reason === 'ErrantTransactions')?.message ?? '',
        /its agent was asked to re-provision it by clone/,
      );
      const events = await eventually(async () => {
        const found = await eventsOf('DiscardingUnacknowledged');
        assert.equal(found.length, 1);
        return found;
      });
      assert.equal(events[0]?.type, 'Warning');
      assert.equal(events[0]?.count, 1);
      assert.match(
        events[0]?.message ?? '',
        new RegExp(
          `^ha-0, the primary until the failover to ha-1 at .*, came back holding 1 transaction\\(s\\) no client was told committed \\(${SOURCE}:11\\): its commits waited for 1 semi-synchronous acknowledgement\\(s\\) and 0 of its replicas were out of the failover's reach\\. Its agent re-provisions it by clone of the primary, discarding them`,
        ),
      );

      // Its agent clones the primary (lib/agent/reprovision.ts): it holds what ha-1 holds, and rejoins.
      old.executed = (members.state.get(`${NAME}-1`) as Member).executed;
      for (let i = 0; i < 3; i++) management = await look();
      assert.ok(members.by('another').includes(`ha-0 replicateFrom ${names.memberHost('ha-1')}`));
      assert.deepEqual(
        management.problems.map((p) => p.reason),
        [],
      );
      assert.equal((await podRoles())['ha-0'], 'replica');
    });

    it('a former primary back with a commit a graceful stop of its mysqld may have acknowledged (its agent says so): not discarded, and the condition and an Event say why; an agent that does not answer is asked again', async () => {
      const members = healthyMembers();
      const agent: { report?: readonly UnsafeStop[] } = {};
      const asked: string[] = [];
      const agentSays = (ip: string) => (asked.push(ip), Promise.resolve(agent.report));
      let ctl = controller('ctl', members, agentSays);
      const look = looker(() => ctl);
      await look();
      const old = await killedHoldingOneUnacknowledged(members, ctl, look);
      assert.equal((await statusOf()).currentPrimary, 'ha-1');
      assert.deepEqual(asked, [], 'its agent is asked only once a discard would be requested');

      // Back, read-only, holding SOURCE:11; its agent does not answer: nothing requested yet.
      ctl = controller('restarted', members, agentSays);
      old.up = true;
      old.writable = false;
      await look();
      assert.deepEqual(asked, ['10.9.9.1']);
      assert.equal((await pod('ha-0')).metadata?.annotations?.['recon8s.dev/reprovision'], undefined);
      assert.equal((await statusOf()).lastFailover?.discardRequested, undefined);

      // It answers: the mysqld that held SOURCE:11 was shut down cleanly without being fenced first.
      agent.report = [
        {
          found: '2026-11-28T04:00:00.000Z',
          why: 'it was shut down cleanly without its agent fencing it first',
          executed: `${SOURCE}:1-11`,
        },
      ];
      await look();
      assert.equal((await pod('ha-0')).metadata?.annotations?.['recon8s.dev/reprovision'], undefined);
      const failover = (await statusOf()).lastFailover;
      assert.equal(failover?.discardRequested, undefined);
      assert.equal(
        failover?.unprovable,
        `its agent found a stop of its mysqld at 2026-11-28T04:00:00.000Z that could have acknowledged commits alone (it was shut down cleanly without its agent fencing it first), when it held ${SOURCE}:11`,
      );
      const events = await eventually(async () => {
        const found = await eventsOf('UnacknowledgedNotProven');
        assert.equal(found.length, 1);
        return found;
      });
      assert.match(
        events[0]?.message ?? '',
        new RegExp(
          `^ha-0, the primary until the failover to ha-1 at .*, came back holding 1 transaction\\(s\\) the primary lacks \\(${SOURCE}:11\\), and they are not discarded automatically: its agent found a stop of its mysqld at 2026-11-28T04:00:00\\.000Z`,
        ),
      );
      // From then on the condition says why, and nothing is asked of anyone again.
      const management = await look();
      assert.match(
        management.problems.find((p) => p.reason === 'ErrantTransactions')?.message ?? '',
        /not discarded automatically: its agent found a stop of its mysqld at 2026-11-28T04:00:00\.000Z that could have acknowledged commits alone/,
      );
      assert.equal(asked.length, 2);
      assert.ok(!management.events.some((e) => e.reason === 'DiscardingUnacknowledged'));
    });

    it("a person's write on a replica stays for a person to judge: no request, no Event, and the condition says why", async () => {
      const members = healthyMembers();
      const ctl = controller('ctl', members);
      // Someone turned super_read_only off on ha-2 and wrote: its own transaction, received from no one.
      const written = members.state.get(`${NAME}-2`) as Member;
      written.executed = `${SOURCE}:1-10,${serverUuid(`${NAME}-2`)}:1`;
      written.received = `${SOURCE}:1-10`;
      let management: Management | undefined;
      for (let i = 0; i < 3; i++) management = (await ctl.manage(context(await read()))) as Management;
      assert.deepEqual(
        management?.problems.map((p) => p.reason),
        ['ErrantTransactions'],
      );
      assert.match(
        management?.problems[0]?.message ?? '',
        /never promoted; not discarded automatically: no failover from it is recorded: what it holds was not committed as the primary, so it may have been acknowledged; re-provision it by clone \(kubectl annotate pod ha-2 recon8s\.dev\/reprovision=<any new value>\) to discard them$/,
      );
      assert.ok(!management?.events.some((e) => e.reason === 'DiscardingUnacknowledged'));
      assert.equal((await pod('ha-2')).metadata?.annotations?.['recon8s.dev/reprovision'], undefined);
      assert.equal((await statusOf()).lastFailover, undefined);
      assert.deepEqual(members.by('ctl'), ['ha-2 stopReplication'], 'it stops replicating, and nothing more');
    });
  });

  describe('a member whose certificate is refused', () => {
    const UNSIGNED = 'unable to verify the first certificate';
    type Reported = { name: string; role: string; reachable: boolean; message?: string };
    const reportedOf = (m: Management, member: string): Reported | undefined =>
      (m.fields.members as Reported[]).find((r) => r.name === member);
    /** The cluster's MemberCertificateRejected Events, as the API server has them. */
    const certificateEvents = async (): Promise<{ type?: string; message?: string; count?: number }[]> =>
      (
        await client.requestJson<{ items: { type?: string; message?: string; count?: number }[] }>({
          path: `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent('reason=MemberCertificateRejected')}`,
        })
      ).items;
    const noPassword = (text: string): void => {
      for (const password of Object.values(PASSWORDS)) assert.ok(!text.includes(password), `a password in: ${text}`);
    };

    it('is reported in status, in Degraded and by one Warning Event per pod and reason, and nothing is done to it', async () => {
      const members = healthyMembers();
      const refused = members.state.get(`${NAME}-2`) as Member;
      refused.certificate = UNSIGNED;
      let ctl = controller('ctl', members);
      const look = looker(() => ctl);

      let management = await look();
      assert.deepEqual(reportedOf(management, `${NAME}-2`), {
        name: `${NAME}-2`,
        role: 'replica',
        reachable: false,
        message: `certificate rejected: ${UNSIGNED}; no credential was sent`,
      });
      assert.deepEqual(
        management.problems.map((p) => p.reason),
        ['MemberCertificateRejected'],
      );
      assert.match(
        management.problems[0]?.message ?? '',
        new RegExp(
          `^member ${NAME}-2 presented a TLS certificate the cluster's CA does not vouch for \\(${UNSIGNED}\\): refused before any credential was sent`,
        ),
      );
      const degraded = withProblems(
        [{ type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'no problems found' }],
        management.problems,
      )[0];
      assert.equal(degraded?.status === 'True' && degraded.reason, 'MemberCertificateRejected');
      assert.ok(management.requeueAfterMs !== undefined, 'it is looked at again');
      for (let i = 0; i < 3; i++) management = await look();

      const events = await eventually(async () => {
        const found = await certificateEvents();
        assert.equal(found.length, 1, 'one Event, however many looks');
        return found;
      });
      assert.equal(events[0]?.type, 'Warning');
      assert.equal(
        events[0]?.message,
        `pod ${NAME}-2 presented a TLS certificate the cluster's CA does not vouch for (${UNSIGNED}): refused in the handshake, before any credential was sent`,
      );
      noPassword(JSON.stringify([management.fields, management.problems, management.events, events]));
      assert.deepEqual(members.by('ctl'), [], 'no step: not relabelled, not re-pointed, no session to it');
      assert.equal((await podRoles())[`${NAME}-2`], 'replica');

      // Another reason: one more Event. Then a controller that starts afresh (another leader, a restart)
      // records none of them again.
      refused.certificate = 'certificate has expired';
      await look();
      await look();
      await eventually(async () => assert.equal((await certificateEvents()).length, 2));
      ctl = controller('ctl', members);
      // Its Event requests, to wait for their answers: the API server's 409, the Event being there.
      const requests: Promise<unknown>[] = [];
      const restarted = createEventRecorder(
        {
          requestJson: <T>(r: Parameters<KubeClient['requestJson']>[0]): Promise<T> => {
            const answer = client.requestJson<T>(r);
            requests.push(answer);
            return answer;
          },
        },
        silentLogger,
      );
      const cr = await read();
      recordManaged(restarted, cr, ((await ctl.manage(context(cr))) as Management).events);
      assert.equal(requests.length, 1, 'the Event of the reason the member presents now');
      assert.deepEqual(
        (await Promise.allSettled(requests)).map((a) => a.status === 'rejected' && apiError(a.reason).code),
        [409],
      );
      assert.deepEqual(
        (await certificateEvents()).map((e) => e.count),
        [1, 1],
      );

      // It serves a certificate the CA signed again: reported as answering, no problem left.
      delete refused.certificate;
      management = await look();
      assert.deepEqual(reportedOf(management, `${NAME}-2`)?.reachable, true);
      assert.equal(reportedOf(management, `${NAME}-2`)?.message, undefined);
      assert.deepEqual(management.problems, []);
    });

    it('as the primary, is failed over from exactly as a primary that does not answer, never sent a credential, and named after the wait it causes', async () => {
      const members = new FakeMembers();
      const lost = members.state.get(`${NAME}-0`) as Member;
      lost.up = true;
      lost.certificate = 'certificate has expired';
      const ctl = controller('ctl', members);
      let management = (await ctl.manage(context(await read()))) as Management;
      // What the cluster waits on first (a NoQuorum would keep its own alert), then why.
      assert.deepEqual(
        management.problems.map((p) => p.reason),
        ['PrimaryUnreachable', 'MemberCertificateRejected'],
      );
      assert.match(
        management.problems[0]?.message ?? '',
        /^the primary ha-0 has not answered for \d+ s \(certificate rejected: certificate has expired; no credential was sent\); failover after 10 s$/,
      );
      assert.match(management.problems[1]?.message ?? '', /^member ha-0 \(the primary\) presented a TLS certificate/);
      assert.match(
        management.events.find((e) => e.reason === 'MemberCertificateRejected')?.message ?? '',
        /^pod ha-0 \(the primary\) presented/,
      );

      ctl.clock.t = 11_000;
      management = (await ctl.manage(context(await read()))) as Management;
      assert.equal(((await read()).status as { currentPrimary?: string }).currentPrimary, 'ha-1');
      // The steps of any failover (a silent primary's, above), and no session to the refused member.
      assert.deepEqual(members.by('ctl'), [
        'ha-1 stopReceiver',
        'ha-2 stopReceiver',
        'ha-1 waitForApplied',
        'ha-1 leaveReplication',
        'ha-1 enableWrites',
        `ha-2 replicateFrom ${names.memberHost('ha-1')}`,
      ]);
      assert.deepEqual(await podRoles(), { 'ha-0': 'none', 'ha-1': 'primary', 'ha-2': 'replica' });
      assert.ok(management.events.some((e) => e.reason === 'FailedOver'));
      assert.deepEqual(
        management.problems.map((p) => p.reason),
        ['MemberCertificateRejected'],
      );
      assert.deepEqual(reportedOf(management, 'ha-0'), {
        name: 'ha-0',
        role: 'none',
        reachable: false,
        message: 'certificate rejected: certificate has expired; no credential was sent',
      });
    });

    it('is reported once a member found silent answers again with it', async () => {
      const members = healthyMembers();
      const member = members.state.get(`${NAME}-2`) as Member;
      member.partition = 'timesOut';
      const ctl = controller('ctl', members);
      await ctl.manage(context(await read()));
      member.partition = undefined;
      member.certificate = UNSIGNED;
      // The look after the probe (in the background) that found it answering connects, and is refused.
      await eventually(async () => {
        const management = (await ctl.manage(context(await read()))) as Management;
        assert.equal(
          reportedOf(management, `${NAME}-2`)?.message,
          `certificate rejected: ${UNSIGNED}; no credential was sent`,
        );
        assert.deepEqual(
          management.problems.map((p) => p.reason),
          ['MemberCertificateRejected'],
        );
      });
    });
  });

  /** A look by the controller `ctl()` names at that moment (it may restart), its Events recorded by the real recorder. */
  function looker(
    ctl: () => { manage: (ctx: ManageContext<MySQLClusterFacts>) => Promise<unknown> },
  ): () => Promise<Management> {
    const recorder = createEventRecorder(client, silentLogger);
    return async () => {
      const cr = await read();
      const m = (await ctl().manage(context(cr))) as Management;
      recordManaged(recorder, cr, m.events);
      return m;
    };
  }

  /** A healthy cluster: ha-0 the writable primary, ha-1 and ha-2 replicating from it. */
  function healthyMembers(): FakeMembers {
    const members = new FakeMembers();
    (members.state.get(`${NAME}-0`) as Member).up = true;
    for (const m of MEMBERS.slice(1))
      (members.state.get(m) as Member).channel = {
        sourceHost: names.memberHost(`${NAME}-0`),
        receiver: 'ON',
        applier: 'ON',
      };
    return members;
  }

  /** The role label of every member's pod, as the API server has it. */
  async function podRoles(): Promise<Record<string, string | undefined>> {
    const list = await client.requestJson<{ items: V1Pod[] }>({ path: `/api/v1/namespaces/${namespace}/pods` });
    return Object.fromEntries(
      list.items.map((p) => [p.metadata?.name ?? '', p.metadata?.labels?.['recon8s.dev/role']]),
    );
  }
});
