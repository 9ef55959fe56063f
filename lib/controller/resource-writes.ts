// What the reconcile writes to a resource itself, and remembers of those writes: its ApplySet parent
// metadata (written once), its status (written only when it differs, judged against the last write
// while the cache lacks it), its recon8s_resource_degraded series, and the versions its own writes got
// back (their watch events queue nothing). Part of the reconcile (reconciler.ts), apart so that each
// file holds one concept.
import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import type { KindDefinition } from '../../constructs/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError, isNotFound } from '../kube/index.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_TOOLING_ANNOTATION,
  TOOLING,
  applySetId,
  groupKind,
} from '../reconcile/applyset.js';
import type { ConditionInput } from '../reconcile/conditions.js';
import type { CustomResource } from './kind-controller.js';
import type { ResourceType } from './kinds.js';
import { CHILD_TYPES } from './kinds.js';
import type { StatusWrite } from './status.js';
import { judgedAgainst, nextStatus, statusWrite } from './status.js';
import { WritesInFlight, identityKey } from './writes-in-flight.js';

export interface ResourceWritesOptions {
  readonly client: KubeClient;
  readonly metrics?: ControllerMetrics | undefined;
  /** The plural of a kind's resource, for its /status path. */
  readonly plural: (kind: string) => string;
  readonly now: () => Date;
}

export class ResourceWrites {
  /** The last status written per resource uid, and the versions of the resource older than it (see StatusWrite). */
  private readonly statusWritten = new Map<string, StatusWrite>();
  /**
   * The resourceVersions the controller's own writes to a resource (ApplySet metadata, status) got back,
   * per uid (the last few): their watch events tell nothing new and do not queue the resource again.
   */
  private readonly ownWrites = new Map<string, string[]>();
  private readonly writesInFlight = new WritesInFlight();
  /** The resourceVersion of the resource each ApplySet parent write was judged from, per uid. */
  private readonly parentWritten = new Map<string, string | undefined>();
  /** Per resource uid: the labels of its recon8s_resource_degraded series, while it has one. */
  private readonly degradedSeries = new Map<
    string,
    { kind: string; namespace: string; name: string; reason: string }
  >();

  constructor(private readonly o: ResourceWritesOptions) {}

  /**
   * A resource's watch event that only echoes our own write to it (see rememberOwnWrite): the reconcile
   * that wrote it already judged this version.
   */
  isOwnWrite(cr: LiveObject): boolean | Promise<boolean> {
    const meta = cr.metadata ?? {};
    if (meta.uid === undefined || meta.resourceVersion === undefined) return false;
    const { uid, resourceVersion } = meta;
    return this.writesInFlight.whenSettled(
      identityKey(cr),
      () => this.ownWrites.get(uid)?.includes(resourceVersion) ?? false,
    );
  }

  /**
   * Remembers the version a write to `cr` returned, unless that version may hold a change this reconcile
   * did not see: another generation (a spec change: a write that changed nothing returns the latest
   * version, which may be someone else's) or a deletion. What else a version may hide (labels,
   * annotations) render never reads, but for an App's password revision, which only the controller
   * writes, in a patch of its own whose event queues the App; the periodic resync looks again anyway.
   */
  private rememberOwnWrite(cr: CustomResource, result: unknown): void {
    const meta = (result as LiveObject | undefined)?.metadata;
    if (!meta?.uid || !meta.resourceVersion || meta.uid !== cr.metadata.uid) return;
    if (meta.generation !== cr.metadata.generation || meta.deletionTimestamp) return;
    const versions = this.ownWrites.get(meta.uid) ?? [];
    versions.push(meta.resourceVersion);
    if (versions.length > 4) versions.shift();
    this.ownWrites.set(meta.uid, versions);
  }

  /** Drops what is remembered of a resource that is gone. */
  forget(uid: string): void {
    const series = this.degradedSeries.get(uid);
    if (series) this.o.metrics?.resourceDegraded.remove(series);
    this.degradedSeries.delete(uid);
    this.statusWritten.delete(uid);
    this.ownWrites.delete(uid);
    this.parentWritten.delete(uid);
  }

