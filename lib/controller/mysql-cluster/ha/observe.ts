// A look at a cluster: every member asked over SQL (member-sessions.ts), its pod read from the cache,
// and the ClusterView that decide() (lib/mysql/decide.ts) takes, with what the loop remembers across
// looks brought up to date (when the primary last answered, since when it is down). What the look found
// that the proof of lib/mysql/rejoin.ts rests on is recorded before any step is taken on it.
import type { V1Pod } from '@kubernetes/client-node';
import type { MySQLClusterNames } from '../../../../constructs/index.js';
import { MYSQL_ROLE_LABEL } from '../../../../constructs/index.js';
import { primaryDataLost } from '../../../mysql/decide.js';
import type { RejoinVerdict } from '../../../mysql/rejoin.js';
import { rejoinNote } from '../../../mysql/rejoin.js';
import type { ClusterView, MemberView, Role } from '../../../mysql/topology.js';
import { podNote } from '../../../reconcile/pod-problems.js';
import type { Pass } from './pass.js';
import type { MemberActions } from './ports.js';
import { buildingDataDirectory, mysqlRestarts, primaryStopped } from './primary-stopped.js';
import { STEADY_POLL_MS } from './timing.js';

/** What a look found. */
export interface Look {
  readonly view: ClusterView;
  /** The members as asked (view.members). */
  readonly observed: readonly MemberView[];
  /** The sessions of the members that answered, for the step taken on this look. */
  readonly sessions: ReadonlyMap<string, MemberActions>;
  /** The recorded primary as this look found it. */
  readonly current: MemberView | undefined;
  /** rejoin.ts's verdicts on the members holding what the primary lacks. */
  readonly verdicts: readonly RejoinVerdict[];
}

/**
 * The members' DNS names and the StatefulSet revision, from the pods in the cache. A pod being deleted
 * is no member, but the primary's (decide.ts: a replica takes over at once).
 */
