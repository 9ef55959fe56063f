import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  RequestContext,
} from '@kubernetes/client-node';
import type { KubernetesObject, ResponseContext } from '@kubernetes/client-node';
import { statusException } from './errors.js';
import type { StatusLike } from './errors.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';

/** The undici dispatcher type client-node uses, named without importing undici (not our dependency). */
type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;
type Dispatch = Dispatcher['dispatch'];
type DispatchHandler = Parameters<Dispatch>[1];

/** One HTTP request as counted for `rest_client_requests_total{code,method,host}`. */
export interface RequestEvent {
  readonly method: string;
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
  /** A TCP(+TLS) connection to the API server was opened / closed by the shared pool. */
  onConnection?(event: 'open' | 'close', host: string): void;
}

export interface KubeClientOptions {
  /** Load this kubeconfig file. */
  readonly kubeconfigPath?: string;
  /** Load the in-cluster service account config (`loadFromCluster()`); the default when running in a pod. */
  readonly inCluster?: boolean;
  /** An already loaded config (tests); its clusters, users and contexts are copied. */
  readonly kubeConfig?: KubeConfig;
  /** Use this context instead of the current one. */
  readonly context?: string;
  /** Field manager for server-side apply; default `recon8s`. */
  readonly fieldManager?: string;
  readonly userAgent?: string;
  readonly logger?: Logger;
  readonly hooks?: KubeClientHooks;
}

export interface RawRequest {
  readonly method?: HttpMethod;
  /** Absolute API path, e.g. `/api/v1/namespaces/default/configmaps`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}

export interface ConnectionStats {
  /** Connections opened by the shared pool since the client was created. */
  readonly opened: number;
  /** Connections closed since the client was created. */
  readonly closed: number;
  /** Dispatchers created (1 per cluster/user pair; more means the pool is not shared). */
  readonly pools: number;
}

export interface StatusTarget {
  readonly apiVersion: string;
  readonly kind: string;
  /** Resource plural, e.g. `apps` for kind App. */
  readonly plural: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly status: unknown;
}

/** One Kubernetes client for the whole controller: one config, one connection pool, one set of hooks. */
export interface KubeClient {
  readonly kc: KubeConfig;
  /** The API server URL of the current cluster. */
  readonly server: string;
  readonly fieldManager: string;
  /** Generic CRUD and server-side apply. `patch()`/`create()` MUTATE the object passed: pass a copy (or use `apply`). */
  readonly objects: KubernetesObjectApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  readonly custom: CustomObjectsApi;
  /** Server-side apply (`fieldManager`, `force` default true) of a deep copy of `obj`; returns the live object. */
  apply<T extends KubernetesObject>(obj: T, opts?: { readonly dryRun?: boolean; readonly force?: boolean }): Promise<T>;
  /** Server-side apply of `status` through the `/status` subresource of a custom resource. */
  applyStatus(target: StatusTarget, opts?: { readonly force?: boolean }): Promise<unknown>;
  /** A raw request through the same pool and auth (used by the informer for list/watch). Non-2xx → ApiException. */
  request(req: RawRequest): Promise<ResponseContext>;
  /** `request` + JSON body. */
  requestJson<T>(req: RawRequest): Promise<T>;
  connectionStats(): ConnectionStats;
  /** Closes the pooled connections (in-flight watches end with an error). */
  close(): Promise<void>;
}

/**
 * A KubeConfig whose requests all share one undici dispatcher per (cluster, user).
 *
 * client-node 2.0.1 builds a new undici Agent in `createDispatcher` on every request, i.e. a new TCP+TLS
 * connection per call. `createDispatcher` is private in the typings, so this overrides the public
 * `applySecurityAuthentication` instead: it lets the base class do all the auth work (tokens, exec
 * plugins and token files are still re-read per request), then swaps the per-request dispatcher for the
 * pinned one. The per-request Agent the base class made is never used, so it never opens a socket.
 *
 * Limits: TLS material (CA, client cert/key) is read once per (cluster, user) pair — a rotated client
 * certificate needs a new client. When the cluster needs no TLS options at all (no CA, no client cert,
 * no proxy) client-node returns no dispatcher and undici's global dispatcher — itself one shared pool — is
 * used; requests are then not counted by `onRequest`.
 */
