import type { KubernetesObject } from '@kubernetes/client-node';

/** Maps an object to the values it is indexed under (none: not indexed). */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** Name of the built-in index: the uid of an object's controller ownerReference. */
export const OWNER_INDEX = 'owner';

/**
 * The informer's read-only view of the cluster.
 *
 * Objects are deep-frozen when they enter the store (unless the informer was created with
 * `freeze: false`): a handler or reconciler that mutates one throws a TypeError (ESM is strict mode).
 * Copy (`structuredClone`) before changing anything. The same object is handed to every handler and
 * returned by every lookup until a newer version replaces it.
 */
export interface Store<T extends KubernetesObject> {
  /** The object `namespace/name` (cluster-scoped: namespace '' or undefined). */
  get(namespace: string | undefined, name: string): T | undefined;
  /** By key (`namespace/name`, or `name` for cluster-scoped objects). */
  getByKey(key: string): T | undefined;
  /** All objects, or those of one namespace. */
  list(namespace?: string): T[];
  keys(): string[];
  readonly size: number;
  /** True once the first full list is in the store. */
  hasSynced(): boolean;
  /** Objects whose index function returned `value` for index `index`. Throws for an unknown index. */
  byIndex(index: string, value: string): T[];
  /** Objects whose controller ownerReference has this uid (the `owner` index). */
  byOwner(uid: string): T[];
}

/** `namespace/name`, or `name` for a cluster-scoped object (client-go's MetaNamespaceKeyFunc). */
export function objectKey(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The uid of the ownerReference with `controller: true`, if any. */
export function controllerOwnerUid(obj: KubernetesObject): string | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true)?.uid;
}

const ownerIndex: IndexFunc<KubernetesObject> = (obj) => {
  const uid = controllerOwnerUid(obj);
  return uid === undefined ? [] : [uid];
};

/** What `replace` changed, in the order the informer emits it. */
export interface ReplaceDiff<T> {
  readonly added: T[];
  readonly updated: { readonly oldObj: T; readonly newObj: T }[];
  readonly deleted: T[];
}

/** The mutable store behind an informer (only the informer writes to it). */
export class ObjectStore<T extends KubernetesObject> implements Store<T> {
  private readonly items = new Map<string, T>();
  private readonly indexFuncs = new Map<string, IndexFunc<T>>();
  // index name → value → keys
  private readonly indices = new Map<string, Map<string, Set<string>>>();
  // key → index name → the values it was indexed under
  private readonly indexedValues = new Map<string, Map<string, readonly string[]>>();
  private synced = false;

  constructor(
    indexers: Readonly<Record<string, IndexFunc<T>>> = {},
    /** Called when an index function throws; the object is then not indexed under that index. */
    private readonly onIndexError: (index: string, key: string, error: unknown) => void = () => undefined,
  ) {
    this.addIndexer(OWNER_INDEX, ownerIndex);
    for (const [name, fn] of Object.entries(indexers)) this.addIndexer(name, fn);
  }

  /** Adds an index (and indexes what is already stored). */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    this.indexFuncs.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.indices.set(name, index);
    for (const [key, obj] of this.items) this.indexOne(name, fn, index, key, obj);
  }

  get size(): number {
    return this.items.size;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(keyOf(namespace, name));
  }

  getByKey(key: string): T | undefined {
    return this.items.get(key);
  }

  list(namespace?: string): T[] {
    const out: T[] = [];
    for (const obj of this.items.values())
      if (namespace === undefined || (obj.metadata?.namespace ?? '') === namespace) out.push(obj);
    return out;
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  hasSynced(): boolean {
    return this.synced;
  }

  markSynced(): void {
    this.synced = true;
  }

  byIndex(index: string, value: string): T[] {
    const idx = this.indices.get(index);
    if (idx === undefined) throw new Error(`store: no index named ${index}`);
    const keys = idx.get(value);
    if (keys === undefined) return [];
    const out: T[] = [];
    for (const key of keys) {
      const obj = this.items.get(key);
      if (obj !== undefined) out.push(obj);
    }
    return out;
  }

  byOwner(uid: string): T[] {
    return this.byIndex(OWNER_INDEX, uid);
  }

  /** Inserts or replaces; returns the previous object. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old !== undefined) this.unindex(key);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexFuncs)
      this.indexOne(name, fn, this.indices.get(name) as Map<string, Set<string>>, key, obj);
    return old;
  }

  /** Removes by key; returns the removed object. */
  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (old === undefined) return undefined;
    this.unindex(key);
    this.items.delete(key);
    return old;
  }

  /**
   * Makes the store hold exactly `objs` (a full list). An object whose resourceVersion did not change is
   * kept as is and reported as neither added nor updated.
   */
  replace(objs: readonly T[]): ReplaceDiff<T> {
    const added: T[] = [];
    const updated: { oldObj: T; newObj: T }[] = [];
    const deleted: T[] = [];
    const seen = new Set<string>();
    for (const obj of objs) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.items.get(key);
      if (old === undefined) {
        this.upsert(obj);
        added.push(obj);
      } else if (
        old.metadata?.resourceVersion !== obj.metadata?.resourceVersion ||
        old.metadata?.uid !== obj.metadata?.uid
      ) {
        this.upsert(obj);
        updated.push({ oldObj: old, newObj: obj });
      }
    }
    for (const key of [...this.items.keys()]) {
      if (seen.has(key)) continue;
      const old = this.remove(key);
      if (old !== undefined) deleted.push(old);
    }
    return { added, updated, deleted };
  }

  private indexOne(name: string, fn: IndexFunc<T>, index: Map<string, Set<string>>, key: string, obj: T): void {
    let values: readonly string[];
    try {
      values = [...fn(obj)];
    } catch (e) {
      this.onIndexError(name, key, e);
      return;
    }
    // Most objects are in no index but the owner one, and many (what the metadata-only caches hold) not
    // even there: nothing is recorded for them, which keeps a large cache's overhead per object small.
    if (values.length === 0) return;
    let perIndex = this.indexedValues.get(key);
    if (perIndex === undefined) this.indexedValues.set(key, (perIndex = new Map()));
    perIndex.set(name, values);
    for (const v of values) {
      let keys = index.get(v);
      if (keys === undefined) index.set(v, (keys = new Set()));
      keys.add(key);
    }
  }

  // Uses the values recorded at indexing time, so an index function never runs twice for one version.
  private unindex(key: string): void {
    const perIndex = this.indexedValues.get(key);
    if (perIndex === undefined) return;
    this.indexedValues.delete(key);
    for (const [name, values] of perIndex) {
      const index = this.indices.get(name);
      if (index === undefined) continue;
      for (const v of values) {
        const keys = index.get(v);
        if (keys === undefined) continue;
        keys.delete(key);
        if (keys.size === 0) index.delete(v);
      }
    }
  }
}

/** Freezes an object and everything reachable from it. */
export function deepFreeze<T>(obj: T): T {
  if (obj === null || typeof obj !== 'object' || Object.isFrozen(obj)) return obj;
  for (const v of Object.values(obj)) deepFreeze(v);
  return Object.freeze(obj);
}
