import { readdirSync, readFileSync, statSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandLineOf, isRunning, startTimeOf, stopRecordedProcess } from './process.js';

/** Temporary control planes live in `os.tmpdir()/recon8s-controlplane-XXXXXX/`. */
export const TEMP_DIR_PREFIX = 'recon8s-controlplane-';
const STATE_FILE = 'state.json';
// A directory without a state file is a start in progress, unless it is this old.
const ABANDONED_START_MS = 15 * 60_000;

export interface RecordedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
}

/** What a running control plane writes into its directory: enough for another process to find or stop it. */
export interface ControlPlaneState {
  readonly version: 1;
  readonly dir: string;
  readonly kubeVersion: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly binDir: string;
  /** The Node process whose end must end this control plane; null for one that outlives its starter. */
  readonly owner: { readonly pid: number; readonly startTime: string | undefined } | null;
  readonly keepDir: boolean;
  /** In start order: etcd first. */
  readonly processes: readonly RecordedProcess[];
}

export function currentOwner(): ControlPlaneState['owner'] {
  return { pid: process.pid, startTime: startTimeOf(process.pid) };
}

export async function writeState(state: ControlPlaneState): Promise<void> {
  const path = join(state.dir, STATE_FILE);
  // Write and rename, so a reader never sees half a file.
  await writeFile(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

export function readState(dir: string): ControlPlaneState | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, STATE_FILE), 'utf8');
  } catch {
    return undefined;
  }
  const state = JSON.parse(text) as ControlPlaneState;
  if (state.version !== 1 || !Array.isArray(state.processes)) {
    throw new Error(`${join(dir, STATE_FILE)} is not a recon8s control-plane state file (version 1).`);
  }
  return state;
}

/** The recorded processes that still run, by pid and by a command line that names this directory. */
export function runningProcesses(state: ControlPlaneState): RecordedProcess[] {
  return state.processes.filter((p) => isRunning(p.pid) && (commandLineOf(p.pid) ?? '').includes(state.dir));
}

/**
 * Stops the recorded processes in reverse start order (SIGTERM, SIGKILL after the grace period);
 * returns how many were still running.
 */
export async function stopRecordedProcesses(state: ControlPlaneState, graceMs?: number): Promise<number> {
  let stopped = 0;
  for (const p of [...state.processes].reverse()) {
    if (await stopRecordedProcess(p.pid, state.dir, graceMs)) stopped += 1;
  }
  return stopped;
}

/**
 * Stops the control plane recorded in `dir` (even one another process started) and removes the
 * directory. Returns false when there was nothing to stop.
 */
export async function stopControlPlaneAt(dir: string, graceMs?: number): Promise<boolean> {
  const state = readState(dir);
  if (state === undefined) return false;
  if (state.dir !== dir) throw new Error(`${join(dir, STATE_FILE)} describes ${state.dir}; not touching either.`);
  await stopRecordedProcesses(state, graceMs);
  await rm(dir, { recursive: true, force: true });
  return true;
}

function ownerIsGone(owner: NonNullable<ControlPlaneState['owner']>): boolean {
  if (!isRunning(owner.pid)) return true;
  const startTime = startTimeOf(owner.pid);
  return owner.startTime !== undefined && startTime !== undefined && startTime !== owner.startTime;
}

/**
 * Stops and removes temporary control planes whose owner died without cleaning up (SIGKILL, a crash, a
 * power cut) and whose watchdog did not finish the job either. Control planes of other live test runs
 * and persistent ones (`npm run cluster -- up`) are left alone.
 */
export async function reapStaleControlPlanes(root = tmpdir()): Promise<string[]> {
  let names: string[];
  try {
    names = readdirSync(root).filter((name) => name.startsWith(TEMP_DIR_PREFIX));
  } catch {
    return [];
  }
  const reaped: string[] = [];
  for (const name of names) {
    const dir = join(root, name);
    try {
      const state = readState(dir);
      if (state === undefined) {
        if (Date.now() - statSync(dir).mtimeMs > ABANDONED_START_MS) {
          await rm(dir, { recursive: true, force: true });
          reaped.push(dir);
        }
        continue;
      }
      // Never act on a state file that describes some other directory.
      if (state.dir !== dir || state.owner === null || !ownerIsGone(state.owner)) continue;
      const stopped = await stopRecordedProcesses(state, 1_000);
      // A kept directory stays for whoever asked to keep it; it is reported once, when its processes die.
      if (!state.keepDir) await rm(dir, { recursive: true, force: true });
      if (stopped > 0 || !state.keepDir) reaped.push(dir);
    } catch {
      // Another run may be reaping or removing the same directory right now; it is not ours to fail on.
    }
  }
  return reaped;
}
