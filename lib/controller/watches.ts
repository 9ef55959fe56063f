// The resources of some kinds and their children, watched, each change turned into the owner's queue
// key. Used by the controller (controller.ts) and by `recon8s apply` (lib/cli/apply-command.ts), so both
// see the world the same way.
import type { KubernetesObject as LiveObject, V1Pod } from '@kubernetes/client-node';
import type { KindDefinition } from '../../constructs/index.js';
import { MANAGED_BY } from '../../constructs/index.js';
import type { Informer, InformerHooks, InformerOptions } from '../informer/index.js';
import { createInformer, mergeInformers } from '../informer/index.js';
import type { KubeClient } from '../kube/index.js';
import type { Logger } from '../observability/logger.js';
import { allChildTypes, kindController, ownerType, queueKey } from './kinds.js';
import type { CustomResource, KindController } from './kind-controller.js';

/**
 * managedFields are about half of every object and nothing reads them from the cache (the ownership
 * check reads them from a live GET): they are dropped on the way in.
 */
export function withoutManagedFields<T extends LiveObject>(o: T): T {
  if (o.metadata?.managedFields !== undefined) delete o.metadata.managedFields;
  return o;
}

/**
 * What the ownership check needs of an object of a child's name, and nothing else: its identity and
 * version, and its controller ownerReference. The metadata-only caches hold every object of the child
 * types in the watched namespaces that is not labelled as recon8s's (a busy namespace's ConfigMaps
 * included), so each is kept this small.
 */
export function ownershipMetadata<T extends LiveObject>(o: T): T {
  const meta = o.metadata ?? {};
  const controller = meta.ownerReferences?.find((r) => r.controller === true);
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: {
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      ...(controller
        ? {
            ownerReferences: [
              {
                apiVersion: controller.apiVersion,
                kind: controller.kind,
                name: controller.name,
                uid: controller.uid,
                controller: true,
              },
            ],
          }
        : {}),
    },
  } as T;
}

