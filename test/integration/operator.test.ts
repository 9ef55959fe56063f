import assert from 'node:assert/strict';
import type { KubernetesObject } from '../../constructs/index.js';
import { DEFAULT_OPERATOR_NAMESPACE } from '../../constructs/index.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { kubectl } from './support/kubectl.js';
import type { OperatorInstall } from './support/operator-manifests.js';
import { inNamespace, kindName, toYaml, withSynthesizedOperator } from './support/operator-manifests.js';

interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
  spec: Record<string, unknown>;
}
interface DeploymentLike extends KubernetesObject {
  spec: { template: PodTemplate };
}

const CLUSTER_SCOPED = new Set(['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding']);

describe('operator install manifests (dist/install.yaml) on a real API server', function () {
  this.timeout(120_000);
  const controlPlane = useSharedControlPlane();
  let credentialsNamespace: string;
  let install: OperatorInstall;

  before(async function () {
    this.timeout(180_000);
    credentialsNamespace = await freshNamespace('operator-credentials');
    install = await withSynthesizedOperator({ RECON8S_CREDENTIALS_NAMESPACES: credentialsNamespace }, (_dir, i) => i);
  });

  const dryRun = (objects: readonly KubernetesObject[]): { status: number | null; stderr: string } =>
    kubectl(
      controlPlane(),
      ['apply', '--server-side', '--dry-run=server', '--field-manager=recon8s-tests', '-f', '-'],
      toYaml(objects),
    );

  /** The install moved to a fresh namespace labelled exactly like the install's own Namespace. */
  const inFreshNamespace = async (prefix: string): Promise<{ namespace: string; objects: KubernetesObject[] }> => {
    const own = install.objects.find((o) => o.kind === 'Namespace');
    assert.ok(own, 'the install has a Namespace');
    const namespace = await freshNamespace(prefix, { labels: own.metadata.labels });
    return { namespace, objects: inNamespace(install.objects, DEFAULT_OPERATOR_NAMESPACE, namespace) };
  };

  it('is one file in dependency order: the Namespace, then the CRDs, then what lives in the namespace', () => {
    assert.deepEqual(install.files, ['install.yaml']);
    const kinds = install.objects.map((o) => o.kind);
    assert.deepEqual(kinds.slice(0, 3), ['Namespace', 'CustomResourceDefinition', 'CustomResourceDefinition']);
    for (const o of install.objects) {
      if (CLUSTER_SCOPED.has(o.kind)) assert.equal(o.metadata.namespace, undefined, `${kindName(o)} is cluster-scoped`);
      else assert.ok(o.metadata.namespace, `${kindName(o)} names its namespace`);
    }
    const last = (kind: string): number => kinds.lastIndexOf(kind);
    assert.ok(last('ServiceAccount') < kinds.indexOf('Deployment'), 'the ServiceAccount before the Deployment');
    assert.ok(
      Math.max(last('ClusterRoleBinding'), last('RoleBinding')) < kinds.indexOf('Deployment'),
      'RBAC before the Deployment',
    );
    const binding = install.objects.find(
      (o) => o.kind === 'RoleBinding' && o.metadata.namespace === credentialsNamespace,
    );
    assert.ok(binding, `a credentials RoleBinding in ${credentialsNamespace} (RECON8S_CREDENTIALS_NAMESPACES)`);
    // ... in a namespace the file never creates: its opening comment says to create it first.
    assert.ok(!install.objects.some((o) => o.kind === 'Namespace' && o.metadata.name === credentialsNamespace));
    assert.match(install.text, new RegExp(`^(# .*\\n)*# +kubectl create namespace ${credentialsNamespace}\\n`));
  });

  it('passes a server-side dry-run apply of every object, with no warning', async () => {
    const { objects } = await inFreshNamespace('operator-dry-run');
    const r = dryRun(objects);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), '', `warnings: ${r.stderr}`);
  });

  it('raises no Pod Security "restricted" warning, and its pods are admitted where "restricted" is enforced', async () => {
    const { namespace, objects } = await inFreshNamespace('operator-restricted');
    const deployment = objects.find((o): o is DeploymentLike => o.kind === 'Deployment');
    assert.ok(deployment);
    const r = dryRun([deployment]);
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /PodSecurity|violate/i, r.stderr);
    // A Deployment is only warned about; a Pod is refused outright under enforce. (Its ServiceAccount must exist.)
    const serviceAccount = objects.find((o) => o.kind === 'ServiceAccount');
    assert.ok(serviceAccount);
    const sa = kubectl(
      controlPlane(),
      ['apply', '--server-side', '--field-manager=recon8s-tests', '-f', '-'],
      toYaml([serviceAccount]),
    );
    assert.equal(sa.status, 0, sa.stderr);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'recon8s-template', namespace, labels: deployment.spec.template.metadata?.labels },
      spec: deployment.spec.template.spec,
    };
    const p = kubectl(controlPlane(), ['create', '--dry-run=server', '-f', '-'], JSON.stringify(pod));
    assert.equal(p.status, 0, p.stderr);
    assert.doesNotMatch(p.stderr, /PodSecurity|violate/i, p.stderr);
  });

  it('proves that check is live: the same Deployment running as root is warned about in its namespace', async () => {
    const { objects } = await inFreshNamespace('operator-canary');
    const deployment = objects.find((o): o is DeploymentLike => o.kind === 'Deployment');
    assert.ok(deployment);
    const root = structuredClone(deployment);
    root.spec.template.spec.securityContext = { runAsUser: 0, runAsNonRoot: false };
    const r = dryRun([root]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /would violate PodSecurity "restricted:latest"/);
  });
});
