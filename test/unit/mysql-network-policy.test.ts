// What a MySQLCluster's NetworkPolicy admits to its members, judged by the rules of NetworkPolicy
// (networking.k8s.io/v1, test/unit/support/network-policy-judge.ts) on pods as render() makes them: the
// App's own pod template, the backup job's, the member's. The enforcement itself is proven on the node (test/e2e/mysql-network-policy.test.ts).
import assert from 'node:assert/strict';
import type { V1CronJob, V1Deployment, V1NetworkPolicy, V1StatefulSet } from '@kubernetes/client-node';
import { MYSQL_AGENT_PORT, MYSQL_AGENT_TLS_PORT, render } from '../../constructs/index.js';
import type { KubernetesObject, RenderInstall } from '../../constructs/index.js';
import type { MySQLClusterSpec } from '../../constructs/mysql/spec.generated.js';
import type { AppSpec } from '../../constructs/app/spec.generated.js';
import { assertProblem, invalidApp } from './support/app-synth.js';
import { InvalidSpecError } from '../../constructs/schema/validate.js';
import { CONTROLLER_USAGE } from '../../lib/cli/controller-command.js';
import { operatorPods } from '../../lib/cli/operator-pods.js';
import type { Endpoint } from './support/network-policy-judge.js';
import { admits, matches } from './support/network-policy-judge.js';

const NS = 'shop';
const BACKUP = { schedule: '0 3 * * *', persistentVolumeClaimName: 'backups' };

type Source = Endpoint;

function mysql(spec: MySQLClusterSpec = {}, install?: RenderInstall): KubernetesObject[] {
  return render(
    { apiVersion: 'recon8s.dev/v1alpha1', kind: 'MySQLCluster', metadata: { name: 'db', namespace: NS }, spec },
    install,
  );
}

function app(name: string, spec: Partial<AppSpec> = {}): Source {
  const objects = render({
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    metadata: { name, namespace: NS },
    spec: { image: 'web:1', ...spec },
  });
  const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as V1Deployment;
  return { namespace: NS, labels: deployment.spec?.template.metadata?.labels ?? {} };
}

function policyOf(objects: readonly KubernetesObject[]): V1NetworkPolicy {
  const found = objects.filter((o) => o.kind === 'NetworkPolicy');
  assert.equal(found.length, 1, 'one NetworkPolicy');
  return found[0] as unknown as V1NetworkPolicy;
}

function member(objects: readonly KubernetesObject[]): Source {
  const sts = objects.find((o) => o.kind === 'StatefulSet') as unknown as V1StatefulSet;
  return { namespace: NS, labels: sts.spec?.template.metadata?.labels ?? {} };
}

function backupJob(objects: readonly KubernetesObject[]): Source {
  const cron = objects.find((o) => o.kind === 'CronJob') as unknown as V1CronJob;
  return { namespace: NS, labels: cron.spec?.jobTemplate.spec?.template.metadata?.labels ?? {} };
}

const OPERATOR = {
  namespace: 'recon8s-system',
  labels: { 'app.kubernetes.io/name': 'recon8s', 'app.kubernetes.io/component': 'controller' },
};
const PORTS = { mysql: 3306, agent: MYSQL_AGENT_PORT, agentTls: MYSQL_AGENT_TLS_PORT, metrics: 9104 } as const;

/** The ports of a member the source may open, by name. */
function openPorts(objects: readonly KubernetesObject[], source: Source): string[] {
  const policy = policyOf(objects);
  const target = member(objects);
  return Object.entries(PORTS)
    .filter(([, port]) => admits(policy, target, source, port))
    .map(([name]) => name);
}

