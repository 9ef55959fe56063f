// What the backup and binary-log jobs and a restore reported (their termination messages; see
// constructs/mysql/scripts/store.sh), turned into status.backup, status.restore and problems.
// Pure: the pods in the cache and the status last written go in, the findings come out. Job pods are
// kept only a few runs (the CronJobs' history limits), so what was last seen is carried forward.
// A report carries values the jobs read from the object store: each is taken only when it is of its
// grammar (lib/mysql/store-values.ts; a name, a time, a GTID set), free text only as printable text, so
// that nothing a bucket holds reaches status, an Event or a terminal as anything else.
import type { V1ContainerStateTerminated, V1Pod } from '@kubernetes/client-node';
import type { MySQLBackupStatus, MySQLRestoreFailureStatus, MySQLRestoreStatus } from '../../../constructs/index.js';
import { MYSQL_STORE_REPORTS } from '../../../constructs/index.js';
import type { Problem } from '../kind-controller.js';
import { printable, valueOf } from '../../mysql/store-values.js';

export type BackupStatus = MySQLBackupStatus;
export type RestoreStatus = MySQLRestoreStatus;
export type RestoreFailure = MySQLRestoreFailureStatus;

export interface BackupFindings {
  readonly backup?: BackupStatus;
  readonly restore?: RestoreStatus;
  /** The restore's last failure, while it stands (status.restoreFailure). */
  readonly restoreFailure?: RestoreFailure;
  readonly problems: readonly Problem[];
  /** The last verification seen: whether it failed (undefined: none seen, or skipped), and when a pass ended. */
  readonly verification?: { readonly failed?: boolean; readonly passedAt?: string };
  /** Whether the last run of each job failed (undefined: no run seen). */
  readonly failing: { readonly backup?: boolean; readonly binlog?: boolean };
  /** Whether the last binary-log run found logs that expired unarchived (undefined: no run seen). */
  readonly binlogGap?: boolean;
}

interface Termination {
  readonly reason: string;
  readonly text: string;
  readonly finishedAt: string;
}

const COMPONENT = 'app.kubernetes.io/component';
const INSTANCE = 'app.kubernetes.io/instance';

/** The termination ("Reason: text") of each container named, newest first. */
function terminations(pods: readonly V1Pod[], containers: readonly string[], init = false): Termination[] {
  const out: Termination[] = [];
  for (const pod of pods) {
    const statuses = (init ? pod.status?.initContainerStatuses : pod.status?.containerStatuses) ?? [];
    for (const status of statuses) {
      if (!containers.includes(status.name)) continue;
      for (const t of [status.state?.terminated, status.lastState?.terminated]) {
        const parsed = parse(t);
        if (parsed) out.push(parsed);
      }
    }
  }
  return out.sort(newestFirst);
}

function newestFirst(a: Termination, b: Termination): number {
  return a.finishedAt < b.finishedAt ? 1 : a.finishedAt > b.finishedAt ? -1 : 0;
}

function parse(t: V1ContainerStateTerminated | undefined): Termination | undefined {
  const match = /^(\w+): ([^]+)$/.exec(t?.message?.trim() ?? '');
  if (!t || !match?.[1] || match[2] === undefined) return undefined;
  const finishedAt = t.finishedAt ? new Date(t.finishedAt).toISOString() : '';
  return { reason: match[1], text: match[2], finishedAt };
}

/** A JSON object from a report, or undefined when it is not one. */
function json(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Free text of a report (a location, a message), printable, or undefined when empty. */
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? printable(v) : undefined);
const int = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;

function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/**
 * The findings for one MySQLCluster from its pods (any component; those of other clusters are ignored)
 * and its current status.
 *
 * A failed restore stays failed until it succeeds or the resource changes (`generation`): the report
 * lives only in a container's last termination, which a crash loop replaces (a retry that ends
 * differently, a pod re-created), and a status that read "no problems found" between two failures
 * would tell every `kubectl wait` and alert that a cluster serving nothing is healthy.
 */
