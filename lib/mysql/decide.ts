// The cluster manager's one decision: from what every member of a MySQLCluster answered (and what its
// pods say), the next step that keeps the invariants below. A pure function: no I/O, no clock (the
// caller passes how long the primary has been down), so that every combination of reachable, lagging,
// errant and writable members is tested as a unit (test/unit/mysql-decide.test.ts).
//
// Invariants, in the order they are restored:
// 1. Only the recorded primary (status.currentPrimary) may be writable: any other writable member is
//    fenced (super_read_only) before anything else happens.
// 2. Only the recorded primary may carry the primary role label (the `<name>-primary` Service selects
//    it): a stale label is removed before the new one is set, so two pods never carry it.
// 3. A member whose GTID set is not contained in the primary's (errant transactions; what it received
//    from the primary itself does not count, the primary was only read a moment before) is never promoted,
//    never serves (no role label) and does not replicate (it would acknowledge semi-synchronous writes
//    that only it and the primary hold).
// 4. The primary is made writable only with semi-synchronous replication configured, so that every
//    acknowledged commit exists on `waitCount` replicas.
// 5. Failover promotes a replica only when the primary has been unreachable for `failoverAfterMs` (or
//    is known to have exited, with semi-synchronous replication; or came back after a restart, or answers but none of its replicas has heard from it for
//    `failoverAfterMs`, and the controller fenced it), a majority of the members answers, every
//    candidate's receiver has stopped (the old primary can get no more acknowledgements), and the
//    chosen candidate holds every transaction any candidate received (failover.ts).
// 6. A recorded primary that answers without its term's data (another server_uuid: its volume was lost
//    or replaced; or lacking what it held when its term began) is never made writable, never the
//    reference others are compared with (they are not errant for holding the data it lost), and counts
//    as a primary that is down: a replica holding the data takes over (PrimaryDataLost).
// 7. A member that may serve a transaction a failover could still discard (its fencing released commits
//    stranded waiting for an acknowledgement) serves no client (offline_mode, fencing.ts) until what it
//    holds is all on the primary: then it is admitted again (admitClients), as a replica.
// A member whose certificate the controller refused counts as one that does not answer, in all of them.
import { cutOffStep, failoverStep, notAnswering, primaryCutOffMs, seconds, unreachable } from './failover.js';
import { leavingStep, membersKept } from './scale-down.js';
import type { ClusterView, Decision, MemberStatus, MemberView, ReplicationChannel, Step } from './topology.js';
import { history, isLeaving } from './topology.js';

/** How long a switchover request waits for its candidate to be a healthy replica before it is refused. */
export const SWITCHOVER_PATIENCE_MS = 60_000;

/** Replicating from `host`: the channel points there, its applier runs and its receiver has not given up. */
/**
 * MySQL's client errors for a source that could not be reached: 2002 and 2003 (cannot connect), 2005
 * (unknown host: a pod not yet in DNS), 2013 (lost the connection). Not 2026 or the refusals of
 * failover.ts's REFUSED_BY_SOURCE, which a restart would only repeat.
 */
const SOURCE_UNREACHABLE = new Set([2002, 2003, 2005, 2013]);

/** A receiver that stopped because it reached no source, its applier not stopped on an error of its own. */
function stoppedUnreachable(c: ReplicationChannel): boolean {
  return (
    c.receiver === 'OFF' &&
    c.errorOf === 'receiver' &&
    c.receiverErrno !== undefined &&
    SOURCE_UNREACHABLE.has(c.receiverErrno)
  );
}

function replicatesFrom(m: MemberView, host: string): boolean {
  const c = m.sql?.channel;
  return c !== undefined && c.sourceHost === host && c.applier === 'ON' && c.receiver !== 'OFF';
}

export function decide(view: ClusterView): Decision {
  const lost = primaryDataLost(view);
  return lost === undefined ? decideFrom(view, false) : withoutLostPrimary(view, lost);
}

/**
 * Why the recorded primary, which answers, no longer holds its term's data (invariant 6); undefined when
 * it holds it, does not answer, or no term is recorded for it.
 */
