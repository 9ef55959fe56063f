// Re-provisioning a replica by clone (the design: constructs/mysql/scripts/reprovision.sh, whose
// adopt_clone puts a finished clone in place before mysqld starts). The agent's part: see that a
// replica can never catch up (or that a person asked), check that replacing it loses nothing, clone
// the primary beside the running data, report, and stop mysqld so that the pod's containers restart.
//
// The controller asks too, for a former primary whose surplus it proved never acknowledged
// (lib/mysql/rejoin.ts): its request, `discard-unacknowledged:<GTID set>`, bounds what the clone may
// discard, and a clone that would discard more (or was made while the primary changed) is not used.
// Whatever a clone discards, by any request, is recorded beside the data first, in
// `discarded-<time>/` (the set and the binary logs holding it), and those logs are moved there from
// the previous data directory before it is removed, bounded (discarded.ts): mysqlbinlog reads them.
import { readFile, rename, rm, stat, writeFile, open } from 'node:fs/promises';
import { CLONE_USER, MYSQL_PORT, REPROVISION_ANNOTATION } from '../../constructs/mysql-member.js';
import { GtidSet } from '../mysql/gtid-set.js';
import { DISCARD_REQUEST_PREFIX, unsafeStopHolding } from '../mysql/rejoin.js';
import { abandonDiscard, confirmDiscard, keepDiscardedBinlogs, recordDiscard } from './discarded.js';
import type { LocalSqlApi } from './local-sql.js';
import type { UnsafeStop } from './stops.js';

/** The receiver's error when the primary purged binary logs this replica has not received yet (13114 wrapping 1236). */
export function isPurgedLogsError(e: { errno: number; message: string } | undefined): boolean {
  return e?.errno === 13114 && e.message.includes('purged required binary logs');
}

/** The value of the re-provisioning annotation in the downward API's annotations file, if it is a new request. */
export function pendingRequest(annotations: string, done: string): string | undefined {
  const line = annotations.split('\n').find((l) => l.startsWith(`${REPROVISION_ANNOTATION}=`));
  if (!line) return undefined;
  // The kubelet writes key="value" with the value quoted as a Go string.
  let value = line.slice(REPROVISION_ANNOTATION.length + 1);
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
    try {
      value = JSON.parse(value) as string;
    } catch {
      value = value.slice(1, -1);
    }
  }
  return value && value !== done.trim() ? value : undefined;
}

/**
 * The transactions a request may discard, when the controller made it (a former primary whose surplus
 * it proved never acknowledged: lib/mysql/rejoin.ts); undefined for a person's request (any value).
 */
export function discardBound(request: string | undefined): string | undefined {
  return request?.startsWith(DISCARD_REQUEST_PREFIX) ? request.slice(DISCARD_REQUEST_PREFIX.length) : undefined;
}

/** What may_reprovision looks at. */
export interface ReprovisionFacts {
  readonly memberSuperReadOnly: boolean;
  /** undefined when the primary did not answer (its error then). */
  readonly donor: { readonly writable: boolean; readonly executed: string } | { readonly error: string };
  /** Every transaction of this member is in the donor's gtid_executed. */
  readonly subsetOfDonor: boolean;
  /** What a clone discards: this member's transactions the donor lacks ('' for none, or when the donor did not answer). */
  readonly discards: string;
  /** With a bound (discardBound): whether `discards` is within it. */
  readonly withinBound?: boolean;
  /** With a bound: the first unsafe stop (stops.ts) after which this member held some of `discards`, and which. */
  readonly unsafeStop?: { readonly stop: UnsafeStop; readonly held: string };
  readonly cloneInProgress: boolean;
}

/**
 * Why this member may not be replaced by a clone now, or undefined when it may. `force`: a person asked,
 * errant transactions are theirs to discard; `bound`: the controller asked, and only those may be.
 */
export function reprovisionRefusal(
  f: ReprovisionFacts,
  primaryHost: string,
  force: boolean,
  bound?: string,
): string | undefined {
  if (!f.memberSuperReadOnly) return 'not re-provisioning: this member is writable';
  if ('error' in f.donor)
    return `not re-provisioning yet: the primary ${primaryHost} does not answer: ${f.donor.error}`;
  if (!f.donor.writable) return `not re-provisioning: ${primaryHost} is read-only, not a primary`;
  if (!f.subsetOfDonor && !force)
    return 'not re-provisioning: this member has transactions the primary does not have; a clone would discard them';
  if (bound !== undefined && !f.subsetOfDonor && !f.withinBound)
    return `not re-provisioning: a clone would discard ${f.discards}, beyond the transactions the controller found never acknowledged (${bound}); a new value of the ${REPROVISION_ANNOTATION} annotation, from a person, discards them all`;
  if (bound !== undefined && f.unsafeStop)
    return `not re-provisioning: this member held ${f.unsafeStop.held} when a stop of its mysqld was found unsafe at ${f.unsafeStop.stop.found} (${f.unsafeStop.stop.why}), so they may have been acknowledged to a client; a new value of the ${REPROVISION_ANNOTATION} annotation, from a person, discards them`;
  if (f.cloneInProgress) return 'not re-provisioning yet: a clone is under way';
  return undefined;
}

