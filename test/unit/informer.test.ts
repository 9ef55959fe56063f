import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import type { V1ConfigMap, V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { ManualClock } from '../support/manual-clock.js';
import { Backoff, createInformer } from '../../lib/informer/index.js';
import { ownershipMetadata, withoutManagedFields } from '../../lib/controller/watches.js';
import type {
  Informer,
  InformerOptions,
  ListOptions,
  ListPage,
  ListWatchSource,
  WatchEvent,
  WatchOptions,
} from '../../lib/informer/index.js';

/* A fake API server for one resource: a versioned object map, pages, and controllable watch streams. */

interface FakeWatch {
  readonly opts: WatchOptions;
  readonly onEvent: (e: WatchEvent<V1ConfigMap>) => void;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  done: boolean;
}

class FakeServer {
  rv = 100;
  readonly objects = new Map<string, V1ConfigMap>();
  readonly watches: FakeWatch[] = [];
  listCalls: ListOptions[] = [];
  watchAttempts = 0;
  /** Errors thrown by the next list calls, in order. */
  listErrors: unknown[] = [];
  /** Errors thrown when the next watches are opened, in order. */
  watchErrors: unknown[] = [];
  /** A watch from a resourceVersion below this gets an ERROR 410 event (compaction). */
  compactedBelow = 0;

  readonly source: ListWatchSource<V1ConfigMap> = {
    list: async (opts: ListOptions): Promise<ListPage<V1ConfigMap>> => {
      this.listCalls.push(opts);
      await Promise.resolve();
      const err = this.listErrors.shift();
      if (err !== undefined) throw err;
      const all = [...this.objects.values()].sort((a, b) =>
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
      );
      const start = opts.continue ? Number(opts.continue) : 0;
      const limit = opts.limit ?? all.length;
      const items = all.slice(start, start + limit).map((o) => structuredClone(o));
      const next = start + limit < all.length ? String(start + limit) : undefined;
      return { items, resourceVersion: String(this.rv), ...(next !== undefined ? { continue: next } : {}) };
    },
    watch: (opts: WatchOptions, onEvent: (e: WatchEvent<V1ConfigMap>) => void): Promise<void> => {
      this.watchAttempts++;
      const err = this.watchErrors.shift();
      if (err !== undefined) return Promise.reject(err);
      return new Promise<void>((resolve, reject) => {
        const w: FakeWatch = { opts, onEvent, resolve, reject, done: false };
        this.watches.push(w);
        opts.signal.addEventListener(
          'abort',
          () => {
            w.done = true;
            reject(new DOMException('This operation was aborted', 'AbortError'));
          },
          { once: true },
        );
        if (opts.resourceVersion !== undefined && Number(opts.resourceVersion) < this.compactedBelow) {
          queueMicrotask(() =>
            onEvent({
              type: 'ERROR',
              object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' },
            }),
          );
        }
      });
    },
  };

  get active(): FakeWatch | undefined {
    return this.watches.filter((w) => !w.done).at(-1);
  }

  private emit(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: V1ConfigMap): void {
    for (const w of this.watches) if (!w.done) w.onEvent({ type, object: structuredClone(obj) });
  }

  put(
    name: string,
    data: Record<string, string>,
    opts: { silent?: boolean; owner?: string; managedFields?: V1ManagedFieldsEntry[] } = {},
  ): void {
    const existed = this.objects.has(name);
    const obj: V1ConfigMap = {
      metadata: {
        name,
        namespace: 'ns',
        uid: `uid-${name}`,
        resourceVersion: String(++this.rv),
        ...(opts.owner
          ? {
              ownerReferences: [
                { apiVersion: 'recon8s.dev/v1alpha1', kind: 'App', name: 'o', uid: opts.owner, controller: true },
              ],
            }
          : {}),
        ...(opts.managedFields ? { managedFields: opts.managedFields } : {}),
      },
      data,
    };
    this.objects.set(name, obj);
    if (!opts.silent) this.emit(existed ? 'MODIFIED' : 'ADDED', obj);
  }

  del(name: string, opts: { silent?: boolean } = {}): void {
    const obj = this.objects.get(name);
    if (obj === undefined) return;
    this.objects.delete(name);
    const deleted = structuredClone(obj);
    deleted.metadata = { ...deleted.metadata, resourceVersion: String(++this.rv) };
    if (!opts.silent) this.emit('DELETED', deleted);
  }

  bookmark(rv = ++this.rv): void {
    for (const w of this.watches)
      if (!w.done)
        w.onEvent({
          type: 'BOOKMARK',
          object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } },
        });
  }

  endWatch(): void {
    const w = this.active;
    if (w === undefined) throw new Error('no active watch');
    w.done = true;
    w.resolve();
  }

  failWatch(e: unknown): void {
    const w = this.active;
    if (w === undefined) throw new Error('no active watch');
    w.done = true;
    w.reject(e);
  }
}

