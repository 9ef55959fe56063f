import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runChecks } from './health-checks.js';
import type { HealthChecks } from './health-checks.js';
import { formatAddress, parseListenAddress } from './listen-address.js';
import type { Logger } from './logger.js';
import { PROMETHEUS_CONTENT_TYPE } from './metrics.js';
import type { Registry } from './metrics.js';

export type { HealthCheck, HealthChecks } from './health-checks.js';

export interface HealthServerOptions {
  /** Where `/metrics` is served, `host:port` (port 0: any free port). Default `:8080`; `0` disables. */
  readonly metricsAddr?: string;
  /** Where `/healthz` and `/readyz` are served. Default `:8081`; `0` disables. */
  readonly healthAddr?: string;
  readonly registry: Registry;
  /** Readiness checks (e.g. informers synced), read on every request. */
  readonly readyChecks?: HealthChecks;
  /** Liveness checks besides the implicit `ping`, read on every request. */
  readonly healthChecks?: HealthChecks;
  readonly logger: Logger;
  /** A check slower than this fails. Default 5000. */
  readonly checkTimeoutMs?: number;
  /** close() waits this long for in-flight requests, then drops their connections. Default 5000. */
  readonly shutdownTimeoutMs?: number;
}

export interface HealthServer {
  /** The bound `/metrics` address (`host:port`, the real port when 0 was asked), if served. */
  readonly metricsAddress: string | undefined;
  /** The bound `/healthz` + `/readyz` address, if served. */
  readonly healthAddress: string | undefined;
  /** Stops accepting, lets requests in flight finish (up to shutdownTimeoutMs), closes idle connections. */
  close(): Promise<void>;
}

/**
 * Serves the controller's HTTP endpoints, as controller-runtime's manager does (metrics on :8080,
 * probes on :8081; the same address string for both means one listener serving all paths):
 *
 * - `GET /metrics`: the registry in Prometheus text format 0.0.4.
 * - `GET /healthz` (liveness): 200 `ok` while the event loop answers and every health check passes
 *   (`ping` always does). `GET /readyz` (readiness): 200 when every ready check passes, else 503
 *   naming the failing checks. Both take `?verbose` (list each check, as kube-apiserver) and
 *   `?exclude=<name>`; `/healthz/<name>` and `/readyz/<name>` run one check (404 if unknown).
 * - Any other path: 404; a method other than GET or HEAD: 405.
 *
 * Resolves once every listener is bound; rejects (closing what was bound) if one cannot be.
 */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const { registry, logger } = opts;
  const metricsAddr = opts.metricsAddr ?? ':8080';
  const healthAddr = opts.healthAddr ?? ':8081';
  const checkTimeoutMs = opts.checkTimeoutMs ?? 5000;
  const ping = { ping: () => {} };

  const probe = async (endpoint: 'healthz' | 'readyz', rest: string, url: URL, res: ServerResponse): Promise<void> => {
    const checks = { ...ping, ...(endpoint === 'healthz' ? opts.healthChecks : opts.readyChecks) };
    const only = rest === '' ? undefined : safeDecode(rest);
    const outcome = await runChecks(
      endpoint,
      checks,
      { verbose: url.searchParams.has('verbose'), exclude: new Set(url.searchParams.getAll('exclude')), only },
      checkTimeoutMs,
    );
    if (outcome.failures.length > 0) {
      const failed = Object.fromEntries(
        outcome.failures.map((f) => [f.name, f.error instanceof Error ? f.error.message : String(f.error)]),
      );
      // A failing liveness probe gets the pod restarted; readiness failing is routine during startup.
      if (endpoint === 'healthz') logger.warn('healthz check failed', { checks: failed });
      else logger.info('readyz check failed', { checks: failed });
    }
    send(res, outcome.status, outcome.body);
  };

  const handler =
    (serveMetrics: boolean, serveProbes: boolean) =>
    async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const route = /^\/(metrics|healthz|readyz)(?:\/([^/]+))?\/?$/.exec(url.pathname);
        const what = route?.[1];
        const known =
          (what === 'metrics' && serveMetrics && route?.[2] === undefined) ||
          ((what === 'healthz' || what === 'readyz') && serveProbes);
        if (!known) return send(res, 404, '404 page not found\n');
        if (req.method !== 'GET' && req.method !== 'HEAD')
          return send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
        if (what === 'metrics')
          return send(res, 200, await registry.metrics(), { 'Content-Type': PROMETHEUS_CONTENT_TYPE });
        await probe(what === 'healthz' ? 'healthz' : 'readyz', route?.[2] ?? '', url, res);
      } catch (err) {
        logger.error('health server request failed', { path: req.url, error: err });
        if (!res.headersSent) send(res, 500, 'internal server error\n');
        else res.destroy();
      }
    };

  const roles = new Map<string, { metrics: boolean; probes: boolean }>();
  if (metricsAddr !== '0') roles.set(metricsAddr, { metrics: true, probes: false });
  if (healthAddr !== '0') roles.set(healthAddr, { metrics: roles.has(healthAddr), probes: true });

  const servers: Server[] = [];
  const bound = new Map<string, string>();
  try {
    for (const [addr, role] of roles) {
      const { host, port } = parseListenAddress(addr);
      const handle = handler(role.metrics, role.probes);
      const server = createServer((req, res) => void handle(req, res));
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host, port }, () => {
          server.off('error', reject);
          resolve();
        });
      });
      server.on('error', (err) => logger.error('health server error', { address: addr, error: err }));
      bound.set(addr, formatAddress(server.address() as AddressInfo));
      logger.info(
        `Serving ${[role.metrics ? 'metrics' : '', role.probes ? 'health probes' : ''].filter(Boolean).join(' and ')}`,
        { address: bound.get(addr) },
      );
    }
  } catch (err) {
    await closeAll(servers, 0);
    throw err;
  }

  let closing: Promise<void> | undefined;
  return {
    metricsAddress: metricsAddr === '0' ? undefined : bound.get(metricsAddr),
    healthAddress: healthAddr === '0' ? undefined : bound.get(healthAddr),
    close: () => (closing ??= closeAll(servers, opts.shutdownTimeoutMs ?? 5000)),
  };
}

// A malformed escape names no check (404) rather than failing the request (500).
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function send(res: ServerResponse, status: number, body: string, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

async function closeAll(servers: readonly Server[], graceMs: number): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          if (!server.listening) return resolve();
          const force = setTimeout(() => server.closeAllConnections(), graceMs);
          force.unref();
          server.close(() => {
            clearTimeout(force);
            resolve();
          });
          server.closeIdleConnections();
        }),
    ),
  );
}
