// The Grafana dashboard recon8s ships: one MySQLCluster at a time (variables namespace and cluster),
// from the controller's metrics (topology, failovers, backups, archive) and the members' metrics
// sidecars (spec.monitoring: lag in seconds, queries and writes, connections, InnoDB, semi-sync).
// test/integration/dashboard.test.ts parses every query with promtool and checks that each names only
// metrics that are exported: CONTROLLER_METRICS against the controller's real registry, and
// EXPORTER_METRICS, which test/e2e/mysql.test.ts finds served by a MySQL 9.7 member.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { EXPORTER_METRICS } from '../mysql/exporter.js';

/** The controller's series the dashboard reads (test/integration/dashboard.test.ts checks each is registered). */
export const CONTROLLER_METRICS: readonly string[] = [
  'recon8s_mysql_member_role',
  'recon8s_mysql_member_reachable',
  'recon8s_mysql_primary_reachable',
  'recon8s_mysql_errant_members',
  'recon8s_mysql_replica_behind_transactions',
  'recon8s_mysql_failovers_total',
  'recon8s_mysql_switchovers_total',
  'recon8s_mysql_backup_last_success_timestamp_seconds',
  'recon8s_mysql_backup_failing',
  'recon8s_mysql_binlog_archived_until_timestamp_seconds',
  'recon8s_mysql_binlog_archive_gap',
  'recon8s_resource_degraded',
  'leader_election_master_status',
];

/** Every metric a panel may name: the controller's and the members' sidecars'. */
export const DASHBOARD_METRICS: readonly string[] = [
  ...CONTROLLER_METRICS,
  ...EXPORTER_METRICS.everyMember,
  ...EXPORTER_METRICS.primary,
  ...EXPORTER_METRICS.replicas,
];

export const DASHBOARD_UID = 'recon8s-mysql';

/** One query of a panel. */
export interface DashboardTarget {
  readonly expr: string;
  readonly legendFormat: string;
  readonly instant?: boolean;
}

interface Panel {
  readonly title: string;
  readonly description: string;
  readonly type: 'timeseries' | 'stat' | 'table';
  readonly unit?: string;
  readonly targets: readonly DashboardTarget[];
}

// Controller series carry namespace, cluster (and member); the sidecars' namespace, cluster (the
// PodMonitor's relabeling of app.kubernetes.io/instance) and pod.
const SEL = 'namespace="$namespace", cluster="$cluster"';
const WRITE_COMMANDS = 'insert|insert_select|update|update_multi|delete|delete_multi|replace|replace_select';

