import type { KubernetesObject as LiveObject, V1Pod } from '@kubernetes/client-node';
import { InvalidSpecError, formatProblem, render } from '../../constructs/index.js';
import type { KindDefinition, KubernetesObject, Recon8sResource } from '../../constructs/index.js';
import type { Informer } from '../informer/index.js';
import { deepFreeze } from '../informer/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError, isNotFound } from '../kube/index.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { ReconcileResult } from '../reconcile/contract.js';
import { PollAgainError, TerminalError } from '../reconcile/contract.js';
import {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_TOOLING_ANNOTATION,
  TOOLING,
  applySetId,
  groupKind,
} from '../reconcile/applyset.js';
import type { ConditionInput } from '../reconcile/conditions.js';
import { DESIRED_HASH_ANNOTATION, childKey, hashOf, stampChildren } from '../reconcile/desired.js';
import type { DesiredChild, OwnerResource } from '../reconcile/desired.js';
import { RenderMemo } from './render-memo.js';
import { podProblemEvents, podProblems, podRecheckAfterMs, summarizePodProblems } from '../reconcile/pod-problems.js';
import { failureConditions } from '../reconcile/status.js';
import { CREATE_ONLY, ChildApplier } from './apply-children.js';
import type { ApplyDecision } from './apply-children.js';
import { WritesInFlight, identityKey } from './writes-in-flight.js';
import type { EventRecorder } from './events.js';
import { recordManaged } from './events.js';
import type { ResourceType } from './kinds.js';
import { CHILD_TYPES, KIND_CONTROLLERS, childType, kindController, objectPath, parseQueueKey } from './kinds.js';
import { deleteChild, prunable } from './prune.js';
import type {
  InstallFacts,
  KindController,
  Manager,
  Preparation,
  ResourceLookup,
  CertificateLookup,
  CertificateReader,
  ClaimLookup,
  ClaimReader,
  SecretLookup,
  SecretReader,
} from './kind-controller.js';
import type { CustomResource, LiveLookup, StatusWrite } from './status.js';
import { judgedAgainst, nextStatus, pausedConditions, statusWrite, withProblems, withUnavailable } from './status.js';

/** How long to wait before looking again for a Secret the user must create. */
const CREDENTIALS_RECHECK_MS = 30_000;

export interface ReconcilerOptions {
  readonly client: KubeClient;
  readonly owners: ReadonlyMap<string, { readonly kind: KindDefinition; readonly informer: Informer<CustomResource> }>;
  /** Child informers by `apiVersion/kind`. */
  readonly children: ReadonlyMap<string, Informer<LiveObject>>;
  /** The objects of the child types not labelled as recon8s's, metadata only, by `apiVersion/kind` (see Watches.childNames). */
  readonly childNames: ReadonlyMap<string, Informer<LiveObject>>;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly metrics?: ControllerMetrics;
  readonly now?: () => Date;
  /** A kind's pods in a namespace (the kind's pod selector), from the cache; none without it. */
  readonly pods?: (kind: string, namespace: string) => readonly V1Pod[];
  /** @default the default install's */
  readonly install?: InstallFacts;
  /**
   * Run the kinds' managers (MySQL: who is the primary), which need the pods. @default true. Off for
   * `recon8s apply`, which converges the children and reports, and leaves the topology to the controller.
   */
  readonly manage?: boolean;
  /** Queues a resource's key again at once (the controller's work queue); absent: managers cannot ask to be woken. */
  readonly wake?: (key: string) => void;
  /** Secrets from watches (the controller's); absent: kinds read them live. */
  readonly secrets?: SecretReader;
  /** cert-manager Certificates from watches, once they exist (the controller's); absent: read live. */
  readonly certificates?: CertificateReader;
  /** PersistentVolumeClaims resources name, from watches by name (the controller's); absent: read live. */
  readonly claims?: ClaimReader;
}

/** A term of leadership: the managers it started (Reconciler.startTerm). */
export type Term = ReadonlyMap<string, Manager>;

