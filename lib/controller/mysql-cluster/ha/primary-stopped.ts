// Whether the recorded primary's mysqld is known to have exited, from what the kubelet says of its
// container: the evidence that lets a failover skip failoverAfterSeconds (failover.ts says when that is
// safe). Pure: the cluster manager passes the pods from its cache and what it saw at its last good look.
//
// Only the container's own state counts, for the pod that answered: the mysql container runs mysqld
// itself (exec), so a container that exited or restarted is a mysqld process that is gone, and can
// neither commit nor be acknowledged again. What is not evidence, and why:
// - the pod deleted or replaced: a pod deleted with no grace period leaves the API at once while its
//   containers run on for a moment on the node (the HA e2e lost an acknowledged write when this counted);
// - a refused connection: a mysqld shutting down stops listening before it ends its sessions, and a
//   sidecar proxy or a REJECT rule refuses for a mysqld that runs;
// - anything without a last good look to compare with (a controller that just started).
import type { V1Pod } from '@kubernetes/client-node';
import { MYSQL_BOOTSTRAP_CONTAINER, MYSQL_CONTAINER } from '../../../../constructs/index.js';

/** A member's pod when a look last found the primary answering. */
export interface AnsweringPod {
  /** The pod's uid. */
  readonly uid: string;
  /** The mysql container's restartCount then. */
  readonly restarts: number;
}

const mysqlContainer = (pod: V1Pod | undefined) =>
  pod?.status?.containerStatuses?.find((c) => c.name === MYSQL_CONTAINER);

/** The mysql container's restartCount in `pod` (0 when the pod reports none yet). */
export const mysqlRestarts = (pod: V1Pod | undefined): number => mysqlContainer(pod)?.restartCount ?? 0;

/**
 * A member's pod replaced since `last` (another uid: deleted with no grace period and re-created by the
 * StatefulSet), not being deleted, its mysql container running: its mysqld is about to answer.
 */
export function replacementStarting(pod: V1Pod | undefined, last: AnsweringPod | undefined): boolean {
  if (!pod || !last || pod.metadata?.uid === last.uid || pod.metadata?.deletionTimestamp) return false;
  return mysqlContainer(pod)?.state?.running !== undefined;
}

/** What became of a member's mysqld since `last`, by its container; undefined while it runs as it did. */
export function mysqldExited(pod: V1Pod | undefined, last: AnsweringPod | undefined): string | undefined {
  if (!pod || !last || pod.metadata?.uid !== last.uid) return undefined;
  const container = mysqlContainer(pod);
  const terminated = container?.state?.terminated;
  if (terminated) return `its mysql container exited (${terminated.reason ?? `exit code ${terminated.exitCode}`})`;
  if (mysqlRestarts(pod) > last.restarts) return 'its mysql container restarted';
  const waiting = container?.state?.waiting;
  if (waiting && container?.lastState?.terminated) return `its mysql container exited (${waiting.reason ?? 'waiting'})`;
  return undefined;
}

/**
 * Why the primary's mysqld is known to have exited since the last good look, or undefined.
 * `pods` and `last`: every member's pod now and at that look. Undefined too when another member's
 * mysqld restarted or its pod changed since: a replica that restarted may have lost what it had
 * received and acknowledged but not applied (relay_log_recovery), so only the wait, or the primary's
 * own return, bounds what was acknowledged.
 */
export function primaryStopped(
  primary: string,
  pods: ReadonlyMap<string, V1Pod>,
  last: ReadonlyMap<string, AnsweringPod>,
): string | undefined {
  const why = mysqldExited(pods.get(primary), last.get(primary));
  if (why === undefined) return undefined;
  for (const [member, then] of last) {
    if (member === primary) continue;
    const pod = pods.get(member);
    if (pod?.metadata?.uid !== then.uid || mysqlRestarts(pod) !== then.restarts) return undefined;
  }
  return why;
}

/**
 * How long a bootstrap runs at most on a data directory that exists (it writes the member's settings and
 * exits): one running longer builds a data directory from nothing. Generous for a machine short of CPU.
 */
export const BOOTSTRAP_ON_DATA_MS = 30_000;

/** decide.ts's MemberView.buildingDataDirectory, from the pod's bootstrap init container. */
export function buildingDataDirectory(pod: V1Pod, wallNowMs: number): boolean {
  const bootstrap = pod.status?.initContainerStatuses?.find((s) => s.name === MYSQL_BOOTSTRAP_CONTAINER);
  const started = bootstrap?.state?.running?.startedAt;
  return started !== undefined && wallNowMs - new Date(started).getTime() > BOOTSTRAP_ON_DATA_MS;
}
