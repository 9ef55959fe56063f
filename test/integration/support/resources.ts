import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

const GROUP = 'recon8s.dev';
const VERSION = 'v1alpha1';

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
export interface CustomResource {
  metadata: { name: string; uid: string; generation: number };
  status?: { observedGeneration?: number; conditions?: Condition[]; desiredReplicas?: number };
}
export interface EventSummary {
  type?: string;
  reason?: string;
  message?: string;
}

/** What a test does with recon8s resources in one namespace, as a user would through the API. */
export interface ResourceHelpers {
  create(plural: string, kind: string, name: string, spec: Record<string, unknown>): Promise<object>;
  get(plural: string, name: string): Promise<CustomResource>;
  /** A JSON merge patch of the spec. */
  patchSpec(plural: string, name: string, spec: Record<string, unknown>): Promise<object>;
  /** The Events about an object of this name. */
  events(name: string): Promise<EventSummary[]>;
}

export function resourceHelpers(kc: KubeConfig, namespace: string): ResourceHelpers {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  return {
    create: (plural, kind, name, spec) =>
      custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name }, spec },
      }),
    get: async (plural, name) =>
      (await custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural,
        name,
      })) as CustomResource,
    patchSpec: (plural, name, spec) =>
      custom.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural, name, body: { spec } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    events: async (name) =>
      (await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items,
  };
}

export function conditionOf(cr: CustomResource, type: string): Condition | undefined {
  return cr.status?.conditions?.find((c) => c.type === type);
}
