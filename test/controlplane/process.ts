import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessSpec {
  /** Short name used in messages and state files, e.g. `kube-apiserver`. */
  readonly name: string;
  readonly binary: string;
  readonly args: readonly string[];
  /** stdout and stderr are appended here, never to the test runner's output. */
  readonly logPath: string;
}

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** How long a process gets to exit after SIGTERM before its whole process group gets SIGKILL. */
export const DEFAULT_GRACE_MS = 5_000;

/**
 * One control-plane program, running in its own process group (`detached`): a Ctrl-C in the terminal
 * reaches only the test runner, which decides how the control plane ends (lifecycle.ts), and one
 * kill(-pgid) reaches everything the program might have started.
 */
export class ManagedProcess {
  private exitStatus: ExitStatus | undefined;
  private readonly exited: Promise<ExitStatus>;

  private constructor(
    readonly spec: ProcessSpec,
    private readonly child: ChildProcess,
    readonly pid: number,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitStatus = { code, signal };
        resolve(this.exitStatus);
      });
    });
    // The event loop must not wait for the control plane: whoever owns it stops it explicitly, and the
    // exit handlers in lifecycle.ts stop it when the owner forgets.
    child.unref();
  }

  static async spawn(spec: ProcessSpec): Promise<ManagedProcess> {
    const log = openSync(spec.logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(spec.binary, [...spec.args], { detached: true, stdio: ['ignore', log, log] });
    } finally {
      closeSync(log);
    }
    const pid = child.pid;
    if (pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new Error(`Could not start ${spec.name} (${spec.binary}): ${error.message}`, { cause: error });
    }
    return new ManagedProcess(spec, child, pid);
  }

  get name(): string {
    return this.spec.name;
  }

  /** Undefined while the process runs. */
  get exit(): ExitStatus | undefined {
    return this.exitStatus;
  }

  /**
   * SIGTERM to the process group, then SIGKILL after `graceMs` (at once for 0, like a crash); resolves
   * once the process is gone.
   */
  async stop(graceMs = DEFAULT_GRACE_MS): Promise<void> {
    if (this.exitStatus) return;
    // Unreferenced, the child would let Node exit before its exit event arrives.
    this.child.ref();
    signalGroup(this.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
    // A live timer keeps the event loop (and so a graceful stop) alive; it is cancelled once the process is gone.
    const cancel = new AbortController();
    const timeout = sleep(graceMs, 'timeout' as const, { signal: cancel.signal }).catch(() => 'cancelled' as const);
    const first = await Promise.race([this.exited, timeout]);
    cancel.abort();
    if (first === 'timeout') {
      signalGroup(this.pid, 'SIGKILL');
      await this.exited;
    }
    // Anything the program forked shares its group and must not outlive it either.
    signalGroup(this.pid, 'SIGKILL');
  }

  /** The last lines of the process's log, for error messages. */
  tail(lines = 40): string {
    return tailOf(this.spec.logPath, lines);
  }

  describeExit(): string {
    const status = this.exitStatus;
    if (!status) return `${this.name} (pid ${this.pid}) is running`;
    return `${this.name} (pid ${this.pid}) exited ${status.signal ? `on ${status.signal}` : `with code ${String(status.code)}`}`;
  }
}

/** Sends a signal to a whole process group; a group that is already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** True while `pid` exists and is not a zombie waiting to be reaped. */
export function isRunning(pid: number): boolean {
  const stat = procStat(pid);
  if (stat !== undefined) return stat.state !== 'Z' && stat.state !== 'X';
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The kernel's start time of `pid` (clock ticks since boot) where /proc exists: together with the pid
 * it names one process, so a recycled pid is never mistaken for the one we recorded.
 */
export function startTimeOf(pid: number): string | undefined {
  return procStat(pid)?.startTime;
}

/** The command line of `pid`, or undefined when it is gone. */
export function commandLineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    // No /proc (macOS): ask ps.
  }
  try {
    return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Stops a process we did not spawn (recorded in a state file) after checking it is still ours. */
export async function stopRecordedProcess(
  pid: number,
  mustMention: string,
  graceMs = DEFAULT_GRACE_MS,
): Promise<boolean> {
  const commandLine = commandLineOf(pid);
  if (commandLine === undefined || !commandLine.includes(mustMention) || !isRunning(pid)) return false;
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isRunning(pid) && Date.now() < deadline) await sleep(50);
  signalGroup(pid, 'SIGKILL');
  const killDeadline = Date.now() + 10_000;
  while (isRunning(pid)) {
    if (Date.now() > killDeadline) throw new Error(`pid ${pid} (${commandLine}) survived SIGKILL for 10 s.`);
    await sleep(20);
  }
  return true;
}

export function tailOf(path: string, lines: number): string {
  try {
    const text = readFileSync(path, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(no log at ${path}: ${(error as Error).message})`;
  }
}

function procStat(pid: number): { state: string; startTime: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After the name: field 3 is the state, field 22 the start time.
  return { state: fields[0] ?? '', startTime: fields[19] ?? '' };
}
