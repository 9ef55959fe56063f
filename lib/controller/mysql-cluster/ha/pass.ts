// One pass of a cluster's HA loop (loop.ts): what it starts from (the resource, its pods and StatefulSet
// as the cache has them, the credentials and CA it reaches members with, the cluster's memory and its
// ports) and the little it changes as its steps go (the pods' role labels, the chosen primary, the
// switchover request handled). Everything else a pass needs it observes again at every look.
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { MySQLClusterNames, MySQLClusterStatus, ResolvedMySQLClusterSpec } from '../../../../constructs/index.js';
import {
  MYSQL_ADMIN_USER,
  MYSQL_REPLICATION_USER,
  MYSQL_ROLE_LABEL,
  MYSQL_SECRET_KEYS,
  MYSQL_SWITCHOVER_ANNOTATION,
  mysqlClusterNames,
  resolveMySQLClusterSpec,
  semiSyncWaitCount,
} from '../../../../constructs/index.js';
import type { MemberCredentials } from '../../../mysql/member-sql.js';
import type { MemberView, Role, Step } from '../../../mysql/topology.js';
import type { Logger } from '../../../observability/logger.js';
import type { ManageContext, SecretLookup } from '../../kind-controller.js';
import { readSecret } from '../credentials-secret.js';
import type { MySQLClusterFacts } from '../facts.js';
import type { HaMemory, SwitchoverStatus } from './memory.js';
import type { SessionPass } from './member-sessions.js';
import type { HaPorts } from './ports.js';
import { PrimaryRecords } from './primary-records.js';

/** The status fields the loop reads and reports. */
export type HaStatus = Pick<
  MySQLClusterStatus,
  'currentPrimary' | 'members' | 'switchover' | 'primaryTerm' | 'lastFailover'
>;

/**
 * The resource's spec with its defaults, resolved where the construct resolves it (constructs/mysql/
 * settings.ts), once per version of the resource (the cache hands a new object for each).
 */
const resolvedSpecs = new WeakMap<object, ResolvedMySQLClusterSpec>();
function resolvedSpec(cr: ManageContext['cr']): ResolvedMySQLClusterSpec {
  const key = (cr.spec ?? cr) as object;
  let spec = resolvedSpecs.get(key);
  if (!spec) {
    spec = resolveMySQLClusterSpec(cr.metadata.name, cr.spec ?? {});
    resolvedSpecs.set(key, spec);
  }
  return spec;
}

/** A switchover request from the annotation: "[<pod>@]<id>". */
function switchoverRequest(value: string | undefined): { id: string; to?: string } | undefined {
  if (!value) return undefined;
  const at = value.indexOf('@');
  return at > 0 ? { id: value, to: value.slice(0, at) } : { id: value };
}

export class Pass {
  /**
   * A pass over `ctx`'s cluster, or undefined when there is nothing to look at: no pods yet (and no
   * primary recorded), no credentials or CA (no credential goes to a member that could not be
   * verified: the TLS Secret's problem is reported), a StatefulSet it does not control (its pods are
   * not its members: an ownership conflict, reported by the reconcile).
   */
  static async start(
    ctx: ManageContext<MySQLClusterFacts>,
    memory: HaMemory,
    ports: HaPorts,
  ): Promise<Pass | undefined> {
    const { cr } = ctx;
    const status = (cr.status ?? {}) as HaStatus;
    const names = mysqlClusterNames(cr.metadata.name, ctx.prepared.facts?.credentialsSecretName);
    const pods = ctx.pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/instance'] === cr.metadata.name);
    if (pods.length === 0 && status.currentPrimary === undefined) return undefined;
    const read = ctx.secrets ?? ((ns, name) => readSecret(ctx.client, ns, name));
    const credentials = await readCredentials(read, cr.metadata.namespace ?? '', names.credentialsSecret);
    const ca = ctx.prepared.facts?.tls?.caPem;
    if (!credentials || !ca) return undefined;
    const sts = ctx.live('apps/v1', 'StatefulSet', names.statefulSet) as V1StatefulSet | undefined;
    if (sts && sts.metadata?.ownerReferences?.find((r) => r.controller)?.uid !== (cr.metadata.uid ?? ''))
      return undefined;
    const sessions = memory.sessions.pass({
      connect: ports.connect,
      credentials,
      ca,
      memberHost: (member) => names.memberHost(member),
      now: () => ports.clock.now(),
      ...(ctx.wake ? { wake: ctx.wake } : {}),
    });
    return new Pass(ctx, memory, ports, { status, names, pods, sts, sessions });
  }

  readonly namespace: string;
  readonly status: HaStatus;
  readonly names: MySQLClusterNames;
  readonly sts: V1StatefulSet | undefined;
  readonly replicas: number;
  /** The semi-synchronous acknowledgements the spec asks for. */
  readonly waitCount: number;
  readonly failoverAfterMs: number;
  /** spec.nodeLoss.recoverAfterSeconds: absent, only a fenced node counts as down (node-loss.ts). */
  readonly recoverAfterSeconds: number | undefined;
  readonly sessions: SessionPass;
  readonly records: PrimaryRecords;
  readonly log: Logger;
  /** The members' current certificate's expiry, which they are made to serve (tls-reload.ts). */
  readonly notAfter: string | undefined;
  /** Throws once this process no longer leads: checked before every step and write. */
  readonly leading: () => void;
  /** The pods as the cache has them, with the role labels and deletions of this pass's steps. */
  pods: V1Pod[];
  /** The switchover request this pass has yet to handle. */
  switchover: { readonly id: string; readonly to?: string } | undefined;
  /** Members with errant transactions, as status recorded them and then as each look found them. */
  readonly knownErrant: Set<string>;
  /** Pods whose certificate a look refused, by `<pod uid>/<reason>`: one Event each. */
  readonly refused = new Map<string, { readonly member: string; readonly reason: string }>();

