import { Observable, V1MicroTime } from '@kubernetes/client-node';
import type {
  ConfigurationOptions,
  RequestContext,
  ResponseContext,
  V1Lease,
  V1LeaseSpec,
} from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client.js';
import { isNotFound } from '../kube/errors.js';

/** What a lease says about leadership (client-go's LeaderElectionRecord), times in epoch milliseconds. */
export interface LeaderElectionRecord {
  /** '' when released. */
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime?: number;
  readonly renewTime?: number;
  readonly leaseTransitions: number;
}

export interface LockedRecord {
  readonly record: LeaderElectionRecord;
  /** The lock object's resourceVersion: the optimistic-concurrency token for `update`. */
  readonly resourceVersion: string;
}

/**
 * The object leadership is recorded in. Writes use optimistic concurrency: `update` with a stale
 * resourceVersion and `create` of an existing lock throw a 409 (ApiException).
 */
export interface LeaseLock {
  /** e.g. `recon8s-system/recon8s-leader` (for logs). */
  readonly description: string;
  /** The current record, or undefined if the lock object does not exist. */
  get(signal?: AbortSignal): Promise<LockedRecord | undefined>;
  create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void>;
  update(record: LeaderElectionRecord, resourceVersion: string, signal?: AbortSignal): Promise<void>;
}

/** A coordination.k8s.io/v1 Lease as the lock (client-go's LeaseLock). */
export function kubeLeaseLock(
  client: KubeClient,
  target: { readonly namespace: string; readonly name: string },
): LeaseLock {
  const { namespace, name } = target;
  // The last Lease read or written: an update keeps its metadata (labels, annotations, ...) and replaces the spec.
  let last: V1Lease | undefined;

  const remember = (lease: V1Lease): void => {
    last = lease;
  };

  return {
    description: `${namespace}/${name}`,

    async get(signal?: AbortSignal): Promise<LockedRecord | undefined> {
      let lease: V1Lease;
      try {
        lease = await client.coordination.readNamespacedLease({ name, namespace }, withSignal(signal));
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
      remember(lease);
      return { record: fromSpec(lease.spec), resourceVersion: lease.metadata?.resourceVersion ?? '' };
    },

    async create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
      const body: V1Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
        spec: toSpec(record),
      };
      remember(await client.coordination.createNamespacedLease({ namespace, body }, withSignal(signal)));
    },

    async update(record: LeaderElectionRecord, resourceVersion: string, signal?: AbortSignal): Promise<void> {
      const base: V1Lease = last ?? {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
      };
      const body: V1Lease = {
        ...base,
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { ...base.metadata, name, namespace, resourceVersion },
        spec: toSpec(record),
      };
      remember(await client.coordination.replaceNamespacedLease({ name, namespace, body }, withSignal(signal)));
    },
  };
}

/** Lease times are MicroTime: written with 6 fractional digits (V1MicroTime pads the milliseconds). */
export function toSpec(record: LeaderElectionRecord): V1LeaseSpec {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    leaseTransitions: record.leaseTransitions,
    ...(record.acquireTime !== undefined ? { acquireTime: new V1MicroTime(record.acquireTime) } : {}),
    ...(record.renewTime !== undefined ? { renewTime: new V1MicroTime(record.renewTime) } : {}),
  };
}

export function fromSpec(spec: V1LeaseSpec | undefined): LeaderElectionRecord {
  const acquireTime = timeOf(spec?.acquireTime);
  const renewTime = timeOf(spec?.renewTime);
  return {
    holderIdentity: spec?.holderIdentity ?? '',
    leaseDurationSeconds: spec?.leaseDurationSeconds ?? 0,
    leaseTransitions: spec?.leaseTransitions ?? 0,
    ...(acquireTime !== undefined ? { acquireTime } : {}),
    ...(renewTime !== undefined ? { renewTime } : {}),
  };
}

// client-node types MicroTime fields as V1MicroTime (a Date) but its deserializer leaves them as the
// server's strings ("2026-01-01T00:00:00.123456Z"): accept both.
function timeOf(v: unknown): number | undefined {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.getTime();
  if (typeof v === 'string' && v !== '') {
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

// Per-call options that put an AbortSignal on the request (a middleware, like setHeaderOptions does for headers).
function withSignal(signal: AbortSignal | undefined): ConfigurationOptions | undefined {
  if (signal === undefined) return undefined;
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(signal);
          return new Observable(Promise.resolve(ctx));
        },
        post: (resp: ResponseContext) => new Observable(Promise.resolve(resp)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
