import { monotonicClock } from '../clock/index.js';
import type { Clock } from '../clock/index.js';
import { DelayedKeys } from './delayed-keys.js';
import { noopQueueMetrics } from './queue-metrics.js';
import type { QueueMetrics } from './queue-metrics.js';
import { defaultControllerRateLimiter } from './rate-limiter.js';
import type { RateLimiter } from './rate-limiter.js';

/**
 * A rate-limiting, delaying work queue with client-go's workqueue semantics. Keys
 * (`kind/namespace/name`) are deduplicated and never handed to two workers at once:
 *
 * - `add(key)`: a key already waiting is left where it is; a key being processed is marked dirty
 *   and handed out again once `done(key)` — so a change seen mid-reconcile is never lost, and
 *   several changes coalesce into one more run.
 * - `get()` resolves with the next key (FIFO), waiting for one; the caller owns the key until it
 *   calls `done(key)`, which it must always do. It resolves `undefined` once shut down.
 * - `addAfter(key, ms)` adds when `ms` has passed (`ms <= 0`: now); a key already delayed keeps
 *   the earlier time. `add` does not cancel a delayed add: it still fires (and dedups then).
 * - `addRateLimited(key)` = `addAfter(key, rateLimiter.when(key))`; `forget(key)` resets the
 *   key's backoff (call it when the key succeeded); `numRequeues(key)` counts failures since.
 * - `len()` is the number of keys ready to be handed out (client-go's Len).
 * - `shutDown()`: adds are ignored from then on, waiting `get()`s resolve `undefined`, keys
 *   still waiting or delayed are dropped (reconciliation is level-based: whoever runs next lists
 *   every object again). `shutDownWithDrain()` does the same and resolves once every key handed
 *   out has been `done()`. A dirty key is not handed out again after shutdown.
 */
export interface RateLimitingQueue {
  add(key: string): void;
  addAfter(key: string, ms: number): void;
  addRateLimited(key: string): void;
  get(): Promise<string | undefined>;
  done(key: string): void;
  forget(key: string): void;
  numRequeues(key: string): number;
  len(): number;
  shutDown(): void;
  shutDownWithDrain(): Promise<void>;
  shuttingDown(): boolean;
}

export interface WorkQueueOptions {
  /** Default: the real, monotonic clock. */
  readonly clock?: Clock;
  /** Default: defaultControllerRateLimiter(clock). */
  readonly rateLimiter?: RateLimiter;
  /** Default: none. See workqueueMetrics(). */
  readonly metrics?: QueueMetrics;
}

export class WorkQueue implements RateLimitingQueue {
  readonly #clock: Clock;
  readonly #rateLimiter: RateLimiter;
  readonly #metrics: QueueMetrics;
  // Ready keys in FIFO order: a Set iterates in insertion order and ready keys are unique.
  readonly #ready = new Set<string>();
  // Keys that need a run: ready ones, and those parked until their in-flight run is done.
  readonly #dirty = new Set<string>();
  /** Key → when it was handed out. */
  readonly #processing = new Map<string, number>();
  /** Key → when it became dirty, for the queue latency. */
  readonly #addedAt = new Map<string, number>();
  readonly #getters: ((key: string | undefined) => void)[] = [];
  readonly #drained: (() => void)[] = [];
  readonly #delayed: DelayedKeys;
  #shuttingDown = false;
  #unsubscribeScrape: (() => void) | undefined;

  constructor(opts: WorkQueueOptions = {}) {
    this.#clock = opts.clock ?? monotonicClock;
    this.#rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter(this.#clock);
    this.#metrics = opts.metrics ?? noopQueueMetrics;
    this.#delayed = new DelayedKeys(this.#clock, (key) => this.add(key));
    this.#unsubscribeScrape = this.#metrics.onScrape(() => this.#reportInFlight());
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    this.#addedAt.set(key, this.#clock.now());
    this.#metrics.added();
    this.#metrics.depth(this.#dirty.size);
    if (this.#processing.has(key)) return;
    this.#ready.add(key);
    this.#dispatch();
  }

  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    this.#metrics.retried();
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    this.#delayed.schedule(key, this.#clock.now() + ms);
  }

  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const key = this.#take();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  done(key: string): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics.processed(seconds(this.#clock.now() - startedAt));
    if (this.#shuttingDown) {
      this.#finishIfDrained();
      return;
    }
    if (this.#dirty.has(key)) {
      this.#ready.add(key);
      this.#dispatch();
    }
  }

  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#rateLimiter.numRequeues(key);
  }

  len(): number {
    return this.#ready.size;
  }

  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    this.#delayed.stop();
    this.#ready.clear();
    this.#dirty.clear();
    this.#addedAt.clear();
    this.#metrics.depth(0);
    for (const resolve of this.#getters.splice(0)) resolve(undefined);
    this.#finishIfDrained();
  }

  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** Hands ready keys to waiting getters; the key is marked in flight before its getter resumes. */
  #dispatch(): void {
    while (this.#getters.length > 0) {
      const key = this.#take();
      if (key === undefined) return;
      this.#getters.shift()?.(key);
    }
  }

  #take(): string | undefined {
    const next = this.#ready.values().next();
    if (next.done === true) return undefined;
    const key = next.value;
    const now = this.#clock.now();
    this.#ready.delete(key);
    this.#dirty.delete(key);
    this.#processing.set(key, now);
    this.#metrics.depth(this.#dirty.size);
    this.#metrics.queued(seconds(now - (this.#addedAt.get(key) ?? now)));
    this.#addedAt.delete(key);
    return key;
  }

  #reportInFlight(): void {
    const now = this.#clock.now();
    let unfinished = 0;
    let longest = 0;
    for (const startedAt of this.#processing.values()) {
      unfinished += now - startedAt;
      longest = Math.max(longest, now - startedAt);
    }
    this.#metrics.inFlight(seconds(unfinished), seconds(longest));
  }

  #finishIfDrained(): void {
    if (this.#processing.size > 0) return;
    this.#metrics.inFlight(0, 0);
    this.#unsubscribeScrape?.();
    this.#unsubscribeScrape = undefined;
    for (const resolve of this.#drained.splice(0)) resolve();
  }
}

function seconds(ms: number): number {
  return ms / 1000;
}
