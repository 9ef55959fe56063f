import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import type { Authenticator } from './auth.js';
import type { ClusterConfig } from './kubeconfig.js';

/** One HTTP request as counted for `rest_client_requests_total{code,method,host}`. */
export interface RequestEvent {
  readonly method: string;
  /**
   * Path and query as asked (`/api/v1/namespaces/ns/services/web`), without the server's base path: what
   * tells a GET of one object from a list or a watch. Not a metric label (one series per object).
   */
  readonly path: string;
  /** The HTTP status as a string, or `'<error>'` when no response arrived (client-go's convention). */
  readonly code: string;
  /** host:port of the API server. */
  readonly host: string;
  /** Time until the response headers (for a watch: until the stream opened), or until the error. */
  readonly durationMs: number;
}

/** Observation hooks (wired to metrics by the caller). They must not throw; if they do, the error is logged. */
export interface KubeClientHooks {
  onRequest?(event: RequestEvent): void;
  /** A TCP(+TLS) connection to the API server was opened / closed. */
  onConnection?(event: 'open' | 'close', host: string): void;
}

export interface ConnectionStats {
  /** Connections opened since the client was created. */
  readonly opened: number;
  /** Connections closed since the client was created. */
  readonly closed: number;
  /** Connection pools created: one per client identity (a new one only when an exec plugin's certificate changed). */
  readonly pools: number;
}

export interface OutgoingRequest {
  readonly method: string;
  /** Path and query, e.g. `/api/v1/namespaces?limit=500`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal?: AbortSignal;
  /** A watch: no idle timeout on the socket. */
  readonly streaming: boolean;
}

/**
 * A request whose connection stays silent this long fails (a hung connection must not hold a worker
 * forever). Five minutes, undici's default: a delete-collection of thousands of objects answers only
 * when done. Watches are exempt: they are bounded by the server's `timeoutSeconds`.
 */
export const REQUEST_IDLE_TIMEOUT_MS = 300_000;

/**
 * The HTTP layer: Node's own http/https with keep-alive pools, one pool per client identity. It sends
 * the authenticator's credentials with every request and reports requests and connections to the hooks.
 */
export class Transport {
  /** The pool of the current client identity: its certificate (none for token auth) and its agent. */
  private pool: { readonly certPem: string | undefined; readonly agent: http.Agent } | undefined;
  private opened = 0;
  private closed = 0;
  private poolsCreated = 0;
  private readonly url: URL;
  private readonly caPem: string | undefined;
  /** What every request's options share, computed once. */
  private readonly target: Pick<http.RequestOptions, 'protocol' | 'hostname' | 'port'>;
  private readonly basePath: string;

  constructor(
    private readonly cluster: ClusterConfig,
    private readonly auth: Authenticator,
    private readonly hooks: KubeClientHooks,
    private readonly onHookError: (e: unknown) => void,
    readCa: (path: string) => string,
  ) {
    this.url = new URL(cluster.server);
    this.target = {
      protocol: this.url.protocol,
      hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
      port: this.url.port || (this.url.protocol === 'https:' ? 443 : 80),
    };
    this.basePath = this.url.pathname.replace(/\/+$/, '');
    this.caPem =
      cluster.certificateAuthorityData !== undefined
        ? Buffer.from(cluster.certificateAuthorityData, 'base64').toString('utf8')
        : cluster.certificateAuthority !== undefined
          ? readCa(cluster.certificateAuthority)
          : undefined;
  }

  get host(): string {
    return this.url.host;
  }

