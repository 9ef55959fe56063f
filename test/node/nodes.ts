/**
 * A control plane and several real worker nodes on this one machine (the "rig"): each node a kubelet and
 * containerd of its own in Linux namespaces of its own, with its own address and pod range, built from
 * the same binaries as the single node (index.ts). nodes.sh does the host work and says why each setting
 * is there; this module gets what it needs, starts the rig, and gives the tests its node faults, each a
 * real one:
 *
 * - powerOff: the node's link goes down and its kubelet, containerd and every container die at once;
 * - cutNetwork / heal: nothing goes in or out of the node's namespace, then everything again;
 * - stopKubelet: its kubelet alone dies, its containers keep serving.
 *
 * As with the single node, a watchdog takes the rig down when the process that started it dies however it
 * dies, and the next start reaps a rig whose owner is gone. One rig per machine (fixed bridge, addresses).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { KUBE_VERSION, findBinaries } from '../controlplane/index.js';
import type { BuiltImage, ImageName } from '../images/index.js';
import { ensureImages } from '../images/index.js';
import { runCommand } from '../images/run.js';
import type { NodeCluster } from './index.js';
import { ensurePackages, nodeUnavailableReason, processAlive } from './index.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const NODES_SCRIPT = join(HERE, 'nodes.sh');
const BUILD_SCRIPT = join(HERE, 'build-node-binaries.sh');

/** One rig per machine: it owns a bridge, fixed addresses and network namespaces recon8s-w1…. */
export const NODES_RUN_DIR = '/tmp/recon8s-nodes';
/** kube-apiserver's (and CoreDNS's) address, on the host bridge recon8s1. */
export const NODES_API_IP = '10.251.0.1';
const OWNER_FILE = 'owner.json';

/** Node I (from 1) is named this; its address is 10.251.0.(10+I), its pods 10.245.I.0/24. */
export const workerName = (i: number): string => `recon8s-worker-${i}`;

export interface NodesCluster extends NodeCluster {
  /** The worker nodes' names, in order (recon8s-worker-1, …). */
  readonly nodes: readonly string[];
  /** Images imported into every node (the others of `images` are not there). */
  readonly imported: readonly ImageName[];
  /** The node's link goes down and everything running on it is killed at once (SIGKILL of its PID namespace). */
  powerOff(node: string): Promise<void>;
  /** The node boots again: its disks (volumes, containerd's images) kept, its /run empty, its link up. */
  powerOn(node: string): Promise<void>;
  /** Nothing goes in or out of the node's network namespace (its link is down); everything on it keeps running. */
  cutNetwork(node: string): Promise<void>;
  /** Undoes cutNetwork. */
  heal(node: string): Promise<void>;
  /** Kills the node's kubelet alone: its containers (and containerd) keep running. */
  stopKubelet(node: string): Promise<void>;
  startKubelet(node: string): Promise<void>;
  /**
   * Runs a program of the host in the network namespace of the pod at `podIp` on `node` (traffic from
   * that pod, for images with no client in them); resolves with its stdout, rejects when it fails.
   */
  inPodNetwork(node: string, podIp: string, command: readonly string[], timeoutMs?: number): Promise<string>;
  /**
   * What a container of a pod on `node` wrote, every instance of it (restarts, and the pod's earlier
   * incarnations of that name while the kubelet keeps their logs), read from the node's disk rather than
   * through its kubelet: so while the node is cut off too. Oldest first.
   */
  containerLog(node: string, namespace: string, pod: string, container: string): readonly LoggedLine[];
}

/** One line a container wrote, with the time its runtime took it. */
export interface LoggedLine {
  readonly at: Date;
  readonly text: string;
}

export interface StartNodesOptions {
  /** Worker nodes, 1 to 9. Default 3. */
  readonly nodes?: number;
  /**
   * Images imported into every node besides the sandbox image: each is hundreds of MiB per node for
   * mysql and operator, so a test that needs only web says so. Default: mysql, web, operator.
   */
  readonly images?: readonly ImageName[];
  /** Progress lines. Default: stderr. */
  readonly onOutput?: (line: string) => void;
  /** Keep running after this process exits (`npm run cluster -- up --nodes N`): no watchdog. */
  readonly persistent?: boolean;
}

