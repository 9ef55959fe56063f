/**
 * Line diffs in the unified format of `diff -u` / `git diff`: Myers' O(ND) shortest edit script,
 * grouped into hunks with context lines.
 *
 * Lines keep their terminator while they are compared, so "a\n" and "a" (a last line without a
 * newline) differ, and such a line is followed by `\ No newline at end of file`, as GNU diff does.
 */

/** One line of an edit script: kept (` `), removed (`-`) or added (`+`). */
export interface Edit {
  readonly op: ' ' | '-' | '+';
  /** The line, with its `\n` when it had one. */
  readonly line: string;
}

export interface UnifiedDiffInput {
  /** The name after `---` (e.g. `live/apps/v1/Deployment/ns/web`, or `/dev/null` for a created file). */
  readonly oldName: string;
  /** The name after `+++` (`/dev/null` for a deleted file). */
  readonly newName: string;
  /** The old text ('' for a created file). */
  readonly oldText: string;
  /** The new text ('' for a deleted file). */
  readonly newText: string;
  /** Unchanged lines shown around each change. @default 3 */
  readonly context?: number;
}

/** Splits text into lines, each keeping its `\n` (the last one may have none). '' has no lines. */
export function splitLines(text: string): string[] {
  return text === '' ? [] : text.split(/(?<=\n)/);
}

/** The shortest edit script turning `a` into `b` (Myers 1986), deletions before insertions at each change. */
export function diffLines(a: readonly string[], b: readonly string[]): Edit[] {
  // Common prefix and suffix cost nothing to find and shrink the search a lot for small edits.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const middle = myers(a.slice(start, endA), b.slice(start, endB));
  return [
    ...a.slice(0, start).map((line): Edit => ({ op: ' ', line })),
    ...middle,
    ...a.slice(endA).map((line): Edit => ({ op: ' ', line })),
  ];
}

function myers(a: readonly string[], b: readonly string[]): Edit[] {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((line) => ({ op: '+', line }));
  if (m === 0) return a.map((line) => ({ op: '-', line }));
  const max = n + m;
  const off = max + 1;
  // v[k + off]: the furthest x reached on diagonal k; trace[d]: v before step d (for the walk back).
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  search: for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[k - 1 + off] ?? 0) < (v[k + 1 + off] ?? 0));
      let x = down ? (v[k + 1 + off] ?? 0) : (v[k - 1 + off] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[k + off] = x;
      if (x >= n && y >= m) break search;
    }
  }
  const edits: Edit[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const w = trace[d] ?? v;
    const k = x - y;
    const down = k === -d || (k !== d && (w[k - 1 + off] ?? 0) < (w[k + 1 + off] ?? 0));
    const prevK = down ? k + 1 : k - 1;
    const prevX = w[prevK + off] ?? 0;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      edits.push({ op: ' ', line: a[x] ?? '' });
    }
    if (d > 0) {
      if (down) edits.push({ op: '+', line: b[--y] ?? '' });
      else edits.push({ op: '-', line: a[--x] ?? '' });
    }
  }
  return orderChanges(edits.reverse());
}

/** Within each run of changes, removals first, then additions (what diff -u prints). */
function orderChanges(edits: readonly Edit[]): Edit[] {
  const out: Edit[] = [];
  let removed: Edit[] = [];
  let added: Edit[] = [];
  const flush = (): void => {
    out.push(...removed, ...added);
    removed = [];
    added = [];
  };
  for (const e of edits) {
    if (e.op === '-') removed.push(e);
    else if (e.op === '+') added.push(e);
    else { flush(); out.push(e); }
  }
  flush();
  return out;
}

/**
 * A unified diff of two texts: `--- old`, `+++ new`, then `@@ -l,s +l,s @@` hunks. Returns '' when the
 * texts are equal. The output always ends with a newline.
 */
export function unifiedDiff(input: UnifiedDiffInput): string {
  const context = Math.max(0, input.context ?? 3);
  const edits = diffLines(splitLines(input.oldText), splitLines(input.newText));
  const changed = edits.flatMap((e, i) => (e.op === ' ' ? [] : [i]));
  if (changed.length === 0) return '';

  // Group changes whose context would touch or overlap into one hunk.
  const hunks: { from: number; to: number }[] = [];
  for (const i of changed) {
    const last = hunks.at(-1);
    if (last && i - context <= last.to) last.to = Math.min(edits.length, i + context + 1);
    else hunks.push({ from: Math.max(0, i - context), to: Math.min(edits.length, i + context + 1) });
  }

  // Line numbers (0-based) of each edit in the old and the new text.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let o = 0;
  let n = 0;
  for (const e of edits) {
    oldAt.push(o);
    newAt.push(n);
    if (e.op !== '+') o++;
    if (e.op !== '-') n++;
  }

  let out = `--- ${input.oldName}\n+++ ${input.newName}\n`;
  for (const h of hunks) {
    const slice = edits.slice(h.from, h.to);
    const oldCount = slice.filter((e) => e.op !== '+').length;
    const newCount = slice.filter((e) => e.op !== '-').length;
    out += `@@ -${range(oldAt[h.from] ?? 0, oldCount)} +${range(newAt[h.from] ?? 0, newCount)} @@\n`;
    for (const e of slice) {
      out += e.line.endsWith('\n') ? `${e.op}${e.line}` : `${e.op}${e.line}\n\\ No newline at end of file\n`;
    }
  }
  return out;
}

/** `start,count` as diff -u writes it: 1-based; `,1` left out; an empty range names the line before it. */
function range(zeroBasedStart: number, count: number): string {
  if (count === 0) return `${zeroBasedStart},0`;
  return count === 1 ? `${zeroBasedStart + 1}` : `${zeroBasedStart + 1},${count}`;
}
