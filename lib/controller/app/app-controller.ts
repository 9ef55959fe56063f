// App: a Deployment and its companions; nothing to prepare, nothing to recover, status from the Deployment
// and its pods.
import type { V1Pod } from '@kubernetes/client-node';
import type { KubernetesObject } from '../../../constructs/index.js';
import { APP, MANAGED_BY, MYSQL_CLUSTER } from '../../../constructs/index.js';
import { workloadConditions, workloadFigures } from '../../reconcile/workload-conditions.js';
import type { CustomResource, KindController, LiveLookup, ObservedState } from '../kind-controller.js';
import { compact, controlledBy, find, podsControlledBy, selectorString, serviceEndpoint } from '../status.js';
import type { BindingFacts } from './database-binding.js';
import { observeBinding, prepareBinding } from './database-binding.js';
import { refusedReferences } from './reference-policy.js';
import type { CredentialRotationStatus } from './binding-rotation.js';
import { rolledRevision } from './binding-rotation.js';

/**
 * An App's pods carry these labels (the MySQL pods, an `app.kubernetes.io/component`, which an App's
 * labels never have: the spec refuses user labels under app.kubernetes.io/).
 */
/** The Degraded reason of an App whose pods would name a ServiceAccount or Secret the install does not allow. */
export const REFERENCE_NOT_ALLOWED = 'ReferenceNotAllowed';

export const APP_POD_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY},!app.kubernetes.io/component`;

/** What an App's Deployment and Service report. */
export function observeApp(
  cr: CustomResource,
  rendered: readonly KubernetesObject[],
  live: LiveLookup,
  pods: readonly V1Pod[] = [],
): ObservedState {
  const namespace = cr.metadata.namespace ?? '';
  const deployment = find(rendered, 'Deployment');
  const liveDeployment = deployment && live('apps/v1', 'Deployment', deployment.metadata.name);
  // With an autoscaler the Deployment's replicas are the autoscaler's to set.
  const desired =
    (deployment?.spec as { replicas?: number } | undefined)?.replicas ??
    (liveDeployment as { spec?: { replicas?: number } } | undefined)?.spec?.replicas ??
    (cr.spec?.autoscaling as { minReplicas?: number } | undefined)?.minReplicas ??
    1;
  const figures = workloadFigures(liveDeployment, desired);
  return {
    fields: compact({
      desiredReplicas: desired,
      replicas: figures?.replicas ?? 0,
      // Only what the rollout delivered: kubectl's READY column must not count the old pods of a stuck rollout.
      readyReplicas: figures?.updatedAvailable ?? 0,
      selector: selectorString(deployment),
      endpoint: serviceEndpoint(find(rendered, 'Service'), namespace),
    }),
    conditions: workloadConditions('Deployment', figures),
    pods:
      deployment && controlledBy(liveDeployment, cr.metadata.uid) ? deploymentPods(pods, deployment.metadata.name) : [],
  };
}

/**
 * The pods of a Deployment's ReplicaSets (named `<deployment>-<pod-template-hash>`), old and new: during
 * a rollout an old pod that crashes is as much a problem as a new one that cannot start.
 */
export function deploymentPods(pods: readonly V1Pod[], deployment: string): V1Pod[] {
  return podsControlledBy(
    pods,
    (ref, pod) =>
      ref.kind === 'ReplicaSet' &&
      ref.apiVersion === 'apps/v1' &&
      ref.name === `${deployment}-${pod.metadata?.labels?.['pod-template-hash'] ?? ''}`,
  );
}

export const APP_CONTROLLER: KindController<BindingFacts> = {
  definition: APP,
  // The ServiceAccounts and Secrets the install lets an App's pods name (reference-policy.ts).
  admit: (cr, rendered, install) =>
    refusedReferences(cr, rendered, install.appReferences).map((message) => ({
      reason: REFERENCE_NOT_ALLOWED,
      message,
    })),
  // The database binding (spec.database): its Secret, and whether the account is ready.
  prepare: prepareBinding,
  refersTo: {
    kind: MYSQL_CLUSTER.kind,
    name: (cr) => (cr.spec as { database?: { cluster?: string } } | undefined)?.database?.cluster,
  },
  observe: (cr, rendered, live, prepared, pods) => {
    const observed = observeApp(cr, rendered, live, pods);
    const binding = observeBinding(prepared.facts);
    // A rotation waits for every pod to run the new password's template: said here, from the pods.
    const rotation = binding.fields.credentialRotation as CredentialRotationStatus | undefined;
    const deployment = find(rendered, 'Deployment');
    const rolled = rotation
      ? rolledRevision(cr, deployment && live('apps/v1', 'Deployment', deployment.metadata.name), observed.pods ?? [])
      : undefined;
    return {
      ...observed,
      fields: {
        ...observed.fields,
        ...binding.fields,
        ...(rotation ? { credentialRotation: { ...rotation, ...(rolled ? { rolledRevision: rolled } : {}) } } : {}),
      },
      conditions: [...observed.conditions, ...binding.conditions],
    };
  },
  pods: { selector: APP_POD_SELECTOR },
};