/** The first line of an error, without any quoted statement text (a syntax error quotes the statement, which holds a password). */
export function errorSummary(message: string): string {
  const first = message.split('\n')[0] ?? '';
  const cut = first.indexOf(" near '");
  return (cut >= 0 ? first.slice(0, cut) : first).replace(/\.$/, '');
}

export interface DataPaths {
  /** The data volume (the data directory, its clone and what a re-provisioning keeps are in it). */
  readonly volume: string;
  readonly datadir: string;
  readonly clone: string;
  readonly cloned: string;
  readonly previous: string;
  readonly requestDone: string;
  readonly podAnnotations: string;
}

export function dataPaths(volume: string, dataDirName: string, podAnnotations: string): DataPaths {
  const datadir = `${volume}/${dataDirName}`;
  return {
    volume,
    datadir,
    clone: `${datadir}.clone`,
    cloned: `${datadir}.cloned`,
    previous: `${datadir}.previous`,
    requestDone: `${volume}/reprovision-request.done`,
    podAnnotations,
  };
}

const readOr = (path: string, fallback: string): Promise<string> => readFile(path, 'utf8').catch(() => fallback);
const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** Flushes a directory's entries (the rename of a clone into place) to the disk. */
async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface DonorAnswer {
  readonly writable: boolean;
  readonly executed: string;
  /** Its server_uuid: the donor answering after the clone must be the one the checks were made on. */
  readonly serverUuid?: string;
}

export interface ReprovisionContext {
  readonly sql: LocalSqlApi;
  readonly paths: DataPaths;
  readonly primaryHost: string;
  /** Read when it is used (the mounted Secret: a rotation changes it). */
  /** The clone account's (CLONE_USER), read when it is used (the mounted Secret: a rotation changes it). */
  readonly clonePassword: () => string;
  readonly memberName: string;
  /** Asks the primary (as the replication account, its certificate verified) for read_only and gtid_executed. */
  readonly askDonor: () => Promise<DonorAnswer>;
  readonly report: (reason: 'reprovisioned' | 'failed', message: string) => Promise<void>;
  readonly log: (message: string) => void;
  /** The stops of this member's mysqld that could have acknowledged a commit alone (stops.ts). */
  readonly unsafeStops: () => Promise<readonly UnsafeStop[]>;
  /** Wall-clock time (the name of a discard's record). Default: new Date(). */
  readonly now?: () => Date;
}

/** What the agent does next after a look at a read-only member. */
export type ReprovisionOutcome = 'nothing' | 'restarting' | 'failed';

export class Reprovisioner {
  /** The last refusal logged: said once per reason (the agent looks every 10 s). */
  private refusal = '';

  constructor(private readonly c: ReprovisionContext) {}

  /** The request of the pod's annotation not handled yet, if any. */
  async request(): Promise<string | undefined> {
    const annotations = await readOr(this.c.paths.podAnnotations, '');
    return pendingRequest(annotations, await readOr(this.c.paths.requestDone, ''));
  }

  /** One look at a read-only member: re-provisions it when asked or when it can never catch up. */
  async look(): Promise<ReprovisionOutcome> {
    const request = await this.request();
    if (request !== undefined) {
      const bound = discardBound(request);
      const why =
        bound === undefined
          ? `the pod's ${REPROVISION_ANNOTATION} annotation asks for it (${request})`
          : `the controller asks for it (the pod's ${REPROVISION_ANNOTATION} annotation): it was the primary, and what it holds beyond the primary (${bound}) was never acknowledged to a client`;
      return this.byClone(why, true, request, bound);
    }
    const error = await this.c.sql.stoppedReceiverError();
    if (error && isPurgedLogsError(error))
      return this.byClone(`the primary no longer has the binary logs this replica needs (${error.message})`, false);
    return 'nothing';
  }

  private async facts(bound: string | undefined): Promise<ReprovisionFacts> {
    const flags = await this.c.sql.flags();
    let donor: ReprovisionFacts['donor'];
    try {
      donor = await this.c.askDonor();
    } catch (e) {
      donor = { error: errorSummary(e instanceof Error ? e.message : String(e)) };
    }
    const executed = 'executed' in donor ? await this.c.sql.gtidExecuted() : '';
    const subsetOfDonor = 'executed' in donor ? await this.c.sql.gtidSubset(executed, donor.executed) : false;
    const discards =
      'executed' in donor && !subsetOfDonor ? await this.c.sql.gtidSubtract(executed, donor.executed) : '';
    return {
      memberSuperReadOnly: flags.superReadOnly,
      donor,
      subsetOfDonor,
      discards,
      ...(bound !== undefined && discards !== '' ? { withinBound: await this.c.sql.gtidSubset(discards, bound) } : {}),
      ...(bound !== undefined && discards !== '' ? await this.unsafeStopHolding(discards) : {}),
      cloneInProgress: await this.c.sql.cloneInProgress(),
    };
  }

