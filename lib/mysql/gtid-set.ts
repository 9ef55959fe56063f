// GTID sets as MySQL prints them (@@gtid_executed, RECEIVED_TRANSACTION_SET): the decisions of the
// cluster manager compare them (is this member's history contained in the primary's? which replica
// received the most?) without a round trip to a server, so that they stay pure and testable.
// Hand-written: no maintained npm package parses MySQL GTID sets, tagged ones (8.3+) included.

/** Closed intervals of transaction numbers, sorted, disjoint and not adjacent. */
type Intervals = readonly (readonly [number, number])[];

/**
 * A set of global transaction identifiers. Keys are `uuid` or `uuid:tag` (lower case); each maps to the
 * transaction numbers it holds. Immutable: every operation returns a new set.
 */
export class GtidSet {
  static readonly EMPTY = new GtidSet(new Map());

  private constructor(private readonly sources: ReadonlyMap<string, Intervals>) {}

  /**
   * Parses the text form: `uuid:1-5:7,uuid2:3` and tagged `uuid:1-5:tag:1-2` (a tag applies to the
   * intervals after it). Blanks and newlines (MySQL wraps long sets) are ignored.
   * @throws Error naming the part that is not a GTID set.
   */
  static parse(text: string): GtidSet {
    const sources = new Map<string, [number, number][]>();
    const compact = text.replace(/\s+/g, '');
    if (compact === '') return GtidSet.EMPTY;
    for (const part of compact.split(',')) {
      const [uuid, ...rest] = part.split(':');
      if (
        !uuid ||
        !/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(uuid) ||
        rest.length === 0
      )
        throw new Error(`not a GTID set: "${part}" (expected uuid:interval[:interval...])`);
      let key = normalizeUuid(uuid);
      for (const token of rest) {
        const interval = /^(\d+)(?:-(\d+))?$/.exec(token);
        if (interval) {
          const start = Number(interval[1]);
          const end = interval[2] === undefined ? start : Number(interval[2]);
          if (start < 1 || end < start || !Number.isSafeInteger(end))
            throw new Error(`not a GTID interval: "${token}" in "${part}"`);
          const list = sources.get(key) ?? [];
          list.push([start, end]);
          sources.set(key, list);
        } else if (/^[a-z_][a-z0-9_]{0,31}$/i.test(token)) {
          key = `${normalizeUuid(uuid)}:${token.toLowerCase()}`;
        } else {
          throw new Error(`not a GTID interval or tag: "${token}" in "${part}"`);
        }
      }
    }
    return new GtidSet(new Map([...sources].map(([k, v]) => [k, normalize(v)])));
  }

  isEmpty(): boolean {
    return this.sources.size === 0;
  }

  /** How many transactions the set holds. */
  count(): number {
    let n = 0;
    for (const intervals of this.sources.values()) for (const [a, b] of intervals) n += b - a + 1;
    return n;
  }

  /** Whether every transaction of this set is in `other` (MySQL's GTID_SUBSET). */
  isSubsetOf(other: GtidSet): boolean {
    return this.subtract(other).isEmpty();
  }

  equals(other: GtidSet): boolean {
    return this.isSubsetOf(other) && other.isSubsetOf(this);
  }

  union(other: GtidSet): GtidSet {
    const out = new Map<string, Intervals>(this.sources);
    for (const [key, intervals] of other.sources) out.set(key, normalize([...(out.get(key) ?? []), ...intervals]));
    return new GtidSet(out);
  }

  /** The transactions of this set that `other` lacks (MySQL's GTID_SUBTRACT). */
  subtract(other: GtidSet): GtidSet {
    const out = new Map<string, Intervals>();
    for (const [key, intervals] of this.sources) {
      const rest = subtractIntervals(intervals, other.sources.get(key) ?? []);
      if (rest.length > 0) out.set(key, rest);
    }
    return new GtidSet(out);
  }

  /** The transactions of this set that `other` holds too. */
  intersect(other: GtidSet): GtidSet {
    return this.subtract(this.subtract(other));
  }

  /** The transactions of this set that the server `uuid` originated (tagged ones included). */
  ofServer(uuid: string): GtidSet {
    const own = normalizeUuid(uuid);
    return new GtidSet(new Map([...this.sources].filter(([key]) => key.split(':')[0] === own)));
  }

  /** The text form MySQL prints: sources sorted, untagged intervals before tagged ones. */
  toString(): string {
    const byUuid = new Map<string, string[]>();
    for (const key of [...this.sources.keys()].sort()) {
      const [uuid = '', tag] = key.split(':');
      const text = (this.sources.get(key) ?? []).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(':');
      const parts = byUuid.get(uuid) ?? [];
      parts.push(tag === undefined ? text : `${tag}:${text}`);
      byUuid.set(uuid, parts);
    }
    return [...byUuid].map(([uuid, parts]) => `${uuid}:${parts.join(':')}`).join(',');
  }
}

function normalizeUuid(uuid: string): string {
  const hex = uuid.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Sorted, merged (overlapping or adjacent intervals become one). */
function normalize(intervals: readonly (readonly [number, number])[]): Intervals {
  const sorted = [...intervals].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

function subtractIntervals(from: Intervals, remove: Intervals): Intervals {
  const out: [number, number][] = [];
  for (const [start, end] of from) {
    let a = start;
    for (const [ra, rb] of remove) {
      if (rb < a || ra > end) continue;
      if (ra > a) out.push([a, ra - 1]);
      a = Math.max(a, rb + 1);
      if (a > end) break;
    }
    if (a <= end) out.push([a, end]);
  }
  return out;
}