/**
 * Converges one App or MySQLCluster (the work-queue key `Kind/namespace/name`). Level-based: it reads
 * the resource from the cache and makes the cluster match, whatever happened before.
 *
 * Contract (controller-runtime's): it returns when the children match the render and the status says
 * so; it throws to be retried with backoff (API errors); it throws a TerminalError when only a spec
 * change can help (an invalid spec, a child the API server refuses) — the resource then carries a
 * Degraded condition and an Event, and comes back when it changes; it returns `{ requeueAfterMs }`
 * when it must look again later (a Secret the user has yet to create). A kind's manager (MySQL HA)
 * runs whatever else failed, and its poll bounds every delay, errors' backoff included (PollAgainError).
 *
 * It writes only what differs: at steady state a reconcile sends no write request at all.
 * It never recreates anything of a resource that is being deleted: garbage collection removes the
 * children; PersistentVolumeClaims and user Secrets are never deleted by it.
 */
export class Reconciler {
  private readonly applier: ChildApplier;
  /** The last status written per resource uid, and the versions of the resource older than it (see StatusWrite). */
  private readonly statusWritten = new Map<string, StatusWrite>();
  private readonly now: () => Date;
  /** What render() made of each resource, and those children stamped for applying (see RenderMemo). */
  private readonly renders = new RenderMemo<{
    readonly objects: readonly KubernetesObject[];
    desired?: readonly DesiredChild[];
  }>();

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

  /**
   * Per kind, the loop beside the render reconcile (MySQL: who is the primary), of the current term of
   * leadership: a new Map each term (see endTerm).
   */
  private managers = new Map<string, Manager>();

  constructor(private readonly o: ReconcilerOptions) {
    this.applier = new ChildApplier(o.client);
    this.now = o.now ?? (() => new Date());
    this.startTerm();
  }

  /**
   * Fresh managers, with nothing remembered: called each time this process starts leading. What a
   * manager remembered from an earlier term (the primary it chose) may have been replaced by another
   * leader since; only the API server's record is trusted at the start of a term.
   */
  startTerm(): Term {
    void this.endTerm(this.managers);
    this.managers = new Map();
    for (const kc of KIND_CONTROLLERS) {
      const manager = kc.createManager?.();
      if (manager) this.managers.set(kc.definition.kind, manager);
    }
    return this.managers;
  }

  /** The current term of leadership (startTerm's last). */
  get term(): Term {
    return this.managers;
  }

  /**
   * Ends the term `term` (startTerm's): its managers close what they kept open (leadership lost,
   * shutdown). A term that already ended is left alone, and so is the one after it: a leader deposed and
   * elected again at once starts its new term while the old one's reconciles are still winding down.
   */
  async endTerm(term: Term): Promise<void> {
    if (term === this.managers) this.managers = new Map();
    await Promise.all([...term.values()].map((m) => m.close?.()));
  }

  /** The recon8s resources in the cache, for what one kind reads of another. */
  private readonly resources: ResourceLookup = {
    get: (kind, namespace, name) => this.o.owners.get(kind)?.informer.get(namespace, name),
    list: (kind, namespace) => {
      const informer = this.o.owners.get(kind)?.informer;
      return informer?.hasSynced() ? informer.list(namespace) : undefined;
    },
  };

  /** A child's watch event that only echoes our own last apply of it (see ChildApplier.isOwnEcho). */
  isOwnEcho(child: LiveObject): boolean | Promise<boolean> {
    return this.applier.isOwnEcho(child);
  }

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

  /** Drops what is remembered of an object that is gone, child or resource (the manager calls it on informer deletes). */
  forget(uid: string): void {
    const series = this.degradedSeries.get(uid);
    if (series) this.o.metrics?.resourceDegraded.remove(series);
    this.degradedSeries.delete(uid);
    this.applier.forget(uid);
    this.statusWritten.delete(uid);
    this.ownWrites.delete(uid);
    this.parentWritten.delete(uid);
    this.renders.forget(uid);
    for (const m of this.managers.values()) m.forget(uid);
  }

  /** render(), remembered (see RenderMemo). */
  private render(cr: CustomResource): readonly KubernetesObject[] {
    const install = { operator: this.o.install?.operatorPods };
    return this.renders.get(cr, () => ({ objects: deepFreeze(render(cr as unknown as Recon8sResource, install)) }))
      .objects;
  }

