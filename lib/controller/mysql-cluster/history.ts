// The cluster's history, as the members' bootstrap can see it: a ConfigMap (`<name>-history`) the
// controller creates once the cluster has a primary, and never changes. A member's bootstrap reads it
// (an optional environment variable, constructs/mysql/statefulset.ts) and, once it exists, never
// initializes an empty data directory as a new database: it waits for a primary holding the data and
// clones it (constructs/mysql/scripts/bootstrap.sh). Without it, ordinal 0 restarted with a lost volume
// while no primary answered (every pod restarted at once, the controller down) started an empty
// database that the controller then found as the recorded primary.
//
// Not rendered: what it says (the cluster has a history) is known only to the controller, and a
// cdk8s user's synthesized manifests must start a new cluster as ever. Owned by the MySQLCluster
// (garbage collected with it, as its status is) and labelled as recon8s's (the controller watches
// it), but not an ApplySet member: never pruned.
import type { KubernetesObject } from '@kubernetes/client-node';
import { MANAGED_BY, MYSQL_HISTORY_KEYS, mysqlClusterNames } from '../../../constructs/index.js';
import type { KubeClient } from '../../kube/index.js';
import { HttpMethod, isAlreadyExists } from '../../kube/index.js';
import type { CustomResource, LiveLookup } from '../kind-controller.js';
import { controllerReference } from '../status.js';

/** The history ConfigMap as it is created: `firstPrimary` is the member first recorded as the primary. */
export function historyConfigMap(cr: CustomResource, firstPrimary: string): KubernetesObject & { data: object } {
  const name = cr.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: mysqlClusterNames(name).history,
      namespace: cr.metadata.namespace ?? 'default',
      labels: { 'app.kubernetes.io/managed-by': MANAGED_BY, 'app.kubernetes.io/instance': name },
      ...(cr.metadata.uid ? { ownerReferences: [controllerReference(cr)] } : {}),
    },
    data: { [MYSQL_HISTORY_KEYS.firstPrimary]: firstPrimary },
  };
}

/**
 * Makes sure the history ConfigMap exists once `primary` is recorded: nothing is sent when the cache has
 * it (none at steady state); one that exists already (created a moment ago, or by anyone) is kept as it
 * is. Returns whether it was created now.
 */
export async function recordHistory(
  client: KubeClient,
  cr: CustomResource,
  live: LiveLookup,
  primary: string,
  leading: () => void,
): Promise<boolean> {
  const name = mysqlClusterNames(cr.metadata.name).history;
  if (live('v1', 'ConfigMap', name)) return false;
  leading();
  try {
    await client.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${cr.metadata.namespace ?? 'default'}/configmaps`,
      body: JSON.stringify(historyConfigMap(cr, primary)),
      headers: { 'Content-Type': 'application/json' },
    });
    return true;
  } catch (e) {
    if (isAlreadyExists(e)) return false;
    throw e;
  }
}
