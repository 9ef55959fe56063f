import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/index.js';
import { firstDifference } from '../reconcile/compare.js';
import type { DesiredChild } from '../reconcile/desired.js';
import { DESIRED_HASH_ANNOTATION } from '../reconcile/desired.js';
import { WritesInFlight, identityKey } from './writes-in-flight.js';

/** Why a child is (or is not) sent. */
export type ApplyDecision =
  | { readonly send: false; readonly why: 'unchanged' }
  | { readonly send: true; readonly why: 'missing' | 'spec-changed' | 'drifted'; readonly path?: string };

/**
 * The precondition of an apply that must create its object, never change one: a resourceVersion no
 * object has (etcd's first revision comes before any write). The API server compares a resourceVersion
 * in an apply with the stored object's and answers 409 Conflict when any object of that name exists;
 * when none does, the apply creates it and the resourceVersion is ignored. So an object someone else
 * created after the caches were read is never taken over by a force apply.
 */
export const CREATE_ONLY = { resourceVersion: '1' } as const;

/** What an apply may change: the object with this uid, or nothing that exists (CREATE_ONLY). */
export type ApplyPrecondition = string | typeof CREATE_ONLY;

interface Applied {
  readonly hash: string;
  readonly resourceVersion: string;
}

/**
 * Decides which rendered children differ from the cluster, and applies only those.
 *
 * A child is sent when it is missing, when what we render for it changed (its desired-hash
 * annotation differs), or when a field we own no longer holds our value (someone else changed it:
 * server-side apply with force takes it back). The last check is skipped when the live object is the
 * very version our own last apply returned: nothing can have drifted since, and the API server's
 * normalisation of what we sent never looks like drift.
 */
export class ChildApplier {
  private readonly applied = new Map<string, Applied>();
  private readonly inFlight = new WritesInFlight();

  constructor(private readonly client: KubeClient) {}

  decide(child: DesiredChild, live: LiveObject | undefined): ApplyDecision {
    if (!live) return { send: true, why: 'missing' };
    const liveMeta = live.metadata ?? {};
    if (liveMeta.annotations?.[DESIRED_HASH_ANNOTATION] !== child.hash) return { send: true, why: 'spec-changed' };
    const memo = liveMeta.uid ? this.applied.get(liveMeta.uid) : undefined;
    if (memo && memo.hash === child.hash && memo.resourceVersion === liveMeta.resourceVersion)
      return { send: false, why: 'unchanged' };
    const path = firstDifference(child.object, live, '');
    if (path !== undefined) return { send: true, why: 'drifted', path };
    if (liveMeta.uid && liveMeta.resourceVersion)
      this.applied.set(liveMeta.uid, { hash: child.hash, resourceVersion: liveMeta.resourceVersion });
    return { send: false, why: 'unchanged' };
  }

  /**
   * Server-side applies the child (field manager recon8s, force) and remembers the version it got back.
   *
   * `precondition` is the uid of the object this apply means to change, when it exists: server-side
   * apply creates what is missing, so without it an apply judged against an object that was deleted
   * meanwhile (the garbage collector removing the children of a resource being deleted) would bring that
   * child back; with it the API server answers 409 instead. When no object of the name was seen it is
   * CREATE_ONLY: an object that appeared since is answered with 409 too, never overwritten.
   */
  async apply(child: DesiredChild, precondition: ApplyPrecondition): Promise<LiveObject> {
    const extra = typeof precondition === 'string' ? { uid: precondition } : precondition;
    const object = { ...child.object, metadata: { ...child.object.metadata, ...extra } };
    return this.inFlight.track(
      identityKey(child.object),
      this.client.apply<LiveObject>(object).then((result) => {
        const meta = result.metadata ?? {};
        if (meta.uid && meta.resourceVersion)
          this.applied.set(meta.uid, { hash: child.hash, resourceVersion: meta.resourceVersion });
        return result;
      }),
    );
  }

  /**
   * Whether this is exactly the version our own last apply of it returned: its watch event tells the
   * owner nothing new (the reconcile that wrote it already judged it), so it need not be queued again.
   * A promise when an apply of it is under way (its event may come before its response).
   */
  isOwnEcho(o: LiveObject): boolean | Promise<boolean> {
    const meta = o.metadata ?? {};
    if (meta.uid === undefined || meta.resourceVersion === undefined) return false;
    const { uid, resourceVersion } = meta;
    return this.inFlight.whenSettled(identityKey(o), () => this.applied.get(uid)?.resourceVersion === resourceVersion);
  }

  /** Drops what is remembered of children that are gone. */
  forget(uid: string): void {
    this.applied.delete(uid);
  }
}
