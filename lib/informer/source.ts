import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client.js';
import type { StatusLike } from '../kube/errors.js';

/** One page of a list. */
export interface ListPage<T> {
  readonly items: readonly T[];
  /** The list's resourceVersion (meaningful on the last page). */
  readonly resourceVersion: string;
  /** Continue token; absent or '' on the last page. */
  readonly continue?: string;
}

export interface ListOptions {
  readonly limit?: number;
  readonly continue?: string;
  readonly signal?: AbortSignal;
}

export interface WatchOptions {
  /** Start after this resourceVersion. */
  readonly resourceVersion?: string;
  /** Server-side timeout: the server ends the watch normally after this long. */
  readonly timeoutSeconds: number;
  readonly allowWatchBookmarks: boolean;
  /** Aborting ends the watch; `watch()` then rejects. */
  readonly signal: AbortSignal;
}

export interface BookmarkObject {
  readonly kind?: string;
  readonly apiVersion?: string;
  readonly metadata: { readonly resourceVersion: string; readonly annotations?: Readonly<Record<string, string>> };
}

/** A decoded watch event (the shape of the API server's watch stream). */
export type WatchEvent<T> =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: T }
  | { readonly type: 'BOOKMARK'; readonly object: BookmarkObject }
  | { readonly type: 'ERROR'; readonly object: StatusLike };

/**
 * The transport an informer lists and watches through. The Kubernetes implementation is `kubeListWatch`;
 * unit tests inject a fake. The informer takes ownership of the objects it is given: it fills in
 * apiVersion/kind and deep-freezes them, so a source must hand over fresh objects (e.g. parsed JSON).
 */
export interface ListWatchSource<T> {
  /** One page. Errors (ApiException for HTTP errors, anything else for transport errors) reject. */
  list(opts: ListOptions): Promise<ListPage<T>>;
  /**
   * Streams events to `onEvent` until the server ends the watch (resolves) or it fails or is aborted
   * (rejects). ERROR events are passed to `onEvent` like any other.
   */
  watch(opts: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<void>;
}

export interface ResourceTarget {
  readonly apiVersion: string;
  readonly kind: string;
  /** Resource plural (e.g. `configmaps`); discovered from the API server when absent. */
  readonly plural?: string;
  /** Watch one namespace; undefined: all namespaces (or a cluster-scoped kind). */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /**
   * List and watch metadata only (`PartialObjectMetadata`, as controller-runtime's metadata-only
   * watches): each object arrives as its `metadata`, with the target's apiVersion and kind. What
   * knowing the names (and owners) of every object of a type costs: no spec, data or status travels.
   */
  readonly metadataOnly?: boolean;
}

/** Accept headers of a metadata-only list and watch (the API server's `as=` conversion). */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
export const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

interface APIResourceList {
  readonly resources?: readonly { readonly name: string; readonly kind: string; readonly namespaced: boolean }[];
}

interface ListBody<T> {
  readonly items?: T[] | null;
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
}

/** List and watch `target` through the client's shared connection pool, with raw requests. */
export function kubeListWatch<T extends KubernetesObject>(
  client: KubeClient,
  target: ResourceTarget,
): ListWatchSource<T> {
  const groupPath = target.apiVersion.includes('/') ? `/apis/${target.apiVersion}` : `/api/${target.apiVersion}`;
  let resolved: string | undefined;

  const resourcePath = async (signal?: AbortSignal): Promise<string> => {
    if (resolved !== undefined) return resolved;
    let plural = target.plural;
    if (plural === undefined) {
      // Discovery; not cached on failure, so a CRD installed later is found on the next attempt.
      const list = await client.requestJson<APIResourceList>({ path: groupPath, ...(signal ? { signal } : {}) });
      const res = list.resources?.find((r) => r.kind === target.kind && !r.name.includes('/'));
      if (res === undefined) throw new Error(`informer: ${target.apiVersion} has no resource of kind ${target.kind}`);
      plural = res.name;
    }
    const ns = target.namespace ? `/namespaces/${encodeURIComponent(target.namespace)}` : '';
    resolved = `${groupPath}${ns}/${plural}`;
    return resolved;
  };

  const selectors = {
    labelSelector: target.labelSelector || undefined,
    fieldSelector: target.fieldSelector || undefined,
  };
  const metadataOnly = target.metadataOnly === true;
  // A PartialObjectMetadata says kind PartialObjectMetadata: it is told what it is the metadata of.
  const asTarget = (o: T): T => {
    if (metadataOnly) Object.assign(o, { apiVersion: target.apiVersion, kind: target.kind });
    return o;
  };

  return {
    async list(opts: ListOptions): Promise<ListPage<T>> {
      const path = await resourcePath(opts.signal);
      const body = await client.requestJson<ListBody<T>>({
        path,
        query: { ...selectors, limit: opts.limit, continue: opts.continue || undefined },
        ...(metadataOnly ? { headers: { Accept: METADATA_LIST_ACCEPT } } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      return {
        items: (body.items ?? []).map(asTarget),
        resourceVersion: body.metadata?.resourceVersion ?? '',
        ...(body.metadata?.continue ? { continue: body.metadata.continue } : {}),
      };
    },

    async watch(opts: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<void> {
      const path = await resourcePath(opts.signal);
      const resp = await client.stream({
        path,
        query: {
          ...selectors,
          watch: 'true',
          resourceVersion: opts.resourceVersion || undefined,
          allowWatchBookmarks: opts.allowWatchBookmarks ? 'true' : undefined,
          timeoutSeconds: opts.timeoutSeconds,
        },
        ...(metadataOnly ? { headers: { Accept: METADATA_WATCH_ACCEPT } } : {}),
        signal: opts.signal,
      });
      const deliver = (event: WatchEvent<T>): void => {
        if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') asTarget(event.object);
        onEvent(event);
      };
      resp.setEncoding('utf8');
      let buffered = '';
      try {
        for await (const chunk of resp) {
          buffered += chunk as string;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line !== '') deliver(parseEvent<T>(line));
          }
        }
        const rest = buffered.trim();
        if (rest !== '') deliver(parseEvent<T>(rest));
      } finally {
        resp.destroy();
      }
    },
  };
}

function parseEvent<T>(line: string): WatchEvent<T> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new Error(`informer: undecodable watch event (${line.length} bytes)`);
  }
  const ev = parsed as { type?: unknown; object?: unknown };
  if (typeof ev.type !== 'string' || typeof ev.object !== 'object' || ev.object === null) {
    throw new Error('informer: watch event without type or object');
  }
  return ev as WatchEvent<T>;
}
