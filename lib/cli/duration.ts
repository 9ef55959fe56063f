// The one syntax of every --timeout: a Go-style duration (`20s`, `5m`, `1h30m`, `1.5s`, `500ms`), or
// a bare number of seconds.
import { UsageError } from './usage-error.js';

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The duration in ms; a UsageError (with `usage`) naming the flag and the value otherwise. */
export function parseDuration(text: string, usage?: string, flag = '--timeout'): number {
  const t = text.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(t)) ms = Number(t) * 1000;
  else if (/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(t))
    ms = [...t.matchAll(DURATION_PART)].reduce((sum, m) => sum + Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 1000), 0);
  else throw new UsageError(`${flag} must be a duration like 90s, 5m or 1h30m, got "${text}"`, usage);
  if (!(ms > 0)) throw new UsageError(`${flag} must be more than zero, got "${text}"`, usage);
  return ms;
}

/** As parseDuration reads it back: `90s`, `5m`, `2h`, `1500ms`. */
export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
