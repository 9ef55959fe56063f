import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import { alertRules, formatProblem } from '../../constructs/index.js';
import {
  BackupIntervalSeries,
  backupScheduleIntervalSeconds,
  longestCronGapSeconds,
  parseCron,
} from '../../lib/controller/mysql-cluster/backup-schedule.js';
import type { CronSchedule } from '../../lib/controller/mysql-cluster/backup-schedule.js';
import { createControllerMetrics } from '../../lib/observability/controller-metrics.js';
import { Registry } from '../../lib/observability/metrics.js';

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

function schedule(expression: string): CronSchedule {
  const parsed = parseCron(expression);
  if ('problem' in parsed) assert.fail(formatProblem(parsed.problem));
  return parsed.schedule;
}
const gap = (expression: string): number | undefined => longestCronGapSeconds(schedule(expression));

/**
 * The same, found another way: every firing minute by minute from `from` for `days` days, through
 * Date's own calendar (the schedule's fields checked as Kubernetes' cron checks them).
 */
function gapByWalking(expression: string, from: string, days: number): number | undefined {
  const s = schedule(expression);
  const both = s.dayOfMonthStar || s.dayOfWeekStar;
  let previous: number | undefined;
  let longest: number | undefined;
  const start = Date.parse(from);
  for (let t = start; t < start + days * DAY * 1000; t += MINUTE * 1000) {
    const d = new Date(t);
    const dom = s.daysOfMonth.includes(d.getUTCDate());
    const dow = s.daysOfWeek.includes(d.getUTCDay());
    const fires =
      s.minutes.includes(d.getUTCMinutes()) &&
      s.hours.includes(d.getUTCHours()) &&
      s.months.includes(d.getUTCMonth() + 1) &&
      (both ? dom && dow : dom || dow);
    if (!fires) continue;
    if (previous !== undefined) longest = Math.max(longest ?? 0, (t - previous) / 1000);
    previous = t;
  }
  return longest;
}

