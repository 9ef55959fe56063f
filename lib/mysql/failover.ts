// Failover, decided (decide.ts's rule 5, apart so that each file stays readable): when the recorded
// primary is lost, and which replica takes over. Pure, like decide.ts, and tested with it
// (test/unit/mysql-decide.test.ts, test/unit/mysql-decide-partition.test.ts).
//
// A primary is lost in one of four ways:
// - it does not answer the controller for `failoverAfterMs` (counted by the caller from the last look
//   that found it answering: ClusterView.primaryDownMs);
// - it does not answer and its mysqld is known to have exited (ClusterView.primaryStopped: its container
//   exited or restarted, primary-stopped.ts): replaced at once, without waiting `failoverAfterMs`, but
//   only with semi-synchronous replication. The wait exists for a primary that is
//   silent but may still take writes (a partition); one that is not running takes none, and every
//   commit it acknowledged is on `waitCount` replicas, whose receivers stop before any is promoted.
//   Without semi-synchronous replication, only the wait (or its restart) bounds what it acknowledged;
// - it answers again read-only after being down (it restarted): replaced at once when a replica safely can;
// - it answers the controller, but none of its replicas has heard from it for `failoverAfterMs` (a
//   partition between the primary and its replicas only: its agent fences it, isolation.ts, and making
//   it writable again would only start that over). Each replica's receiver says how long ago it last
//   heard from its source (an event or a heartbeat, ReplicationChannel.sourceSilentMs): that is counted
//   from the last good observation itself, on the replica's own clock, whatever the controller's polls.
//   The controller fences the primary (it still reaches it) before any replica stops receiving.
import type { ClusterView, MemberView, Step } from './topology.js';
import { history, isLeaving, termAcknowledgements } from './topology.js';

export const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;

/**
 * How late a heartbeat may be before a channel counts as not hearing its source: the source sends one
 * only after a heartbeat period with nothing else to send, and a busy member sends it a little late.
 */
export const HEARTBEAT_GRACE_MS = 2_000;
/** MySQL's heartbeat period when none is set (replica_net_timeout / 2), for a channel that does not say. */
const DEFAULT_HEARTBEAT_MS = 30_000;
/**
 * Receiver errors that mean the source answered and refused the replica (its account, its password, its
 * TLS): a replica that hears nothing for one of these reaches the primary, so its silence never says the
 * primary is cut off, and a failover would not cure it (the same refusal would meet the new primary).
 * 1040 too many connections, 1045 access denied, 1129 host blocked, 1130 host not allowed, 1226 a user
 * limit, 1862 password expired, 2026 TLS handshake, 2061 authentication needs TLS, 3118 account locked,
 * 3159 secure transport required.
 */
const REFUSED_BY_SOURCE = new Set([1040, 1045, 1129, 1130, 1226, 1862, 2026, 2061, 3118, 3159]);

/** Why a member did not answer, as status.members says it: a refused certificate before anything its pod says. */
export function notAnswering(m: MemberView): string | undefined {
  return m.certificateRejected !== undefined
    ? `certificate rejected: ${m.certificateRejected}; no credential was sent`
    : m.error;
}

export function unreachable(view: ClusterView): Step {
  return { type: 'wait', reason: 'PrimaryUnreachable', message: `the primary ${view.primary ?? ''} does not answer` };
}

/**
 * How long `m`'s channel has heard nothing from `host`, once a heartbeat is overdue; undefined while it
 * hears (a heartbeat period, 30 s on a channel from before recon8s set 1 s, is silence as usual), and
 * when it cannot say (it restarted and never connected since: no last contact to count from).
 */
function unheardMs(m: MemberView, host: string): number | undefined {
  const c = m.sql?.channel;
  if (c?.sourceHost !== host || c.sourceSilentMs === undefined) return undefined;
  if (c.receiverErrno !== undefined && REFUSED_BY_SOURCE.has(c.receiverErrno)) return undefined;
  const overdue = c.sourceSilentMs > (c.heartbeatMs ?? DEFAULT_HEARTBEAT_MS) + HEARTBEAT_GRACE_MS;
  return overdue ? c.sourceSilentMs : undefined;
}

