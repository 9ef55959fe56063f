// The MySQL cluster manager: the loop beside the render reconcile that keeps one writable primary.
//
// Contract: each time a MySQLCluster is reconciled (its children converged), manage() looks at every
// member over SQL (one session per member, kept between looks; one that ends wakes the cluster), asks decide() (lib/mysql/decide.ts, pure) for one step, does it, and looks again,
// until decide() says steady or wait (at most MAX_STEPS times). It reports status.currentPrimary and
// the members, Degraded reasons for what it waits on, and an Event for every change of topology. It
// asks to be called again soon (failure detection polls the members; nothing else would notice a
// primary that stops answering), and at once after a step. An error talking to one member is an
// observation (it "does not answer"), never a thrown error; an API error is thrown and retried. A
// member whose certificate the cluster's CA does not vouch for is one that does not answer too (it
// was sent no credential), and is reported: in status.members, in Degraded (MemberCertificateRejected)
// and by one Warning Event per pod and reason. What a failover must be able to prove later (each
// primary's term, the failover itself) is recorded in status at once, before what it guards
// (primary-records.ts); a former primary whose surplus rejoin.ts proves never acknowledged is asked to
// rejoin by clone (its pod's reprovision annotation, once) with a DiscardingUnacknowledged Event, once
// its agent reports no stop of its mysqld that could have acknowledged any of it (lib/agent/stops.ts).
import { createHash } from 'node:crypto';
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { MySQLClusterNames, MySQLClusterStatus, ResolvedMySQLClusterSpec } from '../../../constructs/index.js';
import {
  MYSQL_ADMIN_USER,
  MYSQL_PORT,
  MYSQL_REPLICATION_USER,
  MYSQL_ROLE_LABEL,
  MYSQL_SECRET_KEYS,
  MYSQL_SWITCHOVER_ANNOTATION,
  mysqlClusterNames,
  resolveMySQLClusterSpec,
  semiSyncWaitCount,
} from '../../../constructs/index.js';
import type { KubeClient } from '../../kube/index.js';
import { HttpMethod, PatchStrategy, isNotFound } from '../../kube/index.js';
import type { ClusterView, MemberSql, MemberStatus, MemberView, Role, Step } from '../../mysql/decide.js';
import { decide, primaryDataLost } from '../../mysql/decide.js';
import type { RejoinVerdict, UnsafeStop } from '../../mysql/rejoin.js';
import { rejoinNote } from '../../mysql/rejoin.js';
import { podNote } from '../../reconcile/pod-problems.js';
import type { MemberCredentials, MemberSession } from '../../mysql/member-sql.js';
import { CONNECT_TIMEOUT_MS, MemberCertificateError, connectMember } from '../../mysql/member-sql.js';
import type { ManageContext, ManagedEvent, Management, Manager, Problem, SecretLookup } from '../kind-controller.js';
import { fetchAgentUnsafeStops } from './agent-http.js';
import { readSecret } from './credentials.js';
import { TLS_CA_FACT, TLS_NOT_AFTER_FACT } from './facts.js';
import type { RecordsMemory } from './primary-records.js';
import { PrimaryRecords } from './primary-records.js';
import { recordHistory } from './history.js';
import { reloadRenewedCertificates } from './tls-reload.js';
import type { AnsweringPod } from './primary-stopped.js';
import { buildingDataDirectory, mysqlRestarts, primaryStopped, replacementStarting } from './primary-stopped.js';

const MEMBER_ROLES: readonly Role[] = ['primary', 'replica', 'none'];
/** The outcome label of recon8s_mysql_switchovers_total. */
const SWITCHOVER_OUTCOMES = ['done', 'failed', 'refused'] as const;

/** Steps per manage() call: a failover is about six (stop receivers, promote, labels, writable, re-point). */
const MAX_STEPS = 16;
/** How often a quiet cluster is looked at: the time to notice a lost primary. */
const STEADY_POLL_MS = 5_000;
/** While something is under way (a primary down, a member joining). */
const BUSY_POLL_MS = 1_000;
/**
 * While a lost primary's replacement pod runs its mysql container (a pod deleted with no grace period,
 * re-created by the StatefulSet): its mysqld answering is the failover's proof that the old one is gone,
 * and each look at a port that refuses costs a refused connection.
 */
const REPLACEMENT_POLL_MS = 250;
/**
 * The longest a cluster with no primary yet waits between looks while nothing changes (its pods cannot
 * run: unschedulable, an image missing): changes of its pods and of the resource wake it at once.
 */
const STUCK_POLL_MAX_MS = 30_000;
/** How long a promotion waits for the candidate to apply what it received. */
const APPLY_TIMEOUT_S = 60;
/**
 * Failures that took the whole deadline to come (no answer at all: a partition, a node gone), unlike a
 * refused connection: asking again would wait as long, at every look of a failover.
 */
