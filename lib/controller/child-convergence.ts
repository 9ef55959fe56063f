// A resource's children made to match its render: what differs is applied (the applies sent together,
// judged in order), what is no longer rendered is pruned, and an object of a child's name that recon8s
// does not control is never written (an ownership conflict). Part of the reconcile (reconciler.ts),
// apart so that each file holds one concept; it reads the children from the caches, and past them only
// for a child it controls that the labelled cache lacks.
import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import type { KindDefinition, KubernetesObject } from '../../constructs/index.js';
import type { Informer } from '../informer/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError, isNotFound } from '../kube/index.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import type { Logger } from '../observability/logger.js';
import { applySetId } from '../reconcile/applyset.js';
import { DESIRED_HASH_ANNOTATION, childKey, hashOf } from '../reconcile/desired.js';
import type { DesiredChild, OwnerResource } from '../reconcile/desired.js';
import { CREATE_ONLY } from './apply-children.js';
import type { ApplyDecision, ChildApplier } from './apply-children.js';
import type { EventRecorder } from './events.js';
import { CHILD_TYPES, childType, objectPath } from './kinds.js';
import type { CustomResource, KindController } from './kind-controller.js';
import { deleteChild, prunable } from './prune.js';

/** Why a resource's children could not be converged, as its Degraded condition says; `retry`: with backoff. */
export interface ConvergeFailure {
  readonly reason: string;
  readonly message: string;
  readonly retry?: boolean;
}

export interface ChildConvergenceOptions {
  readonly client: KubeClient;
  readonly applier: ChildApplier;
  readonly events: EventRecorder;
  readonly metrics?: ControllerMetrics | undefined;
  /** Child informers by `apiVersion/kind`. */
  readonly children: ReadonlyMap<string, Informer<LiveObject>>;
  /** The objects of the child types not labelled as recon8s's, metadata only, by `apiVersion/kind`. */
  readonly childNames: ReadonlyMap<string, Informer<LiveObject>>;
  /** Drops what is remembered of a child that was pruned. */
  readonly forget: (uid: string) => void;
}

/** The owner its children are stamped with (owner reference, ApplySet). */
export function ownerOf(cr: CustomResource): OwnerResource & { readonly namespace: string; readonly uid: string } {
  return {
    apiVersion: cr.apiVersion,
    kind: cr.kind,
    group: cr.apiVersion.split('/')[0] ?? '',
    namespace: cr.metadata.namespace ?? '',
    name: cr.metadata.name,
    uid: cr.metadata.uid ?? '',
  };
}

export class ChildConvergence {
  constructor(private readonly o: ChildConvergenceOptions) {}

