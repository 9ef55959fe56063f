import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client.js';
import type { Clock } from '../clock/index.js';
import type { Logger } from '../observability/logger.js';
import type { BackoffOptions } from '../backoff/index.js';
import type { ListWatchSource, ResourceTarget } from './source.js';
import type { IndexFunc, Store } from './store.js';

// The informer's public contract; the reflector that implements it is in informer.ts.

/** Why a watch was started again (for `recon8s_watch_restarts_total{reason}`). */
export type WatchRestartReason =
  /** The server ended the watch normally (its timeoutSeconds). */
  | 'closed'
  /** The watch failed (connection refused/reset, TLS, 5xx, 429, undecodable stream, ...). */
  | 'error'
  /** 410 Gone / Expired: the resourceVersion is too old; a relist follows. */
  | 'expired'
  /** Nothing arrived for `watchdogMs`; a relist follows. */
  | 'watchdog'
  /** Aborted for a periodic relist. */
  | 'relist';

/** Why a full list was done again after the first one (for `recon8s_watch_relists_total{reason}`). */
export type RelistReason = 'expired' | 'watchdog' | 'periodic';

/** Observation hooks (wired to metrics by the caller). A hook that throws is logged and ignored. */
export interface InformerHooks {
  onWatchRestart?(reason: WatchRestartReason): void;
  onRelist?(reason: RelistReason): void;
}

export interface UpdateInfo {
  /** True for a periodic resync (old and new are the same object). */
  readonly resync: boolean;
}

export interface DeleteInfo {
  /**
   * True when the delete was discovered by a relist (missed while disconnected): the object is the last
   * version this informer saw, not necessarily the final state (client-go's DeletedFinalStateUnknown).
   */
  readonly finalStateUnknown: boolean;
}

/**
 * Event handlers. Called synchronously, in event order, with frozen objects (see `Store`). A handler may
 * return a promise; rejections and exceptions are logged, never propagated, and never stop the informer.
 */
export interface InformerHandlers<T> {
  onAdd?(obj: T): void | Promise<void>;
  onUpdate?(oldObj: T, newObj: T, info: UpdateInfo): void | Promise<void>;
  /** `obj` is the deleted object's final state from the watch, or its last known state (see DeleteInfo). */
  onDelete?(obj: T, info: DeleteInfo): void | Promise<void>;
}

/** What to watch (apiVersion, kind, plural, namespace, selectors), and how. */
export interface InformerOptions<T extends KubernetesObject> extends ResourceTarget {
  /** The shared client; required unless `source` is given. */
  readonly client?: KubeClient;
  /** Inject the list/watch transport (unit tests); default `kubeListWatch(client, ...)`. */
  readonly source?: ListWatchSource<T>;
  /** Name in logs; default the plural or lower-cased kind. */
  readonly name?: string;
  /** List page size (`limit`); default 500. */
  readonly pageSize?: number;
  /** A list page that takes longer than this is aborted and retried with backoff; default 60 s. */
  readonly listTimeoutMs?: number;
  /** Re-emit `onUpdate(obj, obj, {resync: true})` for every object this often; 0 (default) = never. */
  readonly resyncPeriodMs?: number;
  /** Full relist this often, reconciling the store (adds/updates/deletes); default 30 min; 0 = never. */
  readonly relistPeriodMs?: number;
  /**
   * Abort the watch and relist when no event or bookmark arrived for this long; default 5 min; 0 = off.
   * The API server sends a bookmark about once a minute to every watch that asked for bookmarks.
   */
  readonly watchdogMs?: number;
  /** Server-side watch timeout range in seconds, chosen at random per watch; default [300, 600] (client-go). */
  readonly watchTimeoutSeconds?: readonly [number, number];
  readonly backoff?: BackoffOptions;
  /** Extra indexes (the `owner` index is always there). */
  readonly indexers?: Readonly<Record<string, IndexFunc<T>>>;
  /**
   * Applied to every object before it enters the store (e.g. dropping what no reader needs, as
   * controller-runtime's cache transforms do); it may change the object it is given.
   */
  readonly transform?: (obj: T) => T;
  /** Deep-freeze objects entering the store; default true. */
  readonly freeze?: boolean;
  readonly logger?: Logger;
  readonly hooks?: InformerHooks;
  readonly clock?: Clock;
  readonly random?: () => number;
}

/** A reflector + store + event handlers for one resource (see createInformer). */
export interface Informer<T extends KubernetesObject> {
  readonly name: string;
  readonly store: Store<T>;
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string): T[];
  byIndex(index: string, value: string): T[];
  byOwner(uid: string): T[];
  hasSynced(): boolean;
  /** Registers handlers; returns a function that removes them. Handlers added after the first sync get `onAdd` for every stored object at once. */
  addHandlers(handlers: InformerHandlers<T>): () => void;
  /** Starts list+watch (once); resolves when the first list is in the store, or when stopped before that (see hasSynced). Never rejects. */
  start(): Promise<void>;
  /** Resolves true once synced; false if stopped (or `signal` aborted) first. */
  waitForSync(signal?: AbortSignal): Promise<boolean>;
  /** Aborts the in-flight list/watch and every timer; resolves when the loop has ended. Idempotent. */
  stop(): Promise<void>;
  /** The resourceVersion the next watch starts from. */
  lastResourceVersion(): string | undefined;
}
