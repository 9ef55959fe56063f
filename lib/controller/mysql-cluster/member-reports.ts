// What a MySQL member (or a backup, binary-log or restore run) reports about itself, turned into Events on
// its MySQLCluster. The pods have no API credentials: a container says what it did in its termination message (e.g. the
// agent after re-provisioning a replica by clone), the kubelet keeps it in the pod
// status, and the controller, which watches the database pods, records it.
import type { V1Pod } from '@kubernetes/client-node';
import { MYSQL_MEMBER_REPORTS, MYSQL_STORE_REPORTS } from '../../../constructs/index.js';
import type { EventType } from '../kind-controller.js';
import { describeStoreReport } from './backup-status.js';

/** The database pods and the backup and binary-log job pods of every MySQLCluster. */
export const MYSQL_MEMBER_SELECTOR =
  'app.kubernetes.io/managed-by=recon8s,app.kubernetes.io/name=mysql,app.kubernetes.io/component in (database,backup)';
const CLUSTER_LABEL = 'app.kubernetes.io/instance';

/** Events are cut there by convention (kubectl shows them whole; the API server allows 1 KiB notes). */
const MAX_MESSAGE = 1024;

const TYPES: Readonly<Record<string, EventType>> = {
  [MYSQL_MEMBER_REPORTS.reprovisioned]: 'Normal',
  [MYSQL_MEMBER_REPORTS.failed]: 'Warning',
  [MYSQL_STORE_REPORTS.backupCompleted]: 'Normal',
  [MYSQL_STORE_REPORTS.backupFailed]: 'Warning',
  [MYSQL_STORE_REPORTS.binlogArchiveFailed]: 'Warning',
  [MYSQL_STORE_REPORTS.binlogArchiveGap]: 'Warning',
  [MYSQL_STORE_REPORTS.backupVerified]: 'Normal',
  [MYSQL_STORE_REPORTS.backupVerificationFailed]: 'Warning',
  [MYSQL_STORE_REPORTS.backupVerificationSkipped]: 'Warning',
  [MYSQL_STORE_REPORTS.restored]: 'Normal',
  [MYSQL_STORE_REPORTS.restoreFailed]: 'Warning',
  // BinlogsArchived is status only: an Event every few minutes would bury the others.
};

export interface MemberReport {
  /** The MySQLCluster the pod belongs to. */
  readonly namespace: string;
  readonly cluster: string;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  /** One per container termination: the same report seen again (every pod update, a new leader) is the same key. */
  readonly key: string;
}

/**
 * The reports in a database pod's status: the last termination of each container whose message
 * starts with a reason recon8s knows. Anything else (a crash, a user's image writing its own
 * message) is not a report, and a reason is never taken from the pod unchecked.
 */
export function memberReports(pod: V1Pod): MemberReport[] {
  const namespace = pod.metadata?.namespace;
  const cluster = pod.metadata?.labels?.[CLUSTER_LABEL];
  if (!namespace || !cluster) return [];
  const out: MemberReport[] = [];
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const status of statuses) {
    // A job's container and a finished init container say it in their state; a restarted one in its last state.
    for (const terminated of [status.state?.terminated, status.lastState?.terminated]) {
      const match = /^(\w+): ([^]+)$/.exec(terminated?.message?.trim() ?? '');
      const reason = match?.[1] ?? '';
      const type = TYPES[reason];
      if (!terminated || !match || !type) continue;
      const when = terminated.finishedAt ? new Date(terminated.finishedAt).toISOString() : '';
      out.push({
        namespace,
        cluster,
        type,
        reason,
        message: truncate(`pod ${pod.metadata?.name ?? ''}: ${describeStoreReport(reason, match[2] ?? '')}`),
        key: `${pod.metadata?.uid ?? pod.metadata?.name ?? ''}/${status.name}/${terminated.containerID ?? when}`,
      });
    }
  }
  return out;
}

function truncate(text: string): string {
  return text.length <= MAX_MESSAGE ? text : `${text.slice(0, MAX_MESSAGE - 1)}…`;
}

/** Remembers what was recorded, so that pod updates and resyncs do not repeat an Event. */
export class MemberReportLog {
  private readonly seen = new Set<string>();

  constructor(private readonly max = 10_000) {}

  /** The reports not seen before, remembered from now on. */
  fresh<R extends { readonly key: string }>(reports: readonly R[]): R[] {
    const out = reports.filter((r) => !this.seen.has(r.key));
    for (const r of out) {
      this.seen.add(r.key);
      // Bounded: the oldest keys go first (a pod that old has long been replaced or reported).
      if (this.seen.size > this.max) this.seen.delete(this.seen.values().next().value as string);
    }
    return out;
  }
}
