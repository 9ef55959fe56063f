/**
 * Time as the informer, the leader elector and their tests see it. Production code takes a `Clock`
 * (default `realClock`) instead of calling `Date.now()`/`setTimeout` directly, so unit tests can drive
 * time with a `ManualClock` (like k8s.io/utils/clock and its testing package).
 */

/** An opaque timer handle returned by `Clock.setTimeout`. */
export type TimerHandle = object;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The process clock: `Date.now()` and the Node timers. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Resolves after `ms` on `clock`, or at once when `signal` aborts (it never rejects: callers check the
 * signal themselves). Returns true if the full delay elapsed.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve(false);
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      resolve(false);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
