import { CoreV1Api } from '@kubernetes/client-node';
import { eventually } from '../integration/eventually.js';
import { readFileSync } from 'node:fs';
import type { NodeCluster, NodeHandle } from '../node/index.js';
import { attachNodeCluster, startNodeCluster } from '../node/index.js';
import { startNodesCluster } from '../node/nodes.js';

/** Bound on the hook that gets the node: a first run builds kubelet, CoreDNS and the images (minutes, once per machine). */
export const NODE_HOOK_TIMEOUT_MS = 60 * 60_000;

/**
 * Developers on a machine that cannot run the node (not Linux, not root) may opt out of the end-to-end
 * tests with RECON8S_E2E=skip; they are then reported as pending, with this reason. CI never sets it:
 * without it, a node that cannot start fails the suite and says why.
 */
export const E2E_OPT_OUT = process.env.RECON8S_E2E === 'skip';

/**
 * Set by the test runner (test/run.ts), which starts one node for all its end-to-end lanes: a file
 * holding the node's NodeHandle. Without it (mocha run by hand), this process starts its own node.
 */
export const NODE_HANDLE_ENV = 'RECON8S_NODE_HANDLE';

/**
 * Set to a number of worker nodes (1 to 9) to run an end-to-end file by hand on the multi-node rig
 * (test/node/nodes.ts) instead of the single node: `RECON8S_E2E_NODES=3 npx mocha test/e2e/mysql-ha.test.ts`.
 * The runner's lanes never set it (each lane says which it needs).
 */
export const E2E_NODES_ENV = 'RECON8S_E2E_NODES';

/** The worker count RECON8S_E2E_NODES asks for, undefined when unset; anything but 1 to 9 is refused. */
function rigNodes(): number | undefined {
  const raw = process.env[E2E_NODES_ENV];
  if (raw === undefined || raw === '') return undefined;
  if (!/^[1-9]$/.test(raw))
    throw new Error(`${E2E_NODES_ENV}=${JSON.stringify(raw)}: expected a number of worker nodes from 1 to 9`);
  return Number(raw);
}

let shared: Promise<NodeCluster> | undefined;
/** Whether this process started the shared node (and so stops it after its last test). */
let owned = false;

/** The one node of this test run: the runner's, or started on first use and stopped by test/hooks.ts. */
export function sharedNode(): Promise<NodeCluster> {
  if (shared) return shared;
  const handleFile = process.env[NODE_HANDLE_ENV];
  if (handleFile) {
    shared = Promise.resolve().then(() =>
      attachNodeCluster(JSON.parse(readFileSync(handleFile, 'utf8')) as NodeHandle),
    );
  } else {
    owned = true;
    const nodes = rigNodes();
    shared = nodes === undefined ? startNodeCluster() : startNodesCluster({ nodes });
  }
  return shared;
}

/** For test/hooks.ts: stops the node if this process started it (the runner's outlives the lane). */
export async function stopSharedNode(): Promise<void> {
  if (!owned) return;
  await stopTheNode();
}

/** Stops the shared node, whoever started it: for the test of the node's own teardown, run last. */
export async function stopTheNode(): Promise<void> {
  const started = shared ?? sharedNode();
  shared = undefined;
  owned = false;
  const node = await started.catch(() => undefined);
  await node?.stop();
}

/**
 * Call inside a `describe` of an end-to-end test: a `before` hook gets the shared node (long timeout
 * for a first build), and the returned getter hands it to the tests.
 */
export function useSharedNode(): () => NodeCluster {
  let node: NodeCluster | undefined;
  before(async function (this: Mocha.Context) {
    if (E2E_OPT_OUT) {
      // Only ever by the developer's explicit choice (RECON8S_E2E=skip), never because the rig is missing,
      // and never in CI: there the end-to-end tests are what the run is for.
      if (process.env.CI === 'true')
        throw new Error('RECON8S_E2E=skip is set in CI (CI=true): the end-to-end tests must run there; unset it.');
      this.skip();
    }
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    node = await sharedNode();
  });
  return () => {
    if (!node) throw new Error('useSharedNode(): the node is only there once the before hook has run.');
    return node;
  };
}

/**
 * A new namespace where Pod Security "restricted" is enforced (what recon8s's workloads promise to pass),
 * ready for pods: its default ServiceAccount exists.
 */
export async function freshRestrictedNamespace(node: NodeCluster, prefix: string): Promise<string> {
  const core = node.kubeConfig().makeApiClient(CoreV1Api);
  const stem = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, 50)
    .replace(/-+$/, '');
  const created = await core.createNamespace({
    body: {
      metadata: {
        generateName: `${stem}-`,
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    },
  });
  const name = created.metadata?.name ?? '';
  await eventually(() => core.readNamespacedServiceAccount({ namespace: name, name: 'default' }), {
    timeoutMs: 30_000,
    description: `the default ServiceAccount of ${name}`,
  });
  return name;
}

/**
 * Deletes a test file's namespace when the file is done, without waiting for it to be gone: every
 * pod it leaves running (a MySQL cluster's mysqld, sidecars and probes) would otherwise go on taking
 * the node's two cores from every test file after it.
 */
export async function discardNamespace(node: NodeCluster, namespace: string | undefined): Promise<void> {
  if (!namespace) return;
  await node
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch(() => undefined);
}
