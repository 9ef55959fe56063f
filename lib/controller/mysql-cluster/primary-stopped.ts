// Whether the recorded primary's mysqld is known not to run, from what its pod says and how its port
// answered: the evidence that lets a failover skip failoverAfterSeconds (failover.ts says when that is
// safe). Pure: the cluster manager passes the pod from its cache and what it saw at its last good look.
import type { V1Pod } from '@kubernetes/client-node';
import { MYSQL_CONTAINER } from '../../../constructs/index.js';

/** The primary's pod when a look last found the primary answering. */
export interface AnsweringPod {
  /** The pod's uid. */
  readonly uid: string;
  /** The mysql container's restartCount then. */
  readonly restarts: number;
}

/** The mysql container's restartCount in `pod` (0 when the pod reports none yet). */
export const mysqlRestarts = (pod: V1Pod | undefined): number =>
  pod?.status?.containerStatuses?.find((c) => c.name === MYSQL_CONTAINER)?.restartCount ?? 0;

/**
 * Why the primary's mysqld cannot be running, or undefined when nothing says so (it may be only silent:
 * a partition, a node that stopped answering, a pod shutting down gracefully, which may still commit).
 *
 * - `pod` undefined: its pod was deleted (a pod deleted with no grace period may keep running for a
 *   moment on its node; with semi-synchronous replication nothing it commits then is acknowledged once
 *   the replicas' receivers stop, which a failover does first);
 * - another uid than when it last answered: the pod was replaced;
 * - its mysql container terminated or waiting (crash-looping, being created), or restarted since it last
 *   answered: mysqld exited;
 * - `refused`: its pod refused the connection (nothing listens on MySQL's port: mysqld is not up yet, or
 *   is already shutting down).
 */
export function primaryStopped(
  pod: V1Pod | undefined,
  last: AnsweringPod | undefined,
  refused: boolean,
): string | undefined {
  if (!pod) return 'its pod was deleted';
  if (last && pod.metadata?.uid !== last.uid) return 'its pod was replaced';
  const container = pod.status?.containerStatuses?.find((c) => c.name === MYSQL_CONTAINER);
  const terminated = container?.state?.terminated;
  if (terminated) return `its mysql container exited (${terminated.reason ?? `exit code ${terminated.exitCode}`})`;
  const waiting = container?.state?.waiting;
  if (waiting) return `its mysql container is not running (${waiting.reason ?? 'waiting'})`;
  if (last && mysqlRestarts(pod) > last.restarts) return 'its mysql container restarted';
  if (refused) return 'its pod refused the connection: mysqld is not listening';
  return undefined;
}
