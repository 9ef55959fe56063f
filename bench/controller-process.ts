import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Sample } from './prometheus.js';
import { parsePrometheus, total } from './prometheus.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ControllerProcessOptions {
  /** Node arguments that run the CLI, e.g. `['--import', 'tsx', 'lib/cli/main.ts']` (see controller-build.ts). */
  readonly nodeArgs: readonly string[];
  readonly kubeconfigPath: string;
  readonly namespace: string;
  readonly workers: number;
  readonly resyncSeconds: number;
  readonly logLevel: string;
  /** Bound on startup (until the `started` log line: informers synced). */
  readonly startTimeoutMs?: number;
}

/** A controller's command line (see `ControllerProcess.spawn`). */
export interface ProcessSpec {
  readonly command: string;
  readonly args: readonly string[];
  /** Default: the repository root. */
  readonly cwd?: string;
  /** Default: this process's environment (KUBERNETES_SERVICE_HOST is always removed). */
  readonly env?: NodeJS.ProcessEnv;
  /** For messages: "the controller", "the peer". */
  readonly what?: string;
  /** Bound on startup (until the `started` log line). Default 60 s. */
  readonly startTimeoutMs?: number;
}

/** What the controller's JSON log said, counted (`applied` lines also by their `why`). */
export type LogCounts = Record<string, number>;

// Kills the controller's process group if this process dies without stopping it (SIGKILL, OOM):
// it holds a pipe from us, and EOF without "bye" means we are gone.
const WATCHDOG = `while IFS= read -r line; do [ "$line" = bye ] && exit 0; done
kill -TERM -$1 2>/dev/null; sleep 2; kill -KILL -$1 2>/dev/null`;

/**
 * The controller as production runs it: `node <entry> controller ...` in a child process (its own
 * process group), so its memory and CPU are its own, read from /proc, and its figures come from its
 * /metrics endpoint over HTTP.
 */