/** The children the controller may touch carry this label (and a controller ownerReference to their resource). */
export const CHILD_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY}`;

/**
 * Everything else: the objects the metadata-only caches hold. With the labelled caches they cover every
 * object of a child type, and the controller's own writes to its children never reach these watches
 * (an object that gains or loses the label moves from one cache to the other).
 */
export const NOT_CHILD_SELECTOR = `app.kubernetes.io/managed-by!=${MANAGED_BY}`;

export interface OwnerWatch {
  readonly kind: KindDefinition;
  readonly informer: Informer<CustomResource>;
}

export interface WatchOptions {
  readonly client: KubeClient;
  readonly kinds: readonly KindDefinition[];
  /** Namespaces to watch; `undefined` in the list: all namespaces. */
  readonly namespaces: readonly (string | undefined)[];
  readonly logger: Logger;
  readonly resyncPeriodMs?: number;
  /** Observation hooks per informer (its resource's plural). */
  readonly hooks?: (plural: string) => InformerHooks;
  /** The owner's queue key, whenever it or one of its children is added, changed or deleted. */
  readonly onKey: (key: string) => void;
  /**
   * A child's add or update that needs no reconcile of its owner (the echo of the controller's own
   * write). Deletions always count.
   */
  readonly isEcho?: (child: LiveObject) => boolean | Promise<boolean>;
  /**
   * A resource's update that needs no reconcile: the echo of the controller's own write to it (ApplySet
   * metadata, status). Adds, deletions and periodic resyncs always count.
   */
  readonly isOwnerEcho?: (cr: CustomResource) => boolean | Promise<boolean>;
  /** The uid of an owner or child that was deleted (for what is remembered of it). */
  readonly onDeleted?: (uid: string) => void;
}

export interface Watches {
  /** Owner informers by kind (all namespaces merged behind one lookup). */
  readonly owners: ReadonlyMap<string, OwnerWatch>;
  /** Child informers by `apiVersion/kind`. */
  readonly children: ReadonlyMap<string, Informer<LiveObject>>;
  /**
   * The objects of each child type the labelled caches do not hold (NOT_CHILD_SELECTOR) by
   * `apiVersion/kind`, metadata only (see ownershipMetadata): with `children`, whether a name is free,
   * or whose it is, without asking the API server.
   */
  readonly childNames: ReadonlyMap<string, Informer<LiveObject>>;
  /** Every informer, to start and stop. */
  readonly informers: readonly Informer<LiveObject>[];
}

/** Creates (not starts) the informers. */
export function watchOwnersAndChildren(o: WatchOptions): Watches {
  const owners = new Map<string, OwnerWatch>();
  const informers: Informer<LiveObject>[] = [];
  const deleted = (uid: string | undefined): void => {
    if (uid) o.onDeleted?.(uid);
  };

  for (const kind of o.kinds) {
    const type = ownerType(kind);
    const perNamespace = o.namespaces.map((namespace) =>
      createInformer<CustomResource>({
        client: o.client,
        apiVersion: type.apiVersion,
        kind: type.kind,
        plural: type.plural,
        namespace,
        resyncPeriodMs: o.resyncPeriodMs,
        logger: o.logger,
        hooks: o.hooks?.(type.plural),
        transform: withoutManagedFields,
      }),
    );
    const onOwner = (cr: CustomResource): void =>
      o.onKey(queueKey(kind.kind, cr.metadata.namespace ?? '', cr.metadata.name));
    for (const informer of perNamespace) {
      informer.addHandlers({
        onAdd: (cr) => {
          onOwner(cr);
          onRelated(cr);
        },
        onUpdate: (old, cr, info) => {
          if (info.resync) onOwner(cr);
          else unlessEcho(o.isOwnerEcho?.(cr), () => onOwner(cr));
          // Even our own status write: what it says (a bound App's account) is news to the other side.
          if (!info.resync) onRelated(cr, old);
        },
        onDelete: (cr) => {
          deleted(cr.metadata.uid);
          onOwner(cr);
          onRelated(cr);
        },
      });
      informers.push(informer as unknown as Informer<LiveObject>);
    }
    owners.set(kind.kind, { kind, informer: mergeInformers(perNamespace) });
  }

  /**
   * A resource that refers to another (an App to its MySQLCluster) queues it, before and after a change;
   * a resource referred to queues those that refer to it.
   */
  function onRelated(cr: CustomResource, old?: CustomResource): void {
    const namespace = cr.metadata.namespace ?? '';
    const refers = kindController(cr.kind)?.refersTo;
    if (refers) {
      for (const name of new Set([refers.name(cr), old && refers.name(old)]))
        if (name && owners.has(refers.kind)) o.onKey(queueKey(refers.kind, namespace, name));
    }
    for (const [kindName, watch] of owners) {
      const other = kindController(kindName)?.refersTo;
      if (other?.kind !== cr.kind) continue;
      for (const r of watch.informer.list(namespace))
        if (other.name(r) === cr.metadata.name) o.onKey(queueKey(kindName, namespace, r.metadata.name));
    }
  }

  const children = new Map<string, Informer<LiveObject>>();
  const childNames = new Map<string, Informer<LiveObject>>();
  const onChild = (child: LiveObject): void => {
    const ref = child.metadata?.ownerReferences?.find(
      (r) => r.controller && owners.has(r.kind) && r.apiVersion.startsWith(`${owners.get(r.kind)?.kind.group ?? ''}/`),
    );
    if (ref) o.onKey(queueKey(ref.kind, child.metadata?.namespace ?? '', ref.name));
  };
  for (const type of allChildTypes(o.kinds)) {
    // One informer of this child type per watched namespace.
    const inEachNamespace = (
      options: Omit<InformerOptions<LiveObject>, 'client' | 'apiVersion' | 'kind' | 'plural' | 'namespace' | 'logger'>,
    ) =>
      o.namespaces.map((namespace) =>
        createInformer<LiveObject>({
          client: o.client,
          apiVersion: type.apiVersion,
          kind: type.kind,
          plural: type.plural,
          namespace,
          logger: o.logger,
          ...options,
        }),
      );
    const perNamespace = inEachNamespace({
      labelSelector: CHILD_SELECTOR,
      hooks: o.hooks?.(type.plural),
      transform: withoutManagedFields,
    });
    for (const informer of perNamespace) {
      informer.addHandlers({
        onAdd: (c) => unlessEcho(o.isEcho?.(c), () => onChild(c)),
        onUpdate: (_old, c) => unlessEcho(o.isEcho?.(c), () => onChild(c)),
        onDelete: (c) => {
          deleted(c.metadata?.uid);
          onChild(c);
        },
      });
      informers.push(informer);
    }
    children.set(`${type.apiVersion}/${type.kind}`, mergeInformers(perNamespace));
    // No handlers: an object of someone else's never queues anything (a conflict is retried with backoff).
    const names = inEachNamespace({
      labelSelector: NOT_CHILD_SELECTOR,
      metadataOnly: true,
      name: `${type.plural} (metadata)`,
      hooks: o.hooks?.(`${type.plural}/metadata`),
      transform: ownershipMetadata,
    });
    informers.push(...names);
    childNames.set(`${type.apiVersion}/${type.kind}`, mergeInformers(names));
  }
  return { owners, children, childNames, informers };
}

/** Runs `then` unless `echo` says (now, or once the writes under way settled) it is the echo of our own write. */
function unlessEcho(echo: boolean | Promise<boolean> | undefined, then: () => void): void {
  if (echo instanceof Promise)
    void echo.then(
      (yes) => {
        if (!yes) then();
      },
      () => then(),
    );
  else if (!echo) then();
}

export interface PodWatchOptions {
  readonly client: KubeClient;
  /** The kinds whose pods are watched (those with a PodWatch). */
  readonly kinds: readonly KindController[];
  readonly namespaces: readonly (string | undefined)[];
  readonly logger: Logger;
  readonly hooks?: (plural: string) => InformerHooks;
  /** A pod was added, changed or deleted: `key` is its resource's queue key (by its instance label). */
  readonly onPod: (kind: KindController, pod: V1Pod, key: string | undefined, deleted: boolean) => void;
}

export interface PodWatches {
  /** Each kind's pod informers (one per namespace scope). */
  readonly byKind: ReadonlyMap<string, readonly Informer<V1Pod & LiveObject>[]>;
  readonly informers: readonly Informer<V1Pod & LiveObject>[];
}

/** Creates (not starts) the informers of the kinds' pods (read-only: list and watch, by label). */
export function watchPods(o: PodWatchOptions): PodWatches {
  const byKind = new Map<string, Informer<V1Pod & LiveObject>[]>();
  const informers: Informer<V1Pod & LiveObject>[] = [];
  for (const kc of o.kinds) {
    const watch = kc.pods;
    if (!watch) continue;
    const keyOf = (pod: V1Pod): string | undefined => {
      const owner = pod.metadata?.labels?.['app.kubernetes.io/instance'];
      return owner && pod.metadata?.namespace ? queueKey(kc.definition.kind, pod.metadata.namespace, owner) : undefined;
    };
    for (const namespace of o.namespaces) {
      const informer = createInformer<V1Pod & LiveObject>({
        client: o.client,
        apiVersion: 'v1',
        kind: 'Pod',
        plural: 'pods',
        namespace,
        labelSelector: watch.selector,
        transform: withoutManagedFields,
        logger: o.logger,
        hooks: o.hooks?.('pods'),
      });
      informer.addHandlers({
        onAdd: (pod) => o.onPod(kc, pod, keyOf(pod), false),
        onUpdate: (_old, pod) => o.onPod(kc, pod, keyOf(pod), false),
        onDelete: (pod) => o.onPod(kc, pod, keyOf(pod), true),
      });
      informers.push(informer);
      byKind.set(kc.definition.kind, [...(byKind.get(kc.definition.kind) ?? []), informer]);
    }
  }
  return { byKind, informers };
}
