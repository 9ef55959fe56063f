// What the HA manager (lib/controller/mysql-cluster) needs of a MySQLCluster's spec, resolved in the
// one place the construct resolves it: the schema's defaults, and the one default that depends on
// another field (semi-synchronous acknowledgements: half the members), so that the two never differ.
import { resolveSpec } from '../schema/kind.js';
import type { ResolvedMySQLClusterSpec } from './spec.generated.js';
import { MYSQL_CLUSTER } from './spec.js';

/**
 * spec with every default applied, validated as the construct validates it.
 * @throws InvalidSpecError listing every problem.
 */
export function resolveMySQLClusterSpec(name: string, spec: unknown): ResolvedMySQLClusterSpec {
  return resolveSpec<ResolvedMySQLClusterSpec>(MYSQL_CLUSTER, name, spec);
}

/**
 * The replicas that must have received a commit before it is acknowledged: spec.semiSyncReplicas, by
 * default half the members rounded down; never as many as the members (the primary cannot acknowledge
 * for itself).
 */
export function semiSyncWaitCount(spec: Pick<ResolvedMySQLClusterSpec, 'replicas' | 'semiSyncReplicas'>): number {
  return Math.min(spec.semiSyncReplicas ?? Math.floor(spec.replicas / 2), Math.max(spec.replicas - 1, 0));
}
