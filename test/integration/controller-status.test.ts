import assert from 'node:assert/strict';
import { valueOf } from '../../lib/observability/metrics.js';
import type { KubeConfig, V1Deployment } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { startTestController } from './support/controller.js';
import { kubectl } from './support/kubectl.js';
import type { ResourceHelpers } from './support/resources.js';
import { conditionOf, resourceHelpers } from './support/resources.js';

/**
 * "Say it at admission, or say it in status", and the pause switch: what a user sees in status and in
 * `kubectl get` when something outside the spec is wrong, against the real API server with the
 * controller running.
 */
describe('controller status that tells the truth (real API server)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let kc: KubeConfig;
  let ns: string;
  let controller: Controller;
  let resources: ResourceHelpers;
  let apps: AppsV1Api;
  let core: CoreV1Api;

  before(async function () {
    this.timeout(120_000);
    kc = controlPlane().kubeConfig();
    ns = await freshNamespace('status');
    resources = resourceHelpers(kc, ns);
    apps = kc.makeApiClient(AppsV1Api);
    core = kc.makeApiClient(CoreV1Api);
    controller = await startTestController(controlPlane(), { namespaces: [ns], resyncPeriodMs: 3_000 });
  });
  after(async () => {
    await controller?.stop();
  });

  const create: ResourceHelpers['create'] = (...args) => resources.create(...args);
  const getCr: ResourceHelpers['get'] = (...args) => resources.get(...args);
  const patchSpec: ResourceHelpers['patchSpec'] = (...args) => resources.patchSpec(...args);
  const events: ResourceHelpers['events'] = (...args) => resources.events(...args);
  const condition = conditionOf;
  const deployment = (name: string): Promise<V1Deployment> => apps.readNamespacedDeployment({ namespace: ns, name });
  const notFound = (e: { code?: number }): boolean => e.code === 404;
  /** `kubectl get <plural> <name>` as a user reads it: column name → value. */
  const columns = (plural: string, name: string): Record<string, string> => {
    const r = kubectl(controlPlane(), ['get', plural, name, '-n', ns]);
    assert.equal(r.status, 0, r.stderr);
    const [header = '', row = ''] = r.stdout.trim().split('\n');
    const names = header.trim().split(/\s+/);
    const values = row.trim().split(/\s+/);
    return Object.fromEntries(names.map((n, i) => [n, values[i] ?? '']));
  };

  it('holds the StatefulSet back while the credentials Secret is missing, and STATUS says why', async () => {
    await create('mysqlclusters', 'MySQLCluster', 'nosecret', {
      replicas: 1,
      credentialsSecretName: 'nosecret-passwords',
    });
    await eventually(
      async () => {
        const cr = await getCr('mysqlclusters', 'nosecret');
        assert.deepEqual(
          [condition(cr, 'Ready')?.status, condition(cr, 'Ready')?.reason],
          ['False', 'CredentialsMissing'],
        );
        assert.equal(condition(cr, 'Degraded')?.reason, 'CredentialsMissing');
        await core.readNamespacedService({ namespace: ns, name: 'nosecret-primary' });
      },
      { description: 'CredentialsMissing in Ready and Degraded, the Services applied' },
    );
    await assert.rejects(
      apps.readNamespacedStatefulSet({ namespace: ns, name: 'nosecret' }),
      notFound,
      'no StatefulSet whose pods could not start',
    );
    const row = columns('mysqlclusters', 'nosecret');
    assert.equal(row.STATUS, 'CredentialsMissing');
    assert.equal(row.DEGRADED, 'CredentialsMissing');

    // A Secret without the administrative account's password (as one made before high availability):
    // still missing a key, named; the user's Secret is never completed for them.
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'nosecret-passwords' },
        stringData: { 'root-password': 'correct-horse-battery', 'replication-password': 'staple-staple-staple' },
      },
    });
    // Found on the controller's own recheck (30 s) or on the next change; a change makes the test quick.
    await patchSpec('mysqlclusters', 'nosecret', { mysqlConf: { max_connections: '100' } });
    await eventually(
      async () => {
        const degraded = condition(await getCr('mysqlclusters', 'nosecret'), 'Degraded');
        assert.deepEqual([degraded?.status, degraded?.reason], ['True', 'CredentialsMissing']);
        assert.match(
          degraded?.message ?? '',
          /Secret nosecret-passwords has no admin-password or clone-password or backup-password key/,
        );
      },
      { description: 'CredentialsMissing naming the missing keys' },
    );
    await assert.rejects(apps.readNamespacedStatefulSet({ namespace: ns, name: 'nosecret' }), notFound);
    const incomplete = await core.readNamespacedSecret({ namespace: ns, name: 'nosecret-passwords' });
    assert.deepEqual(Object.keys(incomplete.data ?? {}).sort(), ['replication-password', 'root-password']);

    await core.patchNamespacedSecret(
      {
        namespace: ns,
        name: 'nosecret-passwords',
        body: {
          stringData: {
            'admin-password': 'battery-staple-horse',
            'clone-password': 'staple-horse-battery',
            'backup-password': 'horse-battery-staple',
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await patchSpec('mysqlclusters', 'nosecret', { mysqlConf: { max_connections: '200' } });
    await eventually(
      async () => {
        await apps.readNamespacedStatefulSet({ namespace: ns, name: 'nosecret' });
        assert.equal(condition(await getCr('mysqlclusters', 'nosecret'), 'Degraded')?.status, 'False');
      },
      { description: 'the StatefulSet once the Secret exists' },
    );

    // Monitoring on: the user's Secret must hold the metrics account's password too. Until it does,
    // the running StatefulSet is held back as it was (never pruned), and the key is named.
    await patchSpec('mysqlclusters', 'nosecret', { monitoring: { enabled: true } });
    await eventually(
      async () => {
        const degraded = condition(await getCr('mysqlclusters', 'nosecret'), 'Degraded');
        assert.deepEqual([degraded?.status, degraded?.reason], ['True', 'CredentialsMissing']);
        assert.match(degraded?.message ?? '', /Secret nosecret-passwords has no exporter-password key/);
      },
      { description: 'CredentialsMissing naming the exporter-password key' },
    );
    const containers = async () =>
      (
        (await apps.readNamespacedStatefulSet({ namespace: ns, name: 'nosecret' })).spec?.template.spec?.containers ??
        []
      ).map((c) => c.name);
    assert.deepEqual(await containers(), ['mysql', 'agent'], 'the StatefulSet kept as it was');
    await core.patchNamespacedSecret(
      {
        namespace: ns,
        name: 'nosecret-passwords',
        body: { stringData: { 'exporter-password': 'horse-horse-staple' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await patchSpec('mysqlclusters', 'nosecret', { mysqlConf: { max_connections: '300' } });
    await eventually(
      async () => {
        assert.deepEqual(await containers(), ['mysql', 'agent', 'metrics']);
        assert.equal(condition(await getCr('mysqlclusters', 'nosecret'), 'Degraded')?.status, 'False');
      },
      { description: 'the metrics sidecar once the Secret has its key' },
    );
  });

  it('refuses a replication password longer than MySQL accepts, naming the Secret and the limit, never the password', async () => {
    const tooLong = 'x'.repeat(33);
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'long-passwords' },
        stringData: {
          'root-password': 'fine-root-password',
          'replication-password': tooLong,
          'admin-password': 'fine-admin-password',
          'clone-password': 'fine-clone-password',
          'backup-password': 'fine-backup-password',
        },
      },
    });
    await create('mysqlclusters', 'MySQLCluster', 'long', { replicas: 2, credentialsSecretName: 'long-passwords' });
    await eventually(
      async () => {
        const cr = await getCr('mysqlclusters', 'long');
        const degraded = condition(cr, 'Degraded');
        assert.deepEqual([degraded?.status, degraded?.reason], ['True', 'CredentialsInvalid']);
        assert.match(
          degraded?.message ?? '',
          /Secret long-passwords key replication-password is longer than 32 characters/,
        );
        assert.ok((await events('long')).some((e) => e.type === 'Warning' && e.reason === 'CredentialsInvalid'));
      },
      { description: 'a CredentialsInvalid condition and Event' },
    );
    await assert.rejects(apps.readNamespacedStatefulSet({ namespace: ns, name: 'long' }), notFound);
    const everything = JSON.stringify([await getCr('mysqlclusters', 'long'), await events('long')]);
    assert.ok(!everything.includes(tooLong), 'the password appears in status or an Event');
  });

  it('reports a backup volume that does not exist, and clears it once the claim is created', async () => {
    await create('mysqlclusters', 'MySQLCluster', 'backed', {
      replicas: 1,
      backup: { schedule: '@daily', persistentVolumeClaimName: 'backed-dumps' },
    });
    await eventually(
      async () => {
        const cr = await getCr('mysqlclusters', 'backed');
        assert.deepEqual(
          [condition(cr, 'Degraded')?.status, condition(cr, 'Degraded')?.reason],
          ['True', 'BackupVolumeMissing'],
        );
        assert.match(
          condition(cr, 'Degraded')?.message ?? '',
          /PersistentVolumeClaim backed-dumps named in spec\.backup\.persistentVolumeClaimName does not exist/,
        );
        assert.ok((await events('backed')).some((e) => e.type === 'Warning' && e.reason === 'BackupVolumeMissing'));
      },
      { description: 'a BackupVolumeMissing condition and Event' },
    );
    // What the shipped alert Recon8sDegraded reads.
    const degradedSeries = { kind: 'MySQLCluster', namespace: ns, name: 'backed', reason: 'BackupVolumeMissing' };
    assert.equal(await valueOf(controller.metrics.resourceDegraded, degradedSeries), 1);
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'backed-dumps' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    // Nothing else changes: the watch of the claim by name wakes the cluster.
    await eventually(
      async () => {
        assert.notEqual(condition(await getCr('mysqlclusters', 'backed'), 'Degraded')?.reason, 'BackupVolumeMissing');
        // The series goes with the reason.
        const { values } = await controller.metrics.resourceDegraded.get();
        assert.ok(!values.some((v) => v.labels.name === 'backed' && v.labels.reason === 'BackupVolumeMissing'));
      },
      { description: 'the condition and its recon8s_resource_degraded series to clear' },
    );
  });

  it("shows the autoscaler's replicas as DESIRED, and refuses kubectl scale on an autoscaled App", async () => {
    await create('apps', 'App', 'auto', {
      image: 'nginx',
      resources: { requests: { cpu: '100m' } },
      autoscaling: { minReplicas: 2, maxReplicas: 8 },
    });
    await eventually(() => deployment('auto'), { description: 'the Deployment' });
    // What the HorizontalPodAutoscaler does (no HPA controller runs in this control plane).
    await apps.patchNamespacedDeploymentScale(
      { namespace: ns, name: 'auto', body: { spec: { replicas: 6 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        assert.equal((await getCr('apps', 'auto')).status?.desiredReplicas, 6);
        assert.equal(columns('apps', 'auto').DESIRED, '6');
      },
      { description: "DESIRED to show the autoscaler's 6" },
    );
    const scale = kubectl(controlPlane(), ['scale', 'app', 'auto', '-n', ns, '--replicas=3']);
    assert.notEqual(scale.status, 0, 'kubectl scale of an autoscaled App was accepted');
    assert.match(scale.stderr, /replicas is left to the HorizontalPodAutoscaler while autoscaling is set/);
  });

  it('leaves the children alone while paused, shows it, and converges as soon as it is cleared', async () => {
    await create('apps', 'App', 'held', { image: 'nginx:1.27', ports: [{ port: 80 }] });
    await eventually(
      async () => {
        await core.readNamespacedService({ namespace: ns, name: 'held' });
      },
      { description: 'the Service' },
    );
    await patchSpec('apps', 'held', { paused: true });
    await eventually(
      async () => {
        const cr = await getCr('apps', 'held');
        assert.deepEqual(
          [condition(cr, 'Progressing')?.status, condition(cr, 'Progressing')?.reason],
          ['False', 'Paused'],
        );
        assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
      },
      { description: 'Progressing=False/Paused' },
    );
    assert.equal(columns('apps', 'held').PAUSED, 'true');
    await patchSpec('apps', 'held', { image: 'nginx:1.28' });
    await core.deleteNamespacedService({ namespace: ns, name: 'held' });
    // Several resyncs (3 s each) go by: nothing may be applied or recreated meanwhile.
    const reconciles = (): Promise<number> =>
      valueOf(controller.metrics.reconcileTotal, { controller: 'recon8s', result: 'success' });
    const before = await reconciles();
    await eventually(async () => assert.ok((await reconciles()) >= before + 4), {
      timeoutMs: 30_000,
      description: 'a few resyncs',
    });
    assert.equal((await deployment('held')).spec?.template.spec?.containers[0]?.image, 'nginx:1.27');
    await assert.rejects(
      core.readNamespacedService({ namespace: ns, name: 'held' }),
      notFound,
      'a paused App recreated its Service',
    );

    await patchSpec('apps', 'held', { paused: false });
    await eventually(
      async () => {
        assert.equal((await deployment('held')).spec?.template.spec?.containers[0]?.image, 'nginx:1.28');
        await core.readNamespacedService({ namespace: ns, name: 'held' });
        assert.notEqual(condition(await getCr('apps', 'held'), 'Progressing')?.reason, 'Paused');
      },
      { description: 'the App to converge after resuming' },
    );
  });
});
