import type { IncomingMessage } from 'node:http';
import type { KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { authenticatorFor } from './auth.js';
import { isNotFound, statusException } from './errors.js';
import type { StatusLike } from './errors.js';
import type { KubeConfigLike, KubeConfigSource } from './kubeconfig.js';
import { loadKubeConfig } from './kubeconfig.js';
import type { ConnectionStats, KubeClientHooks } from './transport.js';
import { Transport, flatHeaders, readBody } from './transport.js';

/** The HTTP methods the API uses (the same names as client-node's `HttpMethod`). */
export const HttpMethod = {
  GET: 'GET',
  POST: 'POST',
  PUT: 'PUT',
  PATCH: 'PATCH',
  DELETE: 'DELETE',
} as const;
export type HttpMethod = (typeof HttpMethod)[keyof typeof HttpMethod];

/** Patch content types (the same names as client-node's `PatchStrategy`). */
export const PatchStrategy = {
  JsonPatch: 'application/json-patch+json',
  MergePatch: 'application/merge-patch+json',
  StrategicMergePatch: 'application/strategic-merge-patch+json',
  ServerSideApply: 'application/apply-patch+yaml',
} as const;
export type PatchStrategy = (typeof PatchStrategy)[keyof typeof PatchStrategy];

/** Any Kubernetes object: what the client sends and returns (a type only: nothing of client-node is loaded). */
export type KubeObject = KubernetesObject;

export interface KubeClientOptions {
  /** Load this kubeconfig file. */
  readonly kubeconfigPath?: string;
  /** Use the pod's service account (the default when running in a pod without a kubeconfig). */
  readonly inCluster?: boolean;
  /** An already loaded client-node KubeConfig (tests, embedders); only its accessors are read. */
  readonly kubeConfig?: KubeConfigLike;
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

/** A whole answer of the API server. */
export interface RawResponse {
  readonly statusCode: number;
  /** Lowercase names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
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
  /** The API server URL of the current cluster. */
  readonly server: string;
  /** The kubeconfig context in use (`in-cluster` in a pod). */
  readonly context: string;
  /** The context's namespace (in a pod: the service account's), if any. */
  readonly namespace: string | undefined;
  readonly fieldManager: string;
  /** Server-side apply (`fieldManager`, `force` default true) of `obj`; returns the live object. */
  apply<T extends KubeObject>(obj: T, opts?: { readonly dryRun?: boolean; readonly force?: boolean }): Promise<T>;
  /** Server-side apply of `status` through the `/status` subresource of a custom resource. */
  applyStatus(target: StatusTarget, opts?: { readonly force?: boolean }): Promise<unknown>;
  /** One request, its answer read whole. Non-2xx → `KubeApiError` (see `apiError`). */
  request(req: RawRequest): Promise<RawResponse>;
  /** `request` + JSON body. */
  requestJson<T>(req: RawRequest): Promise<T>;
  /** A streaming request (a watch): resolves at the headers; the caller reads (or destroys) the body. */
  stream(req: RawRequest): Promise<IncomingMessage>;
  connectionStats(): ConnectionStats;
  /** Closes the pooled connections (in-flight watches end with an error). */
  close(): Promise<void>;
}

/** Creates the controller's Kubernetes client (see `KubeClient`). Throws if no usable cluster is configured. */
/** GET, or undefined when the object does not exist. */
export async function getObject<T>(client: KubeClient, path: string): Promise<T | undefined> {
  try {
    return await client.requestJson<T>({ path });
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export function createKubeClient(options: KubeClientOptions = {}): KubeClient {
  const log = options.logger ?? silentLogger;
  const source: KubeConfigSource =
    options.kubeConfig !== undefined
      ? { kind: 'object', config: options.kubeConfig }
      : options.kubeconfigPath !== undefined
        ? { kind: 'file', path: options.kubeconfigPath }
        : options.inCluster === true
          ? { kind: 'in-cluster' }
          : { kind: 'default' };
  const config = loadKubeConfig(source, options.context);
  const { cluster } = config;
  if (!/^https?:\/\//.test(cluster.server))
    throw new Error(`kube: cluster ${cluster.name} has server "${cluster.server}"; expected an https:// URL`);
  if (cluster.server.startsWith('http:') && !cluster.insecureSkipTlsVerify) {
    throw new Error(`kube: refusing plain HTTP server ${cluster.server} (set insecure-skip-tls-verify to allow it)`);
  }
  const transport = new Transport(
    cluster,
    authenticatorFor(config.user),
    options.hooks ?? {},
    (e) => log.warn('kube client hook threw', { error: e }),
    (path) => readFileSync(path, 'utf8'),
  );
  const fieldManager = options.fieldManager ?? 'recon8s';
  const userAgent = options.userAgent ?? 'recon8s';

  const send = (req: RawRequest, streaming: boolean): Promise<IncomingMessage> => {
    let path = req.path;
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) query.set(k, String(v));
    const q = query.toString();
    if (q !== '') path += `${path.includes('?') ? '&' : '?'}${q}`;
    return transport.send({
      method: req.method ?? HttpMethod.GET,
      path,
      headers: { Accept: 'application/json', 'User-Agent': userAgent, ...req.headers },
      ...(req.body !== undefined ? { body: req.body } : {}),
      ...(req.signal !== undefined ? { signal: req.signal } : {}),
      streaming,
    });
  };

  const request = async (req: RawRequest): Promise<RawResponse> => {
    const response = await send(req, false);
    const body = await readBody(response);
    const statusCode = response.statusCode ?? 0;
    const headers = flatHeaders(response.headers);
    if (statusCode < 200 || statusCode > 299) throw statusException(parseStatusBody(body, statusCode), headers);
    return { statusCode, headers, body };
  };

  const requestJson = async <T>(req: RawRequest): Promise<T> => JSON.parse((await request(req)).body) as T;

  const stream = async (req: RawRequest): Promise<IncomingMessage> => {
    const response = await send(req, true);
    const statusCode = response.statusCode ?? 0;
    if (statusCode < 200 || statusCode > 299) {
      const body = await readBody(response).catch(() => '');
      throw statusException(parseStatusBody(body, statusCode), flatHeaders(response.headers));
    }
    return response;
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
  const objectPath = async (obj: KubeObject): Promise<string> => {
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
    server: cluster.server,
    context: config.context,
    namespace: config.namespace,
    fieldManager,
    async apply<T extends KubeObject>(
      obj: T,
      opts: { readonly dryRun?: boolean; readonly force?: boolean } = {},
    ): Promise<T> {
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
    stream,
    connectionStats: () => transport.stats(),
    close: () => transport.close(),
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