/**
 * How long none of the primary's replicas has heard from it, while it answers the controller: the
 * shortest silence among them. Undefined unless every member but the primary answers, and every one
 * that follows the primary (not errant) has a heartbeat overdue: one replica that hears it, or one that
 * cannot be asked, and the primary is not shown cut off (a replica lagging, restarting or reconnecting
 * for a moment is never a reason). Only with semi-synchronous replication: a primary that needs no
 * acknowledgement takes writes without its replicas, as asked.
 */
export function primaryCutOffMs(
  view: ClusterView,
  members: readonly MemberView[],
  primary: MemberView,
  errant: ReadonlySet<string>,
): number | undefined {
  if (view.waitCount <= 0 || !primary.sql) return undefined;
  // A member leaving in a scale-down stopped its receiver on purpose: its silence says nothing.
  const others = members.filter((m) => m.name !== primary.name && !errant.has(m.name) && !isLeaving(view, m));
  if (others.some((m) => !m.sql)) return undefined;
  const followers = others.filter((m) => m.sql?.channel?.sourceHost === primary.host);
  if (followers.length === 0) return undefined;
  let shortest = Number.POSITIVE_INFINITY;
  for (const m of followers) {
    const ms = unheardMs(m, primary.host);
    if (ms === undefined) return undefined;
    shortest = Math.min(shortest, ms);
  }
  return shortest;
}

/**
 * The step for a primary that answers but that none of its replicas hears (`cutOffMs`): before
 * `failoverAfterMs`, a read-only one (fenced by its agent) is left so and waited on, and a writable one
 * carries on (undefined); after it, when a replica can safely take over, the primary is fenced first
 * (by the controller: it still reaches it), then the failover goes on as for a lost primary.
 */
export function cutOffStep(
  view: ClusterView,
  members: readonly MemberView[],
  primary: MemberView,
  errant: ReadonlySet<string>,
  cutOffMs: number,
): Step | undefined {
  const sql = primary.sql;
  if (!sql) return undefined;
  const why = `no replica has heard from the primary ${primary.name} for ${seconds(cutOffMs)} though it answers (a partition between them)`;
  if (cutOffMs < view.failoverAfterMs) {
    if (sql.writable) return undefined;
    // A receiver someone stopped hears nothing either: started again, it shows whether it hears the primary.
    const stopped = members.find((m) => {
      const c = m.sql?.channel;
      return (
        !errant.has(m.name) && !isLeaving(view, m) && c?.sourceHost === primary.host && c.receiver === 'OFF' && !c.error
      );
    });
    if (stopped) return { type: 'replicate', member: stopped.name, source: primary.name, sourceHost: primary.host };
    return {
      type: 'wait',
      reason: 'PrimaryIsolated',
      message: `${why}: it stays read-only; failover after ${seconds(view.failoverAfterMs)}`,
    };
  }
  const failover = failoverStep(view, members, { member: primary, cutOffMs }, errant);
  if (failover?.type === 'wait') return { ...failover, message: `${why}; ${failover.message}` };
  if (!failover) return undefined;
  if (sql.writable || sql.semiSync.enabled)
    return { type: 'fence', member: primary.name, writable: sql.writable, cutOffMs };
  return failover;
}

/**
 * The failover step while the recorded primary is down or cut off; undefined when there is none to
 * take (for a primary that answers again, read-only after a restart: it is then made writable again
 * instead). `answered`: the primary when it answers, and `cutOffMs` when it is cut off from its
 * replicas rather than back after a restart.
 */
