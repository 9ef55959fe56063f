// A MySQLCluster's NetworkPolicy enforced on the real node: kube-router's policy controller (built from
// the Go module proxy, test/node/build-kube-router.sh) judges the pod traffic of the node's bridge, as a
// cluster's network plugin would. Its members still replicate and clone through the policy, a bound
// App's pod logs in (through its own App policy, egress restricted to DNS and its cluster), a pod of the
// same namespace that is not bound is refused on 3306 and the agent's port; with
// spec.networkPolicy.enabled false the controller prunes the policy and that pod connects. An App's own
// policy admits its declared port and refuses a port its container listens on but does not declare,
// until the App turns its policy off.
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { MYSQL_AGENT_PORT, MYSQL_AGENT_TLS_PORT } from '../../constructs/index.js';
import { WEB_PORT } from '../images/web.js';
import type { Controller } from '../../lib/controller/controller.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import type { PolicyController } from '../node/kube-router.js';
import { startPolicyController } from '../node/kube-router.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, freshRestrictedNamespace, useSharedNode } from './cluster.js';
import { mustSql, mysqlClusterResource, portOpen, rowsOn } from './support/mysql-members.js';

const NAME = 'db';
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1' };
const BOOTSTRAP_MS = 8 * 60_000;
/** kube-router reacts to a policy or pod change within seconds; a full resync is every 10 s here. */
const ENFORCED_MS = 60_000;

