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
import { GtidSet } from '../mysql/gtid-set.js';
import type { UnsafeStop } from '../mysql/rejoin.js';

export type { UnsafeStop };

/** What the agent recorded of one run of mysqld. */
export interface RunRecord {
  /** When it started (ms since the epoch, whole seconds: LocalSql.startedAt). */
  readonly startedAt: number;
  /**
   * Its stop: `signalled` when the agent was told to stop (the pod is going away) before any hook came,
   * `requested` once the preStop hook asked and until its fencing ended, then `fenced`.
   */
  readonly stop?: {
    readonly state: 'signalled' | 'requested' | 'fenced';
    /** When (RFC 3339). */
    readonly at: string;
    /** gtid_executed once fenced: a later commit of its own makes the stop unsafe again. */
    readonly executed?: string;
    /** Its server_uuid once fenced: only its own transactions count as its commits (a replica's applier goes on applying others'). */
    readonly serverUuid?: string;
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

/** How the run before a start ended, as far as the record and that start show it. */
export type StopOutcome =
  /** No record of the run (this member's first start with the record: new data, a clone, or an older version). */
  | { readonly kind: 'unknown' }
  /** Its agent fenced it for the stop, and nothing was committed after. */
  | { readonly kind: 'fenced'; readonly at: string }
  /** It crashed (InnoDB recovered at this start): nothing could be acknowledged by a shutdown. */
  | { readonly kind: 'crashed' }
  /** It could have acknowledged a commit alone: why. */
  | { readonly kind: 'unsafe'; readonly why: string };

/** How the run `previous` records ended, seen from the start after it. */
export function stopOutcome(previous: RunRecord | undefined, next: NextStart): StopOutcome {
  if (!previous) return { kind: 'unknown' };
  const stop = previous.stop;
  if (stop?.state === 'fenced')
    return committedSince(stop, next.executed) === undefined
      ? { kind: 'fenced', at: stop.at }
      : {
          kind: 'unsafe',
          why: `it committed after its agent fenced it for the stop at ${stop.at} (it held ${stop.executed ?? 'nothing recorded'} then, ${next.executed} at its next start): a graceful shutdown acknowledges a commit waiting for a replica`,
        };
  if (stop?.state === 'signalled')
    return {
      kind: 'unsafe',
      why: `its pod was stopped at ${stop.at} and no preStop hook asked its agent to fence it first: a graceful shutdown acknowledges a commit waiting for a replica (a crash during that shutdown hides it)`,
    };
  if (stop?.state === 'requested')
    return {
      kind: 'unsafe',
      why: `it was stopped at ${stop.at} before its agent's fencing had ended: a graceful shutdown acknowledges a commit waiting for a replica`,
    };
  if (next.crashed) return { kind: 'crashed' };
  return {
    kind: 'unsafe',
    why: 'it was shut down cleanly without its agent fencing it first (not through the kubelet, or the preStop hook did not reach the agent): a graceful shutdown acknowledges a commit waiting for a replica',
  };
}

/** What the member committed itself after it was fenced, as a GTID set; undefined when nothing. */
function committedSince(stop: NonNullable<RunRecord['stop']>, executed: string): string | undefined {
  if (!stop.serverUuid) return stop.executed === executed ? undefined : executed;
  const since = GtidSet.parse(executed)
    .ofServer(stop.serverUuid)
    .subtract(GtidSet.parse(stop.executed ?? ''));
  return since.isEmpty() ? undefined : since.toString();
}

/** Why the stop that ended `previous` could have acknowledged a commit no replica had, or undefined when it could not (or nothing is known of it). */
export function unsafeStop(previous: RunRecord | undefined, next: NextStart): string | undefined {
  const outcome = stopOutcome(previous, next);
  return outcome.kind === 'unsafe' ? outcome.why : undefined;
}

/** The record after a start of run `startedAt`: the run before judged, this one recorded. */
export function afterStart(
  record: StopsRecord,
  startedAt: number,
  next: NextStart,
  found: string,
): { record: StopsRecord; outcome: StopOutcome; unsafe?: UnsafeStop } {
  const outcome = stopOutcome(record.run, next);
  const unsafe = outcome.kind === 'unsafe' ? { found, why: outcome.why, executed: next.executed } : undefined;
  return {
    record: {
      run: { startedAt },
      unsafe: unsafe ? [...record.unsafe, unsafe].slice(-UNSAFE_STOPS_KEPT) : record.unsafe,
    },
    outcome,
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

function parse(text: string, file: string): StopsRecord {
  const v = JSON.parse(text) as unknown;
  const record = v as Partial<StopsRecord> | null;
  const unsafeOk = (u: unknown): boolean => {
    const x = u as Partial<UnsafeStop> | null;
    return typeof x?.found === 'string' && typeof x.why === 'string' && typeof x.executed === 'string';
  };
  if (
    typeof record !== 'object' ||
    record === null ||
    Array.isArray(record) ||
    (record.run !== undefined && typeof record.run?.startedAt !== 'number') ||
    !Array.isArray(record.unsafe) ||
    !record.unsafe.every(unsafeOk)
  )
    throw new Error(`${file} is not a record of mysqld's stops: ${text.slice(0, 200)}`);
  return { ...(record.run ? { run: record.run } : {}), unsafe: record.unsafe };
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
    return parse(text, this.file);
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
      // Once per start of mysqld: how its last run ended (what a person reading the log asks first).
      const outcome = after.outcome;
      if (outcome.kind === 'fenced')
        this.log(
          `mysqld's last run was fenced by this agent before it stopped (at ${outcome.at}): it acknowledged nothing alone`,
        );
      else if (outcome.kind === 'crashed')
        this.log("mysqld's last run crashed (this start recovered from it): it acknowledged nothing alone");
      else if (outcome.kind === 'unsafe')
        this.log(
          `the last stop of mysqld could have acknowledged commits no replica had: ${outcome.why}. None of the transactions it held then is discarded automatically.`,
        );
    });
  }

  /**
   * The run that started at `startedAt` is being stopped: fencing begins (`fenced` undefined) or ended,
   * with what the member held then.
   */
  stopping(startedAt: number, fenced?: { readonly executed: string; readonly serverUuid: string }): Promise<void> {
    return this.serial(async () => {
      const record = await this.read();
      const at = this.now().toISOString();
      await this.write({
        ...record,
        run: {
          startedAt: record.run?.startedAt ?? startedAt,
          stop: fenced === undefined ? { state: 'requested', at } : { state: 'fenced', at, ...fenced },
        },
      });
    });
  }

  /**
   * A stop was asked for (the hook came) before anything of mysqld is known (it may not answer: hung, as
   * when its liveness probe failed): the run this agent saw is recorded as stopping, so that a graceful
   * shutdown cut short by SIGKILL is not taken for a crash at the next start.
   */
  stopAsked(): Promise<void> {
    return this.markSeenRun('requested');
  }

  /**
   * The agent was told to stop (SIGTERM: the pod is going away): recorded unless the hook came first, so
   * that a stop with no hook is unsafe even when the kubelet's SIGKILL cut mysqld's shutdown short (the
   * next start then looks like a crash, but the shutdown's start may have acknowledged waiting commits).
   */
  signalled(): Promise<void> {
    return this.markSeenRun('signalled');
  }

  /** The run this agent saw start marked as stopping (`state`), unless a stop of it is recorded already. */
  private markSeenRun(state: 'requested' | 'signalled'): Promise<void> {
    return this.serial(async () => {
      const record = await this.read();
      // Only the run this agent saw start: one it did not see may not be the one stopping.
      const seen = this.recorded;
      if (!record.run || record.run.stop || seen === undefined || !sameRun(record.run.startedAt, seen)) return;
      await this.write({ ...record, run: { ...record.run, stop: { state, at: this.now().toISOString() } } });
    });
  }

  /** Every unsafe stop recorded. */
  unsafe(): Promise<readonly UnsafeStop[]> {
    return this.serial(async () => (await this.read()).unsafe);
  }
}