  /**
   * Makes the resource the ApplySet parent (KEP-3659) of its children; written once, then unchanged.
   * The write carries the resource's uid as a precondition, so it never creates a resource that is gone,
   * and it tells whether this very resource is live: 'live' (written, not being deleted), 'gone'
   * (deleted, replaced or being deleted), or 'unchanged' (nothing to write: nothing learnt).
   */
  async ensureApplySetParent(cr: CustomResource, kind: KindDefinition): Promise<'live' | 'gone' | 'unchanged'> {
    const owner = {
      group: kind.group,
      kind: kind.kind,
      namespace: cr.metadata.namespace ?? '',
      name: cr.metadata.name,
    };
    const id = applySetId(owner);
    const groupKinds = (CHILD_TYPES[kind.kind] ?? [])
      .map((t: ResourceType) => groupKind(t.apiVersion, t.kind))
      .sort()
      .join(',');
    const meta = cr.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> };
    if (
      meta.labels?.[APPLYSET_ID_LABEL] === id &&
      meta.annotations?.[APPLYSET_TOOLING_ANNOTATION] === TOOLING &&
      meta.annotations[APPLYSET_GROUP_KINDS_ANNOTATION] === groupKinds
    )
      return 'unchanged';
    // The cache may not have our last write yet.
    if (this.parentWritten.get(cr.metadata.uid ?? '') === cr.metadata.resourceVersion) return 'unchanged';
    let result: CustomResource;
    try {
      const write = this.o.client.apply<CustomResource>({
        apiVersion: cr.apiVersion,
        kind: cr.kind,
        metadata: {
          name: cr.metadata.name,
          namespace: cr.metadata.namespace,
          uid: cr.metadata.uid,
          labels: { [APPLYSET_ID_LABEL]: id },
          annotations: { [APPLYSET_TOOLING_ANNOTATION]: TOOLING, [APPLYSET_GROUP_KINDS_ANNOTATION]: groupKinds },
        },
      });
      result = await this.writesInFlight.track(
        identityKey(cr),
        write.then((r) => {
          this.rememberOwnWrite(cr, r);
          return r;
        }),
      );
    } catch (e) {
      const info = apiError(e);
      if (isNotFound(e) || (info.code === 409 && /uid mismatch|Precondition failed: UID/i.test(info.message)))
        return 'gone';
      throw e;
    }
    this.parentWritten.set(cr.metadata.uid ?? '', cr.metadata.resourceVersion);
    return result.metadata.uid === cr.metadata.uid && !result.metadata.deletionTimestamp ? 'live' : 'gone';
  }

  /**
   * recon8s_resource_degraded: 1 for the reason a resource's Degraded condition says, while it is True
   * (what the shipped alert Recon8sDegraded reads); the series of a reason no longer said goes.
   */
  private reportDegraded(cr: CustomResource, conditions: readonly ConditionInput[]): void {
    const gauge = this.o.metrics?.resourceDegraded;
    if (!gauge) return;
    const uid = cr.metadata.uid ?? '';
    const degraded = conditions.find((c) => c.type === 'Degraded');
    const reason = degraded?.status === 'True' ? degraded.reason : undefined;
    const labels = { kind: cr.kind, namespace: cr.metadata.namespace ?? '', name: cr.metadata.name, reason };
    const before = this.degradedSeries.get(uid);
    if (before && before.reason !== reason) gauge.remove(before);
    if (reason === undefined) this.degradedSeries.delete(uid);
    else {
      gauge.set({ ...labels, reason }, 1);
      this.degradedSeries.set(uid, { ...labels, reason });
    }
  }

  /** Writes the status through /status, only when it differs from what the resource already says. */
  async writeStatus(
    cr: CustomResource,
    fields: Record<string, unknown>,
    conditions: readonly ConditionInput[],
    keepFields: boolean,
  ): Promise<void> {
    this.reportDegraded(cr, conditions);
    // The cache may not have our last status write yet: then judged against what that write said, so
    // that the same status is not written again (see judgedAgainst).
    const uid = cr.metadata.uid ?? '';
    const last = this.statusWritten.get(uid);
    const judged = judgedAgainst(cr, last);
    const base = keepFields ? { ...withoutConditions(judged.status), ...fields } : fields;
    const status = nextStatus(judged, base, conditions, this.o.now());
    if (!status) return;
    const result = await this.writesInFlight.track(
      identityKey(cr),
      this.o.client
        .applyStatus({
          apiVersion: cr.apiVersion,
          kind: cr.kind,
          plural: this.o.plural(cr.kind),
          metadata: { name: cr.metadata.name, namespace: cr.metadata.namespace },
          status,
        })
        .then((r) => {
          this.rememberOwnWrite(cr, r);
          return r;
        }),
    );
    const wrote = (result as LiveObject | undefined)?.metadata?.resourceVersion;
    this.statusWritten.set(uid, statusWrite(last, cr, status, wrote, this.ownWrites.get(uid) ?? []));
  }
}

function withoutConditions(status: CustomResource['status']): Record<string, unknown> {
  const { conditions: _c, observedGeneration: _g, ...rest } = status ?? {};
  return rest;
}
