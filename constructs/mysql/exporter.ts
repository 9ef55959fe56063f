// spec.monitoring: the metrics sidecar of every member (mysqld_exporter), its scrape annotations and,
// for the Prometheus Operator, a PodMonitor selecting every member that has it.
//
// Why mysqld_exporter and not figures of recon8s' own: the members have no agent of their own (the
// controller polls them over SQL every few seconds for its decisions, one connection per member, and
// exporting per-query, per-InnoDB figures from it would put every member's scrape load on the one
// controller and lose them whenever it is down or not leading). mysqld_exporter is what MOCO and most
// MySQL installs run: its metric names are the ones existing dashboards and alerts know, it reads
// SHOW REPLICA STATUS since 0.15, and it fails alone (the sidecar has no probe the pod's readiness
// depends on).
import { ApiObject } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { resourceRequirements } from '../common/resources.js';
import { containerSecurityContext } from '../common/security.js';
import type { MySQLClusterContext } from './context.js';
import { secretEnv } from './context.js';
import { APP_NAME, DATABASE_COMPONENT, EXPORTER_USER, PATHS, SECRET_KEYS } from './layout.js';

/** The container port name the PodMonitor scrapes. */
export const METRICS_PORT_NAME = 'metrics';
/** On the pod template of every member that runs the sidecar: what a PodMonitor selects. */
export const METRICS_LABEL = 'recon8s.dev/metrics';
export const METRICS_LABEL_VALUE = 'mysqld-exporter';

/**
 * Collectors beyond mysqld_exporter's defaults (global status and variables, replica status, InnoDB
 * compression, table sizes): per-worker applier status (the transactions a replica has received but
 * not applied), InnoDB's own counters, and the sessions by state.
 */
export const EXPORTER_COLLECTORS: readonly string[] = [
  '--collect.perf_schema.replication_applier_status_by_worker',
  '--collect.info_schema.innodb_metrics',
  '--collect.info_schema.processlist',
];

/**
 * The mysqld_exporter series recon8s' dashboard and alerts use, by where they appear: every member,
 * the primary only (semi-synchronous replication's source side), the replicas only (replica status).
 * test/e2e/mysql.test.ts proves each is served by a MySQL 9.7 member.
 */
export const EXPORTER_METRICS = {
  everyMember: [
    'mysql_up',
    'mysql_global_status_threads_connected',
    'mysql_global_status_threads_running',
    'mysql_global_variables_max_connections',
    'mysql_global_status_queries',
    'mysql_global_status_commands_total',
    'mysql_global_status_innodb_row_ops_total',
    'mysql_global_status_buffer_pool_pages',
    'mysql_global_status_innodb_row_lock_waits',
  ],
  primary: [
    'mysql_global_status_rpl_semi_sync_source_status',
    'mysql_global_status_rpl_semi_sync_source_clients',
    'mysql_global_status_rpl_semi_sync_source_wait_sessions',
  ],
  replicas: [
    'mysql_slave_status_seconds_behind_source',
    'mysql_slave_status_replica_io_running',
    'mysql_slave_status_replica_sql_running',
  ],
} as const;

/** The sidecar's option file's key in the config ConfigMap (only with spec.monitoring). */
export const EXPORTER_CNF_KEY = 'exporter.cnf';

/**
 * The sidecar's option file: mysqld's local socket, not TCP. mysqld requires TLS of every TCP login
 * (require_secure_transport), and mysqld_exporter would verify a certificate only by the name it dials,
 * which no certificate gives 127.0.0.1; on the socket, which only this pod's containers can reach,
 * there is nothing for TLS to prove. The password is not in it: mysqld_exporter reads it from
 * MYSQLD_EXPORTER_PASSWORD.
 */
export function exporterCnf(): string {
  return [
    '# The metrics sidecar (mysqld_exporter): over the local socket, as recon8s-exporter@localhost.',
    '[client]',
    `socket=${PATHS.socket}`,
    '',
  ].join('\n');
}

/** The pod's volumes the sidecar mounts (read-only): the config ConfigMap and mysqld's socket directory. */
export interface ExporterVolumes {
  readonly config: string;
  readonly run: string;
}

