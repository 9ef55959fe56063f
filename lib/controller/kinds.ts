// The registry of kinds: each kind's definition (constructs/) says what it renders, and its controller
// module (app/, mysql-cluster/) what it adds to the generic reconcile. Everything else in lib/ derives
// from here: informers, the CLI's watches, the operator's RBAC (through the definitions' childTypes).
import type { KindDefinition, ResourceType } from '../../constructs/index.js';
import { APP_CONTROLLER } from './app/app-controller.js';
import type { KindController } from './kind-controller.js';
import { MYSQL_CLUSTER_CONTROLLER } from './mysql-cluster/mysql-cluster-controller.js';

export type { ResourceType };

/** Every kind the controller reconciles. */
export const KIND_CONTROLLERS: readonly KindController[] = [APP_CONTROLLER, MYSQL_CLUSTER_CONTROLLER];

export const OWNER_KINDS: readonly KindDefinition[] = KIND_CONTROLLERS.map((k) => k.definition);

const BY_KIND: ReadonlyMap<string, KindController> = new Map(KIND_CONTROLLERS.map((k) => [k.definition.kind, k]));

/** The controller module of a kind (undefined for a kind recon8s does not know). */
export function kindController(kind: string): KindController | undefined {
  return BY_KIND.get(kind);
}

/** The kinds render() may produce for each owner kind: what is watched, applied and pruned. */
export const CHILD_TYPES: Readonly<Record<string, readonly ResourceType[]>> = Object.fromEntries(
  OWNER_KINDS.map((k) => [k.kind, k.childTypes]),
);

/** Every child type once (Services and PDBs serve both kinds), of these kinds (default: all). */
export function allChildTypes(kinds: readonly KindDefinition[] = OWNER_KINDS): ResourceType[] {
  const seen = new Map<string, ResourceType>();
  for (const kind of kinds) for (const t of kind.childTypes) seen.set(`${t.apiVersion}/${t.kind}`, t);
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
