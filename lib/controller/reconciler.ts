import type { KubernetesObject as LiveObject, V1Pod } from '@kubernetes/client-node';
import { InvalidSpecError, formatProblem, render } from '../../constructs/index.js';
import type { KindDefinition, KubernetesObject, Recon8sResource } from '../../constructs/index.js';
import type { Informer } from '../informer/index.js';
import { deepFreeze } from '../informer/index.js';
import type { KubeClient } from '../kube/index.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { ReconcileResult } from '../reconcile/contract.js';
import { PollAgainError, TerminalError } from '../reconcile/contract.js';
import type { ConditionInput } from '../reconcile/conditions.js';
import { childKey, stampChildren } from '../reconcile/desired.js';
import type { DesiredChild, OwnerResource } from '../reconcile/desired.js';
import { podProblemEvents, podProblems, podRecheckAfterMs, summarizePodProblems } from '../reconcile/pod-problems.js';
import { failureConditions } from '../reconcile/workload-conditions.js';
import { ChildApplier } from './apply-children.js';
import { ChildConvergence, isLive, ownerOf } from './child-convergence.js';
import type { EventRecorder } from './events.js';
import { recordManaged } from './events.js';
import { KIND_CONTROLLERS, kindController, parseQueueKey } from './kinds.js';
import type {
  CertificateLookup,
  CertificateReader,
  ClaimLookup,
  ClaimReader,
  CustomResource,
  InstallFacts,
  LiveLookup,
  Manager,
  Preparation,
  ResourceLookup,
  SecretLookup,
  SecretReader,
} from './kind-controller.js';
import { RenderMemo } from './render-memo.js';
import { ResourceWrites } from './resource-writes.js';
import { pausedConditions, withProblems, withUnavailable } from './status.js';

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
  private readonly now: () => Date;
  /** What render() made of each resource, and those children stamped for applying (see RenderMemo). */
  private readonly renders = new RenderMemo<{
    readonly objects: readonly KubernetesObject[];
    desired?: readonly DesiredChild[];
  }>();
  /** The children made to match the render (child-convergence.ts). */
  private readonly children: ChildConvergence;
  /** What is written to the resource itself, and remembered of those writes (resource-writes.ts). */
  private readonly writes: ResourceWrites;

  /**
   * Per kind, the loop beside the render reconcile (MySQL: who is the primary), of the current term of
   * leadership: a new Map each term (see endTerm).
   */
  private managers = new Map<string, Manager>();

  constructor(private readonly o: ReconcilerOptions) {
    this.applier = new ChildApplier(o.client);
    this.now = o.now ?? (() => new Date());
    this.children = new ChildConvergence({
      client: o.client,
      applier: this.applier,
      events: o.events,
      metrics: o.metrics,
      children: o.children,
      childNames: o.childNames,
      forget: (uid) => this.forget(uid),
    });
    this.writes = new ResourceWrites({
      client: o.client,
      metrics: o.metrics,
      plural: (kind) => o.owners.get(kind)?.kind.plural ?? '',
      now: this.now,
    });
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

  /** A resource's watch event that only echoes our own write to it (see ResourceWrites.isOwnWrite). */
  isOwnWrite(cr: LiveObject): boolean | Promise<boolean> {
    return this.writes.isOwnWrite(cr);
  }

  /** Drops what is remembered of an object that is gone, child or resource (the manager calls it on informer deletes). */
  forget(uid: string): void {
    this.writes.forget(uid);
    this.applier.forget(uid);
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
      await this.writes.writeStatus(cr, {}, pausedConditions(currentConditions(cr)), true);
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
      await this.writes.writeStatus(cr, {}, failureConditions('InvalidSpec', message, currentConditions(cr)), true);
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
      await this.writes.writeStatus(cr, {}, failureConditions(reason, message, currentConditions(cr)), true);
      throw new TerminalError(`${reason}: ${message}`);
    }

    // The cache can still hold a resource that is gone: after a watch outage, the children's informers may
    // relist (seeing the garbage collector's deletions) before the resource's own informer does. Creating
    // children or a Secret for it then fights the garbage collector, so before a child is created the
    // resource is checked live. Whether a name is free is known from the caches: the labelled ones and the
    // metadata-only ones of everything else (see Watches.childNames), so no read past them.
    const missingAtStart = new Set<string>();
    for (const o of rendered) {
      if (this.children.nameInUse(o.apiVersion, o.kind, namespace, o.metadata.name)) continue;
      missingAtStart.add(childKey({ ...o, metadata: { ...o.metadata, namespace } }));
    }
    // The ApplySet parent write (a resource's first reconcile) answers that: it carries the uid as a
    // precondition and returns what the API server has.
    const parent = await this.writes.ensureApplySetParent(cr, owner.kind);
    if (parent === 'gone') return undefined;
    if (missingAtStart.size > 0 && parent !== 'live' && !(await isLive(this.o.client, cr, owner.kind)))
      return undefined;

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
    const prepared: Preparation = (await controller.prepare?.({
      client: this.o.client,
      cr,
      install: this.o.install ?? {},
      resources: this.resources,
      ...(secrets ? { secrets } : {}),
      ...(certificates ? { certificates } : {}),
      ...(claims ? { claims } : {}),
    })) ?? { problems: [] };
    for (const e of prepared.events ?? []) this.o.events.record(cr, 'Normal', e.reason, e.message);
    const problems = prepared.problems;

    // What this reconcile applied, as the API server returned it: newer than the cache, whose echo of it
    // queues nothing (see isOwnEcho), so status is judged from it.
    const applied = new Map<string, LiveObject>();
    // The kind's manager, when this reconciler runs managers (it needs the pods).
    const manager = this.o.pods && this.o.manage !== false ? this.managers.get(kindName) : undefined;
    const desired = this.desired(cr, rendered, ownerOf(cr));
    const failure = await this.children.converge(cr, owner.kind, controller, desired, log, {
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
      this.children.childInformer(apiVersion, kind).get(namespace, childName);
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
    await this.writes.writeStatus(cr, { ...observed.fields, ...management?.fields }, conditions, false);
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
}

function currentConditions(cr: CustomResource): ConditionInput[] {
  return (cr.status?.conditions ?? []).map((c) => ({
    type: c.type as ConditionInput['type'],
    status: c.status,
    reason: c.reason,
    message: c.message,
  }));
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
