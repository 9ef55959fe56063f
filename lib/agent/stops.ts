// The stops of this member's mysqld, and which of them could have acknowledged a commit no replica had.
//
// Why: mysqld's graceful shutdown (SIGTERM, as the kubelet stops a container; SQL SHUTDOWN) releases
// every commit waiting for a semi-synchronous acknowledgement with an OK to its client (MySQL 9.7 logs
// "[MY-011145] SEMISYNC: Forced shutdown. Some updates might not be replicated"; proven in
// test/integration/mysql-real.test.ts). A primary cut off from its replicas, then deleted, drained or
// restarted by its liveness probe, would so acknowledge writes no replica has, and a failover would lose
// them. So the mysql container's preStop hook has this agent fence the member first (read-only, every
// client session ended: a client whose session is killed is never told that its commit succeeded), and
// no waiter is left for the shutdown to release.
//
// A stop the agent did not fence (the hook did not reach it, a fencing that did not finish, a person's
// SHUTDOWN, a commit after the fencing) is recorded as unsafe, with what mysqld held at its next start:
// lib/mysql/rejoin.ts's proof that a former primary's surplus was never acknowledged does not hold for
// any transaction in it, so neither the controller nor this agent discards one automatically. A crash
// (SIGKILL, out of memory, the node lost) releases nothing: the process is gone before any OK is sent.
//
// The record is a file in the data directory: it lives and dies with the data it is about (a clone that
// replaces the data directory starts without one, and judges nothing of the data it replaced).
import { open, readFile, rename } from 'node:fs/promises';
import type { UnsafeStop } from '../mysql/rejoin.js';

export type { UnsafeStop };

/** What the agent recorded of one run of mysqld. */
export interface RunRecord {
  /** When it started (ms since the epoch, whole seconds: LocalSql.startedAt). */
  readonly startedAt: number;
  /** Its stop, as the preStop hook asked for it: `requested` until the fencing ended, then `fenced`. */
  readonly stop?: {
    readonly state: 'requested' | 'fenced';
    /** When (RFC 3339). */
    readonly at: string;
    /** gtid_executed once fenced: a later commit makes the stop unsafe again. */
    readonly executed?: string;
  };
}

export interface StopsRecord {
  readonly run?: RunRecord;
  readonly unsafe: readonly UnsafeStop[];
}

/** The unsafe stops kept (the oldest dropped first): each holds every transaction before it, so few are needed. */
export const UNSAFE_STOPS_KEPT = 20;

/** Two reads of one run's start agree within this (Uptime is whole seconds, the clock moves between). */
const SAME_START_MS = 2000;

export const sameRun = (a: number, b: number): boolean => Math.abs(a - b) <= SAME_START_MS;

/** What the start after a stop shows of it. */
export interface NextStart {
  /** gtid_executed now. */
  readonly executed: string;
  /** InnoDB recovered from a crash at this start (performance_schema.error_log): the last run did not shut down. */
  readonly crashed: boolean;
}

/**
 * Why the stop that ended `previous` could have acknowledged a commit no replica had, or undefined when
 * it could not. Undefined too with no record of the run (this member's first start with the record: its
 * data is new, a clone, or of a version that kept none), which judges nothing.
 */
export function unsafeStop(previous: RunRecord | undefined, next: NextStart): string | undefined {
  if (!previous) return undefined;
  const stop = previous.stop;
  if (stop?.state === 'fenced')
    return stop.executed === next.executed
      ? undefined
      : `it committed after its agent fenced it for the stop at ${stop.at} (it held ${stop.executed ?? 'nothing recorded'} then, ${next.executed} at its next start): a graceful shutdown acknowledges a commit waiting for a replica`;
  if (stop?.state === 'requested')
    return `it was stopped at ${stop.at} before its agent's fencing had ended: a graceful shutdown acknowledges a commit waiting for a replica`;
  if (next.crashed) return undefined;
  return 'it was shut down cleanly without its agent fencing it first (not through the kubelet, or the preStop hook did not reach the agent): a graceful shutdown acknowledges a commit waiting for a replica';
}

