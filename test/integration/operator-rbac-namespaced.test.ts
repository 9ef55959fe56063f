import assert from 'node:assert/strict';
import type { KubeConfig, KubernetesObject as LiveObject } from '@kubernetes/client-node';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { DEFAULT_OPERATOR_NAMESPACE, OPERATOR_NAME } from '../../constructs/index.js';
import { CHILD_TYPES, OWNER_KINDS } from '../../lib/controller/kinds.js';
import type { Controller } from '../../lib/controller/controller.js';
import { startController } from '../../lib/controller/controller.js';
import { apiError } from '../../lib/kube/index.js';
import { jsonLogger } from '../../lib/observability/logger.js';
import { DEFAULT_CONTROLLERS, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane, Credentials } from '../controlplane/index.js';
import { eventually } from './eventually.js';
import { kubectl } from './support/kubectl.js';
import type { Access } from './support/operator-manifests.js';
import { canI, restRequests, withSynthesizedOperator } from './support/operator-manifests.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';
const OPERATOR_NS = DEFAULT_OPERATOR_NAMESPACE;
/** Watched, and a credentials namespace. */
const SHOP = 'shop';
/** Watched, no Secrets. */
const WEB = 'web';
/** Not watched: the operator has no right here at all. */
const OTHER = 'other-team';

const is403 = (e: unknown): boolean => apiError(e).code === 403;

/**
 * The install with `RECON8S_WATCHED_NAMESPACES`, as the README's quickstart and the Helm releases use
 * it: the ClusterRole recon8s is bound by a RoleBinding in each watched namespace and nowhere else, so
 * a stolen token of the operator's ServiceAccount can do nothing outside them — no CronJob in
 * kube-system mounting a Secret, no rewrite of CoreDNS's ConfigMap, no pod patched elsewhere — and the
 * controller, scoped to those namespaces (its --namespaces), still reconciles there without a single 403.
 * (operator-rbac.test.ts: the install that watches every namespace, and why each verb is there.)
 */
