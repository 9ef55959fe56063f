import assert from 'node:assert/strict';
import { HttpMethod } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import { kubeListWatch } from '../../../lib/informer/index.js';
import { isNotFound } from '../../../lib/kube/index.js';
import type { KubeClient } from '../../../lib/kube/index.js';
import { eventually } from '../eventually.js';

export type OwnerKind = 'App' | 'MySQLCluster';

const PLURAL: Record<OwnerKind, string> = { App: 'apps', MySQLCluster: 'mysqlclusters' };

/** A live object as these tests read it. */
export interface Live extends KubernetesObject {
  readonly metadata: NonNullable<KubernetesObject['metadata']> & {
    readonly name: string;
    readonly uid: string;
    readonly resourceVersion: string;
  };
  readonly spec?: Record<string, unknown>;
  readonly status?: Record<string, unknown>;
  readonly data?: Record<string, string>;
}

export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** The kinds a MySQLCluster or an App renders, to list them by their `app.kubernetes.io/instance` label. */
export const CHILD_KINDS = [
  { apiVersion: 'apps/v1', kind: 'StatefulSet', plural: 'statefulsets' },
  { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments' },
  { apiVersion: 'v1', kind: 'Service', plural: 'services' },
  { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets' },
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers' },
  { apiVersion: 'batch/v1', kind: 'CronJob', plural: 'cronjobs' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', plural: 'networkpolicies' },
] as const;

/** What a `replicas >= 1` MySQLCluster `name` renders, as `Kind/name`, sorted. */
export function mysqlChildren(name: string): string[] {
  return [
    `ConfigMap/${name}-config`,
    `ConfigMap/${name}-scripts`,
    `NetworkPolicy/${name}-mysql`,
    `PodDisruptionBudget/${name}-mysql`,
    `Service/${name}-headless`,
    `Service/${name}-primary`,
    `Service/${name}-replicas`,
    `StatefulSet/${name}`,
  ].sort();
}

const groupPath = (apiVersion: string): string =>
  apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;

export function crPath(kind: OwnerKind, namespace: string, name?: string): string {
  return `/apis/recon8s.dev/v1alpha1/namespaces/${namespace}/${PLURAL[kind]}${name === undefined ? '' : `/${name}`}`;
}

/** Direct API calls a user (or kubectl) would make. */
export class Api {
  constructor(readonly client: KubeClient) {}

  get<T = Live>(path: string): Promise<T> {
    return this.client.requestJson<T>({ path });
  }

  /** The object, or undefined when it does not exist. */
  async find<T = Live>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async list(path: string, labelSelector?: string, fieldSelector?: string): Promise<Live[]> {
    const list = await this.client.requestJson<{ items?: Live[] }>({ path, query: { labelSelector, fieldSelector } });
    return list.items ?? [];
  }

  create<T = Live>(path: string, body: unknown): Promise<T> {
    return this.client.requestJson<T>({
      method: HttpMethod.POST,
      path,
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
    });
  }

  mergePatch<T = Live>(path: string, body: unknown): Promise<T> {
    return this.client.requestJson<T>({
      method: HttpMethod.PATCH,
      path,
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
  }

  async delete(path: string, propagationPolicy: 'Foreground' | 'Background' = 'Background'): Promise<void> {
    await this.client.request({
      method: HttpMethod.DELETE,
      path,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy }),
      headers: { 'Content-Type': 'application/json' },
    });
  }

  createCr(kind: OwnerKind, namespace: string, name: string, spec: Record<string, unknown>): Promise<Live> {
    return this.create(crPath(kind, namespace), {
      apiVersion: 'recon8s.dev/v1alpha1',
      kind,
      metadata: { name, namespace },
      spec,
    });
  }

  /** Every rendered child (any kind above) labelled `app.kubernetes.io/instance=<instance>`, as `Kind/name`, sorted. */
  async children(namespace: string, instance: string): Promise<string[]> {
    const found = await Promise.all(
      CHILD_KINDS.map(async (t) => {
        const items = await this.list(
          `${groupPath(t.apiVersion)}/namespaces/${namespace}/${t.plural}`,
          `app.kubernetes.io/instance=${instance}`,
        );
        return items.map((o) => `${t.kind}/${o.metadata.name}`);
      }),
    );
    return found.flat().sort();
  }

  /**
   * The password Secrets labelled `app.kubernetes.io/instance=<instance>`: not the members' certificates
   * (type kubernetes.io/tls, `<name>-ca` and `<name>-tls`), which hold no password and no data's key.
   */
  async secrets(namespace: string, instance: string): Promise<Live[]> {
    const all = await this.list(`/api/v1/namespaces/${namespace}/secrets`, `app.kubernetes.io/instance=${instance}`);
    return all.filter((s) => (s as { type?: string }).type !== 'kubernetes.io/tls');
  }

  pvcs(namespace: string): Promise<Live[]> {
    return this.list(`/api/v1/namespaces/${namespace}/persistentvolumeclaims`);
  }

  async condition(kind: OwnerKind, namespace: string, name: string, type: string): Promise<Condition | undefined> {
    const cr = await this.get(crPath(kind, namespace, name));
    return (cr.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);
  }

  /** Events about the object with this uid. */
  async events(namespace: string, uid: string): Promise<{ type?: string; reason?: string; message?: string }[]> {
    return (await this.list(`/api/v1/namespaces/${namespace}/events`, undefined, `involvedObject.uid=${uid}`)) as {
      type?: string;
      reason?: string;
      message?: string;
    }[];
  }

  /**
   * Stands in for the kubelet that this control plane lacks: marks the Pods of a StatefulSet Running
   * and Ready. The statefulset controller applies the PVC retention policy to ready members (and an
   * OrderedReady StatefulSet, as older recon8s made, creates member n+1 only once member n is ready).
   */
  async markPodsReady(namespace: string, instance: string): Promise<void> {
    for (const pod of await this.list(
      `/api/v1/namespaces/${namespace}/pods`,
      `app.kubernetes.io/instance=${instance}`,
    )) {
      if ((pod.status as { phase?: string } | undefined)?.phase === 'Running' || pod.metadata.deletionTimestamp)
        continue;
      await this.mergePatch(`/api/v1/namespaces/${namespace}/pods/${pod.metadata.name}/status`, {
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }],
        },
      });
    }
  }
}