export function backupFindings(
  cluster: string,
  pods: readonly V1Pod[],
  previous: {
    readonly backup?: BackupStatus;
    readonly restore?: RestoreStatus;
    readonly restoreFailure?: RestoreFailure;
  },
  generation = 0,
): BackupFindings {
  const own = pods.filter((p) => p.metadata?.labels?.[INSTANCE] === cluster);
  const jobPods = own.filter((p) => p.metadata?.labels?.[COMPONENT] === 'backup');
  const problems: Problem[] = [];

  // The backup is the main container, or the init container before its verification (spec.backup.verify).
  const backupRuns = [...terminations(jobPods, ['backup']), ...terminations(jobPods, ['backup'], true)].sort(
    newestFirst,
  );
  const completed = backupRuns.find((r) => r.reason === MYSQL_STORE_REPORTS.backupCompleted);
  const manifest = completed ? json(completed.text) : undefined;
  const binlogRuns = terminations(jobPods, ['binlog']);
  // A run that found a gap archived what there was too: its coveredUntil counts.
  const archived = binlogRuns.find(
    (r) => r.reason === MYSQL_STORE_REPORTS.binlogsArchived || r.reason === MYSQL_STORE_REPORTS.binlogArchiveGap,
  );
  const archivedUntil = archived ? valueOf('time', json(archived.text)?.coveredUntil) : undefined;

  let backup: BackupStatus | undefined = previous.backup;
  // A completion counts only with its name and end time as backup.sh writes them.
  const ended = valueOf('time', manifest?.endTime);
  const name = valueOf('backup-name', manifest?.name);
  if (manifest && ended && name && (!backup?.lastSuccessfulTime || ended >= backup.lastSuccessfulTime)) {
    backup = compact({
      ...backup,
      lastSuccessfulTime: ended,
      name,
      method: manifest.method === undefined ? 'logical' : valueOf('backup-method', manifest.method),
      location: str(manifest.location),
      sizeBytes: int(manifest.sizeBytes),
      gtidSet: valueOf('gtid-set', manifest.gtidSet) ?? '',
      durationSeconds: int(manifest.durationSeconds),
      source: valueOf('host', manifest.source),
    });
  }
  if (archivedUntil && (!backup?.binlogsArchivedUntil || archivedUntil > backup.binlogsArchivedUntil))
    backup = { ...backup, binlogsArchivedUntil: archivedUntil };

  const verification = verificationFindings(jobPods, backup?.lastVerified);
  if (verification.lastVerified) backup = { ...backup, lastVerified: verification.lastVerified };
  if (verification.problem) problems.push(verification.problem);

  const lastBackup = backupRuns[0];
  if (lastBackup?.reason === MYSQL_STORE_REPORTS.backupFailed)
    problems.push({ reason: MYSQL_STORE_REPORTS.backupFailed, message: printable(lastBackup.text) });
  const lastBinlog = binlogRuns[0];
  if (lastBinlog?.reason === MYSQL_STORE_REPORTS.binlogArchiveFailed)
    problems.push({ reason: MYSQL_STORE_REPORTS.binlogArchiveFailed, message: printable(lastBinlog.text) });
  if (lastBinlog?.reason === MYSQL_STORE_REPORTS.binlogArchiveGap)
    problems.push({
      reason: MYSQL_STORE_REPORTS.binlogArchiveGap,
      message: describeStoreReport(lastBinlog.reason, lastBinlog.text),
    });

  let restore = previous.restore;
  const databasePods = own.filter((p) => p.metadata?.labels?.[COMPONENT] === 'database');
  const restoreRuns = terminations(databasePods, ['bootstrap'], true).filter(
    (r) => r.reason === MYSQL_STORE_REPORTS.restored || r.reason === MYSQL_STORE_REPORTS.restoreFailed,
  );
  const lastRestore = restoreRuns[0];
  if (lastRestore?.reason === MYSQL_STORE_REPORTS.restored && !restore) {
    const r = json(lastRestore.text);
    const from = valueOf('backup-name', r?.backup);
    if (r && from)
      restore = compact({
        backup: from,
        location: str(r.location),
        pointInTime: valueOf('time', r.pointInTime),
        beforeGtid: valueOf('gtid', r.beforeGtid),
        gtidSet: valueOf('gtid-set', r.gtidSet) || undefined,
        replayedLogs: int(r.replayedLogs),
        completedAt: lastRestore.finishedAt || undefined,
      });
  }
  let restoreFailure: RestoreFailure | undefined;
  if (!restore) {
    if (lastRestore?.reason === MYSQL_STORE_REPORTS.restoreFailed)
      restoreFailure = { message: printable(lastRestore.text), generation };
    else if (previous.restoreFailure && previous.restoreFailure.generation === generation)
      restoreFailure = previous.restoreFailure;
  }
  if (restoreFailure) problems.push({ reason: MYSQL_STORE_REPORTS.restoreFailed, message: restoreFailure.message });

  return {
    backup,
    restore,
    restoreFailure,
    problems,
    verification: verification.lastVerified
      ? {
          failed:
            verification.lastVerified.result === 'Skipped' ? undefined : verification.lastVerified.result === 'Failed',
          passedAt: verification.lastVerified.result === 'Passed' ? verification.lastVerified.time : undefined,
        }
      : undefined,
    failing: {
      backup: lastBackup ? lastBackup.reason === MYSQL_STORE_REPORTS.backupFailed : undefined,
      binlog: lastBinlog ? lastBinlog.reason === MYSQL_STORE_REPORTS.binlogArchiveFailed : undefined,
    },
    binlogGap: lastBinlog ? lastBinlog.reason === MYSQL_STORE_REPORTS.binlogArchiveGap : undefined,
  };
}