/** The record after a start of run `startedAt`: the run before judged, this one recorded. */
export function afterStart(
  record: StopsRecord,
  startedAt: number,
  next: NextStart,
  found: string,
): { record: StopsRecord; unsafe?: UnsafeStop } {
  const why = unsafeStop(record.run, next);
  const unsafe = why === undefined ? undefined : { found, why, executed: next.executed };
  return {
    record: {
      run: { startedAt },
      unsafe: unsafe ? [...record.unsafe, unsafe].slice(-UNSAFE_STOPS_KEPT) : record.unsafe,
    },
    ...(unsafe ? { unsafe } : {}),
  };
}

/** What StopRecords needs of the member. */
export interface StopFacts {
  gtidExecuted(): Promise<string>;
  recoveredFromCrash(): Promise<boolean>;
}

export const STOPS_FILE = 'recon8s-stops.json';

const EMPTY: StopsRecord = { unsafe: [] };

function parse(text: string): StopsRecord {
  const v = JSON.parse(text) as Partial<StopsRecord>;
  return { ...(v.run ? { run: v.run } : {}), unsafe: Array.isArray(v.unsafe) ? v.unsafe : [] };
}

/** The record in the data directory, kept current; one change at a time. */
export class StopRecords {
  private queue: Promise<unknown> = Promise.resolve();
  /** The start of the run already recorded (no file read at every look). */
  private recorded: number | undefined;

  constructor(
    private readonly file: string,
    private readonly facts: StopFacts,
    private readonly log: (message: string) => void,
    private readonly now: () => Date = (): Date => new Date(),
  ) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The record; an empty one when there is none. A record that cannot be read is an error: judging without it could call an unsafe stop safe. */
  async read(): Promise<StopsRecord> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY;
      throw e;
    }
    return parse(text);
  }

  private async write(record: StopsRecord): Promise<void> {
    // Written whole and synced before it replaces the last: the stop that follows must find it on disk.
    const staged = `${this.file}.next`;
    const handle = await open(staged, 'w', 0o640);
    try {
      await handle.writeFile(`${JSON.stringify(record)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(staged, this.file);
  }

  /** Judges the stop before the run that started at `startedAt`, once per run. */
  observeRun(startedAt: number): Promise<void> {
    if (this.recorded !== undefined && sameRun(this.recorded, startedAt)) return Promise.resolve();
    return this.serial(async () => {
      const record = await this.read();
      if (record.run && sameRun(record.run.startedAt, startedAt)) {
        this.recorded = record.run.startedAt;
        return;
      }
      const next: NextStart = {
        executed: await this.facts.gtidExecuted(),
        crashed: record.run?.stop ? false : await this.facts.recoveredFromCrash(),
      };
      const after = afterStart(record, startedAt, next, this.now().toISOString());
      await this.write(after.record);
      this.recorded = startedAt;
      if (after.unsafe)
        this.log(
          `the last stop of mysqld could have acknowledged commits no replica had: ${after.unsafe.why}. None of the transactions it held then is discarded automatically.`,
        );
    });
  }

  /** The run that started at `startedAt` is being stopped: fencing begins (`executed` undefined) or ended. */
  stopping(startedAt: number, executed?: string): Promise<void> {
    return this.serial(async () => {
      const record = await this.read();
      const at = this.now().toISOString();
      await this.write({
        ...record,
        run: {
          startedAt: record.run?.startedAt ?? startedAt,
          stop: executed === undefined ? { state: 'requested', at } : { state: 'fenced', at, executed },
        },
      });
    });
  }

  /** Every unsafe stop recorded. */
  unsafe(): Promise<readonly UnsafeStop[]> {
    return this.serial(async () => (await this.read()).unsafe);
  }
}
