/**
 * The controller's writes under way, by the identity of the object written (`apiVersion/kind/namespace/name`).
 *
 * The watch event of a write can arrive before the write's own response has been read (another stream of
 * the same connection, or another connection): an echo check that only knows the versions already
 * returned would take it for someone else's change. It waits for the writes under way to that object
 * instead, then looks again.
 */
export class WritesInFlight {
  private readonly byKey = new Map<string, Set<Promise<unknown>>>();

  /** Tracks `write` (which must have remembered what it returned when it settles) until it settles. */
  async track<T>(key: string, write: Promise<T>): Promise<T> {
    let writes = this.byKey.get(key);
    if (writes === undefined) this.byKey.set(key, (writes = new Set()));
    writes.add(write);
    try {
      return await write;
    } finally {
      writes.delete(write);
      if (writes.size === 0) this.byKey.delete(key);
    }
  }

  /**
   * `check()` now if it holds or no write to `key` is under way; otherwise once those writes settled.
   */
  whenSettled(key: string, check: () => boolean): boolean | Promise<boolean> {
    if (check()) return true;
    const writes = this.byKey.get(key);
    if (writes === undefined) return false;
    return Promise.allSettled([...writes]).then(check);
  }
}

/** `apiVersion/kind/namespace/name` of an object. */
export function identityKey(o: {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}): string {
  return `${o.apiVersion ?? ''}/${o.kind ?? ''}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}