interface Recorded {
  readonly events: string[];
  readonly restarts: string[];
  readonly relists: string[];
}

function setup(overrides: Partial<InformerOptions<V1ConfigMap>> = {}): {
  server: FakeServer;
  clock: ManualClock;
  informer: Informer<V1ConfigMap>;
  rec: Recorded;
} {
  const server = new FakeServer();
  const clock = new ManualClock();
  const rec: Recorded = { events: [], restarts: [], relists: [] };
  const informer = createInformer<V1ConfigMap>({
    source: server.source,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    clock,
    random: () => 0.5,
    watchdogMs: 0,
    relistPeriodMs: 0,
    hooks: { onWatchRestart: (r) => rec.restarts.push(r), onRelist: (r) => rec.relists.push(r) },
    ...overrides,
  });
  informer.addHandlers({
    onAdd: (o) => {
      rec.events.push(`add ${o.metadata?.name}`);
    },
    onUpdate: (_o, n, info) => {
      rec.events.push(`${info.resync ? 'resync' : 'update'} ${n.metadata?.name}=${n.data?.v ?? ''}`);
    },
    onDelete: (o, info) => {
      rec.events.push(`delete ${o.metadata?.name}${info.finalStateUnknown ? ' (unknown)' : ''}`);
    },
  });
  return { server, clock, informer, rec };
}

const connRefused = (): Error =>
  Object.assign(new TypeError('fetch failed'), {
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }),
  });

