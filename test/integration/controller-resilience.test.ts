import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import type { Controller, ControllerOptions } from '../../lib/controller/controller.js';
import { createKubeClient } from '../../lib/kube/index.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { DEFAULT_CONTROLLERS, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane } from '../controlplane/index.js';
import { eventually } from './eventually.js';
import { installCrds, startTestController } from './support/controller.js';
import {
  Api,
  createNamespace,
  crPath,
  garbageCollectorKnowsOwners,
  mysqlChildren,
  watchCreations,
} from './support/resilience-fixtures.js';
import type { Live } from './support/resilience-fixtures.js';
import { ControllerProcesses, metricSum, scrapeMetrics } from './support/resilience-process.js';
import { startApiProxy } from './support/resilience-proxy.js';
import type { ApiProxy } from './support/resilience-proxy.js';

/** Leader election fast enough for a test: a crashed leader's Lease expires after 3 s. */
const SHORT_LEASE = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 } as const;

const APP_SPEC = { image: 'nginx:1.27', ports: [{ name: 'http', port: 80 }] };

interface Lease {
  readonly spec: { readonly holderIdentity?: string; readonly leaseTransitions?: number };
}

/**
 * What a user notices when the world around the controller misbehaves: the API server restarts, watch
 * history is compacted away, the leader crashes or is stopped, the controller is killed half-way through
 * a reconcile, resources are deleted. One control plane of its own (restarts would disturb the shared
 * one), with the workload controllers the deletion cases rely on.
 */
