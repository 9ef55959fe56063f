import { request } from 'node:https';
import { createServer } from 'node:net';

/**
 * A loopback TCP port that was free a moment ago. Another process may take it before the component
 * binds it; startControlPlane notices the component's failure to bind and tries other ports.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error(`Expected a TCP address from a loopback listener, got ${String(address)}.`));
      });
    });
  });
}

/** TLS material for a client of the control plane (PEM text). */
export interface TlsClient {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface HttpResponse {
  readonly status: number;
  readonly body: string;
}

/** A bare HTTPS GET: readiness probes run before any kubeconfig exists and must not retry on their own. */
export function httpsGet(url: string, tls: TlsClient, timeoutMs = 3_000): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'GET', ca: tls.ca, cert: tls.cert, key: tls.key, timeout: timeoutMs, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** A plain-HTTP POST of JSON (etcd's gRPC gateway on its loopback client port). */
export async function postJson<T>(url: string, body: unknown, timeoutMs = 5_000): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}
