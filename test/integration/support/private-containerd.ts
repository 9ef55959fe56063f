/*
 * A containerd of the test's own (its own root, state and socket in a temp directory; no CRI), to
 * import the test images with `ctr images import` exactly as the node does, and run them with runc.
 * It never touches the node's containerd. Needs root, containerd and runc (installed with apt-get
 * when missing, like the node's packages). If the test process dies, the shell that started
 * containerd sees its stdin close and stops it.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../../images/run.js';

export interface CtrResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface PrivateContainerd {
  readonly dir: string;
  /** `ctr -n k8s.io <args>` against this containerd. */
  ctr(args: readonly string[], opts?: { timeoutMs?: number }): CtrResult;
  /** The same, as a running child (e.g. `run` of a server), output collected. */
  spawnCtr(args: readonly string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> };
  stop(): Promise<void>;
}

function ensureInstalled(): void {
  const missing = ['containerd', 'runc', 'ctr'].filter((p) => spawnSync('sh', ['-c', `command -v ${p}`]).status !== 0);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0)
    throw new Error(
      `${missing.join(', ')} missing; running test images needs root and the Debian packages containerd and runc`,
    );
  const r = spawnSync(
    'apt-get',
    ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '--no-install-recommends', 'containerd', 'runc'],
    { encoding: 'utf8', timeout: 600_000 },
  );
  if (r.status !== 0)
    throw new Error(
      `apt-get install containerd runc failed (is the Debian mirror reachable?):\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`,
    );
}

export async function startPrivateContainerd(): Promise<PrivateContainerd> {
  if (process.getuid?.() !== 0)
    throw new Error('running the test images in containerd needs root (run the tests as root)');
  ensureInstalled();
  const dir = mkdtempSync(join(tmpdir(), 'recon8s-images-containerd-'));
  const socket = join(dir, 'containerd.sock');
  writeFileSync(
    join(dir, 'config.toml'),
    [
      'version = 2',
      `root = "${dir}/root"`,
      `state = "${dir}/state"`,
      'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
      '[grpc]',
      `  address = "${socket}"`,
      '[ttrpc]',
      `  address = "${socket}.ttrpc"`,
      '',
    ].join('\n'),
  );
  const daemon = spawn(
    'sh',
    [
      '-c',
      `containerd --config "$1" >"$2" 2>&1 & pid=$!; cat >/dev/null; kill $pid; wait $pid`,
      'sh',
      join(dir, 'config.toml'),
      join(dir, 'containerd.log'),
    ],
    { stdio: ['pipe', 'ignore', 'ignore'] },
  );
  const stopped = new Promise<void>((resolve) => daemon.once('close', () => resolve()));
  const base = ['--address', socket, '-n', 'k8s.io'];
  for (let i = 0; ; i++) {
    if (existsSync(socket) && spawnSync('ctr', [...base, 'version'], { timeout: 5000 }).status === 0) break;
    if (i > 100) {
      daemon.stdin?.end();
      throw new Error(`containerd did not start: ${readFileSync(join(dir, 'containerd.log'), 'utf8').slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    dir,
    ctr: (args, opts = {}) => {
      const r = spawnSync('ctr', [...base, ...args], {
        encoding: 'utf8',
        timeout: opts.timeoutMs ?? 120_000,
        killSignal: 'SIGKILL',
        maxBuffer: 64 << 20,
      });
      return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
    },
    spawnCtr: (args) => {
      const child = spawn('ctr', [...base, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout?.on('data', (c: Buffer) => {
        output += c.toString();
      });
      child.stderr?.on('data', (c: Buffer) => {
        output += c.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
      return { child, output: () => output, exited };
    },
    stop: async () => {
      daemon.stdin?.end();
      await stopped;
      // Snapshots of containers that were still running stay mounted under the root: unmount them first.
      const mounts = readFileSync('/proc/self/mounts', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[1] ?? '')
        .filter((m) => m.startsWith(dir));
      for (const m of mounts.reverse()) await runCommand('umount', ['-l', m]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
