import type { KubeClient } from '../kube/client.js';
import { HttpMethod } from '../kube/client.js';
import { isNotFound } from '../kube/errors.js';

/** A Lease's spec as the API serves it; times are MicroTime strings (a Date is accepted too). */
export interface LeaseSpec {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly leaseTransitions?: number;
  readonly acquireTime?: string | Date;
  readonly renewTime?: string | Date;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  spec?: LeaseSpec;
}

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
  let last: Lease | undefined;
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const item = `${collection}/${encodeURIComponent(name)}`;

  const remember = (lease: Lease): void => {
    last = lease;
  };
  const write = async (method: HttpMethod, path: string, body: Lease, signal?: AbortSignal): Promise<void> => {
    remember(
      await client.requestJson<Lease>({
        method,
        path,
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' },
        ...(signal ? { signal } : {}),
      }),
    );
  };

  return {
    description: `${namespace}/${name}`,

    async get(signal?: AbortSignal): Promise<LockedRecord | undefined> {
      let lease: Lease;
      try {
        lease = await client.requestJson<Lease>({ path: item, ...(signal ? { signal } : {}) });
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
      remember(lease);
      return { record: fromSpec(lease.spec), resourceVersion: lease.metadata?.resourceVersion ?? '' };
    },

    async create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
      const body: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
        spec: toSpec(record),
      };
      await write(HttpMethod.POST, collection, body, signal);
    },

    async update(record: LeaderElectionRecord, resourceVersion: string, signal?: AbortSignal): Promise<void> {
      const base: Lease = last ?? {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
      };
      const body: Lease = {
        ...base,
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { ...base.metadata, name, namespace, resourceVersion },
        spec: toSpec(record),
      };
      await write(HttpMethod.PUT, item, body, signal);
    },
  };
}

/** Lease times are MicroTime: written with 6 fractional digits (the milliseconds, padded). */
export function toSpec(record: LeaderElectionRecord): LeaseSpec {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    leaseTransitions: record.leaseTransitions,
    ...(record.acquireTime !== undefined ? { acquireTime: microTime(record.acquireTime) } : {}),
    ...(record.renewTime !== undefined ? { renewTime: microTime(record.renewTime) } : {}),
  };
}

const microTime = (ms: number): string => new Date(ms).toISOString().replace(/Z$/, '000Z');

export function fromSpec(spec: LeaseSpec | undefined): LeaderElectionRecord {
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

// The server's strings ("2026-01-01T00:00:00.123456Z"), or a Date (client-node's V1MicroTime): accept both.
function timeOf(v: unknown): number | undefined {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.getTime();
  if (typeof v === 'string' && v !== '') {
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}
