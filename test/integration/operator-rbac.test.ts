import assert from 'node:assert/strict';
import { valueOf } from '../../lib/observability/metrics.js';
import type { KubeConfig, KubernetesObject as LiveObject, V1PolicyRule } from '@kubernetes/client-node';
import {
  AuthenticationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { render } from '../../constructs/index.js';
import type { KubernetesObject, Recon8sResource } from '../../constructs/index.js';
import {
  CREDENTIALS_CLUSTER_ROLE,
  DEFAULT_OPERATOR_NAMESPACE,
  LEADER_ELECTION_LEASE,
  OPERATOR_NAME,
} from '../../constructs/index.js';
import { CHILD_TYPES, OWNER_KINDS } from '../../lib/controller/kinds.js';
import type { Controller } from '../../lib/controller/controller.js';
import { startController } from '../../lib/controller/controller.js';
import { apiError, createKubeClient } from '../../lib/kube/index.js';
import { jsonLogger } from '../../lib/observability/logger.js';
import { DEFAULT_CONTROLLERS, startControlPlane } from '../controlplane/index.js';
import type { ControlPlane, Credentials } from '../controlplane/index.js';
import { eventually } from './eventually.js';
import { kubectl } from './support/kubectl.js';
import type { Access } from './support/operator-manifests.js';
import { canI, describeAccess, restRequests, withSynthesizedOperator } from './support/operator-manifests.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';
const API_VERSION = `${GROUP}/${VERSION}`;
const OPERATOR_NS = DEFAULT_OPERATOR_NAMESPACE;
/** Listed in credentialsNamespaces: the controller may get, watch and create Secrets here. */
const GRANTED = 'shop';
/** Not listed: no Secrets for the controller here. */
const FORBIDDEN = 'no-secrets';
const IDENTITY = 'recon8s-test-0';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface CustomResource extends LiveObject {
  metadata: { name: string; namespace: string; uid: string; generation: number };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[]; credentialsSecretName?: string };
}

const is403 = (e: unknown): boolean => apiError(e).code === 403;

/**
 * The operator exactly as installed: `kubectl apply -f dist/install.yaml` on an empty cluster, then the
 * controller run in this process with the token of the ServiceAccount recon8s — the identity and
 * the grants the Deployment's pods get, nothing more. Its own control plane, because the API server
 * runs the OwnerReferencesPermissionEnforcement admission plugin (as OpenShift and hardened clusters
 * do): setting blockOwnerDeletion then needs `update` on the owner's /finalizers, which the default
 * admission chain never checks.
 */
