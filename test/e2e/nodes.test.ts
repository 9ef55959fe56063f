import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import { eventually } from '../integration/eventually.js';
import { WEB_PORT, WEB_UID } from '../images/index.js';
import type { NodesCluster } from '../node/nodes.js';
import { nodesLeftovers, startNodesCluster } from '../node/nodes.js';
import { nodeSysctls } from '../node/host-state.js';
import { E2E_OPT_OUT, NODE_HOOK_TIMEOUT_MS } from './cluster.js';

const RESTRICTED = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
  readOnlyRootFilesystem: true,
};

/** A one-line Node.js program run in a pod's network namespace (the web image has no client in it). */
const NODE = process.execPath;
const httpGet = (url: string): string[] => [
  NODE,
  '-e',
  `fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(3000) }).then(async (r) => process.stdout.write(await r.text()), (e) => { console.error(String(e)); process.exit(1); })`,
];
/** An A lookup against the cluster DNS Service the pods' resolv.conf names. */
const resolve = (name: string): string[] => [
  NODE,
  '-e',
  `const r = new (require('node:dns').promises.Resolver)({ timeout: 2000, tries: 1 }); r.setServers(['10.0.0.10']); r.resolve4(${JSON.stringify(name)}).then((a) => console.log(a.join(' ')), (e) => { console.error(String(e)); process.exit(1); })`,
];

/**
 * The three-node rig itself (test/node/nodes.sh): what the multi-node tests will rely on. Each node has
 * its own address and pod range, pods on different nodes reach each other and the cluster DNS, and each
 * node fault has the effect a user would see on a real cluster. The rig is this file's own (not the
 * shared single node), and the host is left as it was.
 */
