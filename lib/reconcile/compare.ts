/**
 * Whether a live object already holds every field of a desired one.
 *
 * Server-side apply makes us the owner of exactly the fields we send; the live object also holds
 * defaults and other managers' fields. So "no change needed" means: every field we send is present
 * live with the same value (maps may hold more keys; lists must match item by item). Quantities the
 * API server rewrote to canonical form ("1024Mi" → "1Gi") compare by value.
 */
export function containsDesired(desired: unknown, live: unknown): boolean {
  return firstDifference(desired, live, '') === undefined;
}

/** The path of the first desired field the live object does not hold, for logs. */
export function firstDifference(desired: unknown, live: unknown, path: string): string | undefined {
  if (desired === live) return undefined;
  // Go's omitempty drops zero values (0, false, "", empty lists and maps): absent live means the same.
  if (live === undefined && isZero(desired)) return undefined;
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length !== desired.length) return path || '(root)';
    for (let i = 0; i < desired.length; i++) {
      const d = firstDifference(desired[i], live[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (isObject(desired)) {
    if (!isObject(live)) return path || '(root)';
    for (const [k, v] of Object.entries(desired)) {
      if (v === undefined || v === null) continue;
      const d = firstDifference(v, live[k], path ? `${path}.${k}` : k);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (typeof desired === 'string' && (typeof live === 'string' || typeof live === 'number') && sameQuantity(desired, String(live))) return undefined;
  if (typeof desired === 'number' && typeof live === 'string' && sameQuantity(String(desired), live)) return undefined;
  return path || '(root)';
}

const QUANTITY = /^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$/;
const SUFFIX: Record<string, number> = {
  '': 1, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** The value of a Kubernetes quantity string ("1Gi", "500m"), or undefined when it is none. */
export function quantityValue(s: string): number | undefined {
  const m = QUANTITY.exec(s);
  if (!m?.[1]) return undefined;
  const n = Number(m[1]);
  if (!Number.isFinite(n)) return undefined;
  const suffix = m[2] ?? '';
  if (/^[eE]/.test(suffix)) return n * 10 ** Number(suffix.slice(1));
  const mult = SUFFIX[suffix];
  return mult === undefined ? undefined : n * mult;
}

function sameQuantity(a: string, b: string): boolean {
  const x = quantityValue(a);
  const y = quantityValue(b);
  return x !== undefined && y !== undefined && Math.abs(x - y) <= Math.abs(x) * 1e-12;
}

function isZero(v: unknown): boolean {
  return v === 0 || v === false || v === '' || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
