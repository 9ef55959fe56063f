import { createHash } from 'node:crypto';
import type { KubernetesObject } from '../../constructs/index.js';
import { PASSWORD_REVISION_ANNOTATION } from '../../constructs/index.js';
import type { CustomResource } from './kind-controller.js';

/**
 * What render() made of one resource, remembered per uid: render() is a pure function of the apiVersion,
 * kind, namespace, name, spec and one annotation (an App's password revision, which rolls its pods in a
 * password rotation), so the same inputs give the same objects (frozen: nothing downstream may change
 * them). A resync, an echo or a status change then costs a lookup, not a cdk8s synth.
 *
 * The memo holds at most `capacity` resources; the least recently used go first (rendered again when
 * next reconciled). The inputs are recognised by the resource's generation, which the API server raises
 * on every change of anything but metadata and status, i.e. of the spec, together with that annotation
 * (metadata: the generation does not move when it changes); without a generation (a fake), by a hash of
 * the inputs. Nothing of the inputs themselves is kept.
 */
export class RenderMemo<T = readonly KubernetesObject[]> {
  private readonly entries = new Map<string, { readonly inputs: string; readonly value: T }>();

  constructor(readonly capacity = 4096) {}

  get size(): number {
    return this.entries.size;
  }

  /** The remembered render of `cr` if its inputs did not change since, else `make()`'s (then remembered). */
  get(cr: CustomResource, make: () => T): T {
    const uid = cr.metadata.uid ?? '';
    const inputs = inputsKey(cr);
    const last = this.entries.get(uid);
    this.entries.delete(uid);
    const value = last?.inputs === inputs ? last.value : make();
    this.entries.set(uid, { inputs, value });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(oldest);
    }
    return value;
  }

  forget(uid: string): void {
    this.entries.delete(uid);
  }
}

function inputsKey(cr: CustomResource): string {
  const generation = cr.metadata.generation;
  const revision = cr.metadata.annotations?.[PASSWORD_REVISION_ANNOTATION] ?? '';
  if (typeof generation === 'number') return `${cr.apiVersion}#${generation}#${revision}`;
  return createHash('sha256')
    .update(JSON.stringify([cr.apiVersion, cr.kind, cr.metadata.namespace, cr.metadata.name, cr.spec, revision]))
    .digest('base64url');
}
