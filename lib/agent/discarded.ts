// The binary logs of transactions a re-provisioning by clone discards, kept on the data volume for
// inspection (mysqlbinlog), bounded so that they never fill it.
//
// Before the clone (mysqld still runs on the data it replaces), the agent writes `discarded-<time>.pending/`
// beside the data directory: `gtids` (the set a clone discards), `binlogs` (the binary logs that hold any
// of it: a log holds what the next one's Previous_gtids adds to its own, the last one what
// gtid_executed adds), and a README. Once the clone succeeded it is renamed `discarded-<time>/` (before
// the clone is, so a finished clone always has its record); an attempt that failed or was cut short
// leaves a `.pending` one, removed by the next attempt. Once the clone replicates, and before the
// previous data directory is removed, the logs it names are moved there from it (a rename on one
// volume: no copy, no space taken that the old data did not already hold).
//
// Bounds: the logs of one discard are kept up to DISCARD_KEEP_BYTES or a tenth of the volume, whichever
// is less (the newest first: the discarded transactions are a primary's last); the others are named
// in the README as not kept. At most DISCARDS_KEPT discards are kept, the oldest removed first.
import { mkdir, readFile, readdir, rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GtidSet } from '../mysql/gtid-set.js';

/** The most bytes of binary logs one discard keeps (one log at MySQL's default max_binlog_size). */
export const DISCARD_KEEP_BYTES = 1024 ** 3;
/** The most discards kept on a volume. */
export const DISCARDS_KEPT = 3;
const PREFIX = 'discarded-';
const PENDING = '.pending';

/** One binary log, as SHOW BINARY LOGS and its Previous_gtids event tell it. */
export interface BinlogFile {
  readonly name: string;
  readonly bytes: number;
  /** The GTID set executed before this log began. */
  readonly previousGtids: string;
}

/**
 * The binary logs that hold any of `discarded`, the newest first up to `maxBytes` (`keep`), and those
 * that hold some too but are beyond that (`left`). `files` in the server's order; `executed`: its
 * gtid_executed.
 */
export function binlogsHolding(
  files: readonly BinlogFile[],
  executed: string,
  discarded: string,
  maxBytes: number,
): { keep: string[]; left: string[] } {
  const wanted = GtidSet.parse(discarded);
  const holding: BinlogFile[] = [];
  files.forEach((f, i) => {
    const after = GtidSet.parse(files[i + 1]?.previousGtids ?? executed);
    const own = after.subtract(GtidSet.parse(f.previousGtids));
    if (!own.intersect(wanted).isEmpty()) holding.push(f);
  });
  const keep: string[] = [];
  const left: string[] = [];
  let bytes = 0;
  for (const f of holding.reverse()) {
    if (left.length === 0 && bytes + f.bytes <= maxBytes) {
      keep.unshift(f.name);
      bytes += f.bytes;
    } else left.unshift(f.name);
  }
  return { keep, left };
}

/** What the agent's member session tells about its binary logs. */
export interface BinlogSource {
  binaryLogs(): Promise<{ name: string; bytes: number }[]>;
  previousGtids(log: string): Promise<string>;
  gtidExecuted(): Promise<string>;
}

/** The bound of one discard on this volume: DISCARD_KEEP_BYTES, or a tenth of the volume when that is less. */
export async function keepBound(volume: string): Promise<number> {
  try {
    const fs = await statfs(volume);
    return Math.min(DISCARD_KEEP_BYTES, Math.floor((fs.blocks * fs.bsize) / 10));
  } catch {
    return DISCARD_KEEP_BYTES;
  }
}

const stamp = (t: Date): string => t.toISOString().replace(/[:.]/g, '-');

/**
 * Before a clone that discards `discarded`: its record, pending (see the design above). Returns the
 * pending directory, to be passed to `confirm` once the clone succeeded, or `abandon` if it failed.
 */
