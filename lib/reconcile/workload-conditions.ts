import type { ConditionInput } from './conditions.js';

/** Workload figures read from a live Deployment or StatefulSet. */
export interface WorkloadFigures {
  readonly desired: number;
  readonly replicas: number;
  readonly ready: number;
  readonly updated: number;
  readonly available: number;
  /** Available pods of the current template: what a rollout has delivered (see updatedAvailable()). */
  readonly updatedAvailable: number;
  /** The workload controller has seen the latest spec. */
  readonly observed: boolean;
  /** Kubernetes says the rollout is stuck (Deployment ProgressDeadlineExceeded). */
  readonly stuck?: string;
}

/** The parts of a live workload the figures come from. */
export interface LiveWorkload {
  readonly metadata?: { readonly generation?: number };
  readonly status?: unknown;
}

export function workloadFigures(live: LiveWorkload | undefined, desiredReplicas: number): WorkloadFigures | undefined {
  if (!live) return undefined;
  const status = (live.status ?? {}) as {
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    currentRevision?: string;
    updateRevision?: string;
  };
  const generation = live.metadata?.generation ?? 0;
  const progressing = status.conditions?.find((c) => c.type === 'Progressing');
  const stuck =
    progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded'
      ? (progressing.message ?? 'progress deadline exceeded')
      : undefined;
  // A StatefulSet reports availableReplicas too (1.22+); readiness is what clients feel.
  const replicas = status.replicas ?? 0;
  const updated = status.updatedReplicas ?? 0;
  const available = status.availableReplicas ?? status.readyReplicas ?? 0;
  return {
    desired: desiredReplicas,
    replicas,
    ready: status.readyReplicas ?? 0,
    updated,
    available,
    updatedAvailable: updatedAvailable(replicas, updated, available),
    observed: (status.observedGeneration ?? 0) >= generation,
    ...(stuck ? { stuck } : {}),
  };
}

/**
 * How many available pods run the current template. Kubernetes does not say: a Deployment's ready and
 * available counts include the old pods of a rollout, so a rollout stuck on a new pod that cannot pull
 * its image would read "2/2 available". At most `replicas - updated` of the available pods are old, so
 * at least the rest are updated: exact when the old pods are all available (a stuck rollout) or all
 * gone (no rollout); otherwise fewer than the truth, never more (and briefly: old pods that are not
 * available are the first a Deployment scales down).
 */
export function updatedAvailable(replicas: number, updated: number, available: number): number {
  const old = Math.max(replicas - updated, 0);
  return Math.max(0, Math.min(available - old, updated, available));
}

/**
 * Ready / Progressing / Degraded from what the workload reports. Ready means every desired replica
 * is updated and available; Progressing means a rollout or scale is under way; Degraded means
 * Kubernetes gave up on the rollout.
 */
export function workloadConditions(what: string, f: WorkloadFigures | undefined): ConditionInput[] {
  if (!f) {
    return [
      { type: 'Ready', status: 'False', reason: 'Creating', message: `the ${what} does not exist yet` },
      { type: 'Progressing', status: 'True', reason: 'Creating', message: `creating the ${what}` },
      { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'no problems found' },
    ];
  }
  const done = f.observed && f.updatedAvailable >= f.desired && f.replicas <= f.desired;
  const ready: ConditionInput = done
    ? { type: 'Ready', status: 'True', reason: 'Available', message: `${f.available}/${f.desired} replicas available` }
    : {
        type: 'Ready',
        status: 'False',
        reason: f.desired === 0 ? 'ScaledToZero' : 'Unavailable',
        message: notReadyMessage(f),
      };
  if (f.desired === 0 && f.replicas === 0) {
    return [
      { type: 'Ready', status: 'True', reason: 'ScaledToZero', message: 'scaled to zero replicas' },
      { type: 'Progressing', status: 'False', reason: 'Complete', message: 'no rollout in progress' },
      { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'no problems found' },
    ];
  }
  return [
    ready,
    done
      ? { type: 'Progressing', status: 'False', reason: 'Complete', message: 'no rollout in progress' }
      : {
          type: 'Progressing',
          status: 'True',
          reason: 'RollingOut',
          message: `rolling out: ${f.updated}/${f.desired} updated, ${f.ready}/${f.desired} ready`,
        },
    f.stuck
      ? { type: 'Degraded', status: 'True', reason: 'ProgressDeadlineExceeded', message: f.stuck }
      : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'no problems found' },
  ];
}

/** "0/2 updated replicas available (1 updated, 2 old still available)": the old pods of a rollout are not the new. */
function notReadyMessage(f: WorkloadFigures): string {
  const old = f.available - f.updatedAvailable;
  return `${f.updatedAvailable}/${f.desired} updated replicas available (${f.updated} updated${old > 0 ? `, ${old} old still available` : ''})`;
}

/** Conditions when the reconcile itself failed: the children were not (all) converged. */
export function failureConditions(
  reason: string,
  message: string,
  previous?: readonly ConditionInput[],
): ConditionInput[] {
  const ready = previous?.find((c) => c.type === 'Ready');
  return [
    ready && ready.status === 'True' ? ready : { type: 'Ready', status: 'False', reason, message },
    { type: 'Progressing', status: 'False', reason, message },
    { type: 'Degraded', status: 'True', reason, message },
    // What is judged apart from the children (an App's database account) still holds.
    ...(previous ?? []).filter((c) => c.type === 'DatabaseReady'),
  ];
}