describe('operator install and least-privilege RBAC (own control plane, OwnerReferencesPermissionEnforcement)', function () {
  this.timeout(60_000);
  let cp: ControlPlane;
  let admin: KubeConfig;
  let applyOutput: string;
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
    for (const name of [GRANTED, FORBIDDEN]) await core.createNamespace({ body: { metadata: { name } } });

    // The whole install, as a user runs it: kubectl apply -f dist/install.yaml (client-side, in file order).
    applyOutput = await withSynthesizedOperator({ RECON8S_CREDENTIALS_NAMESPACES: GRANTED }, (dir) => {
      const r = kubectl(cp, ['apply', '-f', dir]);
      assert.equal(r.status, 0, r.stderr);
      // Applying it again (an upgrade with nothing new) works and leaves nothing to change. (kubectl says
      // "configured" for the PodDisruptionBudget every time: its selector has patch strategy "replace".)
      const again = kubectl(cp, ['apply', '-f', dir]);
      assert.equal(again.status, 0, again.stderr);
      const diff = kubectl(cp, ['diff', '-f', dir]);
      assert.equal(diff.status, 0, `kubectl diff after a second apply:\n${diff.stdout}${diff.stderr}`);
      return r.stdout;
    });
    const established = kubectl(cp, [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      `crd/apps.${GROUP}`,
      `crd/mysqlclusters.${GROUP}`,
    ]);
    assert.equal(established.status, 0, established.stderr);

    sa = await cp.serviceAccountKubeConfig(OPERATOR_NS, OPERATOR_NAME);
    const starting = startController({
      kubeConfig: sa.kubeConfig(),
      // Cluster-wide, like the Deployment (no --namespaces).
      leaderElection: { namespace: OPERATOR_NS, identity: IDENTITY },
      metricsAddr: '127.0.0.1:0',
      healthAddr: '127.0.0.1:0',
      workers: 2,
      mysqlWorkers: 3,
      resyncPeriodMs: 60_000,
      logger: jsonLogger({ level: 'debug', write: (l) => logLines.push(l) }),
    });
    // startController resolves once every informer has listed: a list it may not do never ends.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        void starting.then(
          (c) => c.stop(),
          () => undefined,
        );
        reject(
          new Error(
            `the controller did not sync in 45 s as ${sa.user}; warnings:\n${logLines
              .filter((l) => /"level":"(warn|error)"/.test(l))
              .slice(-20)
              .join('\n')}`,
          ),
        );
      }, 45_000);
    });
    try {
      controller = await Promise.race([starting, timeout]);
    } finally {
      clearTimeout(timer);
    }
  });

  after(async function () {
    this.timeout(30_000);
    await controller?.stop();
    await cp?.stop();
  });

  const custom = (): CustomObjectsApi => admin.makeApiClient(CustomObjectsApi);
  const objects = (): KubernetesObjectApi => KubernetesObjectApi.makeApiClient(admin);
  const plural = (kind: string): string => (kind === 'App' ? 'apps' : 'mysqlclusters');
  const createCr = async (
    kind: 'App' | 'MySQLCluster',
    namespace: string,
    name: string,
    spec: Record<string, unknown>,
  ): Promise<CustomResource> =>
    (await custom().createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: plural(kind),
      body: { apiVersion: API_VERSION, kind, metadata: { name }, spec },
    })) as CustomResource;
  const getCr = async (kind: string, namespace: string, name: string): Promise<CustomResource> =>
    (await custom().getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: plural(kind),
      name,
    })) as CustomResource;
  const mergePatch = (kind: string, namespace: string, name: string, body: object): Promise<object> =>
    custom().patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace, plural: plural(kind), name, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const condition = (cr: CustomResource, type: string): Condition | undefined =>
    cr.status?.conditions?.find((c) => c.type === type);
  const eventReasons = async (namespace: string, name: string): Promise<string[]> =>
    (
      await admin
        .makeApiClient(CoreV1Api)
        .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })
    ).items.map((e) => e.reason ?? '');
  const metrics = async (): Promise<string> => (await controller?.metrics.registry.metrics()) ?? '';
  const logTail = (): string => logLines.slice(-15).join('\n');

  /** Every child render() gives for the resource exists, owned by it (controller, blockOwnerDeletion). */
  const assertChildren = async (cr: CustomResource): Promise<string[]> => {
    const desired = render({
      apiVersion: API_VERSION,
      kind: cr.kind,
      metadata: { name: cr.metadata.name, namespace: cr.metadata.namespace },
      spec: cr.spec,
    } as unknown as Recon8sResource);
    const seen: string[] = [];
    for (const child of desired) {
      const live = await objects().read({
        apiVersion: child.apiVersion,
        kind: child.kind,
        metadata: { name: child.metadata.name, namespace: cr.metadata.namespace },
      });
      assert.deepEqual(
        JSON.parse(JSON.stringify(live.metadata?.ownerReferences)),
        [
          {
            apiVersion: API_VERSION,
            kind: cr.kind,
            name: cr.metadata.name,
            uid: cr.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
        `${child.kind}/${child.metadata.name}`,
      );
      seen.push(`${child.kind}/${child.metadata.name}`);
    }
    return seen.sort();
  };

  it('installs with one `kubectl apply -f dist/install.yaml`: Namespace and CRDs first, then the rest', async () => {
    const lines = applyOutput.trim().split('\n');
    assert.match(lines[0] ?? '', /^namespace\/recon8s-system created$/);
    assert.match(lines[1] ?? '', /^customresourcedefinition\.apiextensions\.k8s\.io\/apps\.recon8s\.dev created$/);
    assert.match(
      lines[2] ?? '',
      /^customresourcedefinition\.apiextensions\.k8s\.io\/mysqlclusters\.recon8s\.dev created$/,
    );
    for (const what of [
      'serviceaccount/recon8s',
      'clusterrole.rbac.authorization.k8s.io/recon8s',
      'clusterrole.rbac.authorization.k8s.io/recon8s-credentials',
      'clusterrolebinding.rbac.authorization.k8s.io/recon8s',
      'role.rbac.authorization.k8s.io/recon8s-leader-election',
      'rolebinding.rbac.authorization.k8s.io/recon8s-leader-election',
      'rolebinding.rbac.authorization.k8s.io/recon8s-credentials',
      'deployment.apps/recon8s',
      'poddisruptionbudget.policy/recon8s',
      'service/recon8s-metrics',
    ]) {
      assert.ok(lines.includes(`${what} created`), `${what} in:\n${applyOutput}`);
    }
    const ns = await admin.makeApiClient(CoreV1Api).readNamespace({ name: OPERATOR_NS });
    assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
    // The credentials grant went into the namespace listed at synth time, and only there.
    const bindings = await admin
      .makeApiClient(RbacAuthorizationV1Api)
      .listRoleBindingForAllNamespaces({ fieldSelector: `metadata.name=${CREDENTIALS_CLUSTER_ROLE}` });
    assert.deepEqual(
      bindings.items.map((b) => b.metadata?.namespace),
      [GRANTED],
    );
  });

  it(`runs as the ServiceAccount ${OPERATOR_NS}/${OPERATOR_NAME}`, async () => {
    const review = await sa.kubeConfig().makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    assert.equal(review.status?.userInfo?.username, `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_NAME}`);
    assert.ok(!review.status?.userInfo?.groups?.includes('system:masters'));
  });

  it('holds the Lease in the operator namespace', async () => {
    await eventually(
      async () => {
        const lease = await admin
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace: OPERATOR_NS, name: LEADER_ELECTION_LEASE });
        assert.equal(lease.spec?.holderIdentity, IDENTITY);
        assert.ok(controller?.isActive(), 'the controller leads and reconciles');
      },
      { timeoutMs: 20_000, description: `the Lease ${OPERATOR_NS}/${LEADER_ELECTION_LEASE}` },
    );
  });

  it('reconciles an App end to end: children owned by it, status, Events, updates and pruning', async () => {
    await createCr('App', GRANTED, 'web', {
      image: 'nginx:1.27',
      replicas: 2,
      ports: [{ name: 'http', port: 80, targetPort: 8080 }],
    });
    await createCr('App', GRANTED, 'scaled', {
      image: 'nginx:1.27',
      resources: { requests: { cpu: '100m' } },
      autoscaling: { minReplicas: 2, maxReplicas: 4 },
    });
    for (const name of ['web', 'scaled']) {
      await eventually(
        async () => {
          const cr = await getCr('App', GRANTED, name);
          await assertChildren(cr);
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
          assert.equal(condition(cr, 'Degraded')?.status, 'False', condition(cr, 'Degraded')?.message);
          assert.ok((await eventReasons(GRANTED, name)).includes('Applied'), 'an Applied event');
        },
        { timeoutMs: 20_000, description: `App ${name} to converge; log tail:\n${logTail()}` },
      );
    }
    assert.deepEqual(await assertChildren(await getCr('App', GRANTED, 'scaled')), [
      'Deployment/scaled',
      'HorizontalPodAutoscaler/scaled',
      'PodDisruptionBudget/scaled',
    ]);
    // An update (patch of existing children), then a prune (delete).
    await mergePatch('App', GRANTED, 'web', { spec: { replicas: 3, ports: null } });
    await eventually(
      async () => {
        const cr = await getCr('App', GRANTED, 'web');
        assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
        assert.deepEqual(await assertChildren(cr), ['Deployment/web', 'PodDisruptionBudget/web']);
        const d = (await objects().read({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: GRANTED },
        })) as LiveObject & { spec?: { replicas?: number } };
        assert.equal(d.spec?.replicas, 3);
        await assert.rejects(
          admin.makeApiClient(CoreV1Api).readNamespacedService({ namespace: GRANTED, name: 'web' }),
          (e: unknown) => apiError(e).code === 404,
        );
        assert.ok((await eventReasons(GRANTED, 'web')).includes('Pruned'), 'a Pruned event');
      },
      { timeoutMs: 20_000, description: `App web to scale and lose its Service; log tail:\n${logTail()}` },
    );
  });

  it('reconciles a MySQLCluster end to end: its credentials Secret, children owned by it, status and Events', async () => {
    // The backup volume is the user's to create; without it the cluster is Degraded (BackupVolumeMissing).
    await admin.makeApiClient(CoreV1Api).createNamespacedPersistentVolumeClaim({
      namespace: GRANTED,
      body: {
        metadata: { name: 'db-backups' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    // Delete on deletion: the generated Secret is then owned by the cluster (blockOwnerDeletion too).
    await createCr('MySQLCluster', GRANTED, 'db', {
      replicas: 2,
      backup: { schedule: '0 3 * * *', persistentVolumeClaimName: 'db-backups' },
      pvcRetention: { whenDeleted: 'Delete' },
    });
    await eventually(
      async () => {
        const cr = await getCr('MySQLCluster', GRANTED, 'db');
        const children = await assertChildren(cr);
        assert.ok(
          children.includes('StatefulSet/db') &&
            children.includes('CronJob/db-backup') &&
            children.some((c) => c.startsWith('ConfigMap/')),
          children.join(', '),
        );
        assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
        assert.equal(cr.status?.credentialsSecretName, 'db-credentials');
        assert.equal(condition(cr, 'Degraded')?.status, 'False', condition(cr, 'Degraded')?.message);
        const secret = await admin
          .makeApiClient(CoreV1Api)
          .readNamespacedSecret({ namespace: GRANTED, name: 'db-credentials' });
        assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
          'admin-password',
          'backup-password',
          'clone-password',
          'exporter-password',
          'replication-password',
          'root-password',
        ]);
        assert.deepEqual(
          secret.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.blockOwnerDeletion]),
          [['MySQLCluster', 'db', cr.metadata.uid, true]],
        );
        const reasons = await eventReasons(GRANTED, 'db');
        assert.ok(reasons.includes('CredentialsCreated') && reasons.includes('Applied'), reasons.join(', '));
      },
      { timeoutMs: 20_000, description: `MySQLCluster db to converge; log tail:\n${logTail()}` },
    );
  });

  it('reconciles MySQLClusters on workers of their own, apart from the Apps', async () => {
    const text = await metrics();
    const reconciled = (controllerName: string): number =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`controller_runtime_reconcile_total{controller="${controllerName}"`))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const workers = (controllerName: string): number =>
      Number(
        new RegExp(
          `^controller_runtime_max_concurrent_reconciles\\{controller="${controllerName}"\\} (\\d+)$`,
          'm',
        ).exec(text)?.[1] ?? -1,
      );
    assert.ok(reconciled('recon8s') > 0, 'the App was reconciled by the App workers');
    assert.ok(reconciled('recon8s-mysqlcluster') > 0, 'the MySQLCluster by its own');
    assert.equal(workers('recon8s'), 2);
    assert.equal(workers('recon8s-mysqlcluster'), 3);
  });

  it('was refused nothing on the way (rest_client_requests_total{code="403"} is 0)', async () => {
    await eventually(
      async () =>
        assert.equal(controller ? await valueOf(controller.metrics.workqueue.depth, { name: 'recon8s' }) : -1, 0),
      { timeoutMs: 20_000, description: 'an idle work queue' },
    );
    const text = await metrics();
    assert.ok(restRequests(text, '200') > 0, 'requests are counted');
    assert.equal(
      restRequests(text, '403'),
      0,
      `403s:\n${text
        .split('\n')
        .filter((l) => l.includes('code="403"'))
        .join('\n')}\n${logTail()}`,
    );
    assert.equal(restRequests(text, '401'), 0);
    assert.ok(!logLines.some((l) => /forbidden/i.test(l)), 'no "forbidden" in the log');
  });

  describe('what it may do, and nothing else', () => {
    /** Everything the ClusterRole recon8s grants, kind by kind, from the controller's own list of child kinds. */
    const granted = (): Access[] => {
      const out: Access[] = [];
      for (const kind of OWNER_KINDS) {
        for (const verb of ['get', 'list', 'watch', 'patch'])
          out.push(
            { verb, group: kind.group, resource: kind.plural, namespace: GRANTED },
            { verb, group: kind.group, resource: kind.plural },
          );
        for (const verb of ['get', 'patch'])
          out.push({ verb, group: kind.group, resource: kind.plural, subresource: 'status', namespace: FORBIDDEN });
        out.push({
          verb: 'update',
          group: kind.group,
          resource: kind.plural,
          subresource: 'finalizers',
          namespace: FORBIDDEN,
        });
      }
      for (const type of Object.values(CHILD_TYPES).flat()) {
        const group = type.apiVersion.includes('/') ? (type.apiVersion.split('/')[0] ?? '') : '';
        for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'delete'])
          out.push({ verb, group, resource: type.plural, namespace: FORBIDDEN });
        for (const verb of ['list', 'watch']) out.push({ verb, group, resource: type.plural });
      }
      // delete: only a member's data claim, once the member is lost with its node (docs/mysql-ha.md#node-loss).
      for (const verb of ['get', 'list', 'watch', 'patch', 'delete'])
        out.push({ verb, group: '', resource: 'persistentvolumeclaims', namespace: FORBIDDEN });
      // Read-only, by name: is a member's node down, is its volume bound there (node loss).
      for (const resource of ['nodes', 'persistentvolumes']) out.push({ verb: 'get', group: '', resource });
      for (const verb of ['list', 'watch'])
        out.push({ verb, group: '', resource: 'pods', namespace: FORBIDDEN }, { verb, group: '', resource: 'pods' });
      // The role label the Services select by, and the one-at-a-time re-creation of a rolling update.
      for (const verb of ['patch', 'delete']) out.push({ verb, group: '', resource: 'pods', namespace: FORBIDDEN });
      out.push({ verb: 'create', group: '', resource: 'events', namespace: FORBIDDEN });
      // A MySQLCluster's cert-manager Certificate (spec.tls.issuerRef), in any namespace, watched by name.
      for (const verb of ['get', 'list', 'watch', 'create', 'patch'])
        out.push({ verb, group: 'cert-manager.io', resource: 'certificates', namespace: FORBIDDEN });
      // list and watch: the Secrets MySQLClusters name are watched by name.
      for (const verb of ['get', 'list', 'watch', 'create', 'patch'])
        out.push({ verb, group: '', resource: 'secrets', namespace: GRANTED });
      out.push({ verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: OPERATOR_NS });
      for (const verb of ['get', 'update'])
        out.push({
          verb,
          group: 'coordination.k8s.io',
          resource: 'leases',
          name: LEADER_ELECTION_LEASE,
          namespace: OPERATOR_NS,
        });
      return out;
    };

    const denied: Access[] = [
      // Secrets: not where there is no grant; never across namespaces; never change or delete one.
      ...['get', 'create', 'list', 'watch'].map((verb) => ({
        verb,
        group: '',
        resource: 'secrets',
        namespace: FORBIDDEN,
      })),
      ...['update', 'delete', 'deletecollection'].map((verb) => ({
        verb,
        group: '',
        resource: 'secrets',
        namespace: GRANTED,
      })),
      ...['get', 'list', 'watch'].map((verb) => ({ verb, group: '', resource: 'secrets' })),
      { verb: 'get', group: '', resource: 'secrets', namespace: 'kube-system' },
      // Pods: watched, labelled and deleted one by one (MySQL members), never created, entered or read from;
      // nodes and persistent volumes: read by name only, never listed, watched or changed.
      { verb: 'get', group: '', resource: 'pods', namespace: GRANTED },
      ...['create', 'update', 'deletecollection'].map((verb) => ({
        verb,
        group: '',
        resource: 'pods',
        namespace: GRANTED,
      })),
      { verb: 'patch', group: '', resource: 'pods', subresource: 'status', namespace: GRANTED },
      { verb: 'create', group: '', resource: 'pods', subresource: 'exec', namespace: GRANTED },
      { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace: GRANTED },
      ...['nodes', 'persistentvolumes'].flatMap((resource) =>
        ['list', 'watch', 'create', 'patch', 'update', 'delete'].map((verb) => ({ verb, group: '', resource })),
      ),
      // Namespaces, RBAC, CRDs, tokens, impersonation: no escalation path.
      ...['create', 'delete', 'update'].map((verb) => ({ verb, group: '', resource: 'namespaces', name: FORBIDDEN })),
      ...['create', 'update', 'escalate', 'bind'].map((verb) => ({
        verb,
        group: 'rbac.authorization.k8s.io',
        resource: 'clusterroles',
      })),
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings' },
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings', namespace: FORBIDDEN },
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: GRANTED },
      ...['create', 'update', 'delete'].map((verb) => ({
        verb,
        group: 'apiextensions.k8s.io',
        resource: 'customresourcedefinitions',
      })),
      {
        verb: 'create',
        group: '',
        resource: 'serviceaccounts',
        subresource: 'token',
        name: OPERATOR_NAME,
        namespace: OPERATOR_NS,
      },
      { verb: 'impersonate', group: '', resource: 'users' },
      { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: OPERATOR_NS },
      // Its own resources: it never creates, replaces or deletes them (only patches metadata and status).
      ...['create', 'update', 'delete'].map((verb) => ({ verb, group: GROUP, resource: 'apps', namespace: GRANTED })),
      { verb: 'delete', group: GROUP, resource: 'mysqlclusters', namespace: GRANTED },
      // Children: no replace (update), no deletecollection; PVCs are read, grown, and deleted one at a time.
      { verb: 'update', group: 'apps', resource: 'deployments', namespace: GRANTED },
      { verb: 'deletecollection', group: '', resource: 'configmaps', namespace: GRANTED },
      ...['create', 'update', 'deletecollection'].map((verb) => ({
        verb,
        group: '',
        resource: 'persistentvolumeclaims',
        namespace: GRANTED,
      })),
      { verb: 'update', group: 'apps', resource: 'deployments', subresource: 'scale', namespace: GRANTED },
      ...['list', 'patch', 'delete'].map((verb) => ({ verb, group: '', resource: 'events', namespace: GRANTED })),
      // cert-manager (spec.tls.issuerRef): its Certificate read, watched, created and patched, nothing else of cert-manager's.
      ...['update', 'delete', 'deletecollection'].map((verb) => ({
        verb,
        group: 'cert-manager.io',
        resource: 'certificates',
        namespace: GRANTED,
      })),
      { verb: 'patch', group: 'cert-manager.io', resource: 'certificates', subresource: 'status', namespace: GRANTED },
      ...['issuers', 'clusterissuers', 'certificaterequests'].map((resource) => ({
        verb: 'create',
        group: 'cert-manager.io',
        resource,
        namespace: GRANTED,
      })),
      // Leases: only its own, only in the operator namespace.
      ...['get', 'create', 'update'].flatMap((verb) =>
        [GRANTED, 'kube-system', 'default'].map((namespace) => ({
          verb,
          group: 'coordination.k8s.io',
          resource: 'leases',
          name: LEADER_ELECTION_LEASE,
          namespace,
        })),
      ),
      ...['get', 'update', 'delete'].map((verb) => ({
        verb,
        group: 'coordination.k8s.io',
        resource: 'leases',
        name: 'someone-elses',
        namespace: OPERATOR_NS,
      })),
      ...['list', 'watch', 'delete'].map((verb) => ({
        verb,
        group: 'coordination.k8s.io',
        resource: 'leases',
        namespace: OPERATOR_NS,
      })),
    ];

    it('is allowed every verb its ClusterRole, credentials binding and Role grant (SelfSubjectAccessReview)', async () => {
      const answers = await canI(sa.kubeConfig(), granted());
      assert.deepEqual(
        [...answers].filter(([, allowed]) => !allowed).map(([q]) => q),
        [],
      );
    });

    it('is denied Secrets without the grant, list of Secrets across namespaces, pods, namespaces, RBAC, CRDs, other Leases (SelfSubjectAccessReview)', async () => {
      const answers = await canI(sa.kubeConfig(), denied);
      assert.equal(answers.size, new Set(denied.map(describeAccess)).size);
      assert.deepEqual(
        [...answers].filter(([, allowed]) => allowed).map(([q]) => q),
        [],
      );
    });

    it('is refused the real calls with 403', async () => {
      const kc = sa.kubeConfig();
      const core = kc.makeApiClient(CoreV1Api);
      const calls: [string, () => Promise<unknown>][] = [
        [`list Secrets in ${FORBIDDEN}`, () => core.listNamespacedSecret({ namespace: FORBIDDEN })],
        ['list Secrets cluster-wide', () => core.listSecretForAllNamespaces()],
        [`read a Secret in ${FORBIDDEN}`, () => core.readNamespacedSecret({ namespace: FORBIDDEN, name: 'anything' })],
        // (patch is granted, for the generated Secret's ownerReference; RBAC cannot narrow it to fields, the code does.)
        [
          `replace a Secret in ${GRANTED}`,
          () =>
            core.replaceNamespacedSecret({
              namespace: GRANTED,
              name: 'db-credentials',
              body: { metadata: { name: 'db-credentials' }, stringData: { 'root-password': 'x' } },
            }),
        ],
        [
          `change a Secret in ${FORBIDDEN}`,
          () =>
            core.patchNamespacedSecret(
              { namespace: FORBIDDEN, name: 'anything', body: { stringData: { 'root-password': 'x' } } },
              setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
            ),
        ],
        [
          `delete the generated Secret in ${GRANTED}`,
          () => core.deleteNamespacedSecret({ namespace: GRANTED, name: 'db-credentials' }),
        ],
        [`delete every pod of ${GRANTED} at once`, () => core.deleteCollectionNamespacedPod({ namespace: GRANTED })],
        [`delete namespace ${FORBIDDEN}`, () => core.deleteNamespace({ name: FORBIDDEN })],
        [
          'create a ClusterRole',
          () =>
            kc.makeApiClient(RbacAuthorizationV1Api).createClusterRole({
              body: {
                metadata: { name: 'recon8s-escalation' },
                rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
              },
            }),
        ],
        [
          `create a Lease in ${GRANTED}`,
          () =>
            kc
              .makeApiClient(CoordinationV1Api)
              .createNamespacedLease({ namespace: GRANTED, body: { metadata: { name: LEADER_ELECTION_LEASE } } }),
        ],
        [
          'read a Lease in kube-system',
          () =>
            kc
              .makeApiClient(CoordinationV1Api)
              .readNamespacedLease({ namespace: 'kube-system', name: 'kube-controller-manager' }),
        ],
      ];
      for (const [what, call] of calls) await assert.rejects(call(), is403, `${what} must be 403`);
      // Nothing of the above got through.
      const secret = await admin
        .makeApiClient(CoreV1Api)
        .readNamespacedSecret({ namespace: GRANTED, name: 'db-credentials' });
      assert.equal(secret.metadata?.deletionTimestamp, undefined);
    });
  });

  describe('a namespace without the credentials grant', () => {
    it('makes a MySQLCluster there Degraded with reason CredentialsForbidden, and the controller carries on', async () => {
      await createCr('MySQLCluster', FORBIDDEN, 'orders', { replicas: 1 });
      const cr = await eventually(
        async () => {
          const cr = await getCr('MySQLCluster', FORBIDDEN, 'orders');
          assert.deepEqual(
            [condition(cr, 'Degraded')?.status, condition(cr, 'Degraded')?.reason],
            ['True', 'CredentialsForbidden'],
          );
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
          assert.ok(
            (await eventReasons(FORBIDDEN, 'orders')).includes('CredentialsForbidden'),
            'a CredentialsForbidden event',
          );
          return cr;
        },
        { timeoutMs: 20_000, description: `the CredentialsForbidden condition; log tail:\n${logTail()}` },
      );
      // The grant to make, to the letter: the controller asked the API server who it is.
      assert.match(
        condition(cr, 'Degraded')?.message ?? '',
        new RegExp(
          `kubectl create rolebinding recon8s-credentials -n no-secrets --clusterrole=recon8s-credentials --serviceaccount=${OPERATOR_NS}:${OPERATOR_NAME}\\)$`,
        ),
      );
      // The refusals are counted: the happy path's zero above means something.
      assert.ok(restRequests(await metrics(), '403') > 0, 'the Secrets 403s are counted');
      // The rest of the work goes on.
      assert.ok(controller?.isActive());
      await mergePatch('App', GRANTED, 'web', { spec: { replicas: 4 } });
      await eventually(
        async () => {
          const d = (await objects().read({
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'web', namespace: GRANTED },
          })) as LiveObject & { spec?: { replicas?: number } };
          assert.equal(d.spec?.replicas, 4);
        },
        { description: 'App web to still be reconciled' },
      );
    });

    it('recovers once the grant documented in the chart (and in the condition) is made', async () => {
      const r = kubectl(cp, [
        'create',
        'rolebinding',
        CREDENTIALS_CLUSTER_ROLE,
        '-n',
        FORBIDDEN,
        `--clusterrole=${CREDENTIALS_CLUSTER_ROLE}`,
        `--serviceaccount=${OPERATOR_NS}:${OPERATOR_NAME}`,
      ]);
      assert.equal(r.status, 0, r.stderr);
      await eventually(
        async () => {
          const answers = await canI(sa.kubeConfig(), [
            { verb: 'create', group: '', resource: 'secrets', namespace: FORBIDDEN },
          ]);
          assert.ok([...answers.values()].every(Boolean));
        },
        { description: 'the grant to take effect' },
      );
      // A change brings it back at once (otherwise the controller looks again within 30 s).
      await mergePatch('MySQLCluster', FORBIDDEN, 'orders', {
        metadata: { annotations: { 'example.com/touched': '1' } },
      });
      await eventually(
        async () => {
          const cr = await getCr('MySQLCluster', FORBIDDEN, 'orders');
          assert.equal(condition(cr, 'Degraded')?.status, 'False', condition(cr, 'Degraded')?.message);
          await admin
            .makeApiClient(CoreV1Api)
            .readNamespacedSecret({ namespace: FORBIDDEN, name: 'orders-credentials' });
        },
        { timeoutMs: 20_000, description: `MySQLCluster orders to get its credentials; log tail:\n${logTail()}` },
      );
    });
  });

  describe('why the verbs are what they are', () => {
    /** A user bound (in GRANTED) to exactly `rules`, once SelfSubjectAccessReview reflects `check`. */
    const userWith = async (user: string, rules: V1PolicyRule[], check: Access): Promise<KubeConfig> => {
      const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({ namespace: GRANTED, body: { metadata: { name: user }, rules } });
      await rbac.createNamespacedRoleBinding({
        namespace: GRANTED,
        body: {
          metadata: { name: user },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
      const kc = (await cp.mintCredentials({ user })).kubeConfig();
      await eventually(async () => assert.ok((await canI(kc, [check])).values().next().value), {
        description: `${user}'s Role to take effect`,
      });
      return kc;
    };
    const applyAs = async (kc: KubeConfig, obj: KubernetesObject | LiveObject): Promise<unknown> => {
      const client = createKubeClient({ kubeConfig: kc, fieldManager: 'recon8s' });
      try {
        return await client.apply(obj);
      } finally {
        await client.close();
      }
    };
    const configMap = (name: string, extra: Record<string, unknown> = {}): LiveObject =>
      ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: GRANTED, ...extra },
        data: { a: '1' },
      }) as LiveObject;
    const cmAccess = (verb: string): Access => ({ verb, group: '', resource: 'configmaps', namespace: GRANTED });

    it('a server-side apply that creates needs both create and patch; one that updates needs only patch', async () => {
      const patchOnly = await userWith(
        'ssa-patch-only',
        [{ apiGroups: [''], resources: ['configmaps'], verbs: ['patch'] }],
        cmAccess('patch'),
      );
      const createOnly = await userWith(
        'ssa-create-only',
        [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }],
        cmAccess('create'),
      );
      const both = await userWith(
        'ssa-create-patch',
        [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'patch'] }],
        cmAccess('create'),
      );
      await assert.rejects(applyAs(patchOnly, configMap('ssa-1')), is403, 'patch alone cannot create');
      await assert.rejects(applyAs(createOnly, configMap('ssa-1')), is403, 'create alone cannot apply');
      await applyAs(both, configMap('ssa-1'));
      await applyAs(patchOnly, { ...configMap('ssa-1'), data: { a: '2' } } as LiveObject);
    });

    it("blockOwnerDeletion on a child needs update on the owner's /finalizers", async () => {
      const owner = await createCr('App', GRANTED, 'owner', { image: 'nginx:1.27' });
      const ref = (blockOwnerDeletion: boolean): Record<string, unknown> => ({
        ownerReferences: [
          { apiVersion: API_VERSION, kind: 'App', name: 'owner', uid: owner.metadata.uid, blockOwnerDeletion },
        ],
      });
      const childRules = { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'patch', 'delete'] };
      const without = await userWith('owner-no-finalizers', [childRules], cmAccess('create'));
      await applyAs(without, configMap('owned-1', ref(false)));
      await assert.rejects(
        applyAs(without, configMap('owned-2', ref(true))),
        (e: unknown) => is403(e) && /blockOwnerDeletion/.test(apiError(e).message),
      );
      const withFinalizers = await userWith(
        'owner-finalizers',
        [childRules, { apiGroups: [GROUP], resources: ['apps/finalizers'], verbs: ['update'] }],
        { verb: 'update', group: GROUP, resource: 'apps', subresource: 'finalizers', namespace: GRANTED },
      );
      await applyAs(withFinalizers, configMap('owned-2', ref(true)));
    });
  });
});
