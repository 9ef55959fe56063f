import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import { createInformer } from '../lib/informer/index.js';
import type { Informer } from '../lib/informer/index.js';
import type { KubeClient } from '../lib/kube/index.js';
import { GROUP_VERSION, refOf } from './workload.js';

/** A resource type the bench watches. */
export interface WatchedType {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
}

interface CrLike extends LiveObject {
  readonly status?: { readonly observedGeneration?: number };
}

/**
 * The bench's own view of its namespace, by watch (no polling, so it adds no requests while the
 * controller works): which children exist, which custom resources report
 * `status.observedGeneration == metadata.generation`, and when a Deployment shows a given replica count.
 *
 * Convergence: every expected custom resource has every child render() gives for it, and has observed
 * its generation. `converged()` resolves with the `performance.now()` of the event that completed it.
 */
export class ClusterWatch {
  private readonly informers: Informer<LiveObject>[] = [];
  private readonly expectedChildren = new Map<string, readonly string[]>();
  private readonly ownerOfChild = new Map<string, string>();
  private readonly presentChildren = new Set<string>();
  private readonly observed = new Set<string>();
  private readonly pending = new Set<string>();
  private expectedChildCount = 0;
  private convergedAt: number | undefined;
  private convergedWaiters: ((t: number) => void)[] = [];
  private readonly replicaWaiters = new Map<string, { replicas: number; resolve: (t: number) => void }>();
  /** The bench's own watch restarts, by `resource reason` (a slow reader is cut off by the API server). */
  readonly restarts: Record<string, number> = {};

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly childTypes: readonly WatchedType[],
    private readonly ownerTypes: readonly WatchedType[],
  ) {}

  /** Lists and watches everything; resolves once every informer has synced. */
  async start(): Promise<void> {
    const make = (t: WatchedType, labelSelector?: string): Informer<LiveObject> => {
      const informer = createInformer<LiveObject>({
        client: this.client,
        apiVersion: t.apiVersion,
        kind: t.kind,
        plural: t.plural,
        namespace: this.namespace,
        ...(labelSelector ? { labelSelector } : {}),
        freeze: false,
        watchTimeoutSeconds: [1800, 1800],
        watchdogMs: 0,
        relistPeriodMs: 0,
        hooks: {
          onWatchRestart: (reason) => this.countRestart(`${t.plural} ${reason}`),
          onRelist: (reason) => this.countRestart(`${t.plural} relist-${reason}`),
        },
      });
      this.informers.push(informer);
      return informer;
    };
    for (const t of this.childTypes) {
      const informer = make(t, 'app.kubernetes.io/managed-by=recon8s');
      informer.addHandlers({
        onAdd: (o) => this.onChild(t.kind, o, true),
        onUpdate: (_old, o) => this.onChild(t.kind, o, true),
        onDelete: (o) => this.onChild(t.kind, o, false),
      });
    }
    for (const t of this.ownerTypes) {
      const informer = make(t);
      informer.addHandlers({
        onAdd: (o) => this.onOwner(t.kind, o as CrLike),
        onUpdate: (_old, o) => this.onOwner(t.kind, o as CrLike),
        onDelete: (o) => this.onOwner(t.kind, o as CrLike, true),
      });
    }
    await Promise.all(this.informers.map((i) => i.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** Declares a custom resource (`Kind/name`) and the children (`Kind/name`) it must end up with. */
  expect(cr: string, children: readonly string[]): void {
    this.expectedChildren.set(cr, children);
    this.expectedChildCount += children.length;
    for (const c of children) this.ownerOfChild.set(c, cr);
    this.pending.add(cr);
    this.convergedAt = undefined;
    this.evaluate(cr);
  }

  /** Resolves with the moment every declared resource converged (at once if it already has). */
  converged(): Promise<number> {
    if (this.convergedAt !== undefined) return Promise.resolve(this.convergedAt);
    return new Promise((resolve) => this.convergedWaiters.push(resolve));
  }

  /** Resolves with the moment the Deployment `name` is seen with `spec.replicas == replicas`. */
  deploymentReplicas(name: string, replicas: number): Promise<number> {
    return new Promise((resolve) => this.replicaWaiters.set(name, { replicas, resolve }));
  }

  progress(): {
    childrenPresent: number;
    childrenExpected: number;
    resourcesObserved: number;
    resources: number;
    pending: number;
  } {
    let present = 0;
    for (const c of this.ownerOfChild.keys()) if (this.presentChildren.has(c)) present++;
    return {
      childrenPresent: present,
      childrenExpected: this.expectedChildCount,
      resourcesObserved: this.observed.size,
      resources: this.expectedChildren.size,
      pending: this.pending.size,
    };
  }

  private countRestart(key: string): void {
    this.restarts[key] = (this.restarts[key] ?? 0) + 1;
  }

  private onChild(kind: string, o: LiveObject, present: boolean): void {
    const name = o.metadata?.name ?? '';
    const ref = refOf(kind, name);
    if (present) this.presentChildren.add(ref);
    else this.presentChildren.delete(ref);
    const owner = this.ownerOfChild.get(ref);
    if (owner !== undefined) this.evaluate(owner);
    if (present && kind === 'Deployment') {
      const waiter = this.replicaWaiters.get(name);
      const replicas = (o as { spec?: { replicas?: number } }).spec?.replicas;
      if (waiter && replicas === waiter.replicas) {
        this.replicaWaiters.delete(name);
        waiter.resolve(performance.now());
      }
    }
  }

  private onOwner(kind: string, o: CrLike, deleted = false): void {
    const ref = refOf(kind, o.metadata?.name ?? '');
    const generation = o.metadata?.generation;
    if (!deleted && generation !== undefined && o.status?.observedGeneration === generation) this.observed.add(ref);
    else this.observed.delete(ref);
    if (this.expectedChildren.has(ref)) this.evaluate(ref);
  }

  private evaluate(cr: string): void {
    const children = this.expectedChildren.get(cr);
    if (children === undefined) return;
    const done = this.observed.has(cr) && children.every((c) => this.presentChildren.has(c));
    if (done) this.pending.delete(cr);
    else this.pending.add(cr);
    if (this.pending.size === 0 && this.convergedAt === undefined) {
      this.convergedAt = performance.now();
      for (const w of this.convergedWaiters.splice(0)) w(this.convergedAt);
    } else if (this.pending.size > 0) {
      this.convergedAt = undefined;
    }
  }
}

export const OWNER_TYPES: readonly WatchedType[] = [
  { apiVersion: GROUP_VERSION, kind: 'App', plural: 'apps' },
  { apiVersion: GROUP_VERSION, kind: 'MySQLCluster', plural: 'mysqlclusters' },
];