  /** The rendered children stamped for applying (owner reference, ApplySet label, hash), remembered with the render. */
  private desired(
    cr: CustomResource,
    rendered: readonly KubernetesObject[],
    owner: OwnerResource,
  ): readonly DesiredChild[] {
    const entry = this.renders.get(cr, () => ({ objects: rendered }));
    if (entry.objects !== rendered) return stampChildren(rendered, owner);
    entry.desired ??= deepFreeze(stampChildren(rendered, owner));
    return entry.desired;
  }

  async reconcile(key: string, signal?: AbortSignal): Promise<ReconcileResult | undefined> {
    const { kind: kindName, namespace, name } = parseQueueKey(key);
    const owner = this.o.owners.get(kindName);
    const controller = kindController(kindName);
    if (!owner || !controller) throw new TerminalError(`unknown kind in key ${key}`);
    const cr = owner.informer.get(namespace, name);
    if (!cr || cr.metadata.deletionTimestamp) return undefined;
    const log = this.o.logger.child({ kind: kindName, namespace, name });
    if ((cr.spec as { paused?: boolean } | undefined)?.paused === true) {
      // Nothing of the children is touched, not even read for status: they are the user's to handle now.
      await this.writeStatus(cr, {}, pausedConditions(currentConditions(cr)), true);
      return undefined;
    }

    let rendered: readonly KubernetesObject[];
    try {
      rendered = this.render(cr);
    } catch (e) {
      if (!(e instanceof InvalidSpecError)) throw e;
      const message = e.problems.map(formatProblem).join('; ');
      log.warn('invalid spec', { problems: e.problems.length, message });
      this.o.events.record(cr, 'Warning', 'InvalidSpec', message);
      await this.writeStatus(cr, {}, failureConditions('InvalidSpec', message, currentConditions(cr)), true);
      throw new TerminalError(`invalid spec: ${message}`, { cause: e });
    }
    // What the install does not allow (an App naming a Secret outside its allow-list): refused before
    // anything is applied, like an invalid spec, and looked at again when the spec changes.
    const refused = controller.admit?.(cr, rendered, this.o.install ?? {}) ?? [];
    if (refused.length > 0) {
      const reason = refused[0]?.reason ?? 'NotAllowed';
      const message = refused.map((p) => p.message).join('; ');
      log.warn('refused by the install', { reason, message });
      this.o.events.record(cr, 'Warning', reason, message);
      await this.writeStatus(cr, {}, failureConditions(reason, message, currentConditions(cr)), true);
      throw new TerminalError(`${reason}: ${message}`);
    }

    // The cache can still hold a resource that is gone: after a watch outage, the children's informers may
    // relist (seeing the garbage collector's deletions) before the resource's own informer does. Creating
    // children or a Secret for it then fights the garbage collector, so before a child is created the
    // resource is checked live. Whether a name is free is known from the caches: the labelled ones and the
    // metadata-only ones of everything else (see Watches.childNames), so no read past them.
    const missingAtStart = new Set<string>();
    for (const o of rendered) {
      if (this.nameInUse(o.apiVersion, o.kind, namespace, o.metadata.name)) continue;
      missingAtStart.add(childKey({ ...o, metadata: { ...o.metadata, namespace } }));
    }
    // The ApplySet parent write (a resource's first reconcile) answers that: it carries the uid as a
    // precondition and returns what the API server has.
    const parent = await this.ensureApplySetParent(cr, owner.kind);
    if (parent === 'gone') return undefined;
    if (missingAtStart.size > 0 && parent !== 'live' && !(await this.isLive(cr, owner.kind))) return undefined;

    const reader = this.o.secrets;
    const secrets: SecretLookup | undefined = reader
      ? (ns, secretName) => reader({ uid: cr.metadata.uid ?? '', kind: kindName, name }, ns, secretName)
      : undefined;
    const certificateReader = this.o.certificates;
    const certificates: CertificateLookup | undefined = certificateReader
      ? (ns, certificateName) =>
          certificateReader({ uid: cr.metadata.uid ?? '', kind: kindName, name }, ns, certificateName)
      : undefined;
    const claimReader = this.o.claims;
    const claims: ClaimLookup | undefined = claimReader
      ? (ns, claimName) => claimReader({ uid: cr.metadata.uid ?? '', kind: kindName, name }, ns, claimName)
      : undefined;
    const prepared: Preparation = (await controller.prepare?.(
      this.o.client,
      cr,
      this.o.install ?? {},
      secrets,
      this.resources,
      certificates,
      claims,
    )) ?? { problems: [] };
    for (const e of prepared.events ?? []) this.o.events.record(cr, 'Normal', e.reason, e.message);
    const problems = prepared.problems;

    // What this reconcile applied, as the API server returned it: newer than the cache, whose echo of it
    // queues nothing (see isOwnEcho), so status is judged from it.
    const applied = new Map<string, LiveObject>();
    // The kind's manager, when this reconciler runs managers (it needs the pods).
    const manager = this.o.pods && this.o.manage !== false ? this.managers.get(kindName) : undefined;
    const failure = await this.converge(cr, owner.kind, controller, rendered, log, {
      holdBack: prepared.holdBack,
      ...(manager?.amend
        ? {
            amend: (child: KubernetesObject, live: LiveObject | undefined) => manager.amend?.(cr, child, live) ?? child,
          }
        : {}),
      missingAtStart,
      applied,
    });

    const live: LiveLookup = (apiVersion, kind, childName) =>
      applied.get(`${apiVersion}/${kind}/${childName}`) ??
      this.childInformer(apiVersion, kind).get(namespace, childName);
    const pods = this.o.pods?.(kindName, namespace) ?? [];
    const observed = controller.observe(cr, rendered, live, prepared, pods);
    const podProblemsNow = podProblems(observed.pods ?? [], this.now());
    // What runs is managed whatever else failed: a problem with an optional feature (a backup volume,
    // an object store's Secret) or with one child must never stop failover. The manager itself needs
    // only the credentials and the pods, and checks both.
    const management = manager
      ? await manager.manage({
          client: this.o.client,
          cr,
          live,
          pods,
          prepared,
          log,
          metrics: this.o.metrics,
          resources: this.resources,
          signal,
          ...(secrets ? { secrets } : {}),
          ...(this.o.wake ? { wake: () => this.o.wake?.(key) } : {}),
        })
      : undefined;
    // Leadership lost while managing: what this reconcile saw is no longer its to report (the status
    // would write back a primary the new leader may have replaced).
    signal?.throwIfAborted();
    recordManaged(this.o.events, cr, management?.events ?? []);
    const managed = management?.problems ?? [];
    const conditions = failure
      ? failureConditions(failure.reason, failure.message, observed.conditions)
      : // What the pods said failed in their own words (a restore) first: it explains why a container
        // exits. Then pods that cannot run: they are what the rest (a member that does not answer, a
        // rollout that does not progress) follows from. Then what the running database reports (a member
        // with errant transactions, a failover waiting), then what the user must create for an optional
        // feature (a backup volume).
        withProblems(withUnavailable(observed.conditions, management?.unavailable), [
          ...(management?.reports ?? []),
          ...summarizePodProblems(podProblemsNow),
          ...managed,
          ...problems,
        ]);
    for (const p of problems) this.o.events.record(cr, 'Warning', p.reason, p.message);
    // One Event per pod and problem, however many reconciles see it (the key names the Event).
    for (const e of podProblemEvents(podProblemsNow))
      this.o.events.record(cr, 'Warning', e.reason, e.message, { once: `${cr.metadata.uid ?? ''}/${e.key}` });
    await this.writeStatus(cr, { ...observed.fields, ...management?.fields }, conditions, false);
    // The manager's poll (failure detection) goes on whatever failed: it bounds every other delay. A
    // problem that ends by itself (a crash loop that stopped) is looked at again when it would end.
    const pollMs = minDefined(management?.requeueAfterMs, podRecheckAfterMs(podProblemsNow));
    if (failure) {
      // Forbidden may end without a spec change (someone fixes the RBAC): retry with backoff, never hot.
      const error = failure.retry ? new Error(failure.message) : new TerminalError(failure.message);
      throw pollMs === undefined ? error : new PollAgainError(pollMs, error);
    }
    // What the user must create or fix outside the spec is looked at again later, never hot.
    if (problems.length > 0) return { requeueAfterMs: Math.min(CREDENTIALS_RECHECK_MS, pollMs ?? Infinity) };
    if (pollMs !== undefined) return { requeueAfterMs: pollMs };
    return undefined;
  }

