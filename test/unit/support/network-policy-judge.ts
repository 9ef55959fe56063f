// What a NetworkPolicy (networking.k8s.io/v1) admits, judged by its rules on pods as render() makes
// them: for the tests of the policies recon8s renders (MySQLCluster, App). matchLabels selectors only;
// an address (ipBlock) only for a source or destination outside the cluster's pods. The enforcement
// itself is proven on the node (test/e2e/mysql-network-policy.test.ts, with kube-router).
import assert from 'node:assert/strict';
import type {
  V1LabelSelector,
  V1NetworkPolicy,
  V1NetworkPolicyPeer,
  V1NetworkPolicyPort,
} from '@kubernetes/client-node';

/** A pod (its namespace and labels), or an address outside the cluster's pods. */
export interface Endpoint {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  /** An IPv4 address, for an endpoint an ipBlock may match; a pod is judged by its labels. */
  readonly ip?: string;
}

export function matches(selector: V1LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  assert.equal(selector?.matchExpressions, undefined, 'only matchLabels are judged here');
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

const ipv4 = (a: string): number => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
function inCidr(ip: string, cidr: string): boolean {
  const [net = '', bits = '32'] = cidr.split('/');
  assert.ok(!net.includes(':') && !ip.includes(':'), 'IPv4 only here');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipv4(ip) / size) === Math.floor(ipv4(net) / size);
}

/** Whether `peer` of a policy in `ns` matches `e`. */
function peerMatches(peer: V1NetworkPolicyPeer, ns: string, e: Endpoint): boolean {
  if (peer.ipBlock)
    return (
      e.ip !== undefined &&
      inCidr(e.ip, peer.ipBlock.cidr) &&
      !(peer.ipBlock.except ?? []).some((x) => inCidr(e.ip ?? '', x))
    );
  if (peer.namespaceSelector === undefined) return e.namespace === ns && matches(peer.podSelector, e.labels);
  return (
    matches(peer.namespaceSelector, { 'kubernetes.io/metadata.name': e.namespace }) &&
    (peer.podSelector === undefined || matches(peer.podSelector, e.labels))
  );
}

function portMatches(ports: readonly V1NetworkPolicyPort[] | undefined, port: number, protocol: string): boolean {
  return (
    (ports ?? []).length === 0 ||
    (ports ?? []).some((p) => (p.protocol ?? 'TCP') === protocol && (p.port === undefined || p.port === port))
  );
}

/** Whether the policy lets `source` open a connection to `port` of `target` (judged by this policy alone). */
export function admits(
  policy: V1NetworkPolicy,
  target: Endpoint,
  source: Endpoint,
  port: number,
  protocol = 'TCP',
): boolean {
  const spec = policy.spec;
  assert.ok(spec);
  const ns = policy.metadata?.namespace;
  assert.ok(ns, 'the policy has a namespace');
  if (target.namespace !== ns || !matches(spec.podSelector, target.labels)) return true; // not isolated by it
  if (!(spec.policyTypes ?? ['Ingress']).includes('Ingress')) return true;
  return (spec.ingress ?? []).some((rule) => {
    if (!portMatches(rule.ports, port, protocol)) return false;
    // The JSON's `from` (client-node's model calls it _from).
    const from = (rule as { from?: V1NetworkPolicyPeer[] }).from ?? [];
    return from.length === 0 || from.some((peer) => peerMatches(peer, ns, source));
  });
}

/** Whether the policy lets `source` (a pod it may select) open a connection to `port` of `destination`. */
export function admitsEgress(
  policy: V1NetworkPolicy,
  source: Endpoint,
  destination: Endpoint,
  port: number,
  protocol = 'TCP',
): boolean {
  const spec = policy.spec;
  assert.ok(spec);
  const ns = policy.metadata?.namespace;
  assert.ok(ns, 'the policy has a namespace');
  if (source.namespace !== ns || !matches(spec.podSelector, source.labels)) return true;
  if (!(spec.policyTypes ?? []).includes('Egress')) return true;
  return (spec.egress ?? []).some((rule) => {
    if (!portMatches(rule.ports, port, protocol)) return false;
    const to = rule.to ?? [];
    return to.length === 0 || to.some((peer) => peerMatches(peer, ns, destination));
  });
}