export class PooledKubeConfig extends KubeConfig {
  private readonly pools = new Map<string, Dispatcher>();
  private readonly agents: Dispatcher[] = [];
  private opened = 0;
  private closed = 0;

  constructor(
    private readonly hooks: KubeClientHooks = {},
    private readonly log: Logger = silentLogger,
  ) {
    super();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (fresh === undefined) return;
    const key = JSON.stringify([this.getCurrentCluster()?.name ?? '', this.getCurrentUser()?.name ?? '']);
    let pinned = this.pools.get(key);
    if (pinned === undefined) {
      fresh.on('connect', (origin) => {
        this.opened++;
        this.safeHook(() => this.hooks.onConnection?.('open', hostOf(origin)));
      });
      fresh.on('disconnect', (origin) => {
        this.closed++;
        this.safeHook(() => this.hooks.onConnection?.('close', hostOf(origin)));
      });
      this.agents.push(fresh);
      pinned = fresh.compose(this.countingInterceptor());
      this.pools.set(key, pinned);
    }
    context.setDispatcher(pinned);
  }

  connectionStats(): ConnectionStats {
    return { opened: this.opened, closed: this.closed, pools: this.pools.size };
  }

  async closePools(): Promise<void> {
    const agents = this.agents.splice(0);
    this.pools.clear();
    await Promise.all(agents.map((a) => a.close().catch(() => undefined)));
  }

  private safeHook(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.warn('kube client hook threw', { error: e });
    }
  }

  // An undici interceptor that reports each request once: at its final response status, or '<error>'.
  private countingInterceptor(): (dispatch: Dispatch) => Dispatch {
    return (dispatch: Dispatch): Dispatch =>
      (opts, handler) => {
        const start = performance.now();
        const method = String(opts.method ?? 'GET');
        const host = hostOf(opts.origin);
        let reported = false;
        const report = (code: string): void => {
          if (reported) return;
          reported = true;
          const event: RequestEvent = { method, code, host, durationMs: performance.now() - start };
          this.safeHook(() => this.hooks.onRequest?.(event));
        };
        const wrapped = new Proxy(handler, {
          get(target, key, receiver): unknown {
            const value: unknown = Reflect.get(target, key, receiver);
            if (typeof value !== 'function') return value;
            const fn = value as (...args: unknown[]) => unknown;
            switch (key) {
              case 'onResponseStart': // (controller, statusCode, headers, statusMessage)
              case 'onHeaders': // legacy (statusCode, headers, resume, statusText)
                return (...args: unknown[]) => {
                  const status = key === 'onHeaders' ? args[0] : args[1];
                  if (typeof status === 'number' && status >= 200) report(String(status));
                  return Reflect.apply(fn, target, args);
                };
              case 'onResponseError':
              case 'onError':
                return (...args: unknown[]) => {
                  report('<error>');
                  return Reflect.apply(fn, target, args);
                };
              default:
                return fn.bind(target);
            }
          },
        }) as DispatchHandler;
        return dispatch(opts, wrapped);
      };
  }
}