describe('informer (fake list/watch, manual clock)', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };
  let current: Informer<V1ConfigMap> | undefined;
  before(() => process.on('unhandledRejection', onUnhandled));
  after(() => process.off('unhandledRejection', onUnhandled));
  afterEach(async () => {
    await current?.stop();
    current = undefined;
    // give any stray rejection a chance to surface
    await new Promise<void>((r) => setImmediate(r));
    assert.deepEqual(unhandled.splice(0), [], 'no unhandled rejections');
  });

  it('lists with pagination, syncs, then watches from the list resourceVersion with bookmarks and a 5-10 min timeout', async () => {
    const { server, informer, rec } = setup({ pageSize: 2 });
    current = informer;
    for (const n of ['a', 'b', 'c', 'd', 'e']) server.put(n, { v: '1' });
    const listRv = String(server.rv);
    await informer.start();
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(
      server.listCalls.map((c) => [c.limit, c.continue]),
      [
        [2, undefined],
        [2, '2'],
        [2, '4'],
      ],
    );
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
      ['a', 'b', 'c', 'd', 'e'],
    );
    assert.deepEqual(rec.events, ['add a', 'add b', 'add c', 'add d', 'add e']);
    await new Promise<void>((r) => setImmediate(r));
    const w = server.active;
    assert.ok(w);
    assert.equal(w.opts.resourceVersion, listRv);
    assert.equal(w.opts.allowWatchBookmarks, true);
    assert.ok(w.opts.timeoutSeconds >= 300 && w.opts.timeoutSeconds <= 600, `timeoutSeconds ${w.opts.timeoutSeconds}`);
  });

  it('applies add/update/delete events; delete carries the last object; stored objects are frozen and typed', async () => {
    const { server, clock, informer, rec } = setup();
    current = informer;
    await informer.start();
    await clock.flush();
    server.put('x', { v: '1' });
    server.put('x', { v: '2' });
    const beforeDelete = informer.get('ns', 'x');
    assert.equal(beforeDelete?.data?.v, '2');
    assert.equal(beforeDelete?.kind, 'ConfigMap');
    assert.equal(beforeDelete?.apiVersion, 'v1');
    assert.throws(() => {
      (beforeDelete as V1ConfigMap).data = {};
    }, TypeError);
    assert.throws(() => {
      ((beforeDelete as V1ConfigMap).data as Record<string, string>).v = '3';
    }, TypeError);
    let deleted: V1ConfigMap | undefined;
    informer.addHandlers({
      onDelete: (o) => {
        deleted = o;
      },
    });
    server.del('x');
    assert.equal(informer.get('ns', 'x'), undefined);
    assert.equal(deleted?.data?.v, '2');
    assert.deepEqual(rec.events, ['add x', 'update x=2', 'delete x']);
    assert.equal(informer.lastResourceVersion(), String(server.rv));
  });

  it('stores listed and watched objects through the transform (managedFields dropped), frozen after it', async () => {
    const { server, clock, informer } = setup({ transform: withoutManagedFields });
    current = informer;
    const managedFields = [{ manager: 'kubectl', operation: 'Apply' }];
    server.put('listed', { v: '1' }, { managedFields });
    await informer.start();
    await clock.flush();
    server.put('watched', { v: '1' }, { managedFields });
    server.put('watched', { v: '2' }, { managedFields });
    for (const name of ['listed', 'watched']) {
      const o = informer.get('ns', name);
      assert.ok(o, name);
      assert.equal(o.metadata?.managedFields, undefined, name);
      assert.ok(Object.isFrozen(o.metadata), name);
    }
    assert.equal(informer.get('ns', 'watched')?.data?.v, '2');
  });

  it("keeps of another's object only what the ownership check reads: identity, version and its controller", () => {
    const kept = ownershipMetadata({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'cm',
        namespace: 'ns',
        uid: 'u1',
        resourceVersion: '9',
        labels: { team: 'a' },
        annotations: { big: 'x'.repeat(1000) },
        managedFields: [{ manager: 'helm', operation: 'Apply' }],
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u2' },
          {
            apiVersion: 'apps/v1',
            kind: 'ReplicaSet',
            name: 'rs',
            uid: 'u3',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data: { v: '1' },
    } as V1ConfigMap);
    assert.deepEqual(kept, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'cm',
        namespace: 'ns',
        uid: 'u1',
        resourceVersion: '9',
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u3', controller: true }],
      },
    });
    const free: V1ConfigMap = ownershipMetadata<V1ConfigMap>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x', uid: 'u4' },
    });
    assert.equal(free.metadata?.ownerReferences, undefined, 'an object no one controls');
  });

  it('bookmarks advance the resourceVersion; a watch the server ends is resumed from it without a relist', async () => {
    const { server, clock, informer, rec } = setup();
    current = informer;
    await informer.start();
    await clock.flush();
    server.bookmark(500);
    assert.equal(informer.lastResourceVersion(), '500');
    server.endWatch();
    await clock.flush();
    assert.equal(server.active?.opts.resourceVersion, '500');
    assert.equal(server.listCalls.length, 1);
    assert.deepEqual(rec.restarts, ['closed']);
    assert.deepEqual(rec.relists, []);
  });

  it('410 Expired as an ERROR event → relist; deletes missed meanwhile are emitted with the last known object', async () => {
    const { server, clock, informer, rec } = setup();
    current = informer;
    server.put('keep', { v: '1' });
    server.put('gone', { v: '1' });
    await informer.start();
    await clock.flush();
    // While "disconnected": gone is deleted, keep changes, new appears — none of it seen by the watch.
    server.del('gone', { silent: true });
    server.put('keep', { v: '2' }, { silent: true });
    server.put('new', { v: '1' }, { silent: true });
    server.compactedBelow = server.rv;
    await clock.advance(2_000); // a watch that ends after a while is normal (not a "very short watch")
    server.endWatch();
    await clock.advance(10);
    assert.equal(server.listCalls.length, 2);
    assert.deepEqual(rec.relists, ['expired']);
    assert.ok(rec.restarts.includes('expired'));
    assert.deepEqual(rec.events.slice(2), ['add new', 'update keep=2', 'delete gone (unknown)']);
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
      ['keep', 'new'],
    );
    // and it watches again, from the new list's resourceVersion
    assert.equal(server.active?.opts.resourceVersion, String(server.rv));
  });

  it('410 as an HTTP status when opening the watch → relist', async () => {
    const { server, clock, informer, rec } = setup();
    current = informer;
    await informer.start();
    await clock.flush();
    server.watchErrors.push(
      new ApiException(410, 'Gone', JSON.stringify({ kind: 'Status', code: 410, reason: 'Gone', message: 'gone' }), {}),
    );
    server.bookmark();
    server.endWatch();
    await clock.advance(10);
    assert.equal(server.listCalls.length, 2);
    assert.deepEqual(rec.relists, ['expired']);
    assert.ok(server.active);
  });

  it('any other error → exponential backoff with jitter and retry, never stops', async () => {
    const { server, clock, informer, rec } = setup({ backoff: { initialMs: 800, maxMs: 30_000, jitter: 0 } });
    current = informer;
    await informer.start();
    await clock.flush();
    const errors: unknown[] = [
      connRefused(),
      new ApiException(
        500,
        'Internal',
        JSON.stringify({ kind: 'Status', code: 500, message: 'etcdserver: leader changed' }),
        {},
      ),
      new ApiException(429, 'TooManyRequests', '{"kind":"Status","code":429}', {}),
      new Error('x509: certificate signed by unknown authority'),
      new Error('ENOENT: open /var/run/secrets/kubernetes.io/serviceaccount/token'),
      connRefused(),
      connRefused(),
      connRefused(),
      connRefused(),
      connRefused(),
    ];
    server.watchErrors.push(...errors);
    server.failWatch(connRefused());
    // 11 failures in a row: the delays double from 800 ms and stay at the 30 s cap
    const expected = [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000, 30_000, 30_000];
    for (const delay of expected) {
      const attempts = server.watchAttempts;
      await clock.advance(delay - 1);
      assert.equal(server.watchAttempts, attempts, `no retry before ${delay} ms`);
      await clock.advance(1);
      assert.equal(server.watchAttempts, attempts + 1, `a retry after ${delay} ms`);
    }
    assert.ok(server.active, 'watching again after the errors');
    assert.equal(
      server.listCalls.length,
      1,
      'errors other than 410 re-watch from the last resourceVersion without a relist',
    );
    assert.equal(rec.restarts.filter((r) => r === 'error').length, 11);
    server.put('after', { v: '1' });
    assert.ok(informer.get('ns', 'after'));
  });

  it('list errors at start are retried with backoff; start() resolves after recovery', async () => {
    const { server, clock, informer } = setup({ backoff: { jitter: 0 } });
    current = informer;
    server.put('a', { v: '1' });
    server.listErrors.push(
      connRefused(),
      new ApiException(503, 'Unavailable', '', {}),
      new ApiException(403, 'Forbidden', '{"kind":"Status","code":403,"reason":"Forbidden"}', {}),
    );
    let synced = false;
    void informer.start().then(() => {
      synced = true;
    });
    await clock.advance(800 + 1600 + 3200 - 1);
    assert.equal(synced, false);
    await clock.advance(1);
    assert.equal(synced, true);
    assert.equal(server.listCalls.length, 4);
    assert.ok(informer.get('ns', 'a'));
  });

  it('a list that hangs is aborted after listTimeoutMs and retried', async () => {
    const server = new FakeServer();
    const clock = new ManualClock();
    let hung: AbortSignal | undefined;
    const source: ListWatchSource<V1ConfigMap> = {
      list: (o) => {
        if (hung === undefined) {
          hung = o.signal;
          return new Promise((_resolve, reject) =>
            o.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))),
          );
        }
        return server.source.list(o);
      },
      watch: (o, cb) => server.source.watch(o, cb),
    };
    const informer = createInformer<V1ConfigMap>({
      source,
      apiVersion: 'v1',
      kind: 'ConfigMap',
      clock,
      random: () => 0,
      watchdogMs: 0,
      relistPeriodMs: 0,
      listTimeoutMs: 10_000,
      backoff: { jitter: 0 },
    });
    current = informer;
    const started = informer.start();
    await clock.advance(9_999);
    assert.equal(hung?.aborted, false);
    await clock.advance(1);
    assert.equal(hung?.aborted, true);
    await clock.advance(800);
    await started;
    assert.equal(informer.hasSynced(), true);
  });

  it('an exception thrown synchronously by the transport is an error like any other', async () => {
    const server = new FakeServer();
    const clock = new ManualClock();
    let calls = 0;
    const source: ListWatchSource<V1ConfigMap> = {
      list: (o) => server.source.list(o),
      watch: (o, cb) => {
        calls++;
        if (calls <= 2) throw new Error('reading token: EACCES');
        return server.source.watch(o, cb);
      },
    };
    const informer = createInformer<V1ConfigMap>({
      source,
      apiVersion: 'v1',
      kind: 'ConfigMap',
      clock,
      random: () => 0,
      watchdogMs: 0,
      relistPeriodMs: 0,
      backoff: { jitter: 0 },
    });
    current = informer;
    await informer.start();
    await clock.advance(800 + 1600);
    assert.equal(calls, 3);
    assert.ok(server.active);
  });

  it('a watch that closes at once without events is backed off, not hot-looped', async () => {
    const { server, clock, informer, rec } = setup({ backoff: { jitter: 0 } });
    current = informer;
    await informer.start();
    await clock.flush();
    server.endWatch();
    await clock.flush();
    assert.equal(server.watches.length, 1);
    await clock.advance(800);
    assert.equal(server.watches.length, 2);
    assert.deepEqual(rec.restarts, ['error']);
  });

  it('watchdog: silence for watchdogMs aborts the watch and relists; events and bookmarks keep it quiet', async () => {
    const { server, clock, informer, rec } = setup({ watchdogMs: 60_000 });
    current = informer;
    await informer.start();
    await clock.flush();
    const first = server.active;
    await clock.advance(50_000);
    server.bookmark();
    await clock.advance(50_000);
    server.put('x', { v: '1' });
    await clock.advance(59_000);
    assert.equal(server.listCalls.length, 1);
    assert.equal(first?.opts.signal.aborted, false);
    await clock.advance(1_000);
    assert.equal(first?.opts.signal.aborted, true, 'the silent watch was aborted');
    assert.equal(server.listCalls.length, 2);
    assert.deepEqual(rec.relists, ['watchdog']);
    assert.deepEqual(rec.restarts, ['watchdog']);
    assert.ok(server.active && server.active !== first);
  });

  it('periodic relist reconciles the store, including deletes the watch never delivered', async () => {
    const { server, clock, informer, rec } = setup({ relistPeriodMs: 600_000 });
    current = informer;
    server.put('a', { v: '1' });
    server.put('b', { v: '1' });
    await informer.start();
    await clock.flush();
    server.del('b', { silent: true });
    await clock.advance(600_000);
    assert.equal(server.listCalls.length, 2);
    assert.deepEqual(rec.relists, ['periodic']);
    assert.deepEqual(rec.events, ['add a', 'add b', 'delete b (unknown)']);
    assert.equal(informer.get('ns', 'b'), undefined);
    await clock.advance(600_000);
    assert.equal(server.listCalls.length, 3, 'and again one period later');
    assert.deepEqual(rec.events.length, 3, 'an unchanged relist emits nothing');
  });

  it('periodic resync re-emits update for every object', async () => {
    const { server, clock, informer, rec } = setup({ resyncPeriodMs: 30_000 });
    current = informer;
    server.put('a', { v: '1' });
    server.put('b', { v: '2' });
    await informer.start();
    await clock.advance(30_000);
    assert.deepEqual(rec.events.slice(2).sort(), ['resync a=1', 'resync b=2']);
    await clock.advance(30_000);
    assert.equal(rec.events.length, 6);
  });

  it('indexes objects by controller owner and by custom index functions', async () => {
    const { server, clock, informer } = setup({ indexers: { byValue: (o) => (o.data?.v ? [o.data.v] : []) } });
    current = informer;
    server.put('a', { v: '1' }, { owner: 'u1' });
    server.put('b', { v: '2' }, { owner: 'u1' });
    server.put('c', { v: '1' });
    await informer.start();
    await clock.flush();
    assert.deepEqual(
      informer
        .byOwner('u1')
        .map((o) => o.metadata?.name)
        .sort(),
      ['a', 'b'],
    );
    assert.deepEqual(
      informer
        .byIndex('byValue', '1')
        .map((o) => o.metadata?.name)
        .sort(),
      ['a', 'c'],
    );
    server.put('a', { v: '3' });
    server.del('b');
    assert.deepEqual(
      informer.byOwner('u1').map((o) => o.metadata?.name),
      [],
    );
    assert.deepEqual(
      informer.byIndex('byValue', '1').map((o) => o.metadata?.name),
      ['c'],
    );
    assert.throws(() => informer.byIndex('nope', 'x'), /no index named nope/);
  });

  it('handlers that throw or reject are logged and do not stop the informer', async () => {
    const { server, clock, informer } = setup();
    current = informer;
    const seen: string[] = [];
    informer.addHandlers({
      onAdd: () => {
        throw new Error('boom');
      },
    });
    informer.addHandlers({
      onAdd: async () => {
        await Promise.resolve();
        throw new Error('async boom');
      },
    });
    informer.addHandlers({
      onAdd: (o) => {
        seen.push(o.metadata?.name ?? '');
      },
    });
    await informer.start();
    await clock.flush();
    server.put('a', { v: '1' });
    server.put('b', { v: '1' });
    await clock.flush();
    assert.deepEqual(seen, ['a', 'b']);
  });

  it('handlers added after sync get an add for every stored object', async () => {
    const { server, informer } = setup();
    current = informer;
    server.put('a', { v: '1' });
    await informer.start();
    const seen: string[] = [];
    informer.addHandlers({
      onAdd: (o) => {
        seen.push(o.metadata?.name ?? '');
      },
    });
    assert.deepEqual(seen, ['a']);
  });

  it('stop() aborts the watch and leaves no timer behind; start() before sync resolves on stop', async () => {
    const { server, clock, informer } = setup({ watchdogMs: 60_000, relistPeriodMs: 600_000, resyncPeriodMs: 60_000 });
    await informer.start();
    await clock.flush();
    const w = server.active;
    assert.ok(clock.pending() > 0);
    await informer.stop();
    assert.equal(w?.opts.signal.aborted, true);
    assert.equal(clock.pending(), 0);
    await informer.stop(); // idempotent

    const s2 = setup();
    s2.server.listErrors.push(connRefused());
    const started = s2.informer.start();
    await s2.clock.flush();
    await s2.informer.stop();
    await started;
    assert.equal(s2.informer.hasSynced(), false);
    assert.equal(s2.clock.pending(), 0);
  });
});

describe('Backoff', () => {
  it('doubles from 800 ms to 30 s, jitter only shortens, and resets after a healthy period', async () => {
    const clock = new ManualClock();
    const noJitter = new Backoff({ jitter: 0 }, clock);
    assert.deepEqual(
      Array.from({ length: 8 }, () => noJitter.next()),
      [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000],
    );
    const jittered = new Backoff({ jitter: 0.5 }, clock, () => 1);
    assert.equal(jittered.next(), 400);
    await clock.advance(120_001);
    assert.equal(noJitter.next(), 800);
  });
});
