import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject as LiveObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { Condition, KubernetesObject } from '../../constructs/index.js';
import type { ConditionInput } from '../reconcile/conditions.js';
import { mergeConditions } from '../reconcile/conditions.js';

/** A custom resource as the controller reads it. */
export interface CustomResource extends LiveObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: V1ObjectMeta & { readonly name: string };
  readonly spec?: Record<string, unknown>;
  readonly status?: { readonly conditions?: readonly Condition[]; readonly [key: string]: unknown };
}

export type LiveLookup = (apiVersion: string, kind: string, name: string) => LiveObject | undefined;

/** The figures a status reports, and the conditions its children imply. */
export interface ObservedState {
  readonly fields: Record<string, unknown>;
  readonly conditions: ConditionInput[];
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