  /** Applies what differs and prunes what is no longer rendered; returns a failure to report. */
  private async converge(
    cr: CustomResource,
    definition: KindDefinition,
    kind: KindController,
    rendered: readonly KubernetesObject[],
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
  ): Promise<{ reason: string; message: string; retry?: boolean } | undefined> {
    const uid = cr.metadata.uid ?? '';
    const owner = {
      apiVersion: cr.apiVersion,
      kind: cr.kind,
      group: cr.apiVersion.split('/')[0] ?? '',
      namespace: cr.metadata.namespace ?? '',
      name: cr.metadata.name,
      uid,
    };
    const desired = this.desired(cr, rendered, owner);
    // One Event per reconcile, not one per child: Events are writes too.
    const applied: string[] = [];
    const reportApplied = (): void => {
      if (applied.length) this.o.events.record(cr, 'Normal', 'Applied', applied.join('; '));
    };
    // Objects of a child's name that recon8s does not control for this resource: never written.
    const conflicts: string[] = [];
    // A failure that must not hold the other children back: reported once they are converged.
    let deferred: { reason: string; message: string; retry?: boolean } | undefined;
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
      const decision = this.applier.decide(child, live);
      if (!decision.send) continue;
      // A child can vanish between the look at the cache when the reconcile began and now (the garbage
      // collector deleting a resource's children while its Secret and volumes were checked): creating
      // it then would fight the collector. One that was there at the start is created again only if the
      // resource is still live (asked once); one missing at the start was checked then.
      if (decision.why === 'missing' && !o.missingAtStart.has(childKey(child.object))) {
        creatable ??= this.isLive(cr, definition);
        if (!(await creatable)) return undefined;
      }
      // Sent now, judged below in order: the children's applies go out together, not one round trip each.
      const outcome = this.applier.apply(child, live?.metadata?.uid ?? CREATE_ONLY);
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
        await this.applier.apply(
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
        if (orphan.metadata?.uid) this.forget(orphan.metadata.uid);
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
  private nameInUse(apiVersion: string, kind: string, namespace: string, name: string): boolean {
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

  /**
   * Makes the resource the ApplySet parent (KEP-3659) of its children; written once, then unchanged.
   * The write carries the resource's uid as a precondition, so it never creates a resource that is gone,
   * and it tells whether this very resource is live: 'live' (written, not being deleted), 'gone'
   * (deleted, replaced or being deleted), or 'unchanged' (nothing to write: nothing learnt).
   */
  private async ensureApplySetParent(cr: CustomResource, kind: KindDefinition): Promise<'live' | 'gone' | 'unchanged'> {
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
  private async writeStatus(
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
    const status = nextStatus(judged, base, conditions, this.now());
    if (!status) return;
    const owner = this.o.owners.get(cr.kind);
    const result = await this.writesInFlight.track(
      identityKey(cr),
      this.o.client
        .applyStatus({
          apiVersion: cr.apiVersion,
          kind: cr.kind,
          plural: owner?.kind.plural ?? '',
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

  /** Whether the API server still has this very resource (same uid), not being deleted. */
  private async isLive(cr: CustomResource, kind: KindDefinition): Promise<boolean> {
    try {
      const live = await this.o.client.requestJson<CustomResource>({
        path: `/apis/${kind.group}/${kind.version}/namespaces/${cr.metadata.namespace ?? ''}/${kind.plural}/${cr.metadata.name}`,
      });
      return live.metadata.uid === cr.metadata.uid && !live.metadata.deletionTimestamp;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  }

  private childNameInformer(apiVersion: string, kind: string): Informer<LiveObject> {
    const informer = this.o.childNames.get(`${apiVersion}/${kind}`);
    if (!informer) throw new Error(`no metadata informer for ${apiVersion} ${kind}`);
    return informer;
  }

  private childInformer(apiVersion: string, kind: string): Informer<LiveObject> {
    const informer = this.o.children.get(`${apiVersion}/${kind}`);
    if (!informer) throw new Error(`no informer for ${apiVersion} ${kind}`);
    return informer;
  }
}

function currentConditions(cr: CustomResource): ConditionInput[] {
  return (cr.status?.conditions ?? []).map((c) => ({
    type: c.type as ConditionInput['type'],
    status: c.status,
    reason: c.reason,
    message: c.message,
  }));
}

function withoutConditions(status: CustomResource['status']): Record<string, unknown> {
  const { conditions: _c, observedGeneration: _g, ...rest } = status ?? {};
  return rest;
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

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
