// The StatefulSet as the HA loop lets it be applied: with the members a scale-down has not yet made
// safe to remove (lib/mysql/scale-down.ts judges; report.ts remembers the judgement in memory.ts).
import type { KubernetesObject as LiveObject, V1StatefulSet } from '@kubernetes/client-node';
import type { KubernetesObject } from '../../../../constructs/index.js';
import type { CustomResource } from '../../kind-controller.js';
import type { HaMemory } from './memory.js';
import type { HaStatus } from './pass.js';

/**
 * The rendered StatefulSet `child` with as many replicas as may go now: spec.replicas, or more while
 * the last look kept more (of the spec.replicas it judged, and of no fewer members than `live` has);
 * without a judgement, every member `live` has, unless no primary was ever recorded (no write was ever
 * acknowledged: nothing to keep). Any other child is returned as it is.
 */
export function withKeptMembers(
  cr: CustomResource,
  child: KubernetesObject,
  live: LiveObject | undefined,
  judged: HaMemory['keptMembers'],
): KubernetesObject {
  if (child.kind !== 'StatefulSet') return child;
  const want = (child.spec as { replicas?: number } | undefined)?.replicas ?? 1;
  const withReplicas = (replicas: number): typeof child =>
    replicas === want ? child : { ...child, spec: { ...(child.spec as Record<string, unknown>), replicas } };
  // Re-created around its pods (storage growth deletes it, orphaning them): as many as the last look kept.
  if (!live) return withReplicas(judged?.replicas === want ? Math.max(want, judged.keep) : want);
  const have = (live as V1StatefulSet).spec?.replicas ?? 0;
  if (have <= want) return child;
  // Never a primary recorded: no write was ever acknowledged, nothing to keep.
  const neverServed = (cr.status as HaStatus | undefined)?.currentPrimary === undefined;
  const keep = judged?.replicas === want && have <= judged.of ? judged.keep : neverServed ? want : have;
  return withReplicas(Math.min(have, Math.max(want, keep)));
}
