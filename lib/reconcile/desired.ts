import { createHash } from 'node:crypto';
import type { KubernetesObject } from '../../constructs/index.js';
import type { ParentRef } from './applyset.js';
import { APPLYSET_PART_OF_LABEL, applySetId } from './applyset.js';

/** The hash of what we last rendered for a child: a changed spec shows as a changed hash. */
export const DESIRED_HASH_ANNOTATION = 'recon8s.dev/desired-hash';

/** The custom resource that owns the children (what render() was given, as read from the API). */
export interface OwnerResource extends ParentRef {
  readonly apiVersion: string;
  readonly uid: string;
}

/** A child as we will apply it, with the hash of its rendered form. */
export interface DesiredChild {
  readonly object: KubernetesObject;
  readonly hash: string;
}

/**
 * Stamps rendered children for applying: the owner reference that makes the custom resource their
 * controller (garbage collection deletes them with it; `blockOwnerDeletion` holds foreground
 * deletion until they are gone), ApplySet membership, and the hash of the rendered object.
 */
export function stampChildren(rendered: readonly KubernetesObject[], owner: OwnerResource): DesiredChild[] {
  const partOf = applySetId(owner);
  return rendered.map((object) => {
    const hash = hashOf(object);
    const metadata = object.metadata;
    const stamped: KubernetesObject = {
      ...object,
      metadata: {
        ...metadata,
        namespace: owner.namespace,
        labels: { ...(metadata.labels ?? {}), [APPLYSET_PART_OF_LABEL]: partOf },
        annotations: { ...(metadata.annotations ?? {}), [DESIRED_HASH_ANNOTATION]: hash },
        ownerReferences: [
          {
            apiVersion: owner.apiVersion,
            kind: owner.kind,
            name: owner.name,
            uid: owner.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
    };
    return { object: stamped, hash };
  });
}

export function hashOf(object: unknown): string {
  return createHash('sha256').update(JSON.stringify(object)).digest('hex').slice(0, 32);
}

/** `apiVersion/kind/namespace/name`: one child's identity. */
export function childKey(o: {
  apiVersion: string;
  kind: string;
  metadata: { namespace?: string; name: string };
}): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}
