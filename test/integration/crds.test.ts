import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { EXAMPLE_DB } from '../../apps/examples.js';
import { render } from '../../constructs/index.js';
import type { KubernetesObject } from '../../constructs/index.js';
import { runSynth } from '../support/run.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { eventually } from './eventually.js';
import { kubectl } from './support/kubectl.js';

const toYaml = (objects: readonly unknown[]): string => objects.map((o) => stringify(o)).join('---\n');

describe('CRDs and manifests on a real API server', function () {
  this.timeout(120_000);
  const controlPlane = useSharedControlPlane();
  let synthesized: Map<string, KubernetesObject[]>;

  before(function () {
    this.timeout(180_000);
    const outdir = mkdtempSync(join(tmpdir(), 'recon8s-synth-'));
    try {
      const r = runSynth(outdir);
      assert.equal(r.status, 0, r.stderr);
      // The CRDs and the example; the operator install (install.yaml) is tested in operator.test.ts.
      const files = readdirSync(outdir, { withFileTypes: true })
        .filter((f) => f.isFile() && f.name !== 'install.yaml')
        .map((f) => f.name);
      synthesized = new Map(
        files.map((f) => [
          f,
          parseAllDocuments(readFileSync(join(outdir, f), 'utf8')).map((d) => d.toJS() as KubernetesObject),
        ]),
      );
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
    const crds = synthesized.get('crds.k8s.yaml') ?? [];
    const r = kubectl(
      controlPlane(),
      ['apply', '--server-side', '--field-manager=recon8s-tests', '-f', '-'],
      toYaml(crds),
    );
    assert.equal(r.status, 0, r.stderr);
  });

  it('installs both CRDs and they become Established', async () => {
    await eventually(
      () => {
        for (const name of ['apps.recon8s.dev', 'mysqlclusters.recon8s.dev']) {
          const r = kubectl(controlPlane(), [
            'get',
            'crd',
            name,
            '-o',
            'jsonpath={.status.conditions[?(@.type=="Established")].status}',
          ]);
          assert.equal(r.stdout, 'True', `${name}: ${r.stderr}`);
        }
      },
      { timeoutMs: 30_000, description: 'the CRDs to be Established' },
    );
  });

  it('serves kubectl explain from the field descriptions', async () => {
    // The OpenAPI document of a new CRD is published a moment after it is Established.
    await eventually(
      () => {
        const r = kubectl(controlPlane(), ['explain', 'mysqlclusters.spec.storage.size']);
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, /may grow[\s\S]*never shrink/);
      },
      { timeoutMs: 30_000, description: 'kubectl explain to describe spec.storage.size' },
    );
  });

  it('passes a server-side dry-run apply of every synthesized manifest', async () => {
    const ns = await freshNamespace('synth');
    for (const [file, objects] of synthesized) {
      const inNs = objects.map((o) =>
        o.metadata.namespace ? { ...o, metadata: { ...o.metadata, namespace: ns } } : o,
      );
      const r = kubectl(
        controlPlane(),
        ['apply', '--server-side', '--dry-run=server', '--field-manager=recon8s-tests', '-f', '-'],
        toYaml(inNs),
      );
      assert.equal(r.status, 0, `${file}: ${r.stderr}`);
      assert.equal(r.stderr.trim(), '', `${file} produced warnings: ${r.stderr}`);
    }
  });

  it('raises no Pod Security "restricted" warning for any workload we render', async () => {
    const ns = await freshNamespace('restricted', {
      labels: { 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/enforce': 'restricted' },
    });
    const workloads = [...synthesized.values()]
      .flat()
      .filter((o) => ['Deployment', 'StatefulSet', 'CronJob', 'Job'].includes(o.kind));
    // The example's database is its resource: what the controller renders from it.
    workloads.push(
      ...render({
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'db' },
        spec: EXAMPLE_DB,
      }),
    );
    // Also the variants the example does not use: autoscaling, one replica, a MySQL cluster without backups.
    workloads.push(
      ...render({
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'minimal' },
        spec: { image: 'busybox' },
      }),
    );
    workloads.push(
      ...render({
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name: 'single' },
        spec: { replicas: 1, version: '9.7' },
      }),
    );
    const inNs = workloads
      .filter((o) => ['Deployment', 'StatefulSet', 'CronJob'].includes(o.kind))
      .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: ns } }));
    assert.ok(inNs.length >= 4);
    const r = kubectl(
      controlPlane(),
      ['apply', '--server-side', '--dry-run=server', '--field-manager=recon8s-tests', '-f', '-'],
      toYaml(inNs),
    );
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /PodSecurity|violate/i, r.stderr);
  });

  it('proves the Pod Security check is live: a privileged template is warned about', async () => {
    const ns = await freshNamespace('restricted-canary', {
      labels: { 'pod-security.kubernetes.io/warn': 'restricted' },
    });
    const [deployment] = render({
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'App',
      metadata: { name: 'root', namespace: ns },
      spec: { image: 'busybox', securityContext: { runAsUser: 0, runAsNonRoot: false } },
    });
    const r = kubectl(
      controlPlane(),
      ['apply', '--server-side', '--dry-run=server', '--field-manager=recon8s-tests', '-f', '-'],
      toYaml([deployment]),
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /would violate PodSecurity "restricted:latest"/);
  });

  describe('admission of bad custom resources', () => {
    let ns: string;
    before(async () => {
      ns = await freshNamespace('admission');
    });

    const create = (resource: Record<string, unknown>): { status: number | null; stderr: string } =>
      kubectl(controlPlane(), ['create', '-n', ns, '-f', '-'], JSON.stringify(resource));
    const apply = (resource: Record<string, unknown>): { status: number | null; stderr: string } =>
      kubectl(
        controlPlane(),
        ['apply', '--server-side', '--field-manager=recon8s-tests', '-n', ns, '-f', '-'],
        JSON.stringify(resource),
      );
    const mysql = (name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'MySQLCluster',
      metadata: { name },
      spec,
    });
    const app = (name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
      apiVersion: 'recon8s.dev/v1alpha1',
      kind: 'App',
      metadata: { name },
      spec,
    });

    it('accepts a valid resource and fills in the defaults', () => {
      const r = create(mysql('good', {}));
      assert.equal(r.status, 0, r.stderr);
      const got = kubectl(controlPlane(), [
        'get',
        'mysqlcluster',
        'good',
        '-n',
        ns,
        '-o',
        'jsonpath={.spec.replicas} {.spec.version} {.spec.storage.size} {.spec.pvcRetention.whenDeleted}',
      ]);
      assert.equal(got.stdout, '3 9.7 10Gi Retain');
    });

    it('fails on an image that is not an image reference, and takes every form that is', () => {
      for (const [i, image] of ['Nginx:::latest', 'nginx:', 'nginx@sha256:abc', 'Team/app'].entries()) {
        const r = create(app(`bad-image-${i}`, { image }));
        assert.notEqual(r.status, 0, image);
        assert.match(r.stderr, /spec\.image: Invalid value: .*should match/, image);
      }
      for (const [i, image] of [
        'nginx',
        'registry.example.com:5000/team/app:v1.2.3',
        '[::1]:5000/team/app:tag',
        `mysql:9.7@sha256:${'a'.repeat(64)}`,
      ].entries()) {
        const r = create(app(`good-image-${i}`, { image }));
        assert.equal(r.status, 0, `${image}: ${r.stderr}`);
      }
    });

    it('fails on an unknown field, naming it', () => {
      const r = create(app('typo', { image: 'nginx', replicaz: 2 }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /unknown field "spec\.replicaz"/);
    });

    it('fails on replicas out of range', () => {
      const r = create(mysql('too-many', { replicas: 10 }));
      assert.notEqual(r.status, 0);
      assert.match(
        r.stderr,
        /spec\.replicas: Invalid value: 10: spec\.replicas in body should be less than or equal to 9/,
      );
    });

    it('fails on a metrics port that is a MySQL port, naming spec.monitoring.port, and takes another', () => {
      const r = create(mysql('metrics-on-3306', { monitoring: { enabled: true, port: 3306 } }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.monitoring\.port: .*port must differ from the MySQL ports 3306 and 33060/);
      const ok = create(mysql('metrics-on-9200', { monitoring: { enabled: true, port: 9200 } }));
      assert.equal(ok.status, 0, ok.stderr);
    });

    it('fails on tlsSecretName beside tls.issuerRef, and on an issuer kind cert-manager has not; defaults kind and group', () => {
      const both = create(mysql('both-tls', { tlsSecretName: 'mine', tls: { issuerRef: { name: 'shop-ca' } } }));
      assert.notEqual(both.status, 0);
      assert.match(both.stderr, /spec\.tls\.issuerRef: .*tlsSecretName and tls\.issuerRef exclude each other/);
      const kind = create(mysql('bad-issuer-kind', { tls: { issuerRef: { name: 'shop-ca', kind: 'Vault' } } }));
      assert.notEqual(kind.status, 0);
      assert.match(kind.stderr, /spec\.tls\.issuerRef\.kind: Unsupported value: "Vault"/);
      const ok = create(mysql('issuer', { tls: { issuerRef: { name: 'shop-ca' } } }));
      assert.equal(ok.status, 0, ok.stderr);
      const got = kubectl(controlPlane(), [
        'get',
        'mysqlcluster',
        'issuer',
        '-n',
        ns,
        '-o',
        'jsonpath={.spec.tls.issuerRef.kind} {.spec.tls.issuerRef.group}',
      ]);
      assert.equal(got.stdout, 'Issuer cert-manager.io');
    });

    it('fails on a wrong type', () => {
      const r = create(app('wrong-type', { image: 'nginx', replicas: 'two' }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.replicas: Invalid value: "string": spec\.replicas in body must be of type integer/);
    });

    it('fails on an end-of-life MySQL version, saying why', () => {
      const r = create(mysql('eol', { version: '8.0' }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.version/);
      assert.match(r.stderr, /end-of-life/);
    });

    it('fails on a cross-field rule (exactly one of value or valueFrom)', () => {
      const r = create(
        app('env', {
          image: 'nginx',
          env: [{ name: 'A', value: 'x', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }],
        }),
      );
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.env\[0\].*exactly one of value or valueFrom/);
    });

    it('fails on a my.cnf option recon8s manages, in any spelling', () => {
      const r = create(mysql('conf', { mysqlConf: { max_connections: '100', 'skip-log-bin': 'ON' } }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.mysqlConf: Invalid value: .*no options that recon8s manages/);
      assert.equal(create(mysql('conf', { mysqlConf: { max_connections: '100' } })).status, 0);
    });

    it('fails on a name too long for the StatefulSet pods', () => {
      const r = create(mysql('a'.repeat(53), {}));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /metadata\.name must be at most 52 characters/);
    });

    it('fails on a name too long for the backup CronJob when backups are on, and accepts it without', () => {
      const name = 'b'.repeat(46);
      const r = create(mysql(name, { backup: { schedule: '@daily', persistentVolumeClaimName: 'backups' } }));
      assert.notEqual(r.status, 0);
      assert.match(
        r.stderr,
        /metadata\.name must be at most 45 characters, so that the backup CronJob "<name>-backup" \(at most 52 characters\) fits/,
      );
      assert.equal(create(mysql(name, {})).status, 0);
      const on = apply(mysql(name, { backup: { schedule: '@daily', persistentVolumeClaimName: 'backups' } }));
      assert.notEqual(on.status, 0, 'turning backups on later is refused too');
    });

    it('fails on a plain-HTTP object store unless allowInsecureEndpoint says so, naming the endpoint', () => {
      const s3 = { bucket: 'backups', prefix: 'shop', credentialsSecretName: 'keys' };
      for (const [name, spec] of [
        ['http-backup', { backup: { schedule: '@daily', s3: { ...s3, endpoint: 'http://minio:9000' } } }],
        ['http-restore', { restore: { s3: { ...s3, endpoint: 'http://minio:9000' } } }],
      ] as const) {
        const r = create(mysql(name, spec));
        assert.notEqual(r.status, 0, name);
        assert.match(r.stderr, /spec\.(backup|restore)\.s3\.endpoint: Invalid value: .*an https:\/\/ endpoint/, name);
      }
      for (const [name, store] of [
        ['https-backup', { ...s3, endpoint: 'https://minio:9000' }],
        ['http-accepted', { ...s3, endpoint: 'http://minio:9000', allowInsecureEndpoint: true }],
      ] as const) {
        const r = create(mysql(name, { backup: { schedule: '@daily', s3: store } }));
        assert.equal(r.status, 0, `${name}: ${r.stderr}`);
      }
    });

    it('takes s3.encryption with a Secret reference, and refuses turning it on or off on the same prefix, naming the field', () => {
      const s3 = { bucket: 'backups', prefix: 'shop', endpoint: 'https://minio:9000', credentialsSecretName: 'keys' };
      const encryption = { secretRef: { name: 'backup-key' } };
      const bad = create(
        mysql('bad-key-ref', {
          backup: { schedule: '@daily', s3: { ...s3, encryption: { secretRef: { name: 'Bad Name' } } } },
        }),
      );
      assert.notEqual(bad.status, 0);
      assert.match(bad.stderr, /spec\.backup\.s3\.encryption\.secretRef\.name: Invalid value/);
      assert.equal(apply(mysql('encrypted', { backup: { schedule: '@daily', s3 } })).status, 0);
      const on = apply(mysql('encrypted', { backup: { schedule: '@daily', s3: { ...s3, encryption } } }));
      assert.notEqual(on.status, 0, 'encryption turned on over the same prefix');
      assert.match(on.stderr, /spec\.backup\.s3\.encryption: Invalid value: .*needs a new prefix/);
      const moved = apply(
        mysql('encrypted', { backup: { schedule: '@daily', s3: { ...s3, prefix: 'shop-encrypted', encryption } } }),
      );
      assert.equal(moved.status, 0, moved.stderr);
      const off = apply(
        mysql('encrypted', { backup: { schedule: '@daily', s3: { ...s3, prefix: 'shop-encrypted' } } }),
      );
      assert.notEqual(off.status, 0, 'encryption turned off over the same prefix');
    });

    it('takes backup.encryption for a backup volume, and refuses it beside s3 (whose encryption is s3.encryption), naming the field', () => {
      const encryption = { secretRef: { name: 'backup-key' } };
      const volume = create(
        mysql('volume-encrypted', { backup: { schedule: '@daily', persistentVolumeClaimName: 'dumps', encryption } }),
      );
      assert.equal(volume.status, 0, volume.stderr);
      const s3 = { bucket: 'backups', prefix: 'shop', endpoint: 'https://minio:9000', credentialsSecretName: 'keys' };
      const both = create(mysql('store-and-volume-key', { backup: { schedule: '@daily', s3, encryption } }));
      assert.notEqual(both.status, 0);
      assert.match(
        both.stderr,
        /spec\.backup\.encryption: Invalid value: .*encryption is for persistentVolumeClaimName: an object store is encrypted by s3\.encryption/,
      );
    });

    it('fails on a storage size of zero, in any spelling', () => {
      for (const size of ['0', '0Gi', 0]) {
        const r = create(mysql('zero', { storage: { size } }));
        assert.notEqual(r.status, 0, `size ${JSON.stringify(size)} was admitted`);
        assert.match(r.stderr, /spec\.storage\.size: Invalid value: .*greater than zero/);
      }
    });

    it('fails on an amount of bytes without a byte unit (storage 20, memory "512m"), and takes one with', () => {
      for (const [name, spec, field] of [
        ['bare-size', { storage: { size: 20 } }, 'spec\\.storage\\.size'],
        ['milli-memory', { resources: { limits: { memory: '512m' } } }, 'spec\\.resources\\.limits\\.memory'],
      ] as const) {
        const r = create(mysql(name, spec));
        assert.notEqual(r.status, 0, `${name} was admitted`);
        assert.match(r.stderr, new RegExp(`${field}: Invalid value: .*an amount with a byte unit`), name);
      }
      const r = create(mysql('with-units', { storage: { size: '20G' }, resources: { limits: { memory: '512Mi' } } }));
      assert.equal(r.status, 0, r.stderr);
    });

    it('takes a disruption budget of a count or a percentage from 1, and refuses one that would block every drain', () => {
      for (const [i, maxUnavailable] of [2, '25%', '100%'].entries()) {
        const r = create(app(`pdb-ok-${i}`, { image: 'nginx', replicas: 4, disruptionBudget: { maxUnavailable } }));
        assert.equal(r.status, 0, r.stderr);
      }
      for (const [i, maxUnavailable] of [0, '0%', '101%', 'half'].entries()) {
        const r = create(app(`pdb-bad-${i}`, { image: 'nginx', replicas: 4, disruptionBudget: { maxUnavailable } }));
        assert.notEqual(r.status, 0, `maxUnavailable ${JSON.stringify(maxUnavailable)} was admitted`);
        assert.match(r.stderr, /spec\.disruptionBudget\.maxUnavailable: Invalid value: .*at least 1, or a percentage/);
      }
    });

    it('takes an App networkPolicy of pods, namespaces or addresses, and refuses an empty or mixed source and a bad CIDR, naming the field', () => {
      const policy = (name: string, networkPolicy: Record<string, unknown>) =>
        create(app(name, { image: 'nginx', ports: [{ port: 80 }], networkPolicy }));
      const good = policy('np-good', {
        restrictEgress: true,
        from: [
          { podSelector: { matchLabels: { tier: 'frontend' } } },
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } },
          { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } },
          { ipBlock: { cidr: 'fd00::/8' } },
        ],
      });
      assert.equal(good.status, 0, good.stderr);
      const empty = policy('np-empty', { from: [{}] });
      assert.notEqual(empty.status, 0);
      assert.match(
        empty.stderr,
        /spec\.networkPolicy\.from\[0\]: Invalid value: .*one of podSelector, namespaceSelector or ipBlock/,
      );
      const mixed = policy('np-mixed', {
        from: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: { matchLabels: { a: 'b' } } }],
      });
      assert.notEqual(mixed.status, 0);
      assert.match(mixed.stderr, /spec\.networkPolicy\.from\[0\]\.ipBlock: Invalid value: .*ipBlock alone/);
      const cidr = policy('np-cidr', { from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] });
      assert.notEqual(cidr.status, 0);
      assert.match(cidr.stderr, /spec\.networkPolicy\.from\[0\]\.ipBlock\.cidr: Invalid value: "10\.0\.0\.0\/33"/);
      const none = policy('np-none', { from: [] });
      assert.notEqual(none.status, 0);
      assert.match(none.stderr, /spec\.networkPolicy\.from: Invalid value: .*at least 1/);
    });

    it('accepts one unnamed App port, but several need names, unique ones', () => {
      assert.equal(create(app('one-port', { image: 'nginx', ports: [{ port: 80 }] })).status, 0);
      const several = create(app('two-ports', { image: 'nginx', ports: [{ name: 'http', port: 80 }, { port: 81 }] }));
      assert.notEqual(several.status, 0);
      assert.match(several.stderr, /spec\.ports: Invalid value: .*a name on every port when there are several/);
      const duplicate = create(
        app('dup-ports', {
          image: 'nginx',
          ports: [
            { name: 'http', port: 80 },
            { name: 'http', port: 81 },
          ],
        }),
      );
      assert.notEqual(duplicate.status, 0);
      assert.match(duplicate.stderr, /spec\.ports: Invalid value: .*unique port names/);
    });

    it("refuses a database binding on MySQL's system schemas, in any case, and names that are not plain identifiers", () => {
      const bind = (name: string, database: Record<string, unknown>) =>
        create(app(name, { image: 'nginx', database: { cluster: 'db', ...database } }));
      for (const [i, schema] of ['mysql', 'MySQL', 'sys', 'information_schema', 'PERFORMANCE_SCHEMA'].entries()) {
        const r = bind(`system-${i}`, { name: schema });
        assert.notEqual(r.status, 0, schema);
        assert.match(r.stderr, /spec\.database\.name: Invalid value: .*not one of MySQL's system schemas/, schema);
      }
      for (const [i, name] of ['1shop', 'shop-db', "shop'; DROP", 'shop`', 'a'.repeat(65), ''].entries()) {
        const r = bind(`bad-db-${i}`, { name });
        assert.notEqual(r.status, 0, name);
        assert.match(r.stderr, /spec\.database\.name/, name);
      }
      const access = bind('bad-access', { name: 'shop', access: 'admin' });
      assert.notEqual(access.status, 0);
      assert.match(access.stderr, /spec\.database\.access: Unsupported value: "admin"/);
      const cluster = bind('bad-cluster', { name: 'shop', cluster: 'Db_1' });
      assert.notEqual(cluster.status, 0);
      assert.match(cluster.stderr, /spec\.database\.cluster/);
      const env = create(
        app('env-clash', {
          image: 'nginx',
          env: [{ name: 'DB_USER', value: 'root' }],
          database: { cluster: 'db', name: 'shop' },
        }),
      );
      assert.notEqual(env.status, 0);
      assert.match(env.stderr, /spec\.env: Invalid value: .*no env named DB_HOST/);
      const missing = create(app('no-name', { image: 'nginx', database: { cluster: 'db' } }));
      assert.notEqual(missing.status, 0);
      assert.match(missing.stderr, /spec\.database\.name: Required value/);
    });

    it('accepts a database binding and defaults its access to readWrite', () => {
      for (const [i, name] of ['shop', 'Shop_2', '_x', 'mysql_app', 'a'.repeat(64)].entries()) {
        const r = create(app(`good-db-${i}`, { image: 'nginx', database: { cluster: 'db', name } }));
        assert.equal(r.status, 0, `${name}: ${r.stderr}`);
      }
      const got = kubectl(controlPlane(), ['get', 'app', 'good-db-0', '-n', ns, '-o', 'jsonpath={.spec.database}']);
      assert.deepEqual(JSON.parse(got.stdout), { cluster: 'db', name: 'shop', access: 'readWrite' });
    });

    it('fails when storage shrinks, but lets it grow', () => {
      assert.equal(apply(mysql('grow', { storage: { size: '20Gi' } })).status, 0);
      const shrink = apply(mysql('grow', { storage: { size: '10Gi' } }));
      assert.notEqual(shrink.status, 0);
      assert.match(shrink.stderr, /spec\.storage\.size: Invalid value: .*may grow but never shrink/);
      const grow = apply(mysql('grow', { storage: { size: '30Gi' } }));
      assert.equal(grow.status, 0, grow.stderr);
    });

    it('fails when storageClassName changes', () => {
      assert.equal(apply(mysql('sc', { storage: { storageClassName: 'fast' } })).status, 0);
      const r = apply(mysql('sc', { storage: { storageClassName: 'slow' } }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.storage\.storageClassName: Invalid value: .*immutable/);
    });

    it('fails on a version downgrade, but allows the upgrade', () => {
      assert.equal(apply(mysql('upgrade', { version: '8.4' })).status, 0);
      assert.equal(apply(mysql('upgrade', { version: '9.7' })).status, 0);
      const r = apply(mysql('upgrade', { version: '8.4' }));
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /spec\.version: Invalid value: .*never downgraded/);
    });
  });
});
