import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer } from './types.js';

/**
 * Per-namespace informers of one type seen as one: lookups go to every namespace's informer. What a
 * controller watching a list of namespaces reads through. One informer is returned as it is.
 */
export function mergeInformers<T extends KubernetesObject>(informers: readonly Informer<T>[]): Informer<T> {
  const first = informers[0];
  if (!first) throw new Error('no informers to merge');
  if (informers.length === 1) return first;
  return {
    ...first,
    get: (namespace, name) => informers.map((i) => i.get(namespace, name)).find((o) => o !== undefined),
    list: (namespace) => informers.flatMap((i) => i.list(namespace)),
    byIndex: (index, value) => informers.flatMap((i) => i.byIndex(index, value)),
    byOwner: (uid) => informers.flatMap((i) => i.byOwner(uid)),
    hasSynced: () => informers.every((i) => i.hasSynced()),
  };
}
