// What a pass of the HA loop reports: the metrics of every look, and at its end the status fields,
// problems, Events and when to look again (Management); with it, what the cluster's memory keeps of
// the pass (the members a scale-down keeps, the sessions still of use, how unsettled the cluster is).
import type { MemberCloning } from '../../../mysql/clone-progress.js';
import { cloningByMember } from '../../../mysql/clone-progress.js';
import type { Decision } from '../../../mysql/topology.js';
import type { ManagedEvent, Management, Problem } from '../../kind-controller.js';
import type { Look } from './observe.js';
import { memberViews, podsToAsk } from './observe.js';
import type { Pass } from './pass.js';
import type { HaMetrics } from './ports.js';
import { replacementStarting } from './primary-stopped.js';
import { REPLACEMENT_POLL_MS, STEADY_POLL_MS, STUCK_POLL_MAX_MS, nextPoll } from './timing.js';

/** The last look of a pass, what decide() made of it, and the problems the pass adds (a wait). */
export interface Judged {
  readonly look: Look;
  readonly decision: Decision;
  readonly problems: Problem[];
}

/** A look's series: every member's, then the cluster's (with the recorded primary it was judged from). */
export function reportLook(metrics: HaMetrics, { look, decision }: Omit<Judged, 'problems'>): void {
  for (const m of look.observed) {
    const decided = decision.members.find((s) => s.name === m.name);
    metrics.member(m.name, {
      reachable: m.sql !== undefined,
      ...(decided?.behind !== undefined ? { behind: decided.behind } : {}),
      ...(decided ? { role: decided.role } : {}),
    });
  }
  metrics.cluster({
    ...(look.view.primary !== undefined ? { primaryReachable: look.current?.sql !== undefined } : {}),
    errantMembers: decision.errant.size,
  });
}

/** The end of a pass: what its memory keeps, the rejoin requests of the last look, and the report. */
export async function finish(pass: Pass, last: Judged, events: ManagedEvent[]): Promise<Management> {
  const { memory, primary, replicas } = pass;
  const { decision } = last;
  // Members no longer looked at (their pod gone, or replaced: a former primary's, once another is the
  // primary) keep no session; nor does a cluster forgotten (deleted) during this pass.
  const { pods: toAsk } = podsToAsk(pass);
  const wallNowMs = pass.ports.clock.wallClock().getTime();
  const asked = memberViews(toAsk, pass.names, pass.sts?.status?.updateRevision, primary, wallNowMs);
  pass.sessions.settle(new Map(asked.map((v) => [v.name, toAsk.find((p) => p.metadata?.name === v.name)])));

  // A scale-down that became safe is applied now, not at the next poll: the StatefulSet was applied
  // before this pass, with the size judged before it (the manager's amend).
  const allowed = decision.kept.keep;
  const before = memory.keptMembers;
  const held = pass.sts?.spec?.replicas ?? 0;
  memory.keptMembers = { replicas, keep: allowed, of: held };
  if (allowed < held && (before?.replicas !== replicas || before.keep !== allowed)) pass.ctx.wake?.();
  // A former primary whose surplus is proven never acknowledged rejoins by clone (its agent does it).
  events.push(...(await pass.records.rejoin(last.look.verdicts, decision.errant)));
  const problems = [...last.problems, ...decision.rejected];
  for (const [key, { member, reason }] of pass.refused)
    events.push({
      type: 'Warning',
      reason: 'MemberCertificateRejected',
      message: `pod ${member}${member === primary ? ' (the primary)' : ''} presented a TLS certificate the cluster's CA does not vouch for (${reason}): refused in the handshake, before any credential was sent`,
      once: `member-certificate/${key}`,
    });

  const { step, members, writesWait } = decision;
  const unready = pass.pods.some(
    (p) => !(p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  // Only while a member is not Ready (a healthy cluster's look asks nothing more).
  const cloning = unready && primary !== undefined ? await clonesServedBy(primary, last.look, pass) : new Map();
  const poll = nextPoll(
    memory.unsettled,
    {
      acted: step.type !== 'steady' && step.type !== 'wait',
      unsettled:
        step.type !== 'steady' ||
        memory.down !== undefined ||
        writesWait !== undefined ||
        members.some((m) => !m.reachable) ||
        unready,
      // Failure detection: with a primary to watch, never longer than a healthy cluster's poll.
      maxMs: primary !== undefined ? STEADY_POLL_MS : STUCK_POLL_MAX_MS,
    },
    JSON.stringify({
      lastStep: step,
      problems,
      members,
      writesWait,
      pods: pass.pods.map((p) => `${p.metadata?.name ?? ''}@${p.metadata?.resourceVersion ?? ''}`),
    }),
  );
  memory.unsettled = poll.unsettled;
  // A lost primary's replacement about to answer is looked at more often until its mysqld does.
  const replacing =
    primary !== undefined &&
    memory.down !== undefined &&
    replacementStarting(
      pass.pods.find((p) => p.metadata?.name === primary),
      memory.answered?.pods.get(primary),
    );
  return {
    fields: {
      ...(primary !== undefined ? { currentPrimary: primary } : {}),
      members: members.map(({ behind: _behind, ...rest }) => {
        const clone = cloning.get(rest.name);
        return clone ? { ...rest, cloning: clone } : rest;
      }),
      ...(pass.switchoverStatus ? { switchover: pass.switchoverStatus } : {}),
      ...pass.records.fields(),
    },
    problems,
    events,
    requeueAfterMs: replacing ? Math.min(poll.pollMs, REPLACEMENT_POLL_MS) : poll.pollMs,
    ...(writesWait ? { unavailable: { reason: 'WaitingForReplicaAck', message: writesWait } } : {}),
  };
}

/**
 * The clones the primary serves, by recipient member (clone-progress.ts). Asked on the session this
 * look kept to it; a primary that does not answer serves none that can be told.
 */
async function clonesServedBy(primary: string, look: Look, pass: Pass): Promise<Map<string, MemberCloning>> {
  const session = look.sessions.get(primary);
  if (!session) return new Map();
  const donations = await session.cloneDonations().catch(() => []);
  if (donations.length === 0) return new Map();
  const members = pass.pods.map((p) => ({
    name: p.metadata?.name ?? '',
    addresses: (p.status?.podIPs ?? []).map((a) => a.ip).concat(p.status?.podIP ? [p.status.podIP] : []),
  }));
  return cloningByMember(primary, donations, members);
}
