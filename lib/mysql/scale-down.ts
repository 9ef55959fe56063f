// Scale-down, decided (beside decide.ts, like failover.ts): which members the StatefulSet keeps while
// spec.replicas is lowered, and the steps that make the others safe to remove. Pure, tested with
// decide.ts (test/unit/mysql-decide.test.ts, "scale-down"; the StatefulSet it keeps:
// test/integration/mysql-manager-steps.test.ts; on the real node: test/e2e/mysql-lifecycle.test.ts).
//
// A replica may be the only one to have acknowledged the primary's last commits (another replica lagging
// or cut off). Removed at once, it would take them out of the failover's reach: the failover rule counts
// the replicas there are, and a primary lost a moment later would be replaced by a replica without them.
// So a member above spec.replicas (a "leaving" member) goes only once it is safe to lose:
// 1. it leaves `<name>-replicas` (its role label off), so reads move first;
// 2. its receiver stops: it acknowledges nothing more (the applier finishes what it received);
// 3. what it holds (received or applied) is on as many remaining replicas as the failover rule counts
//    on (the acknowledgements each commit waited for; one without semi-synchronous replication), or on
//    every remaining replica when there are fewer.
// Until then the controller applies the StatefulSet with the members it keeps (ClusterView.heldReplicas),
// and one that does not answer is kept: what it holds cannot be known.
import type { ClusterView, MembersKept, MemberView, Step } from './topology.js';
import { history, isLeaving, termAcknowledgements } from './topology.js';

/**
 * How many members the StatefulSet keeps: it shrinks from its highest ordinal, so down to just above the
 * highest leaving member that is not yet safe to lose.
 */
export function membersKept(
  view: ClusterView,
  members: readonly MemberView[],
  primary: MemberView | undefined,
  errant: ReadonlySet<string>,
): MembersKept {
  const held = view.heldReplicas ?? view.replicas;
  // No primary ever recorded: no write was ever acknowledged, nothing to keep.
  if (held <= view.replicas || view.primary === undefined) return { keep: view.replicas };
  const remaining = members.filter(
    (m) => m.ordinal < view.replicas && m.name !== primary?.name && m.sql && !errant.has(m.name),
  );
  const needed = Math.min(Math.max(termAcknowledgements(view), 1), view.replicas - 1);
  const prefix = (members[0]?.name ?? '').replace(/-\d+$/, '');
  for (let ordinal = held - 1; ordinal >= view.replicas; ordinal--) {
    const why = notYetSafe(members, ordinal, primary, errant, remaining, needed, prefix);
    if (why) return { keep: ordinal + 1, why };
  }
  return { keep: view.replicas };
}

function notYetSafe(
  members: readonly MemberView[],
  ordinal: number,
  primary: MemberView | undefined,
  errant: ReadonlySet<string>,
  remaining: readonly MemberView[],
  needed: number,
  prefix: string,
): string | undefined {
  const m = members.find((x) => x.ordinal === ordinal);
  if (!m) return `${prefix}-${ordinal} has no pod now; it is kept until it runs again, for what its volume holds`;
  if (m.name === primary?.name) return `${m.name} is the primary: a replica takes over first`;
  if (!m.sql)
    return `${m.name} does not answer: what it holds cannot be compared with the remaining replicas (delete its pod and PersistentVolumeClaim if it is lost for good: it then joins empty and leaves)`;
  const c = m.sql.channel;
  if (c && c.receiver !== 'OFF') return `${m.name} still receives from the primary; its receiver is being stopped`;
  if (!primary?.sql) return `the primary does not answer: ${m.name} may hold what a failover needs`;
  // An errant member's surplus was never the primary's, so never acknowledged to a client.
  const own = history(m);
  const held = errant.has(m.name) ? own.subtract(m.sql.executed.subtract(primary.sql.executed)) : own;
  const holders = remaining.filter((r) => held.isSubsetOf(history(r))).length;
  if (holders >= needed) return undefined;
  const once = `it leaves once ${needed} ${needed === 1 ? 'has' : 'have'}`;
  return holders === 0
    ? `${m.name} holds transactions no remaining replica has received yet (${once})`
    : `${m.name} holds transactions only ${holders} remaining replica(s) have received yet (${once})`;
}

/**
 * The next step for the leaving replicas (errant ones are handled as errant: decide.ts): out of
 * `<name>-replicas`, then receivers stopped. Undefined when none is left to do.
 */
export function leavingStep(
  view: ClusterView,
  members: readonly MemberView[],
  primary: MemberView,
  errant: ReadonlySet<string>,
): Step | undefined {
  const leaving = members
    .filter((m) => isLeaving(view, m) && m.name !== primary.name && m.sql && !errant.has(m.name))
    .sort((a, b) => b.ordinal - a.ordinal);
  const labelled = leaving.find((m) => m.role !== undefined && m.role !== 'none');
  if (labelled) return { type: 'label', member: labelled.name, role: 'none' };
  const receiving = leaving.filter((m) => m.sql?.channel && m.sql.channel.receiver !== 'OFF');
  if (receiving.length > 0) return { type: 'stopReceivers', members: receiving.map((m) => m.name) };
  return undefined;
}