export function primaryDataLost(view: Pick<ClusterView, 'members' | 'primary' | 'primaryTerm'>): string | undefined {
  const term = view.primaryTerm;
  const primary = view.members.find((m) => m.name === view.primary);
  const sql = primary?.sql;
  if (!term || !primary || !sql) return undefined;
  if (sql.serverUuid !== term.serverUuid)
    return `the primary ${primary.name} came back with another data directory (server_uuid ${sql.serverUuid}, its term began with ${term.serverUuid}): its volume was lost or replaced`;
  const missing = term.ownGtidsAtStart.subtract(sql.executed);
  if (!missing.isEmpty())
    return `the primary ${primary.name} came back without transactions it held when its term began (${missing.toString()}): its data was replaced or rolled back`;
  return undefined;
}

/**
 * Invariant 6: the decision with the recorded primary counted as down (its mysqld known not to hold the
 * data, so with semi-synchronous replication a replica takes over at once), the primary fenced first if it
 * is writable, and PrimaryDataLost said whatever the step.
 */
function withoutLostPrimary(view: ClusterView, why: string): Decision {
  const lost = view.members.find((m) => m.name === view.primary);
  const { primaryTerm: _term, ...rest } = view;
  const hidden: ClusterView = {
    ...rest,
    primaryStopped: why,
    // Waiting does not bring the data back: no failoverAfterMs to wait out, with or without semi-sync.
    primaryDownMs: Math.max(view.primaryDownMs ?? 0, view.failoverAfterMs),
    members: view.members.map((m) => (m.name === view.primary ? { ...m, sql: undefined, error: why } : m)),
  };
  const d = decideFrom(hidden, true);
  const members = d.members.map((s) =>
    s.name === lost?.name ? { ...s, reachable: true, writable: lost.sql?.writable ?? false, message: why } : s,
  );
  if (lost?.sql?.writable)
    return {
      ...d,
      step: { type: 'fence', member: lost.name, writable: true },
      problems: [
        { reason: 'PrimaryDataLost', message: `${why}: it is made read-only before anything else` },
        ...d.problems,
      ],
      members,
    };
  // A wait says it in its own reason; any other step goes on with the failover, and status says why.
  if (d.step.type === 'wait')
    return { ...d, step: { type: 'wait', reason: 'PrimaryDataLost', message: `${why}; ${d.step.message}` }, members };
  const next = 'it is never made writable again: a replica holding the data takes over, and it rejoins by clone';
  return { ...d, problems: [{ reason: 'PrimaryDataLost', message: `${why}; ${next}` }, ...d.problems], members };
}

