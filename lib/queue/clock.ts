/**
 * Time as the queue and the worker pool see it: `now()` in milliseconds from an arbitrary origin
 * (only differences matter), and one-shot timers. Injected so tests drive time with a FakeClock
 * and never sleep. A real clock's timers never keep the process alive.
 */
export interface Clock {
  now(): number;
  /** Runs `fn` once after `ms`; the handle is opaque and only good for clearTimeout. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

// Node clamps longer delays to 1 ms (with a warning); callers re-arm when woken early.
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** Wall time from a monotonic source (durations survive NTP steps); timers are unref'd. */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS));
    timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
