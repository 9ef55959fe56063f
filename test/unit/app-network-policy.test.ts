// What an App's NetworkPolicy admits, judged by the rules of NetworkPolicy (networking.k8s.io/v1,
// test/unit/support/network-policy-judge.ts) on the pods render() makes: the App's own, other pods of
// its namespace and of others, addresses outside the cluster, a bound MySQLCluster's members. The
// enforcement itself is proven on the node with kube-router (test/e2e/mysql-network-policy.test.ts).
import assert from 'node:assert/strict';
import type { V1Deployment, V1NetworkPolicy, V1StatefulSet } from '@kubernetes/client-node';
import { render } from '../../constructs/index.js';
import type { KubernetesObject } from '../../constructs/index.js';
import type { AppSpec } from '../../constructs/app/spec.generated.js';
import { assertProblem, emptyValues, invalidApp } from './support/app-synth.js';
import type { Endpoint } from './support/network-policy-judge.js';
import { admits, admitsEgress } from './support/network-policy-judge.js';

const NS = 'shop';

interface Rendered {
  readonly policy: V1NetworkPolicy | undefined;
  /** The App's pod, as its Deployment's template labels it. */
  readonly pod: Endpoint;
}

function renderApp(spec: Partial<AppSpec> = {}, name = 'web'): Rendered {
  const objects = render({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    metadata: { name, namespace: NS },
    spec: { image: 'web:1', ...spec },
  });
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  assert.ok(policies.length <= 1, 'at most one NetworkPolicy');
  const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as V1Deployment;
  return {
    policy: policies[0] as unknown as V1NetworkPolicy | undefined,
    pod: { namespace: NS, labels: deployment.spec?.template.metadata?.labels ?? {} },
  };
}

function policyOf(r: Rendered): V1NetworkPolicy {
  assert.ok(r.policy, 'no NetworkPolicy');
  return r.policy;
}

const neighbour: Endpoint = { namespace: NS, labels: { app: 'other' } };
const frontend: Endpoint = { namespace: NS, labels: { tier: 'frontend' } };
const elsewhere: Endpoint = { namespace: 'ingress', labels: { app: 'ingress-nginx' } };
const internet: Endpoint = { namespace: '', labels: {}, ip: '203.0.113.7' };
const HTTP = { name: 'http', port: 80, targetPort: 8080 };

/** Which of `ports` (TCP) of the App's pod `source` may open. */
function open(r: Rendered, source: Endpoint, ports: readonly number[]): number[] {
  return ports.filter((p) => admits(policyOf(r), r.pod, source, p));
}

function member(cluster: string): Endpoint {
  const objects: KubernetesObject[] = render({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'MySQLCluster',
    metadata: { name: cluster, namespace: NS },
    spec: {},
  });
  const sts = objects.find((o) => o.kind === 'StatefulSet') as unknown as V1StatefulSet;
  return { namespace: NS, labels: sts.spec?.template.metadata?.labels ?? {} };
}

