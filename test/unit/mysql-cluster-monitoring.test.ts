// spec.monitoring of MySQLCluster: the mysqld_exporter sidecar, its account, its scrape annotations,
// and the PodMonitor construct. What the exporter serves on a real member is test/e2e/mysql.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import * as cdk8s from 'cdk8s';
import { MySQLPodMonitor } from '../../constructs/mysql/exporter.js';
import { accountStatements } from '../../lib/agent/accounts.js';
import { InvalidSpecError } from '../../constructs/schema/validate.js';
import { scriptSandbox } from './support/mysql-scripts.js';
import { synthMySQL } from './support/mysql-synth.js';

const ON = { monitoring: { enabled: true } } as const;

describe('MySQLCluster spec.monitoring', () => {
  it('is off by default: two containers, no scrape annotations, no metrics label', () => {
    const { statefulSet, podSpec } = synthMySQL();
    assert.deepEqual(
      podSpec.containers.map((c) => c.name),
      ['mysql', 'agent'],
    );
    const template = statefulSet.spec?.template.metadata;
    assert.equal(template?.annotations?.['prometheus.io/scrape'], undefined);
    assert.equal(template?.labels?.['recon8s.dev/metrics'], undefined);
  });

  it("adds the metrics sidecar: mysqld_exporter on 9104 over mysqld's local socket as recon8s-exporter", () => {
    const { container, podSpec, configMap } = synthMySQL(ON);
    const metrics = container('metrics');
    assert.equal(metrics.image, 'quay.io/prometheus/mysqld-exporter:v0.19.0');
    assert.deepEqual(metrics.command, ['mysqld_exporter']);
    assert.deepEqual(metrics.ports, [{ name: 'metrics', containerPort: 9104 }]);
    for (const arg of [
      '--web.listen-address=:9104',
      '--mysqld.username=recon8s-exporter',
      '--config.my-cnf=/etc/recon8s/exporter/exporter.cnf',
      '--collect.perf_schema.replication_applier_status_by_worker',
    ])
      assert.ok(metrics.args?.includes(arg), `${arg} in ${metrics.args?.join(' ')}`);
    assert.ok(!metrics.args?.some((a) => a.startsWith('--mysqld.address')), metrics.args?.join(' '));
    // Its option file names the socket mysqld listens on, in the directory the sidecar mounts from the
    // mysql container's volume (read-only: a socket is connected to, never written).
    const configVolume = podSpec.volumes?.find((v) => v.name === 'config')?.configMap?.name ?? '';
    const data = configMap(configVolume).data ?? {};
    const socket = /^socket=(.+)$/m.exec(data['my.cnf'] ?? '')?.[1];
    assert.equal(socket, '/var/run/mysqld/mysqld.sock');
    // Nothing but the socket: no host or port (TCP), and no password (MYSQLD_EXPORTER_PASSWORD has it).
    assert.deepEqual(
      (data['exporter.cnf'] ?? '').split('\n').filter((l) => l !== '' && !l.startsWith('#')),
      ['[client]', `socket=${socket}`],
    );
    const runOfMysql = container('mysql').volumeMounts?.find((m) => m.mountPath === '/var/run/mysqld');
    assert.ok(runOfMysql);
    assert.deepEqual(
      metrics.volumeMounts?.map((m) => [m.name, m.mountPath, m.readOnly]),
      [
        ['config', '/etc/recon8s/exporter', true],
        [runOfMysql.name, '/var/run/mysqld', true],
      ],
    );
    assert.equal(
      synthMySQL().configMap(configVolume).data?.['exporter.cnf'],
      undefined,
      'no option file without monitoring',
    );
  });

  it('passes the password from the Secret key exporter-password as an environment variable, never an argument', () => {
    const { container, json } = synthMySQL(ON);
    const metrics = container('metrics');
    assert.deepEqual(metrics.env, [
      {
        name: 'MYSQLD_EXPORTER_PASSWORD',
        valueFrom: { secretKeyRef: { name: 'shop-credentials', key: 'exporter-password' } },
      },
    ]);
    assert.ok(!(metrics.args ?? []).some((a) => /password/i.test(a)), metrics.args?.join(' '));
    // The agent creates the account on the primary with the same key, which it reads from the mounted Secret.
    assert.deepEqual(
      container('agent').env?.find((e) => e.name === 'EXPORTER_ACCOUNT'),
      { name: 'EXPORTER_ACCOUNT', value: 'true' },
    );
    assert.doesNotMatch(json, /IDENTIFIED BY '[^%$]/);
  });

  it('runs under Pod Security "restricted" with bounded resources and no readiness probe of its own', () => {
    const { container } = synthMySQL(ON);
    const metrics = container('metrics');
    assert.deepEqual(metrics.securityContext, {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    assert.deepEqual(metrics.resources, { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } });
    assert.equal(metrics.readinessProbe, undefined, 'a broken exporter must not take the member out of its Services');
    assert.equal(metrics.livenessProbe?.httpGet?.port, 'metrics');
  });

  it('annotates and labels the pods for scraping, on the configured port', () => {
    const { statefulSet, container } = synthMySQL({
      monitoring: { enabled: true, port: 9200, image: 'registry.example/exporter:1' },
      annotations: { team: 'db' },
    });
    const template = statefulSet.spec?.template.metadata;
    assert.deepEqual(
      {
        scrape: template?.annotations?.['prometheus.io/scrape'],
        port: template?.annotations?.['prometheus.io/port'],
        path: template?.annotations?.['prometheus.io/path'],
        team: template?.annotations?.team,
      },
      { scrape: 'true', port: '9200', path: '/metrics', team: 'db' },
    );
    assert.equal(template?.labels?.['recon8s.dev/metrics'], 'mysqld-exporter');
    assert.equal(container('metrics').image, 'registry.example/exporter:1');
    assert.ok(container('metrics').args?.includes('--web.listen-address=:9200'));
  });

  it('refuses the MySQL port as the metrics port, naming the field', () => {
    assert.throws(
      () => synthMySQL({ monitoring: { enabled: true, port: 3306 } }),
      (e: unknown) => e instanceof InvalidSpecError && /monitoring\.port/.test(e.message) && /3306/.test(e.message),
    );
  });

  it('the primary creates the exporter account for the local socket only, with status and performance_schema reads only, and drops the former loopback one', () => {
    const statements = accountStatements({ replication: 'r', admin: 'a', clone: 'c', backup: 'b', exporter: 'e' }).map(
      (x) => x.sql,
    );
    assert.ok(statements.includes("DROP USER IF EXISTS 'recon8s-exporter'@'127.0.0.1'"), statements.join('\n'));
    assert.ok(
      statements.includes(
        "CREATE USER IF NOT EXISTS 'recon8s-exporter'@'localhost' IDENTIFIED BY ? WITH MAX_USER_CONNECTIONS 3",
      ),
      statements.join('\n'),
    );
    assert.ok(statements.includes("GRANT PROCESS, REPLICATION CLIENT ON *.* TO 'recon8s-exporter'@'localhost'"));
    assert.ok(statements.includes("GRANT SELECT ON performance_schema.* TO 'recon8s-exporter'@'localhost'"));
    assert.ok(!statements.some((x) => /GRANT [^;]*(ALL|SUPER|INSERT|UPDATE|DELETE)[^;]*recon8s-exporter/.test(x)));
    assert.ok(
      !accountStatements({ replication: 'r', admin: 'a', clone: 'c', backup: 'b' }).some((x) =>
        x.sql.includes('recon8s-exporter'),
      ),
    );
    // A new cluster's bootstrap creates it unlogged, like the other accounts: a replicated CREATE USER
    // on the first primary would wait for an acknowledgement no replica can give while it clones.
    const box = scriptSandbox();
    try {
      mkdirSync(box.path('volume'));
      const r = box.run('bootstrap.sh', {
        POD_NAME: 'shop-0',
        DATA_VOLUME: box.path('volume'),
        HEADLESS_SERVICE: 'shop-headless',
        PRIMARY_HOST: 'shop-primary',
        MYSQL_ROOT_PASSWORD: 'r',
        MYSQL_REPLICATION_PASSWORD: 'r',
        MYSQL_ADMIN_PASSWORD: 'a',
        MYSQL_CLONE_PASSWORD: 'clone-pw',
        MYSQL_BACKUP_PASSWORD: 'backup-pw',
        MYSQL_EXPORTER_PASSWORD: 'e',
        FAKE_PRIMARY_STATUS: '1', // no primary answers: a new cluster
      });
      assert.equal(r.status, 0, r.stderr);
      const sql = box.calls();
      assert.ok(
        sql.includes(
          [
            "CREATE USER IF NOT EXISTS 'recon8s-exporter'@'localhost' IDENTIFIED BY 'e' WITH MAX_USER_CONNECTIONS 3;",
            "ALTER USER 'recon8s-exporter'@'localhost' IDENTIFIED BY 'e' WITH MAX_USER_CONNECTIONS 3;",
            "GRANT PROCESS, REPLICATION CLIENT ON *.* TO 'recon8s-exporter'@'localhost';",
            "GRANT SELECT ON performance_schema.* TO 'recon8s-exporter'@'localhost';",
          ].join('\n'),
        ),
        sql,
      );
      assert.ok(
        sql.indexOf('recon8s-exporter') > sql.lastIndexOf('sql_log_bin = 0'),
        'created after binary logging is off',
      );
      // The former loopback account, which a restored history may hold, is dropped.
      assert.ok(sql.includes("DROP USER IF EXISTS 'recon8s-exporter'@'127.0.0.1';"), sql);
    } finally {
      box.cleanup();
    }
  });

  it("leaves the exporter's account out of a backup, as the cluster's other own accounts: the restored cluster makes its own", () => {
    const box = scriptSandbox();
    try {
      mkdirSync(box.path('backup'));
      const r = box.run('backup.sh', {
        CLUSTER_NAME: 'shop',
        BACKUP_HOST: 'shop-replicas',
        BACKUP_RETAIN: '3',
        BACKUP_DIR: box.path('backup'),
        MYSQL_BACKUP_PASSWORD: 'b',
      });
      assert.equal(r.status, 0, r.stderr);
      // The recorded argv is shell-quoted (printf %q): unquoted here.
      const query = box
        .calls()
        .split('\n')
        .map((l) => l.replace(/\\(.)/g, '$1'))
        .find((l) => l.includes('FROM mysql.user'));
      assert.match(
        query ?? '',
        /user NOT IN \('root', 'replication', 'recon8s-clone', 'recon8s-backup', 'recon8s-admin', 'recon8s-exporter'\)/,
        box.calls(),
      );
    } finally {
      box.cleanup();
    }
  });

  it('gives the exporter password to the bootstrap, and the exporter account to the agent, only with monitoring on', () => {
    for (const [name, variable] of [
      ['bootstrap', 'MYSQL_EXPORTER_PASSWORD'],
      ['agent', 'EXPORTER_ACCOUNT'],
    ] as const) {
      const on = synthMySQL(ON).container(name).env ?? [];
      const off = synthMySQL().container(name).env ?? [];
      assert.ok(
        on.some((e) => e.name === variable),
        name,
      );
      assert.ok(!off.some((e) => e.name === variable), name);
    }
  });
});

describe('MySQLPodMonitor', () => {
  const render = (props?: ConstructorParameters<typeof MySQLPodMonitor>[2]) => {
    const chart = new cdk8s.Chart(new cdk8s.App(), 'test');
    new MySQLPodMonitor(chart, 'pm', props);
    return chart.toJson()[0] as { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
  };

  it('selects the members that run the sidecar in every namespace, scraping the metrics port', () => {
    const pm = render();
    assert.equal(pm.kind, 'PodMonitor');
    assert.equal(pm.metadata.name, 'recon8s-mysql');
    assert.deepEqual(pm.spec.selector, {
      matchLabels: {
        'app.kubernetes.io/name': 'mysql',
        'app.kubernetes.io/component': 'database',
        'recon8s.dev/metrics': 'mysqld-exporter',
      },
    });
    assert.deepEqual(pm.spec.namespaceSelector, { any: true });
    const [endpoint] = pm.spec.podMetricsEndpoints as { port: string; interval: string }[];
    assert.deepEqual([endpoint?.port, endpoint?.interval], ['metrics', '30s']);
  });

  it('limits itself to the namespaces given, and refuses an interval that is not a duration', () => {
    assert.deepEqual(render({ namespaces: ['shop'] }).spec.namespaceSelector, { matchNames: ['shop'] });
    assert.throws(() => render({ interval: 'often' }), /interval: expected a duration such as "30s", got "often"/);
  });
});