  /** Sends one request; resolves at the response headers, whatever the status. */
  async send(req: OutgoingRequest): Promise<IncomingMessage> {
    const credentials = await this.auth.credentials();
    const agent = this.agentFor(credentials.certPem, credentials.keyPem);
    const headers: Record<string, string | number> = { ...req.headers };
    if (credentials.authorization !== undefined) headers.Authorization = credentials.authorization;
    if (req.body !== undefined) headers['Content-Length'] = Buffer.byteLength(req.body);
    const options: http.RequestOptions = {
      ...this.target,
      path: this.basePath + req.path,
      method: req.method,
      headers,
      agent,
      ...(req.signal !== undefined ? { signal: req.signal } : {}),
    };
    // No listener below may refer to `req`: Node keeps a connection's first request, with its
    // listeners, for as long as the connection lives (TLS session caching), and a body is up to
    // megabytes. They get the method and path only.
    const { method, path } = req;
    const start = performance.now();
    let reported = false;
    const report = (code: string): void => {
      if (reported) return;
      reported = true;
      const event: RequestEvent = { method, path, code, host: this.url.host, durationMs: performance.now() - start };
      this.safeHook(() => this.hooks.onRequest?.(event));
    };
    const response = await this.exchange(options, req.body, req.streaming, () => report('<error>'));
    report(String(response.statusCode ?? 0));
    if (response.statusCode === 401) this.auth.unauthorized();
    return response;
  }

  /** Sends the request and waits for the response headers; the listeners hold neither `options` nor `body`. */
  private exchange(
    options: http.RequestOptions,
    body: string | undefined,
    streaming: boolean,
    onError: () => void,
  ): Promise<IncomingMessage> {
    const sent = (this.url.protocol === 'https:' ? https : http).request(options);
    const answered = new Promise<IncomingMessage>((resolve, reject) => {
      sent.once('response', resolve);
      sent.on('error', (e) => {
        onError();
        reject(e);
      });
    });
    sent.on('socket', (socket) => {
      if (!sent.reusedSocket) this.counted(socket);
    });
    if (!streaming)
      sent.setTimeout(REQUEST_IDLE_TIMEOUT_MS, () =>
        sent.destroy(new Error(`kube: no answer from ${this.url.host} in ${REQUEST_IDLE_TIMEOUT_MS / 1000} s`)),
      );
    sent.end(body);
    return answered;
  }

  /**
   * Counts a new connection, and its close. A method of its own: a listener made inside send() would
   * hold that request (its body too) for as long as the pooled connection lives.
   */
  private counted(socket: Socket): void {
    this.opened++;
    this.safeHook(() => this.hooks.onConnection?.('open', this.url.host));
    socket.once('close', () => {
      this.closed++;
      this.safeHook(() => this.hooks.onConnection?.('close', this.url.host));
    });
  }

  stats(): ConnectionStats {
    return { opened: this.opened, closed: this.closed, pools: this.poolsCreated };
  }

  /** Closes the pooled connections (in-flight watches end with an error). */
  close(): Promise<void> {
    this.pool?.agent.destroy();
    this.pool = undefined;
    return Promise.resolve();
  }

  private agentFor(certPem: string | undefined, keyPem: string | undefined): http.Agent {
    // The authenticator hands out the same certificate string until an exec plugin returns a new one.
    if (this.pool !== undefined && this.pool.certPem === certPem) return this.pool.agent;
    const common = { keepAlive: true, scheduling: 'lifo' as const };
    // One TLS context for every connection of the pool: given the CA and certificate instead, Node makes
    // contexts per connection, each parsing them again (a controller with 50 idle MySQLClusters, whose
    // Secrets and claims each keep a watch, so a connection, open: 471 contexts, now 3).
    const agent =
      this.url.protocol === 'https:'
        ? new https.Agent({
            ...common,
            secureContext: tls.createSecureContext({
              ...(this.caPem !== undefined ? { ca: this.caPem } : {}),
              ...(certPem !== undefined && keyPem !== undefined ? { cert: certPem, key: keyPem } : {}),
            }),
            rejectUnauthorized: !this.cluster.insecureSkipTlsVerify,
            ...(this.cluster.tlsServerName !== undefined ? { servername: this.cluster.tlsServerName } : {}),
          })
        : new http.Agent(common);
    // An exec plugin's new certificate gets a new pool; the old one's idle sockets go.
    this.pool?.agent.destroy();
    this.pool = { certPem, agent };
    this.poolsCreated++;
    return agent;
  }

  private safeHook(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.onHookError(e);
    }
  }
}

/** Reads a whole response body as text. */
export async function readBody(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Lowercase header names → the first value, as strings. */
export function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? (v[0] ?? '') : v;
  return out;
}
