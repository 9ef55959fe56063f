import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject as LiveObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { Condition, KubernetesObject } from '../../constructs/index.js';
import type { ConditionInput } from '../reconcile/conditions.js';
import { mergeConditions } from '../reconcile/conditions.js';
import { workloadConditions, workloadFigures } from '../reconcile/status.js';

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

const find = (objects: readonly KubernetesObject[], kind: string, name?: string): KubernetesObject | undefined =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

function selectorString(workload: KubernetesObject | undefined): string | undefined {
  const labels = (workload?.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels;
  return labels ? Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(',') : undefined;
}

function serviceEndpoint(service: KubernetesObject | undefined, namespace: string): string | undefined {
  const port = (service?.spec as { ports?: { port: number }[] } | undefined)?.ports?.[0]?.port;
  return service && port !== undefined ? `${service.metadata.name}.${namespace}.svc:${port}` : undefined;
}

/** What an App's Deployment and Service report. */
export function observeApp(cr: CustomResource, rendered: readonly KubernetesObject[], live: LiveLookup): ObservedState {
  const namespace = cr.metadata.namespace ?? '';
  const deployment = find(rendered, 'Deployment');
  const liveDeployment = deployment && live('apps/v1', 'Deployment', deployment.metadata.name);
  // With an autoscaler the Deployment's replicas are the autoscaler's to set.
  const desired = (deployment?.spec as { replicas?: number } | undefined)?.replicas
    ?? (liveDeployment as { spec?: { replicas?: number } } | undefined)?.spec?.replicas
    ?? ((cr.spec?.autoscaling as { minReplicas?: number } | undefined)?.minReplicas ?? 1);
  const figures = workloadFigures(liveDeployment, desired);
  return {
    fields: compact({
      desiredReplicas: desired,
      replicas: figures?.replicas ?? 0,
      readyReplicas: figures?.ready ?? 0,
      selector: selectorString(deployment),
      endpoint: serviceEndpoint(find(rendered, 'Service'), namespace),
    }),
    conditions: workloadConditions('Deployment', figures),
  };
}

/** What a MySQLCluster's StatefulSet and Services report. */
export function observeMySQL(cr: CustomResource, rendered: readonly KubernetesObject[], live: LiveLookup, credentialsSecretName: string): ObservedState {
  const namespace = cr.metadata.namespace ?? '';
  const name = cr.metadata.name;
  const sts = find(rendered, 'StatefulSet');
  const liveSts = sts && live('apps/v1', 'StatefulSet', sts.metadata.name);
  const desired = (sts?.spec as { replicas?: number } | undefined)?.replicas ?? 1;
  const figures = workloadFigures(liveSts, desired);
  return {
    fields: compact({
      replicas: figures?.replicas ?? 0,
      readyReplicas: figures?.ready ?? 0,
      selector: selectorString(sts),
      primaryEndpoint: serviceEndpoint(find(rendered, 'Service', `${name}-primary`), namespace),
      replicasEndpoint: serviceEndpoint(find(rendered, 'Service', `${name}-replicas`), namespace),
      credentialsSecretName,
    }),
    conditions: workloadConditions('StatefulSet', figures),
  };
}

/**
 * The status to write, or undefined when the live status already says exactly this (so a quiet
 * cluster sees no status writes).
 */
export function nextStatus(cr: CustomResource, fields: Record<string, unknown>, conditions: readonly ConditionInput[], now: Date): Record<string, unknown> | undefined {
  const generation = cr.metadata.generation ?? 0;
  const status = { observedGeneration: generation, ...fields, conditions: mergeConditions(cr.status?.conditions, conditions, generation, now) };
  return isDeepStrictEqual(normalize(status), normalize(cr.status ?? {})) ? undefined : status;
}

function normalize(status: Record<string, unknown>): unknown {
  return JSON.parse(JSON.stringify(status, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v)));
}

function compact(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
