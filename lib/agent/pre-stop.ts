// The timing of a member's stop (the mysql container's preStop hook, which the agent answers: agent.ts),
// and the wait of a stopping primary for the controller's switchover from it.
import type { LocalSqlApi } from './local-sql.js';

/** How long the agent, told to stop, waits for the preStop hook of mysqld's container (sent at the same moment). */
export const PRE_STOP_WAIT_MS = 10_000;
/** How long a stop's fencing is tried (the pod's grace period is 120 s; mysqld needs its share to shut down). */
export const PRE_STOP_FENCING_MS = 60_000;
/**
 * How long a primary's stop waits, once fenced, for its replicas to leave it (the controller switches
 * over from a primary whose pod is stopping while it answers: decide.ts). Without the wait, mysqld would
 * stop the moment it is fenced, before the controller could see it, and a failover would wait instead.
 */
export const PRE_STOP_SWITCHOVER_MS = 30_000;
/** How often a stopping primary looks whether its replicas still receive from it. */
export const PRE_STOP_POLL_MS = 250;
/**
 * Looks in a row that must find no replica receiving before a stopping primary goes on (2 s): its
 * fencing cuts the receivers off for a moment (they reconnect within a second), which is not the
 * controller's switchover. (Under the full suite's load the HA e2e saw the hook end at that moment, and
 * the drain wait for a failover instead: 18.2 s.)
 */
export const PRE_STOP_QUIET_POLLS = 8;
/** How long the hook waits for the agent's own signal, which tells a pod going away from a container restart. */
export const POD_STOPPING_WAIT_MS = 2_000;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Until no replica receives from this member (the controller switched over), at most PRE_STOP_SWITCHOVER_MS. */
export async function waitForSwitchover(
  sql: Pick<LocalSqlApi, 'replicasReceiving'>,
  now: () => number,
  log: (message: string) => void,
): Promise<void> {
  const deadline = now() + PRE_STOP_SWITCHOVER_MS;
  let quiet = 0;
  let said = false;
  for (;;) {
    const receiving = await sql.replicasReceiving().catch(() => 0);
    quiet = receiving > 0 ? 0 : quiet + 1;
    if (quiet >= PRE_STOP_QUIET_POLLS) return;
    if (receiving > 0 && !said) {
      log(
        `stopping: ${receiving} replica(s) still receive from this member; waiting for the controller to switch over`,
      );
      said = true;
    }
    if (now() >= deadline) {
      if (receiving > 0) log(`stopping: ${receiving} replica(s) still receive from this member; stopping all the same`);
      return;
    }
    await sleep(PRE_STOP_POLL_MS);
  }
}