describe('operator install watching namespaces: RBAC granted there alone (own control plane)', function () {
  this.timeout(60_000);
  let cp: ControlPlane;
  let admin: KubeConfig;
  let sa: Credentials;
  let controller: Controller | undefined;
  const logLines: string[] = [];

  before(async function () {
    this.timeout(240_000);
    cp = await startControlPlane({
      controllers: DEFAULT_CONTROLLERS,
      apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
    });
    admin = cp.kubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    for (const name of [SHOP, WEB, OTHER]) await core.createNamespace({ body: { metadata: { name } } });
    // What an attacker would go for: CoreDNS's configuration.
    await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'coredns' }, data: { Corefile: '.:53 { forward . 10.0.0.53 }' } },
    });
    await withSynthesizedOperator(
      { RECON8S_WATCHED_NAMESPACES: `${SHOP},${WEB}`, RECON8S_CREDENTIALS_NAMESPACES: SHOP },
      (file) => {
        const r = kubectl(cp, ['apply', '-f', file]);
        assert.equal(r.status, 0, r.stderr);
      },
    );
    const established = kubectl(cp, [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      `crd/apps.${GROUP}`,
      `crd/mysqlclusters.${GROUP}`,
    ]);
    assert.equal(established.status, 0, established.stderr);
    sa = await cp.serviceAccountKubeConfig(OPERATOR_NS, OPERATOR_NAME);
    // Like the Deployment: --namespaces=shop,web.
    controller = await startController({
      kubeConfig: sa.kubeConfig(),
      namespaces: [SHOP, WEB],
      leaderElection: { namespace: OPERATOR_NS, identity: 'recon8s-namespaced-0' },
      metricsAddr: '127.0.0.1:0',
      healthAddr: '127.0.0.1:0',
      workers: 2,
      mysqlWorkers: 2,
      resyncPeriodMs: 60_000,
      logger: jsonLogger({ level: 'debug', write: (l) => logLines.push(l) }),
    });
  });

  after(async function () {
    this.timeout(30_000);
    await controller?.stop();
    await cp?.stop();
  });

  const custom = (): CustomObjectsApi => admin.makeApiClient(CustomObjectsApi);
  const logTail = (): string => logLines.slice(-15).join('\n');

  it('binds the ClusterRole recon8s in each watched namespace alone: the one ClusterRoleBinding naming the ServiceAccount is the read-only node reader', async () => {
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const mine = (subjects: { kind: string; name: string; namespace?: string }[] | undefined): boolean =>
      (subjects ?? []).some(
        (s) => s.kind === 'ServiceAccount' && s.namespace === OPERATOR_NS && s.name === OPERATOR_NAME,
      );
    const clusterBindings = (await rbac.listClusterRoleBinding()).items.filter((b) => mine(b.subjects));
    assert.deepEqual(
      clusterBindings.map((b) => `${b.metadata?.name} → ${b.roleRef.name}`),
      ['recon8s-node-reader → recon8s-node-reader'],
    );
    const bindings = (await rbac.listRoleBindingForAllNamespaces()).items.filter((b) => mine(b.subjects));
    assert.deepEqual(bindings.map((b) => `${b.metadata?.namespace}/${b.metadata?.name} → ${b.roleRef.name}`).sort(), [
      `${OPERATOR_NS}/recon8s-leader-election → recon8s-leader-election`,
      `${SHOP}/recon8s → recon8s`,
      `${SHOP}/recon8s-credentials → recon8s-credentials`,
      `${WEB}/recon8s → recon8s`,
    ]);
  });

  it('reconciles an App in each watched namespace and a MySQLCluster with its credentials, refused nothing', async () => {
    for (const namespace of [SHOP, WEB])
      await custom().createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: 'apps',
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'App',
          metadata: { name: 'web' },
          spec: { image: 'nginx:1.27' },
        },
      });
    await custom().createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: SHOP,
      plural: 'mysqlclusters',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: { replicas: 1 },
      },
    });
    const core = admin.makeApiClient(CoreV1Api);
    await eventually(
      async () => {
        for (const namespace of [SHOP, WEB]) {
          const d = await kubectlJson(['get', 'deployment', 'web', '-n', namespace]);
          assert.equal(d.metadata.ownerReferences?.[0]?.kind, 'App', `${namespace}/web`);
        }
        await kubectlJson(['get', 'statefulset', 'db', '-n', SHOP]);
        await core.readNamespacedSecret({ namespace: SHOP, name: 'db-credentials' });
      },
      { timeoutMs: 30_000, description: `the App and the MySQLCluster to converge; log tail:\n${logTail()}` },
    );
    const text = (await controller?.metrics.registry.metrics()) ?? '';
    assert.ok(restRequests(text, '200') > 0, 'requests are counted');
    assert.equal(restRequests(text, '403'), 0, `403s:\n${logTail()}`);
  });

  it('may do in a watched namespace what the ClusterRole grants, and none of it anywhere else (SelfSubjectAccessReview)', async () => {
    const childAccess = (namespace: string | undefined): Access[] => [
      ...OWNER_KINDS.flatMap((k) =>
        ['get', 'list', 'watch', 'patch'].map((verb) => ({ verb, group: k.group, resource: k.plural, namespace })),
      ),
      ...Object.values(CHILD_TYPES)
        .flat()
        .flatMap((t) =>
          ['list', 'watch', 'create', 'patch', 'delete'].map((verb) => ({
            verb,
            group: t.apiVersion.includes('/') ? (t.apiVersion.split('/')[0] ?? '') : '',
            resource: t.plural,
            namespace,
          })),
        ),
      ...['patch', 'delete'].map((verb) => ({ verb, group: '', resource: 'pods', namespace })),
      { verb: 'create', group: '', resource: 'events', namespace },
    ];
    const allowed = await canI(sa.kubeConfig(), [...childAccess(SHOP), ...childAccess(WEB)]);
    assert.deepEqual(
      [...allowed].filter(([, ok]) => !ok).map(([q]) => q),
      [],
    );
    // Elsewhere: an unwatched namespace, kube-system, the operator's own namespace, and cluster-wide.
    const denied = await canI(sa.kubeConfig(), [
      ...childAccess(OTHER),
      ...childAccess('kube-system'),
      ...childAccess(OPERATOR_NS),
      ...childAccess(undefined),
      { verb: 'get', group: '', resource: 'secrets', namespace: WEB },
      { verb: 'list', group: '', resource: 'namespaces' },
      { verb: 'get', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
    ]);
    assert.deepEqual(
      [...denied].filter(([, ok]) => ok).map(([q]) => q),
      [],
    );
  });

  it('is refused, with 403, a CronJob in kube-system that mounts a Secret, a rewrite of CoreDNS, a patch of a ConfigMap or pod of another namespace', async () => {
    const kc = sa.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const calls: [string, () => Promise<unknown>][] = [
      [
        'create a CronJob in kube-system that mounts a Secret',
        () =>
          kc.makeApiClient(BatchV1Api).createNamespacedCronJob({
            namespace: 'kube-system',
            body: {
              metadata: { name: 'stolen' },
              spec: {
                schedule: '* * * * *',
                jobTemplate: {
                  spec: {
                    template: {
                      spec: {
                        restartPolicy: 'Never',
                        containers: [{ name: 'x', image: 'busybox', volumeMounts: [{ name: 's', mountPath: '/s' }] }],
                        volumes: [{ name: 's', secret: { secretName: 'any' } }],
                      },
                    },
                  },
                },
              },
            },
          }),
      ],
      [
        "patch CoreDNS's ConfigMap in kube-system",
        () =>
          core.patchNamespacedConfigMap(
            { namespace: 'kube-system', name: 'coredns', body: { data: { Corefile: '.:53 { forward . 6.6.6.6 }' } } },
            merge,
          ),
      ],
      [
        `create a ConfigMap in ${OTHER}`,
        () => core.createNamespacedConfigMap({ namespace: OTHER, body: { metadata: { name: 'x' } } }),
      ],
      [`delete a pod in ${OTHER}`, () => core.deleteNamespacedPod({ namespace: OTHER, name: 'anything' })],
      [
        `list the Apps of ${OTHER}`,
        () =>
          kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace: OTHER,
            plural: 'apps',
          }),
      ],
      [
        `create a ConfigMap in ${OPERATOR_NS} (its own namespace: its Lease only)`,
        () => core.createNamespacedConfigMap({ namespace: OPERATOR_NS, body: { metadata: { name: 'x' } } }),
      ],
      ['list pods cluster-wide', () => core.listPodForAllNamespaces()],
    ];
    for (const [what, call] of calls) await assert.rejects(call(), is403, `${what} must be 403`);
    const corefile = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ namespace: 'kube-system', name: 'coredns' });
    assert.equal(corefile.data?.Corefile, '.:53 { forward . 10.0.0.53 }');
  });

  it(`leaves an App in a namespace it does not watch (${OTHER}) alone`, async () => {
    await custom().createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: OTHER,
      plural: 'apps',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'App',
        metadata: { name: 'web' },
        spec: { image: 'nginx:1.27' },
      },
    });
    // The App in a watched namespace changed since is reconciled: the controller had its chance at the other.
    await custom().patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace: SHOP, plural: 'apps', name: 'web', body: { spec: { replicas: 2 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const d = (await kubectlJson(['get', 'deployment', 'web', '-n', SHOP])) as LiveObject & {
          spec?: { replicas?: number };
        };
        assert.equal(d.spec?.replicas, 2);
      },
      { description: 'the watched App to be reconciled' },
    );
    const r = kubectl(cp, ['get', 'deployment', 'web', '-n', OTHER]);
    assert.notEqual(r.status, 0, 'no Deployment for the App of an unwatched namespace');
    assert.match(r.stderr, /NotFound/);
  });

  const kubectlJson = (
    args: string[],
  ): Promise<LiveObject & { metadata: { ownerReferences?: { kind: string }[] } }> => {
    const r = kubectl(cp, [...args, '-o', 'json']);
    if (r.status !== 0) return Promise.reject(new Error(r.stderr));
    return Promise.resolve(JSON.parse(r.stdout) as LiveObject & { metadata: { ownerReferences?: { kind: string }[] } });
  };
});
