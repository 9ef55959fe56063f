import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  /** Give up after this long. Default 30 s (a busy two-core machine is slow, not wrong), inside mocha's 60 s test timeout. */
  readonly timeoutMs?: number;
  /** First pause between attempts; it grows by half each time up to maxIntervalMs. Default 20 ms. */
  readonly intervalMs?: number;
  /** Default 500 ms. */
  readonly maxIntervalMs?: number;
  /** What we wait for, for the timeout message, e.g. "the dependent ConfigMap to be collected". */
  readonly description?: string;
  /**
   * What else to say on timeout: the state that explains the failure (a pod's processes, a sidecar's
   * log), gathered only then. Its own failure is reported in its place.
   */
  readonly diagnose?: () => string | Promise<string>;
}

/**
 * Runs `attempt` until it resolves (no assertion failed, nothing thrown) and returns its value; on
 * timeout rethrows the last failure, so the message says what was still wrong. For anything a
 * controller or the API server does asynchronously: never sleep a fixed time and hope.
 */
export async function eventually<T>(attempt: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxIntervalMs = options.maxIntervalMs ?? 500;
  const deadline = Date.now() + timeoutMs;
  let interval = options.intervalMs ?? 20;
  let attempts = 0;
  for (;;) {
    attempts += 1;
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() + interval > deadline) {
        const what = options.description ?? 'the condition';
        const last = error instanceof Error ? error.message : String(error);
        const state = options.diagnose
          ? `\nState then:\n${await Promise.resolve()
              .then(options.diagnose)
              .catch((e: unknown) => `(could not be gathered: ${e instanceof Error ? e.message : String(e)})`)}`
          : '';
        throw new Error(
          `Timed out after ${timeoutMs} ms (${attempts} attempts) waiting for ${what}. Last failure: ${last}${state}`,
          { cause: error },
        );
      }
    }
    await sleep(interval);
    interval = Math.min(maxIntervalMs, Math.ceil(interval * 1.5));
  }
}
