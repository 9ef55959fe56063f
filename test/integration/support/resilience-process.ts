import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { eventually } from '../eventually.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = fileURLToPath(new URL('../../../lib/cli/main.ts', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./resilience-controller-main.ts', import.meta.url));

/** One JSON log line of the controller (non-JSON output is kept as `{ msg: <line> }`). */
export type LogLine = Readonly<Record<string, unknown>> & { readonly msg?: unknown };

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** What the controller said when it was up (after its informers synced). */
export interface Started {
  /** `host:port` of /metrics. */
  readonly metrics: string;
}

/** A controller running in a child process, as it runs in a pod. */
export class ControllerProcess {
  readonly logs: LogLine[] = [];
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise<Exit>((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => this.logs.push(parseLine(line)));
    }
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** Waits for the `started` log line (informers synced, endpoints bound). Fails early if the process exits. */
  async started(timeoutMs = 30_000): Promise<Started> {
    const line = await eventually(
      () => {
        if (this.exit)
          throw new Error(
            `${this.name} exited (${JSON.stringify(this.exit)}) before it started; log tail:\n${this.tail()}`,
          );
        const started = this.logs.find((l) => l.msg === 'started');
        if (!started) throw new Error(`${this.name} has not logged "started" yet; log tail:\n${this.tail()}`);
        return started;
      },
      { timeoutMs, description: `${this.name} to start` },
    );
    const metrics = line.metrics;
    if (typeof metrics !== 'string')
      throw new Error(`${this.name} started without a metrics address: ${JSON.stringify(line)}`);
    return { metrics };
  }

  /** Sends `signal` and waits for the process to end; SIGKILL after `graceMs` if it does not. */
  async kill(signal: NodeJS.Signals = 'SIGKILL', graceMs = 15_000): Promise<Exit> {
    if (this.exit) return this.exit;
    this.child.kill(signal);
    if (signal === 'SIGKILL') return this.exited;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The last log lines, for failure messages (the controller never logs secret values). */
  tail(lines = 15): string {
    return this.logs
      .slice(-lines)
      .map((l) => JSON.stringify(l))
      .join('\n');
  }

  /** Synchronous last resort (process exit). */
  killNow(): void {
    if (!this.exit) this.child.kill('SIGKILL');
  }
}

function parseLine(line: string): LogLine {
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as LogLine;
  } catch {
    // not JSON
  }
  return { msg: line };
}

/**
 * Starts controllers as child processes and kills whatever is left: call `killAll()` in an `after`
 * hook; if the test process exits first, its exit handler SIGKILLs them.
 */
export class ControllerProcesses {
  private readonly all: ControllerProcess[] = [];
  private readonly onExit = (): void => {
    for (const p of this.all) p.killNow();
  };

  constructor() {
    process.on('exit', this.onExit);
  }

  /** `recon8s controller <args>`: the real command line, as the Deployment runs it. */
  cli(name: string, args: readonly string[]): ControllerProcess {
    return this.spawn(name, [CLI, 'controller', ...args]);
  }

  /**
   * startController() with options the command line does not offer (short leader-election periods),
   * through support/resilience-controller-main.ts; it stops gracefully on SIGTERM like the command.
   */
  script(name: string, options: ScriptControllerOptions): ControllerProcess {
    return this.spawn(name, [SCRIPT, JSON.stringify(options)]);
  }

  async killAll(): Promise<void> {
    await Promise.all(this.all.map((p) => p.kill('SIGKILL')));
    this.all.length = 0;
  }

  private spawn(name: string, args: readonly string[]): ControllerProcess {
    // stdin stays open as a pipe: the script exits when it closes (this process died without a word).
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    const p = new ControllerProcess(name, child);
    this.all.push(p);
    return p;
  }
}

/** What support/resilience-controller-main.ts takes (JSON in argv[2]). */
export interface ScriptControllerOptions {
  readonly kubeconfigPath: string;
  readonly namespaces: readonly string[];
  readonly leaderElection?: {
    readonly namespace: string;
    readonly name: string;
    readonly identity: string;
    readonly leaseDurationMs: number;
    readonly renewDeadlineMs: number;
    readonly retryPeriodMs: number;
  };
}

/** `/metrics` of a controller, as Prometheus scrapes it. */
export async function scrapeMetrics(address: string): Promise<string> {
  const res = await fetch(`http://${address}/metrics`);
  if (!res.ok) throw new Error(`GET http://${address}/metrics: HTTP ${res.status}`);
  return res.text();
}

/** The sum of the samples of `name` whose labels include `labels` (0 when there is none). */
export function metricSum(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map(
      [...(m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) sum += Number(m[4]);
  }
  return sum;
}