  /** Applies what differs and prunes what is no longer rendered; returns a failure to report. */
  async converge(
    cr: CustomResource,
    definition: KindDefinition,
    kind: KindController,
    desired: readonly DesiredChild[],
    log: Logger,
    o: {
      readonly holdBack?: (child: KubernetesObject) => boolean;
      /** What the kind's manager decides of a child (Manager.amend). */
      readonly amend?: (child: KubernetesObject, live: LiveObject | undefined) => KubernetesObject;
      /** The children no object's name matched when the reconcile began (resource checked live since), by childKey. */
      readonly missingAtStart: ReadonlySet<string>;
      /** Filled with what was applied, by `apiVersion/kind/name`. */
      readonly applied: Map<string, LiveObject>;
    },
  ): Promise<ConvergeFailure | undefined> {
    const owner = ownerOf(cr);
    const { uid } = owner;
    // One Event per reconcile, not one per child: Events are writes too.
    const applied: string[] = [];
    const reportApplied = (): void => {
      if (applied.length) this.o.events.record(cr, 'Normal', 'Applied', applied.join('; '));
    };
    // Objects of a child's name that recon8s does not control for this resource: never written.
    const conflicts: string[] = [];
    // A failure that must not hold the other children back: reported once they are converged.
    let deferred: ConvergeFailure | undefined;
    // Whether the resource is still live (not deleted, not being deleted), asked once and only if a child is to be created.
    let creatable: Promise<boolean> | undefined;
    const cachedChild = (child: KubernetesObject): LiveObject | undefined =>
      this.childInformer(child.apiVersion, child.kind).get(owner.namespace, child.metadata.name);
    const sent: {
      readonly child: DesiredChild;
      readonly live: LiveObject | undefined;
      readonly decision: Extract<ApplyDecision, { send: true }>;
      readonly outcome: Promise<LiveObject>;
    }[] = [];
    for (const stamped of desired) {
      if (o.holdBack?.(stamped.object)) continue;
      let child = stamped;
      const cached = cachedChild(child.object);
      let live = cached;
      if (!cached) {
        const named = this.childNameInformer(child.object.apiVersion, child.object.kind).get(
          owner.namespace,
          child.object.metadata.name,
        );
        // Controlled by this resource but not in the labelled cache (someone removed the label, or that
        // cache is behind): the one case read past the caches.
        live = named && controllerUid(named) === uid ? await this.readUncached(cr.kind, child.object) : named;
      }
      if (live && controllerUid(live) !== uid) {
        // Who wrote an object that no one controls is in its managedFields, which the caches drop.
        const described = controllerUid(live) ? live : ((await this.readUncached(cr.kind, child.object)) ?? live);
        conflicts.push(notOursMessage(child.object, described));
        continue;
      }
      const amended = o.amend?.(child.object, live);
      if (amended && amended !== child.object) {
        const hash = hashOf(amended);
        child = { object: withDesiredHash(amended, hash), hash };
      }
      const decision = this.o.applier.decide(child, live);
      if (!decision.send) continue;
      // A child can vanish between the look at the cache when the reconcile began and now (the garbage
      // collector deleting a resource's children while its Secret and volumes were checked): creating
      // it then would fight the collector. One that was there at the start is created again only if the
      // resource is still live (asked once); one missing at the start was checked then.
      if (decision.why === 'missing' && !o.missingAtStart.has(childKey(child.object))) {
        creatable ??= isLive(this.o.client, cr, definition);
        if (!(await creatable)) return undefined;
      }
      // Sent now, judged below in order: the children's applies go out together, not one round trip each.
      const outcome = this.o.applier.apply(child, live?.metadata?.uid ?? CREATE_ONLY);
      outcome.catch(() => undefined); // awaited below, unless an earlier child's failure ends the reconcile
      sent.push({ child, live, decision, outcome });
    }
    const failed: { readonly child: DesiredChild; readonly live: LiveObject | undefined; readonly error: unknown }[] =
      [];
    for (const { child, live, decision, outcome } of sent) {
      try {
        const result = await outcome;
        o.applied.set(`${child.object.apiVersion}/${child.object.kind}/${child.object.metadata.name}`, result);
        this.o.metrics?.applyTotal.inc({ kind: child.object.kind, result: decision.why });
        log.info('applied', {
          child: `${child.object.kind}/${child.object.metadata.name}`,
          why: decision.why,
          ...(decision.path ? { path: decision.path } : {}),
        });
        applied.push(
          `${decision.why === 'missing' ? 'created' : decision.why === 'drifted' ? 'reverted a change to' : 'updated'} ${child.object.kind} ${child.object.metadata.name}`,
        );
      } catch (error) {
        failed.push({ child, live, error });
      }
    }
    // Failures are looked at once every success is recorded (the Event names everything written).
    for (const { child, live, error: e } of failed) {
      reportApplied();
      const info = apiError(e);
      this.o.metrics?.applyTotal.inc({ kind: child.object.kind, result: 'error' });
      // An object of this name appeared since the caches were read (someone else's, or ours whose
      // watch event is still on its way): nothing was written. Judged again, from the caches, later.
      if (!live && info.code === 409)
        throw new Error(
          `${child.object.kind} ${child.object.metadata.name} appeared while being created; looking again: ${info.message}`,
          { cause: e },
        );
      // The child this apply was judged against is gone (or replaced): look again, from the cache, later.
      if (info.code === 409 && /uid mismatch|Precondition failed: UID/i.test(info.message))
        throw new Error(
          `${child.object.kind} ${child.object.metadata.name} changed identity while being applied: ${info.message}`,
          { cause: e },
        );
      // The kind may know a way past the refusal (MySQLCluster: grow the claims of a StatefulSet).
      const recovery =
        info.code === 422 && live && kind.recoverRefusedApply
          ? await kind.recoverRefusedApply(this.o.client, child.object, live)
          : undefined;
      if (recovery?.outcome === 'recovering') {
        log.info(recovery.message, { child: `${child.object.kind}/${child.object.metadata.name}` });
        this.o.events.record(cr, 'Normal', recovery.reason, recovery.message);
        // What it changed comes back through the informers, and the next reconcile applies again.
        continue;
      }
      if (recovery?.outcome === 'partial' && live) {
        // Everything but the refused part still converges; the rest is tried again with backoff.
        await this.o.applier.apply(
          { object: withDesiredHash(recovery.apply, hashOf(recovery.apply)), hash: hashOf(recovery.apply) },
          live.metadata?.uid ?? CREATE_ONLY,
        );
        this.o.events.record(cr, 'Warning', recovery.reason, recovery.message);
        deferred ??= { reason: recovery.reason, message: recovery.message, retry: true };
        continue;
      }
      // 400/422: the API server refuses what we render; retrying the same thing cannot help.
      if (info.code === 400 || info.code === 422) {
        const message = `${child.object.kind} ${child.object.metadata.name} was refused: ${info.message}`;
        this.o.events.record(cr, 'Warning', 'ApplyFailed', message);
        return { reason: 'ApplyFailed', message };
      }
      if (info.code === 403) {
        const message = `recon8s may not write ${child.object.kind} ${child.object.metadata.name}: ${info.message}`;
        this.o.events.record(cr, 'Warning', 'ApplyForbidden', message);
        return { reason: 'ApplyForbidden', message, retry: true };
      }
      this.o.events.record(
        cr,
        'Warning',
        'ApplyFailed',
        `${child.object.kind} ${child.object.metadata.name}: ${info.reason || `HTTP ${info.code}`}`,
      );
      throw e;
    }
    reportApplied();
    const desiredKeys = new Set(desired.map((d) => childKey(d.object)));
    const setId = applySetId(owner);
    for (const type of CHILD_TYPES[cr.kind] ?? []) {
      const informer = this.childInformer(type.apiVersion, type.kind);
      for (const orphan of prunable(informer.byOwner(uid), desiredKeys, setId, uid)) {
        await deleteChild(this.o.client, type, orphan);
        if (orphan.metadata?.uid) this.o.forget(orphan.metadata.uid);
        this.o.metrics?.pruneTotal.inc({ kind: type.kind });
        log.info('pruned', { child: `${type.kind}/${orphan.metadata?.name ?? ''}` });
        this.o.events.record(
          cr,
          'Normal',
          'Pruned',
          `deleted ${type.kind} ${orphan.metadata?.name ?? ''}: no longer rendered`,
        );
      }
    }
    if (conflicts.length > 0) {
      const message = `${conflicts.join('; ')}. recon8s never modifies, adopts or deletes an object it does not control: rename or remove it, and this resource converges`;
      this.o.events.record(cr, 'Warning', 'OwnershipConflict', message);
      // Looked at again with backoff (someone may remove the object), never hot.
      return { reason: 'OwnershipConflict', message, retry: true };
    }
    return deferred;
  }

