// The members' NetworkPolicy: who may open a connection to a member, on which port. Ingress only:
// members, jobs and the agent reach out to the object store, DNS and the API server, which are the
// install's to fence, and an egress policy here would break them on every cluster that differs.
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import type { OperatorPods } from '../common/operator-install.js';
import type { MySQLClusterContext } from './context.js';
import { objectMeta } from './context.js';
import {
  AGENT_TLS_PORT,
  BOUND_CLUSTER_LABEL,
  DATABASE_COMPONENT,
  MYSQL_PORT,
  backupSelector,
  databaseSelector,
} from './layout.js';

/** The label every namespace carries with its own name (set by the API server since Kubernetes 1.22). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * Admits to the members: each other (replication, clones and the agents' looks at their peers, all SQL
 * on 3306), the operator's controller (SQL on 3306, its questions
 * to the agents on their TLS port), the cluster's own backup, binary-log and verification jobs (3306),
 * the pods of Apps bound to the cluster (3306) and, with monitoring, scrapers of the metrics port from
 * `networkPolicy.metricsNamespaces` (any namespace when none is named). The agent's plain HTTP port is
 * admitted from no pod: it serves the kubelet's probes, which come from the node (which NetworkPolicies
 * always admit), and the preStop hook, from the pod's own loopback.
 * Undefined when `networkPolicy.enabled` is false.
 */
export function networkPolicy(
  scope: Construct,
  ctx: MySQLClusterContext,
  operator: OperatorPods,
): k8s.KubeNetworkPolicy | undefined {
  const { spec, names } = ctx;
  if (!spec.networkPolicy.enabled) return undefined;
  const tcp = (...ports: number[]): k8s.NetworkPolicyPort[] =>
    ports.map((port) => ({ protocol: 'TCP', port: k8s.IntOrString.fromNumber(port) }));
  const pods = (labels: Readonly<Record<string, string>>): k8s.NetworkPolicyPeer => ({
    podSelector: { matchLabels: { ...labels } },
  });
  const namespace = (name: string): k8s.LabelSelector => ({ matchLabels: { [NAMESPACE_NAME_LABEL]: name } });
  const ingress: k8s.NetworkPolicyIngressRule[] = [
    { from: [pods(databaseSelector(names.cluster))], ports: tcp(MYSQL_PORT) },
    {
      from: [
        {
          namespaceSelector: namespace(operator.namespace),
          // Without labels, the namespace alone: every pod of it.
          podSelector: operator.podLabels ? { matchLabels: { ...operator.podLabels } } : undefined,
        },
      ],
      ports: tcp(MYSQL_PORT, AGENT_TLS_PORT),
    },
    {
      from: [pods(backupSelector(names.cluster)), pods({ [BOUND_CLUSTER_LABEL]: names.cluster })],
      ports: tcp(MYSQL_PORT),
    },
  ];
  if (spec.monitoring.enabled) {
    const scrapers = spec.networkPolicy.metricsNamespaces;
    ingress.push({
      // No `from`: any source, on this port only.
      from: scrapers?.map((n) => ({ namespaceSelector: namespace(n) })),
      ports: tcp(spec.monitoring.port),
    });
  }
  return new k8s.KubeNetworkPolicy(scope, 'network-policy', {
    metadata: objectMeta(ctx, names.networkPolicy, DATABASE_COMPONENT),
    spec: { podSelector: { matchLabels: databaseSelector(names.cluster) }, policyTypes: ['Ingress'], ingress },
  });
}
