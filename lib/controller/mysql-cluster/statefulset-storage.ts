import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import { HttpMethod } from '../../kube/index.js';
import type { KubernetesObject } from '../../../constructs/index.js';
import type { KubeClient } from '../../kube/index.js';
import { apiError, isNotFound } from '../../kube/index.js';
import { containsDesired, quantityValue } from '../../reconcile/compare.js';

interface ClaimTemplate {
  metadata?: { name?: string };
  spec?: { resources?: { requests?: { storage?: string | number } } };
}
interface StatefulSetShape {
  metadata?: { name?: string; namespace?: string; uid?: string };
  spec?: { replicas?: number; volumeClaimTemplates?: ClaimTemplate[] };
}

/**
 * A StatefulSet's volumeClaimTemplates are immutable, yet a MySQLCluster's storage may grow. When
 * only claim sizes grew, this does what a person would: it grows every existing claim of the set
 * (the StorageClass must allow expansion; the API server says so otherwise), then deletes the
 * StatefulSet with orphan propagation — the pods and their data keep running — so that the next
 * apply re-creates it with the new templates and adopts the pods. Returns false when the refusal
 * was about something else (left to the caller to report).
 */
export type GrowthResult =
  | { readonly outcome: 'grown' }
  | { readonly outcome: 'not-growth' }
  /** The API server refused to grow a claim: the StatefulSet is left as it is. */
  | { readonly outcome: 'refused'; readonly message: string };

export async function growClaims(
  client: KubeClient,
  desired: KubernetesObject,
  live: LiveObject | undefined,
): Promise<GrowthResult> {
  const want = desired as unknown as StatefulSetShape;
  const have = live as unknown as StatefulSetShape | undefined;
  const wantTemplates = want.spec?.volumeClaimTemplates ?? [];
  const haveTemplates = have?.spec?.volumeClaimTemplates ?? [];
  if (!have?.metadata?.uid || wantTemplates.length !== haveTemplates.length) return { outcome: 'not-growth' };
  const grown = wantTemplates.filter((t, i) => {
    const before = haveTemplates[i];
    if (before?.metadata?.name !== t.metadata?.name) return false;
    return !containsDesired(t.spec?.resources?.requests?.storage, before.spec?.resources?.requests?.storage);
  });
  if (grown.length === 0) return { outcome: 'not-growth' };
  // Only sizes may differ: anything else in the templates is refused at admission.
  const sizeless = (ts: ClaimTemplate[]): unknown =>
    ts.map((t) => ({ ...t, spec: { ...t.spec, resources: undefined } }));
  if (!containsDesired(sizeless(wantTemplates), sizeless(haveTemplates))) return { outcome: 'not-growth' };

  const namespace = have.metadata.namespace ?? '';
  const name = have.metadata.name ?? '';
  const members = Math.max(want.spec?.replicas ?? 0, have.spec?.replicas ?? 0);
  for (const template of grown) {
    for (let i = 0; i < members; i++) {
      const claim = `${template.metadata?.name ?? ''}-${name}-${i}`;
      const path = `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${claim}`;
      const size = String(template.spec?.resources?.requests?.storage ?? '');
      let current: string | undefined;
      try {
        current = (await client.requestJson<{ spec?: { resources?: { requests?: { storage?: string } } } }>({ path }))
          .spec?.resources?.requests?.storage;
      } catch (e) {
        if (isNotFound(e)) continue;
        throw e;
      }
      // A claim someone already grew further is left alone (claims never shrink).
      if ((quantityValue(current ?? '0') ?? 0) >= (quantityValue(size) ?? 0)) continue;
      try {
        await client.request({
          method: HttpMethod.PATCH,
          path,
          body: JSON.stringify({ spec: { resources: { requests: { storage: size } } } }),
          headers: { 'Content-Type': 'application/merge-patch+json' },
        });
      } catch (e) {
        const info = apiError(e);
        // Unbound, or its StorageClass does not allow expansion: nothing recon8s can change.
        if (info.code !== 422 && info.code !== 403 && info.code !== 400) throw e;
        return {
          outcome: 'refused',
          message: `PersistentVolumeClaim ${claim} cannot grow to ${size}: ${info.message}`,
        };
      }
    }
  }
  await client.request({
    method: HttpMethod.DELETE,
    path: `/apis/apps/v1/namespaces/${namespace}/statefulsets/${name}`,
    body: JSON.stringify({
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Orphan',
      preconditions: { uid: have.metadata.uid },
    }),
    headers: { 'Content-Type': 'application/json' },
  });
  return { outcome: 'grown' };
}

/**
 * The StatefulSet as rendered, but with the live claim templates: every other change (replicas, image,
 * configuration) still reaches it while its volumes cannot grow.
 */
export function withLiveClaimTemplates(desired: KubernetesObject, live: LiveObject): KubernetesObject {
  const templates = (live as unknown as StatefulSetShape).spec?.volumeClaimTemplates;
  return { ...desired, spec: { ...(desired.spec as Record<string, unknown>), volumeClaimTemplates: templates } };
}
