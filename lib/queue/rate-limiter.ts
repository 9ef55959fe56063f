import { exponentialDelayMs } from '../backoff/index.js';
import { monotonicClock } from '../clock/index.js';
import type { Clock } from '../clock/index.js';

/**
 * Decides how long a key waits before it is retried, as client-go's workqueue.RateLimiter:
 * `when(key)` records one more failure of `key` and returns the delay in milliseconds;
 * `forget(key)` drops what is known about `key`; `numRequeues(key)` is its failures since the
 * last forget.
 */
export interface RateLimiter {
  when(key: string): number;
  forget(key: string): void;
  numRequeues(key: string): number;
}

/** Per-key backoff: base·2^failures, capped (client-go's ItemExponentialFailureRateLimiter). */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  readonly #failures = new Map<string, number>();

  constructor(
    readonly baseDelayMs = 5,
    readonly maxDelayMs = 1_000_000,
  ) {}

  when(key: string): number {
    const exp = this.#failures.get(key) ?? 0;
    this.#failures.set(key, exp + 1);
    return exponentialDelayMs(this.baseDelayMs, exp, this.maxDelayMs);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

/**
 * A token bucket shared by all keys (client-go's BucketRateLimiter over golang.org/x/time/rate):
 * it starts full with `burst` tokens and refills at `qps`; every `when` takes a token, going into
 * debt when empty, and returns how long until that debt is repaid. Keys are not tracked.
 */
export class BucketRateLimiter implements RateLimiter {
  readonly qps: number;
  readonly burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(opts: { readonly qps?: number; readonly burst?: number; readonly clock?: Clock } = {}) {
    this.qps = opts.qps ?? 10;
    this.burst = opts.burst ?? 100;
    if (!(this.qps > 0) || !(this.burst >= 1))
      throw new RangeError(`BucketRateLimiter needs qps > 0 and burst >= 1, got ${this.qps}/${this.burst}`);
    this.#clock = opts.clock ?? monotonicClock;
    this.#tokens = this.burst;
    this.#last = this.#clock.now();
  }

  when(): number {
    const now = this.#clock.now();
    const elapsedMs = Math.max(0, now - this.#last);
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsedMs * this.qps) / 1000) - 1;
    this.#last = now;
    return this.#tokens >= 0 ? 0 : (-this.#tokens * 1000) / this.qps;
  }

  forget(): void {}

  numRequeues(): number {
    return 0;
  }
}

/** The longest delay of several limiters; every limiter sees every call (client-go's MaxOfRateLimiter). */
export class MaxOfRateLimiter implements RateLimiter {
  readonly #limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.#limiters = limiters;
  }

  when(key: string): number {
    // Not Math.max(...map): every limiter must record the call, which map guarantees.
    return this.#limiters.map((l) => l.when(key)).reduce((a, b) => Math.max(a, b), 0);
  }

  forget(key: string): void {
    for (const l of this.#limiters) l.forget(key);
  }

  numRequeues(key: string): number {
    return this.#limiters.reduce((n, l) => Math.max(n, l.numRequeues(key)), 0);
  }
}

/** client-go's DefaultControllerRateLimiter: max(5 ms·2^n capped at 1000 s, a 10 qps / 100 burst bucket). */
export function defaultControllerRateLimiter(clock: Clock = monotonicClock): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialFailureRateLimiter(5, 1_000_000),
    new BucketRateLimiter({ qps: 10, burst: 100, clock }),
  );
}
