import { createHash } from 'node:crypto';

// ApplySet (KEP-3659): the custom resource is the parent of the set of its children, so that
// `kubectl apply --prune --applyset` and recon8s agree on which objects belong together.
export const APPLYSET_ID_LABEL = 'applyset.kubernetes.io/id';
export const APPLYSET_PART_OF_LABEL = 'applyset.kubernetes.io/part-of';
export const APPLYSET_TOOLING_ANNOTATION = 'applyset.kubernetes.io/tooling';
export const APPLYSET_GROUP_KINDS_ANNOTATION = 'applyset.kubernetes.io/contains-group-kinds';
export const TOOLING = 'recon8s/v1';

export interface ParentRef {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** The ApplySet id of a parent: `applyset-<base64url(sha256(name.namespace.kind.group))>-v1`, as the KEP defines it. */
export function applySetId(parent: ParentRef): string {
  const digest = createHash('sha256')
    .update(`${parent.name}.${parent.namespace}.${parent.kind}.${parent.group}`)
    .digest('base64url');
  return `applyset-${digest}-v1`;
}

/** `Kind.group` (core kinds without a group), as contains-group-kinds lists them. */
export function groupKind(apiVersion: string, kind: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? kind : `${kind}.${apiVersion.slice(0, slash)}`;
}
