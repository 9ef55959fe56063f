import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { startControlPlane } from '../controlplane/index.js';
import type { ControlPlane } from '../controlplane/index.js';
import { createInformer, kubeListWatch } from '../../lib/informer/index.js';
import type {
  Informer,
  InformerOptions,
  ListWatchSource,
  RelistReason,
  WatchRestartReason,
} from '../../lib/informer/index.js';
import { createKubeClient } from '../../lib/kube/index.js';
import { ownershipMetadata } from '../../lib/controller/watches.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';

interface Watched {
  readonly informer: Informer<V1ConfigMap>;
  readonly events: string[];
  readonly restarts: WatchRestartReason[];
  readonly relists: RelistReason[];
}

function watchConfigMaps(
  client: KubeClient,
  namespace: string,
  extra: Partial<InformerOptions<V1ConfigMap>> = {},
): Watched {
  const w: Watched = { events: [], restarts: [], relists: [], informer: undefined as unknown as Informer<V1ConfigMap> };
  const informer = createInformer<V1ConfigMap>({
    client,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace,
    backoff: { maxMs: 2_000 },
    hooks: { onWatchRestart: (r) => w.restarts.push(r), onRelist: (r) => w.relists.push(r) },
    ...extra,
  });
  informer.addHandlers({
    onAdd: (o) => {
      w.events.push(`add ${o.metadata?.name}`);
    },
    onUpdate: (_o, n) => {
      w.events.push(`update ${n.metadata?.name}=${n.data?.v ?? ''}`);
    },
    onDelete: (o, info) => {
      w.events.push(`delete ${o.metadata?.name}=${o.data?.v ?? ''}${info.finalStateUnknown ? ' (relist)' : ''}`);
    },
  });
  (w as { informer: Informer<V1ConfigMap> }).informer = informer;
  return w;
}

/**
 * The real transport behind a gate the test controls: while closed, new lists and watches wait (an
 * abort still ends them). Lets a test change the cluster while the informer is certainly disconnected.
 */
