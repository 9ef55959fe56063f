import type { Logger } from '../observability/logger.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import { monotonicClock } from '../clock/index.js';
import type { Clock } from '../clock/index.js';
import { isTerminalError, pollAfterMs } from '../reconcile/contract.js';
import type { Reconcile, ReconcileResult } from '../reconcile/contract.js';
import type { RateLimitingQueue } from './work-queue.js';

export interface WorkerPoolOptions {
  /** The controller's name: the `controller` label, and the logger's `controller` field. */
  readonly name: string;
  readonly queue: RateLimitingQueue;
  readonly workers: number;
  readonly reconcile: Reconcile;
  /** Told of every failure after it has been counted and the key requeued or not (e.g. to record an Event). */
  readonly onError?: (key: string, err: unknown, terminal: boolean) => void;
  readonly logger: Logger;
  readonly metrics?: ControllerMetrics;
  /** Times reconciles for the histogram. Default: the real clock. */
  readonly clock?: Clock;
}

export interface WorkerPool {
  /** Shuts the queue down and resolves once every worker has finished its reconcile and exited. */
  stop(): Promise<void>;
  /** Resolves once every worker has exited, whoever shut the queue down. */
  readonly stopped: Promise<void>;
}

/**
 * Runs `workers` loops that take keys from `queue` and reconcile them — controller-runtime's
 * reconcile loop contract. Per key, by outcome of `reconcile(key)`:
 *
 * | outcome                            | queue                                   | result label    |
 * |------------------------------------|-----------------------------------------|-----------------|
 * | throws / rejects                   | `addRateLimited(key)`: retry, backoff   | `error`         |
 * | throws a TerminalError (any cause) | `forget(key)`, no requeue               | `error`         |
 * | throws a PollAgainError (n ms)     | the above, and `addAfter(key, n)`       | `error`         |
 * | `{ requeueAfterMs: n > 0 }`        | `forget(key)` + `addAfter(key, n)`      | `requeue_after` |
 * | `{ requeue: true }`                | `addRateLimited(key)`                   | `requeue`       |
 * | anything else                      | `forget(key)`                           | `success`       |
 *
 * `done(key)` always follows. Errors also count in `controller_runtime_reconcile_errors_total`
 * (terminal ones in `controller_runtime_terminal_reconcile_errors_total` as well), are logged, and
 * are passed to `onError`. A queue key is never reconciled by two workers at once (the queue
 * guarantees it); different keys run concurrently up to `workers`.
 */
export function runWorkers(opts: WorkerPoolOptions): WorkerPool {
  const { name, queue, reconcile, onError } = opts;
  if (!Number.isInteger(opts.workers) || opts.workers < 1)
    throw new RangeError(`workers must be a positive integer, got ${opts.workers}`);
  const clock = opts.clock ?? monotonicClock;
  const logger = opts.logger.child({ controller: name });
  const m = opts.metrics === undefined ? undefined : bindMetrics(opts.metrics, name, opts.workers);
  const abort = new AbortController();

  const handle = async (key: string): Promise<void> => {
    const start = clock.now();
    m?.activeWorkers.inc();
    try {
      let result: ReconcileResult | undefined;
      try {
        result = await reconcile(key, abort.signal);
      } catch (err) {
        const terminal = isTerminalError(err);
        if (terminal) {
          queue.forget(key);
          m?.terminalErrors.inc();
        } else {
          queue.addRateLimited(key);
        }
        // The earlier of the backoff and the poll wins (a delayed key keeps its earliest time).
        const poll = pollAfterMs(err);
        if (poll !== undefined) queue.addAfter(key, poll);
        m?.errors.inc();
        m?.total.error.inc();
        logger.error('Reconciler error', { key, error: err, terminal });
        try {
          onError?.(key, err, terminal);
        } catch (hookErr) {
          logger.error('onError hook failed', { key, error: hookErr });
        }
        return;
      }
      const after = result?.requeueAfterMs ?? 0;
      if (after > 0) {
        queue.forget(key);
        queue.addAfter(key, after);
        m?.total.requeueAfter.inc();
        logger.debug('Reconcile done, requeueing after', { key, requeueAfterMs: after });
      } else if (result?.requeue === true) {
        queue.addRateLimited(key);
        m?.total.requeue.inc();
        logger.debug('Reconcile done, requeueing', { key });
      } else {
        queue.forget(key);
        m?.total.success.inc();
        logger.debug('Reconcile successful', { key });
      }
    } finally {
      m?.activeWorkers.dec();
      m?.reconcileTime.observe((clock.now() - start) / 1000);
      queue.done(key);
    }
  };

  const work = async (): Promise<void> => {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) await handle(key);
  };

  const stopped = Promise.all(Array.from({ length: opts.workers }, work)).then(() => {
    logger.debug('All workers finished');
  });
  return {
    stopped,
    stop: async () => {
      abort.abort();
      queue.shutDown();
      await stopped;
    },
  };
}

function bindMetrics(metrics: ControllerMetrics, controller: string, workers: number) {
  const total = (result: 'success' | 'error' | 'requeue' | 'requeue_after') =>
    metrics.reconcileTotal.labels({ controller, result });
  const bound = {
    total: {
      success: total('success'),
      error: total('error'),
      requeue: total('requeue'),
      requeueAfter: total('requeue_after'),
    },
    errors: metrics.reconcileErrors.labels({ controller }),
    terminalErrors: metrics.terminalReconcileErrors.labels({ controller }),
    reconcileTime: metrics.reconcileTime.labels({ controller }),
    activeWorkers: metrics.activeWorkers.labels({ controller }),
  };
  // As controller-runtime: every series exists from the start, so rate() sees the first event.
  for (const c of [...Object.values(bound.total), bound.errors, bound.terminalErrors]) c.inc(0);
  bound.activeWorkers.set(0);
  metrics.maxConcurrentReconciles.labels({ controller }).set(workers);
  return bound;
}
