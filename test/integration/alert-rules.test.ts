// The shipped alert rules, run through Prometheus's own rule tester (promtool test rules: the real
// PromQL engine and alerting-rule evaluation) on series that must, and must not, make each one fire.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { AlertRule } from '../../constructs/operator/alert-rules.js';
import { alertRules } from '../../constructs/operator/alert-rules.js';
import { REPO_ROOT } from '../support/run.js';

/** A series and its values, in promtool's expanding notation ("1x10" is eleven samples of 1). */
type Series = readonly [series: string, values: string];
interface Case {
  readonly alert: string;
  readonly series: readonly Series[];
  /** Evaluated at these times: the alert's labels there (none: it must not fire). */
  readonly at: readonly { readonly time: string; readonly fires: readonly Record<string, string>[] }[];
}

const DB = { namespace: 'shop', cluster: 'db' };
const db = (name: string, labels: Record<string, string> = {}): string =>
  `${name}{${Object.entries({ ...DB, ...labels })
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`;

const CASES: readonly Case[] = [
  {
    alert: 'Recon8sControllerNotLeading',
    series: [
      ['leader_election_master_status{name="recon8s-controller",pod="a"}', '1x10 0x20'],
      ['leader_election_master_status{name="recon8s-controller",pod="b"}', '0x30'],
    ],
    at: [
      { time: '9m', fires: [] },
      // Nobody leads from 11m: pending for 5m, firing from 16m.
      { time: '14m', fires: [] },
      { time: '17m', fires: [{ name: 'recon8s-controller' }] },
    ],
  },
  {
    alert: 'Recon8sControllerNotLeading',
    series: [['up{job="other"}', '1x10']],
    at: [{ time: '6m', fires: [{}] }],
  },
  {
    alert: 'Recon8sMySQLPrimaryUnreachable',
    series: [[db('recon8s_mysql_primary_reachable'), '1x5 0x5 1x5']],
    at: [
      { time: '5m', fires: [] },
      { time: '7m', fires: [DB] },
      { time: '12m', fires: [] },
    ],
  },
  {
    alert: 'Recon8sMySQLFailedOver',
    series: [[db('recon8s_mysql_failovers_total'), '0x5 1x40']],
    at: [
      { time: '4m', fires: [] },
      { time: '10m', fires: [DB] },
      { time: '40m', fires: [] },
    ],
  },
  {
    // Why the controller exports the counter at 0 from its first look (mysql-manager-steps.test.ts): a
    // series whose first sample is already 1 shows Prometheus no increase, and would raise nothing.
    alert: 'Recon8sMySQLFailedOver',
    series: [[db('recon8s_mysql_failovers_total'), '_x5 1x40']],
    at: [{ time: '10m', fires: [] }],
  },
  {
    alert: 'Recon8sMySQLErrantMember',
    series: [[db('recon8s_mysql_errant_members'), '0x3 1x10']],
    at: [
      { time: '5m', fires: [] },
      { time: '9m', fires: [DB] },
    ],
  },
  {
    alert: 'Recon8sMySQLReplicaLagging',
    series: [
      [db('recon8s_mysql_replica_behind_transactions', { member: 'db-1' }), '20000x20'],
      [db('recon8s_mysql_replica_behind_transactions', { member: 'db-2' }), '5x20'],
    ],
    at: [
      { time: '5m', fires: [] },
      { time: '11m', fires: [{ ...DB, member: 'db-1' }] },
    ],
  },
  {
    alert: 'Recon8sMySQLReplicaLaggingSeconds',
    series: [
      [db('mysql_slave_status_seconds_behind_source', { pod: 'db-1' }), '0x3 400x20'],
      [db('mysql_slave_status_seconds_behind_source', { pod: 'db-2' }), '0x3 200x20'],
    ],
    at: [
      { time: '3m', fires: [] },
      // Above 300 s from 4m: pending for 10m, firing from 14m; db-2 (200 s) never.
      { time: '12m', fires: [] },
      { time: '15m', fires: [{ ...DB, pod: 'db-1' }] },
    ],
  },
  {
    alert: 'Recon8sMySQLSemiSyncWaiting',
    series: [
      // db-0 has sessions waiting from 2m on; db-1 has a busy moment now and then, never for long.
      [db('mysql_global_status_rpl_semi_sync_source_wait_sessions', { pod: 'db-0' }), '0 0 2x20'],
      [db('mysql_global_status_rpl_semi_sync_source_wait_sessions', { pod: 'db-1' }), '0 3 0 0 5 0 0 1 0 0 4 0x10'],
    ],
    at: [
      { time: '6m', fires: [] },
      // Waiting at every scrape of the 5 minutes to 7m, then for 5m more: firing from 12m.
      { time: '10m', fires: [] },
      { time: '13m', fires: [{ ...DB, pod: 'db-0' }] },
    ],
  },
  {
    alert: 'Recon8sMySQLBackupFailing',
    series: [
      [db('recon8s_mysql_backup_failing', { task: 'backup' }), '0 1 1 0'],
      [db('recon8s_mysql_backup_failing', { task: 'binlog' }), '0x3'],
    ],
    at: [
      { time: '0m', fires: [] },
      { time: '2m', fires: [{ ...DB, task: 'backup' }] },
      { time: '3m', fires: [] },
    ],
  },
  {
    // Each cluster against its own schedule. The last backup of each ended at t=0: db backs up hourly
    // (too old past 1 hour + the 2-hour margin: 180m, firing 15 minutes on), nightly daily (past 26
    // hours: 1560m); paused exports no interval (suspended), so it never fires.
    alert: 'Recon8sMySQLBackupTooOld',
    series: [
      [db('recon8s_mysql_backup_last_success_timestamp_seconds'), '0+0x2000'],
      [db('recon8s_mysql_backup_schedule_max_interval_seconds'), '3600+0x2000'],
      [db('recon8s_mysql_backup_last_success_timestamp_seconds', { cluster: 'nightly' }), '0+0x2000'],
      [db('recon8s_mysql_backup_schedule_max_interval_seconds', { cluster: 'nightly' }), '86400+0x2000'],
      [db('recon8s_mysql_backup_last_success_timestamp_seconds', { cluster: 'paused' }), '0+0x2000'],
    ],
    at: [
      { time: '180m', fires: [] },
      // Older than 3 hours from 181m: pending for 15 minutes.
      { time: '195m', fires: [] },
      { time: '197m', fires: [DB] },
      { time: '1560m', fires: [DB] },
      { time: '1577m', fires: [DB, { ...DB, cluster: 'nightly' }] },
    ],
  },
  {
    // An hourly schedule whose backups take 70 minutes: the CronJob skips the run due while one runs
    // (concurrencyPolicy Forbid), so one ends every 2 hours. Within the margin: never too old.
    alert: 'Recon8sMySQLBackupTooOld',
    series: [
      [db('recon8s_mysql_backup_last_success_timestamp_seconds'), '0x119 7200x119 14400x119 21600x119'],
      [db('recon8s_mysql_backup_schedule_max_interval_seconds'), '3600+0x480'],
    ],
    at: [
      { time: '119m', fires: [] },
      { time: '359m', fires: [] },
      { time: '470m', fires: [] },
    ],
  },
  {
    alert: 'Recon8sMySQLBinlogArchiveBehind',
    series: [[db('recon8s_mysql_binlog_archived_until_timestamp_seconds'), '0+300x5 1500x60']],
    at: [
      { time: '20m', fires: [] },
      // Archived until 25m (1500 s) from then on: behind by more than 30m from 55m, firing from 65m.
      { time: '60m', fires: [] },
      { time: '66m', fires: [DB] },
    ],
  },
  {
    alert: 'Recon8sMySQLBinlogArchiveGap',
    series: [
      [db('recon8s_mysql_binlog_archive_gap'), '0x3 1x3 0x3'],
      [db('recon8s_mysql_binlog_archive_gap', { cluster: 'other' }), '0x10'],
    ],
    at: [
      { time: '2m', fires: [] },
      { time: '5m', fires: [DB] },
      // A backup closed the gap: the next run found none.
      { time: '8m', fires: [] },
    ],
  },
  {
    alert: 'Recon8sDegraded',
    series: [
      [
        'recon8s_resource_degraded{kind="MySQLCluster",namespace="shop",name="db",reason="BackupVolumeMissing"}',
        '1x20',
      ],
      ['recon8s_resource_degraded{kind="App",namespace="shop",name="web",reason="ImagePullFailed"}', '1x5'],
      // Reasons with an alert of their own never fire this one too.
      ['recon8s_resource_degraded{kind="MySQLCluster",namespace="shop",name="old",reason="RestoreFailed"}', '1x20'],
      ['recon8s_resource_degraded{kind="MySQLCluster",namespace="shop",name="lost",reason="NoQuorum"}', '1x20'],
    ],
    at: [
      { time: '10m', fires: [] },
      { time: '16m', fires: [{ kind: 'MySQLCluster', namespace: 'shop', name: 'db', reason: 'BackupVolumeMissing' }] },
    ],
  },
  {
    alert: 'Recon8sMySQLNoQuorum',
    series: [
      ['recon8s_resource_degraded{kind="MySQLCluster",namespace="shop",name="db",reason="NoQuorum"}', '0x2 1x5 0x5'],
      ['recon8s_resource_degraded{kind="MySQLCluster",namespace="shop",name="other",reason="FailoverWaiting"}', '1x12'],
    ],
    at: [
      { time: '3m', fires: [] },
      { time: '5m', fires: [{ kind: 'MySQLCluster', namespace: 'shop', name: 'db', reason: 'NoQuorum' }] },
      { time: '10m', fires: [] },
    ],
  },
  {
    alert: 'Recon8sMySQLRestoreFailed',
    series: [
      [
        'recon8s_resource_degraded{kind="MySQLCluster",namespace="shop",name="db",reason="RestoreFailed"}',
        '0x2 1x3 0x3',
      ],
      ['recon8s_resource_degraded{kind="App",namespace="shop",name="web",reason="ImagePullFailed"}', '1x8'],
    ],
    at: [
      { time: '1m', fires: [] },
      { time: '3m', fires: [{ kind: 'MySQLCluster', namespace: 'shop', name: 'db', reason: 'RestoreFailed' }] },
      { time: '7m', fires: [] },
    ],
  },
];

