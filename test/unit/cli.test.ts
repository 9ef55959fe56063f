import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../support/run.js';

interface Obj {
  kind: string;
  metadata: { name: string };
  spec: Record<string, unknown>;
}

const NGINX = `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata:
  name: nginx
  namespace: shop
spec:
  image: nginx
  replicas: 2
  env:
    - name: GREETING
      value: hello
  resources:
    requests: { cpu: 250m, memory: 64Mi }
    limits: { memory: 128Mi }
  ports:
    - name: http
      port: 8080
      targetPort: 80
`;

describe('recon8s render', function () {
  this.timeout(60_000);
  let dir: string;
  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'recon8s-cli-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints a Deployment and a Service with exactly the values of the App', () => {
    const r = runCli(['render', '-f', file('nginx.yaml', NGINX)]);
    assert.equal(r.status, 0, r.stderr);
    const objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj);
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
      'Deployment/nginx',
      'NetworkPolicy/nginx',
      'PodDisruptionBudget/nginx',
      'Service/nginx',
    ]);
    const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as {
      spec: {
        replicas: number;
        template: {
          spec: {
            containers: { image: string; env: unknown; resources: unknown; ports: { containerPort: number }[] }[];
          };
        };
      };
    };
    const container = deployment.spec.template.spec.containers[0];
    assert.equal(deployment.spec.replicas, 2);
    assert.equal(container?.image, 'nginx');
    assert.deepEqual(container?.env, [{ name: 'GREETING', value: 'hello' }]);
    assert.deepEqual(container?.resources, { requests: { cpu: '250m', memory: '64Mi' }, limits: { memory: '128Mi' } });
    assert.deepEqual(
      container?.ports.map((p) => p.containerPort),
      [80],
    );
    const service = objects.find((o) => o.kind === 'Service') as unknown as { spec: { ports: unknown[] } };
    assert.deepEqual(service.spec.ports, [{ name: 'http', port: 8080, protocol: 'TCP', targetPort: 80 }]);
  });

  it('fails (exit 1) on a MySQLCluster name that leaves no room for its backup CronJob, as admission does', () => {
    const name = 'b'.repeat(46);
    const cluster = `apiVersion: recon8s.dev/v1alpha1\nkind: MySQLCluster\nmetadata: { name: ${name} }\nspec:\n  backup: { schedule: "@daily", persistentVolumeClaimName: dumps }\n`;
    const r = runCli(['render', '-f', file('long.yaml', cluster)]);
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `metadata\\.name: got "${name}", expected at most 45 characters, so that the backup CronJob "<name>-backup" \\(at most 52 characters\\) fits`,
      ),
    );
  });

  it('prints a JSON List with -o json', () => {
    const r = runCli(['render', '-f', file('nginx.yaml', NGINX), '-o', 'json']);
    assert.equal(r.status, 0, r.stderr);
    const list = JSON.parse(r.stdout) as { kind: string; items: Obj[] };
    assert.equal(list.kind, 'List');
    assert.ok(list.items.some((o) => o.kind === 'Deployment'));
  });

  it('reads JSON and standard input', () => {
    const json = JSON.stringify({
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'App',
      metadata: { name: 'api' },
      spec: { image: 'busybox' },
    });
    const r = runCli(['render', '-f', '-'], { input: json });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /kind: Deployment/);
    assert.doesNotMatch(r.stdout, /kind: Service/);
  });

  it('renders every document of a multi-document file', () => {
    const two = `${NGINX}---\napiVersion: recon8s.dev/v1alpha1\nkind: MySQLCluster\nmetadata:\n  name: db\nspec:\n  replicas: 1\n`;
    const r = runCli(['render', '-f', file('two.yaml', two)]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /kind: StatefulSet/);
    assert.match(r.stdout, /kind: Deployment/);
  });

  it('fails on an invalid resource with every problem named, and prints nothing', () => {
    const bad =
      'apiVersion: recon8s.dev/v1alpha1\nkind: MySQLCluster\nmetadata:\n  name: db\nspec:\n  replicas: 12\n  version: "8.0"\n  storage: { size: lots }\n';
    const r = runCli(['render', '-f', file('bad.yaml', bad)]);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /spec\.replicas: got 12, expected an integer from 1 to 9/);
    assert.match(r.stderr, /spec\.version: got "8\.0", expected .*end-of-life/);
    assert.match(r.stderr, /spec\.storage\.size: got "lots", expected a Kubernetes quantity/);
  });

  it('renders the MySQLCluster NetworkPolicy for the operator it is told of (--operator-namespace, --operator-pod-labels), recon8s-system by default', () => {
    const cluster = file(
      'db.yaml',
      'apiVersion: recon8s.dev/v1alpha1\nkind: MySQLCluster\nmetadata: { name: db, namespace: shop }\n',
    );
    /** The `from` of the policy's rule that admits the operator (the one with a namespaceSelector). */
    const operatorPeer = (args: readonly string[]): unknown => {
      const r = runCli(['render', '-f', cluster, '-o', 'json', ...args]);
      assert.equal(r.status, 0, r.stderr);
      const policy = (
        JSON.parse(r.stdout) as { items: { kind: string; spec: { ingress: { from: object[] }[] } }[] }
      ).items.find((o) => o.kind === 'NetworkPolicy');
      return policy?.spec.ingress.flatMap((rule) => rule.from).find((peer) => 'namespaceSelector' in peer);
    };
    const inNamespace = (ns: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': ns } });
    assert.deepEqual(operatorPeer([]), { namespaceSelector: inNamespace('recon8s-system') });
    assert.deepEqual(operatorPeer(['--operator-namespace', 'ops']), { namespaceSelector: inNamespace('ops') });
    assert.deepEqual(operatorPeer(['--operator-namespace', 'ops', '--operator-pod-labels', 'app=recon8s']), {
      namespaceSelector: inNamespace('ops'),
      podSelector: { matchLabels: { app: 'recon8s' } },
    });
    const bad = runCli(['render', '-f', cluster, '--operator-namespace', 'Not_A_Namespace']);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--operator-namespace must be a namespace name \(a DNS label\), got "Not_A_Namespace"/);
    assert.match(bad.stderr, /Usage: recon8s render/);
  });

  it('fails with exit 2 on a missing file, bad YAML or a bad option', () => {
    assert.equal(runCli(['render', '-f', join(dir, 'nope.yaml')]).status, 2);
    const bad = runCli(['render', '-f', file('broken.yaml', 'kind: [unclosed\n')]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /not valid YAML or JSON/);
    const opt = runCli(['render', '-f', file('nginx.yaml', NGINX), '-o', 'xml']);
    assert.equal(opt.status, 2);
    assert.match(opt.stderr, /-o must be yaml or json, got "xml"/);
    assert.equal(runCli(['frobnicate']).status, 2);
  });
});

describe('recon8s controller options', function () {
  this.timeout(60_000);

  it('fails with exit 2 on inconsistent lease timing, before contacting any cluster', () => {
    const r = runCli([
      'controller',
      '--leader-elect',
      '--leader-election-lease-duration',
      '5',
      '--leader-election-renew-deadline',
      '10',
    ]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /lease duration > renew deadline > retry period, got 5 > 10 > 2/);
  });

  it('fails with exit 2 on a non-numeric worker count, naming the flag and the value', () => {
    const r = runCli(['controller', '--workers', 'many']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--workers must be a positive whole number, got "many"/);
  });
});
