// The reconcile contract, shared by whoever runs reconciles (the controller's workers, `recon8s apply`)
// and whoever implements one (lib/controller/reconciler.ts): a reconcile returns when it is done, may
// ask to be run again (requeue, or after a delay), throws to be retried with backoff, and throws a
// TerminalError when only a change of the object can help. Errors and requeues are separate channels.

/** What a reconcile asks for besides "done". `requeueAfterMs > 0` wins over `requeue`. */
export interface ReconcileResult {
  readonly requeue?: boolean;
  readonly requeueAfterMs?: number;
}

/** Converges one key. `signal` aborts when the runner stops. */
export type Reconcile = (key: string, signal: AbortSignal) => Promise<ReconcileResult | undefined>;

/**
 * A reconcile failure that retrying cannot fix — typically an invalid spec. The worker pool does
 * not requeue the key; it comes back when its object changes. Found anywhere in an error's `cause`
 * chain, so it can be wrapped (controller-runtime's reconcile.TerminalError, matched by errors.Is).
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminalError(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    if (e instanceof TerminalError) return true;
    seen.add(e);
  }
  return false;
}

/**
 * A reconcile failure that must not delay the next look past `pollAfterMs` (a failure detector's poll:
 * a MySQLCluster whose backup CronJob is refused still fails over). The key is retried at the earlier
 * of its backoff and the poll; a TerminalError in `cause` still ends the backoff, not the poll.
 */
export class PollAgainError extends Error {
  constructor(
    readonly pollAfterMs: number,
    cause: Error,
  ) {
    super(cause.message, { cause });
    this.name = 'PollAgainError';
  }
}

/** The poll an error asks for, if any (see PollAgainError). */
export function pollAfterMs(err: unknown): number | undefined {
  return err instanceof PollAgainError && err.pollAfterMs > 0 ? err.pollAfterMs : undefined;
}
