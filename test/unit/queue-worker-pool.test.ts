import assert from 'node:assert/strict';
import { createControllerMetrics } from '../../lib/observability/controller-metrics.js';
import type { ControllerMetrics } from '../../lib/observability/controller-metrics.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { Registry, histogramOf, valueOf } from '../../lib/observability/metrics.js';
import { FakeClock } from '../support/fake-clock.js';
import { WorkQueue } from '../../lib/queue/work-queue.js';
import { PollAgainError, TerminalError, isTerminalError } from '../../lib/reconcile/contract.js';
import type { Reconcile, ReconcileResult } from '../../lib/reconcile/contract.js';
import { runWorkers } from '../../lib/queue/worker-pool.js';
import type { WorkerPool } from '../../lib/queue/worker-pool.js';

const settle = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
};

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const A = 'App/shop/a';
const B = 'App/shop/b';

describe('runWorkers', () => {
  let clock: FakeClock;
  let queue: WorkQueue;
  let metrics: ControllerMetrics;
  let calls: string[];
  let errors: { key: string; terminal: boolean }[];
  let pool: WorkerPool | undefined;
  const app = { controller: 'app' };

  beforeEach(() => {
    clock = new FakeClock();
    queue = new WorkQueue({ clock });
    metrics = createControllerMetrics(new Registry());
    calls = [];
    errors = [];
  });
  afterEach(async () => {
    await pool?.stop();
    pool = undefined;
  });

  /** Runs a pool whose reconcile answers each call with the next outcome for that key. */
  function run(outcomes: Record<string, (() => Promise<ReconcileResult | undefined>)[]>, workers = 1): void {
    const reconcile: Reconcile = (key) => {
      calls.push(key);
      const next = outcomes[key]?.shift();
      return next === undefined ? Promise.resolve(undefined) : next();
    };
    pool = runWorkers({
      name: 'app',
      queue,
      workers,
      reconcile,
      logger: silentLogger,
      metrics,
      clock,
      onError: (key, _err, terminal) => errors.push({ key, terminal }),
    });
  }
  const result = (r: 'success' | 'error' | 'requeue' | 'requeue_after'): Promise<number> =>
    valueOf(metrics.reconcileTotal, { controller: 'app', result: r });

  it('forgets a key that succeeds and does not requeue it', async () => {
    queue.addRateLimited(A);
    clock.advance(5);
    run({ [A]: [async () => ({})] });
    await settle();
    assert.deepEqual(calls, [A]);
    assert.equal(queue.numRequeues(A), 0);
    clock.advance(3_600_000);
    await settle();
    assert.deepEqual(calls, [A]);
    assert.equal(await result('success'), 1);
    assert.equal((await histogramOf(metrics.reconcileTime, app)).count, 1);
  });

  it('retries a key that throws, with backoff, and counts the error', async () => {
    run({
      [A]: [
        async () => {
          throw new Error('apiserver unavailable');
        },
        async () => {
          throw new Error('again');
        },
      ],
    });
    queue.add(A);
    await settle();
    assert.equal(queue.numRequeues(A), 1);
    clock.advance(4);
    await settle();
    assert.deepEqual(calls, [A], 'not before the 5 ms backoff');
    clock.advance(1);
    await settle();
    assert.deepEqual(calls, [A, A]);
    clock.advance(9);
    await settle();
    assert.deepEqual(calls, [A, A], 'the second backoff is 10 ms');
    clock.advance(1);
    await settle();
    assert.deepEqual(calls, [A, A, A]);
    assert.equal(queue.numRequeues(A), 0, 'the third run succeeded');
    assert.deepEqual(
      await Promise.all([
        result('error'),
        result('success'),
        valueOf(metrics.reconcileErrors, app),
        valueOf(metrics.terminalReconcileErrors, app),
      ]),
      [2, 1, 2, 0],
    );
    assert.deepEqual(errors, [
      { key: A, terminal: false },
      { key: A, terminal: false },
    ]);
  });

  it('does not retry a terminal error, even when wrapped, and forgets the key', async () => {
    queue.addRateLimited(A);
    clock.advance(5);
    run({
      [A]: [
        async () => {
          throw new Error('reconcile App shop/a', { cause: new TerminalError('spec.replicas: must be >= 0') });
        },
      ],
    });
    await settle();
    clock.advance(3_600_000);
    await settle();
    assert.deepEqual(calls, [A]);
    assert.equal(queue.numRequeues(A), 0);
    assert.equal(queue.len(), 0);
    assert.deepEqual(
      await Promise.all([
        result('error'),
        valueOf(metrics.reconcileErrors, app),
        valueOf(metrics.terminalReconcileErrors, app),
      ]),
      [1, 1, 1],
    );
    assert.deepEqual(errors, [{ key: A, terminal: true }]);
    queue.add(A);
    await settle();
    assert.deepEqual(calls, [A, A], 'the key comes back when its object changes');
  });

  it('comes back within the poll a failing reconcile asks for, terminal or not, however long its backoff', async () => {
    for (let i = 0; i < 12; i++) queue.addRateLimited(B); // B's backoff is now 5 ms × 2^12 ≈ 20 s
    run({
      [A]: [
        async () => {
          throw new PollAgainError(1_000, new TerminalError('StatefulSet db was refused'));
        },
      ],
      [B]: [
        async () => {
          throw new PollAgainError(5_000, new Error('backup CronJob forbidden'));
        },
      ],
    });
    clock.advance(5); // B is due once
    queue.add(A);
    await settle();
    assert.deepEqual(calls.sort(), [A, B]);
    assert.deepEqual(
      errors.sort((x, y) => x.key.localeCompare(y.key)),
      [
        { key: A, terminal: true },
        { key: B, terminal: false },
      ],
    );
    assert.equal(queue.numRequeues(B), 13, 'the backoff itself goes on');
    clock.advance(999);
    await settle();
    assert.deepEqual(calls, [A, B], 'not before the poll');
    clock.advance(1);
    await settle();
    assert.deepEqual(calls, [A, B, A], 'a terminal error still comes back at the poll');
    clock.advance(4_000);
    await settle();
    assert.deepEqual(calls, [A, B, A, B], 'the poll (5 s) wins over the backoff (~20 s)');
  });

  it('requeues after the asked delay and forgets the backoff', async () => {
    queue.addRateLimited(A);
    clock.advance(5);
    run({ [A]: [async () => ({ requeueAfterMs: 30_000 })] });
    await settle();
    assert.equal(queue.numRequeues(A), 0);
    clock.advance(29_999);
    await settle();
    assert.deepEqual(calls, [A]);
    clock.advance(1);
    await settle();
    assert.deepEqual(calls, [A, A]);
    assert.equal(await result('requeue_after'), 1);
  });

  it('requeues with backoff when asked to requeue', async () => {
    run({ [A]: [async () => ({ requeue: true }), async () => ({ requeue: true })] });
    queue.add(A);
    await settle();
    clock.advance(5);
    await settle();
    assert.equal(queue.numRequeues(A), 2);
    clock.advance(10);
    await settle();
    assert.deepEqual(calls, [A, A, A]);
    assert.deepEqual(
      await Promise.all([result('requeue'), result('success'), valueOf(metrics.reconcileErrors, app)]),
      [2, 1, 0],
    );
  });

  it('never runs one key on two workers; a key re-added mid-run runs once more afterwards', async () => {
    const first = deferred<ReconcileResult | undefined>();
    const other = deferred<ReconcileResult | undefined>();
    run({ [A]: [() => first.promise], [B]: [() => other.promise] }, 3);
    queue.add(A);
    await settle();
    queue.add(A);
    queue.add(A);
    queue.add(B);
    await settle();
    assert.deepEqual(calls, [A, B], 'two idle workers, yet A is not started again while in flight');
    assert.equal(await valueOf(metrics.activeWorkers, app), 2);
    first.resolve(undefined);
    await settle();
    assert.deepEqual(calls, [A, B, A]);
    other.resolve(undefined);
    await settle();
    assert.deepEqual(calls, [A, B, A], 'exactly once more');
    assert.equal(await valueOf(metrics.activeWorkers, app), 0);
    assert.equal(await valueOf(metrics.maxConcurrentReconciles, app), 3);
  });

  it('starts every reconcile_total series at zero', async () => {
    run({});
    const text = await metrics.registry.metrics();
    for (const r of ['success', 'error', 'requeue', 'requeue_after'])
      assert.ok(text.includes(`controller_runtime_reconcile_total{controller="app",result="${r}"} 0`), r);
  });

  it('stop() aborts the signal, waits for the reconcile in flight, and ends every worker', async () => {
    const running = deferred<ReconcileResult | undefined>();
    let signal: AbortSignal | undefined;
    pool = runWorkers({
      name: 'app',
      queue,
      workers: 2,
      logger: silentLogger,
      clock,
      reconcile: (_key, s) => {
        signal = s;
        return running.promise;
      },
    });
    queue.add(A);
    await settle();
    let stopped = false;
    const stopping = pool.stop().then(() => {
      stopped = true;
    });
    await settle();
    assert.equal(signal?.aborted, true);
    assert.equal(stopped, false);
    running.resolve(undefined);
    await stopping;
    await pool.stopped;
    assert.equal(queue.shuttingDown(), true);
  });

  it('survives a reconcile that throws synchronously and an onError that throws', async () => {
    pool = runWorkers({
      name: 'app',
      queue,
      workers: 1,
      logger: silentLogger,
      clock,
      metrics,
      reconcile: (key) => {
        calls.push(key);
        throw new Error('sync');
      },
      onError: () => {
        throw new Error('hook');
      },
    });
    queue.add(A);
    await settle();
    clock.advance(5);
    await settle();
    assert.deepEqual(calls, [A, A]);
  });

  it('rejects a worker count that is not a positive integer', () => {
    assert.throws(
      () => runWorkers({ name: 'app', queue, workers: 0, logger: silentLogger, reconcile: async () => undefined }),
      RangeError,
    );
  });

  it('recognizes a TerminalError anywhere in the cause chain', () => {
    assert.equal(isTerminalError(new TerminalError('x')), true);
    assert.equal(isTerminalError(new Error('a', { cause: new Error('b', { cause: new TerminalError('c') }) })), true);
    assert.equal(isTerminalError(new Error('a')), false);
    assert.equal(isTerminalError('a string'), false);
  });
});
