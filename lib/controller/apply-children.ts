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
   * `liveUid` is the uid of the object this apply means to change, when it exists. It goes into the
   * patch as a precondition: server-side apply creates what is missing, so without it an apply judged
   * against an object that was deleted meanwhile (the garbage collector removing the children of a
   * resource being deleted) would bring that child back. With it the API server answers 409 instead.
   */
  async apply(child: DesiredChild, liveUid?: string): Promise<LiveObject> {
    const object = liveUid ? { ...child.object, metadata: { ...child.object.metadata, uid: liveUid } } : child.object;
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
