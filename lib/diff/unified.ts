/**
 * Unified diffs in the format of `diff -u` / `git diff`, from jsdiff's hunks (`structuredPatch`):
 * only the headers and the ranges are written here, as GNU diff writes them (`,1` left out; an
 * empty range names the line before it). A last line without a newline is followed by
 * `\ No newline at end of file`.
 */
import { structuredPatch } from 'diff';

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

/**
 * A unified diff of two texts: `--- old`, `+++ new`, then `@@ -l,s +l,s @@` hunks. Returns '' when the
 * texts are equal. The output always ends with a newline.
 */
export function unifiedDiff(input: UnifiedDiffInput): string {
  if (input.oldText === input.newText) return '';
  const context = Math.max(0, input.context ?? 3);
  const { hunks } = structuredPatch(input.oldName, input.newName, input.oldText, input.newText, undefined, undefined, {
    context,
  });
  let out = `--- ${input.oldName}\n+++ ${input.newName}\n`;
  for (const h of hunks) {
    out += `@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@\n`;
    for (const line of h.lines) out += `${line}\n`;
  }
  return out;
}

/** `start,count` as diff -u writes it: `,1` left out; an empty range names the line before it. */
function range(start: number, count: number): string {
  if (count === 0) return `${start - 1},0`;
  return count === 1 ? `${start}` : `${start},${count}`;
}
