import assert from 'node:assert/strict';
import { RECONCILE_TIME_BUCKETS, WORKQUEUE_BUCKETS, createControllerMetrics } from '../../lib/observability/controller-metrics.js';
import { Registry, escapeLabelValue, formatValue } from '../../lib/observability/metrics.js';

describe('metrics registry', () => {
  it('exposes counters, gauges and histograms with labels in text format 0.0.4, sorted', () => {
    const r = new Registry();
    const requests = r.counter({ name: 'requests_total', help: 'Requests served.', labelNames: ['code', 'method'] });
    const temperature = r.gauge({ name: 'temperature_celsius', help: 'Temperature now.' });
    const latency = r.histogram({ name: 'latency_seconds', help: 'Latency.', labelNames: ['path'], buckets: [0.1, 1] });
    requests.inc({ method: 'GET', code: '500' }, 2);
    requests.inc({ code: '200', method: 'GET' });
    requests.labels({ code: '200', method: 'GET' }).inc();
    temperature.set({}, -1.5);
    latency.observe({ path: '/b' }, 0.05);
    latency.observe({ path: '/b' }, 0.5);
    latency.observe({ path: '/b' }, 5);
    latency.labels({ path: '/a' }).observe(0.1);
    assert.equal(r.metrics(), [
      '# HELP latency_seconds Latency.',
      '# TYPE latency_seconds histogram',
      'latency_seconds_bucket{path="/a",le="0.1"} 1',
      'latency_seconds_bucket{path="/a",le="1"} 1',
      'latency_seconds_bucket{path="/a",le="+Inf"} 1',
      'latency_seconds_sum{path="/a"} 0.1',
      'latency_seconds_count{path="/a"} 1',
      'latency_seconds_bucket{path="/b",le="0.1"} 1',
      'latency_seconds_bucket{path="/b",le="1"} 2',
      'latency_seconds_bucket{path="/b",le="+Inf"} 3',
      'latency_seconds_sum{path="/b"} 5.55',
      'latency_seconds_count{path="/b"} 3',
      '# HELP requests_total Requests served.',
      '# TYPE requests_total counter',
      'requests_total{code="200",method="GET"} 2',
      'requests_total{code="500",method="GET"} 2',
      '# HELP temperature_celsius Temperature now.',
      '# TYPE temperature_celsius gauge',
      'temperature_celsius -1.5',
      '',
    ].join('\n'));
  });

  it('escapes backslash, double quote and newline in label values, and backslash and newline in help', () => {
    const r = new Registry();
    r.counter({ name: 'odd_total', help: 'Line one\nback\\slash "quoted"', labelNames: ['v'] }).inc({ v: 'a"b\\c\nd' });
    assert.equal(r.metrics(), '# HELP odd_total Line one\\nback\\\\slash "quoted"\n# TYPE odd_total counter\nodd_total{v="a\\"b\\\\c\\nd"} 1\n');
    assert.equal(escapeLabelValue('plain'), 'plain');
  });

  it('writes label pairs sorted by name and orders series by those values, whatever the declaration order', () => {
    const r = new Registry();
    const c = r.counter({ name: 'calls_total', help: 'Calls.', labelNames: ['method', 'code'] });
    c.inc({ method: 'A', code: '2' });
    c.inc({ method: 'B', code: '1' });
    assert.equal(r.metrics(), '# HELP calls_total Calls.\n# TYPE calls_total counter\ncalls_total{code="1",method="B"} 1\ncalls_total{code="2",method="A"} 1\n');
  });

  it('shows an unlabelled metric at zero and hides a labelled family without series', () => {
    const r = new Registry();
    r.counter({ name: 'starts_total', help: 'Starts.' });
    r.gauge({ name: 'per_thing', help: 'Per thing.', labelNames: ['thing'] });
    assert.equal(r.metrics(), '# HELP starts_total Starts.\n# TYPE starts_total counter\nstarts_total 0\n');
  });

  it('forgets a removed series', () => {
    const r = new Registry();
    const g = r.gauge({ name: 'leader', help: 'Leader.', labelNames: ['name'] });
    g.set({ name: 'a' }, 1);
    g.remove({ name: 'a' });
    assert.equal(r.metrics(), '');
  });

  it('formats special values as Prometheus does', () => {
    assert.deepEqual([formatValue(Infinity), formatValue(-Infinity), formatValue(NaN), formatValue(0.25), formatValue(3)], ['+Inf', '-Inf', 'NaN', '0.25', '3']);
  });

  it('runs collect hooks before each exposition until unsubscribed', () => {
    const r = new Registry();
    const g = r.gauge({ name: 'computed', help: 'Computed.' });
    let n = 0;
    const unsubscribe = r.onCollect(() => g.set({}, ++n));
    assert.match(r.metrics(), /^computed 1$/m);
    assert.match(r.metrics(), /^computed 2$/m);
    unsubscribe();
    assert.match(r.metrics(), /^computed 2$/m);
  });

  it('fails on a duplicate or colliding name, invalid names, wrong labels and a decreasing counter', () => {
    const r = new Registry();
    const c = r.counter({ name: 'x_total', help: 'X.', labelNames: ['a'] });
    r.histogram({ name: 'h', help: 'H.' });
    assert.throws(() => r.gauge({ name: 'x_total', help: 'again' }), /collides/);
    assert.throws(() => r.counter({ name: 'h_count', help: 'collides with the histogram' }), /collides/);
    assert.throws(() => r.counter({ name: '1bad', help: '' }), /invalid metric name/);
    assert.throws(() => r.counter({ name: 'ok', help: '', labelNames: ['__reserved'] }), /invalid label name/);
    assert.throws(() => r.histogram({ name: 'hh', help: '', labelNames: ['le'] }), /reserved/);
    assert.throws(() => r.histogram({ name: 'hb', help: '', buckets: [1, 0.5] }), /ascending/);
    assert.throws(() => c.inc({ a: 'x', b: 'y' } as { a: string }), /labels must be exactly/);
    assert.throws(() => c.inc({} as { a: string }), /labels must be exactly/);
    assert.throws(() => c.inc({ a: 'x' }, -1), RangeError);
  });
});

