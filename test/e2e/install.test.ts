import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { DEFAULT_OPERATOR_NAMESPACE, METRICS_PORT, METRICS_SERVICE, OPERATOR_NAME } from '../../constructs/index.js';
import { eventually } from '../integration/eventually.js';
import { withSynthesizedOperator } from '../integration/support/operator-manifests.js';
import { NODE_HOOK_TIMEOUT_MS, useSharedNode } from './cluster.js';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';
/** Fixed: the install names it (credentialsNamespaces) before the namespace exists. */
const NS = 'shop-e2e';
interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface CustomResource {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

/**
 * The operator as users install it: `kubectl apply -f dist/install.yaml` on the real node, its own image
 * (built from `npm pack` output the way the Dockerfile does), running as its own ServiceAccount under
 * Pod Security "restricted", passing its probes, electing a leader, and reconciling an App and a
 * MySQLCluster to Ready; its /metrics answer from inside the cluster.
 */
describe('the operator installed from dist/install.yaml on the real node', function () {
  this.timeout(240_000);
  const node = useSharedNode();

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    // docs/install.md's order: the credentials namespace first (install.yaml grants Secrets there, never creates it).
    await node().kubectl(['create', 'namespace', NS]);
    await node().kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=restricted']);
    await withSynthesizedOperator({ RECON8S_CREDENTIALS_NAMESPACES: NS }, (dir) =>
      node().kubectl(['apply', '-f', dir]),
    );
  });
  after(async function () {
    this.timeout(120_000);
    // The operator would otherwise go on reconciling beside the next test file's in-process controller.
    await node()
      .kubectl(['delete', 'namespace', NS, DEFAULT_OPERATOR_NAMESPACE, '--wait=true', '--timeout=100s'])
      .catch(() => undefined);
  });

  it('runs as its own ServiceAccount under "restricted" and passes its probes', async () => {
    const kc = node().kubeConfig();
    const apps = kc.makeApiClient(AppsV1Api);
    await eventually(
      async () => {
        const d = await apps.readNamespacedDeployment({ namespace: DEFAULT_OPERATOR_NAMESPACE, name: OPERATOR_NAME });
        assert.equal(d.status?.availableReplicas, d.spec?.replicas, JSON.stringify(d.status?.conditions));
      },
      { timeoutMs: 120_000, maxIntervalMs: 1000, description: 'the operator Deployment to be available' },
    );
    const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: DEFAULT_OPERATOR_NAMESPACE });
    assert.ok(pods.items.length > 0);
    for (const pod of pods.items) {
      assert.equal(pod.spec?.serviceAccountName, OPERATOR_NAME);
      assert.ok(
        pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        `${pod.metadata?.name} not Ready`,
      );
    }
    const namespace = await kc.makeApiClient(CoreV1Api).readNamespace({ name: DEFAULT_OPERATOR_NAMESPACE });
    assert.equal(namespace.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
  });

  it('reconciles an App and a MySQLCluster to Ready', async () => {
    const custom = node().kubeConfig().makeApiClient(CustomObjectsApi);
    const create = (plural: string, kind: string, name: string, spec: Record<string, unknown>): Promise<object> =>
      custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name }, spec },
      });
    await create('apps', 'App', 'web', {
      image: node().images.web,
      imagePullPolicy: 'Never',
      replicas: 1,
      ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
    });
    await create('mysqlclusters', 'MySQLCluster', 'db', {
      replicas: 1,
      version: '9.7',
      image: node().images.mysql,
      imagePullPolicy: 'Never',
      resources: { requests: { cpu: '100m', memory: '512Mi' }, limits: { memory: '1Gi' } },
    });
    for (const [plural, name] of [
      ['apps', 'web'],
      ['mysqlclusters', 'db'],
    ] as const) {
      await eventually(
        async () => {
          const cr = (await custom.getNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace: NS,
            plural,
            name,
          })) as CustomResource;
          const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
          assert.equal(ready?.status, 'True', `${plural}/${name}: ${JSON.stringify(cr.status?.conditions)}`);
          assert.equal(cr.status?.observedGeneration, cr.metadata.generation);
        },
        {
          timeoutMs: 180_000,
          maxIntervalMs: 2000,
          description: `${plural}/${name} Ready, reconciled by the operator pod`,
        },
      );
    }
  });

  it('answers /metrics from inside the cluster', async () => {
    const host = `${METRICS_SERVICE}.${DEFAULT_OPERATOR_NAMESPACE}.svc.cluster.local`;
    // Every replica answers; the Service picks one at random, and only the leader has reconciled.
    await eventually(
      async () => {
        // The MySQL member has bash: its /dev/tcp is the HTTP client.
        const { stdout } = await node().kubectl([
          'exec',
          '-n',
          NS,
          'db-0',
          '-c',
          'mysql',
          '--',
          'bash',
          '-c',
          `exec 3<>/dev/tcp/${host}/${METRICS_PORT} && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`,
        ]);
        assert.match(stdout, /^HTTP\/1\.[01] 200/);
        assert.match(stdout, /rest_client_requests_total\{/);
        assert.match(stdout, /controller_runtime_reconcile_total\{controller="recon8s",result="success"\} [1-9]/);
      },
      { timeoutMs: 60_000, description: "the leader's /metrics through the Service" },
    );
  });
});