export function failoverStep(
  view: ClusterView,
  members: readonly MemberView[],
  answered: { readonly member: MemberView; readonly cutOffMs?: number } | undefined,
  errant: ReadonlySet<string>,
): Step | undefined {
  const name = view.primary ?? '';
  const host = view.primaryHost ?? '';
  const downMs = view.primaryDownMs ?? 0;
  const restartedPrimary = answered?.member;
  // A restarted primary that cannot be replaced takes writes again; a cut-off one could not take any.
  const restarted = answered !== undefined && answered.cutOffMs === undefined;
  const acknowledgements = termAcknowledgements(view);
  const stoppedNow = answered === undefined && acknowledgements > 0 ? view.primaryStopped : undefined;
  if (answered === undefined && downMs < view.failoverAfterMs && stoppedNow === undefined) {
    const lost = members.find((m) => m.name === name);
    const why = lost && notAnswering(lost);
    const message = `the primary ${name} has not answered for ${seconds(downMs)}${why ? ` (${why})` : ''}; failover after ${seconds(view.failoverAfterMs)}`;
    return { type: 'wait', reason: 'PrimaryUnreachable', message };
  }
  const answering = members.filter((m) => m.sql && m.name !== name);
  const reachable = answering.length + (answered ? 1 : 0);
  const wait = (reason: string, message: string): Step | undefined =>
    restarted ? undefined : { type: 'wait', reason, message };
  // Of the members there are: those the spec asks for, or more while a scale-down is under way (the
  // StatefulSet holds members that are not yet safe to lose, scale-down.ts, with or without a pod now).
  const held = Math.max(view.replicas, view.heldReplicas ?? 0);
  const size = Math.max(held, members.length);
  if (reachable * 2 <= size)
    return wait(
      'NoQuorum',
      `the primary ${name} is down and only ${reachable} of ${size} members answer: no failover without a majority`,
    );
  const candidates = answering.filter((m) => !errant.has(m.name) && m.sql?.channel?.sourceHost === host);
  if (candidates.length === 0)
    return wait(
      'FailoverWaiting',
      `the primary ${name} is down and no replica that followed it answers (errant: ${[...errant].join(', ') || 'none'})`,
    );
  // Every acknowledged commit reached waitCount replicas: when fewer than that are not candidates
  // (they do not answer, hold errant transactions, or followed someone else), each acknowledged commit
  // is on a candidate. Without semi-synchronous replication, only when every replica is a candidate.
  // The replicas are those the spec asks for, or more while a scale-down is under way: a member above
  // spec.replicas may have acknowledged commits too.
  const followers = Math.max(held - 1, members.filter((m) => m.name !== name).length, candidates.length);
  const others = followers - candidates.length;
  const covered = acknowledgements > 0 ? others < acknowledgements : others === 0;
  if (!covered && !restarted)
    return wait(
      'FailoverWaiting',
      `the primary ${name} is down and ${others} of its ${followers} replicas cannot be compared: an acknowledged write may be only there (its commits waited for ${acknowledgements} acknowledgement(s)); waiting for them`,
    );
  // Every candidate received from the same primary in the same order: the most advanced holds what every other one does.
  const best = [...candidates]
    .sort((a, b) => Number(a.outdated) - Number(b.outdated) || a.ordinal - b.ordinal)
    .find((c) => candidates.every((o) => history(o).isSubsetOf(history(c))));
  const diverged = (): Step | undefined =>
    wait(
      'FailoverWaiting',
      `the primary ${name} is down and no replica holds every transaction the others received: promoting any would lose some`,
    );
  // Replicas that hear nothing receive nothing: judged before their receivers stop, which they would
  // stay until a failover (a heartbeat never comes to a stopped receiver, and the primary stays fenced).
  if (!best && answered?.cutOffMs !== undefined) return diverged();
  const receiving = candidates.filter((m) => m.sql?.channel?.receiver !== 'OFF');
  if (receiving.length > 0) return { type: 'stopReceivers', members: receiving.map((m) => m.name) };
  if (!best) return diverged();
  // A restarted primary's own history bounds what it acknowledged: without the guarantee above, the
  // candidate must hold all of it (or the primary takes writes again itself).
  if (!covered && restartedPrimary?.sql && !restartedPrimary.sql.executed.isSubsetOf(history(best))) return undefined;
  return {
    type: 'promote',
    from: name,
    to: best.name,
    mustApply: history(best),
    outOfReach: others,
    ...(restartedPrimary?.sql ? { fromExecuted: restartedPrimary.sql.executed } : {}),
    ...(answered?.cutOffMs !== undefined ? { cutOffMs: answered.cutOffMs } : {}),
    ...(stoppedNow !== undefined && downMs < view.failoverAfterMs ? { stopped: stoppedNow } : {}),
  };
}
