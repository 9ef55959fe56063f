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

/** The byte count of a Kubernetes quantity such as "10Gi", "500M" or "1e9" (floored). */
export function quantityBytes(q: string): number {
  const m = /^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/.exec(q);
  if (!m) throw new Error(`not a quantity: ${JSON.stringify(q)}`);
  const n = Number(m[1]);
  const unit = m[2] ?? '';
  const binary: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
  const decimal: Record<string, number> = { k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
  if (unit in binary) return Math.floor(n * 1024 ** (binary[unit] ?? 0));
  if (unit in decimal) return Math.floor(n * 10 ** (decimal[unit] ?? 0));
  if (unit === 'm') return Math.floor(n / 1000);
  if (/^[eE]/.test(unit)) return Math.floor(n * 10 ** Number(unit.slice(1)));
  return Math.floor(n);
}
