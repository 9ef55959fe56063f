import { k8s } from 'cdk8s-plus-28';

interface ResourceListSpec {
  readonly cpu?: string | number;
  readonly memory?: string | number;
}

/** Spec resources as the Kubernetes type; only the amounts given are emitted. */
export function resourceRequirements(r: {
  readonly requests?: ResourceListSpec;
  readonly limits?: ResourceListSpec;
}): k8s.ResourceRequirements {
  const list = (l?: ResourceListSpec): Record<string, k8s.Quantity> | undefined => {
    if (!l) return undefined;
    const out: Record<string, k8s.Quantity> = {};
    if (l.cpu !== undefined) out.cpu = quantity(l.cpu);
    if (l.memory !== undefined) out.memory = quantity(l.memory);
    return Object.keys(out).length ? out : undefined;
  };
  return { requests: list(r.requests), limits: list(r.limits) };
}

export function quantity(q: string | number): k8s.Quantity {
  return typeof q === 'number' ? k8s.Quantity.fromNumber(q) : k8s.Quantity.fromString(q);
}
