/**
 * Time as recon8s sees it: production code takes a `Clock` instead of calling `Date.now()` or
 * `setTimeout` directly, so tests drive time (test/support: ManualClock, FakeClock) and never sleep,
 * like k8s.io/utils/clock. One interface, two real clocks:
 * - `realClock`: wall time (milliseconds since the epoch) for what is compared with the API server's
 *   timestamps (Lease renewals, watch silence); its timers keep the process alive.
 * - `monotonicClock`: for durations only (queue waits, backoff, reconcile times), from a monotonic
 *   source so that NTP steps never bend them; its timers never keep the process alive.
 * Timers longer than Node's limit are clamped: callers that wait longer re-arm when woken early.
 */

/** An opaque timer handle returned by `Clock.setTimeout`. */
export type TimerHandle = object;

export interface Clock {
  /** Milliseconds: since the epoch (realClock), or from an arbitrary origin (monotonicClock). */
  now(): number;
  /** Runs `fn` once after `ms`; the handle is only good for clearTimeout. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

// Node clamps longer delays to 1 ms (with a warning).
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

const delay = (ms: number): number => Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS);

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, delay(ms)),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export const monotonicClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, delay(ms)).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
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
