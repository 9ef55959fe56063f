import type { Clock } from '../clock/index.js';

/**
 * The one exponential-delay formula: `baseMs · factor^failures`, capped at `maxMs` (2^n reaches
 * Infinity rather than overflowing, so the cap alone bounds it). Used by Backoff (watch restarts,
 * with jitter and a reset after a healthy period, like client-go's reflector) and by the work queue's
 * per-key rate limiter (like client-go's ItemExponentialFailureRateLimiter).
 */
export function exponentialDelayMs(baseMs: number, failures: number, maxMs: number, factor = 2): number {
  return Math.min(baseMs * factor ** failures, maxMs);
}

export interface BackoffOptions {
  /** First delay; default 800 ms (client-go's reflector). */
  readonly initialMs?: number;
  /** Upper bound of any delay; default 30 s. */
  readonly maxMs?: number;
  /** Growth per consecutive failure; default 2. */
  readonly factor?: number;
  /** Fraction of the delay randomly taken off it (0..1), so clients retrying together spread out; default 0.2. */
  readonly jitter?: number;
  /** After this long without a failure the next delay starts again at `initialMs`; default 2 min (client-go). */
  readonly resetAfterMs?: number;
}

/**
 * Exponential backoff with jitter that forgets after a healthy period, like client-go's
 * exponentialBackoffManager: delays grow `initialMs · factor^n`, capped at `maxMs`, minus up to
 * `jitter` of themselves; a failure more than `resetAfterMs` after the previous one starts over.
 * A delay never exceeds `maxMs`.
 */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly resetAfterMs: number;
  /** Consecutive failures since the last reset. */
  private failures = 0;
  private lastFailureAt: number | undefined;

  constructor(
    opts: BackoffOptions,
    private readonly clock: Clock,
    private readonly random: () => number = Math.random,
  ) {
    this.initialMs = opts.initialMs ?? 800;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = Math.min(1, Math.max(0, opts.jitter ?? 0.2));
    this.resetAfterMs = opts.resetAfterMs ?? 120_000;
  }

  /** The delay to wait before the next attempt, after a failure now. */
  next(): number {
    const now = this.clock.now();
    if (this.lastFailureAt !== undefined && now - this.lastFailureAt > this.resetAfterMs) this.failures = 0;
    this.lastFailureAt = now;
    const base = exponentialDelayMs(this.initialMs, this.failures++, this.maxMs, this.factor);
    return Math.round(base * (1 - this.jitter * this.random()));
  }

  reset(): void {
    this.failures = 0;
    this.lastFailureAt = undefined;
  }
}