function gated<T>(inner: ListWatchSource<T>): { source: ListWatchSource<T>; close(): void; open(): void } {
  let isOpen = true;
  const waiters = new Set<() => void>();
  const pass = (signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (isOpen) return resolve();
      const done = (): void => {
        waiters.delete(done);
        if (signal?.aborted) reject(new DOMException('aborted', 'AbortError'));
        else resolve();
      };
      waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  return {
    source: {
      list: async (o) => {
        await pass(o.signal);
        return inner.list(o);
      },
      watch: async (o, cb) => {
        await pass(o.signal);
        return inner.watch(o, cb);
      },
    },
    close: () => {
      isOpen = false;
    },
    open: () => {
      isOpen = true;
      for (const w of [...waiters]) w();
    },
  };
}

const names = (informer: Informer<V1ConfigMap>): string[] =>
  informer
    .list()
    .map((o) => o.metadata?.name ?? '')
    .filter((n) => n !== 'kube-root-ca.crt')
    .sort();

describe('informer (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let client: KubeClient;
  // client-node's generated API, for the test's own writes (recon8s's client is raw JSON).
  let core: CoreV1Api;
  const running: Informer<V1ConfigMap>[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };

  before(() => {
    process.on('unhandledRejection', onUnhandled);
    client = createKubeClient({ kubeconfigPath: controlPlane().kubeconfigPath });
    core = controlPlane().kubeConfig().makeApiClient(CoreV1Api);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((i) => i.stop()));
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await client.close();
    assert.deepEqual(unhandled, []);
  });

  it('lists, then sees adds, updates and deletes (plural discovered)', async () => {
    const namespace = await freshNamespace('informer');
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'pre' }, data: { v: '0' } } });
    const w = watchConfigMaps(client, namespace);
    running.push(w.informer);
    await w.informer.start();
    assert.ok(w.informer.get(namespace, 'pre'), 'the listed object is in the store at sync');
    assert.equal(w.informer.get(namespace, 'pre')?.kind, 'ConfigMap');

    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'cm' }, data: { v: '1' } } });
    await eventually(() => assert.equal(w.informer.get(namespace, 'cm')?.data?.v, '1'));
    await core.patchNamespacedConfigMap({
      namespace,
      name: 'cm',
      body: [{ op: 'replace', path: '/data/v', value: '2' }],
    });
    await eventually(() => assert.equal(w.informer.get(namespace, 'cm')?.data?.v, '2'));
    await core.deleteNamespacedConfigMap({ namespace, name: 'cm' });
    await eventually(() => assert.equal(w.informer.get(namespace, 'cm'), undefined));
    assert.deepEqual(
      w.events.filter((e) => e.includes(' cm')),
      ['add cm', 'update cm=2', 'delete cm=2'],
    );
    assert.ok(Number(w.informer.lastResourceVersion()) > 0);
  });

  it('with a label selector sees only labelled objects, and objects that gain or lose the label', async () => {
    const namespace = await freshNamespace('informer-selector');
    const managed = { 'app.kubernetes.io/managed-by': 'recon8s' };
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'mine', labels: managed } } });
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'other' } } });
    const w = watchConfigMaps(client, namespace, {
      labelSelector: 'app.kubernetes.io/managed-by=recon8s',
      plural: 'configmaps',
    });
    running.push(w.informer);
    await w.informer.start();
    assert.deepEqual(names(w.informer), ['mine']);

    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'mine-too', labels: managed } },
    });
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'not-mine' } } });
    await core.patchNamespacedConfigMap({
      namespace,
      name: 'other',
      body: [{ op: 'add', path: '/metadata/labels', value: managed }],
    });
    await core.patchNamespacedConfigMap({
      namespace,
      name: 'mine',
      body: [{ op: 'remove', path: '/metadata/labels' }],
    });
    await eventually(() => assert.deepEqual(names(w.informer), ['mine-too', 'other']));
  });

  it('metadata-only: lists and watches every object of the type as its name, version and controller, never its data', async () => {
    const namespace = await freshNamespace('informer-metadata');
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'owner' } } });
    const controllerRef = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'owner',
      uid: owner.metadata?.uid ?? '',
      controller: true,
    };
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'listed', labels: { big: 'label' }, ownerReferences: [controllerRef] },
        data: { v: 'x'.repeat(10_000) },
      },
    });
    const w = watchConfigMaps(client, namespace, { metadataOnly: true, transform: ownershipMetadata });
    running.push(w.informer);
    await w.informer.start();
    const listed = w.informer.get(namespace, 'listed');
    assert.deepEqual(listed, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'listed',
        namespace,
        uid: listed?.metadata?.uid,
        resourceVersion: listed?.metadata?.resourceVersion,
        ownerReferences: [controllerRef],
      },
    });
    assert.ok(listed?.metadata?.uid && listed.metadata.resourceVersion);
    assert.deepEqual(
      w.informer.byOwner(owner.metadata?.uid ?? '').map((o) => o.metadata?.name),
      ['listed'],
    );

    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'watched' }, data: { v: '1' } } });
    await eventually(() => assert.equal(w.informer.get(namespace, 'watched')?.kind, 'ConfigMap'));
    assert.equal(w.informer.get(namespace, 'watched')?.data, undefined);
    await core.deleteNamespacedConfigMap({ namespace, name: 'watched' });
    await eventually(() => assert.equal(w.informer.get(namespace, 'watched'), undefined));
    assert.deepEqual(
      w.events.filter((e) => e.includes(' watched')),
      ['add watched', 'delete watched='],
    );
  });

  it('watchdog: a watch silent for watchdogMs is aborted and relisted, and the informer keeps working', async () => {
    const namespace = await freshNamespace('informer-watchdog');
    const w = watchConfigMaps(client, namespace, { watchdogMs: 1_500 });
    running.push(w.informer);
    await w.informer.start();
    // Both hooks, each in its own time: the relist may be reported before the restart that led to it.
    await eventually(
      () => {
        assert.ok(w.relists.includes('watchdog'), `relists: ${w.relists.join(', ')}`);
        assert.ok(w.restarts.includes('watchdog'), `restarts: ${w.restarts.join(', ')}`);
      },
      { description: 'a watchdog restart and relist' },
    );
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'later' } } });
    await eventually(() => assert.ok(w.informer.get(namespace, 'later')));
  });
});