/** An annotation as Prometheus renders it, for the templates the rules use ($labels.x and $value). */
function rendered(template: string, labels: Record<string, string>, value: string): string {
  return template
    .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, k: string) => labels[k] ?? '')
    .replace(/\{\{ \$value \}\}/g, value);
}

/** The value each alert's expression has where the cases make it fire. */
const VALUE: Readonly<Record<string, string>> = {
  Recon8sMySQLErrantMember: '1',
  Recon8sMySQLReplicaLagging: '20000',
  Recon8sMySQLReplicaLaggingSeconds: '400',
  Recon8sMySQLSemiSyncWaiting: '2',
};

describe("the shipped alert rules, on Prometheus's own engine (promtool)", function () {
  this.timeout(30 * 60_000);
  let promtool = '';
  let dir = '';
  const rules = alertRules();

  before(function () {
    this.timeout(30 * 60_000);
    promtool = execFileSync('bash', [join(REPO_ROOT, 'test/prometheus/build-promtool.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
    dir = mkdtempSync(join(tmpdir(), 'recon8s-alerts-'));
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: [{ name: 'recon8s', rules }] }));
  });
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  it('are valid rules (promtool check rules)', () => {
    const r = spawnSync(promtool, ['check', 'rules', join(dir, 'rules.yaml')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it('each fire when, and only when, what they promise to watch goes wrong (promtool test rules)', () => {
    const byName = new Map<string, AlertRule>(rules.map((r) => [r.alert, r]));
    assert.deepEqual(
      [...new Set(CASES.map((c) => c.alert))].sort(),
      [...byName.keys()].sort(),
      'every alert has a case',
    );
    const tests = CASES.map((c) => ({
      interval: '1m',
      input_series: c.series.map(([series, values]) => ({ series, values })),
      alert_rule_test: c.at.map(({ time, fires }) => ({
        eval_time: time,
        alertname: c.alert,
        exp_alerts: fires.map((labels) => {
          const rule = byName.get(c.alert) as AlertRule;
          const all = { ...labels, ...rule.labels };
          return {
            exp_labels: all,
            exp_annotations: Object.fromEntries(
              Object.entries(rule.annotations).map(([k, v]) => [k, rendered(v, all, VALUE[c.alert] ?? '')]),
            ),
          };
        }),
      })),
    }));
    writeFileSync(join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = spawnSync(promtool, ['test', 'rules', join(dir, 'tests.yaml')], { encoding: 'utf8', cwd: dir });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  });
});