const ROWS: readonly { readonly title: string; readonly panels: readonly Panel[] }[] = [
  {
    title: 'Topology',
    panels: [
      {
        title: 'Members and roles',
        description:
          'The role the controller last gave each member (the pod label the Services select by), and whether it answered.',
        type: 'table',
        targets: [
          { expr: `recon8s_mysql_member_role{${SEL}} == 1`, legendFormat: '{{member}} {{role}}', instant: true },
          { expr: `recon8s_mysql_member_reachable{${SEL}}`, legendFormat: '{{member}} answers', instant: true },
        ],
      },
      {
        title: 'Primary answers',
        description:
          'Whether the recorded primary answered the controller (0: writes fail until it does or a failover).',
        type: 'stat',
        targets: [{ expr: `recon8s_mysql_primary_reachable{${SEL}}`, legendFormat: 'primary' }],
      },
      {
        title: 'Errant members',
        description: 'Members holding transactions the primary lacks: excluded until re-provisioned.',
        type: 'stat',
        targets: [{ expr: `recon8s_mysql_errant_members{${SEL}}`, legendFormat: 'errant' }],
      },
      {
        title: 'Degraded',
        description: 'The Degraded condition of the MySQLCluster, by reason.',
        type: 'stat',
        targets: [
          {
            expr: `recon8s_resource_degraded{kind="MySQLCluster", namespace="$namespace", name="$cluster"}`,
            legendFormat: '{{reason}}',
          },
        ],
      },
      {
        title: 'Failovers and switchovers',
        description: 'Primaries lost and replaced, and planned moves of the primary by outcome, in the range shown.',
        type: 'stat',
        targets: [
          { expr: `sum(increase(recon8s_mysql_failovers_total{${SEL}}[$__range]))`, legendFormat: 'failovers' },
          {
            expr: `sum by (outcome) (increase(recon8s_mysql_switchovers_total{${SEL}}[$__range]))`,
            legendFormat: 'switchovers {{outcome}}',
          },
        ],
      },
      {
        title: 'Controller leading',
        description: 'Whether a recon8s controller holds the leader Lease: without one nothing fails over.',
        type: 'stat',
        targets: [{ expr: 'max(leader_election_master_status)', legendFormat: 'leading' }],
      },
    ],
  },
  {
    title: 'Replication',
    panels: [
      {
        title: 'Replica lag (seconds)',
        description: 'Seconds_Behind_Source of each replica (SHOW REPLICA STATUS, from its metrics sidecar).',
        type: 'timeseries',
        unit: 's',
        targets: [{ expr: `mysql_slave_status_seconds_behind_source{${SEL}}`, legendFormat: '{{pod}}' }],
      },
      {
        title: 'Replica lag (transactions)',
        description: 'Transactions of the primary each replica has not applied, as the controller counts them.',
        type: 'timeseries',
        unit: 'short',
        targets: [{ expr: `recon8s_mysql_replica_behind_transactions{${SEL}}`, legendFormat: '{{member}}' }],
      },
      {
        title: 'Replication threads',
        description: 'The receiver (IO) and applier (SQL) threads of each replica: 1 running, 0 stopped.',
        type: 'timeseries',
        targets: [
          { expr: `mysql_slave_status_replica_io_running{${SEL}}`, legendFormat: '{{pod}} receiver' },
          { expr: `mysql_slave_status_replica_sql_running{${SEL}}`, legendFormat: '{{pod}} applier' },
        ],
      },
      {
        title: 'Semi-synchronous replication',
        description:
          'At the primary: on (1) or off, replicas acknowledging, and sessions waiting for an acknowledgement (commits blocked while it stays above 0).',
        type: 'timeseries',
        targets: [
          { expr: `mysql_global_status_rpl_semi_sync_source_status{${SEL}}`, legendFormat: '{{pod}} on' },
          { expr: `mysql_global_status_rpl_semi_sync_source_clients{${SEL}}`, legendFormat: '{{pod}} acknowledging' },
          {
            expr: `mysql_global_status_rpl_semi_sync_source_wait_sessions{${SEL}}`,
            legendFormat: '{{pod}} waiting sessions',
          },
        ],
      },
    ],
  },
  {
    title: 'Load',
    panels: [
      {
        title: 'Queries per second',
        description: 'Statements executed per member (Queries).',
        type: 'timeseries',
        unit: 'reqps',
        targets: [
          {
            expr: `sum by (pod) (rate(mysql_global_status_queries{${SEL}}[$__rate_interval]))`,
            legendFormat: '{{pod}}',
          },
        ],
      },
      {
        title: 'Writes per second',
        description: 'INSERT, UPDATE, DELETE and REPLACE statements per member.',
        type: 'timeseries',
        unit: 'wps',
        targets: [
          {
            expr: `sum by (pod) (rate(mysql_global_status_commands_total{${SEL}, command=~"${WRITE_COMMANDS}"}[$__rate_interval]))`,
            legendFormat: '{{pod}}',
          },
        ],
      },
      {
        title: 'Connections',
        description: 'Open and running sessions per member, against max_connections.',
        type: 'timeseries',
        targets: [
          { expr: `mysql_global_status_threads_connected{${SEL}}`, legendFormat: '{{pod}} connected' },
          { expr: `mysql_global_status_threads_running{${SEL}}`, legendFormat: '{{pod}} running' },
          { expr: `max(mysql_global_variables_max_connections{${SEL}})`, legendFormat: 'max_connections' },
        ],
      },
      {
        title: 'InnoDB rows',
        description: 'Rows read, inserted, updated and deleted per second, per member.',
        type: 'timeseries',
        unit: 'rowsps',
        targets: [
          {
            expr: `sum by (pod, operation) (rate(mysql_global_status_innodb_row_ops_total{${SEL}}[$__rate_interval]))`,
            legendFormat: '{{pod}} {{operation}}',
          },
        ],
      },
      {
        title: 'InnoDB buffer pool',
        description: 'Buffer pool pages by state, per member.',
        type: 'timeseries',
        targets: [
          {
            expr: `sum by (pod, state) (mysql_global_status_buffer_pool_pages{${SEL}})`,
            legendFormat: '{{pod}} {{state}}',
          },
        ],
      },
      {
        title: 'InnoDB row lock waits',
        description: 'Row lock waits per second, per member.',
        type: 'timeseries',
        targets: [
          {
            expr: `rate(mysql_global_status_innodb_row_lock_waits{${SEL}}[$__rate_interval])`,
            legendFormat: '{{pod}}',
          },
        ],
      },
      {
        title: 'Metrics sidecars up',
        description: 'Whether each sidecar could log in to its member (mysql_up).',
        type: 'stat',
        targets: [{ expr: `mysql_up{${SEL}}`, legendFormat: '{{pod}}' }],
      },
    ],
  },
  {
    title: 'Backups',
    panels: [
      {
        title: 'Last backup age',
        description: 'Time since the last completed backup ended.',
        type: 'stat',
        unit: 's',
        targets: [
          {
            expr: `time() - recon8s_mysql_backup_last_success_timestamp_seconds{${SEL}}`,
            legendFormat: 'last backup',
          },
        ],
      },
      {
        title: 'Binary-log archive coverage',
        description:
          'How far behind now the binary-log archive reaches: a point-in-time restore can reach no later than this long ago.',
        type: 'timeseries',
        unit: 's',
        targets: [
          {
            expr: `time() - recon8s_mysql_binlog_archived_until_timestamp_seconds{${SEL}}`,
            legendFormat: 'archive behind',
          },
        ],
      },
      {
        title: 'Backup jobs failing, archive gaps',
        description:
          'The last run of the backup job and of the binary-log archive job: 1 failed. Archive gap 1: binary logs expired unarchived, and no point-in-time restore reaches past them until a new backup.',
        type: 'stat',
        targets: [
          { expr: `recon8s_mysql_backup_failing{${SEL}}`, legendFormat: '{{task}} failing' },
          { expr: `recon8s_mysql_binlog_archive_gap{${SEL}}`, legendFormat: 'archive gap' },
        ],
      },
    ],
  },
];

