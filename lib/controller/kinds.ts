import { APP, MYSQL_CLUSTER } from '../../constructs/index.js';
import type { KindDefinition } from '../../constructs/index.js';

/** A resource type the controller reads or writes. */
export interface ResourceType {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
}

/** The kinds render() may produce for each owner kind: what is watched, applied and pruned. */
export const CHILD_TYPES: Readonly<Record<string, readonly ResourceType[]>> = {
  App: [
    { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments' },
    { apiVersion: 'v1', kind: 'Service', plural: 'services' },
    { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers' },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets' },
  ],
  MySQLCluster: [
    { apiVersion: 'apps/v1', kind: 'StatefulSet', plural: 'statefulsets' },
    { apiVersion: 'v1', kind: 'Service', plural: 'services' },
    { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets' },
    { apiVersion: 'batch/v1', kind: 'CronJob', plural: 'cronjobs' },
  ],
};

export const OWNER_KINDS: readonly KindDefinition[] = [APP, MYSQL_CLUSTER];

/** Every child type once (Services and PDBs serve both kinds). */
export function allChildTypes(): ResourceType[] {
  const seen = new Map<string, ResourceType>();
  for (const types of Object.values(CHILD_TYPES)) for (const t of types) seen.set(`${t.apiVersion}/${t.kind}`, t);
  return [...seen.values()];
}

export function ownerType(kind: KindDefinition): ResourceType {
  return { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, plural: kind.plural };
}

/** The REST path of one object of a type. */
export function objectPath(type: ResourceType, namespace: string, name: string): string {
  const group = type.apiVersion.includes('/') ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  return `${group}/namespaces/${namespace}/${type.plural}/${name}`;
}

/** The child type of an owner kind with this apiVersion and kind. */
export function childType(ownerKind: string, apiVersion: string, kind: string): ResourceType | undefined {
  return CHILD_TYPES[ownerKind]?.find((t) => t.apiVersion === apiVersion && t.kind === kind);
}

/** Work-queue key of a custom resource: `Kind/namespace/name`. */
export function queueKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export function parseQueueKey(key: string): { kind: string; namespace: string; name: string } {
  const [kind = '', namespace = '', name = ''] = key.split('/');
  return { kind, namespace, name };
}
