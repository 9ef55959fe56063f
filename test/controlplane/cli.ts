/*
 * A local control plane for developers, kept running between commands:
 *
 *   npm run cluster -- up       start it (in the background) and say how to use it
 *   npm run cluster -- env      print export lines: eval "$(npm run --silent cluster -- env)"
 *   npm run cluster -- status   say whether it is up (exit 0) or not (exit 1)
 *   npm run cluster -- down     stop it and remove its state
 *
 *   npm run cluster -- up --node      a real node instead (kubelet, containerd, CNI, CoreDNS; root, Linux):
 *                                     Pods run, with the test images (mysql, web, operator) imported
 *   npm run cluster -- env --node     export lines for it
 *   npm run cluster -- down --node    stop it and leave the host as it was
 *
 *   npm run cluster -- up --nodes 3   a control plane and 3 real worker nodes, each in namespaces of its own
 *                                     (test/node/nodes.sh; root, Linux): env, status and down take --nodes too
 *
 * State, certificates, etcd data and logs live in ${XDG_CACHE_HOME:-~/.cache}/recon8s/cluster/.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Health } from '@kubernetes/client-node';
import { NODE_RUN_DIR, startNodeCluster, stopNodeCluster } from '../node/index.js';
import { NODES_RUN_DIR, startNodesCluster, stopNodesCluster } from '../node/nodes.js';
import { loadKubeConfig } from './kubeconfig.js';
import {
  DEFAULT_CONTROLLERS,
  KUBE_VERSION,
  WORKLOAD_CONTROLLERS,
  readState,
  runningProcesses,
  startControlPlane,
  stopControlPlaneAt,
} from './index.js';
import type { ControlPlaneState } from './index.js';

const cacheHome =
  process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== ''
    ? process.env.XDG_CACHE_HOME
    : join(homedir(), '.cache');
const CLUSTER_DIR = join(cacheHome, 'recon8s', 'cluster');
const USAGE = 'usage: npm run cluster -- up|down|env|status [--node | --nodes N]';

/** POSIX single-quoting, so the printed lines survive any path when eval'ed. */
function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function exportLines(state: ControlPlaneState): string {
  return [
    `export KUBECONFIG=${quote(state.kubeconfigPath)}`,
    `export PATH=${quote(state.binDir)}:"$PATH"  # kubectl ${state.kubeVersion}`,
  ].join('\n');
}

type ClusterHealth = 'up' | 'down' | { degraded: string };

async function healthOf(state: ControlPlaneState | undefined): Promise<ClusterHealth> {
  if (state === undefined) return 'down';
  const running = runningProcesses(state);
  if (running.length === 0) return 'down';
  if (running.length < state.processes.length) {
    const stopped = state.processes.filter((p) => !running.includes(p)).map((p) => `${p.name} (log: ${p.logPath})`);
    return { degraded: `not running: ${stopped.join(', ')}` };
  }
  try {
    const ready = await new Health(loadKubeConfig(state.kubeconfigPath)).readyz({ signal: AbortSignal.timeout(5_000) });
    return ready ? 'up' : { degraded: `${state.server}/readyz is not ok yet` };
  } catch (error) {
    return { degraded: `${state.server}/readyz: ${(error as Error).message}` };
  }
}

async function up(): Promise<number> {
  const previous = readState(CLUSTER_DIR);
  const health = await healthOf(previous);
  if (previous && health === 'up') {
    console.log(`The recon8s control plane is already up at ${previous.server}.\n\n${exportLines(previous)}`);
    return 0;
  }
  // Half a control plane (one component crashed, the machine restarted, a start was interrupted) is
  // replaced, not repaired. The directory is ours alone.
  if (previous) await stopControlPlaneAt(CLUSTER_DIR);
  await rm(CLUSTER_DIR, { recursive: true, force: true });
  const controllers = [...DEFAULT_CONTROLLERS, ...WORKLOAD_CONTROLLERS];
  const controlPlane = await startControlPlane({
    dir: CLUSTER_DIR,
    persistent: true,
    controllers,
    onProgress: (message) => console.error(`cluster: ${message}`),
  });
  const state = readState(CLUSTER_DIR);
  if (!state) throw new Error(`The control plane started but wrote no state into ${CLUSTER_DIR}.`);
  const logs = controlPlane.logs;
  console.log(`
The recon8s control plane is up: Kubernetes ${controlPlane.kubeVersion} at ${controlPlane.server}
  controllers: ${controllers.join(', ')} (no scheduler, no kubelet: Pods never run)
  logs:        ${[logs.etcd, logs.kubeApiserver, logs.kubeControllerManager].filter(Boolean).join('\n               ')}

Point kubectl (and recon8s, which reads KUBECONFIG) at it:

${exportLines(state)}

or: eval "$(npm run --silent cluster -- env)"
Stop it with: npm run cluster -- down`);
  return 0;
}

async function down(): Promise<number> {
  const stopped = await stopControlPlaneAt(CLUSTER_DIR);
  await rm(CLUSTER_DIR, { recursive: true, force: true });
  console.log(
    stopped
      ? `Stopped the recon8s control plane and removed ${CLUSTER_DIR}.`
      : 'The recon8s control plane is not running.',
  );
  return 0;
}

async function env(): Promise<number> {
  const state = readState(CLUSTER_DIR);
  if (!state || (await healthOf(state)) === 'down') {
    console.error('The recon8s control plane is not running; start it with: npm run cluster -- up');
    return 1;
  }
  console.log(exportLines(state));
  return 0;
}

