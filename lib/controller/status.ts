import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject as LiveObject, V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import type { KubernetesObject } from '../../constructs/index.js';
import type { ConditionInput } from '../reconcile/conditions.js';
import type { CustomResource, Problem } from './kind-controller.js';
import { mergeConditions } from '../reconcile/conditions.js';

/** Whether a live child is controlled by this resource (the ownership rule: never judge someone else's). */
export function controlledBy(live: LiveObject | undefined, uid: string | undefined): boolean {
  return uid !== undefined && live?.metadata?.ownerReferences?.some((r) => r.controller && r.uid === uid) === true;
}

/**
 * The pods a workload of the resource controls, by their controller reference (`owns` says which
 * references are the resource's workloads): a pod that only carries the labels is not one of them.
 */
export function podsControlledBy(
  pods: readonly V1Pod[],
  owns: (controller: V1OwnerReference, pod: V1Pod) => boolean,
): V1Pod[] {
  return pods.filter((p) => {
    const controller = p.metadata?.ownerReferences?.find((r) => r.controller);
    return controller !== undefined && owns(controller, p);
  });
}

export const find = (objects: readonly KubernetesObject[], kind: string, name?: string): KubernetesObject | undefined =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

export function selectorString(workload: KubernetesObject | undefined): string | undefined {
  const labels = (workload?.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector
    ?.matchLabels;
  return labels
    ? Object.entries(labels)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}=${v}`)
        .join(',')
    : undefined;
}

export function serviceEndpoint(service: KubernetesObject | undefined, namespace: string): string | undefined {
  const port = (service?.spec as { ports?: { port: number }[] } | undefined)?.ports?.[0]?.port;
  return service && port !== undefined ? `${service.metadata.name}.${namespace}.svc:${port}` : undefined;
}

/** How many of the versions older than a status write are remembered with it. */
const BEHIND_KEPT = 16;

/**
 * A status this controller wrote to a resource: what it said, the resourceVersion it got back, and
 * versions of the resource known to be older than that write: those the cache was at when it judged
 * (this write and earlier ones) and those its own writes got back before (the ApplySet metadata,
 * earlier statuses). The cache moves forward only, so whatever it was at, or was told, before a write
 * is older than that write.
 */
export interface StatusWrite {
  readonly status: Record<string, unknown>;
  readonly wrote: string | undefined;
  readonly behind: readonly string[];
}

/** `status`, just written from `cr` (got back as version `wrote`), after `last`; `ownVersions`: what this controller's writes to it got back. */
export function statusWrite(
  last: StatusWrite | undefined,
  cr: CustomResource,
  status: Record<string, unknown>,
  wrote: string | undefined,
  ownVersions: readonly string[],
): StatusWrite {
  const older = [...(last?.behind ?? []), last?.wrote, cr.metadata.resourceVersion, ...ownVersions];
  const behind = [...new Set(older)].filter((v): v is string => v !== undefined && v !== wrote);
  return { status, wrote, behind: behind.slice(-BEHIND_KEPT) };
}

/**
 * The resource a status is judged against: as the cache has it, or with the status `last` wrote when
 * the cache is at a version older than that write (its watch event not in yet). Judged against the
 * older status, the same status would be written again at each look until the watch caught up (on a
 * loaded machine, seconds: requests at steady state), and a changed condition again with a newer
 * lastTransitionTime. The API server's status since `last` is what `last` wrote unless someone else
 * wrote after it, and that write's own watch event looks at the resource again.
 */
export function judgedAgainst(cr: CustomResource, last: StatusWrite | undefined): CustomResource {
  const rv = cr.metadata.resourceVersion;
  return last && rv !== undefined && last.behind.includes(rv) ? { ...cr, status: last.status } : cr;
}

/**
 * The status to write, or undefined when the live status already says exactly this (so a quiet
 * cluster sees no status writes).
 */
export function nextStatus(
  cr: CustomResource,
  fields: Record<string, unknown>,
  conditions: readonly ConditionInput[],
  now: Date,
): Record<string, unknown> | undefined {
  const generation = cr.metadata.generation ?? 0;
  const status = {
    observedGeneration: generation,
    ...fields,
    conditions: mergeConditions(cr.status?.conditions, conditions, generation, now),
  };
  return isDeepStrictEqual(normalize(status), normalize(cr.status ?? {})) ? undefined : status;
}

function normalize(status: Record<string, unknown>): unknown {
  return JSON.parse(
    JSON.stringify(status, (_k, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
        : v,
    ),
  );
}

export function compact(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/**
 * Degraded names the first problem (and the message all of them); a resource that is not Ready says
 * why in its Ready reason too, so `kubectl get`'s STATUS shows the cause rather than "Unavailable".
 */
export function withProblems(conditions: readonly ConditionInput[], problems: readonly Problem[]): ConditionInput[] {
  const first = problems[0];
  if (!first) return [...conditions];
  const message = problems.map((p) => p.message).join('; ');
  return conditions.map((c) => {
    if (c.type === 'Degraded') return { type: 'Degraded', status: 'True', reason: first.reason, message };
    if (c.type === 'Ready' && c.status !== 'True')
      return { type: 'Ready', status: c.status, reason: first.reason, message: `${c.message}; ${message}` };
    return c;
  });
}

/**
 * Ready=False with this reason while the resource cannot do its job although its pods run (MySQL: a
 * primary whose commits wait for a replica's acknowledgement); what Ready said is kept in its message.
 */
export function withUnavailable(
  conditions: readonly ConditionInput[],
  unavailable: { readonly reason: string; readonly message: string } | undefined,
): ConditionInput[] {
  if (!unavailable) return [...conditions];
  return conditions.map((c) =>
    c.type === 'Ready'
      ? { type: 'Ready', status: 'False', reason: unavailable.reason, message: `${unavailable.message}; ${c.message}` }
      : c,
  );
}

/** Progressing=False/Paused; Ready and Degraded keep what was last observed (nothing is looked at while paused). */
export function pausedConditions(previous: readonly ConditionInput[]): ConditionInput[] {
  const keep = (type: ConditionInput['type'], fallback: ConditionInput): ConditionInput =>
    previous.find((c) => c.type === type) ?? fallback;
  return [
    keep('Ready', {
      type: 'Ready',
      status: 'Unknown',
      reason: 'Paused',
      message: 'not observed: reconciliation is paused',
    }),
    {
      type: 'Progressing',
      status: 'False',
      reason: 'Paused',
      message: 'reconciliation is paused by spec.paused: the children are left as they are until it is cleared',
    },
    keep('Degraded', {
      type: 'Degraded',
      status: 'Unknown',
      reason: 'Paused',
      message: 'not observed: reconciliation is paused',
    }),
  ];
}

/**
 * The ownerReference that makes `cr` the controller of an object recon8s generates for it (a Secret):
 * garbage collected with it, and deleted before it when the deletion is in the foreground.
 */
export function controllerReference(cr: CustomResource): {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: true;
  blockOwnerDeletion: true;
} {
  return {
    apiVersion: cr.apiVersion,
    kind: cr.kind,
    name: cr.metadata.name,
    uid: cr.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}