describe('informer (own control plane: API server restarts, etcd compaction)', function () {
  this.timeout(180_000);
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  // client-node's generated API, for the test's own writes (recon8s's client is raw JSON).
  let core: CoreV1Api;
  const running: Informer<V1ConfigMap>[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };

  before(async function (this: Mocha.Context) {
    this.timeout(300_000);
    process.on('unhandledRejection', onUnhandled);
    cp = await startControlPlane({ controllers: [] });
    client = createKubeClient({ kubeconfigPath: cp.kubeconfigPath });
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((i) => i.stop()));
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await client?.close();
    await cp?.stop();
    assert.deepEqual(unhandled, []);
  });

  const namespaceNamed = async (name: string): Promise<string> => {
    await core.createNamespace({ body: { metadata: { name } } });
    return name;
  };

  it('survives an API server restart: objects changed right after it show up', async () => {
    assert.ok(cp);
    const namespace = await namespaceNamed('restart');
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'old' }, data: { v: '1' } } });
    const w = watchConfigMaps(client, namespace);
    running.push(w.informer);
    await w.informer.start();
    assert.deepEqual(names(w.informer), ['old']);

    await cp.restartApiServer();
    // The informer is most likely still backing off from "connection refused" now.
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'new' }, data: { v: '1' } } });
    await core.deleteNamespacedConfigMap({ namespace, name: 'old' });
    await eventually(() => assert.deepEqual(names(w.informer), ['new']), {
      timeoutMs: 30_000,
      description: 'the informer to catch up after the restart',
    });
    assert.ok(w.restarts.length > 0, 'the watch was restarted');
    assert.ok(
      w.events.some((e) => e.startsWith('delete old=1')),
      `events: ${w.events.join(', ')}`,
    );
  });

  it('after etcd compaction a watch from an old resourceVersion gets 410; the informer relists, emits the deletes it missed, and converges', async () => {
    assert.ok(cp);
    const namespace = await namespaceNamed('compaction');
    const elsewhere = await namespaceNamed('compaction-elsewhere');
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'victim' }, data: { v: '1' } },
    });
    const gate = gated(
      kubeListWatch<V1ConfigMap>(client, { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespace }),
    );
    const w = watchConfigMaps(client, namespace, { source: gate.source });
    running.push(w.informer);
    await w.informer.start();
    const syncedAt = Number(w.informer.lastResourceVersion());

    // Disconnect the informer (the restart ends its watch; the gate holds the next one), change what it
    // watches, move etcd on, compact past the informer's resourceVersion; the restarted API server's
    // watch cache has no history before its start either.
    gate.close();
    await cp.restartApiServer();
    await core.deleteNamespacedConfigMap({ namespace, name: 'victim' });
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'survivor' } } });
    for (let i = 0; i < 10; i++)
      await core.createNamespacedConfigMap({ namespace: elsewhere, body: { metadata: { name: `noise-${i}` } } });
    const revision = await cp.compactEtcd();
    assert.ok(revision > syncedAt, `compacted at ${revision}, informer at ${syncedAt}`);
    assert.deepEqual(names(w.informer), ['victim'], 'the informer saw none of it yet');
    gate.open();

    await eventually(() => assert.deepEqual(names(w.informer), ['survivor']), {
      timeoutMs: 30_000,
      description: 'the informer to converge after the relist',
    });
    assert.deepEqual(w.relists, ['expired'], `restarts: ${w.restarts.join(', ')}`);
    assert.ok(w.restarts.includes('expired'));
    assert.deepEqual(w.events, ['add victim', 'add survivor', 'delete victim=1 (relist)']);
    assert.ok(Number(w.informer.lastResourceVersion()) >= revision);
  });

  it('metadata-only: after etcd compaction the watch gets 410, relists and converges the same way', async () => {
    assert.ok(cp);
    const namespace = await namespaceNamed('compaction-metadata');
    const elsewhere = await namespaceNamed('compaction-metadata-elsewhere');
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'victim' }, data: { v: '1' } },
    });
    const gate = gated(
      kubeListWatch<V1ConfigMap>(client, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        plural: 'configmaps',
        namespace,
        metadataOnly: true,
      }),
    );
    const w = watchConfigMaps(client, namespace, { source: gate.source, transform: ownershipMetadata });
    running.push(w.informer);
    await w.informer.start();
    const syncedAt = Number(w.informer.lastResourceVersion());

    // Disconnect the informer (the restart ends its watch; the gate holds the next one), change what it
    // watches, move etcd on, compact past the informer's resourceVersion; the restarted API server's
    // watch cache has no history before its start either.
    gate.close();
    await cp.restartApiServer();
    await core.deleteNamespacedConfigMap({ namespace, name: 'victim' });
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'survivor' } } });
    for (let i = 0; i < 10; i++)
      await core.createNamespacedConfigMap({ namespace: elsewhere, body: { metadata: { name: `noise-${i}` } } });
    const revision = await cp.compactEtcd();
    assert.ok(revision > syncedAt, `compacted at ${revision}, informer at ${syncedAt}`);
    assert.deepEqual(names(w.informer), ['victim'], 'the informer saw none of it yet');
    gate.open();

    await eventually(() => assert.deepEqual(names(w.informer), ['survivor']), {
      timeoutMs: 30_000,
      description: 'the informer to converge after the relist',
    });
    assert.deepEqual(w.relists, ['expired'], `restarts: ${w.restarts.join(', ')}`);
    assert.ok(w.restarts.includes('expired'));
    assert.deepEqual(w.events, ['add victim', 'add survivor', 'delete victim= (relist)']);
    assert.ok(Number(w.informer.lastResourceVersion()) >= revision);
  });
});
