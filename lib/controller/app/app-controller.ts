// App: a Deployment and its companions; nothing to prepare, nothing to recover, status from the Deployment.
import type { KubernetesObject } from '../../../constructs/index.js';
import { APP } from '../../../constructs/index.js';
import { workloadConditions, workloadFigures } from '../../reconcile/status.js';
import type { KindController } from '../kind-controller.js';
import type { CustomResource, LiveLookup, ObservedState } from '../status.js';
import { compact, find, selectorString, serviceEndpoint } from '../status.js';

/** What an App's Deployment and Service report. */
export function observeApp(cr: CustomResource, rendered: readonly KubernetesObject[], live: LiveLookup): ObservedState {
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
  };
}

export const APP_CONTROLLER: KindController = {
  definition: APP,
  observe: (cr, rendered, live) => observeApp(cr, rendered, live),
};
