import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import { HttpMethod } from '../../kube/index.js';
import type { KubernetesObject } from '../../../constructs/index.js';
import type { KubeClient } from '../../kube/index.js';
import { apiError, isNotFound } from '../../kube/index.js';
import { containsDesired, quantityValue } from '../../reconcile/compare.js';

/*
 * A StatefulSet's spec is immutable but for replicas, template, updateStrategy, ordinals,
 * minReadySeconds, revisionHistoryLimit and persistentVolumeClaimRetentionPolicy: the API server
 * refuses (422) an apply that changes anything else. Two such fields of a MySQLCluster's StatefulSet
 * may still change, and for both the controller does what a person would: it re-creates the
 * StatefulSet around its running pods. It deletes it with orphan propagation (the pods, their claims
 * and their data keep running; a uid precondition makes sure the StatefulSet deleted is the one that
 * was judged), and the next apply creates it anew; the StatefulSet controller adopts the pods, which
 * its selector still matches, and re-creates none (the template is the same). The two fields:
 *
 * - volumeClaimTemplates, when only claim sizes grew (`storage.size`): every existing claim is grown
 *   first, since a StatefulSet never resizes the claims it made (the StorageClass must allow
 *   expansion; the API server says so otherwise). Any other change of a template is refused at
 *   admission (the spec's CEL rules).
 * - podManagementPolicy, which a newer recon8s renders differently (OrderedReady before issue 43,
 *   Parallel since, so that a restart of every member brings every member back).
 *
 * Anything else that differs (the selector, the serviceName) is never re-created for: the pods would
 * not be adopted, and recon8s renders those from the resource's name alone.
 */

interface ClaimTemplate {
  metadata?: { name?: string };
  spec?: { resources?: { requests?: { storage?: string | number } } };
}
interface StatefulSetShape {
  metadata?: { name?: string; namespace?: string; uid?: string };
  spec?: { replicas?: number; podManagementPolicy?: string; volumeClaimTemplates?: ClaimTemplate[] };
}

/** An immutable field of the StatefulSet whose rendered value the live one does not hold. */
export type ImmutableChange =
  /** Claim templates whose sizes grew (and nothing else of them changed). */
  | { readonly field: 'volumeClaimTemplates'; readonly grown: readonly ClaimTemplate[] }
  | { readonly field: 'podManagementPolicy'; readonly from: string; readonly to: string };

/** The API server's default, which a StatefulSet applied without the field holds. */
const DEFAULT_POD_MANAGEMENT_POLICY = 'OrderedReady';

/**
 * The immutable fields of the live StatefulSet that differ from the rendered one, and how; empty when
 * none does that recon8s re-creates the StatefulSet for (the refusal was about something else).
 */
export function immutableChanges(desired: KubernetesObject, live: LiveObject): ImmutableChange[] {
  const want = desired as unknown as StatefulSetShape;
  const have = live as unknown as StatefulSetShape;
  const changes: ImmutableChange[] = [];
  const grown = grownClaimTemplates(want.spec?.volumeClaimTemplates ?? [], have.spec?.volumeClaimTemplates ?? []);
  if (grown.length > 0) changes.push({ field: 'volumeClaimTemplates', grown });
  const to = want.spec?.podManagementPolicy;
  const from = have.spec?.podManagementPolicy ?? DEFAULT_POD_MANAGEMENT_POLICY;
  if (to !== undefined && to !== from) changes.push({ field: 'podManagementPolicy', from, to });
  return changes;
}