  /** Whether an object of this name exists, recon8s's or not (from the caches). */
  nameInUse(apiVersion: string, kind: string, namespace: string, name: string): boolean {
    return (
      this.childInformer(apiVersion, kind).get(namespace, name) !== undefined ||
      this.childNameInformer(apiVersion, kind).get(namespace, name) !== undefined
    );
  }

  /** A child read past the cache (a GET): undefined when no object of that name exists. */
  private async readUncached(ownerKind: string, child: KubernetesObject): Promise<LiveObject | undefined> {
    const type = childType(ownerKind, child.apiVersion, child.kind);
    if (!type) throw new Error(`${child.kind} is not a child kind of ${ownerKind}`);
    try {
      return await this.o.client.requestJson<LiveObject>({
        path: objectPath(type, child.metadata.namespace ?? '', child.metadata.name),
      });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  private childNameInformer(apiVersion: string, kind: string): Informer<LiveObject> {
    const informer = this.o.childNames.get(`${apiVersion}/${kind}`);
    if (!informer) throw new Error(`no metadata informer for ${apiVersion} ${kind}`);
    return informer;
  }

  childInformer(apiVersion: string, kind: string): Informer<LiveObject> {
    const informer = this.o.children.get(`${apiVersion}/${kind}`);
    if (!informer) throw new Error(`no informer for ${apiVersion} ${kind}`);
    return informer;
  }
}

/** Whether the API server still has this very resource (same uid), not being deleted. */
export async function isLive(client: KubeClient, cr: CustomResource, kind: KindDefinition): Promise<boolean> {
  try {
    const live = await client.requestJson<CustomResource>({
      path: `/apis/${kind.group}/${kind.version}/namespaces/${cr.metadata.namespace ?? ''}/${kind.plural}/${cr.metadata.name}`,
    });
    return live.metadata.uid === cr.metadata.uid && !live.metadata.deletionTimestamp;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

/** The object with this desired-hash annotation. */
function withDesiredHash(o: KubernetesObject, hash: string): KubernetesObject {
  return {
    ...o,
    metadata: { ...o.metadata, annotations: { ...(o.metadata.annotations ?? {}), [DESIRED_HASH_ANNOTATION]: hash } },
  };
}

/** The uid of an object's controller owner, if it has one. */
function controllerUid(o: LiveObject): string | undefined {
  return o.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
}

/** "Service web exists and is controlled by App other" — who holds an object we would have written. */
function notOursMessage(child: KubernetesObject, live: LiveObject): string {
  const controller = live.metadata?.ownerReferences?.find((r) => r.controller);
  if (controller)
    return `${child.kind} ${child.metadata.name} exists and is controlled by ${controller.kind} ${controller.name}`;
  const managers = [
    ...new Set((live.metadata?.managedFields ?? []).map((m) => m.manager).filter((m): m is string => m !== undefined)),
  ];
  return `${child.kind} ${child.metadata.name} exists and is controlled by no one${managers.length ? ` (written by ${managers.join(', ')})` : ''}`;
}
