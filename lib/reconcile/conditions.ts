import type { Condition } from '../../constructs/index.js';

/** DatabaseReady: an App's database account (spec.database) exists with the access asked. */
export type ConditionType = 'Ready' | 'Progressing' | 'Degraded' | 'DatabaseReady';

/** A condition as a reconcile decides it; the transition time is filled in by {@link mergeConditions}. */
export interface ConditionInput {
  readonly type: ConditionType;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
}

/**
 * The new conditions list, per the API conventions: `lastTransitionTime` changes only when a
 * condition's status changes, so re-deciding the same state writes nothing new.
 */
export function mergeConditions(
  current: readonly Condition[] | undefined,
  decided: readonly ConditionInput[],
  generation: number,
  now: Date,
): Condition[] {
  const byType = new Map((current ?? []).map((c) => [c.type, c]));
  return decided.map((d) => {
    const prev = byType.get(d.type);
    const lastTransitionTime = prev && prev.status === d.status ? prev.lastTransitionTime : rfc3339(now);
    return {
      type: d.type,
      status: d.status,
      observedGeneration: generation,
      lastTransitionTime,
      reason: d.reason,
      message: truncate(d.message),
    };
  });
}

/** RFC 3339 with second precision, as metav1.Time serializes. */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

function truncate(message: string): string {
  return message.length > 32000 ? `${message.slice(0, 31997)}...` : message;
}
