// Voluntary disruptions (node drains) take down one member at a time.
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import type { MySQLClusterContext } from './context.js';
import { objectMeta } from './context.js';
import { DATABASE_COMPONENT, databaseSelector } from './layout.js';

/**
 * Rendered whatever the replica count: with one member it allows the eviction (maxUnavailable 1)
 * and costs nothing, and the set of objects does not change when the cluster scales.
 */
export function disruptionBudget(scope: Construct, ctx: MySQLClusterContext): k8s.KubePodDisruptionBudget {
  return new k8s.KubePodDisruptionBudget(scope, 'DisruptionBudget', {
    metadata: objectMeta(ctx, ctx.names.disruptionBudget, DATABASE_COMPONENT),
    spec: {
      maxUnavailable: k8s.IntOrString.fromNumber(1),
      selector: { matchLabels: databaseSelector(ctx.names.cluster) },
      // A member that is not ready serves nothing; evicting it must not be blocked by the budget
      // (otherwise one broken replica blocks every node drain).
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  });
}
