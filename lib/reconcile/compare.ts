/**
 * Whether a live object already holds every field of a desired one.
 *
 * Server-side apply makes us the owner of exactly the fields we send; the live object also holds
 * defaults and other managers' fields. So "no change needed" means: every field we send is present
 * live with the same value. Maps may hold more keys. Lists follow the semantics the Kubernetes API
 * declares for them (x-kubernetes-list-type): an associative list ("map", e.g. containers by name) may
 * hold other managers' items beside ours, in any order, and each of ours is found by its keys; an
 * atomic list is owned whole and must match item by item. Quantities the API server rewrote to
 * canonical form ("1024Mi" → "1Gi") compare by value.
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
    if (!Array.isArray(live)) return path || '(root)';
    const keys = listMapKeys(path, desired);
    if (keys) {
      for (let i = 0; i < desired.length; i++) {
        const match = live.find((item) => sameKeys(keys, desired[i], item));
        if (match === undefined) return `${path}[${i}]`;
        const d = firstDifference(desired[i], match, `${path}[${i}]`);
        if (d !== undefined) return d;
      }
      return undefined;
    }
    if (live.length !== desired.length) return path || '(root)';
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
  if (
    typeof desired === 'string' &&
    (typeof live === 'string' || typeof live === 'number') &&
    sameQuantity(desired, String(live))
  )
    return undefined;
  if (typeof desired === 'number' && typeof live === 'string' && sameQuantity(String(desired), live)) return undefined;
  return path || '(root)';
}

/**
 * The associative ("map") lists of the kinds recon8s renders, by field name, with their keys, as the
 * Kubernetes OpenAPI declares them (x-kubernetes-list-map-keys, or the patch merge key where the list
 * predates that). Every other list is atomic. A table rather than the API server's OpenAPI document:
 * the kinds are fixed and few, and the comparison stays a pure function.
 */
const MAP_LISTS: Readonly<Record<string, readonly string[]>> = {
  containers: ['name'],
  initContainers: ['name'],
  ephemeralContainers: ['name'],
  env: ['name'],
  volumes: ['name'],
  volumeMounts: ['mountPath'],
  volumeDevices: ['devicePath'],
  imagePullSecrets: ['name'],
  hostAliases: ['ip'],
  topologySpreadConstraints: ['topologyKey', 'whenUnsatisfiable'],
  ownerReferences: ['uid'],
  resourceClaims: ['name'],
};

/** Defaults of list-map keys the API server fills in when a manifest leaves them out. */
const KEY_DEFAULTS: Readonly<Record<string, unknown>> = { protocol: 'TCP' };

/** The keys of the associative list at this path, or undefined for an atomic list. */
function listMapKeys(path: string, items: readonly unknown[]): readonly string[] | undefined {
  const field = /([A-Za-z]+)$/.exec(path)?.[1] ?? '';
  if (field === 'ports') {
    // Container ports are keyed by containerPort and protocol, Service ports by port and protocol.
    const first = items.find(isObject);
    if (first && 'containerPort' in first) return ['containerPort', 'protocol'];
    if (first && 'port' in first) return ['port', 'protocol'];
    return undefined;
  }
  return MAP_LISTS[field];
}

function sameKeys(keys: readonly string[], desired: unknown, live: unknown): boolean {
  if (!isObject(desired) || !isObject(live)) return false;
  return keys.every((k) => (desired[k] ?? KEY_DEFAULTS[k]) === (live[k] ?? KEY_DEFAULTS[k]));
}

const QUANTITY = /^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$/;
const SUFFIX: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
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
  return (
    v === 0 ||
    v === false ||
    v === '' ||
    (Array.isArray(v) && v.length === 0) ||
    (isObject(v) && Object.keys(v).length === 0)
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