/** decide(), once the recorded primary is known to hold its data (or `primaryLost`: it is counted as down for not holding it). */
function decideFrom(view: ClusterView, primaryLost: boolean): Decision {
  const members = [...view.members].sort((a, b) => a.ordinal - b.ordinal);
  const byName = new Map(members.map((m) => [m.name, m]));
  const primary = view.primary !== undefined ? byName.get(view.primary) : undefined;
  const errant = errantMembers(members, primary, view.knownErrant);
  const problems: { reason: string; message: string }[] = [];
  for (const name of errant) {
    const m = byName.get(name);
    const extra = m?.sql && primary?.sql ? m.sql.executed.subtract(primary.sql.executed).toString() : 'unknown';
    problems.push({
      reason: 'ErrantTransactions',
      message: `member ${name} holds transactions the primary lacks (${extra}): it is excluded from both Services and never promoted; ${view.errantNotes?.get(name) ?? `re-provision it by clone (kubectl annotate pod ${name} recon8s.dev/reprovision=<any new value>) to discard them`}`,
    });
  }
  const writesWait = writesWaitFor(members, primary, errant);
  const rejected = certificateProblems(members, view.primary);
  const kept = membersKept(view, members, primary, errant);
  const result = (step: Step, extra: { reason: string; message: string }[] = []): Decision => ({
    step,
    problems: [...problems, ...extra],
    members: memberStatuses(members, primary, errant),
    errant,
    rejected,
    ...(writesWait ? { writesWait } : {}),
    kept,
  });

  const answering = members.filter((m) => m.sql);
  if (view.primary === undefined) return result(firstPrimary(members, view.replicas));

  // 1. Fencing first: nothing else is safe while two members could take writes.
  const writableOther = answering.find((m) => m.name !== view.primary && m.sql?.writable);
  if (writableOther) return result({ type: 'fence', member: writableOther.name, writable: true });
  const formerSource = answering.find((m) => m.name !== view.primary && m.sql?.semiSync.enabled);
  if (formerSource) return result({ type: 'fence', member: formerSource.name, writable: false });
  // 2. Only the primary carries the primary label; the stale one goes before a new one is set.
  const labelledOther = members.find((m) => m.name !== view.primary && m.role === 'primary');
  if (labelledOther) return result({ type: 'label', member: labelledOther.name, role: 'none' });

  // A primary whose pod is stopping (deleted, evicted, drained; its agent fenced it for the stop): a
  // replica takes over at once, as in a switchover, and it is never made writable again. One that no
  // longer answers is a primary that is down (below).
  if (primary?.terminating && primary.sql) {
    // Only a replica that receives from it now can catch up with it (one cut off from it waits for nothing).
    const to = bestReplica(members, primary, errant, (m) => m.sql?.channel?.receiver === 'ON');
    if (to) return result({ type: 'switchover', from: primary.name, to: to.name, stopping: true });
    return result({
      type: 'wait',
      reason: 'PrimaryStopping',
      message: `the primary ${primary.name}'s pod is stopping and no healthy replica can take over yet`,
    });
  }

  const down = view.primaryDownMs !== undefined;
  if (!primary?.sql) {
    const step = failoverStep(view, members, undefined, errant) ?? unreachable(view);
    // While no failover is due, members that followed the primary keep (re)connecting to it: after a
    // restart of every pod, they are ready only once replicating, and the StatefulSet starts the next
    // pod only then.
    // Never towards a primary that lost its data: it holds nothing they lack, and it is never a source again.
    if (!primaryLost && step.type === 'wait' && (step.reason === 'PrimaryUnreachable' || step.reason === 'NoQuorum')) {
      const idle = answering.find((m) => {
        const c = m.sql?.channel;
        return (
          c !== undefined &&
          !errant.has(m.name) &&
          !isLeaving(view, m) &&
          c.sourceHost === view.primaryHost &&
          c.receiver === 'OFF' &&
          c.applier === 'OFF' &&
          !c.error
        );
      });
      if (idle)
        return result({
          type: 'replicate',
          member: idle.name,
          source: view.primary,
          sourceHost: view.primaryHost ?? '',
        });
    }
    return result(step);
  }
  // Back read-only after being down (it restarted): a replica takes over if one safely can, or else it
  // takes writes again itself.
  if (down && !primary.sql.writable) {
    const failover = failoverStep(view, members, { member: primary }, errant);
    if (failover) return result(failover);
  }
  // Answering, but heard by none of its replicas (failover.ts): it fails over once that lasted
  // failoverAfterMs, and is not made writable again meanwhile (its agent fenced it, and it would).
  const cutOffMs = primaryCutOffMs(view, members, primary, errant);
  if (cutOffMs !== undefined) {
    const step = cutOffStep(view, members, primary, errant, cutOffMs);
    if (step) return result(step);
    problems.push({
      reason: 'PrimaryIsolated',
      message: `no replica has heard from the primary ${primary.name} for ${seconds(cutOffMs)} though it answers; failover after ${seconds(view.failoverAfterMs)}`,
    });
  }

  // 4. The primary takes writes, with semi-synchronous replication as configured.
  const semi = primary.sql.semiSync;
  const wantEnabled = view.waitCount > 0;
  if (!primary.sql.writable || semi.enabled !== wantEnabled || (wantEnabled && semi.waitCount !== view.waitCount))
    return result({ type: 'enableWrites', member: primary.name, waitCount: view.waitCount });
  if (primary.role !== 'primary') return result({ type: 'label', member: primary.name, role: 'primary' });

  // 3. Errant members stop replicating and serve nothing.
  for (const name of errant) {
    const m = byName.get(name);
    if (!m) continue;
    if (m.role !== 'none') return result({ type: 'label', member: name, role: 'none' });
    if (m.sql?.channel && m.sql.channel.receiver !== 'OFF') return result({ type: 'stopReplication', member: name });
  }

  // A request whose candidate is not healthy yet waits (the steps below may be what makes it healthy).
  let switchoverWaiting: Step | undefined;
  if (view.switchover) {
    const step = switchoverStep(view.switchover, members, primary, errant);
    if (
      step.type !== 'refuseSwitchover' ||
      !step.retryable ||
      (view.switchover.waitedMs ?? 0) >= SWITCHOVER_PATIENCE_MS
    )
      return result(step);
    switchoverWaiting = { type: 'wait', reason: 'SwitchoverWaiting', message: step.message };
  }

  // Every other member follows the primary.
  const broken: { reason: string; message: string }[] = [];
  for (const m of answering) {
    // A member leaving in a scale-down stops receiving instead (scale-down.ts).
    if (m.name === primary.name || errant.has(m.name) || isLeaving(view, m)) continue;
    if (replicatesFrom(m, primary.host)) {
      // Not errant: the primary holds all it has, so what it serves can no longer be discarded (invariant 7).
      if (m.sql?.offline) return result({ type: 'admitClients', member: m.name });
      if (m.role !== 'replica') return result({ type: 'label', member: m.name, role: 'replica' });
      continue;
    }
    const c = m.sql?.channel;
    // A channel to the primary that stopped on an error is not restarted in a loop: it is reported
    // (the agent re-provisions a replica whose primary purged the logs it needs). Except a receiver
    // stopped on reaching no source (it was down, as in a restart of every member): restarted, it
    // retries by itself, so this cannot loop.
    if (c && c.sourceHost === primary.host && c.error && !stoppedUnreachable(c)) {
      broken.push({ reason: 'ReplicationFailed', message: `member ${m.name} stopped replicating: ${c.error}` });
      if (m.role === 'replica') return result({ type: 'label', member: m.name, role: 'none' }, broken);
      continue;
    }
    return result({ type: 'replicate', member: m.name, source: primary.name, sourceHost: primary.host });
  }

  if (switchoverWaiting) return result(switchoverWaiting, broken);
  // Scale-down removes the highest ordinals: the primary leaves them first.
  if (primary.ordinal >= view.replicas) {
    const to = bestReplica(members, primary, errant, (m) => m.ordinal < view.replicas);
    if (to) return result({ type: 'switchover', from: primary.name, to: to.name }, broken);
    return result(
      {
        type: 'wait',
        reason: 'ScaleDownWaiting',
        message: `the primary ${primary.name} is beyond spec.replicas=${view.replicas} and no healthy replica can take over yet`,
      },
      broken,
    );
  }
  const leaving = leavingStep(view, members, primary, errant);
  if (leaving) return result(leaving, broken);
  if (kept.why !== undefined)
    return result(
      {
        type: 'wait',
        reason: 'ScaleDownWaiting',
        message: `spec.replicas=${view.replicas}, but the StatefulSet keeps ${kept.keep} members for now: ${kept.why}`,
      },
      broken,
    );
  const rolling = rollingStep(view, members, primary, errant);
  return result(rolling ?? { type: 'steady' }, broken);
}

