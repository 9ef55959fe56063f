// When the HA loop looks at a cluster, and how long it waits for what it asked of a member.

/** Steps per pass: a failover is about six (stop receivers, promote, labels, writable, re-point). */
export const MAX_STEPS = 16;
/** How often a quiet cluster is looked at: the time to notice a lost primary. */
export const STEADY_POLL_MS = 5_000;
/** While something is under way (a primary down, a member joining). */
export const BUSY_POLL_MS = 1_000;
/**
 * While a lost primary's replacement pod runs its mysql container (a pod deleted with no grace period,
 * re-created by the StatefulSet): its mysqld answering is the failover's proof that the old one is gone,
 * and each look at a port that refuses costs a refused connection.
 */
export const REPLACEMENT_POLL_MS = 250;
/**
 * The longest a cluster with no primary yet waits between looks while nothing changes (its pods cannot
 * run: unschedulable, an image missing): changes of its pods and of the resource wake it at once.
 */
export const STUCK_POLL_MAX_MS = 30_000;
/** How long a promotion waits for the candidate to apply what it received. */
export const APPLY_TIMEOUT_S = 60;

/** What the last look found while something was unsettled, and the poll that followed. */
export interface Unsettled {
  readonly seen: string;
  readonly pollMs: number;
}

/**
 * When to look again, and what to remember for the next time: at once after a step (BUSY_POLL_MS);
 * every STEADY_POLL_MS when all is well; while something is unsettled (a member that does not answer,
 * a primary down, a failover waiting), every BUSY_POLL_MS as long as each look finds something new (a
 * failover's countdown is new every second), doubling up to `maxMs` while looks find the same (a
 * member whose pod cannot start).
 */
export function nextPoll(
  last: Unsettled | undefined,
  o: { readonly acted: boolean; readonly unsettled: boolean; readonly maxMs: number },
  seen: string,
): { readonly pollMs: number; readonly unsettled?: Unsettled } {
  if (!o.unsettled) return { pollMs: STEADY_POLL_MS };
  const pollMs =
    o.acted || last?.seen !== seen ? BUSY_POLL_MS : Math.min(Math.max(last.pollMs * 2, BUSY_POLL_MS), o.maxMs);
  return { pollMs, unsettled: { seen, pollMs } };
}