const SILENT_CODES = new Set(['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'PROTOCOL_SEQUENCE_TIMEOUT']);

/** A session kept open between looks, and what it was opened for (pod, credentials, CA). */
interface KeptSession {
  readonly key: string;
  readonly session: MemberActions;
}

/** Ends a session without waiting for it (nor for its failure: it is no longer used). */
const endSession = (session: MemberActions): void => {
  void session.close().catch(() => undefined);
};

/** A member judged silent: its pod then (uid and IP), why, and whether a probe of it is under way. */
interface Silent {
  readonly pod: string;
  error: string;
  probing: boolean;
}

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

type Status = Pick<MySQLClusterStatus, 'currentPrimary' | 'members' | 'switchover' | 'primaryTerm' | 'lastFailover'>;

/**
 * The members' DNS names and the StatefulSet revision, from the pods in the cache. A pod being deleted
 * is no member, but the primary's (decide.ts: a replica takes over at once).
 */
function memberViews(
  pods: readonly V1Pod[],
  names: MySQLClusterNames,
  updateRevision: string | undefined,
  primary: string | undefined,
  wallNowMs: number,
): Omit<MemberView, 'sql' | 'error'>[] {
  return pods
    .filter((p) => p.metadata?.name && (!p.metadata.deletionTimestamp || p.metadata.name === primary))
    .map((p) => {
      const name = p.metadata?.name ?? '';
      const role = p.metadata?.labels?.[MYSQL_ROLE_LABEL];
      const revision = p.metadata?.labels?.['controller-revision-hash'];
      return {
        name,
        ordinal: Number(/-(\d+)$/.exec(name)?.[1] ?? -1),
        host: names.memberHost(name),
        ...(role === 'primary' || role === 'replica' || role === 'none' ? { role: role as Role } : {}),
        ready: (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
        outdated: updateRevision !== undefined && revision !== undefined && revision !== updateRevision,
        ...(p.metadata?.deletionTimestamp ? { terminating: true } : {}),
        ...(buildingDataDirectory(p, wallNowMs) ? { buildingDataDirectory: true } : {}),
      };
    })
    .filter((m) => m.ordinal >= 0);
}

/** A switchover request from the annotation: "[<pod>@]<id>". */
function switchoverRequest(value: string | undefined): { id: string; to?: string } | undefined {
  if (!value) return undefined;
  const at = value.indexOf('@');
  return at > 0 ? { id: value, to: value.slice(0, at) } : { id: value };
}

const podIdentity = (pod: V1Pod | undefined): string => `${pod?.metadata?.uid ?? ''}/${pod?.status?.podIP ?? ''}`;

/** A mysql2 error, without anything but its own words (they never hold a password). */
function describe(e: unknown): string {
  const err = e as { code?: string; message?: string };
  return `${err.code ? `${err.code}: ` : ''}${err.message ?? String(e)}`.slice(0, 300);
}

/** What the manager does on a member over SQL: a MemberSession (or a fake, in tests of its steps). */
export type MemberActions = Pick<MemberSession, keyof MemberSession>;
/** How the manager reaches a member. */
export type ConnectMember = (o: Parameters<typeof connectMember>[0]) => Promise<MemberActions>;

export interface ClusterManagerOptions {
  /** Default: a MySQL connection (connectMember). */
  readonly connect?: ConnectMember;
  /** Monotonic milliseconds (how long a primary has been down). Default: performance.now. */
  readonly now?: () => number;
  /** Wall-clock time, for the times status records. Default: new Date(). */
  readonly wallClock?: () => Date;
  /** GET /unsafe-stops of the agent at a pod's address (default: HTTP, agent-unsafe-stops.ts). */
  readonly agentUnsafeStops?: (ip: string) => Promise<readonly UnsafeStop[] | undefined>;
}

/**
 * The manager of every MySQLCluster of this controller.
 *
 * Leader safety: nothing is done for a resource once `ctx.signal` is aborted (leadership lost): it is
 * checked before every step and every write, and after every wait. A new primary is recorded only if
 * the recorded one is still the one the steps were judged from (read live, then written with its
 * resourceVersion as a precondition), so a controller that judged from a primary another controller
 * has replaced since (a deposed leader's promotion) is refused, and a member is made writable only once
 * its election is recorded.
 */
export function createMySQLClusterManager(opts: ClusterManagerOptions = {}): Manager {
  const connect: ConnectMember = opts.connect ?? connectMember;
  const agentUnsafeStops = opts.agentUnsafeStops ?? fetchAgentUnsafeStops;
  /**
   * Per cluster uid: since when (monotonic ms) its recorded primary has been down: from the last look
   * that found it answering, not the first that did not (a poll is up to STEADY_POLL_MS late), but
   * never more than a poll before that first failed look (a reconcile delayed by a backlog must not
   * turn one failed look into a failover).
   */
  const down = new Map<string, { primary: string; since: number }>();
  /** Per cluster uid: when its recorded primary last answered, and every member's pod then. */
  const answered = new Map<
    string,
    { primary: string; at: number; pods: ReadonlyMap<string, AnsweringPod>; primaryPod?: V1Pod }
  >();
  /**
   * Per cluster uid: the primary this process chose last and the switchover requests it handled. The
   * cache may still hold the status from before that choice (the status write has not come back
   * through the watch yet): acting on it would fence the new primary and give the writes back to
   * the old one. What this process wrote itself is never older than what its cache says.
   */
  const decided = new Map<string, { primary?: string; switchover?: Status['switchover'] }>();
  /** Per cluster uid: the primary's term and the last failover as this process recorded them (primary-records.ts), for the same reason. */
  const recorded = new Map<string, RecordsMemory>();
  /** Per cluster uid: the switchover request waiting for a healthy candidate, and since when (monotonic ms). */
  const waiting = new Map<string, { id: string; since: number }>();
  /**
   * Per cluster uid: the members a look found silent (no answer within the deadline), until one
   * answers again or its pod changes. Looks do not wait on them: a probe in the background asks
   * again, one at a time, and the next look after it got an answer connects as usual. Without this,
   * every look of a failover waited the connect timeout on the lost primary (~3 s per step).
   */
  const silent = new Map<string, Map<string, Silent>>();
  /**
   * Per cluster uid: what its last look found while something was unsettled, and the poll that
   * followed: the same again doubles it (up to a bound), anything new starts again from BUSY_POLL_MS.
   */
  const unsettled = new Map<string, { seen: string; pollMs: number }>();
  /**
   * Per cluster uid, per member: the session the last look used, kept open for the next (no TLS
   * handshake and login every few seconds per member). One that ends meanwhile wakes the cluster at
   * once (a primary whose mysqld died is looked at then, not at the next poll); one whose pod, address,
   * credentials or CA changed, or that failed in a look, is closed and opened again.
   */
  const kept = new Map<string, Map<string, KeptSession>>();
  /** Ends a cluster's kept sessions, without waiting (a session to a member cut off ends only at its deadline). */
  const closeKept = (uid: string): void => {
    for (const k of kept.get(uid)?.values() ?? []) endSession(k.session);
    kept.get(uid)?.clear();
  };
  /**
   * Per cluster uid: the StatefulSet size the last look allowed (decide.ts's `kept`), the spec.replicas
   * it was judged for and the StatefulSet's size that look saw. A judgement of another spec.replicas,
   * or of fewer members than the StatefulSet has now, is not used: until a look judges them, a
   * scale-down keeps every member the StatefulSet has.
   */
  const keptMembers = new Map<string, { readonly replicas: number; readonly keep: number; readonly of: number }>();
  /** Per cluster uid: when a lost session last woke it (monotonic ms): at most once a BUSY_POLL_MS. */
  const woken = new Map<string, number>();
  const now = opts.now ?? ((): number => performance.now());

  return {
    close() {
      for (const uid of kept.keys()) closeKept(uid);
      kept.clear();
      return Promise.resolve();
    },
    amend(cr, child, live) {
      const uid = cr.metadata.uid ?? '';
      if (child.kind !== 'StatefulSet') return child;
      const want = (child.spec as { replicas?: number } | undefined)?.replicas ?? 1;
      const withReplicas = (replicas: number): typeof child =>
        replicas === want ? child : { ...child, spec: { ...(child.spec as Record<string, unknown>), replicas } };
      const judged = keptMembers.get(uid);
      // Re-created around its pods (storage growth deletes it, orphaning them): as many as the last look kept.
      if (!live) return withReplicas(judged?.replicas === want ? Math.max(want, judged.keep) : want);
      const have = (live as V1StatefulSet).spec?.replicas ?? 0;
      if (have <= want) return child;
      // Never a primary recorded: no write was ever acknowledged, nothing to keep.
      const neverServed = (cr.status as Status | undefined)?.currentPrimary === undefined;
      const keep = judged?.replicas === want && have <= judged.of ? judged.keep : neverServed ? want : have;
      return withReplicas(Math.min(have, Math.max(want, keep)));
    },
    forget(uid) {
      keptMembers.delete(uid);
      closeKept(uid);
      kept.delete(uid);
      woken.delete(uid);
      down.delete(uid);
      answered.delete(uid);
      decided.delete(uid);
      recorded.delete(uid);
      waiting.delete(uid);
      silent.delete(uid);
      unsettled.delete(uid);
    },
    async manage(ctx: ManageContext): Promise<Management> {
      /** Nothing to look at (no pods yet, no credentials or CA, a StatefulSet it does not control): no session kept either. */
      const nothingToManage = (uid: string): Management => {
        closeKept(uid);
        return { fields: {}, problems: [], events: [] };
      };
      const { cr, client, log } = ctx;
      const uid = cr.metadata.uid ?? '';
      const namespace = cr.metadata.namespace ?? '';
      const spec = resolvedSpec(cr);
      const status = (cr.status ?? {}) as Status;
      const names = mysqlClusterNames(cr.metadata.name, ctx.prepared.facts?.credentialsSecretName);
      const pods = ctx.pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/instance'] === cr.metadata.name);
      if (pods.length === 0 && status.currentPrimary === undefined) return nothingToManage(uid);
      const credentials = await readCredentials(
        ctx.secrets ?? ((ns, name) => readSecret(client, ns, name)),
        namespace,
        names.credentialsSecret,
      );
      if (!credentials) return nothingToManage(uid);
      // No credential goes to a member that could not be verified (the TLS Secret's problem is reported).
      const ca = ctx.prepared.facts?.[TLS_CA_FACT];
      if (!ca) return nothingToManage(uid);
      // What a kept session was opened with: another password or CA is another session. A digest, so
      // that no password is kept beside the sessions longer than the credentials themselves.
      const opened = createHash('sha256')
        .update([credentials.adminPassword, credentials.replicationPassword, ca].join('\0'))
        .digest('hex');
      /** What a session kept for `pod` was opened for: the pod (uid and address), the credentials and the CA. */
      const sessionKey = (pod: V1Pod | undefined): string => `${podIdentity(pod)}/${opened}`;
      const keptNow = kept.get(uid) ?? new Map<string, KeptSession>();
      kept.set(uid, keptNow);
      /** Not waited for: ending a session to a member cut off waits for its deadline, and no look waits on a silent member. */
      const dropKept = (name: string): void => {
        const k = keptNow.get(name);
        keptNow.delete(name);
        if (k) endSession(k.session);
      };
      /** The member's kept session if it was opened for this pod, these credentials and this CA; else a new one, kept. */
      /** A session to the member `name` at `ip`, its certificate verified by the cluster CA and that name. */
      const connectTo = (name: string, ip: string, more: { onLost?: () => void } = {}): Promise<MemberActions> =>
        connect({ host: ip, servername: names.memberHost(name), port: MYSQL_PORT, credentials, ca, ...more });
      const sessionTo = async (name: string, pod: V1Pod | undefined, ip: string): Promise<MemberActions> => {
        const key = sessionKey(pod);
        const k = keptNow.get(name);
        if (k?.key === key) return k.session;
        if (k) dropKept(name);
        const opening: { session?: MemberActions } = {};
        const session = await connectTo(name, ip, {
          onLost: () => {
            // Ended under it (its mysqld died, it closed the session): dropped, and the cluster looked at now.
            const lost = opening.session;
            if (lost !== undefined && keptNow.get(name)?.session === lost) {
              keptNow.delete(name);
              endSession(lost);
              // Looked at now, but never in a loop (a member that keeps ending new sessions).
              const last = woken.get(uid);
              if (last === undefined || now() - last >= BUSY_POLL_MS) {
                woken.set(uid, now());
                ctx.wake?.();
              }
            }
          },
        });
        opening.session = session;
        keptNow.set(name, { key, session });
        return session;
      };

      const sts = ctx.live('apps/v1', 'StatefulSet', names.statefulSet) as V1StatefulSet | undefined;
      // Pods of a StatefulSet this resource does not control are not its members (an ownership
      // conflict, reported by the reconcile): never touched.
      const controller = sts?.metadata?.ownerReferences?.find((r) => r.controller);
      if (sts && controller?.uid !== uid) return nothingToManage(uid);
      const replicas = spec.replicas;
      const waitCount = semiSyncWaitCount(spec);
      const failoverAfterMs = spec.failoverAfterSeconds * 1000;
      const memory = decided.get(uid) ?? {};
      let primary = memory.primary ?? status.currentPrimary;
      const knownErrant = new Set((status.members ?? []).filter((m) => m.errantTransactions).map((m) => m.name));
      let switchover = switchoverRequest(cr.metadata.annotations?.[MYSQL_SWITCHOVER_ANNOTATION]);
      if (
        switchover &&
        (status.switchover?.requestId === switchover.id || memory.switchover?.requestId === switchover.id)
      )
        switchover = undefined;
      const leading = (): void => ctx.signal?.throwIfAborted();
      // A cluster with a recorded primary has a history: its members' bootstrap must see it (history.ts).
      if (primary !== undefined) await recordHistory(client, cr, ctx.live, primary, leading);
      const recordsMemory = recorded.get(uid) ?? {};
      recorded.set(uid, recordsMemory);
      const records = new PrimaryRecords({
        client,
        namespace,
        name: cr.metadata.name,
        status,
        memory: recordsMemory,
        leading,
        ...(opts.wallClock ? { now: opts.wallClock } : {}),
        unsafeStops: (member) => {
          const ip = podsNow.find((p) => p.metadata?.name === member)?.status?.podIP;
          return ip ? agentUnsafeStops(ip) : Promise.resolve(undefined);
        },
      });
      /**
       * Records a new primary durably, with its term (and a failover's record), before it takes a
       * single write: a restarted controller must find it. Refused when the recorded primary is no
       * longer the one this manager's steps were judged from (another controller acted): then nothing is
       * promoted, and the next look starts from what the API server has.
       */
      const choosePrimary = async (
        member: string,
        observed: readonly MemberView[],
        promote?: Step & { type: 'promote' },
      ): Promise<void> => {
        const sql = observed.find((m) => m.name === member)?.sql;
        await records.elect(member, primary, { sql, waitCount, ...(promote ? { promote } : {}) });
        primary = member;
        decided.set(uid, { ...decided.get(uid), primary: member });
      };
      const waitedMs = (id: string): number => {
        const w = waiting.get(uid);
        if (w?.id === id) return now() - w.since;
        waiting.set(uid, { id, since: now() });
        return 0;
      };
      const handled = (outcome: NonNullable<Status['switchover']>): void => {
        waiting.delete(uid);
        switchoverStatus = outcome;
        decided.set(uid, { ...decided.get(uid), switchover: outcome });
      };
      let switchoverStatus = memory.switchover ?? status.switchover;
      const events: ManagedEvent[] = [];
      let problems: Problem[] = [];
      let members: readonly MemberStatus[] = status.members ?? [];
      let lastStep: Step = { type: 'steady' };
      let writesWait: string | undefined;
      /** The StatefulSet size the last look allowed (scale-down.ts); undefined until a look decided. */
      let allowed: number | undefined;
      /** The last look's verdicts on members holding what the primary lacks, and its errant members. */
      let verdicts: readonly RejoinVerdict[] = [];
      let errantNow: ReadonlySet<string> = new Set();
      /** The last look's MemberCertificateRejected problems (after every other: decide.ts says why). */
      let rejected: readonly Problem[] = [];
      /** Pods whose certificate a look refused, by `<pod uid>/<reason>`: one Event each. */
      const refusedPods = new Map<string, { readonly member: string; readonly reason: string }>();
      let podsNow = pods;
      const silentNow = silent.get(uid) ?? new Map<string, Silent>();
      silent.set(uid, silentNow);
      /** Asks a silent member again, in the background: the look that started it does not wait. */
      const probe = (name: string, entry: Silent, ip: string): void => {
        if (entry.probing) return;
        entry.probing = true;
        void (async () => {
          try {
            const session = await connectTo(name, ip);
            try {
              await session.observe();
            } finally {
              await session.close();
            }
            if (silentNow.get(name) === entry) silentNow.delete(name);
          } catch (e) {
            entry.error = describe(e);
            // It answers, with a certificate that is refused: no longer silent, the next look reports it.
            if (e instanceof MemberCertificateError && silentNow.get(name) === entry) silentNow.delete(name);
          } finally {
            entry.probing = false;
          }
        })();
      };
      /**
       * Fencing a lost primary is its own job (it fences itself when it reaches no replica); this is
       * one more try, in the background, in case it answers again (the failover never waits on it).
       */
      const fenceInBackground = (name: string): void => {
        const ip = podsNow.find((p) => p.metadata?.name === name)?.status?.podIP;
        if (!ip || ctx.signal?.aborted) return;
        void (async () => {
          const session = await connectTo(name, ip);
          try {
            if (!ctx.signal?.aborted && primary !== name) await session.fence();
          } finally {
            await session.close();
          }
        })().catch((e: unknown) =>
          log.debug('the lost primary could not be fenced', { member: name, error: describe(e) }),
        );
      };

      /**
       * The recorded primary's pod as it was when it last answered, while the API no longer has it but the
       * session kept to its mysqld still stands: a pod deleted with no grace period leaves the API at once,
       * and its containers stop only after its stop hook (its agent fences it, then waits for its replicas
       * to leave it). Looked at as a pod being deleted, so that a replica takes over at once, as for a
       * graceful deletion, instead of after the replacement's mysqld has started on the same volume (the
       * proof that this one is gone). Through the kept session only: a new connection to its address could
       * reach whatever is given that address next.
       */
      const formerPrimary = (): V1Pod | undefined => {
        const last = primary === undefined ? undefined : answered.get(uid);
        const pod = last?.primary === primary ? last?.primaryPod : undefined;
        if (!pod || podsNow.some((p) => p.metadata?.uid === pod.metadata?.uid)) return undefined;
        if (keptNow.get(pod.metadata?.name ?? '')?.key !== sessionKey(pod)) return undefined;
        return {
          ...pod,
          metadata: { ...pod.metadata, deletionTimestamp: pod.metadata?.deletionTimestamp ?? new Date(0) },
        };
      };
      /** The pods a look asks: those in the cache, with the former primary's in place of its replacement. */
      const podsToAsk = (former: V1Pod | undefined): V1Pod[] =>
        former ? [...podsNow.filter((p) => p.metadata?.name !== former.metadata?.name), former] : podsNow;

      for (let i = 0; i < MAX_STEPS; i++) {
        const former = formerPrimary();
        const asking = podsToAsk(former);
        const views = memberViews(asking, names, sts?.status?.updateRevision, primary, Date.now());
        const sessions = new Map<string, MemberActions>();
        try {
          const observed = await Promise.all(
            views.map(async (v): Promise<MemberView> => {
              const pod = asking.find((p) => p.metadata?.name === v.name);
              const ip = pod?.status?.podIP;
              // A member whose pod cannot start says why (Init:ImagePullBackOff: …), not ECONNREFUSED; it
              // is asked anyway: a container that crash-loops beside a running mysqld does not stop it.
              const note = (): string | undefined => podNote(pod, new Date());
              if (!ip) return { ...v, error: note() ?? 'the pod has no IP address yet' };
              const known = silentNow.get(v.name);
              if (known?.pod === podIdentity(pod)) {
                probe(v.name, known, ip);
                return { ...v, error: note() ?? known.error };
              }
              silentNow.delete(v.name);
              try {
                const reused = keptNow.get(v.name)?.session;
                let session = await sessionTo(v.name, pod, ip);
                let sql: MemberSql;
                try {
                  // A kept session answers within a connection's deadline, or the member is as silent as
                  // one that does not let a connection in.
                  sql = await session.observe(session === reused ? CONNECT_TIMEOUT_MS : undefined);
                } catch (e) {
                  dropKept(v.name);
                  // A kept session may have ended unnoticed (a member restarted between looks): the
                  // member is asked once more, on a session of its own, before it counts as not answering.
                  if (session !== reused || pod === former || SILENT_CODES.has((e as { code?: string }).code ?? ''))
                    throw e;
                  session = await sessionTo(v.name, pod, ip);
                  sql = await session.observe();
                }
                sessions.set(v.name, session);
                return { ...v, sql };
              } catch (e) {
                // A member that did not answer keeps no session.
                dropKept(v.name);
                if (e instanceof MemberCertificateError) {
                  refusedPods.set(`${pod?.metadata?.uid ?? v.name}/${e.verifyError}`, {
                    member: v.name,
                    reason: e.verifyError,
                  });
                  return { ...v, error: describe(e), certificateRejected: e.verifyError };
                }
                const code = (e as { code?: string }).code ?? '';
                if (SILENT_CODES.has(code))
                  silentNow.set(v.name, { pod: podIdentity(pod), error: describe(e), probing: false });
                return { ...v, error: note() ?? describe(e) };
              }
            }),
          );
          const current = primary !== undefined ? observed.find((m) => m.name === primary) : undefined;
          const downEntry = primary !== undefined ? down.get(uid) : undefined;
          const podsByName = new Map(podsNow.map((p) => [p.metadata?.name ?? '', p]));
          // An answer from the former primary's pod (deleted) is no look at the pods there are now.
          if (primary !== undefined && current?.sql && !former)
            answered.set(uid, {
              primary,
              at: now(),
              pods: new Map(
                [...podsByName].map(([name, p]) => [name, { uid: p.metadata?.uid ?? '', restarts: mysqlRestarts(p) }]),
              ),
              ...(podsByName.has(primary) ? { primaryPod: podsByName.get(primary) } : {}),
            });
          if (primary === undefined || current?.sql?.writable) down.delete(uid);
          else if (!current?.sql && downEntry?.primary !== primary) {
            const last = answered.get(uid);
            const lastGood = last?.primary === primary ? last.at : now();
            down.set(uid, { primary, since: Math.max(lastGood, now() - STEADY_POLL_MS) });
          }
          const downSince = down.get(uid);
          const lastAnswer = answered.get(uid);
          // With the semi-synchronous acknowledgements the primary's term enforced, not only those the
          // spec asks now (raised since, they may not have reached it before it stopped).
          const term = records.term;
          const termWaitCount = term && term.member === primary ? term.semiSyncReplicas : undefined;
          const enforced = Math.min(waitCount, termWaitCount ?? waitCount);
          const stopped =
            primary !== undefined && !current?.sql && lastAnswer?.primary === primary && enforced > 0
              ? primaryStopped(primary, podsByName, lastAnswer.pods)
              : undefined;
          // What the look found that the proof of rejoin.ts rests on is recorded before any step.
          await records.afterLook(observed, primary, waitCount);
          const termNow = records.term;
          const primaryTerm = termNow && termNow.member === primary ? termNow : undefined;
          // A primary that lost its data is no reference for what others hold beyond it (decide.ts, 6).
          const lost = primaryDataLost({ members: observed, primary, ...(primaryTerm ? { primaryTerm } : {}) });
          verdicts = lost === undefined ? records.verdicts(observed, primary) : [];
          const notes = new Map(verdicts.map((v) => [v.member, rejoinNote(v)]));
          // The members the StatefulSet holds: its size, or more while pods above it still run (it was
          // deleted around them to grow their volumes, or has yet to remove them).
          const heldNow = Math.max(
            sts?.spec?.replicas ?? 0,
            ...observed.filter((m) => !m.terminating).map((m) => m.ordinal + 1),
          );
          const view: ClusterView = {
            members: observed,
            replicas,
            ...(heldNow > replicas ? { heldReplicas: heldNow } : {}),
            ...(primary !== undefined ? { primary, primaryHost: names.memberHost(primary) } : {}),
            ...(downSince && downSince.primary === primary ? { primaryDownMs: now() - downSince.since } : {}),
            failoverAfterMs,
            ...(stopped ? { primaryStopped: stopped } : {}),
            waitCount,
            ...(termWaitCount !== undefined ? { termWaitCount } : {}),
            ...(primaryTerm ? { primaryTerm } : {}),
            knownErrant,
            ...(notes.size > 0 ? { errantNotes: notes } : {}),
            ...(switchover ? { switchover: { ...switchover, waitedMs: waitedMs(switchover.id) } } : {}),
          };
          const decision = decide(view);
          allowed = decision.kept.keep;
          errantNow = decision.errant;
          members = decision.members;
          problems = [...decision.problems];
          rejected = decision.rejected;
          for (const m of observed) {
            const labels = { namespace, cluster: cr.metadata.name, member: m.name };
            ctx.metrics?.mysqlMemberReachable.set(labels, m.sql ? 1 : 0);
            const decided = decision.members.find((s) => s.name === m.name);
            if (decided?.behind !== undefined) ctx.metrics?.mysqlReplicaBehind.set(labels, decided.behind);
            // All three, so that a role the member left reads 0 rather than its last 1.
            if (decided)
              for (const role of MEMBER_ROLES)
                ctx.metrics?.mysqlMemberRole.set({ ...labels, role }, decided.role === role ? 1 : 0);
          }
          const clusterLabels = { namespace, cluster: cr.metadata.name };
          // The counters from 0, before anything happened: Prometheus's increase() sees no increase in a
          // series whose first sample is already 1, so the first failover after the controller started
          // would raise no Recon8sMySQLFailedOver.
          ctx.metrics?.mysqlFailovers.inc(clusterLabels, 0);
          for (const outcome of SWITCHOVER_OUTCOMES)
            ctx.metrics?.mysqlSwitchovers.inc({ ...clusterLabels, outcome }, 0);
          if (primary !== undefined) ctx.metrics?.mysqlPrimaryReachable.set(clusterLabels, current?.sql ? 1 : 0);
          ctx.metrics?.mysqlErrantMembers.set(clusterLabels, decision.errant.size);
          knownErrant.clear();
          for (const name of decision.errant) knownErrant.add(name);
          lastStep = decision.step;
          writesWait = decision.writesWait;
          const step = decision.step;
          if (step.type === 'steady') {
            events.push(...(await reloadRenewedCertificates(sessions, ctx.prepared.facts?.[TLS_NOT_AFTER_FACT])));
            break;
          }
          if (step.type === 'wait') {
            // Members that do not answer yet (starting) are progress, not a problem: Ready says so.
            if (step.reason !== 'NoMemberAnswers') problems.push({ reason: step.reason, message: step.message });
            break;
          }
          leading();
          log.info('mysql step', { step: step.type, ...describeStep(step) });
          // Every SQL action and label of a step goes through these: none once leadership is lost.
          const session = (name: string): MemberActions => {
            leading();
            const s = sessions.get(name);
            if (!s) throw new Error(`member ${name} does not answer`);
            return s;
          };
          const label = async (member: string, role: Role): Promise<void> => {
            leading();
            await labelPod(client, namespace, member, role);
            podsNow = podsNow.map((p) =>
              p.metadata?.name === member
                ? { ...p, metadata: { ...p.metadata, labels: { ...p.metadata.labels, [MYSQL_ROLE_LABEL]: role } } }
                : p,
            );
          };
          switch (step.type) {
            case 'bootstrap':
              await choosePrimary(step.member, observed);
              await recordHistory(client, cr, ctx.live, step.member, leading);
              events.push({ type: 'Normal', reason: 'PrimaryElected', message: `${step.member} is the first primary` });
              break;
            case 'fence':
              await session(step.member).fence({ cutOff: step.cutOffMs !== undefined });
              if (step.cutOffMs !== undefined)
                events.push({
                  type: 'Warning',
                  reason: 'PrimaryIsolated',
                  message: `none of the replicas of the primary ${step.member} has heard from it for ${Math.round(step.cutOffMs / 1000)} s though it answers (a partition between them): made it read-only and ended its client sessions, to fail over`,
                });
              else if (step.writable)
                events.push({
                  type: 'Warning',
                  reason: 'Fenced',
                  message: `${step.member} was writable but is not the primary (${primary ?? 'none'}): made it read-only and ended its client sessions`,
                });
              break;
            case 'label':
              await label(step.member, step.role);
              break;
            case 'enableWrites':
              await records.beforeEnableWrites(step.member, step.waitCount);
              await session(step.member).enableWrites(step.waitCount);
              down.delete(uid);
              if (!observed.find((m) => m.name === step.member)?.sql?.writable)
                events.push({
                  type: 'Normal',
                  reason: 'PrimaryWritable',
                  message: `${step.member} takes writes${step.waitCount > 0 ? `, each acknowledged once ${step.waitCount} replica(s) received it` : ' (semi-synchronous replication off)'}`,
                });
              break;
            case 'replicate':
              await session(step.member).replicateFrom(step.sourceHost, MYSQL_PORT);
              break;
            case 'stopReplication':
              await session(step.member).stopReplication();
              break;
            case 'admitClients':
              await session(step.member).admitClients();
              events.push({
                type: 'Normal',
                reason: 'ClientsAdmitted',
                message: `${step.member} serves clients again: it was kept offline since its fencing (it might have held commits a failover discards), and the primary ${primary ?? ''} now holds everything it has`,
              });
              break;
            case 'stopReceivers':
              for (const m of step.members) await session(m).stopReceiver();
              break;
            case 'promote': {
              if (!(await session(step.to).waitForApplied(step.mustApply, APPLY_TIMEOUT_S))) {
                problems.push({
                  reason: 'FailoverWaiting',
                  message: `${step.to} has not applied the transactions it received within ${APPLY_TIMEOUT_S} s; it is promoted once it has`,
                });
                break;
              }
              await session(step.to).leaveReplication();
              const downMs = down.get(uid)?.primary === step.from ? now() - (down.get(uid)?.since ?? now()) : 0;
              await choosePrimary(step.to, observed, step);
              down.delete(uid);
              if (silentNow.has(step.from)) fenceInBackground(step.from);
              ctx.metrics?.mysqlFailovers.inc({ namespace, cluster: cr.metadata.name });
              events.push({
                type: 'Warning',
                reason: 'FailedOver',
                message: `promoted ${step.to}: the primary ${step.from} was lost (${lostHow(step, downMs)}); ${step.to} holds every transaction the replicas received (${step.mustApply.count()} in all)`,
              });
              break;
            }
            case 'switchover': {
              const started = now();
              await label(step.from, 'none');
              // A stopping one is never asked again (its pod is going away): fence() says what that saves.
              await session(step.from).fence(step.stopping ? { stopping: true } : {});
              const executed = await session(step.from).executed();
              if (!(await session(step.to).waitForApplied(executed, APPLY_TIMEOUT_S))) {
                if (step.stopping) {
                  // Its pod is going away: never writable again; a failover follows once it is down.
                  const message = `${step.to} did not catch up with ${step.from}, whose pod is stopping, within ${APPLY_TIMEOUT_S} s; ${step.from} stays read-only`;
                  events.push({ type: 'Warning', reason: 'SwitchoverFailed', message });
                  ctx.metrics?.mysqlSwitchovers.inc({ namespace, cluster: cr.metadata.name, outcome: 'failed' });
                  break;
                }
                // Writable again as enableWrites does it: semi-synchronous replication first (fence()
                // turned it off), so that no commit is acknowledged before a replica has it.
                await records.beforeEnableWrites(step.from, waitCount);
                await session(step.from).enableWrites(waitCount);
                await label(step.from, 'primary');
                const message = `${step.to} did not catch up with ${step.from} within ${APPLY_TIMEOUT_S} s; ${step.from} stays the primary`;
                events.push({ type: 'Warning', reason: 'SwitchoverFailed', message });
                ctx.metrics?.mysqlSwitchovers.inc({ namespace, cluster: cr.metadata.name, outcome: 'failed' });
                if (step.requestId) handled({ requestId: step.requestId, outcome: 'Failed', message });
                switchover = undefined;
                break;
              }
              await session(step.to).leaveReplication();
              await choosePrimary(step.to, observed);
              down.delete(uid);
              const message = `${step.to} is the primary instead of ${step.from}${step.requestId ? ' (requested)' : step.stopping ? ' (its pod is stopping)' : ''}; ${step.from} stopped taking writes ${Math.round(now() - started)} ms before ${step.to} had applied all of them`;
              events.push({ type: 'Normal', reason: 'SwitchedOver', message });
              ctx.metrics?.mysqlSwitchovers.inc({ namespace, cluster: cr.metadata.name, outcome: 'done' });
              if (step.requestId) handled({ requestId: step.requestId, outcome: 'Done', message });
              switchover = undefined;
              break;
            }
            case 'refuseSwitchover':
              events.push({ type: 'Warning', reason: 'SwitchoverRefused', message: step.message });
              ctx.metrics?.mysqlSwitchovers.inc({ namespace, cluster: cr.metadata.name, outcome: 'refused' });
              handled({ requestId: step.requestId, outcome: 'Refused', message: step.message });
              switchover = undefined;
              break;
            case 'restart':
              await client.request({
                method: HttpMethod.DELETE,
                path: `/api/v1/namespaces/${namespace}/pods/${encodeURIComponent(step.member)}`,
              });
              events.push({
                type: 'Normal',
                reason: 'RollingUpdate',
                message: `re-creating ${step.member} from the new pod template${step.member === primary ? '' : ' (a replica)'}`,
              });
              podsNow = podsNow.filter((p) => p.metadata?.name !== step.member);
              break;
          }
          if (problems.some((p) => p.reason === 'FailoverWaiting')) break;
        } catch (e) {
          // A step that failed may have left a session in any state: none is used again.
          for (const name of sessions.keys()) dropKept(name);
          throw e;
        }
      }
      // Members no longer looked at (their pod gone) keep no session; nor does a cluster forgotten
      // (deleted) during this look.
      // Nor does one whose pod was replaced (a former primary's, once another is the primary).
      const toAsk = podsToAsk(formerPrimary());
      const asked = new Set(
        memberViews(toAsk, names, sts?.status?.updateRevision, primary, Date.now()).map((v) => v.name),
      );
      const forgotten = kept.get(uid) !== keptNow;
      for (const [name, { key }] of [...keptNow]) {
        const pod = toAsk.find((p) => p.metadata?.name === name);
        if (forgotten || !asked.has(name) || key !== sessionKey(pod)) dropKept(name);
      }

      // A scale-down that became safe is applied now, not at the next poll: the StatefulSet was
      // applied before this look, with the size judged before it (amend).
      if (allowed !== undefined) {
        const before = keptMembers.get(uid);
        const held = sts?.spec?.replicas ?? 0;
        keptMembers.set(uid, { replicas, keep: allowed, of: held });
        if (allowed < held && (before?.replicas !== replicas || before.keep !== allowed)) ctx.wake?.();
      }
      // A former primary whose surplus is proven never acknowledged rejoins by clone (its agent does it).
      events.push(...(await records.rejoin(verdicts, errantNow)));
      problems.push(...rejected);
      for (const [key, { member, reason }] of refusedPods)
        events.push({
          type: 'Warning',
          reason: 'MemberCertificateRejected',
          message: `pod ${member}${member === primary ? ' (the primary)' : ''} presented a TLS certificate the cluster's CA does not vouch for (${reason}): refused in the handshake, before any credential was sent`,
          once: `member-certificate/${key}`,
        });

      const pollMs = nextPoll(
        unsettled,
        uid,
        {
          acted: lastStep.type !== 'steady' && lastStep.type !== 'wait',
          unsettled:
            lastStep.type !== 'steady' ||
            down.has(uid) ||
            writesWait !== undefined ||
            members.some((m) => !m.reachable) ||
            podsNow.some((p) => !(p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')),
          // Failure detection: with a primary to watch, never longer than a healthy cluster's poll.
          maxMs: primary !== undefined ? STEADY_POLL_MS : STUCK_POLL_MAX_MS,
        },
        JSON.stringify({
          lastStep,
          problems,
          members,
          writesWait,
          pods: podsNow.map((p) => `${p.metadata?.name ?? ''}@${p.metadata?.resourceVersion ?? ''}`),
        }),
      );
      // A lost primary's replacement about to answer is looked at more often until its mysqld does.
      const replacing =
        primary !== undefined &&
        down.has(uid) &&
        replacementStarting(
          podsNow.find((p) => p.metadata?.name === primary),
          answered.get(uid)?.pods.get(primary),
        );
      return {
        fields: {
          ...(primary !== undefined ? { currentPrimary: primary } : {}),
          members: members.map(({ behind: _behind, ...rest }) => rest),
          ...(switchoverStatus ? { switchover: switchoverStatus } : {}),
          ...records.fields(),
        },
        problems,
        events,
        requeueAfterMs: replacing ? Math.min(pollMs, REPLACEMENT_POLL_MS) : pollMs,
        ...(writesWait ? { unavailable: { reason: 'WaitingForReplicaAck', message: writesWait } } : {}),
      };
    },
  };
}

/**
 * When to look again: at once after a step (BUSY_POLL_MS); every STEADY_POLL_MS when all is well;
 * while something is unsettled (a member that does not answer, a primary down, a failover waiting),
 * every BUSY_POLL_MS as long as each look finds something new (a failover's countdown is new every
 * second), doubling up to `maxMs` while looks find the same (a member whose pod cannot start).
 */
function nextPoll(
  memory: Map<string, { seen: string; pollMs: number }>,
  uid: string,
  o: { readonly acted: boolean; readonly unsettled: boolean; readonly maxMs: number },
  seen: string,
): number {
  if (!o.unsettled) {
    memory.delete(uid);
    return STEADY_POLL_MS;
  }
  const last = memory.get(uid);
  const pollMs =
    o.acted || last?.seen !== seen ? BUSY_POLL_MS : Math.min(Math.max(last.pollMs * 2, BUSY_POLL_MS), o.maxMs);
  memory.set(uid, { seen, pollMs });
  return pollMs;
}

/** How a failover's primary was lost, as its Event says it. */
function lostHow(step: Step & { type: 'promote' }, downMs: number): string {
  if (step.cutOffMs !== undefined) return `heard by none of its replicas for ${Math.round(step.cutOffMs / 1000)} s`;
  const down = `down ${(downMs / 1000).toFixed(1)} s`;
  return step.stopped !== undefined ? `${down}: ${step.stopped}` : down;
}

function describeStep(step: Step): Record<string, unknown> {
  switch (step.type) {
    case 'promote':
      return { from: step.from, to: step.to, ...(step.stopped !== undefined ? { stopped: step.stopped } : {}) };
    case 'switchover':
      return { from: step.from, to: step.to };
    case 'stopReceivers':
      return { members: step.members.join(',') };
    case 'label':
      return { member: step.member, role: step.role };
    case 'steady':
    case 'wait':
    case 'refuseSwitchover':
      return {};
    default:
      return { member: step.member };
  }
}

async function labelPod(client: KubeClient, namespace: string, name: string, role: Role): Promise<void> {
  await client
    .request({
      method: HttpMethod.PATCH,
      path: `/api/v1/namespaces/${namespace}/pods/${encodeURIComponent(name)}`,
      body: JSON.stringify({ metadata: { labels: { [MYSQL_ROLE_LABEL]: role } } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    })
    .catch((e: unknown) => {
      // A pod that no longer exists carries no label: taking one off it is done (a primary's pod deleted
      // with no grace period is gone while its mysqld still answers, and the switchover from it goes on).
      if (role === 'none' && isNotFound(e)) return;
      throw e;
    });
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
