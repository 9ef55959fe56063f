// The alerts recon8s ships: what it promises, as Prometheus rules over its own metrics. Each says what
// to do in its `runbook` annotation, a section of docs/monitoring.md ("Alerts"); test/integration/alert-rules
// checks each one with Prometheus's own rule tester (promtool test rules) on series that must and must
// not make it fire.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidSpecError } from '../schema/validate.js';
import type { Problem } from '../schema/validate.js';

export interface AlertRulesProps {
  /**
   * A replica this many transactions behind its primary for 10 minutes is alerted on.
   * @default 10000
   */
  readonly replicaLagTransactions?: number;
  /**
   * A replica this many seconds behind its primary (Seconds_Behind_Source, from the members' metrics
   * sidecars: spec.monitoring) for 10 minutes is alerted on.
   * @default 300
   */
  readonly replicaLagSeconds?: number;
  /**
   * A MySQLCluster whose last completed backup ended longer ago than the longest gap between two runs
   * of its own backup schedule (`recon8s_mysql_backup_schedule_max_interval_seconds`, which the
   * controller works out from `spec.backup.schedule`) plus this many minutes is alerted on: room for
   * the time a backup takes and its retries (a daily schedule: 26 hours).
   * @default 120
   */
  readonly backupAgeMarginMinutes?: number;
  /**
   * A binary-log archive further behind than this is alerted on (a point-in-time restore reaches only
   * the archive); at least the archive interval (`backup.binlogIntervalMinutes`, default 5) plus a run.
   * @default 30
   */
  readonly binlogArchiveMaxLagMinutes?: number;
  /**
   * Labels of the PrometheusRule, for the Prometheus Operator's `ruleSelector`.
   * @default {}
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The PrometheusRule's name.
   * @default "recon8s-alerts"
   */
  readonly name?: string;
  /**
   * Its namespace.
   * @default the chart's
   */
  readonly namespace?: string;
}

/** The default of each prop, resolved once. */
export const DEFAULT_ALERT_THRESHOLDS = {
  replicaLagTransactions: 10_000,
  replicaLagSeconds: 300,
  backupAgeMarginMinutes: 120,
  binlogArchiveMaxLagMinutes: 30,
} as const;

/** One alerting rule, as a Prometheus rule file has it. */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels: { readonly severity: 'critical' | 'warning' | 'info' };
  readonly annotations: { readonly summary: string; readonly description: string; readonly runbook: string };
}

/** Degraded reasons with an alert of their own, left out of Recon8sDegraded. */
const DEDICATED_REASONS = { noQuorum: 'NoQuorum', restoreFailed: 'RestoreFailed' } as const;

/** Where each alert's runbook is: the section of docs/monitoring.md of the same name. */
const runbook = (alert: string): string =>
  `https://github.com/recon8s/recon8s/blob/main/docs/monitoring.md#${alert.toLowerCase()}`;