describe('MySQLCluster NetworkPolicy', () => {
  it('isolates the members (ingress only, selected by the database selector) and is named <name>-mysql', () => {
    const objects = mysql();
    const policy = policyOf(objects);
    assert.equal(policy.metadata?.name, 'db-mysql');
    assert.equal(policy.metadata?.namespace, NS);
    assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
    assert.deepEqual(policy.spec?.podSelector?.matchLabels, {
      'app.kubernetes.io/name': 'mysql',
      'app.kubernetes.io/instance': 'db',
      'app.kubernetes.io/component': 'database',
    });
    assert.ok(matches(policy.spec?.podSelector, member(objects).labels), 'it selects the members');
    assert.ok(!matches(policy.spec?.podSelector, backupJob(mysql({ backup: BACKUP })).labels), 'never the backup jobs');
  });

  it('admits the members to each other on 3306 only (replication, clone, the agents\u2019 looks at their peers: all SQL)', () => {
    const objects = mysql();
    assert.deepEqual(openPorts(objects, member(objects)), ['mysql']);
  });

  it('admits the pods of an App bound to the cluster on 3306 only, and refuses an App that is not bound', () => {
    const objects = mysql();
    assert.deepEqual(openPorts(objects, app('web', { database: { cluster: 'db', name: 'shop' } })), ['mysql']);
    assert.deepEqual(openPorts(objects, app('other')), []);
    // Bound to another cluster of the namespace: not to this one.
    assert.deepEqual(openPorts(objects, app('elsewhere', { database: { cluster: 'db2', name: 'shop' } })), []);
  });

  it('labels a bound App\u2019s pods recon8s.dev/mysql-cluster=<cluster>, and refuses that label from the user', () => {
    assert.equal(app('web', { database: { cluster: 'db', name: 'shop' } }).labels['recon8s.dev/mysql-cluster'], 'db');
    assert.equal(app('other').labels['recon8s.dev/mysql-cluster'], undefined);
    const { error } = invalidApp({ image: 'web:1', labels: { 'recon8s.dev/mysql-cluster': 'db' } });
    assertProblem(error, {
      field: 'spec.labels',
      value: { 'recon8s.dev/mysql-cluster': 'db' },
      expected: /no key recon8s\.dev\/mysql-cluster/,
    });
  });

  it('refuses a pod of another namespace that carries the bound label or the members\u2019 labels', () => {
    const objects = mysql();
    const web = app('web', { database: { cluster: 'db', name: 'shop' } });
    assert.deepEqual(openPorts(objects, { ...web, namespace: 'intruder' }), []);
    assert.deepEqual(openPorts(objects, { ...member(objects), namespace: 'intruder' }), []);
  });

  it('admits its backup, binary-log and verification jobs on 3306 only', () => {
    const objects = mysql({ backup: BACKUP });
    assert.deepEqual(openPorts(objects, backupJob(objects)), ['mysql']);
    // Another cluster's backup job is not this cluster's.
    assert.deepEqual(
      openPorts(
        objects,
        backupJob(
          render({
            apiVersion: 'recon8s.dev/v1alpha1',
            kind: 'MySQLCluster',
            metadata: { name: 'other', namespace: NS },
            spec: { backup: BACKUP },
          }),
        ),
      ),
      [],
    );
  });

  it('admits the operator from the install\u2019s namespace (any pod of recon8s-system by default) on 3306 and the agent\u2019s TLS port, never its plain HTTP port', () => {
    const objects = mysql();
    assert.deepEqual(openPorts(objects, OPERATOR), ['mysql', 'agentTls']);
    assert.deepEqual(openPorts(objects, { namespace: 'recon8s-system', labels: {} }), ['mysql', 'agentTls']);
    assert.deepEqual(openPorts(objects, { namespace: 'kube-system', labels: OPERATOR.labels }), []);
  });

  it('admits the operator the controller names (its namespace and pod labels) and no other pod of that namespace', () => {
    const objects = mysql({}, { operator: { namespace: 'ops', podLabels: OPERATOR.labels } });
    assert.deepEqual(openPorts(objects, { namespace: 'ops', labels: OPERATOR.labels }), ['mysql', 'agentTls']);
    assert.deepEqual(openPorts(objects, { namespace: 'ops', labels: { app: 'other' } }), []);
    assert.deepEqual(openPorts(objects, OPERATOR), [], 'not recon8s-system any more');
  });

  it('opens the metrics port only with monitoring: from any namespace, or from the metricsNamespaces named', () => {
    const prometheus = { namespace: 'monitoring', labels: { app: 'prometheus' } };
    assert.deepEqual(openPorts(mysql(), prometheus), []);
    assert.deepEqual(openPorts(mysql({ monitoring: { enabled: true } }), prometheus), ['metrics']);
    const named = mysql({ monitoring: { enabled: true }, networkPolicy: { metricsNamespaces: ['monitoring'] } });
    assert.deepEqual(openPorts(named, prometheus), ['metrics']);
    assert.deepEqual(openPorts(named, { namespace: 'elsewhere', labels: {} }), []);
    // A bound App gets no more than 3306 from it.
    assert.deepEqual(openPorts(named, app('web', { database: { cluster: 'db', name: 'shop' } })), ['mysql']);
  });

  it('follows monitoring.port', () => {
    const objects = mysql({ monitoring: { enabled: true, port: 9200 } });
    const policy = policyOf(objects);
    const anyone = { namespace: 'monitoring', labels: {} };
    assert.ok(admits(policy, member(objects), anyone, 9200));
    assert.ok(!admits(policy, member(objects), anyone, 9104));
  });

  it('renders no NetworkPolicy with networkPolicy.enabled false', () => {
    const objects = mysql({ networkPolicy: { enabled: false } });
    assert.equal(objects.filter((o) => o.kind === 'NetworkPolicy').length, 0);
  });

  it('refuses an empty metricsNamespaces (an empty list of sources would admit every source) and a bad namespace, naming the field', () => {
    for (const metricsNamespaces of [[], ['Not_A_Namespace']]) {
      assert.throws(
        () => mysql({ monitoring: { enabled: true }, networkPolicy: { metricsNamespaces } }),
        (e: unknown) => e instanceof InvalidSpecError && /networkPolicy\.metricsNamespaces/.test(e.message),
      );
    }
  });
});

describe('recon8s controller --operator-namespace, --operator-pod-labels', () => {
  it('admits the namespace the controller runs in ($POD_NAMESPACE) unless told, else recon8s-system', () => {
    assert.deepEqual(operatorPods(undefined, undefined, 'ops', CONTROLLER_USAGE), { namespace: 'ops' });
    assert.deepEqual(operatorPods(undefined, undefined, undefined, CONTROLLER_USAGE), { namespace: 'recon8s-system' });
    assert.deepEqual(operatorPods('other', 'app.kubernetes.io/name=recon8s,tier=control', 'ops', CONTROLLER_USAGE), {
      namespace: 'other',
      podLabels: { 'app.kubernetes.io/name': 'recon8s', tier: 'control' },
    });
  });

  it('refuses a namespace or a label it cannot put in a selector, naming the flag and the value', () => {
    assert.throws(
      () => operatorPods('Bad_NS', undefined, undefined, CONTROLLER_USAGE),
      /--operator-namespace .*"Bad_NS"/,
    );
    for (const labels of ['noequals', '=v', 'k=bad value', 'k=v,,'])
      assert.throws(() => operatorPods('ops', labels, undefined, CONTROLLER_USAGE), /--operator-pod-labels .*got/);
  });
});
