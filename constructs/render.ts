import type { Construct } from 'constructs';
import { App, markControlledScope } from './app/app.js';
import { PASSWORD_REVISION_ANNOTATION } from './app/database.js';
import type { AppSpec } from './app/spec.generated.js';
import { APP } from './app/spec.js';
import { MySQLClusterObjects } from './mysql/mysql-cluster-objects.js';
import type { KubernetesObject } from './common/custom-resource.js';
import type { OperatorPods } from './common/operator-install.js';
import { synthesizeAlone } from './common/custom-resource.js';
import type { MySQLClusterSpec } from './mysql/spec.generated.js';
import { MYSQL_CLUSTER } from './mysql/spec.js';
import type { KindDefinition } from './schema/schema.js';
import type { Problem } from './schema/validate.js';
import { InvalidSpecError, isPlainObject } from './schema/validate.js';

/** The metadata render() reads from a custom resource. */
export interface ResourceMetadata {
  readonly name: string;
  readonly namespace?: string;
  readonly [key: string]: unknown;
}

export interface AppResource {
  readonly apiVersion: 'recon8s.dev/v1alpha1';
  readonly kind: 'App';
  readonly metadata: ResourceMetadata;
  readonly spec: AppSpec;
}

export interface MySQLClusterResource {
  readonly apiVersion: 'recon8s.dev/v1alpha1';
  readonly kind: 'MySQLCluster';
  readonly metadata: ResourceMetadata;
  readonly spec?: MySQLClusterSpec;
}

export type Recon8sResource = AppResource | MySQLClusterResource;

export type { KubernetesObject } from './common/custom-resource.js';

/** Every kind's definition and the construct that renders one resource of it: the registry of kinds. */
type RenderOne = (
  chart: Construct,
  name: string,
  spec: unknown,
  annotations: Readonly<Record<string, unknown>>,
  install: RenderInstall,
) => void;
const CONSTRUCTS: ReadonlyMap<KindDefinition, RenderOne> = new Map<KindDefinition, RenderOne>([
  [
    APP,
    (chart, name, spec, annotations) => {
      // The one annotation render reads: the password revision the controller sets during a rotation.
      const revision = annotations[PASSWORD_REVISION_ANNOTATION];
      new App(markControlledScope(chart, typeof revision === 'string' ? revision : undefined), name, spec as AppSpec);
    },
  ],
  [
    MYSQL_CLUSTER,
    (chart, name, spec, _annotations, install) => {
      new MySQLClusterObjects(chart, name, spec as MySQLClusterSpec, install);
    },
  ],
]);

export const KINDS: readonly KindDefinition[] = [...CONSTRUCTS.keys()];

/**
 * What a render depends on besides the resource: facts of the operator's install (the controller's
 * flags). Absent: the default install's.
 */
export interface RenderInstall {
  /** The operator's pods, which a MySQLCluster's NetworkPolicy admits to its members. @default every pod of recon8s-system */
  readonly operator?: OperatorPods;
}

/**
 * The desired children of a recon8s custom resource, rendered by the very constructs a cdk8s user
 * instantiates (the resource's name as the construct id, its spec as the props, its namespace as the
 * chart's).
 *
 * Pure and deterministic: the same input gives the same objects, with keys in a fixed order, whatever
 * the environment. The resource is validated whatever its static type (it often comes from parsed
 * YAML or the API): throws {@link InvalidSpecError} listing every problem when it is invalid.
 */
export function render(resource: Recon8sResource, install: RenderInstall = {}): KubernetesObject[] {
  const { kind, name, namespace, spec } = identify(resource);
  const annotations = resource.metadata.annotations;
  return synthesizeAlone(namespace, (chart) =>
    CONSTRUCTS.get(kind)?.(chart, name, spec, isPlainObject(annotations) ? annotations : {}, install),
  );
}

function identify(resource: unknown): { kind: KindDefinition; name: string; namespace?: string; spec: unknown } {
  const problems: Problem[] = [];
  if (!isPlainObject(resource))
    throw new InvalidSpecError('resource', [
      { field: '(root)', value: resource, expected: 'a Kubernetes object with apiVersion, kind, metadata and spec' },
    ]);
  const apiVersion = resource.apiVersion;
  const kindName = resource.kind;
  const kind = KINDS.find((k) => k.kind === kindName);
  const expectedApiVersion = `${kind?.group ?? 'recon8s.dev'}/${kind?.version ?? 'v1alpha1'}`;
  if (!kind)
    problems.push({ field: 'kind', value: kindName, expected: `one of ${KINDS.map((k) => `"${k.kind}"`).join(', ')}` });
  if (apiVersion !== expectedApiVersion)
    problems.push({ field: 'apiVersion', value: apiVersion, expected: `"${expectedApiVersion}"` });
  const metadata = isPlainObject(resource.metadata) ? resource.metadata : undefined;
  const name = metadata?.name;
  if (typeof name !== 'string' || name === '')
    problems.push({ field: 'metadata.name', value: name, expected: 'a non-empty name' });
  const namespace = metadata?.namespace;
  if (
    namespace !== undefined &&
    (typeof namespace !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace) || namespace.length > 63)
  ) {
    problems.push({
      field: 'metadata.namespace',
      value: namespace,
      expected: 'a DNS label (lower-case letters, digits and "-", at most 63)',
    });
  }
  if (resource.spec !== undefined && !isPlainObject(resource.spec))
    problems.push({ field: 'spec', value: resource.spec, expected: 'an object' });
  if (problems.length > 0 || !kind)
    throw new InvalidSpecError(
      `${typeof kindName === 'string' ? kindName : 'resource'} "${typeof name === 'string' ? name : ''}"`,
      problems,
    );
  return { kind, name: name as string, namespace: namespace as string | undefined, spec: resource.spec ?? {} };
}
