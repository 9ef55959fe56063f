// An App's NetworkPolicy: connections to its pods on the ports its spec declares, from any source or
// the ones `networkPolicy.from` names, and nothing else; egress left open unless `restrictEgress`.
// Ingress is fenced by default because the declared ports are, by the App's own spec, all it serves: a
// debug listener, an admin port or a sidecar's port nobody declared is closed. Egress is not, because
// what an application must reach (APIs, object stores, other Services, the cluster's DNS in whatever
// form the cluster runs it) is its own, and a default that guessed would break Apps on upgrade.
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { MYSQL_PORT, databaseSelector } from '../mysql/layout.js';
import type { ResolvedAppNetworkPolicyPeer, ResolvedAppSpec } from './spec.generated.js';

/** DNS, which every App resolves its Services through (kube-dns, CoreDNS, a node-local cache: anywhere). */
const DNS_PORT = 53;

/**
 * The NetworkPolicy `<name>` selecting the App's pods (`selector`): ingress on each declared port (its
 * targetPort and protocol) from `networkPolicy.from` (any source without it), none when the App has no
 * ports; with `restrictEgress`, egress only to DNS and to the bound MySQLCluster's members on 3306.
 * Undefined when `networkPolicy.enabled` is false.
 */
export function appNetworkPolicy(
  scope: Construct,
  metadata: k8s.ObjectMeta,
  spec: ResolvedAppSpec,
  selector: Readonly<Record<string, string>>,
): k8s.KubeNetworkPolicy | undefined {
  const np = spec.networkPolicy;
  if (!np.enabled) return undefined;
  const ports = (spec.ports ?? []).map((p): k8s.NetworkPolicyPort => ({
    protocol: p.protocol,
    port: k8s.IntOrString.fromNumber(p.targetPort ?? p.port),
  }));
  // No rule at all when nothing is declared (not a rule without ports, which would admit every port):
  // an Ingress policy without rules admits nothing.
  const ingress: k8s.NetworkPolicyIngressRule[] | undefined =
    ports.length === 0 ? undefined : [{ from: np.from?.map(peer), ports }];
  const egress: k8s.NetworkPolicyEgressRule[] | undefined = np.restrictEgress
    ? [
        {
          ports: (['UDP', 'TCP'] as const).map((protocol) => ({
            protocol,
            port: k8s.IntOrString.fromNumber(DNS_PORT),
          })),
        },
        ...(spec.database
          ? [
              {
                to: [{ podSelector: { matchLabels: databaseSelector(spec.database.cluster) } }],
                ports: [{ protocol: 'TCP', port: k8s.IntOrString.fromNumber(MYSQL_PORT) }],
              },
            ]
          : []),
      ]
    : undefined;
  return new k8s.KubeNetworkPolicy(scope, 'network-policy', {
    metadata,
    spec: {
      podSelector: { matchLabels: { ...selector } },
      policyTypes: egress ? ['Ingress', 'Egress'] : ['Ingress'],
      ingress,
      egress,
    },
  });
}

function peer(p: ResolvedAppNetworkPolicyPeer): k8s.NetworkPolicyPeer {
  // No empty `except`: an empty list would be a field the controller owns for nothing.
  if (p.ipBlock)
    return { ipBlock: { cidr: p.ipBlock.cidr, except: p.ipBlock.except?.length ? [...p.ipBlock.except] : undefined } };
  return {
    podSelector: p.podSelector && { matchLabels: { ...p.podSelector.matchLabels } },
    namespaceSelector: p.namespaceSelector && { matchLabels: { ...p.namespaceSelector.matchLabels } },
  };
}
