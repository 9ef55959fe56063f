import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { signalGroup } from './process.js';

/*
 * A control plane started by a test run must not outlive the run, however it ends:
 * - stop() stops it in order (the normal path);
 * - 'exit' kills what is left: Node emits 'exit' on process.exit(), on an empty event loop and after an
 *   uncaught exception, so no 'uncaughtException' listener is needed (one would also change how mocha
 *   reports such exceptions: it turns them into test failures and goes on);
 * - SIGINT/SIGTERM/SIGHUP would end Node without 'exit', so they get handlers;
 * - SIGKILL and OOM kills run no handler at all: a watchdog shell per control plane holds a pipe from
 *   this process and, when the pipe closes without a goodbye, kills the process groups it was told about;
 * - state.ts reaps what even the watchdog missed, at the next start.
 */

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

// Lines "+<pgid>" / "-<pgid>" keep the list current; EOF means the owner is gone, for whatever reason.
const WATCHDOG_SCRIPT = `
dir=$1 keep=$2 groups=' '
while IFS= read -r line; do
  case $line in
    +*) groups="$groups\${line#?} " ;;
    -*) groups=$(printf '%s' "$groups" | sed "s/ \${line#?} / /") ;;
  esac
done
alive=
for g in $groups; do kill -0 -$g 2>/dev/null && alive="$alive $g"; done
if [ -n "$alive" ]; then
  for g in $alive; do kill -TERM -$g 2>/dev/null; done
  sleep 2
  for g in $alive; do kill -KILL -$g 2>/dev/null; done
fi
[ "$keep" = keep ] || rm -rf -- "$dir"
`;

const owned = new Set<Ownership>();
let handlersInstalled = false;

/** Ties the process groups of one control plane to the life of this Node process. */
export class Ownership {
  private readonly groups = new Set<number>();
  private readonly watchdog: ChildProcess;
  private released = false;

  constructor(
    readonly dir: string,
    private readonly keepDir: boolean,
  ) {
    this.watchdog = spawn(
      '/bin/sh',
      ['-c', WATCHDOG_SCRIPT, 'recon8s-controlplane-watchdog', dir, keepDir ? 'keep' : 'remove'],
      {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
      },
    );
    // Spawn failures (no /bin/sh) surface as an 'error' event; the other layers still apply then.
    this.watchdog.on('error', () => undefined);
    this.watchdog.unref();
    if (this.watchdog.stdin instanceof Socket) this.watchdog.stdin.unref();
    this.watchdog.stdin?.on('error', () => undefined);
    owned.add(this);
    installHandlers();
  }

  add(pgid: number): void {
    this.groups.add(pgid);
    this.watchdog.stdin?.write(`+${pgid}\n`);
  }

  remove(pgid: number): void {
    this.groups.delete(pgid);
    this.watchdog.stdin?.write(`-${pgid}\n`);
  }

  /** After stop(): the watchdog is told goodbye and the process-exit handlers forget this control plane. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    owned.delete(this);
    if (owned.size === 0) removeHandlers();
    const watchdog = this.watchdog;
    if (watchdog.exitCode !== null || watchdog.signalCode !== null || watchdog.pid === undefined) return;
    const exited = new Promise<void>((resolve) => watchdog.once('exit', () => resolve()));
    // Unreferenced, the watchdog would let Node exit in the middle of this await.
    watchdog.ref();
    watchdog.stdin?.end();
    await exited;
  }

  /** Synchronous, for exit paths where nothing asynchronous runs any more. */
  killNow(): void {
    for (const pgid of this.groups) signalGroup(pgid, 'SIGKILL');
    this.groups.clear();
    if (!this.keepDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

function killAllNow(): void {
  for (const ownership of owned) {
    try {
      ownership.killNow();
    } catch {
      // Exiting: do as much as possible; the watchdog and the next start's reaper cover the rest.
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  killAllNow();
  const others = process.listenerCount(signal) - 1;
  removeHandlers();
  // With no other listener, the signal's default action (ending the process) has to be restored by hand.
  if (others === 0) process.kill(process.pid, signal);
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllNow);
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function removeHandlers(): void {
  handlersInstalled = false;
  process.removeListener('exit', killAllNow);
  for (const signal of SIGNALS) process.removeListener(signal, onSignal);
}
