import assert from 'node:assert/strict';
import { createControllerMetrics } from '../../lib/observability/controller-metrics.js';
import type { ControllerMetrics } from '../../lib/observability/controller-metrics.js';
import { Registry, histogramOf, valueOf } from '../../lib/observability/metrics.js';
import { FakeClock } from '../support/fake-clock.js';
import { workqueueMetrics } from '../../lib/queue/queue-metrics.js';
import { WorkQueue } from '../../lib/queue/work-queue.js';

describe('WorkQueue metrics', () => {
  let clock: FakeClock;
  let metrics: ControllerMetrics;
  let q: WorkQueue;
  const name = { name: 'app' };
  beforeEach(() => {
    clock = new FakeClock();
    metrics = createControllerMetrics(new Registry());
    q = new WorkQueue({ clock, metrics: workqueueMetrics(metrics, 'app') });
  });
  afterEach(() => q.shutDown());

  it('counts adds and depth, including a key parked behind its own run', async () => {
    const w = metrics.workqueue;
    q.add('App/ns/a');
    q.add('App/ns/a');
    q.add('App/ns/b');
    assert.deepEqual(await Promise.all([valueOf(w.adds, name), valueOf(w.depth, name)]), [2, 2]);
    const key = await q.get();
    assert.equal(await valueOf(w.depth, name), 1);
    q.add(key ?? '');
    assert.deepEqual(await Promise.all([valueOf(w.adds, name), valueOf(w.depth, name)]), [3, 2]);
  });

  it('observes time waiting and time processing, in seconds', async () => {
    const w = metrics.workqueue;
    q.add('App/ns/a');
    clock.advance(250);
    const key = await q.get();
    clock.advance(1500);
    q.done(key ?? '');
    assert.deepEqual(await histogramOf(w.queueDuration, name), { count: 1, sum: 0.25 });
    assert.deepEqual(await histogramOf(w.workDuration, name), { count: 1, sum: 1.5 });
  });

  it('counts every delayed or rate-limited add as a retry', async () => {
    q.addAfter('App/ns/a', 10);
    q.addRateLimited('App/ns/b');
    assert.equal(await valueOf(metrics.workqueue.retries, name), 2);
  });

  it('reports unfinished work and the longest running processor at scrape time', async () => {
    q.add('App/ns/a');
    q.add('App/ns/b');
    await q.get();
    clock.advance(2000);
    await q.get();
    clock.advance(1000);
    const text = await metrics.registry.metrics();
    assert.match(text, /^workqueue_unfinished_work_seconds\{name="app"\} 4$/m);
    assert.match(text, /^workqueue_longest_running_processor_seconds\{name="app"\} 3$/m);
  });

  it('stops reporting once shut down and drained', async () => {
    q.add('App/ns/a');
    const key = await q.get();
    clock.advance(1000);
    const drained = q.shutDownWithDrain();
    q.done(key ?? '');
    await drained;
    clock.advance(1000);
    assert.match(await metrics.registry.metrics(), /^workqueue_unfinished_work_seconds\{name="app"\} 0$/m);
  });
});