describe('the backup schedule: the longest gap between two runs', () => {
  it('of the common schedules, and the macros', () => {
    for (const [expression, seconds] of [
      ['* * * * *', MINUTE],
      ['*/5 * * * *', 5 * MINUTE],
      ['0 * * * *', HOUR],
      ['@hourly', HOUR],
      ['0 */6 * * *', 6 * HOUR],
      ['30 1,13 * * *', 12 * HOUR],
      // Four hours apart in the day, then 20 hours to the next day's first run.
      ['0 1,5 * * *', 20 * HOUR],
      ['0 3 * * *', DAY],
      ['@daily', DAY],
      ['@midnight', DAY],
      // Weekdays: Friday 03:00 to Monday 03:00.
      ['0 3 * * 1-5', 3 * DAY],
      ['0 3 * * MON-fri', 3 * DAY],
      ['0 0 * * 0', 7 * DAY],
      ['@weekly', 7 * DAY],
      ['0 3 1 * *', 31 * DAY],
      ['@monthly', 31 * DAY],
      // The months with a 31st: Aug 31 to Oct 31 (and May to July, Oct to Dec).
      ['0 0 31 * *', 61 * DAY],
      ['0 0 1 1 *', 366 * DAY],
      ['@yearly', 366 * DAY],
      ['@annually', 366 * DAY],
      ['0 0 1 jan,JUL *', 184 * DAY],
      // Feb 29 of 2096 to that of 2104: 2100 is no leap year.
      ['0 3 29 2 *', (8 * 365 + 1) * DAY],
    ] as const)
      assert.equal(gap(expression), seconds, expression);
  });

  it('reads steps, ranges and lists as Kubernetes does', () => {
    // "a/n" runs from a to the field's end: 10, 30 and 50 past.
    assert.equal(gap('10/20 * * * *'), 20 * MINUTE);
    assert.deepEqual(schedule('10/20 * * * *').minutes, [10, 30, 50]);
    assert.deepEqual(schedule('0-10/5,58 * * * *').minutes, [0, 5, 10, 58]);
    assert.deepEqual(schedule('0 0 * * sun,sat').daysOfWeek, [0, 6]);
    assert.deepEqual(schedule(' 0  3 *\t* * ').hours, [3]);
  });

  it('runs on either day when both the day of the month and the weekday are restricted, else on the restricted one', () => {
    // Fridays, and the 13th: never more than a week apart.
    assert.equal(gap('0 0 13 * 5'), 7 * DAY);
    assert.equal(gap('0 0 13 * *'), 31 * DAY);
    // "1-31" restricts (every day, or a Friday: every day); "*", "?" and "*/1" do not (Fridays only).
    assert.equal(gap('0 0 1-31 * 5'), DAY);
    assert.equal(gap('0 0 * * 5'), 7 * DAY);
    assert.equal(gap('0 0 ? * 5'), 7 * DAY);
    assert.equal(gap('0 0 */1 * 5'), 7 * DAY);
    // "*/2" restricts: odd days, or Mondays.
    assert.equal(gap('0 0 */2 * 1'), 2 * DAY);
  });

  it('agrees with a walk through the calendar minute by minute', function () {
    this.timeout(60_000);
    for (const expression of ['0 1,5 * * *', '15 3 * * 1-5', '0 0 13 * 5', '0 0 31 * *', '0 12 1,15 * *'])
      assert.equal(gapByWalking(expression, '2027-01-01T00:00:00Z', 400), gap(expression), expression);
  });

  it('is undefined for a schedule that never runs', () => {
    assert.equal(gap('0 0 30 2 *'), undefined);
    assert.equal(gap('0 0 31 4,6,9,11 *'), undefined);
  });

  it('refuses what Kubernetes refuses, naming the field, the value and what it must be', () => {
    const problem = (expression: string): string => {
      const parsed = parseCron(expression);
      assert.ok('problem' in parsed, `${expression} parsed`);
      return formatProblem(parsed.problem);
    };
    assert.equal(problem('61 * * * *'), 'spec.backup.schedule (minute): got "61", expected values from 0 to 59');
    assert.equal(problem('0 1,24 * * *'), 'spec.backup.schedule (hour): got "24", expected values from 0 to 23');
    assert.equal(problem('0 0 0 * *'), 'spec.backup.schedule (day of month): got "0", expected values from 1 to 31');
    assert.equal(problem('0 3 * * 7'), 'spec.backup.schedule (day of week): got "7", expected values from 0 to 6');
    assert.equal(
      problem('0 3 * foo *'),
      'spec.backup.schedule (month): got "foo", expected numbers from 1 to 12 or a name (jan-dec), "*" or "?"',
    );
    assert.equal(
      problem('*/0 * * * *'),
      'spec.backup.schedule (minute): got "*/0", expected a step of a positive whole number',
    );
    assert.equal(
      problem('5-1 * * * *'),
      'spec.backup.schedule (minute): got "5-1", expected a range whose start is not after its end',
    );
    assert.equal(problem('1-2-3 * * * *'), 'spec.backup.schedule (minute): got "1-2-3", expected at most one "-"');
    assert.equal(problem('1/2/3 * * * *'), 'spec.backup.schedule (minute): got "1/2/3", expected at most one "/"');
    assert.equal(
      problem('1,,2 * * * *'),
      'spec.backup.schedule (minute): got "", expected numbers from 0 to 59, "*" or "?"',
    );
    assert.equal(
      problem('0 3 * *'),
      'spec.backup.schedule: got "0 3 * *", expected five fields (minute hour day-of-month month day-of-week) separated by spaces, or a macro',
    );
    assert.match(
      problem('@every 1h'),
      /^spec\.backup\.schedule: got "@every 1h", expected one of the macros @yearly, /,
    );
  });

  it('gives what the metric says of a spec.backup: nothing without a backup, while suspended, or for a schedule that does not parse or never runs', () => {
    assert.equal(backupScheduleIntervalSeconds({ schedule: '0 3 * * *' }), DAY);
    assert.equal(backupScheduleIntervalSeconds({ schedule: '0 3 * * *', suspend: false }), DAY);
    assert.equal(backupScheduleIntervalSeconds({ schedule: '0 3 * * *', suspend: true }), undefined);
    assert.equal(backupScheduleIntervalSeconds(undefined), undefined);
    assert.equal(backupScheduleIntervalSeconds({ schedule: '61 3 * * *' }), undefined);
    assert.equal(backupScheduleIntervalSeconds({ schedule: '0 0 30 2 *' }), undefined);
  });

  it('is quick enough to work out on a reconcile (the 400 years of days, once per schedule)', () => {
    const started = performance.now();
    for (const expression of ['* * * * *', '0 3 29 2 *', '0 0 13 * 5']) gap(expression);
    assert.ok(performance.now() - started < 1000, `${(performance.now() - started).toFixed(0)} ms`);
  });
});

