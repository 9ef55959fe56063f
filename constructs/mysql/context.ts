// What every part of a MySQLCluster is rendered from, and the metadata they all carry.
import type { k8s } from 'cdk8s-plus-28';
import { objectAnnotations, objectLabels } from '../common/metadata.js';
import type { ResolvedMySQLClusterSpec } from './spec.generated.js';
import type { MySQLClusterNames } from './layout.js';
import { APP_NAME, clusterNames } from './layout.js';

export interface MySQLClusterContext {
  readonly spec: ResolvedMySQLClusterSpec;
  readonly names: MySQLClusterNames;
  /** The image every container of the cluster runs: the official image of the version by default. */
  readonly image: string;
}

export function clusterContext(cluster: string, spec: ResolvedMySQLClusterSpec): MySQLClusterContext {
  return {
    spec,
    names: clusterNames(cluster, spec.credentialsSecretName, spec.tlsSecretName),
    image: spec.image ?? `mysql:${spec.version}`,
  };
}

/** The labels of an object or pod template of this cluster: the user's, then ours. */
export function clusterLabels(ctx: MySQLClusterContext, component: string): Record<string, string> {
  return objectLabels({ name: APP_NAME, instance: ctx.names.cluster, component }, ctx.spec.labels);
}

/** The metadata of a top-level object. No namespace: the chart's applies. */
export function objectMeta(ctx: MySQLClusterContext, name: string, component: string): k8s.ObjectMeta {
  return { name, labels: clusterLabels(ctx, component), annotations: objectAnnotations(ctx.spec.annotations) };
}

/** A container env var read from the credentials Secret: passwords never appear in a manifest. */
export function secretEnv(ctx: MySQLClusterContext, name: string, key: string): k8s.EnvVar {
  return { name, valueFrom: { secretKeyRef: { name: ctx.names.credentialsSecret, key } } };
}