/** Creates the controller's Kubernetes client (see `KubeClient`). Throws if no usable cluster is configured. */
export function createKubeClient(options: KubeClientOptions = {}): KubeClient {
  const log = options.logger ?? silentLogger;
  const kc = new PooledKubeConfig(options.hooks ?? {}, log);
  if (options.kubeConfig !== undefined) {
    const src = options.kubeConfig;
    kc.loadFromOptions({
      clusters: src.getClusters(),
      users: src.getUsers(),
      contexts: src.getContexts(),
      currentContext: src.getCurrentContext(),
    });
  } else if (options.kubeconfigPath !== undefined) {
    kc.loadFromFile(options.kubeconfigPath);
  } else if (options.inCluster === true) {
    kc.loadFromCluster();
  } else {
    kc.loadFromDefault();
  }
  if (options.context !== undefined) kc.setCurrentContext(options.context);
  const cluster = kc.getCurrentCluster();
  if (cluster === null)
    throw new Error(`kube: no cluster in the current context (${kc.getCurrentContext() || 'none'})`);
  if (cluster.server.startsWith('http:') && cluster.skipTLSVerify !== true) {
    throw new Error(`kube: refusing plain HTTP server ${cluster.server} (set insecure-skip-tls-verify to allow it)`);
  }
  const server = cluster.server.replace(/\/+$/, '');
  const fieldManager = options.fieldManager ?? 'recon8s';
  const userAgent = options.userAgent ?? 'recon8s';
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const http = new IsomorphicFetchHttpLibrary();

  /** The request with its authentication (headers, and the pooled dispatcher that holds the TLS material). */
  const authenticated = async (req: RawRequest): Promise<RequestContext> => {
    const url = new URL(server + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const ctx = new RequestContext(url.toString(), req.method ?? HttpMethod.GET);
    ctx.setHeaderParam('Accept', 'application/json');
    ctx.setHeaderParam('User-Agent', userAgent);
    for (const [k, v] of Object.entries(req.headers ?? {})) ctx.setHeaderParam(k, v);
    if (req.body !== undefined) ctx.setBody(req.body);
    if (req.signal !== undefined) ctx.setSignal(req.signal);
    await kc.applySecurityAuthentication(ctx);
    return ctx;
  };

  const request = async (req: RawRequest): Promise<ResponseContext> => {
    const ctx = await authenticated(req);
    const resp = await http.send(ctx).toPromise();
    if (resp.httpStatusCode < 200 || resp.httpStatusCode > 299) {
      const text = await resp.body.text().catch(() => '');
      throw statusException(parseStatusBody(text, resp.httpStatusCode), resp.headers);
    }
    return resp;
  };

  // A whole JSON answer goes through the pooled dispatcher's own request(), not fetch(): the WHATWG layer
  // (Request, Response, Headers, streams) costs more CPU than the request itself. Streams (watches) keep fetch.
  const requestJson = async <T>(req: RawRequest): Promise<T> => {
    const ctx = await authenticated(req);
    const dispatcher = ctx.getDispatcher();
    if (dispatcher === undefined) return JSON.parse(await (await request(req)).body.text()) as T;
    const url = new URL(ctx.getUrl());
    const body = ctx.getBody();
    const resp = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: ctx.getHttpMethod(),
      headers: ctx.getHeaders(),
      ...(typeof body === 'string' ? { body } : {}),
      ...(req.signal !== undefined ? { signal: req.signal } : {}),
    });
    const text = await resp.body.text();
    if (resp.statusCode < 200 || resp.statusCode > 299) {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(resp.headers)) if (v !== undefined) headers[k] = String(v);
      throw statusException(parseStatusBody(text, resp.statusCode), headers);
    }
    return JSON.parse(text) as T;
  };

  // Discovery, once per group version: which plural and scope serve a kind.
  const discovery = new Map<string, Promise<Map<string, { readonly plural: string; readonly namespaced: boolean }>>>();
  const resourcesOf = (
    apiVersion: string,
  ): Promise<Map<string, { readonly plural: string; readonly namespaced: boolean }>> => {
    let found = discovery.get(apiVersion);
    if (!found) {
      found = requestJson<{ resources: { name: string; kind: string; namespaced: boolean }[] }>({
        path: groupVersionPath(apiVersion),
      }).then(
        (list) =>
          new Map(
            list.resources
              .filter((r) => !r.name.includes('/'))
              .map((r) => [r.kind, { plural: r.name, namespaced: r.namespaced }]),
          ),
      );
      found.catch(() => discovery.delete(apiVersion));
      discovery.set(apiVersion, found);
    }
    return found;
  };
  const objectPath = async (obj: KubernetesObject): Promise<string> => {
    const apiVersion = obj.apiVersion ?? '';
    const kind = obj.kind ?? '';
    const name = obj.metadata?.name;
    if (!apiVersion || !kind || !name)
      throw new Error('kube: an object to apply needs apiVersion, kind and metadata.name');
    const resource = (await resourcesOf(apiVersion)).get(kind);
    if (!resource) {
      // A CRD installed since the last look: ask again next time.
      discovery.delete(apiVersion);
      throw new Error(`kube: the API server serves no kind ${kind} in ${apiVersion}`);
    }
    const base = groupVersionPath(apiVersion);
    return resource.namespaced
      ? `${base}/namespaces/${encodeURIComponent(obj.metadata?.namespace ?? 'default')}/${resource.plural}/${encodeURIComponent(name)}`
      : `${base}/${resource.plural}/${encodeURIComponent(name)}`;
  };

  return {
    kc,
    server,
    fieldManager,
    objects,
    core: kc.makeApiClient(CoreV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    custom,
    async apply<T extends KubernetesObject>(
      obj: T,
      opts: { readonly dryRun?: boolean; readonly force?: boolean } = {},
    ): Promise<T> {
      // Raw JSON, not KubernetesObjectApi.patch: its model serializer drops every field the bundled
      // models do not know (x-kubernetes-* keys of a CRD schema, fields of newer API versions).
      const path = await objectPath(obj);
      return requestJson<T>({
        method: HttpMethod.PATCH,
        path,
        query: { fieldManager, force: opts.force ?? true, ...(opts.dryRun === true ? { dryRun: 'All' } : {}) },
        body: JSON.stringify(obj),
        headers: { 'Content-Type': PatchStrategy.ServerSideApply },
      });
    },
    async applyStatus(target: StatusTarget, opts: { readonly force?: boolean } = {}): Promise<unknown> {
      const slash = target.apiVersion.indexOf('/');
      if (slash < 0) throw new Error(`applyStatus: ${target.apiVersion} is not a custom resource group version`);
      const group = target.apiVersion.slice(0, slash);
      const version = target.apiVersion.slice(slash + 1);
      const body = {
        apiVersion: target.apiVersion,
        kind: target.kind,
        metadata: {
          name: target.metadata.name,
          ...(target.metadata.namespace !== undefined ? { namespace: target.metadata.namespace } : {}),
        },
        status: target.status,
      };
      // Raw JSON, not CustomObjectsApi: its generated (de)serialization costs more CPU than the request.
      const ns =
        target.metadata.namespace !== undefined ? `/namespaces/${encodeURIComponent(target.metadata.namespace)}` : '';
      return requestJson<unknown>({
        method: HttpMethod.PATCH,
        path: `/apis/${group}/${version}${ns}/${target.plural}/${encodeURIComponent(target.metadata.name)}/status`,
        query: { fieldManager, force: opts.force ?? true },
        body: JSON.stringify(body),
        headers: { 'Content-Type': PatchStrategy.ServerSideApply },
      });
    },
    request,
    requestJson,
    connectionStats: () => kc.connectionStats(),
    close: () => kc.closePools(),
  };
}

function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

function parseStatusBody(text: string, code: number): StatusLike {
  try {
    const parsed = JSON.parse(text) as StatusLike;
    if (parsed !== null && typeof parsed === 'object') return { ...parsed, code: parsed.code ?? code };
  } catch {
    // not JSON (e.g. a proxy's HTML error page)
  }
  return { kind: 'Status', code, reason: '', message: text.slice(0, 200) || `HTTP ${code}` };
}

function hostOf(origin: unknown): string {
  try {
    if (origin instanceof URL) return origin.host;
    if (typeof origin === 'string') return new URL(origin).host;
  } catch {
    // fall through
  }
  return String(origin ?? '');
}