describe('controller resilience (own control plane)', function () {
  // Generous bounds: on a loaded 2-core machine the garbage collector and the StatefulSet controller lag.
  this.timeout(120_000);
  let cp: ControlPlane;
  let client: KubeClient;
  let api: Api;
  let gcReady: Promise<void>;
  const processes = new ControllerProcesses();
  const controllers: Controller[] = [];
  const proxies: ApiProxy[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };

  before(async function (this: Mocha.Context) {
    this.timeout(300_000);
    process.on('unhandledRejection', onUnhandled);
    cp = await startControlPlane({ controllers: [...DEFAULT_CONTROLLERS, 'statefulset', 'pvc-protection'] });
    client = createKubeClient({ kubeconfigPath: cp.kubeconfigPath, fieldManager: 'recon8s-tests' });
    api = new Api(client);
    await installCrds(cp);
    // Runs in the background while the first tests run; the deletion tests wait for it.
    gcReady = garbageCollectorKnowsOwners(api);
    gcReady.catch(() => undefined);
  });
  afterEach(async () => {
    await Promise.all(controllers.splice(0).map((c) => c.stop()));
    await processes.killAll();
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await processes.killAll();
    await client?.close();
    await cp?.stop();
    assert.deepEqual(unhandled, []);
  });

  const controller = async (namespace: string, extra: Partial<ControllerOptions> = {}): Promise<Controller> => {
    const c = await startTestController(cp, { namespaces: [namespace], ...extra });
    controllers.push(c);
    return c;
  };
  const deploymentImage = async (namespace: string, name: string): Promise<string | undefined> => {
    const d = await api.find<{ spec: { template: { spec: { containers: { image: string }[] } } } }>(
      `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
    );
    return d?.spec.template.spec.containers[0]?.image;
  };
  const metric = async (c: Controller, name: string, labels: Readonly<Record<string, string>> = {}): Promise<number> =>
    metricSum(await c.metrics.registry.metrics(), name, labels);
  const lease = (namespace: string, name: string): Promise<Lease> =>
    api.get<Lease>(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`);

  describe('leader election', () => {
    it('two replicas: exactly one reconciles; when the leader is SIGKILLed the other takes over once the Lease expires', async () => {
      const namespace = await createNamespace(api, 'failover');
      const election = (identity: string) => ({ namespace, name: 'recon8s-failover', identity, ...SHORT_LEASE });
      // The first replica is a process of its own, so it can really crash.
      const a = processes.script('replica-a', {
        kubeconfigPath: cp.kubeconfigPath,
        namespaces: [namespace],
        leaderElection: election('replica-a'),
      });
      const aEndpoints = await a.started();
      await eventually(
        async () => assert.equal((await lease(namespace, 'recon8s-failover')).spec.holderIdentity, 'replica-a'),
        { description: 'replica-a to lead' },
      );
      const b = await controller(namespace, { leaderElection: election('replica-b') });
      await eventually(() => assert.equal(b.elector?.leader(), 'replica-a'), {
        description: 'replica-b to see replica-a lead',
      });

      assert.equal(
        metricSum(await scrapeMetrics(aEndpoints.metrics), 'leader_election_master_status', {
          name: 'recon8s-failover',
        }),
        1,
        'replica-a leads',
      );
      assert.equal(b.isActive(), false, 'replica-b follows');
      assert.equal(await metric(b, 'leader_election_master_status'), 0);

      await api.createCr('App', namespace, 'one', APP_SPEC);
      await eventually(
        async () =>
          assert.deepEqual(await api.children(namespace, 'one'), [
            'Deployment/one',
            'NetworkPolicy/one',
            'Service/one',
          ]),
        { description: 'the leader to reconcile App one' },
      );
      assert.equal(await metric(b, 'controller_runtime_reconcile_total'), 0, 'the follower reconciled nothing');

      // A crash: no release, no goodbye. The Lease stays held until it expires.
      const exit = await a.kill('SIGKILL');
      assert.equal(exit.signal, 'SIGKILL');
      await api.createCr('App', namespace, 'two', APP_SPEC);
      await eventually(() => assert.ok(b.isActive()), {
        timeoutMs: 20_000,
        description: 'replica-b to take over after the Lease expired',
      });
      await eventually(
        async () =>
          assert.deepEqual(await api.children(namespace, 'two'), [
            'Deployment/two',
            'NetworkPolicy/two',
            'Service/two',
          ]),
        { description: 'the new leader to reconcile App two' },
      );
      const l = await lease(namespace, 'recon8s-failover');
      assert.equal(l.spec.holderIdentity, 'replica-b');
      assert.equal(l.spec.leaseTransitions, 1);
      assert.equal(await metric(b, 'leader_election_master_status', { name: 'recon8s-failover' }), 1);
    });

    it('`recon8s controller --leader-elect` stopped with SIGTERM releases the Lease on its way out: the other replica takes over without waiting for it to expire', async () => {
      const namespace = await createNamespace(api, 'handover');
      // The real command line, with its default 15 s Lease.
      const c = processes.cli('recon8s-controller', [
        '--kubeconfig',
        cp.kubeconfigPath,
        '--namespaces',
        namespace,
        '--leader-elect',
        '--leader-election-namespace',
        namespace,
        '--leader-election-id',
        'recon8s-handover',
        '--metrics-bind-address',
        '127.0.0.1:0',
        '--health-probe-bind-address',
        '127.0.0.1:0',
      ]);
      await c.started();
      const holder = await eventually(
        async () => {
          const h = (await lease(namespace, 'recon8s-handover')).spec.holderIdentity;
          assert.ok(h, 'a holder');
          return h;
        },
        { description: 'recon8s controller to take the Lease' },
      );
      const d = await controller(namespace, {
        leaderElection: { namespace, name: 'recon8s-handover', identity: 'replica-d', ...SHORT_LEASE },
      });
      await eventually(() => assert.equal(d.elector?.leader(), holder), {
        description: 'replica-d to see the command lead',
      });
      assert.equal(d.isActive(), false);

      const exit = await c.kill('SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, `exits 0 after a graceful shutdown; log tail:\n${c.tail()}`);
      // Had it not released the Lease, it would still name the dead process for 15 s, and nobody else could take it.
      assert.notEqual(
        (await lease(namespace, 'recon8s-handover')).spec.holderIdentity,
        holder,
        'the Lease no longer names the stopped process',
      );

      await api.createCr('App', namespace, 'three', APP_SPEC);
      await eventually(
        async () =>
          assert.deepEqual(await api.children(namespace, 'three'), [
            'Deployment/three',
            'NetworkPolicy/three',
            'Service/three',
          ]),
        { description: 'replica-d to reconcile App three' },
      );
      assert.ok(d.isActive());
      assert.equal((await lease(namespace, 'recon8s-handover')).spec.holderIdentity, 'replica-d');
    });
  });

  describe('crash', () => {
    it('a controller SIGKILLed half-way through its first reconcile of a MySQLCluster: the next one converges with one of each child and the same generated password', async () => {
      const namespace = await createNamespace(api, 'crash');
      // The first controller may do everything but write StatefulSets: its first reconcile creates the
      // credentials Secret, the ConfigMaps and Services, then fails on the StatefulSet and retries. That
      // is a controller certain to be killed half-way, with the password already generated.
      await api.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
        metadata: { name: 'recon8s-no-statefulsets' },
        rules: [
          {
            apiGroups: ['recon8s.dev', '', 'policy', 'autoscaling', 'batch', 'networking.k8s.io', 'events.k8s.io'],
            resources: ['*'],
            verbs: ['*'],
          },
          { apiGroups: ['apps'], resources: ['deployments'], verbs: ['*'] },
          { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['get', 'list', 'watch'] },
        ],
      });
      await api.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
        metadata: { name: 'recon8s-no-statefulsets' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'recon8s-no-statefulsets' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'recon8s-crash-test' }],
      });
      const limited = await cp.mintCredentials({ user: 'recon8s-crash-test' });
      const flags = (kubeconfig: string): string[] => [
        '--kubeconfig',
        kubeconfig,
        '--namespaces',
        namespace,
        '--metrics-bind-address',
        '127.0.0.1:0',
        '--health-probe-bind-address',
        '127.0.0.1:0',
      ];

      const first = processes.cli('controller-1', flags(limited.kubeconfigPath));
      await first.started();
      const secretPath = `/api/v1/namespaces/${namespace}/secrets/db-credentials`;
      const cr = await api.createCr('MySQLCluster', namespace, 'db', { replicas: 2 });
      await eventually(
        async () => {
          assert.ok(await api.find(secretPath), 'the generated Secret');
          const events = await api.events(namespace, cr.metadata.uid);
          assert.ok(
            events.some(
              (e) => e.reason === 'ApplyForbidden' && e.message?.startsWith('recon8s may not write StatefulSet db'),
            ),
            'the StatefulSet was refused',
          );
          const degraded = await api.condition('MySQLCluster', namespace, 'db', 'Degraded');
          assert.deepEqual(
            [degraded?.status, degraded?.reason],
            ['True', 'ApplyForbidden'],
            'the refusal is a Degraded condition',
          );
        },
        { description: 'the first controller to create the Secret and get stuck on the StatefulSet' },
      );
      await first.kill('SIGKILL');
      const atKill = await api.children(namespace, 'db');
      // The other children's applies go out together with the StatefulSet's: only the refused one is missing.
      assert.ok(
        !atKill.includes('StatefulSet/db'),
        `killed before the StatefulSet; children then: ${atKill.join(', ')}`,
      );
      const before = await api.get(secretPath);

      const second = processes.cli('controller-2', flags(cp.kubeconfigPath));
      await second.started();
      await eventually(async () => assert.deepEqual(await api.children(namespace, 'db'), mysqlChildren('db')), {
        description: `the restarted controller to converge; log tail:\n${second.tail()}`,
      });
      await eventually(
        async () =>
          assert.equal(
            (await api.get(crPath('MySQLCluster', namespace, 'db'))).status?.credentialsSecretName,
            'db-credentials',
          ),
        { description: 'a status from the restarted controller' },
      );

      const secrets = await api.secrets(namespace, 'db');
      assert.deepEqual(
        secrets.map((s) => s.metadata.name),
        ['db-credentials'],
        'one credentials Secret',
      );
      const after = secrets[0] as Live;
      assert.equal(after.metadata.uid, before.metadata.uid, 'the same Secret');
      assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'the Secret was not written again');
      const keys = Object.keys(before.data ?? {}).sort();
      assert.deepEqual(Object.keys(after.data ?? {}).sort(), keys);
      assert.deepEqual(keys, [
        'admin-password',
        'backup-password',
        'clone-password',
        'exporter-password',
        'replication-password',
        'root-password',
      ]);
      // Compared as bytes; never printed.
      for (const key of keys)
        assert.ok(
          Buffer.from(after.data?.[key] ?? '', 'base64').equals(Buffer.from(before.data?.[key] ?? '', 'base64')),
          `${key} is unchanged`,
        );
      // The first controller's status said Degraded (the refused StatefulSet) until the second writes its own.
      await eventually(
        async () => assert.equal((await api.condition('MySQLCluster', namespace, 'db', 'Degraded'))?.status, 'False'),
        { description: 'Degraded=False from the restarted controller' },
      );
    });
  });

  // Deletion needs kube-controller-manager's garbage collector to know the two kinds. These tests run before
  // the ones that restart the API server: after a restart its watches back off (client-go, up to 30 s), and
  // garbage collection and the statefulset controller would lag behind.
  describe('once the garbage collector knows App and MySQLCluster', () => {
    before(async function (this: Mocha.Context) {
      this.timeout(180_000);
      await gcReady;
    });

    describe('deletion', () => {
      it('a deleted MySQLCluster: its children are garbage collected, nothing is recreated, the data volumes and the generated Secret stay', async () => {
        const namespace = await createNamespace(api, 'delete-retain');
        await controller(namespace);
        await api.createCr('MySQLCluster', namespace, 'db', { replicas: 2 });
        await eventually(async () => assert.deepEqual(await api.children(namespace, 'db'), mysqlChildren('db')), {
          timeoutMs: 30_000,
          description: "the cluster's children",
        });
        await eventually(
          async () => {
            await api.markPodsReady(namespace, 'db');
            assert.deepEqual((await api.pvcs(namespace)).map((p) => p.metadata.name).sort(), [
              'data-db-0',
              'data-db-1',
            ]);
          },
          { timeoutMs: 45_000, description: 'a data volume per member' },
        );
        const secret = await api.get(`/api/v1/namespaces/${namespace}/secrets/db-credentials`);
        assert.equal(
          secret.metadata.ownerReferences,
          undefined,
          'the generated Secret is not owned: it lives as long as the data',
        );

        const creations = await watchCreations(client, namespace, 'app.kubernetes.io/instance=db');
        await api.delete(crPath('MySQLCluster', namespace, 'db'), 'Foreground');
        await eventually(
          async () => {
            assert.deepEqual(await api.children(namespace, 'db'), []);
            assert.equal(await api.find(crPath('MySQLCluster', namespace, 'db')), undefined);
          },
          { timeoutMs: 45_000, description: 'the cluster and its children to be collected' },
        );
        await creations.stop();

        assert.deepEqual(creations.broken, [], 'the watches saw the whole deletion');
        assert.deepEqual(creations.added, [], 'nothing was recreated during the deletion');
        const pvcs = await api.pvcs(namespace);
        assert.deepEqual(pvcs.map((p) => p.metadata.name).sort(), ['data-db-0', 'data-db-1'], 'the data volumes stay');
        assert.ok(
          pvcs.every((p) => !p.metadata.deletionTimestamp),
          'and are not being deleted',
        );
        const kept = await api.get(`/api/v1/namespaces/${namespace}/secrets/db-credentials`);
        assert.equal(kept.metadata.uid, secret.metadata.uid, 'the generated Secret stays');
        assert.equal(kept.metadata.resourceVersion, secret.metadata.resourceVersion);
      });

      it('with pvcRetention.whenDeleted: Delete, the generated Secret and the data volumes go with the MySQLCluster', async () => {
        const namespace = await createNamespace(api, 'delete-data');
        await controller(namespace);
        const cr = await api.createCr('MySQLCluster', namespace, 'db', {
          replicas: 2,
          pvcRetention: { whenDeleted: 'Delete' },
        });
        await eventually(async () => assert.deepEqual(await api.children(namespace, 'db'), mysqlChildren('db')), {
          timeoutMs: 30_000,
          description: "the cluster's children",
        });
        const secret = await api.get(`/api/v1/namespaces/${namespace}/secrets/db-credentials`);
        assert.deepEqual(
          secret.metadata.ownerReferences?.map((r) => [r.kind, r.uid, r.controller]),
          [['MySQLCluster', cr.metadata.uid, true]],
          'owned by the cluster',
        );
        // The statefulset controller makes the volumes of ready members dependents of the StatefulSet.
        await eventually(
          async () => {
            await api.markPodsReady(namespace, 'db');
            const pvcs = await api.pvcs(namespace);
            assert.deepEqual(pvcs.map((p) => p.metadata.name).sort(), ['data-db-0', 'data-db-1']);
            for (const p of pvcs)
              assert.deepEqual(
                p.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}`),
                ['StatefulSet/db'],
                `${p.metadata.name} owned by the StatefulSet`,
              );
          },
          { timeoutMs: 45_000, description: 'volumes under the retention policy' },
        );

        await api.delete(crPath('MySQLCluster', namespace, 'db'));
        await eventually(
          async () => {
            assert.deepEqual(await api.children(namespace, 'db'), []);
            assert.equal(
              await api.find(`/api/v1/namespaces/${namespace}/secrets/db-credentials`),
              undefined,
              'the generated Secret is collected',
            );
            assert.deepEqual(
              (await api.pvcs(namespace)).map((p) => p.metadata.name),
              [],
              'the volumes are deleted',
            );
          },
          { timeoutMs: 45_000, description: 'the cluster, its Secret and its volumes to be deleted' },
        );
      });

      it('a MySQLCluster recreated over retained volumes never gets a new password: Degraded CredentialsMissing until the Secret is restored', async () => {
        const namespace = await createNamespace(api, 'recreate');
        await controller(namespace);
        const secretPath = `/api/v1/namespaces/${namespace}/secrets/db-credentials`;
        await api.createCr('MySQLCluster', namespace, 'db', { replicas: 1 });
        await eventually(
          async () => {
            assert.ok(await api.find(secretPath));
            assert.deepEqual(
              (await api.pvcs(namespace)).map((p) => p.metadata.name),
              ['data-db-0'],
            );
          },
          { timeoutMs: 45_000, description: 'the Secret and the first data volume' },
        );
        await api.delete(crPath('MySQLCluster', namespace, 'db'));
        await eventually(async () => assert.deepEqual(await api.children(namespace, 'db'), []), {
          timeoutMs: 30_000,
          description: 'the children to be collected',
        });
        await api.delete(secretPath);

        const again = await api.createCr('MySQLCluster', namespace, 'db', { replicas: 1 });
        const degraded = await eventually(
          async () => {
            const d = await api.condition('MySQLCluster', namespace, 'db', 'Degraded');
            assert.equal(d?.status, 'True');
            assert.equal(d?.reason, 'CredentialsMissing');
            return d;
          },
          { description: 'Degraded CredentialsMissing' },
        );
        assert.match(degraded?.message ?? '', /data-db-0/, 'the message names the volume');
        assert.equal(
          await api.find(secretPath),
          undefined,
          'no new Secret: a new password would not open the old data',
        );
        await eventually(
          async () => {
            const warnings = (await api.events(namespace, again.metadata.uid ?? '')).filter(
              (e) => e.type === 'Warning' && e.reason === 'CredentialsMissing',
            );
            assert.ok(warnings.length > 0);
          },
          { description: 'a Warning Event' },
        );

        // The user restores the Secret (as they had it) and touches the cluster; the controller takes it as it is.
        const restored = await api.create(`/api/v1/namespaces/${namespace}/secrets`, {
          metadata: { name: 'db-credentials' },
          stringData: {
            'root-password': 'restored-root',
            'replication-password': 'restored-replication',
            'admin-password': 'restored-admin',
            'clone-password': 'restored-clone',
            'backup-password': 'restored-backup',
          },
        });
        await api.mergePatch(crPath('MySQLCluster', namespace, 'db'), {
          metadata: { annotations: { 'example.com/restored': 'yes' } },
        });
        await eventually(
          async () => assert.equal((await api.condition('MySQLCluster', namespace, 'db', 'Degraded'))?.status, 'False'),
          { description: 'Degraded to clear' },
        );
        const now = await api.get(secretPath);
        assert.equal(
          now.metadata.resourceVersion,
          restored.metadata.resourceVersion,
          'the restored Secret is left as it is',
        );
        assert.equal(now.metadata.ownerReferences, undefined);
        assert.deepEqual(
          (await api.secrets(namespace, 'db')).map((s) => s.metadata.name),
          [],
          'no generated Secret beside it',
        );
      });
    });

    describe('cut off from the API server', () => {
      it('watch history compacted while the controller was cut off (410 Gone): it relists and converges; an App deleted meanwhile is not brought back', async () => {
        const namespace = await createNamespace(api, 'compaction');
        const proxy = await startApiProxy(cp.server);
        proxies.push(proxy);
        const c = await controller(namespace, { kubeConfig: proxy.kubeConfig(cp.kubeConfig()) });
        for (const name of ['changed', 'deleted']) await api.createCr('App', namespace, name, APP_SPEC);
        await eventually(
          async () => {
            for (const name of ['changed', 'deleted'])
              assert.deepEqual(await api.children(namespace, name), [
                `Deployment/${name}`,
                `NetworkPolicy/${name}`,
                `Service/${name}`,
              ]);
          },
          { description: 'both Apps to be reconciled' },
        );
        const relists = await metric(c, 'recon8s_watch_relists_total', { reason: 'expired' });

        // Cut the controller off; change what it watches; let the garbage collector remove the deleted
        // App's children; compact etcd past everything the controller has seen, and restart the API server
        // so its watch cache holds no history either. Only then let the controller back in.
        proxy.cut();
        await api.createCr('App', namespace, 'created', APP_SPEC);
        await api.mergePatch(crPath('App', namespace, 'changed'), { spec: { image: 'nginx:1.28' } });
        await api.delete(crPath('App', namespace, 'deleted'));
        await eventually(async () => assert.deepEqual(await api.children(namespace, 'deleted'), []), {
          timeoutMs: 30_000,
          description: "the garbage collector to remove the deleted App's children",
        });
        await cp.compactEtcd();
        await cp.restartApiServer();
        assert.deepEqual(await api.children(namespace, 'created'), [], 'the controller saw none of it yet');
        const creations = await watchCreations(client, namespace, 'app.kubernetes.io/managed-by=recon8s');
        proxy.reconnect();

        await eventually(
          async () => {
            assert.deepEqual(await api.children(namespace, 'created'), [
              'Deployment/created',
              'NetworkPolicy/created',
              'Service/created',
            ]);
            assert.equal(await deploymentImage(namespace, 'changed'), 'nginx:1.28');
            assert.ok(
              (await metric(c, 'recon8s_watch_relists_total', { reason: 'expired' })) > relists,
              'relisted after 410 Gone',
            );
            assert.ok(
              (await metric(c, 'recon8s_watch_relists_total', { resource: 'apps', reason: 'expired' })) > 0,
              'the App informer relisted',
            );
          },
          { timeoutMs: 30_000, description: 'the controller to relist and converge' },
        );
        await creations.stop();
        assert.deepEqual(creations.broken, [], 'the watches saw everything since the reconnection');
        // Only the new App's children were created: nothing of the deleted App came back (the relist of its
        // children's informers may come before its own, and must not bring them back against the garbage collector).
        assert.deepEqual([...creations.added].sort(), [
          'Deployment/created',
          'NetworkPolicy/created',
          'Service/created',
        ]);
        assert.deepEqual(await api.children(namespace, 'deleted'), []);
      });
    });
  });

  describe('API server restarted', () => {
    it('restarted mid-watch: the controller reconnects; an App created and an App changed after the restart converge', async () => {
      const namespace = await createNamespace(api, 'restart');
      const c = await controller(namespace);
      await api.createCr('App', namespace, 'before', APP_SPEC);
      await eventually(async () => assert.equal(await deploymentImage(namespace, 'before'), 'nginx:1.27'), {
        description: 'App before to be reconciled',
      });
      const restarts = await metric(c, 'recon8s_watch_restarts_total');

      await cp.restartApiServer();
      await api.createCr('App', namespace, 'after', APP_SPEC);
      await api.mergePatch(crPath('App', namespace, 'before'), { spec: { image: 'nginx:1.28' } });

      await eventually(
        async () => {
          assert.deepEqual(await api.children(namespace, 'after'), [
            'Deployment/after',
            'NetworkPolicy/after',
            'Service/after',
          ]);
          assert.equal(await deploymentImage(namespace, 'before'), 'nginx:1.28');
        },
        { timeoutMs: 30_000, description: 'the controller to catch up after the restart' },
      );
      assert.ok(
        (await metric(c, 'recon8s_watch_restarts_total')) > restarts,
        'the watches were cut and re-established',
      );
    });
  });
});