  /** The first unsafe stop after which this member held some of `discards`. */
  private async unsafeStopHolding(discards: string): Promise<Pick<ReprovisionFacts, 'unsafeStop'>> {
    const found = unsafeStopHolding(GtidSet.parse(discards), await this.c.unsafeStops());
    return found ? { unsafeStop: { stop: found.stop, held: found.held.toString() } } : {};
  }

  private async byClone(why: string, force: boolean, request?: string, bound?: string): Promise<ReprovisionOutcome> {
    const facts = await this.facts(bound);
    const refusal = reprovisionRefusal(facts, this.c.primaryHost, force, bound);
    if (refusal) {
      if (refusal !== this.refusal) this.c.log(refusal);
      this.refusal = refusal;
      return 'nothing';
    }
    const { paths, sql, primaryHost } = this.c;
    this.c.log(`re-provisioning this member by clone from ${primaryHost}: ${why}`);
    await rm(paths.clone, { recursive: true, force: true });
    // What the clone discards is recorded first, with the binary logs that hold it (kept once it replicates).
    const discard =
      facts.discards === ''
        ? undefined
        : await recordDiscard({
            volume: paths.volume,
            source: sql,
            discarded: facts.discards,
            why: `Why: ${why}.`,
            now: (this.c.now ?? ((): Date => new Date()))(),
          });
    try {
      await sql.exec('SET GLOBAL clone_valid_donor_list = ?', [`${primaryHost}:${MYSQL_PORT}`]);
      await sql.exec(
        `CLONE INSTANCE FROM ?@?:${MYSQL_PORT} IDENTIFIED BY ? DATA DIRECTORY = ? REQUIRE SSL`,
        [CLONE_USER, primaryHost, this.c.clonePassword(), paths.clone],
        // A clone copies the whole data set: no statement deadline of the usual few seconds.
        24 * 3600_000,
      );
    } catch (e) {
      await rm(paths.clone, { recursive: true, force: true });
      if (discard) await abandonDiscard(discard);
      const out = errorSummary(e instanceof Error ? e.message : String(e));
      this.c.log(`re-provisioning by clone failed: ${out}`);
      await this.c.report(
        'failed',
        `${this.c.memberName} could not be re-provisioned by clone from ${primaryHost}: ${out}; its data is unchanged, and it tries again when this container restarts`,
      );
      return 'failed';
    }
    // The primary is reached through its Service: a failover between the checks and the clone would have
    // made another member the donor, which may lack more than was checked. Then the clone is not used.
    const checked = 'serverUuid' in facts.donor ? facts.donor.serverUuid : undefined;
    const after = await this.c.askDonor().catch(() => undefined);
    if (after?.serverUuid !== checked) {
      await rm(paths.clone, { recursive: true, force: true });
      if (discard) await abandonDiscard(discard);
      this.c.log(
        `not using the clone: the primary answering now (${after?.serverUuid ?? 'none'}) is not the one it was checked against (${checked ?? 'unknown'}); trying again`,
      );
      return 'nothing';
    }
    if (discard) await confirmDiscard(discard);
    await rename(paths.clone, paths.cloned);
    await syncDirectory(paths.cloned.slice(0, paths.cloned.lastIndexOf('/')) || '/');
    if (request !== undefined) await writeFile(paths.requestDone, request);
    const discarded = discard
      ? ` It discarded ${facts.discards}; ${discard.keep.length > 0 ? `the binary logs holding them (${discard.keep.join(', ')}) are kept in ${discard.final}` : `no binary log holding them was found (the record is in ${discard.final})`}${discard.left.length > 0 ? `, not ${discard.left.join(', ')} (beyond the bound a discard keeps)` : ''}.`
      : '';
    await this.c.report(
      'reprovisioned',
      `${this.c.memberName} was re-provisioned by clone from ${primaryHost}: ${why}.${discarded} Its previous data directory is kept until the clone replicates.`,
    );
    this.c.log('cloned; restarting mysqld on the clone');
    await sql.exec('SHUTDOWN').catch(() => undefined);
    return 'restarting';
  }

  /** Once the clone replicates, the data it replaced is no longer needed. */
  async forgetPreviousData(): Promise<void> {
    if (!(await exists(this.c.paths.previous))) return;
    const channel = await this.c.sql.channel();
    if (channel?.receiver !== 'ON' || channel.applier !== 'ON') return;
    for (const line of await keepDiscardedBinlogs(this.c.paths.volume, this.c.paths.previous)) this.c.log(line);
    await rm(this.c.paths.previous, { recursive: true, force: true });
    this.c.log(`the clone replicates; removed the previous data directory ${this.c.paths.previous}`);
  }
}
