// How long a MySQLCluster's backup schedule (spec.backup.schedule) may leave between two backups: the
// longest gap between consecutive firings of its cron expression. The controller exports it per cluster
// (recon8s_mysql_backup_schedule_max_interval_seconds), and the shipped alert Recon8sMySQLBackupTooOld
// compares the last backup's age with it, so that "too old" follows each cluster's own schedule.
//
// A small parser of its own, for the standard five fields and the macros only: no cron library is a
// dependency of this project, and the one the backups run on is Kubernetes' (Go's robfig/cron v3, what
// the API server validates a CronJob's schedule with and the CronJob controller fires on), whose
// meaning this follows: numbers, `*` and `?`, ranges `a-b`, steps `*/n`, `a-b/n` and `a/n` (a to the
// field's end), lists, month and weekday names (`jan`, `mon`, any case), weekdays 0-6 (0 is Sunday, 7
// is refused), and a day of the month and a weekday both restricted matching either (both must match
// when one starts with `*` or `?` without a step above 1). Pure: no clock, the same expression gives the
// same answer; BackupIntervalSeries, at the end, keeps a cluster's series.
import type { MySQLBackup, Problem } from '../../../constructs/index.js';
import type { Gauge } from '../../observability/metrics.js';

/** A parsed schedule: what each field allows (UTC). */
export interface CronSchedule {
  /** Allowed minutes (0-59), ascending. */
  readonly minutes: readonly number[];
  /** Allowed hours (0-23), ascending. */
  readonly hours: readonly number[];
  /** Allowed days of the month (1-31), ascending. */
  readonly daysOfMonth: readonly number[];
  /** Allowed months (1-12), ascending. */
  readonly months: readonly number[];
  /** Allowed weekdays (0-6, 0 is Sunday), ascending. */
  readonly daysOfWeek: readonly number[];
  /** The day-of-month field is unrestricted (`*`, `?`): then the weekday field alone decides, and the reverse. */
  readonly dayOfMonthStar: boolean;
  readonly dayOfWeekStar: boolean;
}

interface Field {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  { name: 'day of week', min: 0, max: 6, names: WEEKDAY_NAMES },
];

/** The macros Kubernetes accepts (and the CRD's pattern allows), as the five fields they stand for. */
const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** What one field allows; `star`: it is unrestricted (see CronSchedule). */
interface ParsedField {
  readonly values: readonly number[];
  readonly star: boolean;
}

/** A field's values, or the part of it that is wrong and what it must be. */
function parseField(text: string, f: Field): ParsedField | { readonly part: string; readonly expected: string } {
  const words = f.names ? ` or a name (${f.names[0]}-${f.names.at(-1)})` : '';
  const number = (s: string): number | undefined => {
    const named = f.names?.indexOf(s.toLowerCase()) ?? -1;
    if (named >= 0) return named + f.min;
    return /^\d+$/.test(s) ? Number(s) : undefined;
  };
  const allowed = new Set<number>();
  let star = false;
  for (const part of text.split(',')) {
    const [range = '', step, ...more] = part.split('/');
    if (more.length > 0) return { part, expected: 'at most one "/"' };
    let from: number | undefined;
    let to: number | undefined;
    let partStar = false;
    if (range === '*' || range === '?') {
      [from, to, partStar] = [f.min, f.max, true];
    } else {
      const [low = '', high, ...rest] = range.split('-');
      if (rest.length > 0) return { part, expected: 'at most one "-"' };
      from = number(low);
      // "a/n": from a to the field's end, every n.
      to = high !== undefined ? number(high) : step !== undefined ? f.max : from;
      if (from === undefined || to === undefined)
        return { part, expected: `numbers from ${f.min} to ${f.max}${words}, "*" or "?"` };
    }
    if (from < f.min || to > f.max) return { part, expected: `values from ${f.min} to ${f.max}` };
    if (from > to) return { part, expected: 'a range whose start is not after its end' };
    const by = step === undefined ? 1 : /^\d+$/.test(step) ? Number(step) : 0;
    if (by < 1) return { part, expected: 'a step of a positive whole number' };
    // As Kubernetes' cron: "*/n" with n above 1 restricts the field ("*/1" and "*" do not).
    if (partStar && by === 1) star = true;
    for (let v = from; v <= to; v += by) allowed.add(v);
  }
  return { values: [...allowed].sort((a, b) => a - b), star };
}

/**
 * Parses a five-field cron expression (minute hour day-of-month month day-of-week, UTC) or a macro
 * (`@daily`, ...). Returns the schedule, or a problem naming the field, the value and what it must be.
 */
export function parseCron(
  expression: string,
  field = 'spec.backup.schedule',
): { readonly schedule: CronSchedule } | { readonly problem: Problem } {
  const trimmed = expression.trim();
  const macro = trimmed.startsWith('@') ? MACROS[trimmed] : undefined;
  if (trimmed.startsWith('@') && macro === undefined)
    return { problem: { field, value: expression, expected: `one of the macros ${Object.keys(MACROS).join(', ')}` } };
  const texts = (macro ?? trimmed).split(/\s+/);
  if (texts.length !== FIELDS.length)
    return {
      problem: {
        field,
        value: expression,
        expected: 'five fields (minute hour day-of-month month day-of-week) separated by spaces, or a macro',
      },
    };
  const parsed: ParsedField[] = [];
  for (const [i, f] of FIELDS.entries()) {
    const text = texts[i] ?? '';
    const r = parseField(text, f);
    if ('expected' in r) return { problem: { field: `${field} (${f.name})`, value: r.part, expected: r.expected } };
    parsed.push(r);
  }
  const [minute, hour, dom, month, dow] = parsed as [ParsedField, ParsedField, ParsedField, ParsedField, ParsedField];
  return {
    schedule: {
      minutes: minute.values,
      hours: hour.values,
      daysOfMonth: dom.values,
      months: month.values,
      daysOfWeek: dow.values,
      dayOfMonthStar: dom.star,
      dayOfWeekStar: dow.star,
    },
  };
}

