// What the constructs that render a custom resource share with render(): the plain-JSON object type,
// and synthesis of a construct alone, in a chart of its own, as the controller renders it.
import * as cdk8s from 'cdk8s';
import type { Construct } from 'constructs';
import { isPlainObject } from '../schema/validate.js';

/** A rendered Kubernetes object: plain JSON, ready for server-side apply. */
export interface KubernetesObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly [key: string]: unknown;
  };
  readonly [key: string]: unknown;
}

/**
 * The objects `build` adds to an empty chart of `namespace`, with keys in a fixed order at every
 * level, so that the output never depends on construction order or environment.
 */
export function synthesizeAlone(namespace: string | undefined, build: (chart: Construct) => void): KubernetesObject[] {
  const app = new cdk8s.App();
  const chart = new cdk8s.Chart(app, 'render', { namespace, disableResourceNameHashes: true });
  build(chart);
  return chart.toJson().map((o) => canonical(o) as KubernetesObject);
}

/**
 * Props as the spec of a resource: plain JSON (what `kubectl apply` sends), so that an `undefined`
 * left in the props never reaches the manifest, and a later change to the caller's object never
 * changes the resource.
 */
export function customResourceSpec<T>(props: T): T {
  return JSON.parse(JSON.stringify(props ?? {})) as T;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical(value[k])]),
    );
  }
  return value;
}