/** The templates whose storage request grew, when only sizes differ; otherwise none. */
function grownClaimTemplates(want: readonly ClaimTemplate[], have: readonly ClaimTemplate[]): ClaimTemplate[] {
  if (want.length !== have.length) return [];
  const grown = want.filter((t, i) => {
    const before = have[i];
    if (before?.metadata?.name !== t.metadata?.name) return false;
    const size = (c: ClaimTemplate): number => quantityValue(String(c.spec?.resources?.requests?.storage ?? 0)) ?? 0;
    // Larger only: claims never shrink (a smaller size is refused at admission).
    return size(t) > size(before);
  });
  if (grown.length === 0) return [];
  // Only sizes may differ: anything else in the templates is refused at admission.
  const sizeless = (ts: readonly ClaimTemplate[]): unknown =>
    ts.map((t) => ({ ...t, spec: { ...t.spec, resources: undefined } }));
  return containsDesired(sizeless(want), sizeless(have)) ? grown : [];
}

/** What a change is, for an Event and the logs. */
export function describeChange(change: ImmutableChange): string {
  if (change.field === 'podManagementPolicy') return `podManagementPolicy ${change.from} → ${change.to}`;
  const sizes = change.grown.map(
    (t) => `${t.metadata?.name ?? ''} ${String(t.spec?.resources?.requests?.storage ?? '')}`,
  );
  return `data volumes grown (${sizes.join(', ')})`;
}

export type ReplacementResult =
  /** Nothing recon8s re-creates the StatefulSet for differs. */
  | { readonly outcome: 'none' }
  /** Deleted with its pods orphaned; the next apply re-creates it. */
  | { readonly outcome: 'replaced'; readonly changes: readonly ImmutableChange[] }
  /**
   * The API server refused to grow a claim: the StatefulSet is left as it is, and so is every other
   * immutable change (re-created now, it would take the grown templates while the claims did not grow).
   */
  | { readonly outcome: 'refused'; readonly message: string; readonly changes: readonly ImmutableChange[] };

/**
 * Re-creates the StatefulSet when immutable fields differ (see above): grows the claims first when
 * their sizes grew, then deletes the live StatefulSet with its pods orphaned.
 */
export async function replaceStatefulSet(
  client: KubeClient,
  desired: KubernetesObject,
  live: LiveObject | undefined,
): Promise<ReplacementResult> {
  const have = live as unknown as StatefulSetShape | undefined;
  if (!live || !have?.metadata?.uid) return { outcome: 'none' };
  const changes = immutableChanges(desired, live);
  if (changes.length === 0) return { outcome: 'none' };
  const namespace = have.metadata.namespace ?? '';
  const name = have.metadata.name ?? '';
  const members = Math.max((desired as unknown as StatefulSetShape).spec?.replicas ?? 0, have.spec?.replicas ?? 0);
  for (const change of changes) {
    if (change.field !== 'volumeClaimTemplates') continue;
    const refusal = await growClaims(client, namespace, name, members, change.grown);
    if (refusal !== undefined) return { outcome: 'refused', message: refusal, changes };
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
  return { outcome: 'replaced', changes };
}

/** Grows every existing claim of the grown templates; the API server's refusal, if any. */
async function growClaims(
  client: KubeClient,
  namespace: string,
  statefulSet: string,
  members: number,
  grown: readonly ClaimTemplate[],
): Promise<string | undefined> {
  for (const template of grown) {
    for (let i = 0; i < members; i++) {
      const claim = `${template.metadata?.name ?? ''}-${statefulSet}-${i}`;
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
        return `PersistentVolumeClaim ${claim} cannot grow to ${size}: ${info.message}`;
      }
    }
  }
  return undefined;
}

/**
 * The StatefulSet as rendered, but with the live values of its immutable fields: every other change
 * (replicas, image, configuration) still reaches it while it cannot be re-created.
 */
export function withLiveImmutableFields(desired: KubernetesObject, live: LiveObject): KubernetesObject {
  const spec = (live as unknown as StatefulSetShape).spec;
  return {
    ...desired,
    spec: {
      ...(desired.spec as Record<string, unknown>),
      volumeClaimTemplates: spec?.volumeClaimTemplates,
      podManagementPolicy: spec?.podManagementPolicy ?? DEFAULT_POD_MANAGEMENT_POLICY,
    },
  };
}
