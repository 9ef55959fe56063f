import type { Counter, Gauge, Histogram, Registry } from './metrics.js';

/**
 * Every metric family recon8s exposes, declared once. Names, labels, help and buckets follow
 * controller-runtime and client-go where they define the metric (so existing dashboards and alerts
 * work); recon8s' own are prefixed `recon8s_`.
 */
export interface ControllerMetrics {
  readonly registry: Registry;
  /** controller_runtime_reconcile_total{controller,result=success|error|requeue|requeue_after} */
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly terminalReconcileErrors: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly maxConcurrentReconciles: Gauge<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  /** client-go's workqueue_* families, label `name` (see workqueueMetrics() in lib/queue). */
  readonly workqueue: {
    readonly depth: Gauge<'name'>;
    readonly adds: Counter<'name'>;
    readonly queueDuration: Histogram<'name'>;
    readonly workDuration: Histogram<'name'>;
    readonly unfinishedWork: Gauge<'name'>;
    readonly longestRunningProcessor: Gauge<'name'>;
    readonly retries: Counter<'name'>;
  };
  /** rest_client_requests_total{code,method,host}: code is the HTTP status, or "<error>" when there was none. */
  readonly restClientRequests: Counter<'code' | 'method' | 'host'>;
  readonly restClientRequestDuration: Histogram<'verb'>;
  /** 1 while this process holds the lease `name`, else 0. */
  readonly leaderElectionMasterStatus: Gauge<'name'>;
  /** recon8s_apply_total{kind,result}: rendered child objects, by the outcome of comparing and applying them. */
  readonly applyTotal: Counter<'kind' | 'result'>;
  readonly pruneTotal: Counter<'kind'>;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly watchRelists: Counter<'resource' | 'reason'>;
  /** recon8s_mysql_failovers_total{namespace,cluster}: replicas promoted because the primary was lost. */
  readonly mysqlFailovers: Counter<'namespace' | 'cluster'>;
  /** recon8s_mysql_switchovers_total{namespace,cluster,outcome}: planned moves of the primary. */
  readonly mysqlSwitchovers: Counter<'namespace' | 'cluster' | 'outcome'>;
  /** recon8s_mysql_replica_behind_transactions{namespace,cluster,member}: transactions of the primary not applied yet. */
  readonly mysqlReplicaBehind: Gauge<'namespace' | 'cluster' | 'member'>;
  /** recon8s_mysql_member_reachable{namespace,cluster,member}: 1 when the member answered the controller. */
  readonly mysqlMemberReachable: Gauge<'namespace' | 'cluster' | 'member'>;
  /** recon8s_mysql_backup_last_success_timestamp_seconds{namespace,cluster}: when the last backup that completed ended. */
  readonly mysqlBackupLastSuccess: Gauge<'namespace' | 'cluster'>;
  /**
   * recon8s_mysql_backup_schedule_max_interval_seconds{namespace,cluster}: the longest gap between two runs of
   * spec.backup.schedule (none while suspended, or for a schedule that does not parse or never fires).
   */
  readonly mysqlBackupScheduleMaxInterval: Gauge<'namespace' | 'cluster'>;
  /**
   * recon8s_mysql_backup_failing{namespace,cluster,task}: 1 when the last run of the backup or binlog job failed.
   * Not `job`: Prometheus sets that label on every series it scrapes (the scrape job's name), and moves a
   * series' own `job` aside to `exported_job`.
   */
  readonly mysqlBackupFailing: Gauge<'namespace' | 'cluster' | 'task'>;
  /** recon8s_mysql_backup_verified_timestamp_seconds{namespace,cluster}: when the last verification of a backup by a restore passed. */
  readonly mysqlBackupVerified: Gauge<'namespace' | 'cluster'>;
  /** recon8s_mysql_backup_verification_failed{namespace,cluster}: 1 when the last verification failed. */
  readonly mysqlBackupVerificationFailed: Gauge<'namespace' | 'cluster'>;
  /** recon8s_mysql_binlog_archived_until_timestamp_seconds{namespace,cluster}: every transaction before it is archived. */
  readonly mysqlBinlogArchivedUntil: Gauge<'namespace' | 'cluster'>;
  readonly resourceDegraded: Gauge<'kind' | 'namespace' | 'name' | 'reason'>;
  readonly mysqlPrimaryReachable: Gauge<'namespace' | 'cluster'>;
  readonly mysqlBinlogArchiveGap: Gauge<'namespace' | 'cluster'>;
  readonly mysqlMemberRole: Gauge<'namespace' | 'cluster' | 'member' | 'role'>;
  readonly mysqlErrantMembers: Gauge<'namespace' | 'cluster'>;
}

