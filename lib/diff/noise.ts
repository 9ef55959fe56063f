import { stringify } from 'yaml';

/**
 * Metadata the API server maintains by itself: it changes on every write (or differs between a
 * dry-run and the stored object) without saying anything about what a user wants.
 */
const NOISY_METADATA = [
  'managedFields',
  'resourceVersion',
  'generation',
  'uid',
  'creationTimestamp',
  'selfLink',
] as const;

/**
 * Annotations of recon8s's own bookkeeping: the hash of what was last rendered changes whenever
 * anything rendered changes, and that change is already shown field by field.
 */
export const NOISY_ANNOTATIONS: readonly string[] = ['recon8s.dev/desired-hash'];

export interface StripOptions {
  /** Drop the uid of owner references too (the owner does not exist yet, so any uid would be made up). */
  readonly ownerUids?: boolean;
}

/**
 * A copy of an object without what kubectl diff users learn to ignore: server-maintained metadata
 * (managedFields, resourceVersion, generation, uid, creationTimestamp), recon8s's desired-hash
 * annotation, and `status` — which is the workload controllers' to write, not ours, and which no
 * apply changes. Keys are sorted at every level, as `kubectl get -o yaml` prints them.
 */
export function stripNoise(object: unknown, options: StripOptions = {}): Record<string, unknown> {
  const copy = sortKeys(structuredClone(object)) as Record<string, unknown>;
  delete copy.status;
  const meta = copy.metadata;
  if (!isObject(meta)) return copy;
  const metadata = without(meta, NOISY_METADATA);
  if (isObject(metadata.annotations)) {
    const annotations = without(metadata.annotations, NOISY_ANNOTATIONS);
    if (Object.keys(annotations).length === 0) delete metadata.annotations;
    else metadata.annotations = annotations;
  }
  if (options.ownerUids && Array.isArray(metadata.ownerReferences)) {
    metadata.ownerReferences = metadata.ownerReferences.map((ref: unknown) =>
      isObject(ref) ? without(ref, ['uid']) : ref,
    );
  }
  copy.metadata = metadata;
  return copy;
}

/** The YAML document a diff compares ('' for an absent object). */
export function diffableYaml(object: unknown, options: StripOptions = {}): string {
  return object === undefined ? '' : stringify(stripNoise(object, options), { lineWidth: 0 });
}

function without(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys(value[k])]),
    );
  return value;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