/** Starts the rig, building what is missing first (the single node's binaries and images, nothing more). */
export async function startNodesCluster(options: StartNodesOptions = {}): Promise<NodesCluster> {
  const say = options.onOutput ?? ((line: string) => process.stderr.write(`${line}\n`));
  const count = options.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1 || count > 9)
    throw new Error(`nodes: expected a whole number of worker nodes from 1 to 9, got ${count}`);
  const unavailable = nodeUnavailableReason();
  if (unavailable) throw new Error(`Cannot start the nodes: ${unavailable}.`);
  const wanted: readonly ImageName[] = options.images ?? ['mysql', 'web', 'operator'];
  const started = Date.now();
  const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    const result = await fn();
    say(`nodes: ${what} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    return result;
  };

  await step('Debian packages present', () => ensurePackages(say));
  reapStale(say);
  const [controlPlane, binDir, images] = await Promise.all([
    step('control-plane binaries ready', () => findBinaries({ onBuildOutput: say })),
    step('node binaries ready', () =>
      runCommand('bash', [BUILD_SCRIPT, KUBE_VERSION], { onOutput: say }).then(
        (out) => out.trim().split('\n').pop() ?? '',
      ),
    ),
    step('images ready', () => ensureImages({ only: ['pause', 'mysql', 'web', 'operator'], onOutput: say })),
  ]);
  if (controlPlane.dir !== binDir)
    throw new Error(
      `the node binaries (${binDir}) and the control plane (${controlPlane.dir}) are not in one directory; unset RECON8S_ASSETS for the nodes`,
    );
  const byName = new Map<string, BuiltImage>(images.map((i) => [i.name, i]));
  const image = (name: string): BuiltImage => {
    const built = byName.get(name);
    if (!built) throw new Error(`image ${name} was not built`);
    return built;
  };

  mkdirSync(NODES_RUN_DIR, { recursive: true });
  writeFileSync(
    join(NODES_RUN_DIR, OWNER_FILE),
    JSON.stringify({ pid: process.pid, persistent: options.persistent === true, startedAt: new Date().toISOString() }),
  );
  const env = { ...process.env, RUN_DIR: NODES_RUN_DIR, BIN_DIR: binDir, SANDBOX_IMAGE: image('pause').ref };
  const watchdog = options.persistent ? undefined : startWatchdog(env);
  try {
    const archives = ['pause', ...wanted].map((n) => image(n).archive);
    await step(`${count} nodes up`, () =>
      runCommand('bash', [NODES_SCRIPT, 'up', String(count), ...archives], { env, onOutput: say }),
    );
  } catch (e) {
    say('nodes: start failed; taking down what was started');
    await runCommand('bash', [NODES_SCRIPT, 'down'], { env, onOutput: say }).catch(() => undefined);
    watchdog?.kill('SIGKILL');
    throw new Error(`Cannot start the nodes: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  say(`nodes: ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const web = image('web');
  let stopping: Promise<void> | undefined;
  return nodesCluster({
    count,
    kubectl: controlPlane.kubectl,
    env,
    imported: wanted,
    images: {
      mysql: image('mysql').ref,
      web: web.refs[0] ?? web.ref,
      webV2: web.refs[1] ?? web.ref,
      operator: image('operator').ref,
    },
    stop: () => {
      stopping ??= (async () => {
        watchdog?.kill('SIGKILL');
        await runCommand('bash', [NODES_SCRIPT, 'down'], { env, onOutput: say });
      })();
      return stopping;
    },
  });
}

interface Parts {
  readonly count: number;
  readonly kubectl: string;
  readonly env: NodeJS.ProcessEnv;
  readonly imported: readonly ImageName[];
  readonly images: NodeCluster['images'];
  readonly stop: () => Promise<void>;
}

function nodesCluster(parts: Parts): NodesCluster {
  const kubeconfigPath = join(NODES_RUN_DIR, 'pki', 'admin.kubeconfig');
  const nodes = Array.from({ length: parts.count }, (_, i) => workerName(i + 1));
  const indexOf = (node: string): string => {
    const index = nodes.indexOf(node);
    if (index < 0) throw new Error(`nodes: no node ${JSON.stringify(node)} (the nodes are ${nodes.join(', ')})`);
    return String(index + 1);
  };
  const fault =
    (operation: string) =>
    async (node: string): Promise<void> => {
      await runCommand('bash', [NODES_SCRIPT, operation, indexOf(node)], { env: parts.env });
    };
  return {
    kubeconfigPath,
    binaries: { kubectl: parts.kubectl },
    images: parts.images,
    imported: parts.imported,
    nodes,
    kubeConfig: () => {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      return kc;
    },
    kubectl: async (args, input) => {
      const r = spawnSync(parts.kubectl, [`--kubeconfig=${kubeconfigPath}`, ...args], {
        input,
        encoding: 'utf8',
        timeout: 120_000,
      });
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
      return { stdout: r.stdout, stderr: r.stderr };
    },
    powerOff: fault('power-off'),
    powerOn: fault('power-on'),
    cutNetwork: fault('cut'),
    heal: fault('heal'),
    stopKubelet: fault('stop-kubelet'),
    startKubelet: fault('start-kubelet'),
    inPodNetwork: (node, podIp, command, timeoutMs = 30_000) =>
      runCommand('bash', [NODES_SCRIPT, 'in-pod-network', indexOf(node), podIp, ...command], {
        env: parts.env,
        timeoutMs,
      }),
    containerLog: (node, namespace, pod, container) => readContainerLog(indexOf(node), namespace, pod, container),
    stop: parts.stop,
  };
}

/**
 * The kubelet keeps each container instance's log at <podLogsDir>/<namespace>_<pod>_<uid>/<container>/<restart>.log,
 * one line per write in the CRI format: `<RFC 3339 time> <stream> <P|F> <text>` (P: a partial line, the rest follows).
 */
function readContainerLog(index: string, namespace: string, pod: string, container: string): readonly LoggedLine[] {
  const dir = join(NODES_RUN_DIR, `w${index}`, 'pod-logs');
  if (!existsSync(dir)) return [];
  const lines: LoggedLine[] = [];
  for (const podDir of readdirSync(dir).filter((d) => d.startsWith(`${namespace}_${pod}_`))) {
    const containerDir = join(dir, podDir, container);
    if (!existsSync(containerDir)) continue;
    for (const file of readdirSync(containerDir).filter((f) => /^\d+\.log$/.test(f))) {
      let partial = '';
      for (const raw of readFileSync(join(containerDir, file), 'utf8').split('\n')) {
        const m = /^(\S+) (?:stdout|stderr) ([PF]) (.*)$/.exec(raw);
        if (!m) continue;
        if (m[2] === 'P') {
          partial += m[3];
          continue;
        }
        lines.push({ at: new Date(m[1] ?? ''), text: partial + (m[3] ?? '') });
        partial = '';
      }
    }
  }
  return lines.sort((a, b) => a.at.getTime() - b.at.getTime());
}

/** Stops a rig without a handle on it (`npm run cluster -- down --nodes`, or a stale run). */
export async function stopNodesCluster(onOutput?: (line: string) => void): Promise<void> {
  if (!existsSync(NODES_RUN_DIR)) return;
  await runCommand('bash', [NODES_SCRIPT, 'down'], { env: { ...process.env, RUN_DIR: NODES_RUN_DIR }, onOutput });
}

/** A rig whose owner process is gone is taken down; one whose owner lives is someone else's, and left alone. */
function reapStale(say: (line: string) => void): void {
  if (!existsSync(NODES_RUN_DIR)) return;
  let owner: { pid?: number; persistent?: boolean } = {};
  try {
    owner = JSON.parse(readFileSync(join(NODES_RUN_DIR, OWNER_FILE), 'utf8')) as typeof owner;
  } catch {
    owner = {};
  }
  if (owner.persistent === true)
    throw new Error(
      `Cannot start the nodes: the rig of \`npm run cluster -- up --nodes\` is running (${NODES_RUN_DIR}). Stop it with \`npm run cluster -- down --nodes\`.`,
    );
  if (owner.pid !== undefined && owner.pid !== process.pid && processAlive(owner.pid))
    throw new Error(`Cannot start the nodes: process ${owner.pid} runs a rig already (${NODES_RUN_DIR}).`);
  say(`nodes: reaping a rig left behind by process ${owner.pid ?? 'unknown'}`);
  const r = spawnSync('bash', [NODES_SCRIPT, 'down'], {
    env: { ...process.env, RUN_DIR: NODES_RUN_DIR },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`Could not reap the rig left in ${NODES_RUN_DIR}: ${r.stderr}`);
}

/** A detached shell that takes the rig down when this process is gone (exit, crash, SIGKILL). */
function startWatchdog(env: NodeJS.ProcessEnv): ReturnType<typeof spawn> {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; exec bash "$1" down >"$2" 2>&1`;
  const child = spawn('bash', ['-c', script, 'recon8s-nodes-watchdog', NODES_SCRIPT, `${NODES_RUN_DIR}.watchdog.log`], {
    env,
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  return child;
}

const output = (command: string, args: readonly string[]): string => {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return r.status === 0 ? r.stdout : '';
};

/** Everything the rig leaves on the host while it runs; empty when the host is as it was. */
export function nodesLeftovers(): string[] {
  const left: string[] = [];
  if (existsSync(NODES_RUN_DIR)) left.push(`directory ${NODES_RUN_DIR}`);
  const netns = output('ip', ['netns', 'list'])
    .split('\n')
    .filter((l) => l.startsWith('recon8s-w'));
  if (netns.length > 0) left.push(`network namespaces ${netns.join(', ')}`);
  const links = output('ip', ['-o', 'link', 'show'])
    .split('\n')
    .filter((l) => /\b(recon8s1|r8s-w\d)\b/.test(l));
  if (links.length > 0) left.push(`links: ${links.map((l) => l.split(':')[1]?.trim()).join(', ')}`);
  const rules = output('iptables-save', [])
    .split('\n')
    .filter((l) => /KUBE-|CNI-/.test(l));
  if (rules.length > 0) left.push(`${rules.length} host iptables lines with KUBE-/CNI- chains`);
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .filter((l) => l.includes(`${NODES_RUN_DIR}/`) || l.includes('/run/netns/recon8s-w'));
  if (mounts.length > 0) left.push(`${mounts.length} mounts of the rig`);
  const processes = output('pgrep', ['-af', `${NODES_RUN_DIR}/|nodes.sh node-init`])
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.includes('pgrep'));
  if (processes.length > 0) left.push(`processes: ${processes.join('; ')}`);
  const cgroups = readdirSync('/sys/fs/cgroup').filter((h) =>
    readdirSafe(`/sys/fs/cgroup/${h}`).some((c) => /^recon8s-w\d$/.test(c)),
  );
  if (cgroups.length > 0) left.push(`cgroups recon8s-w* in ${cgroups.join(', ')}`);
  return left;
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