/** The first primary: the one writable member, or the most advanced one, or ordinal 0 of a new cluster. */
function firstPrimary(members: readonly MemberView[], replicas: number): Step {
  const answering = members.filter((m) => m.sql);
  const writable = answering.filter((m) => m.sql?.writable);
  if (writable.length === 1 && writable[0]) return { type: 'bootstrap', member: writable[0].name };
  if (writable.length > 1)
    return {
      type: 'wait',
      reason: 'PrimaryAmbiguous',
      message: `members ${writable.map((m) => m.name).join(', ')} are all writable and no primary is recorded: make all but one read-only (SET GLOBAL super_read_only = ON)`,
    };
  if (answering.length === 0) return { type: 'wait', reason: 'NoMemberAnswers', message: 'no member answers yet' };
  // A member with everyone else's history; among equals the lowest ordinal.
  const candidate = answering.find((c) => answering.every((o) => history(o).isSubsetOf(history(c))));
  if (!candidate)
    return {
      type: 'wait',
      reason: 'PrimaryAmbiguous',
      message: `no member holds every other member's transactions (${answering.map((m) => m.name).join(', ')}): no primary can be chosen without losing some`,
    };
  // Members that exist but do not answer might hold more: wait for them, unless none of them has data yet,
  // or they are building a data directory from nothing (the members of a restored cluster, all started at
  // once, wait in their bootstrap for the restored one to become the primary and clone it).
  const silent = members.filter((m) => !m.sql && m.ordinal < replicas && !m.buildingDataDirectory);
  if (silent.length > 0 && !history(candidate).isEmpty())
    return {
      type: 'wait',
      reason: 'MembersUnreachable',
      message: `waiting for ${silent.map((m) => m.name).join(', ')} to answer before choosing the first primary`,
    };
  return { type: 'bootstrap', member: candidate.name };
}