/** The sidecar, or nothing when monitoring is off. */
export function exporterContainers(ctx: MySQLClusterContext, volumes: ExporterVolumes): k8s.Container[] {
  const m = ctx.spec.monitoring;
  if (!m.enabled) return [];
  return [
    {
      name: 'metrics',
      image: m.image,
      imagePullPolicy: ctx.spec.imagePullPolicy,
      // On PATH in the official image (/bin/mysqld_exporter) and in the project's test image.
      command: ['mysqld_exporter'],
      args: [
        `--web.listen-address=:${m.port}`,
        `--mysqld.username=${EXPORTER_USER}`,
        // The socket (exporterCnf); the password comes from MYSQLD_EXPORTER_PASSWORD (never an argument).
        `--config.my-cnf=${PATHS.exporterConfig}/${EXPORTER_CNF_KEY}`,
        ...EXPORTER_COLLECTORS,
      ],
      env: [secretEnv(ctx, 'MYSQLD_EXPORTER_PASSWORD', SECRET_KEYS.exporterPassword)],
      ports: [{ name: METRICS_PORT_NAME, containerPort: m.port }],
      volumeMounts: [
        { name: volumes.config, mountPath: PATHS.exporterConfig, readOnly: true },
        // A socket is connected to, never written: the directory can be read-only here.
        { name: volumes.run, mountPath: PATHS.run, readOnly: true },
      ],
      securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
      resources: resourceRequirements(m.resources),
      // Restarts only this container when it stops answering; no readiness probe: a broken exporter
      // must never take a member out of its Services.
      livenessProbe: {
        httpGet: { path: '/', port: k8s.IntOrString.fromString(METRICS_PORT_NAME) },
        periodSeconds: 30,
        timeoutSeconds: 5,
        failureThreshold: 3,
      },
    },
  ];
}

/** The annotations plain Prometheus' kubernetes_sd "pod" scrape configs conventionally look for. */
export function scrapeAnnotations(ctx: MySQLClusterContext): Record<string, string> {
  const m = ctx.spec.monitoring;
  if (!m.enabled) return {};
  return { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(m.port), 'prometheus.io/path': '/metrics' };
}

export function metricsLabels(ctx: MySQLClusterContext): Record<string, string> {
  return ctx.spec.monitoring.enabled ? { [METRICS_LABEL]: METRICS_LABEL_VALUE } : {};
}

export interface MySQLPodMonitorProps {
  /** @default "recon8s-mysql" */
  readonly name?: string;
  /** @default the chart's */
  readonly namespace?: string;
  /** Labels of the PodMonitor, for the Prometheus Operator's `podMonitorSelector`. @default {} */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The namespaces whose members it scrapes; empty: every namespace.
   * @default [] (every namespace)
   */
  readonly namespaces?: readonly string[];
  /** @default "30s" */
  readonly interval?: string;
}

/**
 * A Prometheus Operator PodMonitor (monitoring.coreos.com/v1) for every MySQLCluster member that runs
 * the metrics sidecar: one for all clusters, so the controller needs no rights on PodMonitors. Each
 * series gets the labels `namespace`, `pod`, and `cluster` (the MySQLCluster's name).
 */
export class MySQLPodMonitor extends Construct {
  readonly apiObject: ApiObject;
  constructor(scope: Construct, id: string, props: MySQLPodMonitorProps = {}) {
    super(scope, id);
    const interval = props.interval ?? '30s';
    if (!/^\d+(ms|s|m|h)$/.test(interval))
      throw new Error(`MySQLPodMonitor interval: expected a duration such as "30s", got ${JSON.stringify(interval)}`);
    this.apiObject = new ApiObject(this, 'pod-monitor', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: { name: props.name ?? 'recon8s-mysql', namespace: props.namespace, labels: { ...props.labels } },
      spec: {
        selector: {
          matchLabels: {
            'app.kubernetes.io/name': APP_NAME,
            'app.kubernetes.io/component': DATABASE_COMPONENT,
            [METRICS_LABEL]: METRICS_LABEL_VALUE,
          },
        },
        namespaceSelector: props.namespaces?.length ? { matchNames: [...props.namespaces] } : { any: true },
        podMetricsEndpoints: [
          {
            port: METRICS_PORT_NAME,
            path: '/metrics',
            interval,
            relabelings: [
              {
                sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_instance'],
                targetLabel: 'cluster',
              },
            ],
          },
        ],
      },
    });
  }
}