/** Validated thresholds, every problem at once. */
function thresholds(props: AlertRulesProps): { -readonly [K in keyof typeof DEFAULT_ALERT_THRESHOLDS]: number } {
  const resolved = {
    ...DEFAULT_ALERT_THRESHOLDS,
    ...withoutUndefined({
      replicaLagTransactions: props.replicaLagTransactions,
      replicaLagSeconds: props.replicaLagSeconds,
      backupAgeMarginMinutes: props.backupAgeMarginMinutes,
      binlogArchiveMaxLagMinutes: props.binlogArchiveMaxLagMinutes,
    }),
  };
  const problems: Problem[] = [];
  const positive = (field: keyof typeof DEFAULT_ALERT_THRESHOLDS, integer: boolean): void => {
    const v = resolved[field];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v)))
      problems.push({ field, value: v, expected: integer ? 'a positive integer' : 'a positive number' });
  };
  positive('replicaLagTransactions', true);
  positive('replicaLagSeconds', false);
  positive('backupAgeMarginMinutes', false);
  positive('binlogArchiveMaxLagMinutes', false);
  if (problems.length > 0) throw new InvalidSpecError('Recon8sAlertRules', problems);
  return resolved;
}

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The rules, in one group. Pure: the same props give the same rules. */
export function alertRules(props: AlertRulesProps = {}): AlertRule[] {
  const t = thresholds(props);
  const cluster = '{{ $labels.namespace }}/{{ $labels.cluster }}';
  const rule = (
    alert: string,
    severity: AlertRule['labels']['severity'],
    expr: string,
    forDuration: string | undefined,
    summary: string,
    description: string,
  ): AlertRule => ({
    alert,
    expr,
    ...(forDuration ? { for: forDuration } : {}),
    labels: { severity },
    annotations: { summary, description, runbook: runbook(alert) },
  });
  return [
    rule(
      'Recon8sControllerNotLeading',
      'critical',
      'max by (name) (leader_election_master_status) < 1 or absent(leader_election_master_status)',
      '5m',
      'No recon8s controller leads',
      'No controller has held the Lease {{ $labels.name }} for 5 minutes, or no controller reports at all: nothing fails over, nothing is reconciled.',
    ),
    rule(
      'Recon8sMySQLPrimaryUnreachable',
      'critical',
      'recon8s_mysql_primary_reachable == 0',
      '1m',
      `The primary of MySQLCluster ${cluster} does not answer`,
      `The recorded primary of ${cluster} has not answered the controller for a minute: writes fail until it answers again or a replica is promoted (with a majority: at once when its mysqld crashed, after failoverAfterSeconds when it is silent).`,
    ),
    rule(
      'Recon8sMySQLFailedOver',
      'warning',
      'increase(recon8s_mysql_failovers_total[15m]) > 0',
      undefined,
      `MySQLCluster ${cluster} failed over`,
      `A replica of ${cluster} was promoted because its primary was lost, in the last 15 minutes.`,
    ),
    rule(
      'Recon8sMySQLErrantMember',
      'warning',
      'recon8s_mysql_errant_members > 0',
      '5m',
      `MySQLCluster ${cluster} has a member with errant transactions`,
      `{{ $value }} member(s) of ${cluster} hold transactions the primary lacks: excluded from both Services and never promoted until re-provisioned.`,
    ),
    rule(
      'Recon8sMySQLReplicaLagging',
      'warning',
      `recon8s_mysql_replica_behind_transactions > ${t.replicaLagTransactions}`,
      '10m',
      `A replica of MySQLCluster ${cluster} is behind`,
      `{{ $labels.member }} of ${cluster} has been more than ${t.replicaLagTransactions} transactions behind its primary for 10 minutes ({{ $value }} now).`,
    ),
    // The next two read the members' metrics sidecars (spec.monitoring): series with a pod label.
    rule(
      'Recon8sMySQLReplicaLaggingSeconds',
      'warning',
      `mysql_slave_status_seconds_behind_source > ${t.replicaLagSeconds}`,
      '10m',
      `A replica of MySQLCluster ${cluster} is behind`,
      `{{ $labels.pod }} of ${cluster} has been more than ${t.replicaLagSeconds} seconds behind its primary for 10 minutes ({{ $value }} s now): reads from the replicas Service are that stale, and a failover would wait for it to catch up.`,
    ),
    rule(
      'Recon8sMySQLSemiSyncWaiting',
      'critical',
      // Sessions waiting at every scrape for 5 minutes: not a busy moment, writes that do not finish.
      'min_over_time(mysql_global_status_rpl_semi_sync_source_wait_sessions[5m]) > 0',
      '5m',
      `Writes to MySQLCluster ${cluster} wait for a replica acknowledgement`,
      `Sessions on {{ $labels.pod }} of ${cluster} have waited for a replica to acknowledge their commits for 10 minutes ({{ $value }} waiting now): no replica acknowledges (all down or not replicating), and recon8s never lets the primary fall back to asynchronous replication.`,
    ),
    rule(
      'Recon8sMySQLBackupFailing',
      'warning',
      'recon8s_mysql_backup_failing == 1',
      undefined,
      `The {{ $labels.task }} job of MySQLCluster ${cluster} fails`,
      `The last run of the {{ $labels.task }} job of ${cluster} failed (task="backup": the backup; task="binlog": the binary-log archive).`,
    ),
    // Per cluster, against its own schedule: both series come from the controller with the same labels.
    // A cluster with no interval exported (no backup, suspended, a schedule that never fires or that the
    // API server refuses) has nothing to compare with, so this never fires for it.
    rule(
      'Recon8sMySQLBackupTooOld',
      'warning',
      `time() - recon8s_mysql_backup_last_success_timestamp_seconds > recon8s_mysql_backup_schedule_max_interval_seconds + ${t.backupAgeMarginMinutes} * 60`,
      '15m',
      `The last backup of MySQLCluster ${cluster} is too old`,
      `The last backup of ${cluster} that completed ended longer ago than its schedule (spec.backup.schedule) leaves between two backups, plus ${t.backupAgeMarginMinutes} minutes.`,
    ),
    rule(
      'Recon8sMySQLBinlogArchiveBehind',
      'warning',
      `time() - recon8s_mysql_binlog_archived_until_timestamp_seconds > ${t.binlogArchiveMaxLagMinutes} * 60`,
      '10m',
      `The binary-log archive of MySQLCluster ${cluster} is behind`,
      `The binary logs of ${cluster} were last archived more than ${t.binlogArchiveMaxLagMinutes} minutes ago: a point-in-time restore reaches no later than that.`,
    ),
    rule(
      'Recon8sMySQLBinlogArchiveGap',
      'critical',
      'recon8s_mysql_binlog_archive_gap == 1',
      undefined,
      `Binary logs of MySQLCluster ${cluster} expired before they were archived`,
      `The last binary-log archive run of ${cluster} found transactions in no archived log and not in the newest backup: no point-in-time restore reaches past them until a new backup is taken.`,
    ),
    // Two reasons that need a person now, not in 15 minutes: their own alerts (the generic one leaves them out).
    rule(
      'Recon8sMySQLNoQuorum',
      'critical',
      `recon8s_resource_degraded{kind="MySQLCluster",reason="${DEDICATED_REASONS.noQuorum}"} == 1`,
      '1m',
      'The primary of MySQLCluster {{ $labels.namespace }}/{{ $labels.name }} is lost and no majority answers',
      'The primary of {{ $labels.namespace }}/{{ $labels.name }} is down and fewer than a majority of its members answer: recon8s does not fail over without a majority (a promoted minority could lose acknowledged writes), so writes fail until members come back.',
    ),
    rule(
      'Recon8sMySQLRestoreFailed',
      'critical',
      `recon8s_resource_degraded{kind="MySQLCluster",reason="${DEDICATED_REASONS.restoreFailed}"} == 1`,
      undefined,
      'MySQLCluster {{ $labels.namespace }}/{{ $labels.name }} cannot restore',
      'The restore of {{ $labels.namespace }}/{{ $labels.name }} (spec.restore) failed and is retried with back-off: the cluster serves nothing until its spec is fixed or the store answers.',
    ),
    rule(
      'Recon8sDegraded',
      'warning',
      `recon8s_resource_degraded{reason!~"${Object.values(DEDICATED_REASONS).join('|')}"} == 1`,
      '15m',
      '{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }} is degraded: {{ $labels.reason }}',
      'Its Degraded condition has said {{ $labels.reason }} for 15 minutes: `kubectl describe` it for the message and the Events.',
    ),
  ];
}

/**
 * A Prometheus Operator PrometheusRule (monitoring.coreos.com/v1) with the alerts recon8s ships, in the
 * chart's namespace.
 */
export class Recon8sAlertRules extends Construct {
  readonly rule: ApiObject;

  /** @throws InvalidSpecError naming every threshold that is not a positive number. */
  constructor(scope: Construct, id: string, props: AlertRulesProps = {}) {
    const rules = alertRules(props);
    super(scope, id);
    this.rule = new ApiObject(this, 'rule', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: {
        name: props.name ?? 'recon8s-alerts',
        ...(props.namespace ? { namespace: props.namespace } : {}),
        labels: { 'app.kubernetes.io/name': 'recon8s', ...props.labels },
      },
      spec: { groups: [{ name: 'recon8s', rules }] },
    });
  }
}
