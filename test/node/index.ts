/*
 * A real single-node Kubernetes for the end-to-end tests: the control plane of test/controlplane's
 * release plus kubelet, containerd/runc, the CNI bridge, kube-proxy and CoreDNS, with the test images
 * imported (nothing can be pulled here). node.sh does the host work; this module gets everything it needs
 * (Debian packages, binaries, images) and guarantees the host is left as found: a watchdog runs
 * `node.sh down` when the process that started the node dies, however it dies, and the next start reaps
 * a node whose owner is gone.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { KUBE_VERSION, findBinaries } from '../controlplane/index.js';
import type { BuiltImage } from '../images/index.js';
import { ensureImages } from '../images/index.js';
import { runCommand } from '../images/run.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const NODE_SCRIPT = join(HERE, 'node.sh');
const BUILD_SCRIPT = join(HERE, 'build-node-binaries.sh');

/** One node per machine: it owns a fixed address, bridge, ports and iptables chains. */
export const NODE_RUN_DIR = '/tmp/recon8s-node';
/** The node's (and API server's) address, a /32 on lo. */
export const NODE_IP = '10.250.0.1';
const OWNER_FILE = 'owner.json';

/** Debian packages the node needs, by a file each installs. */
const PACKAGES: Readonly<Record<string, string>> = {
  containerd: '/usr/bin/containerd',
  runc: '/usr/sbin/runc',
  'containernetworking-plugins': '/usr/lib/cni/bridge',
  iptables: '/usr/sbin/iptables',
  conntrack: '/usr/sbin/conntrack',
  // kube-router's policy controller (the NetworkPolicy test, kube-router.ts) programs ipsets.
  ipset: '/usr/sbin/ipset',
};

export interface NodeCluster {
  readonly kubeconfigPath: string;
  /** The pinned kubectl, for `kubectl` helpers shared with the control-plane tests. */
  readonly binaries: { readonly kubectl: string };
  /** Image references, imported into the node's containerd. */
  readonly images: { readonly mysql: string; readonly web: string; readonly webV2: string; readonly operator: string };
  kubeConfig(): KubeConfig;
  /** Runs the pinned kubectl as the cluster admin; rejects with its stderr when it fails. */
  kubectl(args: readonly string[], input?: string): Promise<{ stdout: string; stderr: string }>;
  /** Stops everything and leaves the host as it was. */
  stop(): Promise<void>;
}

export interface StartNodeOptions {
  /** Progress lines (builds, start-up). Default: stderr. */
  readonly onOutput?: (line: string) => void;
  /**
   * Keep running after this process exits (`npm run cluster -- up --node`): no watchdog, and test runs
   * refuse to take it over until `npm run cluster -- down --node`.
   */
  readonly persistent?: boolean;
}

/** Why the node cannot run here, or undefined when it can. */
export function nodeUnavailableReason(): string | undefined {
  if (platform() !== 'linux') return `the real node needs Linux (this is ${platform()})`;
  if (process.getuid?.() !== 0)
    return 'the real node needs root: it runs kubelet and containerd, and sets up a bridge, iptables chains and an address on lo';
  return undefined;
}

/**
 * Starts the node, building and installing what is missing first (how long, cold and warm:
 * see test/README.md, What a run costs).
 * Fails with the reason when the machine cannot run it.
 */
