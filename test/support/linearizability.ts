// A linearizability checker for registers, for the tests only (issue 43: "no client reads a write that a
// failover discards", checked the way Jepsen checks databases).
//
// Written here rather than taken: porcupine, the checker Go suites use, is Go, and Knossos is Clojure;
// what this suite needs is small. Each key is an independent register (an integer, or null before any
// write), so each key's history is checked on its own (linearizability is compositional, which
// porcupine calls P-compositionality). A key's history is checked by the Wing–Gong search with Lowe's
// memoisation (WGL, as porcupine does it): operations are linearized one at a time, in an order real
// time allows, and a configuration (the set of operations linearized, the register's value) that was
// tried once is never tried again. The search has a budget of steps; past it the answer is
// "undecided", never a hang.
//
// Outcomes:
// - ok: the client heard the answer (a read's value).
// - fail: the operation is known not to have taken effect (refused before it was sent, or refused by
//   MySQL in a way that proves it was never applied). Failed reads, and failed writes, are dropped.
// - unknown: sent, and then no answer (a timeout, a lost connection): it may have taken effect at any
//   time after its invocation, so its return is +infinity. Unknown reads are dropped; unknown writes
//   stay open forever. Write values are expected to be unique per key (the workloads use a counter),
//   which lets two exact simplifications keep the search small: an unknown write nobody read can be
//   put last in any order (so it is dropped), and one that was read must have taken effect before the
//   first read of its value returned (so that is its return).
//
// When a key's history is not linearizable, the check shrinks it to a small window that still cannot
// be ordered (every read in a window comes with the writes of the value it read, so a smaller window
// proves the whole history wrong) and explains it with times relative to the history's start.

export type Outcome = 'ok' | 'fail' | 'unknown';

/** One client's operation on one register, as the client saw it. */
export interface RegisterOperation {
  readonly client: number;
  readonly key: number;
  readonly kind: 'read' | 'write';
  /** A write's value; an ok read's value (null: the register was never written); otherwise null. */
  readonly value: number | null;
  /** Monotonic milliseconds (performance.now()) when the client sent it. */
  readonly invokeMs: number;
  /** When the client heard back or gave up; an unknown operation's is only printed (the check takes +infinity). */
  readonly returnMs: number;
  readonly outcome: Outcome;
  /** Why it failed or is unknown, for the explanation. */
  readonly error?: string;
}

export type Verdict = 'linearizable' | 'not linearizable' | 'undecided';

export interface KeyCheck {
  readonly key: number;
  readonly verdict: Verdict;
  /** The operations the search ordered (after dropping failed and unknown reads, failed writes and unread unknown writes). */
  readonly checked: number;
  /** Search steps taken, the minimisation's included. */
  readonly steps: number;
  /** Not linearizable: the smallest window of this key's operations found that cannot be ordered. */
  readonly window?: readonly RegisterOperation[];
  /** Not linearizable or undecided: what a person reads. */
  readonly explanation?: string;
}

export interface RegisterCheck {
  /** Not linearizable when any key is not; else undecided when any key is; else linearizable. */
  readonly verdict: Verdict;
  readonly keys: readonly KeyCheck[];
  /** One line: the verdict and what was checked. */
  readonly summary: string;
  /** The summary, then every key that is not linearizable (or undecided) explained. */
  readonly explanation: string;
}

export interface CheckOptions {
  /** Search steps per key (and again for shrinking its window) before "undecided"; default 2,000,000. */
  readonly budget?: number;
  /** What relative times count from; default the history's first invocation. */
  readonly startMs?: number;
}

const DEFAULT_BUDGET = 2_000_000;
/** Windows up to this many operations are shrunk one operation at a time. */
const SHRINK_ONE_BY_ONE = 300;

/** An operation as the search sees it: `ret` is Infinity for an unknown write that stays open. */
interface Op {
  readonly write: boolean;
  readonly value: number | null;
  readonly invoke: number;
  readonly ret: number;
  readonly source: RegisterOperation;
}

type SearchResult =
  | { readonly verdict: 'linearizable'; readonly steps: number }
  | { readonly verdict: 'undecided'; readonly steps: number }
  /** `stuck`: the operation whose return the deepest attempt could not get past. */
  | { readonly verdict: 'not linearizable'; readonly steps: number; readonly stuck: number };

interface Entry {
  readonly op: number;
  readonly call: boolean;
  readonly time: number;
  match: Entry | null;
  prev: Entry | null;
  next: Entry | null;
}

