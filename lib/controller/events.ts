import { createHash } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { HttpMethod } from '../kube/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError } from '../kube/index.js';
import type { Logger } from '../observability/logger.js';
import type { EventType, ManagedEvent } from './kind-controller.js';

/** The object an Event is about. */
export interface EventSubject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
  };
}

/** Emits Kubernetes Events. Messages must never hold a secret value: callers pass names, never data. */
export interface EventRecorder {
  /**
   * `once`: a key for something that happened once (e.g. a container termination): the Event's name
   * is derived from it, so that it is recorded once even across controller restarts and leaders.
   */
  record(
    subject: EventSubject,
    type: EventType,
    reason: string,
    message: string,
    options?: { readonly once?: string },
  ): void;
}

const REPEAT_WINDOW_MS = 10 * 60_000;
const MAX_REMEMBERED = 10_000;

/**
 * Core v1 Events from `recon8s`, as `kubectl describe` shows them. The same event (subject, reason,
 * message) within ten minutes is emitted once: a level-based reconcile re-decides the same thing many
 * times, and an event per decision would flood etcd. Emitting never blocks a reconcile nor fails it.
 */
export function createEventRecorder(
  client: Pick<KubeClient, 'requestJson'>,
  logger: Logger,
  now: () => number = Date.now,
): EventRecorder {
  const create = (namespace: string, body: CoreV1Event): Promise<unknown> =>
    client.requestJson({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Event', ...body }),
      headers: { 'Content-Type': 'application/json' },
    });
  const recent = new Map<string, number>();
  return {
    record(subject, type, reason, message, options) {
      const namespace = subject.metadata.namespace;
      if (!namespace) return;
      // Something that happens once is one Event whatever its message says by the time it is seen again.
      const key = `${subject.metadata.uid ?? subject.metadata.name}/${options?.once ? `once/${options.once}` : `${reason}/${message}`}`;
      const t = now();
      forgetExpired(recent, t);
      if (recent.has(key)) return;
      recent.set(key, t);
      // A burst of distinct events cannot grow the memory without bound: the oldest go first.
      if (recent.size > MAX_REMEMBERED) recent.delete(recent.keys().next().value as string);
      const time = new Date(t);
      create(namespace, {
        metadata: {
          name: options?.once
            ? `${subject.metadata.name}.${createHash('sha256').update(options.once).digest('hex').slice(0, 16)}`
            : `${subject.metadata.name}.${(BigInt(t) * 1_000_000n).toString(16)}${Math.floor(Math.random() * 4096).toString(16)}`,
          namespace,
        },
        involvedObject: {
          apiVersion: subject.apiVersion,
          kind: subject.kind,
          name: subject.metadata.name,
          namespace,
          uid: subject.metadata.uid,
          resourceVersion: subject.metadata.resourceVersion,
        },
        type,
        reason,
        message,
        source: { component: 'recon8s' },
        reportingComponent: 'recon8s',
        reportingInstance: 'recon8s',
        firstTimestamp: time,
        lastTimestamp: time,
        count: 1,
      }).catch((e: unknown) => {
        // Recorded before (by an earlier run or another replica).
        if (options?.once && apiError(e).code === 409) return;
        logger.warn('could not record an event', { reason, error: e instanceof Error ? e.message : String(e) });
      });
    },
  };
}

/**
 * A manager's Events about `subject` (lib/controller/kind-controller.ts ManagedEvent): one with a
 * `once` key is recorded once per resource and key.
 */
export function recordManaged(recorder: EventRecorder, subject: EventSubject, events: readonly ManagedEvent[]): void {
  for (const e of events)
    recorder.record(
      subject,
      e.type,
      e.reason,
      e.message,
      e.once === undefined ? undefined : { once: `${subject.metadata.uid ?? subject.metadata.name}/${e.once}` },
    );
}

/** Entries are in insertion order, so the expired ones are at the front: amortised O(1) per event. */
function forgetExpired(recent: Map<string, number>, t: number): void {
  for (const [k, v] of recent) {
    if (t - v < REPEAT_WINDOW_MS) return;
    recent.delete(k);
  }
}