type VerificationStatus = NonNullable<BackupStatus['lastVerified']>;

const VERIFICATION_RESULTS: Readonly<Record<string, VerificationStatus['result']>> = {
  [MYSQL_STORE_REPORTS.backupVerified]: 'Passed',
  [MYSQL_STORE_REPORTS.backupVerificationFailed]: 'Failed',
  [MYSQL_STORE_REPORTS.backupVerificationSkipped]: 'Skipped',
};

/**
 * The newest verification the job pods report (or the one last recorded, when it is newer: job pods
 * are kept only a few runs), and a problem while it stands failed: Degraded (BackupVerificationFailed)
 * until a later verification passes.
 */
function verificationFindings(
  jobPods: readonly V1Pod[],
  previous: VerificationStatus | undefined,
): { lastVerified?: VerificationStatus; problem?: Problem } {
  let last = previous;
  const run = terminations(jobPods, ['verify']).find((r) => VERIFICATION_RESULTS[r.reason] !== undefined);
  const o = run ? json(run.text) : undefined;
  if (run && o && run.finishedAt && (!last || run.finishedAt >= last.time)) {
    last = compact({
      backup: valueOf('backup-name', o.backup) ?? '',
      time: run.finishedAt,
      result: VERIFICATION_RESULTS[run.reason] ?? 'Failed',
      durationSeconds: int(o.durationSeconds),
      tables: int(o.tables),
      replayedLogs: int(o.replayedLogs),
      message: str(o.message),
    });
  }
  return {
    lastVerified: last,
    problem:
      last?.result === 'Failed'
        ? {
            reason: MYSQL_STORE_REPORTS.backupVerificationFailed,
            message: last.message ?? `backup ${last.backup} failed its verification`,
          }
        : undefined,
  };
}

/** An Event's words for a report whose text is JSON (the rest are words already). */
export function describeStoreReport(reason: string, text: string): string {
  const o = json(text);
  if (!o) return printable(text);
  if (reason === MYSQL_STORE_REPORTS.backupCompleted)
    return `backup ${valueOf('backup-name', o.name) ?? '?'} of ${valueOf('host', o.source) ?? 'the cluster'} completed: ${int(o.sizeBytes) ?? 0} bytes in ${int(o.durationSeconds) ?? 0} s, GTID set '${valueOf('gtid-set', o.gtidSet) ?? '?'}', at ${str(o.location) ?? ''}`;
  if (reason === MYSQL_STORE_REPORTS.binlogArchiveGap)
    return `binary logs of ${valueOf('host', o.member) ?? 'the primary'} expired before they were archived: transactions '${valueOf('gtid-set', o.gap) ?? '?'}' are in no archived log and not in the newest backup (${valueOf('backup-name', o.newestBackup) ?? 'none'}), so no point-in-time restore reaches past them; take a backup (recon8s backup NAME) to close the gap, and keep the binlog job running within binlog_expire_logs_seconds. The archive holds every other transaction committed before ${valueOf('time', o.coveredUntil) ?? '?'}`;
  if (reason === MYSQL_STORE_REPORTS.backupVerified) {
    const usage = [
      int(o.peakMemoryBytes) !== undefined
        ? `peak memory ${Math.round((int(o.peakMemoryBytes) ?? 0) / 1048576)} MiB`
        : '',
      int(o.cpuMilliseconds) !== undefined ? `CPU ${((int(o.cpuMilliseconds) ?? 0) / 1000).toFixed(1)} s` : '',
    ].filter(Boolean);
    return `backup ${valueOf('backup-name', o.backup) ?? '?'} verified by a restore in ${int(o.durationSeconds) ?? 0} s: ${o.checksums === true ? `${int(o.tables) ?? 0} tables match the row counts and checksums recorded in its snapshot` : `${int(o.tables) ?? 0} tables loaded (it recorded no checksums)`}, ${int(o.replayedLogs) ?? 0} archived binary logs replayed after it, CHECK TABLE found nothing wrong${usage.length ? ` (${usage.join(', ')})` : ''}`;
  }
  if (
    reason === MYSQL_STORE_REPORTS.backupVerificationFailed ||
    reason === MYSQL_STORE_REPORTS.backupVerificationSkipped
  )
    return str(o.message) ?? printable(text);
  if (reason === MYSQL_STORE_REPORTS.restored)
    return `restored from backup ${valueOf('backup-name', o.backup) ?? '?'} (${str(o.location) ?? ''})${valueOf('time', o.pointInTime) ? ` to ${valueOf('time', o.pointInTime) ?? ''}` : ''}${valueOf('gtid', o.beforeGtid) ? ` to just before transaction ${valueOf('gtid', o.beforeGtid) ?? ''}` : ''}, ${int(o.replayedLogs) ?? 0} archived binary logs replayed; GTID set '${valueOf('gtid-set', o.gtidSet) ?? '?'}'`;
  return printable(text);
}