describe('createControllerMetrics', () => {
  it('declares the controller-runtime, client-go and recon8s families with their labels and buckets', () => {
    const m = createControllerMetrics(new Registry());
    m.reconcileTotal.inc({ controller: 'app', result: 'success' });
    m.reconcileTime.observe({ controller: 'app' }, 0.2);
    m.workqueue.depth.set({ name: 'app' }, 3);
    m.restClientRequests.inc({ code: '200', method: 'GET', host: '10.0.0.1:6443' });
    m.leaderElectionMasterStatus.set({ name: 'recon8s' }, 1);
    m.applyTotal.inc({ kind: 'Deployment', result: 'applied' });
    m.watchRelists.inc({ resource: 'apps', reason: 'gone' });
    const text = m.registry.metrics();
    for (const line of [
      '# TYPE controller_runtime_reconcile_total counter',
      'controller_runtime_reconcile_total{controller="app",result="success"} 1',
      'controller_runtime_reconcile_time_seconds_bucket{controller="app",le="0.005"} 0',
      'controller_runtime_reconcile_time_seconds_bucket{controller="app",le="0.2"} 1',
      'controller_runtime_reconcile_time_seconds_bucket{controller="app",le="60"} 1',
      'workqueue_depth{name="app"} 3',
      'rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"} 1',
      'leader_election_master_status{name="recon8s"} 1',
      'recon8s_apply_total{kind="Deployment",result="applied"} 1',
      'recon8s_watch_relists_total{reason="gone",resource="apps"} 1',
    ]) assert.ok(text.split('\n').includes(line), line);
    assert.deepEqual([RECONCILE_TIME_BUCKETS[0], RECONCILE_TIME_BUCKETS.at(-1), RECONCILE_TIME_BUCKETS.length], [0.005, 60, 40]);
    assert.deepEqual([WORKQUEUE_BUCKETS[0], WORKQUEUE_BUCKETS.at(-1), WORKQUEUE_BUCKETS.length], [1e-8, 1000, 12]);
  });

  it('registers once per registry', () => {
    const r = new Registry();
    createControllerMetrics(r);
    assert.throws(() => createControllerMetrics(r), /collides/);
  });
});