/** controller-runtime's reconcile_time_seconds buckets (since v0.15). */
export const RECONCILE_TIME_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75,
  2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

/** client-go's workqueue duration buckets: ExponentialBuckets(10e-9, 10, 12), 10 ns … 1000 s. */
export const WORKQUEUE_BUCKETS: readonly number[] = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000];

/** client-go's (component-base) rest_client_request_duration_seconds buckets. */
export const REST_CLIENT_BUCKETS: readonly number[] = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

/** Registers every family in `registry` (once per registry: a second call throws) and returns typed handles. */
export function createControllerMetrics(registry: Registry): ControllerMetrics {
  const perController = ['controller'] as const;
  const perQueue = ['name'] as const;
  const queueHistogram = (name: string, help: string): Histogram<'name'> =>
    registry.histogram({ name, help, labelNames: perQueue, buckets: WORKQUEUE_BUCKETS });
  return {
    registry,
    reconcileTotal: registry.counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
    }),
    reconcileErrors: registry.counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: perController,
    }),
    terminalReconcileErrors: registry.counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: perController,
    }),
    reconcileTime: registry.histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: perController,
      buckets: RECONCILE_TIME_BUCKETS,
    }),
    maxConcurrentReconciles: registry.gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: perController,
    }),
    activeWorkers: registry.gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: perController,
    }),
    workqueue: {
      depth: registry.gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: perQueue }),
      adds: registry.counter({
        name: 'workqueue_adds_total',
        help: 'Total number of adds handled by workqueue',
        labelNames: perQueue,
      }),
      queueDuration: queueHistogram(
        'workqueue_queue_duration_seconds',
        'How long in seconds an item stays in workqueue before being requested',
      ),
      workDuration: queueHistogram(
        'workqueue_work_duration_seconds',
        'How long in seconds processing an item from workqueue takes.',
      ),
      unfinishedWork: registry.gauge({
        name: 'workqueue_unfinished_work_seconds',
        help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
        labelNames: perQueue,
      }),
      longestRunningProcessor: registry.gauge({
        name: 'workqueue_longest_running_processor_seconds',
        help: 'How many seconds has the longest running processor for workqueue been running.',
        labelNames: perQueue,
      }),
      retries: registry.counter({
        name: 'workqueue_retries_total',
        help: 'Total number of retries handled by workqueue',
        labelNames: perQueue,
      }),
    },
    restClientRequests: registry.counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['code', 'method', 'host'],
    }),
    restClientRequestDuration: registry.histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds. Broken down by verb.',
      labelNames: ['verb'],
      buckets: REST_CLIENT_BUCKETS,
    }),
    leaderElectionMasterStatus: registry.gauge({
      name: 'leader_election_master_status',
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ['name'],
    }),
    applyTotal: registry.counter({
      name: 'recon8s_apply_total',
      help: 'Rendered child objects, by kind and by the outcome of comparing and applying them.',
      labelNames: ['kind', 'result'],
    }),
    pruneTotal: registry.counter({
      name: 'recon8s_prune_total',
      help: 'Child objects deleted because they are no longer rendered, by kind.',
      labelNames: ['kind'],
    }),
    watchRestarts: registry.counter({
      name: 'recon8s_watch_restarts_total',
      help: 'Watches re-established from the last resourceVersion, by resource and reason.',
      labelNames: ['resource', 'reason'],
    }),
    watchRelists: registry.counter({
      name: 'recon8s_watch_relists_total',
      help: 'Full relists of a resource (410 Gone, silent watch, ...), by resource and reason.',
      labelNames: ['resource', 'reason'],
    }),
    mysqlFailovers: registry.counter({
      name: 'recon8s_mysql_failovers_total',
      help: 'Replicas promoted because the primary was lost, by MySQLCluster.',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlSwitchovers: registry.counter({
      name: 'recon8s_mysql_switchovers_total',
      help: 'Planned moves of the primary (requested, rolling updates, scale-down), by MySQLCluster and outcome.',
      labelNames: ['namespace', 'cluster', 'outcome'],
    }),
    mysqlReplicaBehind: registry.gauge({
      name: 'recon8s_mysql_replica_behind_transactions',
      help: 'Transactions of the primary a replica has not applied yet, when the controller last looked.',
      labelNames: ['namespace', 'cluster', 'member'],
    }),
    mysqlMemberReachable: registry.gauge({
      name: 'recon8s_mysql_member_reachable',
      help: '1 when the member answered the controller over SQL when it last looked, else 0.',
      labelNames: ['namespace', 'cluster', 'member'],
    }),
    mysqlBackupLastSuccess: registry.gauge({
      name: 'recon8s_mysql_backup_last_success_timestamp_seconds',
      help: 'When the last backup of the MySQLCluster that completed ended (Unix time).',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlBackupScheduleMaxInterval: registry.gauge({
      name: 'recon8s_mysql_backup_schedule_max_interval_seconds',
      help: 'The longest time between two consecutive runs of the MySQLCluster backup schedule (spec.backup.schedule, UTC); absent while it is suspended, or for a schedule that does not parse or never fires.',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlBackupFailing: registry.gauge({
      name: 'recon8s_mysql_backup_failing',
      help: '1 when the last run of the MySQLCluster backup job (task="backup") or binary-log archive job (task="binlog") failed, else 0.',
      labelNames: ['namespace', 'cluster', 'task'],
    }),
    mysqlBackupVerified: registry.gauge({
      name: 'recon8s_mysql_backup_verified_timestamp_seconds',
      help: 'When the last verification of a MySQLCluster backup by a restore into a scratch server passed (Unix time).',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlBackupVerificationFailed: registry.gauge({
      name: 'recon8s_mysql_backup_verification_failed',
      help: '1 when the last verification of a MySQLCluster backup by a restore failed, else 0 (a skipped one changes nothing).',
      labelNames: ['namespace', 'cluster'],
    }),
    resourceDegraded: registry.gauge({
      name: 'recon8s_resource_degraded',
      help: "1 while a resource's Degraded condition is True, labelled with its reason (the series goes when it clears).",
      labelNames: ['kind', 'namespace', 'name', 'reason'],
    }),
    mysqlPrimaryReachable: registry.gauge({
      name: 'recon8s_mysql_primary_reachable',
      help: '1 when the recorded primary of the MySQLCluster answered the controller when it last looked, else 0.',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlMemberRole: registry.gauge({
      name: 'recon8s_mysql_member_role',
      help: '1 for the role (primary, replica or none) the controller last gave the member, 0 for the other two.',
      labelNames: ['namespace', 'cluster', 'member', 'role'],
    }),
    mysqlErrantMembers: registry.gauge({
      name: 'recon8s_mysql_errant_members',
      help: 'Members of the MySQLCluster holding transactions the primary lacks (excluded until re-provisioned).',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlBinlogArchiveGap: registry.gauge({
      name: 'recon8s_mysql_binlog_archive_gap',
      help: '1 when the last binary-log archive run of the MySQLCluster found transactions whose logs expired unarchived and that the newest backup lacks (no point-in-time restore reaches past them), else 0.',
      labelNames: ['namespace', 'cluster'],
    }),
    mysqlBinlogArchivedUntil: registry.gauge({
      name: 'recon8s_mysql_binlog_archived_until_timestamp_seconds',
      help: 'Every transaction of the MySQLCluster committed before this time (Unix) is in the binary-log archive.',
      labelNames: ['namespace', 'cluster'],
    }),
  };
}