/** A namespace with a name the API server makes unique. */
export async function createNamespace(api: Api, prefix: string): Promise<string> {
  const ns = await api.create('/api/v1/namespaces', { metadata: { generateName: `${prefix}-` } });
  return ns.metadata.name;
}

/**
 * kube-controller-manager's garbage collector learns of new resource types by discovery, every 30 s:
 * until then it ignores the deletion of an App or a MySQLCluster and their dependents stay. Resolves
 * once it collects a dependent of each kind (so deletion tests wait only as long as needed).
 */
export async function garbageCollectorKnowsOwners(api: Api): Promise<void> {
  const namespace = await createNamespace(api, 'gc-probe');
  await Promise.all(
    (['App', 'MySQLCluster'] as const).map(async (kind) => {
      const spec = kind === 'App' ? { image: 'nginx:1.27' } : { replicas: 1 };
      const name = `probe-${kind.toLowerCase()}`;
      const owner = await api.createCr(kind, namespace, name, spec);
      await api.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        metadata: {
          name,
          ownerReferences: [{ apiVersion: 'recon8s.dev/v1alpha1', kind, name, uid: owner.metadata.uid }],
        },
      });
      await api.delete(crPath(kind, namespace, name));
      await eventually(
        async () => assert.equal(await api.find(`/api/v1/namespaces/${namespace}/configmaps/${name}`), undefined),
        {
          timeoutMs: 90_000,
          maxIntervalMs: 1_000,
          description: `the garbage collector to collect a dependent of a ${kind}`,
        },
      );
    }),
  );
}

/** Creations seen by watches on every child kind, from the moment `watchCreations` resolved on. */
export interface CreationRecord {
  /** `Kind/name` of every object ADDED since. */
  readonly added: readonly string[];
  /** Why a watch ended before stop() (then `added` may be incomplete). */
  readonly broken: readonly string[];
  stop(): Promise<void>;
}

/** Watches every child kind with objects matching `labelSelector`, as `kubectl get -w` would. */
export async function watchCreations(
  client: KubeClient,
  namespace: string,
  labelSelector: string,
): Promise<CreationRecord> {
  const added: string[] = [];
  const broken: string[] = [];
  const ctl = new AbortController();
  const watches = await Promise.all(
    CHILD_KINDS.map(async (t) => {
      const source = kubeListWatch<Live>(client, { ...t, namespace, labelSelector });
      const { resourceVersion } = await source.list({});
      // Wrapped: an async function returning the watch's promise would wait for the watch to end.
      const done = source
        .watch({ resourceVersion, timeoutSeconds: 600, allowWatchBookmarks: false, signal: ctl.signal }, (event) => {
          if (event.type === 'ADDED') added.push(`${t.kind}/${event.object.metadata.name}`);
          if (event.type === 'ERROR') broken.push(`${t.kind}: ${event.object.message ?? 'watch error'}`);
        })
        .then(
          () => {
            if (!ctl.signal.aborted) broken.push(`${t.kind}: the watch ended`);
          },
          (e: unknown) => {
            if (!ctl.signal.aborted) broken.push(`${t.kind}: ${e instanceof Error ? e.message : String(e)}`);
          },
        );
      return { done };
    }),
  );
  return {
    added,
    broken,
    async stop() {
      ctl.abort();
      await Promise.all(watches.map((w) => w.done));
    },
  };
}