export async function startNodeCluster(options: StartNodeOptions = {}): Promise<NodeCluster> {
  const say = options.onOutput ?? ((line: string) => process.stderr.write(`${line}\n`));
  const unavailable = nodeUnavailableReason();
  if (unavailable) throw new Error(`Cannot start the real node: ${unavailable}.`);
  const started = Date.now();
  const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    const result = await fn();
    say(`node: ${what} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    return result;
  };

  await step('Debian packages present', () => ensurePackages(say));
  reapStale(say);
  // The three long builds share nothing but the CPU: run them together.
  const [controlPlane, nodeBinDir, images] = await Promise.all([
    step('control-plane binaries ready', () => findBinaries({ onBuildOutput: say })),
    step('node binaries ready', () =>
      runCommand('bash', [BUILD_SCRIPT, KUBE_VERSION], { onOutput: say }).then(
        (out) => out.trim().split('\n').pop() ?? '',
      ),
    ),
    step('images ready', () => ensureImages({ only: ['pause', 'mysql', 'web', 'operator'], onOutput: say })),
  ]);
  if (controlPlane.dir !== nodeBinDir)
    throw new Error(
      `the node binaries (${nodeBinDir}) and the control plane (${controlPlane.dir}) are not in one directory; unset RECON8S_ASSETS for the real node`,
    );
  const byName = new Map<string, BuiltImage>(images.map((i) => [i.name, i]));
  const archive = (name: string): BuiltImage => {
    const image = byName.get(name);
    if (!image) throw new Error(`image ${name} was not built`);
    return image;
  };

  mkdirSync(NODE_RUN_DIR, { recursive: true });
  writeFileSync(
    join(NODE_RUN_DIR, OWNER_FILE),
    JSON.stringify({ pid: process.pid, persistent: options.persistent === true, startedAt: new Date().toISOString() }),
  );
  const env = {
    ...process.env,
    RUN_DIR: NODE_RUN_DIR,
    BIN_DIR: nodeBinDir,
    NODE_IP,
    SANDBOX_IMAGE: archive('pause').ref,
  };
  const watchdog = options.persistent ? undefined : startWatchdog(env);
  try {
    await step('node up', () =>
      runCommand('bash', [NODE_SCRIPT, 'up', ...['pause', 'mysql', 'web', 'operator'].map((n) => archive(n).archive)], {
        env,
        onOutput: say,
      }),
    );
  } catch (e) {
    say('node: start failed; taking down what was started');
    await runCommand('bash', [NODE_SCRIPT, 'down'], { env, onOutput: say }).catch(() => undefined);
    watchdog?.kill('SIGKILL');
    throw new Error(`Cannot start the real node: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  say(`node: ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  let stopping: Promise<void> | undefined;
  const web = archive('web');
  const handle: NodeHandle = {
    kubeconfigPath: join(NODE_RUN_DIR, 'pki', 'admin.kubeconfig'),
    kubectl: controlPlane.kubectl,
    images: {
      mysql: archive('mysql').ref,
      web: web.refs[0] ?? web.ref,
      webV2: web.refs[1] ?? web.ref,
      operator: archive('operator').ref,
    },
  };
  return nodeCluster(handle, () => {
    stopping ??= (async () => {
      watchdog?.kill('SIGKILL');
      await runCommand('bash', [NODE_SCRIPT, 'down'], { env, onOutput: say });
    })();
    return stopping;
  });
}

/**
 * What another process needs to use a node that is up (the test runner starts one for every
 * end-to-end lane): handed over as JSON.
 */
export interface NodeHandle {
  readonly kubeconfigPath: string;
  readonly kubectl: string;
  readonly images: NodeCluster['images'];
}

export function nodeHandle(node: NodeCluster): NodeHandle {
  return { kubeconfigPath: node.kubeconfigPath, kubectl: node.binaries.kubectl, images: node.images };
}

/** The node another process started (see NodeHandle); stop() takes it down for everyone. */
export function attachNodeCluster(handle: NodeHandle): NodeCluster {
  if (!existsSync(handle.kubeconfigPath))
    throw new Error(`Cannot use the real node: ${handle.kubeconfigPath} is gone (was the node stopped?)`);
  return nodeCluster(handle, () => stopNodeCluster());
}

function nodeCluster(handle: NodeHandle, stop: () => Promise<void>): NodeCluster {
  const { kubeconfigPath, kubectl: kubectlPath } = handle;
  return {
    kubeconfigPath,
    binaries: { kubectl: kubectlPath },
    images: handle.images,
    kubeConfig: () => {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      return kc;
    },
    kubectl: async (args, input) => {
      const r = spawnSync(kubectlPath, [`--kubeconfig=${kubeconfigPath}`, ...args], {
        input,
        encoding: 'utf8',
        timeout: 120_000,
      });
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
      return { stdout: r.stdout, stderr: r.stderr };
    },
    stop,
  };
}

/** Stops a node without a handle on it (`npm run cluster -- down --node`, or a stale run). */
export async function stopNodeCluster(onOutput?: (line: string) => void): Promise<void> {
  if (!existsSync(NODE_RUN_DIR)) return;
  await runCommand('bash', [NODE_SCRIPT, 'down'], {
    env: { ...process.env, RUN_DIR: NODE_RUN_DIR, BIN_DIR: '/nonexistent', NODE_IP },
    onOutput,
  });
}

/** A node whose owner process is gone is taken down; one whose owner lives is someone else's, and left alone. */
function reapStale(say: (line: string) => void): void {
  if (!existsSync(NODE_RUN_DIR)) return;
  let owner: number | undefined;
  let persistent = false;
  try {
    const recorded = JSON.parse(readFileSync(join(NODE_RUN_DIR, OWNER_FILE), 'utf8')) as {
      pid?: number;
      persistent?: boolean;
    };
    owner = recorded.pid;
    persistent = recorded.persistent === true;
  } catch {
    owner = undefined;
  }
  if (persistent) {
    throw new Error(
      `Cannot start the real node: the developer node of \`npm run cluster -- up --node\` is running (${NODE_RUN_DIR}); only one node can run on a machine. Stop it with \`npm run cluster -- down --node\`.`,
    );
  }
  if (owner !== undefined && owner !== process.pid && processAlive(owner)) {
    throw new Error(
      `Cannot start the real node: process ${owner} runs one already (${NODE_RUN_DIR}); only one can run on a machine. Stop it, or run \`npm run cluster -- down --node\` if it is yours.`,
    );
  }
  say(`node: reaping a node left behind by process ${owner ?? 'unknown'}`);
  const r = spawnSync('bash', [NODE_SCRIPT, 'down'], {
    env: { ...process.env, RUN_DIR: NODE_RUN_DIR, BIN_DIR: '/nonexistent', NODE_IP },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`Could not reap the node left in ${NODE_RUN_DIR}: ${r.stderr}`);
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A detached shell that outlives this process: when this process is gone (exit, crash, SIGKILL) it takes
 * the node down. stop() kills it first.
 */
function startWatchdog(env: NodeJS.ProcessEnv): ReturnType<typeof spawn> {
  // Its output goes beside the run directory (which `down` removes), for whoever wonders what it did.
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; exec bash "$1" down >"$2" 2>&1`;
  const child = spawn('bash', ['-c', script, 'recon8s-node-watchdog', NODE_SCRIPT, `${NODE_RUN_DIR}.watchdog.log`], {
    env,
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  return child;
}

export async function ensurePackages(say: (line: string) => void): Promise<void> {
  const missing = Object.entries(PACKAGES)
    .filter(([, file]) => !existsSync(file))
    .map(([name]) => name);
  if (missing.length === 0) return;
  say(`node: installing Debian packages ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    // Other lanes of the run may be installing packages too: wait for dpkg's lock rather than fail.
    const lock = ['-o', 'DPkg::Lock::Timeout=600'];
    await runCommand('apt-get', [...lock, 'update'], { env, onOutput: () => undefined });
    await runCommand('apt-get', [...lock, 'install', '-y', '--no-install-recommends', ...missing], {
      env,
      onOutput: () => undefined,
    });
  } catch (e) {
    throw new Error(
      `Cannot start the real node: installing ${missing.join(', ')} with apt-get failed (is the Debian mirror reachable?): ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
  const still = Object.entries(PACKAGES)
    .filter(([, file]) => !existsSync(file))
    .map(([name, file]) => `${name} (${file})`);
  if (still.length > 0)
    throw new Error(`Cannot start the real node: after apt-get install, still missing ${still.join(', ')}`);
}