/** The register's value after `op`, or undefined when `op` cannot come next. */
function step(state: number | null, op: Op): number | null | undefined {
  if (op.write) return op.value;
  return op.value === state ? state : undefined;
}

/**
 * WGL over one key's operations (with porcupine's list of call and return entries): linearize the first
 * call that may come next, backtrack at a return whose operation is not linearized yet. Operations with
 * an infinite return have no return entry: once only their calls remain, the rest goes last.
 */
function search(ops: readonly Op[], budget: number): SearchResult {
  const entries: Entry[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as Op;
    const call: Entry = { op: i, call: true, time: op.invoke, match: null, prev: null, next: null };
    entries.push(call);
    if (Number.isFinite(op.ret)) {
      const ret: Entry = { op: i, call: false, time: op.ret, match: null, prev: null, next: null };
      call.match = ret;
      entries.push(ret);
    }
  }
  // Calls before returns at the same time: two such operations count as concurrent (the lenient reading).
  entries.sort((a, b) => a.time - b.time || Number(a.call ? 0 : 1) - Number(b.call ? 0 : 1) || a.op - b.op);
  const head: Entry = { op: -1, call: true, time: -Infinity, match: null, prev: null, next: null };
  let last = head;
  for (const e of entries) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  const lift = (call: Entry): void => {
    for (const e of call.match ? [call, call.match] : [call]) {
      (e.prev as Entry).next = e.next;
      if (e.next) e.next.prev = e.prev;
    }
  };
  const unlift = (call: Entry): void => {
    for (const e of call.match ? [call.match, call] : [call]) {
      (e.prev as Entry).next = e;
      if (e.next) e.next.prev = e;
    }
  };

  const bits = new Uint32Array(Math.ceil(ops.length / 32));
  const flip = (i: number): void => {
    bits[i >>> 5] = ((bits[i >>> 5] as number) ^ (1 << (i & 31))) >>> 0;
  };
  // A configuration's key: the bitset without its leading full words and trailing empty ones (all
  // operations before the first one not linearized are), and the value.
  const full = 0xffffffff;
  const configuration = (state: number | null): string => {
    let lo = 0;
    while (lo < bits.length && bits[lo] === full) lo++;
    let hi = bits.length;
    while (hi > lo && bits[hi - 1] === 0) hi--;
    return `${lo}:${bits.subarray(lo, hi).join(',')}:${state}`;
  };
  const seen = new Set<string>();
  const stack: { entry: Entry; state: number | null }[] = [];
  let state: number | null = null;
  let entry = head.next;
  let steps = 0;
  let deepest = -1;
  let stuck = -1;
  for (;;) {
    if (entry === null) return { verdict: 'linearizable', steps };
    if (++steps > budget) return { verdict: 'undecided', steps };
    if (entry.call) {
      const next = step(state, ops[entry.op] as Op);
      if (next !== undefined) {
        flip(entry.op);
        const key = configuration(next);
        if (!seen.has(key)) {
          seen.add(key);
          stack.push({ entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        flip(entry.op);
      }
      entry = entry.next;
    } else {
      if (stack.length > deepest) {
        deepest = stack.length;
        stuck = entry.op;
      }
      const top = stack.pop();
      if (top === undefined) return { verdict: 'not linearizable', steps, stuck };
      flip(top.entry.op);
      state = top.state;
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
}

/** The operations of one key the search orders (see the top of this file for what is dropped and why). */
function searchable(history: readonly RegisterOperation[]): Op[] {
  const reads = history.filter((o) => o.kind === 'read' && o.outcome === 'ok');
  const writes = history.filter((o) => o.kind === 'write' && o.outcome !== 'fail');
  const writers = new Map<number | null, number>();
  for (const w of writes) writers.set(w.value, (writers.get(w.value) ?? 0) + 1);
  const firstReadReturn = new Map<number | null, number>();
  for (const r of reads) firstReadReturn.set(r.value, Math.min(r.returnMs, firstReadReturn.get(r.value) ?? Infinity));
  const ops: Op[] = [];
  for (const w of writes) {
    let ret = w.returnMs;
    if (w.outcome === 'unknown') {
      if (writers.get(w.value) !== 1) ret = Infinity;
      else {
        const read = firstReadReturn.get(w.value);
        if (read === undefined) continue;
        ret = Math.max(read, w.invokeMs);
      }
    }
    ops.push({ write: true, value: w.value, invoke: w.invokeMs, ret, source: w });
  }
  for (const r of reads) ops.push({ write: false, value: r.value, invoke: r.invokeMs, ret: r.returnMs, source: r });
  return ops.sort((a, b) => a.invoke - b.invoke || a.ret - b.ret);
}

/** `subset` of `all` with the writes of every value a read in it returned (the window must explain its reads). */
function closed(all: readonly RegisterOperation[], subset: Iterable<RegisterOperation>): RegisterOperation[] {
  const kept = new Set(subset);
  const read = new Set<number | null>();
  for (const o of kept) if (o.kind === 'read' && o.value !== null) read.add(o.value);
  for (const o of all) if (o.kind === 'write' && read.has(o.value)) kept.add(o);
  return all.filter((o) => kept.has(o));
}

/**
 * A small window of a key's history (`ops`, not linearizable, `stuck` the operation whose return the
 * search could not get past) that is itself not linearizable: the operations invoked up to `stuck`'s
 * return, then the latest start that still fails, then one operation at a time (a write with the reads
 * of its value). Each candidate is made searchable again, so an unknown write's return follows the
 * reads of its value that the candidate keeps.
 */
function shrink(ops: readonly Op[], stuck: number, budget: number): { window: Op[]; steps: number } {
  let steps = 0;
  let left = budget;
  const fails = (subset: readonly RegisterOperation[]): boolean => {
    if (left <= 0) return false;
    const r = search(searchable(subset), left);
    steps += r.steps;
    left -= r.steps;
    return r.verdict === 'not linearizable';
  };
  const all = ops.map((o) => o.source);
  const end = (ops[stuck] as Op).ret;
  let window = all;
  const upToStuck = closed(
    all,
    all.filter((o) => o.invokeMs <= end),
  );
  if (upToStuck.length < window.length && fails(upToStuck)) window = upToStuck;
  // The latest start (an operation's return) from which the window still fails.
  const ret = (o: RegisterOperation) => (o.outcome === 'unknown' ? Infinity : o.returnMs);
  const starts = [...new Set(window.map(ret).filter(Number.isFinite))].sort((a, b) => a - b);
  const from = (s: number): RegisterOperation[] =>
    closed(
      window,
      window.filter((o) => ret(o) >= s),
    );
  let lo = -1;
  let hi = starts.length;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fails(from(starts[mid] as number))) lo = mid;
    else hi = mid;
  }
  if (lo >= 0) window = from(starts[lo] as number);
  if (window.length <= SHRINK_ONE_BY_ONE) {
    for (let changed = true; changed;) {
      changed = false;
      for (const o of [...window].reverse()) {
        if (!window.includes(o)) continue;
        // A write goes with the reads of its value, unless another write in the window wrote it too.
        const withReads =
          o.kind === 'write' && !window.some((w) => w !== o && w.kind === 'write' && w.value === o.value);
        const without = window.filter((x) => x !== o && !(withReads && x.kind === 'read' && x.value === o.value));
        if (fails(without)) {
          window = without;
          changed = true;
        }
      }
    }
  }
  return { window: searchable(window), steps };
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(3)} s`;

/** What a person reads about a window: one sentence on its last read, then every operation. */
function explain(
  key: number,
  window: readonly RegisterOperation[],
  history: readonly RegisterOperation[],
  start: number,
): string {
  const at = (ms: number) => seconds(ms - start);
  const span = (o: RegisterOperation) =>
    o.outcome === 'unknown' ? `[${at(o.invokeMs)}, +∞)` : `[${at(o.invokeMs)}, ${at(o.returnMs)}]`;
  const reads = window.filter((o) => o.kind === 'read');
  const culprit = reads.reduce<RegisterOperation | undefined>(
    (a, o) => (a === undefined || o.invokeMs > a.invokeMs ? o : a),
    undefined,
  );
  const clauses: string[] = [];
  if (culprit) {
    const relation = (o: RegisterOperation): string =>
      o.returnMs < culprit.invokeMs
        ? o.kind === 'write'
          ? 'completed before it'
          : 'before it'
        : o.invokeMs > culprit.returnMs
          ? 'after it'
          : 'overlapping it';
    if (culprit.value !== null && !window.some((o) => o.kind === 'write' && o.value === culprit.value)) {
      const failed = history.filter((o) => o.kind === 'write' && o.value === culprit.value);
      clauses.push(
        failed.length === 0
          ? `no write of ${culprit.value} was ever sent`
          : failed
              .map(
                (w) =>
                  `write ${culprit.value} by client ${w.client} at ${span(w)} failed (${w.error ?? 'refused'}): it never took effect`,
              )
              .join('; '),
      );
    }
    for (const o of window) {
      if (o === culprit) continue;
      if (o.kind === 'write' && o.outcome === 'unknown')
        clauses.push(
          `write ${o.value} by client ${o.client} was never acknowledged (sent at ${at(o.invokeMs)}, given up at ${at(o.returnMs)})`,
        );
      else if (o.kind === 'write') clauses.push(`write ${o.value} by client ${o.client} at ${span(o)}, ${relation(o)}`);
      else clauses.push(`read by client ${o.client} returned ${o.value} at ${span(o)}, ${relation(o)}`);
    }
  }
  const sentence = culprit
    ? `read of key ${key} by client ${culprit.client} returned ${culprit.value} at ${span(culprit)}, but ${clauses.join('; ')}`
    : `writes of key ${key} that cannot be ordered`;
  const width = window.reduce((m, o) => Math.max(m, String(o.value).length), 0);
  const rows = window.map(
    (o) =>
      `  client ${String(o.client).padEnd(3)} ${o.kind.padEnd(5)} ${String(o.value).padStart(width)}  ${o.outcome.padEnd(7)}  ${span(o)}` +
      (o.outcome === 'unknown' ? ` (given up at ${at(o.returnMs)}${o.error ? `: ${o.error}` : ''})` : ''),
  );
  return `${sentence}.\nThe smallest window found that cannot be ordered (${window.length} operation${window.length === 1 ? '' : 's'} of key ${key}, times from the history's start):\n${rows.join('\n')}`;
}

/** Checks one key's history. */
function checkKey(key: number, history: readonly RegisterOperation[], start: number, budget: number): KeyCheck {
  const ops = searchable(history);
  const result = search(ops, budget);
  if (result.verdict === 'linearizable')
    return { key, verdict: 'linearizable', checked: ops.length, steps: result.steps };
  if (result.verdict === 'undecided')
    return {
      key,
      verdict: 'undecided',
      checked: ops.length,
      steps: result.steps,
      explanation: `key ${key}: undecided after ${result.steps} search steps over ${ops.length} operations (the budget); neither proven linearizable nor not`,
    };
  const { window, steps } = shrink(ops, result.stuck, budget);
  const sources = window.map((o) => o.source).sort((a, b) => a.invokeMs - b.invokeMs || a.returnMs - b.returnMs);
  return {
    key,
    verdict: 'not linearizable',
    checked: ops.length,
    steps: result.steps + steps,
    window: sources,
    explanation: explain(key, sources, history, start),
  };
}

/** Checks a history of registers (each key its own) for linearizability. */
export function checkRegisters(history: readonly RegisterOperation[], options: CheckOptions = {}): RegisterCheck {
  for (const o of history)
    if (!(o.returnMs >= o.invokeMs))
      throw new Error(`an operation returned before it was invoked: ${JSON.stringify(o)}`);
  const start = options.startMs ?? history.reduce((m, o) => Math.min(m, o.invokeMs), Infinity);
  const byKey = new Map<number, RegisterOperation[]>();
  for (const o of history) {
    const ops = byKey.get(o.key) ?? [];
    ops.push(o);
    byKey.set(o.key, ops);
  }
  const keys = [...byKey.entries()]
    .sort(([a], [b]) => a - b)
    .map(([key, ops]) => checkKey(key, ops, start, options.budget ?? DEFAULT_BUDGET));
  const verdict: Verdict = keys.some((k) => k.verdict === 'not linearizable')
    ? 'not linearizable'
    : keys.some((k) => k.verdict === 'undecided')
      ? 'undecided'
      : 'linearizable';
  const count = (what: string, f: (o: RegisterOperation) => boolean): string => {
    const n = history.filter(f).length;
    return `${n} ${what}${n === 1 ? '' : 's'}`;
  };
  const summary =
    `${verdict}: ${count('operation', () => true)} on ${keys.length} key${keys.length === 1 ? '' : 's'} by ${new Set(history.map((o) => o.client)).size} clients (` +
    [
      count('read', (o) => o.kind === 'read' && o.outcome === 'ok'),
      count('write', (o) => o.kind === 'write' && o.outcome === 'ok'),
    ].join(' and ') +
    ` acknowledged, ${count('write', (o) => o.kind === 'write' && o.outcome === 'unknown')} unknown, ` +
    `${count('operation', (o) => o.outcome === 'fail')} failed, ${count('read', (o) => o.kind === 'read' && o.outcome === 'unknown')} unknown; ` +
    `${keys.reduce((n, k) => n + k.checked, 0)} ordered)`;
  const problems = keys.filter((k) => k.explanation !== undefined).map((k) => k.explanation);
  return { verdict, keys, summary, explanation: [summary, ...problems].join('\n\n') };
}