/** Every query of the dashboard, with the title of its panel (for the validation test). */
export function dashboardQueries(): { readonly panel: string; readonly expr: string }[] {
  return ROWS.flatMap((r) => r.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr }))));
}

const WIDTH = 24;

/** The dashboard as Grafana's JSON model (schemaVersion 39: Grafana 10 and later). */
export function grafanaDashboard(): Record<string, unknown> {
  const datasource = { type: 'prometheus', uid: '${datasource}' };
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  for (const row of ROWS) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { h: 1, w: WIDTH, x: 0, y } });
    y += 1;
    const width = row.panels.length >= 4 ? 6 : WIDTH / row.panels.length;
    row.panels.forEach((p, i) => {
      const perLine = WIDTH / width;
      panels.push({
        id: id++,
        type: p.type,
        title: p.title,
        description: p.description,
        datasource,
        gridPos: { h: 8, w: width, x: (i % perLine) * width, y: y + Math.floor(i / perLine) * 8 },
        fieldConfig: { defaults: p.unit ? { unit: p.unit } : {}, overrides: [] },
        options: {},
        targets: p.targets.map((t, j) => ({
          refId: String.fromCharCode(65 + j),
          datasource,
          expr: t.expr,
          legendFormat: t.legendFormat,
          ...(t.instant || p.type === 'table' ? { instant: true, range: false, format: 'table' } : {}),
        })),
      });
    });
    y += Math.ceil(row.panels.length / (WIDTH / width)) * 8;
  }
  const variable = (name: string, label: string, query: string) => ({
    name,
    label,
    type: 'query',
    datasource,
    query: { query, refId: name },
    definition: query,
    refresh: 2,
    sort: 1,
    includeAll: false,
    multi: false,
  });
  return {
    uid: DASHBOARD_UID,
    title: 'recon8s / MySQLCluster',
    description:
      'One MySQLCluster: topology, replication, load and backups, from the recon8s controller and the members metrics sidecars (spec.monitoring).',
    tags: ['recon8s', 'mysql'],
    editable: true,
    schemaVersion: 39,
    version: 1,
    refresh: '30s',
    time: { from: 'now-3h', to: 'now' },
    timezone: 'browser',
    graphTooltip: 1,
    templating: {
      list: [
        { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus' },
        variable('namespace', 'Namespace', 'label_values(recon8s_mysql_member_role, namespace)'),
        variable('cluster', 'MySQLCluster', 'label_values(recon8s_mysql_member_role{namespace="$namespace"}, cluster)'),
      ],
    },
    annotations: {
      list: [
        {
          name: 'Failovers',
          datasource,
          enable: true,
          iconColor: 'red',
          expr: `changes(recon8s_mysql_failovers_total{${SEL}}[2m]) > 0`,
          titleFormat: 'failover',
        },
      ],
    },
    panels,
  };
}

export interface DashboardProps {
  /** @default "recon8s-dashboard" */
  readonly name?: string;
  /** @default the chart's */
  readonly namespace?: string;
  /**
   * Labels of the ConfigMap besides `grafana_dashboard: "1"` (what Grafana's dashboard sidecar, as the
   * grafana and kube-prometheus-stack charts run it, looks for).
   * @default {}
   */
  readonly labels?: Readonly<Record<string, string>>;
}

/** The dashboard in a ConfigMap labelled for Grafana's dashboard sidecar. */
export class Recon8sDashboard extends Construct {
  readonly configMap: ApiObject;
  constructor(scope: Construct, id: string, props: DashboardProps = {}) {
    super(scope, id);
    this.configMap = new ApiObject(this, 'config-map', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: props.name ?? 'recon8s-dashboard',
        namespace: props.namespace,
        labels: { ...props.labels, grafana_dashboard: '1' },
      },
      data: { 'recon8s-mysql.json': `${JSON.stringify(grafanaDashboard(), null, 2)}\n` },
    });
  }
}
