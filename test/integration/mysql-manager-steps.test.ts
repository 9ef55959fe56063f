// The MySQLCluster manager's step sequences, against the real kube-apiserver (status, pod labels, the
// credentials Secret) with fake members over "SQL" and a clock the test moves, so that a promotion can
// be held in the middle, exactly where a leader change hurts, and time can be told exactly:
// - leader safety: a controller that is no longer the leader must not act on a MySQLCluster, not after
//   it learns it is deposed (its signal is aborted), and not by recording a promotion judged from a
//   resource another controller has changed since (the API server refuses it);
// - failure detection: the failover delay runs from the last look that found the primary answering.
import assert from 'node:assert/strict';
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { MYSQL_CLUSTER, mysqlClusterNames } from '../../constructs/index.js';
import type { ClusterManagerOptions, MemberActions } from '../../lib/controller/mysql-cluster/cluster-manager.js';
import { createMySQLClusterManager } from '../../lib/controller/mysql-cluster/cluster-manager.js';
import type { ManageContext } from '../../lib/controller/kind-controller.js';
import type { CustomResource } from '../../lib/controller/status.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { HttpMethod, PatchStrategy, createKubeClient } from '../../lib/kube/index.js';
import type { MemberSql, ThreadState } from '../../lib/mysql/decide.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { PollAgainError } from '../../lib/reconcile/contract.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { installCrds } from './support/controller.js';

const NAME = 'ha';
const MEMBERS = [0, 1, 2].map((i) => `${NAME}-${i}`);
const SOURCE = 'a0a0a0a0-0000-0000-0000-000000000000';
const names = mysqlClusterNames(NAME);
/** The fake members verify nothing: any CA will do, as long as the manager has one (it never connects without). */
const FAKE_CA = '-----BEGIN CERTIFICATE-----\n(fake)\n-----END CERTIFICATE-----\n';

/** One fake member's state, shared by every controller's sessions to it. */
interface Member {
  up: boolean;
  writable: boolean;
  executed: string;
  channel?: { sourceHost: string; receiver: ThreadState; applier: ThreadState };
}

/** The members, what each controller did to them, and a gate that can hold a controller's promotion. */
class FakeMembers {
  readonly state = new Map<string, Member>();
  readonly calls: string[] = [];
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

  connect(who: string, ips: ReadonlyMap<string, string>): ClusterManagerOptions['connect'] {
    return async ({ host }) => {
      const name = ips.get(host) ?? '';
      const member = this.state.get(name);
      if (!member?.up) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      const did = (what: string): void => {
        this.calls.push(`${who} ${name} ${what}`);
      };
      const actions: MemberActions = {
        close: async () => undefined,
        observe: async (): Promise<MemberSql> => ({
          serverUuid: `uuid-${name}`,
          writable: member.writable,
          executed: GtidSet.parse(member.executed),
          received: member.channel ? GtidSet.parse(member.executed) : GtidSet.EMPTY,
          ...(member.channel ? { channel: member.channel } : {}),
          semiSync: { enabled: member.writable, waitCount: member.writable ? 1 : 0 },
        }),
        fence: async () => {
          did('fence');
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
      return actions;
    };
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
      stringData: { 'root-password': 'r', 'replication-password': 'p', 'admin-password': 'a' },
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
  function context(cr: CustomResource, signal?: AbortSignal): ManageContext {
    const pods: V1Pod[] = MEMBERS.map((m, i) => ({
      metadata: {
        name: m,
        namespace,
        labels: { 'app.kubernetes.io/instance': NAME, 'recon8s.dev/role': i ? 'replica' : 'primary' },
      },
      status: { podIP: `10.9.9.${i + 1}`, conditions: [{ type: 'Ready', status: i ? 'True' : 'False' }] },
    }));
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
      prepared: { problems: [], facts: { tlsCa: FAKE_CA, tlsNotAfter: '2099-01-01T00:00:00.000Z' } },
      log: silentLogger,
      ...(signal ? { signal } : {}),
    };
  }

  /** A controller: a manager of its own, on a clock the test moves. */
  function controller(
    who: string,
    members: FakeMembers,
  ): { manage: (ctx: ManageContext) => Promise<unknown>; clock: { t: number } } {
    const clock = { t: 0 };
    const manager = createMySQLClusterManager({ connect: members.connect(who, ips), now: () => clock.t });
    return { manage: (ctx) => manager.manage(ctx), clock };
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
});