describe('three worker nodes on one machine (kubelet + containerd in namespaces of their own)', function () {
  this.timeout(180_000);
  let rig: NodesCluster | undefined;
  let core: CoreV1Api;
  let sysctlsBefore: Record<string, string>;
  const ns = 'nodes';
  const the = (): NodesCluster => {
    assert.ok(rig, 'the rig is not up');
    return rig;
  };
  /** The pods web-1… (on recon8s-worker-1…) and their addresses. */
  const pods = new Map<string, string>();

  before(async function () {
    if (E2E_OPT_OUT) {
      // As every end-to-end file: only by the developer's explicit choice, never in CI.
      if (process.env.CI === 'true')
        throw new Error('RECON8S_E2E=skip is set in CI (CI=true): the end-to-end tests must run there; unset it.');
      this.skip();
    }
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    sysctlsBefore = nodeSysctls();
    rig = await startNodesCluster({ nodes: 3, images: ['web'] });
    core = rig.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({
      body: { metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    });
    await eventually(() => core.readNamespacedServiceAccount({ namespace: ns, name: 'default' }), {
      timeoutMs: 30_000,
      description: 'the default ServiceAccount',
    });
  });

  after(async () => {
    await rig?.stop();
  });

  const readyCondition = async (node: string): Promise<string | undefined> =>
    (await core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;

  it('has three Ready nodes, each with its own address', async () => {
    const nodes = (await core.listNode()).items;
    assert.deepEqual(nodes.map((n) => n.metadata?.name).sort(), [...the().nodes]);
    for (const n of nodes) {
      assert.equal(
        n.status?.conditions?.find((c) => c.type === 'Ready')?.status,
        'True',
        `${n.metadata?.name} is not Ready`,
      );
    }
    const addresses = nodes.map((n) => n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address);
    assert.deepEqual(addresses.sort(), ['10.251.0.11', '10.251.0.12', '10.251.0.13']);
  });

  it('schedules a pod on each node, in that node’s pod range', async () => {
    const items = the().nodes.flatMap((node, i) => [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `web-${i + 1}`, labels: { app: `web-${i + 1}` } },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': node },
          securityContext: { runAsUser: WEB_UID, runAsGroup: WEB_UID },
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'web',
              image: the().images.web,
              imagePullPolicy: 'Never',
              ports: [{ containerPort: WEB_PORT }],
              securityContext: RESTRICTED,
              readinessProbe: { httpGet: { path: '/healthz', port: WEB_PORT }, periodSeconds: 1 },
            },
          ],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: `web-${i + 1}` },
        spec: { selector: { app: `web-${i + 1}` }, ports: [{ port: 80, targetPort: WEB_PORT }] },
      },
    ]);
    await the().kubectl(['apply', '-n', ns, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    for (const [i, node] of the().nodes.entries()) {
      const name = `web-${i + 1}`;
      const pod = await eventually(
        async () => {
          const p = await core.readNamespacedPod({ namespace: ns, name });
          assert.ok(
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
            `${name}: ${p.status?.phase}`,
          );
          return p;
        },
        { timeoutMs: 60_000, description: `${name} Ready` },
      );
      assert.equal(pod.spec?.nodeName, node);
      const ip = pod.status?.podIP ?? '';
      assert.match(ip, new RegExp(`^10\\.245\\.${i + 1}\\.\\d+$`), `${name}'s address is not in ${node}'s pod range`);
      pods.set(node, ip);
    }
  });

  it('lets every pod reach the pods on the other nodes, by address and by Service name', async () => {
    const [n1, n2, n3] = the().nodes as [string, string, string];
    const from = (node: string): string => pods.get(node) ?? assert.fail(`no pod on ${node}`);
    for (const [client, server, i] of [
      [n1, n2, 2],
      [n2, n3, 3],
      [n3, n1, 1],
    ] as const) {
      const body = await the().inPodNetwork(client, from(client), httpGet(`http://${from(server)}:${WEB_PORT}/`));
      assert.match(body, new RegExp(`host=web-${i}\\b`), `${client} → ${server} by address`);
      const name = `web-${i}.${ns}.svc.cluster.local`;
      const answer = await the().inPodNetwork(client, from(client), resolve(name));
      const service = await core.readNamespacedService({ namespace: ns, name: `web-${i}` });
      assert.equal(answer.trim(), service.spec?.clusterIP, `${name} from ${client}`);
      // The client's kube-proxy programs the Service a moment after its endpoints exist.
      await eventually(
        async () => {
          const viaService = await the().inPodNetwork(client, from(client), httpGet(`http://${answer.trim()}/`));
          assert.match(viaService, new RegExp(`host=web-${i}\\b`), `${client} → Service web-${i}`);
        },
        { timeoutMs: 30_000, description: `${client} → Service web-${i}` },
      );
    }
  });

  it('lets the host, a client outside the cluster, reach every Service by its cluster IP, wherever its pod runs', async () => {
    for (const i of [1, 2, 3]) {
      const service = await core.readNamespacedService({ namespace: ns, name: `web-${i}` });
      const r = await fetch(`http://${service.spec?.clusterIP ?? ''}/`, { signal: AbortSignal.timeout(5000) });
      assert.match(await r.text(), new RegExp(`host=web-${i}\\b`), `the host → Service web-${i}`);
    }
  });

  it('cuts a node off the network: its pod is unreachable from the others until the cut heals', async () => {
    const [n1, , n3] = the().nodes as [string, string, string];
    const client = pods.get(n1) ?? '';
    const url = `http://${pods.get(n3) ?? ''}:${WEB_PORT}/`;
    await the().cutNetwork(n3);
    try {
      await assert.rejects(the().inPodNetwork(n1, client, httpGet(url)), `${url} answered through a cut`);
    } finally {
      await the().heal(n3);
    }
    const body = await eventually(() => the().inPodNetwork(n1, client, httpGet(url)), {
      timeoutMs: 20_000,
      description: `${url} after the heal`,
    });
    assert.match(body, /host=web-3\b/);
  });

  it('stops a kubelet alone: the node goes NotReady while its pod keeps serving', async () => {
    const [n1, n2] = the().nodes as [string, string, string];
    await the().stopKubelet(n2);
    try {
      await eventually(async () => assert.notEqual(await readyCondition(n2), 'True'), {
        timeoutMs: 40_000,
        intervalMs: 1_000,
        description: `${n2} NotReady`,
      });
      const body = await the().inPodNetwork(
        n1,
        pods.get(n1) ?? '',
        httpGet(`http://${pods.get(n2) ?? ''}:${WEB_PORT}/`),
      );
      assert.match(body, /host=web-2\b/, 'the pod of a node without its kubelet stopped serving');
    } finally {
      await the().startKubelet(n2);
    }
    await eventually(async () => assert.equal(await readyCondition(n2), 'True'), {
      timeoutMs: 40_000,
      intervalMs: 1_000,
      description: `${n2} Ready again`,
    });
  });

  it('powers a node off: everything on it stops at once, and it goes NotReady', async () => {
    const [n1, n2] = the().nodes as [string, string, string];
    const url = `http://${pods.get(n1) ?? ''}:${WEB_PORT}/`;
    await the().powerOff(n1);
    await assert.rejects(the().inPodNetwork(n1, pods.get(n1) ?? '', ['true']), 'a powered-off node still has a pod');
    await assert.rejects(
      the().inPodNetwork(n2, pods.get(n2) ?? '', httpGet(url)),
      `${url} answered from a node that is off`,
    );
    await eventually(async () => assert.notEqual(await readyCondition(n1), 'True'), {
      timeoutMs: 40_000,
      intervalMs: 1_000,
      description: `${n1} NotReady`,
    });
  });

  it('leaves nothing on the host when it is taken down', async () => {
    await the().stop();
    rig = undefined;
    assert.deepEqual(nodesLeftovers(), []);
    assert.deepEqual(nodeSysctls(), sysctlsBefore);
  });
});
