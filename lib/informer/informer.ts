import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client.js';
import { realClock, sleep } from '../clock/index.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import { apiError, isGone, statusException } from '../kube/errors.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { Backoff } from '../backoff/index.js';
import { kubeListWatch } from './source.js';
import type { ListPage, ListWatchSource, WatchEvent } from './source.js';
import { ObjectStore, deepFreeze, objectKey } from './store.js';
import type { Store } from './store.js';
import type {
  Informer,
  InformerHandlers,
  InformerHooks,
  InformerOptions,
  RelistReason,
  WatchRestartReason,
} from './types.js';

const SHORT_WATCH_MS = 1000;

/**
 * Our own reflector (client-node's ListWatch stops on most errors): list with pagination, then watch from
 * the list's resourceVersion with bookmarks and a randomized server-side timeout, tracking the last
 * resourceVersion of every event and bookmark.
 * - watch ended by the server → watch again from the last resourceVersion;
 * - 410 Gone (HTTP status or ERROR event) → relist;
 * - any other error (connection refused, TLS, 5xx, 429, undecodable stream, exception while authenticating)
 *   → exponential backoff with jitter, then try again; it never stops until `stop()`;
 * - watchdog: no event or bookmark for `watchdogMs` → abort the watch and relist;
 * - periodic relist reconciles the store (emits adds, updates and deletes for what changed);
 * - periodic resync re-emits updates for level-based reconcilers.
 */
export function createInformer<T extends KubernetesObject>(opts: InformerOptions<T>): Informer<T> {
  return new ReflectingInformer(opts);
}

class ReflectingInformer<T extends KubernetesObject> implements Informer<T> {
  readonly name: string;
  private readonly objects: ObjectStore<T>;
  private readonly source: ListWatchSource<T>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: Logger;
  private readonly hooks: InformerHooks;
  private readonly backoff: Backoff;
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly stopCtl = new AbortController();
  private readonly syncWaiters = new Set<(synced: boolean) => void>();
  private readonly pageSize: number;
  private readonly listTimeoutMs: number;
  private readonly resyncPeriodMs: number;
  private readonly relistPeriodMs: number;
  private readonly watchdogMs: number;
  private readonly watchTimeout: readonly [number, number];
  private readonly freeze: boolean;

  private running: Promise<void> | undefined;
  private stopped = false;
  private lastRV: string | undefined;
  private needList = true;
  private consecutiveGone = 0;
  private watchCtl: AbortController | undefined;
  private watchAbortReason: 'watchdog' | 'relist' | undefined;
  private relistTimer: TimerHandle | undefined;
  private resyncTimer: TimerHandle | undefined;

  constructor(private readonly opts: InformerOptions<T>) {
    if (opts.source === undefined && opts.client === undefined)
      throw new Error('createInformer: give a client or a source');
    this.name = opts.name ?? opts.plural ?? opts.kind.toLowerCase();
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.log = (opts.logger ?? silentLogger).child({ informer: this.name });
    this.hooks = opts.hooks ?? {};
    this.backoff = new Backoff(opts.backoff ?? {}, this.clock, this.random);
    this.pageSize = opts.pageSize ?? 500;
    this.listTimeoutMs = opts.listTimeoutMs ?? 60_000;
    this.resyncPeriodMs = opts.resyncPeriodMs ?? 0;
    this.relistPeriodMs = opts.relistPeriodMs ?? 30 * 60_000;
    this.watchdogMs = opts.watchdogMs ?? 5 * 60_000;
    this.watchTimeout = opts.watchTimeoutSeconds ?? [300, 600];
    this.freeze = opts.freeze ?? true;
    this.objects = new ObjectStore<T>(opts.indexers ?? {}, (index, key, error) =>
      this.log.error('index function threw; object not indexed', { index, key, error }),
    );
    this.source =
      opts.source ??
      kubeListWatch<T>(opts.client as KubeClient, {
        apiVersion: opts.apiVersion,
        kind: opts.kind,
        ...(opts.plural !== undefined ? { plural: opts.plural } : {}),
        ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
        ...(opts.labelSelector !== undefined ? { labelSelector: opts.labelSelector } : {}),
        ...(opts.fieldSelector !== undefined ? { fieldSelector: opts.fieldSelector } : {}),
        ...(opts.metadataOnly !== undefined ? { metadataOnly: opts.metadataOnly } : {}),
      });
  }

  get store(): Store<T> {
    return this.objects;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.objects.get(namespace, name);
  }

  list(namespace?: string): T[] {
    return this.objects.list(namespace);
  }

  byIndex(index: string, value: string): T[] {
    return this.objects.byIndex(index, value);
  }

  byOwner(uid: string): T[] {
    return this.objects.byOwner(uid);
  }

  hasSynced(): boolean {
    return this.objects.hasSynced();
  }

  lastResourceVersion(): string | undefined {
    return this.lastRV;
  }

  addHandlers(handlers: InformerHandlers<T>): () => void {
    this.handlers.add(handlers);
    if (this.objects.hasSynced())
      for (const obj of this.objects.list()) this.call('onAdd', () => handlers.onAdd?.(obj));
    return () => {
      this.handlers.delete(handlers);
    };
  }

