// `recon8s binlog find NAME --statement TEXT`: which archived transactions hold a statement, with the
// GTID spec.restore.beforeGtid takes. The search runs in a Job from the backup CronJob's template (it
// reaches the store with the pods' own credentials; constructs/mysql/scripts/find-binlog.sh), and its
// output (mysqlbinlog's text, filtered) is parsed here.
import { MYSQL_STORE_REPORTS } from '../../constructs/index.js';
import type { BinlogTransaction } from '../mysql/binlog-text.js';
import { coarseWords, parseBinlogText, statementMatches } from '../mysql/binlog-text.js';
import { failed, podLog, runJob, terminationMessage } from './backup-command.js';
import { connect } from './diff-command.js';
import { parseDuration } from './duration.js';
import { formatTable } from './table.js';
import { UsageError } from './usage-error.js';
import { isOf, printable, valueOf } from '../mysql/store-values.js';

export const BINLOG_FIND_USAGE = `Usage: recon8s binlog find NAME --statement TEXT [--since TIME] [--until TIME]
                          [-n NAMESPACE] [--kubeconfig PATH] [--timeout DURATION]

Searches the binary logs MySQLCluster NAME archived in its object store (a short Job from its CronJob
NAME-backup reads them) for the transactions holding a statement, and prints each one's GTID, commit
time (UTC, to the microsecond) and first statement, oldest first, with the spec.restore.beforeGtid
that restores to just before the last of them. TEXT matches ignoring case, backquotes, white space
and schema qualifiers ('DROP TABLE orders' finds DROP TABLE \`shop\`.\`orders\`); row changes match as
mysqlbinlog shows them ('DELETE FROM orders', 'UPDATE shop.orders'). --since and --until
(2026-11-25T18:34:26Z, or with a fraction of a second) bound the commit times. Only what the archive
holds is searched: run recon8s binlog archive NAME first for the last minutes.
Exit 0 when a transaction matched, 1 when none did.
`;

export interface FindOptions {
  readonly statement: string;
  readonly since?: string;
  readonly until?: string;
}

export interface FindResult {
  /** The matching transactions, oldest first, each GTID once (a failover repeats them in a new primary's logs). */
  readonly transactions: readonly (BinlogTransaction & { readonly matched: string })[];
  /** How many archived logs were searched. */
  readonly logs: number;
  /** Until when the archive holds every transaction (its state.json), when it says. */
  readonly coveredUntil?: string;
}

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** A --since/--until value, checked: the usage error names the option, the value and the form expected. */
export function parseTimeOption(option: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!TIME.test(value) || Number.isNaN(Date.parse(value)))
    throw new UsageError(
      `--${option} must be a UTC time like 2026-11-25T18:34:26Z or 2026-11-25T18:34:26.5Z, got ${JSON.stringify(value)}`,
      BINLOG_FIND_USAGE,
    );
  return value;
}

/** An ISO time as microseconds since the epoch, for comparing to the microsecond. */
function micros(iso: string): bigint {
  const m = /^(.*?)(?:\.(\d{1,6}))?Z$/.exec(iso);
  const whole = BigInt(Date.parse(`${m?.[1] ?? iso}Z`)) * 1000n;
  return whole + BigInt((m?.[2] ?? '').padEnd(6, '0') || '0');
}

/**
 * The search Job's output (see constructs/mysql/scripts/find-binlog.sh) searched for a statement. The
 * archive is the bucket's: a log not named as the archive names them, and a transaction whose GTID is
 * not one, are left out (a GTID printed here becomes a user's spec.restore.beforeGtid).
 */
