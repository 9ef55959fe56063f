// Liveness and readiness, as the kubelet asks for them (HTTP), answered from the agent's pooled
// session: no process per probe.
import type { ChannelThreads } from './local-sql.js';
import { isServerError } from './peers.js';

export interface Health {
  readonly ok: boolean;
  readonly message: string;
}

/**
 * Readiness: the member can do its job. Writable (the controller made it the primary), or a replica
 * whose applier runs and whose receiver has not given up: a receiver that is reconnecting (the primary
 * restarts) keeps it ready, so that a primary restart does not take every read endpoint away. A member
 * that neither takes writes nor replicates (not configured yet, or its replication stopped on an error)
 * would serve stale data for ever; nor one kept offline since a fencing (it refuses clients). The
 * Services also select by the role label the controller sets, so readiness alone never makes a member
 * the primary.
 */
export function readiness(readOnly: boolean, channel: ChannelThreads | undefined, offline = false): Health {
  // Kept offline since a fencing (lib/mysql/fencing.ts): it refuses clients, so no Service sends it any.
  if (offline)
    return { ok: false, message: 'offline since it was fenced: it serves no client until the controller admits it' };
  if (!readOnly) return { ok: true, message: 'writable' };
  if (!channel) return { ok: false, message: 'read-only and not replicating (waiting for the controller)' };
  if (channel.applier !== 'ON')
    return { ok: false, message: `replication is not applying (applier: ${channel.applier})` };
  if (channel.receiver === 'OFF')
    return { ok: false, message: `replication is not receiving (receiver: ${channel.receiver})` };
  return { ok: true, message: 'replicating' };
}

/**
 * Liveness: mysqld answers. A refusal is an answer (a root password changed by hand): a credentials
 * problem never gets a healthy server killed; only silence (no socket, no reply in time) does.
 */
export function liveness(error: unknown): Health {
  if (error === undefined) return { ok: true, message: 'mysqld answers' };
  if (isServerError(error)) return { ok: true, message: `mysqld answers, with an error: ${messageOf(error)}` };
  return { ok: false, message: `mysqld does not answer: ${messageOf(error)}` };
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