describe('App NetworkPolicy', () => {
  it('is rendered by default, named after the App, selecting exactly its pods, ingress only', () => {
    const r = renderApp({ ports: [HTTP] });
    const policy = policyOf(r);
    assert.equal(policy.metadata?.name, 'web');
    assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
    assert.ok(admits(policy, neighbour, r.pod, 8080), 'it isolates another pod');
    assert.ok(!admits(policy, r.pod, neighbour, 9999), 'it does not select the App\u2019s pods');
    // Another App of the namespace is not selected by this one's policy.
    assert.ok(admits(policy, renderApp({}, 'api').pod, neighbour, 9999));
  });

  it('admits the declared ports (the container side: targetPort) from anywhere, and closes every other port', () => {
    const r = renderApp({ ports: [HTTP, { name: 'grpc', port: 9090 }] });
    for (const source of [neighbour, elsewhere, internet])
      assert.deepEqual(open(r, source, [80, 8080, 9090, 8081, 22, 3306]), [8080, 9090], JSON.stringify(source));
  });

  it('admits a declared port on its protocol only', () => {
    const r = renderApp({ ports: [{ name: 'dns', port: 5353, protocol: 'UDP' }] });
    const policy = policyOf(r);
    assert.ok(admits(policy, r.pod, neighbour, 5353, 'UDP'));
    assert.ok(!admits(policy, r.pod, neighbour, 5353, 'TCP'));
  });

  it('admits no connection at all to an App without ports', () => {
    const r = renderApp();
    assert.deepEqual(policyOf(r).spec?.ingress, undefined);
    assert.deepEqual(open(r, neighbour, [80, 8080, 3306]), []);
  });

  it('admits only the sources networkPolicy.from names: pods of its namespace, namespaces, addresses', () => {
    const r = renderApp({
      ports: [HTTP],
      networkPolicy: {
        from: [
          { podSelector: { matchLabels: { tier: 'frontend' } } },
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } },
          { ipBlock: { cidr: '203.0.113.0/24', except: ['203.0.113.128/25'] } },
        ],
      },
    });
    assert.deepEqual(open(r, frontend, [8080, 8081]), [8080]);
    assert.deepEqual(open(r, elsewhere, [8080]), [8080]);
    assert.deepEqual(open(r, internet, [8080]), [8080]);
    assert.deepEqual(open(r, neighbour, [8080]), [], 'a pod the list does not name');
    assert.deepEqual(open(r, { ...frontend, namespace: 'intruder' }, [8080]), [], 'the labels in another namespace');
    assert.deepEqual(open(r, { ...internet, ip: '203.0.113.200' }, [8080]), [], 'an address of except');
  });

  it('leaves egress open by default, and with restrictEgress admits only DNS and the bound cluster\u2019s members on 3306', () => {
    const api: Endpoint = { namespace: 'payments', labels: { app: 'api' } };
    const dns: Endpoint = { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } };
    const open_ = renderApp({ database: { cluster: 'db', name: 'shop' } });
    assert.ok(admitsEgress(policyOf(open_), open_.pod, api, 443));
    assert.ok(admitsEgress(policyOf(open_), open_.pod, internet, 443));

    const r = renderApp({ database: { cluster: 'db', name: 'shop' }, networkPolicy: { restrictEgress: true } });
    const policy = policyOf(r);
    assert.deepEqual(policy.spec?.policyTypes, ['Ingress', 'Egress']);
    assert.ok(admitsEgress(policy, r.pod, dns, 53, 'UDP'));
    assert.ok(admitsEgress(policy, r.pod, dns, 53, 'TCP'));
    assert.ok(admitsEgress(policy, r.pod, member('db'), 3306));
    assert.ok(!admitsEgress(policy, r.pod, member('db'), 9080), 'the agent\u2019s port is not the App\u2019s');
    assert.ok(!admitsEgress(policy, r.pod, member('db2'), 3306), 'another cluster of the namespace');
    assert.ok(!admitsEgress(policy, r.pod, api, 443));
    assert.ok(!admitsEgress(policy, r.pod, internet, 443));
    // Without a database: DNS only.
    const unbound = renderApp({ networkPolicy: { restrictEgress: true } });
    assert.ok(!admitsEgress(policyOf(unbound), unbound.pod, member('db'), 3306));
    assert.ok(admitsEgress(policyOf(unbound), unbound.pod, dns, 53, 'UDP'));
  });

  it('keeps the App \u21d2 MySQLCluster connection: the bound pod reaches 3306 through both policies', () => {
    const mysqlPolicy = render({
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'MySQLCluster',
      metadata: { name: 'db', namespace: NS },
      spec: {},
    }).find((o) => o.kind === 'NetworkPolicy') as unknown as V1NetworkPolicy;
    for (const restrictEgress of [false, true]) {
      const r = renderApp({ database: { cluster: 'db', name: 'shop' }, networkPolicy: { restrictEgress } });
      assert.ok(admitsEgress(policyOf(r), r.pod, member('db'), 3306), `egress, restrictEgress ${restrictEgress}`);
      assert.ok(admits(mysqlPolicy, member('db'), r.pod, 3306), 'the cluster admits the bound pod');
    }
  });

  it('emits no empty list or map, whatever the spec leaves empty', () => {
    for (const spec of [
      {},
      { ports: [HTTP], networkPolicy: { from: [{ ipBlock: { cidr: '10.0.0.0/8', except: [] } }] } },
      { networkPolicy: { restrictEgress: true } },
    ])
      assert.deepEqual(emptyValues(policyOf(renderApp(spec))), [], JSON.stringify(spec));
  });

  it('renders no NetworkPolicy with networkPolicy.enabled false', () => {
    assert.equal(renderApp({ ports: [HTTP], networkPolicy: { enabled: false } }).policy, undefined);
  });

  it('refuses sources it cannot render as meant, naming the field', () => {
    assertProblem(invalidApp({ image: 'web:1', networkPolicy: { from: [] } }).error, {
      field: 'spec.networkPolicy.from',
      value: [],
      expected: /at least 1/,
    });
    assertProblem(invalidApp({ image: 'web:1', networkPolicy: { from: [{}] } }).error, {
      field: 'spec.networkPolicy.from[0]',
      value: {},
      expected: /one of podSelector, namespaceSelector or ipBlock/,
    });
    const mixed = { ipBlock: { cidr: '10.0.0.0/8' }, podSelector: { matchLabels: { a: 'b' } } };
    assertProblem(invalidApp({ image: 'web:1', networkPolicy: { from: [mixed] } }).error, {
      field: 'spec.networkPolicy.from[0].ipBlock',
      value: { cidr: '10.0.0.0/8' },
      expected: /ipBlock alone/,
    });
    for (const cidr of ['10.0.0.0', '10.0.0.0/33', 'example.com/8', '10.0.0.0/8; rm'])
      assertProblem(invalidApp({ image: 'web:1', networkPolicy: { from: [{ ipBlock: { cidr } }] } }).error, {
        field: 'spec.networkPolicy.from[0].ipBlock.cidr',
        value: cidr,
        expected: /CIDR/,
      });
    // The addresses it takes.
    for (const cidr of ['0.0.0.0/0', '10.1.2.0/24', 'fd00::/8', '::/0'])
      assert.ok(renderApp({ ports: [HTTP], networkPolicy: { from: [{ ipBlock: { cidr } }] } }).policy, cidr);
  });
});
