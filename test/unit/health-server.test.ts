import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { jsonLogger } from '../../lib/observability/logger.js';
import { startHealthServer } from '../../lib/observability/health-server.js';
import type { HealthServer } from '../../lib/observability/health-server.js';
import { parseListenAddress } from '../../lib/observability/listen-address.js';
import { Registry } from '../../lib/observability/metrics.js';

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly type: string | null;
}

async function get(address: string | undefined, path: string, method = 'GET'): Promise<Answer> {
  assert.ok(address !== undefined);
  const res = await fetch(`http://${address}${path}`, { method });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

/** A port free a moment ago, to give the second listener an address string of its own. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

describe('health server', () => {
  let server: HealthServer | undefined;
  let logLines: string[];
  const logger = () => jsonLogger({ level: 'debug', write: (line) => logLines.push(line) });
  beforeEach(() => {
    logLines = [];
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers /healthz, /readyz and /metrics on one listener when both addresses are the same', async () => {
    const registry = new Registry();
    const reconciles = registry.counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
    });
    let synced = false;
    server = await startHealthServer({
      metricsAddr: '127.0.0.1:0',
      healthAddr: '127.0.0.1:0',
      registry,
      logger: logger(),
      readyChecks: {
        informers: () => {
          if (!synced) throw new Error('apps not synced (token=s3cret)');
        },
      },
    });
    const addr = server.healthAddress;
    assert.equal(server.metricsAddress, addr);
    assert.match(addr ?? '', /^127\.0\.0\.1:\d+$/);

    assert.deepEqual(await get(addr, '/healthz'), { status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });

    const notReady = await get(addr, '/readyz');
    assert.equal(notReady.status, 503);
    assert.equal(notReady.body, '[+]ping ok\n[-]informers failed: reason withheld\nreadyz check failed\n');
    assert.ok(
      logLines.some((l) => l.includes('apps not synced')),
      'the reason is logged',
    );
    assert.deepEqual(await get(addr, '/readyz/informers'), {
      status: 503,
      body: '[-]informers failed: reason withheld\nreadyz check failed\n',
      type: 'text/plain; charset=utf-8',
    });
    assert.equal((await get(addr, '/readyz?exclude=informers')).status, 200);

    synced = true;
    assert.deepEqual(await get(addr, '/readyz'), { status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });
    assert.equal((await get(addr, '/readyz?verbose')).body, '[+]ping ok\n[+]informers ok\nreadyz check passed\n');
    assert.equal((await get(addr, '/readyz/informers')).status, 200);
    assert.equal((await get(addr, '/readyz/nope')).status, 404);

    reconciles.inc({ controller: 'app', result: 'success' });
    const metrics = await get(addr, '/metrics');
    assert.equal(metrics.status, 200);
    assert.equal(metrics.type, 'text/plain; version=0.0.4; charset=utf-8');
    assert.ok(
      metrics.body.split('\n').includes('controller_runtime_reconcile_total{controller="app",result="success"} 1'),
    );
  });

  it('answers 404 for an unknown path and 405 for a method other than GET or HEAD', async () => {
    server = await startHealthServer({
      metricsAddr: '127.0.0.1:0',
      healthAddr: '127.0.0.1:0',
      registry: new Registry(),
      logger: logger(),
    });
    assert.equal((await get(server.healthAddress, '/')).status, 404);
    assert.equal((await get(server.healthAddress, '/metricsx')).status, 404);
    assert.equal((await get(server.healthAddress, '/healthz', 'POST')).status, 405);
    const head = await get(server.healthAddress, '/healthz', 'HEAD');
    assert.deepEqual([head.status, head.body], [200, '']);
  });

  it('fails liveness when a health check fails, and a check that hangs fails', async () => {
    server = await startHealthServer({
      metricsAddr: '0',
      healthAddr: '127.0.0.1:0',
      registry: new Registry(),
      logger: logger(),
      checkTimeoutMs: 20,
      healthChecks: { 'event-loop': () => {}, stuck: () => new Promise<void>(() => {}) },
    });
    assert.equal(server.metricsAddress, undefined);
    const answer = await get(server.healthAddress, '/healthz?verbose');
    assert.equal(answer.status, 503);
    assert.equal(answer.body, '[+]ping ok\n[+]event-loop ok\n[-]stuck failed: reason withheld\nhealthz check failed\n');
    assert.equal((await get(server.healthAddress, '/healthz?exclude=stuck')).status, 200);
  });

  it('serves metrics and probes on separate listeners, each only its own paths', async () => {
    const registry = new Registry();
    registry.gauge({ name: 'up_now', help: 'Up.' }).set({}, 1);
    server = await startHealthServer({
      metricsAddr: `127.0.0.1:${await freePort()}`,
      healthAddr: '127.0.0.1:0',
      registry,
      logger: logger(),
    });
    assert.notEqual(server.metricsAddress, server.healthAddress);
    assert.match((await get(server.metricsAddress, '/metrics')).body, /^up_now 1$/m);
    assert.equal((await get(server.metricsAddress, '/healthz')).status, 404);
    assert.equal((await get(server.healthAddress, '/metrics')).status, 404);
    assert.equal((await get(server.healthAddress, '/healthz')).status, 200);
  });

  it('stops listening on close', async () => {
    const s = await startHealthServer({
      metricsAddr: '127.0.0.1:0',
      healthAddr: '127.0.0.1:0',
      registry: new Registry(),
      logger: logger(),
    });
    assert.equal((await get(s.healthAddress, '/healthz')).status, 200);
    await s.close();
    await s.close();
    await assert.rejects(get(s.healthAddress, '/healthz'));
  });

  it('rejects when an address cannot be bound, and closes what it bound', async () => {
    const first = await startHealthServer({
      metricsAddr: '0',
      healthAddr: '127.0.0.1:0',
      registry: new Registry(),
      logger: logger(),
    });
    server = first;
    await assert.rejects(
      startHealthServer({
        metricsAddr: '127.0.0.1:0',
        healthAddr: first.healthAddress,
        registry: new Registry(),
        logger: logger(),
      }),
      /EADDRINUSE/,
    );
  });

  it('parses listen addresses', () => {
    assert.deepEqual(parseListenAddress(':8080'), { host: undefined, port: 8080 });
    assert.deepEqual(parseListenAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseListenAddress('[::1]:8081'), { host: '::1', port: 8081 });
    for (const bad of ['8080', 'host:', 'host:http', ':70000', '::1:80'])
      assert.throws(() => parseListenAddress(bad), /invalid listen address/, bad);
  });
});