  start(): Promise<void> {
    if (this.running === undefined && !this.stopped) {
      this.running = this.run().catch((error: unknown) => {
        // run() handles its own errors; this is a last line of defence against an unhandled rejection.
        this.log.error('informer loop ended unexpectedly', { error });
      });
    }
    return this.waitForSync().then(() => undefined);
  }

  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.objects.hasSynced()) return Promise.resolve(true);
    if (this.stopped || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = (synced: boolean): void => {
        this.syncWaiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve(synced);
      };
      const onAbort = (): void => done(false);
      this.syncWaiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.stopCtl.abort();
      this.watchCtl?.abort();
      this.clearTimer('relistTimer');
      this.clearTimer('resyncTimer');
      for (const waiter of [...this.syncWaiters]) waiter(false);
    }
    await this.running;
  }

  // ---- the reflector loop ----

  private async run(): Promise<void> {
    while (!this.stopped) {
      let phase: 'list' | 'watch' = 'list';
      try {
        if (this.needList) await this.listAndReplace();
        if (this.stopped) break;
        phase = 'watch';
        const outcome = await this.watchOnce();
        if (this.stopped) break;
        this.hook(() => this.hooks.onWatchRestart?.(outcome));
        this.log.debug('watch ended', { reason: outcome, resourceVersion: this.lastRV });
      } catch (error) {
        if (this.stopped) break;
        if (isGone(error)) {
          // The resourceVersion (or a continue token) is too old: relist. Back off only if this keeps happening
          // without the watch delivering anything in between.
          this.consecutiveGone++;
          if (phase === 'watch') this.hook(() => this.hooks.onWatchRestart?.('expired'));
          this.requestRelist('expired');
          this.log.info('resource version expired; relisting', {
            resourceVersion: this.lastRV,
            message: apiError(error).message,
          });
          if (this.consecutiveGone > 1) await sleep(this.clock, this.backoff.next(), this.stopCtl.signal);
          continue;
        }
        const delayMs = this.backoff.next();
        if (phase === 'watch') this.hook(() => this.hooks.onWatchRestart?.('error'));
        const info = apiError(error);
        this.log.warn(`${phase} failed; retrying`, {
          code: info.code,
          reason: info.reason,
          message: info.message,
          delayMs,
        });
        await sleep(this.clock, delayMs, this.stopCtl.signal);
      }
    }
  }

  private async listAndReplace(): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion: string;
    do {
      const page = await this.listPage(cont);
      if (this.stopped) return;
      for (const item of page.items) items.push(this.prepare(item));
      resourceVersion = page.resourceVersion;
      cont = page.continue || undefined;
    } while (cont !== undefined);

    const diff = this.objects.replace(items);
    this.lastRV = resourceVersion;
    this.needList = false;
    const firstSync = !this.objects.hasSynced();
    this.log.debug('listed', {
      items: items.length,
      resourceVersion,
      added: diff.added.length,
      updated: diff.updated.length,
      deleted: diff.deleted.length,
    });
    if (firstSync) this.objects.markSynced();
    for (const obj of diff.added) this.emitAdd(obj);
    for (const { oldObj, newObj } of diff.updated) this.emitUpdate(oldObj, newObj, false);
    for (const obj of diff.deleted) this.emitDelete(obj, true);
    if (firstSync) {
      for (const waiter of [...this.syncWaiters]) waiter(true);
      this.scheduleResync();
    }
    this.scheduleRelist();
  }

  // One page, aborted by stop() or after listTimeoutMs (undici's own timeouts are 5 min).
  private async listPage(cont: string | undefined): Promise<ListPage<T>> {
    const ctl = new AbortController();
    const onStop = (): void => ctl.abort();
    this.stopCtl.signal.addEventListener('abort', onStop, { once: true });
    let timedOut = false;
    const timer = this.clock.setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, this.listTimeoutMs);
    try {
      return await this.source.list({
        limit: this.pageSize,
        signal: ctl.signal,
        ...(cont !== undefined ? { continue: cont } : {}),
      });
    } catch (error) {
      if (timedOut) throw new Error(`list timed out after ${this.listTimeoutMs} ms`, { cause: error });
      throw error;
    } finally {
      this.clock.clearTimeout(timer);
      this.stopCtl.signal.removeEventListener('abort', onStop);
    }
  }

  private async watchOnce(): Promise<WatchRestartReason> {
    const ctl = new AbortController();
    this.watchCtl = ctl;
    this.watchAbortReason = undefined;
    let watchError: unknown;
    let received = 0;
    const startedAt = this.clock.now();
    let watchdog: TimerHandle | undefined;
    const armWatchdog = (): void => {
      if (watchdog !== undefined) this.clock.clearTimeout(watchdog);
      if (this.watchdogMs > 0) {
        watchdog = this.clock.setTimeout(() => {
          this.log.warn('watch silent for too long; relisting', { watchdogMs: this.watchdogMs });
          this.requestRelist('watchdog');
        }, this.watchdogMs);
      }
    };
    const onEvent = (event: WatchEvent<T>): void => {
      if (ctl.signal.aborted) return;
      armWatchdog();
      if (event.type === 'ERROR') {
        watchError = statusException(event.object);
        ctl.abort();
        return;
      }
      received++;
      this.consecutiveGone = 0;
      this.handleEvent(event);
    };
    const [min, max] = this.watchTimeout;
    const timeoutSeconds = Math.floor(min + this.random() * Math.max(0, max - min));
    armWatchdog();
    try {
      await this.source.watch(
        {
          ...(this.lastRV ? { resourceVersion: this.lastRV } : {}),
          timeoutSeconds,
          allowWatchBookmarks: true,
          signal: ctl.signal,
        },
        onEvent,
      );
    } catch (error) {
      if (watchError === undefined && this.watchAbortReason === undefined && !this.stopped) throw error;
    } finally {
      if (watchdog !== undefined) this.clock.clearTimeout(watchdog);
      this.watchCtl = undefined;
    }
    if (watchError !== undefined) throw watchError;
    if (this.watchAbortReason !== undefined) return this.watchAbortReason;
    if (received === 0 && this.clock.now() - startedAt < SHORT_WATCH_MS) {
      throw new Error('watch closed immediately without any event');
    }
    return 'closed';
  }

  private handleEvent(event: WatchEvent<T>): void {
    switch (event.type) {
      case 'BOOKMARK': {
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.lastRV = rv;
        return;
      }
      case 'ADDED':
      case 'MODIFIED': {
        const obj = this.prepare(event.object);
        this.advance(obj);
        const old = this.objects.upsert(obj);
        if (old === undefined) this.emitAdd(obj);
        else this.emitUpdate(old, obj, false);
        return;
      }
      case 'DELETED': {
        const obj = this.prepare(event.object);
        this.advance(obj);
        this.objects.remove(objectKey(obj));
        this.emitDelete(obj, false);
        return;
      }
      default:
        this.log.warn('ignoring watch event of unknown type', { type: (event as { type: unknown }).type });
    }
  }

  private advance(obj: T): void {
    const rv = obj.metadata?.resourceVersion;
    if (rv) this.lastRV = rv;
  }

  /** Asks for a relist: sets the flag, reports it once, and aborts a running watch. */
  private requestRelist(reason: RelistReason): void {
    if (this.stopped) return;
    if (!this.needList) {
      this.needList = true;
      this.hook(() => this.hooks.onRelist?.(reason));
    }
    if (this.watchCtl !== undefined && !this.watchCtl.signal.aborted) {
      this.watchAbortReason = reason === 'watchdog' ? 'watchdog' : 'relist';
      this.watchCtl.abort();
    }
  }

  private scheduleRelist(): void {
    this.clearTimer('relistTimer');
    if (this.relistPeriodMs <= 0 || this.stopped) return;
    this.relistTimer = this.clock.setTimeout(() => {
      this.relistTimer = undefined;
      this.requestRelist('periodic');
    }, this.relistPeriodMs);
  }

  private scheduleResync(): void {
    this.clearTimer('resyncTimer');
    if (this.resyncPeriodMs <= 0 || this.stopped) return;
    this.resyncTimer = this.clock.setTimeout(() => {
      this.resyncTimer = undefined;
      for (const obj of this.objects.list()) this.emitUpdate(obj, obj, true);
      this.scheduleResync();
    }, this.resyncPeriodMs);
  }

  private clearTimer(which: 'relistTimer' | 'resyncTimer'): void {
    const handle = this[which];
    if (handle !== undefined) this.clock.clearTimeout(handle);
    this[which] = undefined;
  }

  // Items of a list carry no apiVersion/kind for built-in types; fill them in so every object is self-describing.
  private prepare(obj: T): T {
    const o = obj as T & { apiVersion?: string; kind?: string };
    if (o.apiVersion === undefined) o.apiVersion = this.opts.apiVersion;
    if (o.kind === undefined) o.kind = this.opts.kind;
    const kept = this.opts.transform ? this.opts.transform(obj) : obj;
    return this.freeze ? deepFreeze(kept) : kept;
  }

  // ---- dispatch ----

  private emitAdd(obj: T): void {
    for (const h of this.handlers) this.call('onAdd', () => h.onAdd?.(obj));
  }

  private emitUpdate(oldObj: T, newObj: T, resync: boolean): void {
    for (const h of this.handlers) this.call('onUpdate', () => h.onUpdate?.(oldObj, newObj, { resync }));
  }

  private emitDelete(obj: T, finalStateUnknown: boolean): void {
    for (const h of this.handlers) this.call('onDelete', () => h.onDelete?.(obj, { finalStateUnknown }));
  }

  private call(what: string, fn: () => void | Promise<void>): void {
    try {
      const result = fn();
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error: unknown) =>
          this.log.error(`${what} handler failed`, { error }),
        );
      }
    } catch (error) {
      this.log.error(`${what} handler threw`, { error });
    }
  }

  private hook(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.log.warn('informer hook threw', { error });
    }
  }
}