export async function recordDiscard(o: {
  readonly volume: string;
  readonly source: BinlogSource;
  readonly discarded: string;
  /** Why they are discarded, for the README. */
  readonly why: string;
  readonly now: Date;
}): Promise<{ pending: string; final: string; keep: string[]; left: string[] }> {
  await removePending(o.volume);
  const files = await Promise.all(
    (await o.source.binaryLogs()).map(async (f) => ({ ...f, previousGtids: await o.source.previousGtids(f.name) })),
  );
  const { keep, left } = binlogsHolding(files, await o.source.gtidExecuted(), o.discarded, await keepBound(o.volume));
  const final = join(o.volume, `${PREFIX}${stamp(o.now)}`);
  const pending = `${final}${PENDING}`;
  await mkdir(pending, { recursive: true });
  await writeFile(join(pending, 'gtids'), `${o.discarded}\n`);
  await writeFile(join(pending, 'binlogs'), keep.map((n) => `${n}\n`).join(''));
  await writeFile(
    join(pending, 'README'),
    [
      `Transactions discarded at ${o.now.toISOString()} when this member was re-provisioned by clone of the primary:`,
      o.discarded,
      '',
      o.why,
      '',
      keep.length > 0
        ? `The binary logs holding them are kept here (${keep.join(', ')}), moved from the data directory once the clone replicated. Read them with: mysqlbinlog --verbose --include-gtids='${o.discarded}' <log>`
        : 'No binary log holding them was found.',
      ...(left.length > 0
        ? [
            `Not kept (beyond the bound of ${Math.round((await keepBound(o.volume)) / 1024 ** 2)} MiB a discard keeps): ${left.join(', ')}.`,
          ]
        : []),
      `At most ${DISCARDS_KEPT} discards are kept on this volume; a later one removes the oldest.`,
      '',
    ].join('\n'),
  );
  return { pending, final, keep, left };
}

/** The clone failed: its record goes. */
export async function abandonDiscard(d: { readonly pending: string }): Promise<void> {
  await rm(d.pending, { recursive: true, force: true });
}

/** The clone succeeded: the record is final (before the clone is put in place). */
export async function confirmDiscard(d: { readonly pending: string; readonly final: string }): Promise<void> {
  await rename(d.pending, d.final);
}

/** Leftovers of attempts that did not finish. */
export async function removePending(volume: string): Promise<void> {
  for (const entry of await readdir(volume).catch(() => []))
    if (entry.startsWith(PREFIX) && entry.endsWith(PENDING))
      await rm(join(volume, entry), { recursive: true, force: true });
}

/**
 * Before the previous data directory is removed: the binary logs each final record names are moved
 * there from it (once: `kept` says what was), then the oldest records beyond DISCARDS_KEPT go. Returns
 * what it did, for the log.
 */
export async function keepDiscardedBinlogs(volume: string, previousDataDir: string): Promise<string[]> {
  const done: string[] = [];
  const records = (await readdir(volume)).filter((e) => e.startsWith(PREFIX) && !e.endsWith(PENDING)).sort();
  for (const record of records) {
    const dir = join(volume, record);
    if (await exists(join(dir, 'kept'))) continue;
    const names = (await readFile(join(dir, 'binlogs'), 'utf8').catch(() => ''))
      .split('\n')
      .filter((n) => n !== '' && !n.includes('/'));
    const moved: string[] = [];
    for (const name of names) {
      if (!(await exists(join(previousDataDir, name)))) continue;
      await rename(join(previousDataDir, name), join(dir, name));
      moved.push(name);
    }
    await writeFile(join(dir, 'kept'), moved.map((n) => `${n}\n`).join(''));
    done.push(`kept ${moved.length > 0 ? moved.join(', ') : 'no binary log'} in ${dir}`);
  }
  for (const old of records.slice(0, Math.max(records.length - DISCARDS_KEPT, 0))) {
    await rm(join(volume, old), { recursive: true, force: true });
    done.push(`removed ${join(volume, old)} (only the last ${DISCARDS_KEPT} discards are kept)`);
  }
  return done;
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );
