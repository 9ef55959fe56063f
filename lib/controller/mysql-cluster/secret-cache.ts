// The Secrets a MySQLCluster reads (its credentials, its object store's), each watched by name once
// read, so that a look at a cluster costs no API request: before, every reconcile and every look of the
// HA manager read the credentials Secret live (1.7 GETs a second, for ever, for a cluster whose pods
// cannot run). Only the Secrets clusters name are watched (a field selector on the name), never every
// Secret of a namespace: the controller holds no password it does not use. createNamedObjectCache does
// the same for another type: a MySQLCluster's cert-manager Certificate, watched only once it exists
// (cert-manager may not be installed at all).
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { Informer, InformerHooks } from '../../informer/index.js';
import { createInformer } from '../../informer/index.js';
import type { KubeClient } from '../../kube/index.js';
import type { Logger } from '../../observability/logger.js';
import type { SecretReader } from '../kind-controller.js';
import { readSecret } from './credentials-secret.js';

export interface SecretCache {
  readonly read: SecretReader;
  /** The resource is gone: the Secrets no other resource reads are no longer watched. */
  release(uid: string): void;
  stop(): Promise<void>;
}

/** Reads one object of a type a resource uses, by name (see createSecretCache). */
export type NamedObjectReader<T> = (
  owner: { readonly uid: string; readonly kind: string; readonly name: string },
  namespace: string,
  name: string,
) => Promise<T | undefined>;

export interface NamedObjectCache<T> {
  readonly read: NamedObjectReader<T>;
  /** The resource is gone: the objects no other resource reads are no longer watched. */
  release(uid: string): void;
  stop(): Promise<void>;
}

export interface SecretCacheOptions {
  readonly client: KubeClient;
  readonly logger: Logger;
  readonly hooks?: InformerHooks;
  /** A Secret that a resource reads was added, changed or deleted: look at the resource again. */
  readonly onChange: (owner: { readonly kind: string; readonly namespace: string; readonly name: string }) => void;
}

/**
 * A Secret is read live the first time (which also tells a Secret that is missing, or forbidden, from
 * one that is not in the cache yet), then watched by name; once that watch has its first list, it is
 * read from there. A Secret that may not be read (403) is not watched: it is read live again at the
 * next reconcile (every 30 s while CredentialsForbidden says so).
 */
export function createSecretCache(o: SecretCacheOptions): SecretCache {
  return createNamedObjectCache<V1Secret>({
    ...o,
    type: { apiVersion: 'v1', kind: 'Secret', plural: 'secrets' },
    readLive: (namespace, name) => readSecret(o.client, namespace, name),
    watchMissing: true,
  });
}

export interface NamedObjectCacheOptions<T> extends SecretCacheOptions {
  readonly type: { readonly apiVersion: string; readonly kind: string; readonly plural: string };
  /** One object, read live (undefined: it does not exist). */
  readonly readLive: (namespace: string, name: string) => Promise<T | undefined>;
  /**
   * Watch an object that does not exist yet (a Secret the user is to create). Off for a type that may
   * not be served at all (a CRD not installed): its object is watched once it was read.
   */
  readonly watchMissing: boolean;
}

/** The same, for objects of any type a resource names (a MySQLCluster's cert-manager Certificate). */
export function createNamedObjectCache<T extends KubernetesObject>(o: NamedObjectCacheOptions<T>): NamedObjectCache<T> {
  type Watched = {
    readonly informer: Informer<T & { metadata: { name: string } }>;
    readonly owners: Map<string, { readonly kind: string; readonly name: string }>;
  };
  const watched = new Map<string, Watched>();
  const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

  const watch = (namespace: string, name: string): Watched => {
    const informer = createInformer<T & { metadata: { name: string } }>({
      client: o.client,
      apiVersion: o.type.apiVersion,
      kind: o.type.kind,
      plural: o.type.plural,
      namespace,
      fieldSelector: `metadata.name=${name}`,
      name: `${o.type.kind.toLowerCase()} ${namespace}/${name}`,
      logger: o.logger,
      ...(o.hooks ? { hooks: o.hooks } : {}),
      transform: (s) => {
        if (s.metadata?.managedFields !== undefined) delete s.metadata.managedFields;
        return s;
      },
    });
    const entry: Watched = { informer, owners: new Map() };
    const changed = (): void => {
      for (const owner of entry.owners.values()) o.onChange({ kind: owner.kind, namespace, name: owner.name });
    };
    informer.addHandlers({
      onAdd: changed,
      onUpdate: (_old, _new, info) => (info.resync ? undefined : changed()),
      onDelete: changed,
    });
    void informer.start();
    return entry;
  };

  return {
    async read(owner, namespace, name) {
      const key = keyOf(namespace, name);
      const entry = watched.get(key);
      if (entry) {
        entry.owners.set(owner.uid, { kind: owner.kind, name: owner.name });
        // The cache's objects are frozen and shared; callers may update what they read (a patch's new version).
        if (entry.informer.hasSynced()) return structuredClone(entry.informer.get(namespace, name));
        return o.readLive(namespace, name);
      }
      // A Secret that may not be read throws here (403): it is not watched.
      const secret = await o.readLive(namespace, name);
      if (secret === undefined && !o.watchMissing) return undefined;
      const started = watched.get(key) ?? watch(namespace, name);
      watched.set(key, started);
      started.owners.set(owner.uid, { kind: owner.kind, name: owner.name });
      return secret;
    },
    release(uid) {
      for (const [key, entry] of watched) {
        if (!entry.owners.delete(uid) || entry.owners.size > 0) continue;
        watched.delete(key);
        void entry.informer.stop();
      }
    },
    async stop() {
      const all = [...watched.values()];
      watched.clear();
      await Promise.all(all.map((e) => e.informer.stop()));
    },
  };
}