function errantMembers(
  members: readonly MemberView[],
  primary: MemberView | undefined,
  known: ReadonlySet<string>,
): Set<string> {
  const out = new Set<string>();
  const reference = primary?.sql;
  for (const m of members) {
    if (m.name === primary?.name) continue;
    if (!reference || !m.sql) {
      // Not comparable now: what was found while it was comparable still holds.
      if (known.has(m.name)) out.add(m.name);
      continue;
    }
    const surplus = m.sql.executed.subtract(reference.executed);
    if (surplus.isEmpty()) continue;
    // The members are read in parallel: a replica may apply a commit the primary made after it was
    // read. What it received from the primary's own channel is in the primary's binary log, so it is
    // the primary's history, not errant (judging otherwise took a healthy replica out of its Service
    // and stopped its replication for a look).
    const c = m.sql.channel;
    if (c !== undefined && c.sourceHost === primary?.host && surplus.isSubsetOf(m.sql.received)) continue;
    out.add(m.name);
  }
  return out;
}

/**
 * A writable primary whose commits wait for acknowledgements no one can send: rpl_semi_sync_source_timeout
 * is infinite (my.cnf), so every commit blocks until enough replicas connect. The source's own count of
 * semi-synchronous replicas is the truth; without it, the replicas whose receiver is connected to it.
 */
function writesWaitFor(
  members: readonly MemberView[],
  primary: MemberView | undefined,
  errant: ReadonlySet<string>,
): string | undefined {
  const semi = primary?.sql?.semiSync;
  if (!primary?.sql?.writable || !semi?.enabled || semi.waitCount <= 0) return undefined;
  const connected =
    semi.clients ??
    members.filter(
      (m) =>
        m.name !== primary.name &&
        !errant.has(m.name) &&
        m.sql?.channel?.sourceHost === primary.host &&
        m.sql.channel.receiver === 'ON',
    ).length;
  if (connected >= semi.waitCount) return undefined;
  const wanted = `${semi.waitCount} semi-synchronous replica${semi.waitCount > 1 ? 's' : ''}`;
  return `writes wait until a replica acknowledges them: the primary ${primary.name} waits for ${wanted} and ${connected === 0 ? 'none is' : `${connected} ${connected > 1 ? 'are' : 'is'}`} connected (until then commits block, and clients see timeouts or "Lost connection")`;
}

/**
 * The healthy replica that has applied the most (then received the most, then the lowest ordinal), among
 * those `accept` allows: a switchover waits until its target has applied all the primary has, so the
 * one with the least left to apply takes over first (a member just cloned back receives everything at
 * once but still has a backlog to apply).
 */
function bestReplica(
  members: readonly MemberView[],
  primary: MemberView,
  errant: ReadonlySet<string>,
  accept: (m: MemberView) => boolean = () => true,
): MemberView | undefined {
  const healthy = members.filter(
    (m) => m.name !== primary.name && !errant.has(m.name) && m.ready && replicatesFrom(m, primary.host) && accept(m),
  );
  const applied = (m: MemberView): number => m.sql?.executed.count() ?? 0;
  return healthy.sort(
    (a, b) => applied(b) - applied(a) || history(b).count() - history(a).count() || a.ordinal - b.ordinal,
  )[0];
}