  private constructor(
    readonly ctx: ManageContext<MySQLClusterFacts>,
    readonly memory: HaMemory,
    readonly ports: HaPorts,
    o: {
      readonly status: HaStatus;
      readonly names: MySQLClusterNames;
      readonly pods: V1Pod[];
      readonly sts: V1StatefulSet | undefined;
      readonly sessions: SessionPass;
    },
  ) {
    const { cr } = ctx;
    const spec = resolvedSpec(cr);
    this.namespace = cr.metadata.namespace ?? '';
    this.status = o.status;
    this.names = o.names;
    this.pods = o.pods;
    this.sts = o.sts;
    this.sessions = o.sessions;
    this.replicas = spec.replicas;
    this.waitCount = semiSyncWaitCount(spec);
    this.failoverAfterMs = spec.failoverAfterSeconds * 1000;
    this.recoverAfterSeconds = spec.nodeLoss.recoverAfterSeconds;
    this.log = ctx.log;
    this.notAfter = ctx.prepared.facts?.tls?.notAfter;
    this.leading = () => ctx.signal?.throwIfAborted();
    this.knownErrant = new Set((o.status.members ?? []).filter((m) => m.errantTransactions).map((m) => m.name));
    const request = switchoverRequest(cr.metadata.annotations?.[MYSQL_SWITCHOVER_ANNOTATION]);
    const handled = [o.status.switchover?.requestId, memory.decided.switchover?.requestId];
    this.switchover = request && !handled.includes(request.id) ? request : undefined;
    this.records = new PrimaryRecords({
      records: ports.records,
      pods: ports.pods,
      namespace: this.namespace,
      name: cr.metadata.name,
      status: o.status,
      memory: memory.records,
      leading: this.leading,
      now: () => ports.clock.wallClock(),
      unsafeStops: (member) => {
        const ip = this.pods.find((p) => p.metadata?.name === member)?.status?.podIP;
        return ip ? ports.agentUnsafeStops(ip) : Promise.resolve(undefined);
      },
    });
  }

  /** The recorded primary: the one this process chose last, else the one status records. */
  get primary(): string | undefined {
    return this.memory.decided.primary ?? this.status.currentPrimary;
  }

  /** status.switchover: the last request handled. */
  get switchoverStatus(): SwitchoverStatus | undefined {
    return this.memory.decided.switchover ?? this.status.switchover;
  }

  /** Whether the leadership this pass acts under is lost. */
  get deposed(): boolean {
    return this.ctx.signal?.aborted === true;
  }

  /**
   * Records a new primary durably, with its term (and a failover's record), before it takes a single
   * write: a restarted controller must find it. Refused when the recorded primary is no longer the one
   * this pass's steps were judged from (another controller acted): then nothing is promoted, and the
   * next pass starts from what the API server has.
   */
  async choosePrimary(
    member: string,
    observed: readonly MemberView[],
    promote?: Step & { type: 'promote' },
  ): Promise<void> {
    const sql = observed.find((m) => m.name === member)?.sql;
    await this.records.elect(member, this.primary, { sql, waitCount: this.waitCount, ...(promote ? { promote } : {}) });
    this.memory.decided = { ...this.memory.decided, primary: member };
  }

  /** A switchover request handled (done, failed or refused): status.switchover says so, and it is not handled again. */
  handled(outcome: SwitchoverStatus): void {
    this.memory.waiting = undefined;
    this.memory.decided = { ...this.memory.decided, switchover: outcome };
  }

  /** How long the switchover request `id` has waited for a healthy candidate. */
  waitedMs(id: string): number {
    const now = this.ports.clock.now();
    const w = this.memory.waiting;
    if (w?.id === id) return now - w.since;
    this.memory.waiting = { id, since: now };
    return 0;
  }

  /** Sets a member's role label (none once leadership is lost), and this pass's pods with it. */
  async label(member: string, role: Role): Promise<void> {
    this.leading();
    await this.ports.pods.label(member, role);
    this.pods = this.pods.map((p) =>
      p.metadata?.name === member
        ? { ...p, metadata: { ...p.metadata, labels: { ...p.metadata.labels, [MYSQL_ROLE_LABEL]: role } } }
        : p,
    );
  }

  /** One more try to fence a lost primary, in the background (member-sessions.ts). */
  fenceInBackground(member: string): void {
    const ip = this.pods.find((p) => p.metadata?.name === member)?.status?.podIP;
    if (!ip || this.deposed) return;
    this.sessions.fenceInBackground(
      member,
      ip,
      () => !this.deposed && this.primary !== member,
      (error) => this.log.debug('the lost primary could not be fenced', { member, error }),
    );
  }
}

async function readCredentials(
  read: SecretLookup,
  namespace: string,
  secretName: string,
): Promise<MemberCredentials | undefined> {
  const secret = await read(namespace, secretName);
  const value = (key: string): string | undefined => {
    const v = secret?.data?.[key];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  };
  const adminPassword = value(MYSQL_SECRET_KEYS.adminPassword);
  const replicationPassword = value(MYSQL_SECRET_KEYS.replicationPassword);
  if (!adminPassword || !replicationPassword) return undefined;
  return {
    adminUser: MYSQL_ADMIN_USER,
    adminPassword,
    replicationUser: MYSQL_REPLICATION_USER,
    replicationPassword,
  };
}
