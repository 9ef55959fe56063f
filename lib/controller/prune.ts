import { HttpMethod } from '../kube/index.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/index.js';
import { isNotFound } from '../kube/index.js';
import { APPLYSET_PART_OF_LABEL } from '../reconcile/applyset.js';
import { childKey } from '../reconcile/desired.js';
import type { ResourceType } from './kinds.js';
import { objectPath } from './kinds.js';

/**
 * Kinds never pruned, whatever labels they carry: PersistentVolumeClaims hold data, Secrets may hold
 * the only copy of a password. Data goes only when the spec's retention policy says so (through the
 * StatefulSet's own PVC retention policy), never because recon8s stopped rendering something.
 */
const NEVER_PRUNED = new Set(['PersistentVolumeClaim', 'Secret']);

/**
 * The live children that belong to this ApplySet but are no longer rendered. Membership is both the
 * ApplySet label and the controller owner reference to this very resource (uid), so an object that
 * only looks like ours is never touched.
 */
export function prunable(
  live: readonly KubernetesObject[],
  desiredKeys: ReadonlySet<string>,
  applySetId: string,
  ownerUid: string,
): KubernetesObject[] {
  return live.filter((o) => {
    const meta = o.metadata ?? {};
    if (NEVER_PRUNED.has(o.kind ?? '') || meta.deletionTimestamp) return false;
    if (meta.labels?.[APPLYSET_PART_OF_LABEL] !== applySetId) return false;
    if (!meta.ownerReferences?.some((r) => r.controller && r.uid === ownerUid)) return false;
    return !desiredKeys.has(
      childKey({
        apiVersion: o.apiVersion ?? '',
        kind: o.kind ?? '',
        metadata: { namespace: meta.namespace, name: meta.name ?? '' },
      }),
    );
  });
}

/** Deletes a child, on the condition that it is still the object we judged (same uid). */
export async function deleteChild(client: KubeClient, type: ResourceType, o: KubernetesObject): Promise<void> {
  const meta = o.metadata ?? {};
  const path = objectPath(type, meta.namespace ?? '', meta.name ?? '');
  try {
    await client.request({
      method: HttpMethod.DELETE,
      path,
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
        preconditions: { uid: meta.uid },
      }),
      headers: { 'Content-Type': 'application/json' },
    });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}