/** Days in one cycle of the Gregorian calendar: 400 years, a whole number of weeks (20,871). */
const GREGORIAN_CYCLE_DAYS = 146_097;
const DAY_SECONDS = 86_400;

/**
 * The longest time, in seconds, between two consecutive firings of `schedule`, or undefined when it
 * never fires (e.g. "0 0 30 2 *"). Over one whole 400-year cycle of the calendar, wrapping around: the
 * calendar (dates, weekdays, leap years) repeats after it, so this is the longest gap there will ever
 * be, not that of the next few years ("0 3 29 2 *" gives 8 years: 2100 is no leap year). Every day that
 * fires fires at the same times of day, so only the days are walked (146,097 of them, a few
 * milliseconds): the longest gap is the longest between two times of one day, or from the last time
 * of a day that fires to the first of the next day that does.
 */
export function longestCronGapSeconds(schedule: CronSchedule): number | undefined {
  const times = schedule.hours.flatMap((h) => schedule.minutes.map((m) => h * 3600 + m * 60)).sort((a, b) => a - b);
  const first = times[0];
  const last = times.at(-1);
  if (first === undefined || last === undefined) return undefined;
  const month = new Array<boolean>(13).fill(false);
  for (const m of schedule.months) month[m] = true;
  const dom = new Array<boolean>(32).fill(false);
  for (const d of schedule.daysOfMonth) dom[d] = true;
  const dow = new Array<boolean>(7).fill(false);
  for (const d of schedule.daysOfWeek) dow[d] = true;
  const both = schedule.dayOfMonthStar || schedule.dayOfWeekStar;

  let firstDay: number | undefined;
  let previousDay: number | undefined;
  let longestDays = 0;
  let day = 0;
  let weekday = 6; // 2000-01-01, where the walk starts, was a Saturday.
  for (let year = 2000; year < 2400; year++) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    for (let m = 1; m <= 12; m++) {
      const length = m === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;
      for (let d = 1; d <= length; d++, day++, weekday = (weekday + 1) % 7) {
        if (!month[m]) continue;
        const fires = both ? dom[d] === true && dow[weekday] === true : dom[d] === true || dow[weekday] === true;
        if (!fires) continue;
        if (previousDay !== undefined) longestDays = Math.max(longestDays, day - previousDay);
        firstDay ??= day;
        previousDay = day;
      }
    }
  }
  if (firstDay === undefined || previousDay === undefined) return undefined;
  // From the cycle's last day that fires to the first of the next cycle.
  longestDays = Math.max(longestDays, firstDay + GREGORIAN_CYCLE_DAYS - previousDay);
  let longest = longestDays * DAY_SECONDS + first - last;
  for (let i = 1; i < times.length; i++) longest = Math.max(longest, (times[i] ?? 0) - (times[i - 1] ?? 0));
  return longest;
}

/** What the interval depends on: the schedule, unless there is no backup or it is suspended. */
type BackupSchedule = Pick<MySQLBackup, 'schedule' | 'suspend'>;

/**
 * What recon8s_mysql_backup_schedule_max_interval_seconds says for a cluster's spec.backup: the longest
 * gap of its schedule, or undefined, and then no series at all (so the alert cannot fire for it), when
 * there is nothing to expect:
 * - no backup, or a suspended one (spec.backup.suspend: no run is due);
 * - a schedule this parser refuses. The CRD's pattern checks only its shape (five fields or a macro);
 *   the API server refuses such a CronJob when it is applied, and the cluster is then Degraded=True
 *   ApplyFailed, which Recon8sDegraded alerts on;
 * - a schedule that never fires (a day that does not exist, e.g. "0 0 31 2 *").
 */
export function backupScheduleIntervalSeconds(backup: BackupSchedule | undefined): number | undefined {
  if (!backup || backup.suspend === true || typeof backup.schedule !== 'string') return undefined;
  const parsed = parseCron(backup.schedule);
  return 'schedule' in parsed ? longestCronGapSeconds(parsed.schedule) : undefined;
}

type IntervalLabels = Readonly<Record<'namespace' | 'cluster', string>>;
type IntervalGauge = Pick<Gauge<'namespace' | 'cluster'>, 'set' | 'remove'>;

/**
 * recon8s_mysql_backup_schedule_max_interval_seconds of one cluster (held by its runtime,
 * cluster-runtime.ts): set on every look, worked out again only when the schedule (or suspend)
 * changes, removed when there is nothing to expect any more (see backupScheduleIntervalSeconds) and
 * when the cluster is gone (remove).
 */
export class BackupIntervalSeries {
  #last:
    | {
        readonly schedule: string | undefined;
        readonly seconds: number | undefined;
        readonly labels: IntervalLabels;
        readonly gauge: IntervalGauge;
      }
    | undefined;

  report(labels: IntervalLabels, backup: BackupSchedule | undefined, gauge: IntervalGauge | undefined): void {
    if (!gauge) return;
    const schedule = backup && backup.suspend !== true ? backup.schedule : undefined;
    const before = this.#last;
    const seconds = before && before.schedule === schedule ? before.seconds : backupScheduleIntervalSeconds(backup);
    if (seconds === undefined) gauge.remove(labels);
    else gauge.set(labels, seconds);
    this.#last = { schedule, seconds, labels, gauge };
  }

  /** The cluster is gone: its series goes too. */
  remove(): void {
    this.#last?.gauge.remove(this.#last.labels);
    this.#last = undefined;
  }
}
