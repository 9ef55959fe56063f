import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagedProcess } from './process.js';

/** What a probe saw: ready, or a short description of why not (quoted if the wait times out). */
export type ProbeResult = true | string;

export interface WaitOptions {
  /** Absolute deadline (Date.now() scale), shared by all steps of one start. */
  readonly deadline: number;
  /** If any of these exits while we wait, waiting is pointless: fail at once with its log. */
  readonly processes: readonly ManagedProcess[];
}

/** Thrown when a component exits during start; `process` tells which, for callers that retry. */
export class ComponentExitedError extends Error {
  constructor(
    readonly process: ManagedProcess,
    what: string,
  ) {
    super(
      `${process.describeExit()} while waiting for ${what}. Last lines of ${process.spec.logPath}:\n${process.tail()}`,
    );
  }
}

/**
 * Polls `probe` with a growing interval (10 ms to 100 ms: the probes are cheap loopback requests) until it reports ready. Probe errors (the
 * port is not open yet) count as "not ready"; the last reason is in the timeout message.
 */
export async function waitUntil(what: string, probe: () => Promise<ProbeResult>, options: WaitOptions): Promise<void> {
  let interval = 10;
  let last: string;
  for (;;) {
    const exited = options.processes.find((p) => p.exit !== undefined);
    if (exited) throw new ComponentExitedError(exited, what);
    try {
      const result = await probe();
      if (result === true) return;
      last = result;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() + interval > options.deadline) {
      const logs = options.processes.map((p) => `--- ${p.name} (${p.spec.logPath}):\n${p.tail(20)}`).join('\n');
      throw new Error(`Timed out waiting for ${what}; last answer: ${last}\n${logs}`);
    }
    await sleep(interval);
    interval = Math.min(100, Math.round(interval * 1.5));
  }
}