describe('recon8s_mysql_backup_schedule_max_interval_seconds (BackupIntervalSeries)', () => {
  const DB = { namespace: 'shop', cluster: 'db' };
  const OTHER = { namespace: 'shop', cluster: 'other' };
  const series = async (registry: Registry): Promise<string[]> =>
    (await registry.metrics()).split('\n').filter((l) => l.startsWith('recon8s_mysql_backup_schedule_max_interval'));

  it('is the series Recon8sMySQLBackupTooOld compares the last backup with, beside the last backup', async () => {
    const expr = alertRules().find((r) => r.alert === 'Recon8sMySQLBackupTooOld')?.expr ?? '';
    const metrics = createControllerMetrics(new Registry());
    metrics.mysqlBackupScheduleMaxInterval.set(DB, 1);
    metrics.mysqlBackupLastSuccess.set(DB, 1);
    const text = await metrics.registry.metrics();
    for (const name of [
      'recon8s_mysql_backup_schedule_max_interval_seconds',
      'recon8s_mysql_backup_last_success_timestamp_seconds',
    ]) {
      assert.ok(expr.includes(name), `${name} in ${expr}`);
      // The same labels on both, for the alert's one-to-one match.
      assert.match(text, new RegExp(`^${name}\\{namespace="shop",cluster="db"\\} 1$`, 'm'));
    }
  });

  it('follows the schedule, goes while suspended or unparseable, and with the cluster', async () => {
    const metrics = createControllerMetrics(new Registry());
    const gauge = metrics.mysqlBackupScheduleMaxInterval;
    const db = new BackupIntervalSeries();
    const other = new BackupIntervalSeries();
    db.report(DB, { schedule: '0 3 * * *' }, gauge);
    other.report(OTHER, { schedule: '@hourly' }, gauge);
    assert.deepEqual(await series(metrics.registry), [
      'recon8s_mysql_backup_schedule_max_interval_seconds{namespace="shop",cluster="db"} 86400',
      'recon8s_mysql_backup_schedule_max_interval_seconds{namespace="shop",cluster="other"} 3600',
    ]);
    db.report(DB, { schedule: '0 3 * * 1-5' }, gauge);
    assert.match((await series(metrics.registry))[0] ?? '', /cluster="db"\} 259200$/);
    db.report(DB, { schedule: '0 3 * * 1-5', suspend: true }, gauge);
    assert.deepEqual(await series(metrics.registry), [
      'recon8s_mysql_backup_schedule_max_interval_seconds{namespace="shop",cluster="other"} 3600',
    ]);
    db.report(DB, { schedule: '0 3 * * 1-5', suspend: false }, gauge);
    assert.equal((await series(metrics.registry)).length, 2);
    db.report(DB, { schedule: '0 3 * * 8' }, gauge);
    assert.equal((await series(metrics.registry)).length, 1);
    db.report(DB, undefined, gauge);
    assert.equal((await series(metrics.registry)).length, 1);
    other.remove();
    new BackupIntervalSeries().remove();
    assert.deepEqual(await series(metrics.registry), []);
    // Without metrics (a controller started without them), nothing to do.
    db.report(DB, { schedule: '@daily' }, undefined);
  });
});