function switchoverStep(
  request: { readonly id: string; readonly to?: string },
  members: readonly MemberView[],
  primary: MemberView,
  errant: ReadonlySet<string>,
): Step {
  const refuse = (message: string, retryable = false): Step => ({
    type: 'refuseSwitchover',
    requestId: request.id,
    message,
    ...(retryable ? { retryable } : {}),
  });
  if (request.to === undefined) {
    const to = bestReplica(members, primary, errant);
    return to
      ? { type: 'switchover', from: primary.name, to: to.name, requestId: request.id }
      : refuse('no healthy replica to switch over to (a replica must be ready and replicating from the primary)', true);
  }
  if (request.to === primary.name) return refuse(`${request.to} is already the primary`);
  const target = members.find((m) => m.name === request.to);
  if (!target) return refuse(`${request.to} is not a member (members: ${members.map((m) => m.name).join(', ')})`);
  if (errant.has(target.name)) return refuse(`${request.to} holds errant transactions and can never be promoted`);
  if (!target.ready || !replicatesFrom(target, primary.host))
    return refuse(
      `${request.to} is not a healthy replica (it must be ready and replicating from ${primary.name})`,
      true,
    );
  return { type: 'switchover', from: primary.name, to: target.name, requestId: request.id };
}

/**
 * Pods are re-created by recon8s, not by the StatefulSet (updateStrategy OnDelete), one at a time and
 * only while every member is healthy: replicas first (highest ordinal first), then the primary, after
 * a switchover to an updated replica, so that a rolling update never restarts the member taking writes.
 */
function rollingStep(
  view: ClusterView,
  members: readonly MemberView[],
  primary: MemberView,
  errant: ReadonlySet<string>,
): Step | undefined {
  if (!members.some((m) => m.outdated)) return undefined;
  const healthy =
    members.length >= view.replicas &&
    errant.size === 0 &&
    members.every((m) => m.sql && m.ready && (m.name === primary.name || replicatesFrom(m, primary.host)));
  if (!healthy) return undefined;
  const outdatedReplica = [...members].reverse().find((m) => m.outdated && m.name !== primary.name);
  if (outdatedReplica) return { type: 'restart', member: outdatedReplica.name };
  if (members.length === 1) return { type: 'restart', member: primary.name };
  const to = bestReplica(members, primary, errant, (m) => !m.outdated);
  return to ? { type: 'switchover', from: primary.name, to: to.name } : undefined;
}

function memberStatuses(
  members: readonly MemberView[],
  primary: MemberView | undefined,
  errant: ReadonlySet<string>,
): MemberStatus[] {
  return members.map((m) => {
    const isPrimary = m.name === primary?.name;
    const extra =
      errant.has(m.name) && m.sql && primary?.sql ? m.sql.executed.subtract(primary.sql.executed) : undefined;
    const behind =
      !isPrimary && m.sql && primary?.sql ? primary.sql.executed.subtract(m.sql.executed).count() : undefined;
    const c = m.sql?.channel;
    return {
      name: m.name,
      role: isPrimary ? 'primary' : errant.has(m.name) ? 'none' : (m.role ?? 'none'),
      reachable: m.sql !== undefined,
      ...(m.sql ? { writable: m.sql.writable } : {}),
      ...(m.sql && !isPrimary ? { replicating: primary !== undefined && replicatesFrom(m, primary.host) } : {}),
      ...(behind !== undefined ? { behind } : {}),
      ...(errant.has(m.name) ? { errantTransactions: extra?.toString() ?? 'unknown' } : {}),
      ...(notAnswering(m) ? { message: notAnswering(m) } : c?.error ? { message: c.error } : {}),
    };
  });
}

/** MemberCertificateRejected, one problem per distinct reason (a CA that changed refuses every member alike). */
function certificateProblems(
  members: readonly MemberView[],
  primary: string | undefined,
): { reason: string; message: string }[] {
  const byReason = new Map<string, string[]>();
  for (const m of members)
    if (m.certificateRejected !== undefined)
      byReason.set(m.certificateRejected, [...(byReason.get(m.certificateRejected) ?? []), m.name]);
  return [...byReason].map(([reason, names]) => {
    const who = names.map((n) => (n === primary ? `${n} (the primary)` : n)).join(', ');
    return {
      reason: 'MemberCertificateRejected',
      message: `${names.length > 1 ? 'members' : 'member'} ${who} presented a TLS certificate the cluster's CA does not vouch for (${reason}): refused before any credential was sent; counted as not answering (never compared, fenced or promoted) until it serves one that CA (status.tlsSecretName's ca.crt) signed`,
    };
  });
}