export function memberViews(
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

/**
 * The pods a look asks: those in the cache, with the recorded primary's pod as it was when it last
 * answered in place of its replacement (`former`), while the API no longer has it but the session kept
 * to its mysqld still stands: a pod deleted with no grace period leaves the API at once, and its
 * containers stop only after its stop hook (its agent fences it, then waits for its replicas to leave
 * it). Looked at as a pod being deleted, so that a replica takes over at once, as for a graceful
 * deletion, instead of after the replacement's mysqld has started on the same volume (the proof that
 * this one is gone). Through the kept session only: a new connection to its address could reach
 * whatever is given that address next.
 */
export function podsToAsk(pass: Pass): { readonly pods: V1Pod[]; readonly former?: V1Pod } {
  const { primary, memory } = pass;
  const last = primary === undefined ? undefined : memory.answered;
  const pod = last?.primary === primary ? last?.primaryPod : undefined;
  const gone = pod && !pass.pods.some((p) => p.metadata?.uid === pod.metadata?.uid);
  if (!pod || !gone || !pass.sessions.keptFor(pod.metadata?.name ?? '', pod)) return { pods: pass.pods };
  const former: V1Pod = {
    ...pod,
    metadata: { ...pod.metadata, deletionTimestamp: pod.metadata?.deletionTimestamp ?? new Date(0) },
  };
  return { pods: [...pass.pods.filter((p) => p.metadata?.name !== former.metadata?.name), former], former };
}

/** Looks at every member once (`sessions` receives the sessions of those that answer). */
export async function look(pass: Pass, sessions: Map<string, MemberActions>): Promise<Look> {
  const { memory, ports, names, primary } = pass;
  const { pods: asking, former } = podsToAsk(pass);
  // Before any member is asked: a look that finds the primary silent has waited its deadline on it.
  const startedAt = ports.clock.now();
  const views = memberViews(
    asking,
    names,
    pass.sts?.status?.updateRevision,
    primary,
    ports.clock.wallClock().getTime(),
  );
  const observed = await Promise.all(
    views.map(async (v): Promise<MemberView> => {
      const pod = asking.find((p) => p.metadata?.name === v.name);
      const ip = pod?.status?.podIP;
      // A member whose pod cannot start says why (Init:ImagePullBackOff: …), not ECONNREFUSED; it is
      // asked anyway: a container that crash-loops beside a running mysqld does not stop it.
      const note = (): string | undefined => podNote(pod, ports.clock.wallClock());
      if (!ip) return { ...v, error: note() ?? 'the pod has no IP address yet' };
      const answer = await pass.sessions.ask(v.name, pod, ip, former !== undefined && pod === former);
      if ('sql' in answer) {
        sessions.set(v.name, answer.session);
        return { ...v, sql: answer.sql };
      }
      if (answer.certificateRejected === undefined) return { ...v, error: note() ?? answer.error };
      const reason = answer.certificateRejected;
      pass.refused.set(`${pod?.metadata?.uid ?? v.name}/${reason}`, { member: v.name, reason });
      return { ...v, error: answer.error, certificateRejected: reason };
    }),
  );
  const now = (): number => ports.clock.now();
  const current = primary !== undefined ? observed.find((m) => m.name === primary) : undefined;
  const podsByName = new Map(pass.pods.map((p) => [p.metadata?.name ?? '', p]));
  // An answer from the former primary's pod (deleted) is no look at the pods there are now.
  if (primary !== undefined && current?.sql && !former)
    memory.answered = {
      primary,
      at: now(),
      pods: new Map(
        [...podsByName].map(([name, p]) => [name, { uid: p.metadata?.uid ?? '', restarts: mysqlRestarts(p) }]),
      ),
      ...(podsByName.has(primary) ? { primaryPod: podsByName.get(primary) } : {}),
    };
  if (primary === undefined || current?.sql?.writable) memory.down = undefined;
  else if (!current?.sql && memory.down?.primary !== primary) {
    const lastGood = memory.answered?.primary === primary ? memory.answered.at : now();
    // At most a poll before this look began, not before it ended: the look waited out the deadline of
    // the session to the silent primary (up to CONNECT_TIMEOUT_MS), which counted against
    // failoverAfterSeconds would put every failover after a power off or a partition up to 3 s late.
    memory.down = { primary, since: Math.max(lastGood, startedAt - STEADY_POLL_MS) };
  }
  const { down, answered } = memory;
  // With the semi-synchronous acknowledgements the primary's term enforced, not only those the spec
  // asks now (raised since, they may not have reached it before it stopped).
  const term = pass.records.term;
  const termWaitCount = term && term.member === primary ? term.semiSyncReplicas : undefined;
  const enforced = Math.min(pass.waitCount, termWaitCount ?? pass.waitCount);
  const stopped =
    primary !== undefined && !current?.sql && answered?.primary === primary && enforced > 0
      ? primaryStopped(primary, podsByName, answered.pods)
      : undefined;
  // What the look found that the proof of rejoin.ts rests on is recorded before any step.
  await pass.records.afterLook(observed, primary, pass.waitCount);
  const termNow = pass.records.term;
  const primaryTerm = termNow && termNow.member === primary ? termNow : undefined;
  // A primary that lost its data is no reference for what others hold beyond it (decide.ts, 6).
  const lost = primaryDataLost({ members: observed, primary, ...(primaryTerm ? { primaryTerm } : {}) });
  const verdicts = lost === undefined ? pass.records.verdicts(observed, primary) : [];
  const notes = new Map(verdicts.map((v) => [v.member, rejoinNote(v)]));
  // The members the StatefulSet holds: its size, or more while pods above it still run (it was
  // deleted around them to grow their volumes, or has yet to remove them).
  const heldNow = Math.max(
    pass.sts?.spec?.replicas ?? 0,
    ...observed.filter((m) => !m.terminating).map((m) => m.ordinal + 1),
  );
  const { replicas, switchover } = pass;
  const view: ClusterView = {
    members: observed,
    replicas,
    ...(heldNow > replicas ? { heldReplicas: heldNow } : {}),
    ...(primary !== undefined ? { primary, primaryHost: names.memberHost(primary) } : {}),
    ...(down && down.primary === primary ? { primaryDownMs: now() - down.since } : {}),
    failoverAfterMs: pass.failoverAfterMs,
    ...(stopped ? { primaryStopped: stopped } : {}),
    waitCount: pass.waitCount,
    ...(termWaitCount !== undefined ? { termWaitCount } : {}),
    ...(primaryTerm ? { primaryTerm } : {}),
    knownErrant: pass.knownErrant,
    ...(notes.size > 0 ? { errantNotes: notes } : {}),
    ...(switchover ? { switchover: { ...switchover, waitedMs: pass.waitedMs(switchover.id) } } : {}),
  };
  return { view, observed, sessions, current, verdicts };
}
