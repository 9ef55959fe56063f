import type { KubeClient } from '../lib/kube/index.js';
import { apiError } from '../lib/kube/index.js';
import { runPool } from './pool.js';
import type { BenchResource } from './workload.js';
import { renderResource } from './workload.js';

export interface FloorPass {
  readonly objects: number;
  readonly seconds: number;
  readonly objectsPerSecond: number;
  readonly errors: number;
  readonly firstError?: string;
}

/**
 * The floor: what converging costs with nothing but render() and server-side apply — no informers,
 * no diff, no status, no events, no ownerReferences. `workers` loops each take a resource, render it
 * and apply its objects one after the other (as a controller worker does), through `client` (whose
 * field manager names the floor).
 */
export async function floorPass(
  client: KubeClient,
  resources: readonly BenchResource[],
  namespace: string,
  workers: number,
): Promise<FloorPass> {
  let objects = 0;
  const t0 = performance.now();
  const { errors } = await runPool(resources, workers, async (r) => {
    for (const object of renderResource(r, namespace)) {
      await client.apply(object);
      objects++;
    }
  });
  const seconds = (performance.now() - t0) / 1000;
  const first = errors[0];
  return {
    objects,
    seconds: round3(seconds),
    objectsPerSecond: Math.round(objects / seconds),
    errors: errors.length,
    ...(first !== undefined ? { firstError: apiError(first).message } : {}),
  };
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}