export function findInListing(listing: string, o: FindOptions): FindResult {
  let coveredUntil: string | undefined;
  let logs = 0;
  const seen = new Set<string>();
  const transactions: (BinlogTransaction & { matched: string })[] = [];
  // Each archived log's text, parsed on its own: a transaction never spans two logs.
  const chunks: { log: string; lines: string[]; named: boolean }[] = [];
  for (const line of listing.split('\n')) {
    if (line.startsWith('state\t')) {
      try {
        const state = JSON.parse(line.slice('state\t'.length)) as Record<string, unknown>;
        coveredUntil = valueOf('time', state.coveredUntil) ?? coveredUntil;
      } catch {
        // Not the state: nothing to say about the archive's reach.
      }
    } else if (line.startsWith('log\t')) {
      const log = line.slice('log\t'.length);
      chunks.push({ log, lines: [], named: isOf('segment', `${log}.json`) });
      logs++;
    } else {
      chunks.at(-1)?.lines.push(line);
    }
  }
  const since = o.since ? micros(o.since) : undefined;
  const until = o.until ? micros(o.until) : undefined;
  for (const chunk of chunks) {
    if (!chunk.named) continue;
    for (const tx of parseBinlogText(chunk.lines.join('\n'))) {
      if (seen.has(tx.gtid) || !isOf('gtid', tx.gtid)) continue;
      const at = micros(tx.committedAt);
      if ((since !== undefined && at < since) || (until !== undefined && at > until)) continue;
      const matched = tx.statements.find((s) => statementMatches(s, o.statement));
      if (matched === undefined) continue;
      seen.add(tx.gtid);
      transactions.push({ ...tx, log: chunk.log, matched });
    }
  }
  return { transactions, logs, coveredUntil };
}

/** One line of printable text (a statement is the archive's: no escape sequence reaches the terminal), at most `max` characters. */
function oneLine(text: string, max = 100): string {
  return printable(text.replace(/\s+/g, ' ').trim(), max);
}

/** What the command prints. */
export function formatFind(result: FindResult, o: FindOptions): string {
  const reach = result.coveredUntil
    ? `the archive holds every transaction committed before ${result.coveredUntil}; for later ones run recon8s binlog archive first`
    : 'the archive has not recorded how far it reaches';
  const searched = `${result.logs} archived binary log${result.logs === 1 ? '' : 's'} searched`;
  if (result.transactions.length === 0)
    return `no archived transaction holds a statement matching ${JSON.stringify(o.statement)} (${searched}; ${reach})\n`;
  const rows = [['GTID', 'COMMITTED (UTC)', 'FIRST STATEMENT']];
  for (const tx of result.transactions) {
    const first = tx.statements[0] ?? '';
    const statement = first === tx.matched ? oneLine(first) : `${oneLine(first, 60)} … ${oneLine(tx.matched, 60)}`;
    rows.push([tx.gtid, tx.committedAt, statement]);
  }
  const last = result.transactions.at(-1);
  const n = result.transactions.length;
  return [
    formatTable(rows),
    '',
    `${n} transaction${n === 1 ? '' : 's'} matching ${JSON.stringify(o.statement)} (${searched}; ${reach}).`,
    `To restore a new cluster to just before ${n === 1 ? 'it' : 'the last'}, in its spec.restore: beforeGtid: "${last?.gtid ?? ''}"`,
    '',
  ].join('\n');
}

export async function binlogFindCommand(
  o: FindOptions & {
    readonly name: string;
    readonly namespace?: string;
    readonly kubeconfig?: string;
    readonly timeout: string;
  },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const deadline = Date.now() + parseDuration(o.timeout, BINLOG_FIND_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  // mysqlbinlog bounds by whole seconds (its own format, UTC in the Job): the exact bounds are applied here.
  const second = (iso: string | undefined, roundUp: boolean): string | undefined => {
    if (!iso) return undefined;
    const s = Math.floor(Date.parse(iso) / 1000) + (roundUp ? 1 : 0);
    return new Date(s * 1000).toISOString().slice(0, 19).replace('T', ' ');
  };
  const env = [
    { name: 'FIND_WORDS', value: coarseWords(o.statement).join(' ') },
    { name: 'FIND_SINCE', value: second(o.since, false) ?? '' },
    { name: 'FIND_UNTIL', value: second(o.until, true) ?? '' },
  ];
  try {
    const run = await runJob(client, namespace, o.name, ['bash', FIND_SCRIPT], deadline, undefined, {
      env,
      kind: 'find',
    });
    const log = await podLog(client, namespace, run.pod);
    const message = terminationMessage(run.pod);
    if (!run.succeeded || !message.startsWith(`${MYSQL_STORE_REPORTS.binlogsSearched}:`)) {
      err.write(`search Job ${run.job} failed: ${message.replace(/^\w+: /, '') || 'no report'}\n${log}`);
      return 1;
    }
    const result = findInListing(log, o);
    out.write(formatFind(result, o));
    return result.transactions.length > 0 ? 0 : 1;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

const FIND_SCRIPT = '/opt/recon8s/find-binlog.sh';