async function status(): Promise<number> {
  const state = readState(CLUSTER_DIR);
  const health = await healthOf(state);
  if (health === 'down' || !state) {
    console.log('down');
    return 1;
  }
  const pids = state.processes.map((p) => `${p.name}=${p.pid}`).join(' ');
  if (health === 'up') {
    console.log(`up: Kubernetes ${state.kubeVersion} at ${state.server} (${pids})\nKUBECONFIG=${state.kubeconfigPath}`);
    return 0;
  }
  console.log(`degraded: ${health.degraded}\nReplace it with: npm run cluster -- up`);
  return 1;
}

function nodeExportLines(): string {
  return [
    `export KUBECONFIG=${quote(join(NODE_RUN_DIR, 'pki', 'admin.kubeconfig'))}`,
    `export PATH=${quote(nodeBinDir())}:"$PATH"  # kubectl ${KUBE_VERSION}`,
  ].join('\n');
}

function nodeBinDir(): string {
  return join(cacheHome, 'recon8s', KUBE_VERSION);
}

async function nodeUp(): Promise<number> {
  if (existsSync(join(NODE_RUN_DIR, 'pki', 'admin.kubeconfig'))) {
    console.log(`A real node is already up (${NODE_RUN_DIR}).\n\n${nodeExportLines()}`);
    return 0;
  }
  const node = await startNodeCluster({ persistent: true, onOutput: (line) => console.error(line) });
  console.log(`
A real single-node Kubernetes ${KUBE_VERSION} is up (${NODE_RUN_DIR}): Pods run under kubelet and containerd.
Images imported (nothing can be pulled): ${Object.values(node.images).join(', ')}

${nodeExportLines()}

Stop it with: npm run cluster -- down --node`);
  return 0;
}

async function nodeDown(): Promise<number> {
  const was = existsSync(NODE_RUN_DIR);
  await stopNodeCluster((line) => console.error(line));
  console.log(was ? 'Stopped the real node and cleaned the host.' : 'The real node is not running.');
  return 0;
}

async function nodeEnv(): Promise<number> {
  if (!existsSync(join(NODE_RUN_DIR, 'pki', 'admin.kubeconfig'))) {
    console.error('The real node is not running; start it with: npm run cluster -- up --node');
    return 1;
  }
  console.log(nodeExportLines());
  return 0;
}

function nodesExportLines(): string {
  return [
    `export KUBECONFIG=${quote(join(NODES_RUN_DIR, 'pki', 'admin.kubeconfig'))}`,
    `export PATH=${quote(nodeBinDir())}:"$PATH"  # kubectl ${KUBE_VERSION}`,
  ].join('\n');
}

async function nodesUp(count: number): Promise<number> {
  if (existsSync(join(NODES_RUN_DIR, 'pki', 'admin.kubeconfig'))) {
    console.log(`The nodes are already up (${NODES_RUN_DIR}).\n\n${nodesExportLines()}`);
    return 0;
  }
  const rig = await startNodesCluster({ nodes: count, persistent: true, onOutput: (line) => console.error(line) });
  console.log(`
A control plane and ${rig.nodes.length} real worker nodes, Kubernetes ${KUBE_VERSION}, are up (${NODES_RUN_DIR}):
  nodes: ${rig.nodes.join(', ')} (each its own network namespace, kubelet and containerd)
  images imported into every node: ${rig.imported.join(', ')}

${nodesExportLines()}

Faults by hand: bash test/node/nodes.sh power-off|power-on|cut|heal|stop-kubelet|start-kubelet I
  (with RUN_DIR=${NODES_RUN_DIR} BIN_DIR=${nodeBinDir()})
Stop it with: npm run cluster -- down --nodes`);
  return 0;
}

async function nodesDown(): Promise<number> {
  const was = existsSync(NODES_RUN_DIR);
  await stopNodesCluster((line) => console.error(line));
  console.log(was ? 'Stopped the nodes and cleaned the host.' : 'The nodes are not running.');
  return 0;
}

async function nodesEnv(): Promise<number> {
  if (!existsSync(join(NODES_RUN_DIR, 'pki', 'admin.kubeconfig'))) {
    console.error('The nodes are not running; start them with: npm run cluster -- up --nodes 3');
    return 1;
  }
  console.log(nodesExportLines());
  return 0;
}

/** The command named on the command line, or undefined when the line is not one of USAGE's. */
function parse(argv: readonly string[]): (() => Promise<number>) | undefined {
  const [name, flag, value, ...rest] = argv;
  if (name === undefined || rest.length > 0) return undefined;
  if (flag === undefined) return commands[name];
  if (flag === '--node') return value === undefined ? nodeCommands[name] : undefined;
  if (flag !== '--nodes') return undefined;
  if (name !== 'up') return value === undefined ? nodesCommands[name] : undefined;
  const count = value === undefined ? 3 : Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 9) {
    console.error(`cluster up --nodes: expected a number of worker nodes from 1 to 9, got ${JSON.stringify(value)}`);
    return undefined;
  }
  return () => nodesUp(count);
}

const nodeCommands: Readonly<Record<string, () => Promise<number>>> = {
  up: nodeUp,
  down: nodeDown,
  env: nodeEnv,
  status: nodeEnv,
};
const nodesCommands: Readonly<Record<string, () => Promise<number>>> = {
  down: nodesDown,
  env: nodesEnv,
  status: nodesEnv,
};
const commands: Readonly<Record<string, () => Promise<number>>> = { up, down, env, status };
const name = process.argv[2];
const command = parse(process.argv.slice(2));
if (command === undefined) {
  console.error(USAGE);
  process.exitCode = 2;
} else {
  try {
    process.exitCode = await command();
  } catch (error) {
    console.error(`cluster ${name}: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
