import assert from 'node:assert/strict';
import {
  RECONCILE_TIME_BUCKETS,
  WORKQUEUE_BUCKETS,
  createControllerMetrics,
} from '../../lib/observability/controller-metrics.js';
import { PROMETHEUS_CONTENT_TYPE, Registry, histogramOf, valueOf } from '../../lib/observability/metrics.js';

// The text format itself is prom-client's; these are the promises recon8s makes on top of it.
describe('metrics registry (prom-client)', () => {
  it("keeps each registry's figures to itself: two controllers in one process never share a series", async () => {
    const a = new Registry();
    const b = new Registry();
    a.counter({ name: 'starts_total', help: 'Starts.', labelNames: ['who'] }).inc({ who: 'a' }, 2);
    b.counter({ name: 'starts_total', help: 'Starts.', labelNames: ['who'] }).inc({ who: 'b' });
    assert.match(await a.metrics(), /^starts_total\{who="a"\} 2$/m);
    assert.doesNotMatch(await a.metrics(), /who="b"/);
    assert.match(await b.metrics(), /^starts_total\{who="b"\} 1$/m);
  });

  it('reads one series back (valueOf, histogramOf): 0 before it exists', async () => {
    const r = new Registry();
    const c = r.counter({ name: 'calls_total', help: 'Calls.', labelNames: ['method', 'code'] });
    const h = r.histogram({ name: 'latency_seconds', help: 'Latency.', labelNames: ['path'], buckets: [0.1, 1] });
    assert.equal(await valueOf(c, { method: 'GET', code: '200' }), 0);
    c.inc({ method: 'GET', code: '200' });
    c.labels({ code: '200', method: 'GET' }).inc(2);
    c.inc({ method: 'GET', code: '500' });
    h.observe({ path: '/a' }, 0.5);
    h.observe({ path: '/a' }, 2);
    h.observe({ path: '/b' }, 7);
    assert.equal(await valueOf(c, { method: 'GET', code: '200' }), 3);
    assert.deepEqual(await histogramOf(h, { path: '/a' }), { count: 2, sum: 2.5 });
  });

  it('runs collect hooks before each exposition until unsubscribed', async () => {
    const r = new Registry();
    const g = r.gauge({ name: 'computed', help: 'Computed.' });
    let n = 0;
    const unsubscribe = r.onCollect(() => g.set(++n));
    assert.match(await r.metrics(), /^computed 1$/m);
    assert.match(await r.metrics(), /^computed 2$/m);
    unsubscribe();
    assert.match(await r.metrics(), /^computed 2$/m);
  });

  it('adds the process and Node.js runtime metrics Prometheus users expect, on request', async () => {
    const r = new Registry();
    assert.doesNotMatch(await r.metrics(), /process_cpu/);
    r.collectProcessMetrics();
    const text = await r.metrics();
    for (const family of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'process_open_fds',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_version_info',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${family} `, 'm'), family);
    }
    assert.equal(PROMETHEUS_CONTENT_TYPE, 'text/plain; version=0.0.4; charset=utf-8');
  });

  it('shows the same process metrics in every registry that asks, each family once', async () => {
    const [a, b] = [new Registry(), new Registry()];
    a.collectProcessMetrics();
    b.collectProcessMetrics();
    a.counter({ name: 'only_in_a_total', help: 'a' }).inc();
    const [ta, tb] = [await a.metrics(), await b.metrics()];
    for (const text of [ta, tb]) assert.equal(text.match(/^# TYPE process_cpu_seconds_total /gm)?.length, 1);
    assert.match(ta, /^only_in_a_total 1$/m);
    assert.doesNotMatch(tb, /only_in_a_total/);
  });
});

describe('createControllerMetrics', () => {
  it('declares the controller-runtime, client-go and recon8s families with their labels and buckets', async () => {
    const m = createControllerMetrics(new Registry());
    m.reconcileTotal.inc({ controller: 'app', result: 'success' });
    m.reconcileTime.observe({ controller: 'app' }, 0.2);
    m.workqueue.depth.set({ name: 'app' }, 3);
    m.restClientRequests.inc({ code: '200', method: 'GET', host: '10.0.0.1:6443' });
    m.leaderElectionMasterStatus.set({ name: 'recon8s' }, 1);
    m.applyTotal.inc({ kind: 'Deployment', result: 'applied' });
    m.watchRelists.inc({ resource: 'apps', reason: 'gone' });
    const text = await m.registry.metrics();
    for (const pattern of [
      /^# TYPE controller_runtime_reconcile_total counter$/m,
      /^controller_runtime_reconcile_total\{controller="app",result="success"\} 1$/m,
      /^controller_runtime_reconcile_time_seconds_bucket\{le="0\.005",controller="app"\} 0$/m,
      /^controller_runtime_reconcile_time_seconds_bucket\{le="0\.2",controller="app"\} 1$/m,
      /^controller_runtime_reconcile_time_seconds_bucket\{le="60",controller="app"\} 1$/m,
      /^workqueue_depth\{name="app"\} 3$/m,
      /^rest_client_requests_total\{code="200",method="GET",host="10\.0\.0\.1:6443"\} 1$/m,
      /^leader_election_master_status\{name="recon8s"\} 1$/m,
      /^recon8s_apply_total\{kind="Deployment",result="applied"\} 1$/m,
      /^recon8s_watch_relists_total\{resource="apps",reason="gone"\} 1$/m,
    ])
      assert.match(text, pattern);
    assert.deepEqual(
      [RECONCILE_TIME_BUCKETS[0], RECONCILE_TIME_BUCKETS.at(-1), RECONCILE_TIME_BUCKETS.length],
      [0.005, 60, 40],
    );
    assert.deepEqual([WORKQUEUE_BUCKETS[0], WORKQUEUE_BUCKETS.at(-1), WORKQUEUE_BUCKETS.length], [1e-8, 1000, 12]);
  });

  it('registers once per registry', () => {
    const r = new Registry();
    createControllerMetrics(r);
    assert.throws(() => createControllerMetrics(r), /already been registered/);
  });
});