const RESTRICTED_POD = {
  securityContext: { runAsUser: 999, runAsGroup: 999, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  terminationGracePeriodSeconds: 0,
};
const RESTRICTED_CONTAINER = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

describe('a MySQLCluster NetworkPolicy enforced on the real node (kube-router)', function () {
  this.timeout(4 * 60_000);
  const node = useSharedNode();
  let kc: KubeConfig;
  let ns: string;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;
  let policies: PolicyController | undefined;
  let appPod = '';
  /** Pods of the Apps that serve WEB_PORT: `site` declares it, `hidden` declares another port only. */
  const webPods: Record<'site' | 'hidden', string> = { site: '', hidden: '' };

  const podIp = async (name: string): Promise<string> => {
    const ip = (await core.readNamespacedPod({ namespace: ns, name })).status?.podIP;
    assert.ok(ip, `${name} has no IP`);
    return ip;
  };
  /** SQL from inside the App's pod as its own account (from the mounted binding), TLS verified by name. */
  const asApp = async (sql: string): Promise<{ ok: boolean; out: string }> => {
    const script = [
      'set -eu',
      'b="$SERVICE_BINDING_ROOT/database"',
      'printf "[client]\\nuser=%s\\npassword=%s\\n" "$(cat "$b/username")" "$(cat "$b/password")" > /tmp/client.cnf',
      'exec timeout 10 mysql --defaults-extra-file=/tmp/client.cnf --host="$DB_HOST" --port="$DB_PORT" --connect-timeout=5 --ssl-mode=VERIFY_IDENTITY --ssl-ca="$DB_SSL_CA" --batch --skip-column-names "$DB_NAME" -e "$1"',
    ].join('\n');
    try {
      const { stdout } = await node().kubectl(['exec', '-n', ns, appPod, '--', 'bash', '-c', script, 'sql', sql]);
      return { ok: true, out: stdout.trim() };
    } catch (e) {
      return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
    }
  };

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    ns = await freshRestrictedNamespace(node(), 'netpol');
    // Before any pod of the test exists: every connection below is judged by it from the first packet.
    policies = await startPolicyController(node());
    controller = await startTestController(node(), { namespaces: [ns], resyncPeriodMs: 30_000 });
    await custom.createNamespacedCustomObject({
      ...GROUP,
      plural: 'mysqlclusters',
      namespace: ns,
      body: mysqlClusterResource(node().images.mysql, NAME, 2),
    });
    await custom.createNamespacedCustomObject({
      ...GROUP,
      plural: 'apps',
      namespace: ns,
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'web' },
        spec: {
          image: node().images.mysql,
          imagePullPolicy: 'Never',
          command: ['sleep', 'infinity'],
          securityContext: { runAsUser: 999, runAsGroup: 999 },
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '256Mi' } },
          database: { cluster: NAME, name: 'shop' },
          // The App's own policy too: its login below goes through DNS and 3306 egress rules only.
          networkPolicy: { restrictEgress: true },
        },
      },
    });
    // The web image listens on WEB_PORT; `hidden` declares only another port, which nothing serves.
    for (const [name, port] of [
      ['site', WEB_PORT],
      ['hidden', WEB_PORT + 1],
    ] as const)
      await custom.createNamespacedCustomObject({
        ...GROUP,
        plural: 'apps',
        namespace: ns,
        body: {
          apiVersion: 'recon8s.dev/v1alpha1',
          kind: 'App',
          metadata: { name },
          spec: {
            image: node().images.web,
            imagePullPolicy: 'Never',
            ports: [{ name: 'http', port }],
            resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
          },
        },
      });
    // A pod of the same namespace that no App binds: what any workload there could be.
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'stranger' },
        spec: {
          ...RESTRICTED_POD,
          containers: [
            {
              name: 'mysql',
              image: node().images.mysql,
              imagePullPolicy: 'Never',
              command: ['sleep', 'infinity'],
              securityContext: RESTRICTED_CONTAINER,
            },
          ],
        },
      },
    });
    await eventually(
      async () => {
        const cr = (await custom.getNamespacedCustomObject({
          ...GROUP,
          plural: 'mysqlclusters',
          namespace: ns,
          name: NAME,
        })) as { status?: { readyReplicas?: number; conditions?: { type: string; status: string }[] } };
        assert.equal(cr.status?.readyReplicas, 2);
        assert.equal(cr.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      },
      { timeoutMs: BOOTSTRAP_MS, intervalMs: 2000, description: 'both members Ready' },
    );
    const runningPod = (app: string): Promise<string> =>
      eventually(
        async () => {
          const pods = await core.listNamespacedPod({
            namespace: ns,
            labelSelector: `app.kubernetes.io/instance=${app}`,
          });
          const running = pods.items.find((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
          assert.ok(running?.metadata?.name, `no running ${app} pod`);
          return running.metadata.name;
        },
        { timeoutMs: 120_000, intervalMs: 2000, description: `a running ${app} pod` },
      );
    appPod = await runningPod('web');
    webPods.site = await runningPod('site');
    webPods.hidden = await runningPod('hidden');
    await eventually(
      async () =>
        assert.equal((await core.readNamespacedPod({ namespace: ns, name: 'stranger' })).status?.phase, 'Running'),
      { timeoutMs: 120_000, intervalMs: 1000, description: 'the stranger pod running' },
    );
  });
  after(async () => {
    await controller?.stop();
    await discardNamespace(node(), ns);
    await policies?.stop();
  });

  it('is applied by the controller: the members isolated, admitting the App pods by their binding label', async () => {
    const policy = await kc
      .makeApiClient(NetworkingV1Api)
      .readNamespacedNetworkPolicy({ namespace: ns, name: `${NAME}-mysql` });
    assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
    const own = await kc.makeApiClient(NetworkingV1Api).readNamespacedNetworkPolicy({ namespace: ns, name: 'web' });
    assert.deepEqual(own.spec?.policyTypes, ['Ingress', 'Egress'], 'the App\u2019s own policy');
    const web = await core.readNamespacedPod({ namespace: ns, name: appPod });
    assert.equal(web.metadata?.labels?.['recon8s.dev/mysql-cluster'], NAME);
  });

  it('lets the members replicate through it (the second member cloned the first and follows it)', async () => {
    await mustSql(
      kc,
      ns,
      `${NAME}-0`,
      'CREATE DATABASE IF NOT EXISTS e2e; CREATE TABLE IF NOT EXISTS e2e.t (id INT PRIMARY KEY); INSERT INTO e2e.t VALUES (1)',
    );
    await rowsOn(kc, ns, `${NAME}-1`, '1');
  });

  it('lets a bound App\u2019s pod log in with its account', async () => {
    const r = await eventually(
      async () => {
        const res = await asApp('SELECT CURRENT_USER()');
        assert.ok(res.ok, res.out);
        return res;
      },
      { timeoutMs: ENFORCED_MS, intervalMs: 2000, description: 'the App logs in' },
    );
    assert.match(r.out, /@%$/);
  });

  it('refuses a pod that is not bound, on 3306 and both of the agent\u2019s ports of every member', async () => {
    for (const member of [`${NAME}-0`, `${NAME}-1`]) {
      const ip = await podIp(member);
      for (const port of [3306, MYSQL_AGENT_PORT, MYSQL_AGENT_TLS_PORT])
        await eventually(
          async () => assert.equal(await portOpen(kc, ns, 'stranger', ip, port), false, `${member}:${port} open`),
          {
            timeoutMs: ENFORCED_MS,
            intervalMs: 2000,
            description: `${member}:${port} refused to the stranger`,
          },
        );
    }
    // And stays refused: not a moment between two syncs.
    assert.equal(await portOpen(kc, ns, 'stranger', await podIp(`${NAME}-0`), 3306), false);
  });

  it('admits an App\u2019s declared port to a pod of the namespace, and refuses a port its container serves undeclared', async () => {
    const site = await podIp(webPods.site);
    const hidden = await podIp(webPods.hidden);
    await eventually(async () => assert.equal(await portOpen(kc, ns, 'stranger', site, WEB_PORT), true), {
      timeoutMs: ENFORCED_MS,
      intervalMs: 2000,
      description: `site:${WEB_PORT} (declared) admitted`,
    });
    await eventually(async () => assert.equal(await portOpen(kc, ns, 'stranger', hidden, WEB_PORT), false), {
      timeoutMs: ENFORCED_MS,
      intervalMs: 2000,
      description: `hidden:${WEB_PORT} (undeclared) refused`,
    });
    // The same server, once the App's policy is off: it was the policy that refused it.
    await custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        plural: 'apps',
        namespace: ns,
        name: 'hidden',
        body: { spec: { networkPolicy: { enabled: false } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(async () => assert.equal(await portOpen(kc, ns, 'stranger', hidden, WEB_PORT), true), {
      timeoutMs: ENFORCED_MS,
      intervalMs: 2000,
      description: `hidden:${WEB_PORT} admitted once its policy is pruned`,
    });
  });

  it('with spec.networkPolicy.enabled false, the policy is pruned and the same pod connects', async () => {
    await custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        plural: 'mysqlclusters',
        namespace: ns,
        name: NAME,
        body: { spec: { networkPolicy: { enabled: false } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const networking = kc.makeApiClient(NetworkingV1Api);
    await eventually(
      async () =>
        assert.deepEqual(
          (await networking.listNamespacedNetworkPolicy({ namespace: ns })).items
            .map((p) => p.metadata?.name)
            .filter((n) => n === `${NAME}-mysql`),
          [],
        ),
      { timeoutMs: 60_000, intervalMs: 1000, description: 'the NetworkPolicy pruned' },
    );
    const ip = await podIp(`${NAME}-0`);
    await eventually(async () => assert.equal(await portOpen(kc, ns, 'stranger', ip, 3306), true), {
      timeoutMs: ENFORCED_MS,
      intervalMs: 2000,
      description: 'the stranger connects once no policy isolates the members',
    });
  });
});
