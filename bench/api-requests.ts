import type { KubeClient, RawRequest } from '../lib/kube/index.js';
import type { Sample } from './prometheus.js';
import { parsePrometheus, totalBy } from './prometheus.js';

/** What the controller reads or writes (besides its own Lease, unused here): the apiserver figures are restricted to these. */
export const CONTROLLER_RESOURCES: ReadonlySet<string> = new Set([
  'apps',
  'mysqlclusters',
  'apps/status',
  'mysqlclusters/status',
  'deployments',
  'services',
  'horizontalpodautoscalers',
  'poddisruptionbudgets',
  'statefulsets',
  'configmaps',
  'cronjobs',
  'secrets',
  'persistentvolumeclaims',
  'events',
]);

/** API server verbs (apiserver_request_total{verb}) that change something. */
export const WRITE_VERBS: ReadonlySet<string> = new Set([
  'POST',
  'PUT',
  'PATCH',
  'APPLY',
  'DELETE',
  'DELETECOLLECTION',
]);
/** HTTP methods (rest_client_requests_total{method}) that change something. */
export const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** `VERB resource[/subresource]`, as the API server counts a request. Undefined for non-resource paths (/metrics). */
export function classifyRequest(req: RawRequest): string | undefined {
  const parts = req.path.split('?')[0]?.split('/').filter(Boolean) ?? [];
  let rest: string[];
  if (parts[0] === 'api') rest = parts.slice(2);
  else if (parts[0] === 'apis') rest = parts.slice(3);
  else return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [resource, name, sub] = rest;
  if (resource === undefined) return undefined;
  const method = req.method ?? 'GET';
  const contentType = Object.entries(req.headers ?? {}).find(([k]) => k.toLowerCase() === 'content-type')?.[1] ?? '';
  const verb =
    method === 'GET'
      ? name === undefined
        ? req.query?.watch
          ? 'WATCH'
          : 'LIST'
        : 'GET'
      : method === 'PATCH'
        ? contentType.startsWith('application/apply-patch')
          ? 'APPLY'
          : 'PATCH'
        : method === 'DELETE' && name === undefined
          ? 'DELETECOLLECTION'
          : method;
  return `${verb} ${sub ? `${resource}/${sub}` : resource}`;
}

/** Counts the bench's own API requests by `VERB resource`, so they can be told apart from the controller's. */
export class RequestLedger {
  private readonly counts = new Map<string, number>();

  note(req: RawRequest): void {
    const key = classifyRequest(req);
    if (key !== undefined) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }
}

/** The same client, with every raw request (creates, patches, informer lists and watches) noted in `ledger`. */
export function countingClient(client: KubeClient, ledger: RequestLedger): KubeClient {
  const request = (req: RawRequest): ReturnType<KubeClient['request']> => {
    ledger.note(req);
    return client.request(req);
  };
  return {
    ...client,
    request,
    async requestJson<T>(req: RawRequest): Promise<T> {
      const resp = await request(req);
      return JSON.parse(resp.body) as T;
    },
  };
}

/** `apiserver_request_total` and `etcd_requests_total` from the API server's own /metrics (admin credentials). */
export async function fetchApiServerRequests(client: KubeClient): Promise<Sample[]> {
  const resp = await client.request({ path: '/metrics', headers: { Accept: 'text/plain' } });
  return parsePrometheus(resp.body, (name) => name === 'apiserver_request_total' || name === 'etcd_requests_total');
}

/**
 * What reached etcd as writes (`create`/`update`/`delete` of etcd_requests_total) on the controller's
 * resources, by `operation resource`. A server-side apply that changes nothing is answered without an
 * etcd write, so APPLY requests minus etcd updates are no-op writes.
 */
export function etcdWrites(diff: readonly Sample[]): Record<string, number> {
  return sortKeys(
    totalBy(
      diff,
      'etcd_requests_total',
      ['operation', 'resource'],
      (l) => ['create', 'update', 'delete'].includes(l.operation ?? '') && CONTROLLER_RESOURCES.has(l.resource ?? ''),
    ),
  );
}

/** The bench's own requests as the etcd writes they cause (a create per POST, an update per PATCH). */
export function benchEtcdWrites(own: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(own)) {
    const [verb = '', resource = ''] = k.split(' ');
    const op =
      verb === 'POST'
        ? 'create'
        : verb === 'PATCH' || verb === 'APPLY' || verb === 'PUT'
          ? 'update'
          : verb === 'DELETE'
            ? 'delete'
            : undefined;
    if (op) out[`${op} ${resource}`] = (out[`${op} ${resource}`] ?? 0) + v;
  }
  return out;
}

/**
 * API server requests by `VERB resource[/subresource]` on the controller's resources, from a diff of
 * `apiserver_request_total`. WATCH is counted by the API server when a watch ends, so it says little here.
 */
export function apiServerByVerb(diff: readonly Sample[]): Record<string, number> {
  const raw = totalBy(diff, 'apiserver_request_total', ['verb', 'resource', 'subresource'], (l) =>
    CONTROLLER_RESOURCES.has(l.subresource ? `${l.resource ?? ''}/${l.subresource}` : (l.resource ?? '')),
  );
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(raw)) {
    const [verb = '', resource = '', sub = ''] = k.split(' ');
    const key = `${verb} ${sub ? `${resource}/${sub}` : resource}`;
    out[key] = (out[key] ?? 0) + v;
  }
  return sortKeys(out);
}

/** a − b per key, zeros dropped (API server counts minus the bench's own). */
export function subtractCounts(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const v = (a[key] ?? 0) - (b[key] ?? 0);
    if (v !== 0) out[key] = v;
  }
  return sortKeys(out);
}

/** The sum of the counts whose verb (the first word of the key) is a write. */
export function writesIn(counts: Readonly<Record<string, number>>): number {
  let sum = 0;
  for (const [k, v] of Object.entries(counts)) if (WRITE_VERBS.has(k.split(' ')[0] ?? '')) sum += v;
  return sum;
}

export function sortKeys(o: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}