export class ControllerProcess {
  private readonly logCounts: LogCounts = {};
  private readonly tail: string[] = [];
  private exitInfo: string | undefined;
  private readonly exited: Promise<void>;
  private watchdog: ChildProcess | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly pid: number,
    private metricsAddress = '',
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitInfo = signal ? `signal ${signal}` : `code ${String(code)}`;
        resolve();
      }),
    );
  }

  /** recon8s's controller: `node <entry> controller --namespaces NS ...` (metrics and probes on free ports). */
  static async start(opts: ControllerProcessOptions): Promise<ControllerProcess> {
    // Node flags for the controller only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, `--heapsnapshot-signal=SIGUSR2`).
    const flags = (process.env.RECON8S_BENCH_CONTROLLER_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    return ControllerProcess.spawn({
      command: process.execPath,
      args: [
        ...flags,
        ...opts.nodeArgs,
        'controller',
        '--kubeconfig',
        opts.kubeconfigPath,
        '--namespaces',
        opts.namespace,
        '--workers',
        String(opts.workers),
        '--resync-period',
        String(opts.resyncSeconds),
        '--metrics-bind-address',
        '127.0.0.1:0',
        '--health-probe-bind-address',
        '127.0.0.1:0',
        '--log-level',
        opts.logLevel,
      ],
      env,
      ...(opts.startTimeoutMs !== undefined ? { startTimeoutMs: opts.startTimeoutMs } : {}),
    });
  }

  /**
   * Any controller that logs JSON lines on stderr and says `{"msg":"started","metrics":"HOST:PORT"}` once its
   * caches have synced (recon8s, and the controller-runtime peer): spawned in its own process group.
   */
  static async spawn(spec: ProcessSpec): Promise<ControllerProcess> {
    const what = spec.what ?? 'the controller';
    const env = { ...(spec.env ?? process.env) };
    delete env.KUBERNETES_SERVICE_HOST;
    const child = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd ?? REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
    });
    if (child.pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new Error(`could not start ${what}: ${error.message}`);
    }
    const proc = new ControllerProcess(child, child.pid);
    proc.startWatchdog();
    const timeoutMs = spec.startTimeoutMs ?? 60_000;
    const started = new Promise<string>((resolve, reject) => {
      proc.onLine = (entry) => {
        if (entry.msg === 'started' && typeof entry.metrics === 'string') resolve(entry.metrics);
      };
      void proc.exited.then(() =>
        reject(new Error(`${what} exited (${proc.exitInfo ?? '?'}) before it started:\n${proc.tail.join('\n')}`)),
      );
      setTimeout(
        () => reject(new Error(`${what} did not start within ${timeoutMs} ms:\n${proc.tail.join('\n')}`)),
        timeoutMs,
      ).unref();
    });
    proc.readLogs();
    try {
      proc.metricsAddress = await started;
    } catch (e) {
      proc.killNow();
      throw e;
    }
    return proc;
  }

  private onLine: (entry: Record<string, unknown>) => void = () => undefined;

  private readLogs(): void {
    let buffered = '';
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        this.tail.push(line);
        if (this.tail.length > 40) this.tail.shift();
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          this.count('(not JSON)');
          continue;
        }
        const msg = typeof entry.msg === 'string' ? entry.msg : '?';
        this.count(typeof entry.level === 'string' ? `${entry.level} ${msg}` : msg);
        if (msg === 'applied')
          this.count(`  applied why=${String(entry.why)}${entry.path ? ` path=${String(entry.path)}` : ''}`);
        this.onLine(entry);
      }
    });
  }

  private count(key: string): void {
    this.logCounts[key] = (this.logCounts[key] ?? 0) + 1;
  }

  private startWatchdog(): void {
    const wd = spawn('/bin/sh', ['-c', WATCHDOG, 'recon8s-bench-watchdog', String(this.pid)], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    wd.on('error', () => undefined);
    wd.unref();
    if (wd.stdin instanceof Socket) wd.stdin.unref();
    wd.stdin?.on('error', () => undefined);
    this.watchdog = wd;
  }

  get metricsUrl(): string {
    return `http://${this.metricsAddress}/metrics`;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** Log lines by `level msg` so far. */
  logs(): LogCounts {
    return { ...this.logCounts };
  }

  lastLines(n = 10): string[] {
    return this.tail.slice(-n);
  }

  async metrics(): Promise<Sample[]> {
    const resp = await fetch(this.metricsUrl, { signal: AbortSignal.timeout(10_000) });
    if (!resp.ok) throw new Error(`GET ${this.metricsUrl}: ${resp.status}`);
    return parsePrometheus(await resp.text());
  }

  /** SIGTERM (graceful: the CLI stops its workers and informers), SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<string> {
    if (this.running) {
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    this.signal('SIGKILL'); // anything it forked
    this.dismissWatchdog();
    return this.exitInfo ?? '?';
  }

  /** Synchronous, for exit paths. */
  killNow(): void {
    this.signal('SIGKILL');
    this.dismissWatchdog();
  }

  private signal(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, sig);
    } catch {
      // already gone
    }
  }

  private dismissWatchdog(): void {
    if (this.watchdog?.stdin && !this.watchdog.stdin.destroyed) this.watchdog.stdin.end('bye\n');
    this.watchdog = undefined;
  }
}

/** The controller figures the bench reads, from one /metrics scrape. */
export interface ControllerFigures {
  readonly reconciles: number;
  readonly reconcileErrors: number;
  readonly queueDepth: number;
  readonly activeWorkers: number;
}

export function controllerFigures(samples: readonly Sample[]): ControllerFigures {
  return {
    reconciles: total(samples, 'controller_runtime_reconcile_total'),
    reconcileErrors: total(samples, 'controller_runtime_reconcile_total', (l) => l.result === 'error'),
    queueDepth: total(samples, 'workqueue_depth'),
    activeWorkers: total(samples, 'controller_runtime_active_workers'),
  };
}
