// Transactions out of mysqlbinlog's text (--verbose --base64-output=DECODE-ROWS), and which of them hold
// a statement a user names: what `recon8s binlog find` prints. Pure.

/** One transaction as the binary log holds it. */
export interface BinlogTransaction {
  /** Its GTID (`uuid:n`): what spec.restore.beforeGtid takes. */
  readonly gtid: string;
  /**
   * When it was committed on the server it was first written on (original_commit_timestamp), UTC, to the
   * microsecond (`2026-11-25T18:34:26.998033Z`); the event's second when the log has no such field.
   */
  readonly committedAt: string;
  /**
   * Its statements in order: a statement as logged (DDL, and DML in statement format), and for each
   * run of row changes to one table the row event's header as mysqlbinlog writes it
   * (`DELETE FROM \`shop\`.\`orders\``). BEGIN and COMMIT are not statements.
   */
  readonly statements: readonly string[];
  /** The archived log it was found in (set by the caller that knows). */
  readonly log?: string;
}

const EVENT_HEADER = /^#(\d{2})(\d{2})(\d{2}) +(\d{1,2}):(\d{2}):(\d{2}) server id \d+ /;
const GTID_NEXT = /^SET @@SESSION\.GTID_NEXT= '([^']+)'/;
const ORIGINAL_COMMIT = /\toriginal_committed_timestamp=(\d+)/;
const ROW_CHANGE = /^### ((?:INSERT INTO|UPDATE|DELETE FROM) .+)$/;
const STATEMENT_END = '/*!*/;';

/** A timestamp in microseconds since the epoch, as ISO 8601 with six decimals. */
function microsToIso(micros: bigint): string {
  const seconds = micros / 1_000_000n;
  const fraction = (micros % 1_000_000n).toString().padStart(6, '0');
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}.${fraction}Z`;
}

/** What mysqlbinlog itself sets in a Query event before the statement, never part of it. */
function isSessionPreamble(line: string): boolean {
  return (
    line.startsWith('SET TIMESTAMP=') ||
    line.startsWith('SET @@session.') ||
    line.startsWith('/*!') ||
    /^use `[^`]*`\/\*!\*\/;$/.test(line)
  );
}

/**
 * The transactions in mysqlbinlog's output, in the order it printed them. Anything outside a
 * transaction (the log's start, its end, lines a filter left out) is ignored; a transaction without
 * a GTID (a log written with gtid_mode OFF) is left out, since it could not be named.
 */
export function parseBinlogText(text: string): BinlogTransaction[] {
  const out: BinlogTransaction[] = [];
  let current: { gtid?: string; committedAt: string; statements: string[] } | undefined;
  /** The kind of event whose body the lines belong to. */
  let event: 'query' | 'rows_query' | 'other' = 'other';
  let statement: string[] | undefined;
  let rowsQuery: string[] | undefined;

  const endRowsQuery = () => {
    if (current && rowsQuery && rowsQuery.length > 0) current.statements.push(rowsQuery.join('\n'));
    rowsQuery = undefined;
  };
  const finish = () => {
    endRowsQuery();
    if (current?.gtid)
      out.push({ gtid: current.gtid, committedAt: current.committedAt, statements: current.statements });
    current = undefined;
  };

  for (const line of text.split('\n')) {
    const header = EVENT_HEADER.exec(line);
    if (header) {
      endRowsQuery();
      statement = undefined;
      if (line.includes('\tGTID\t')) {
        finish();
        const micros = ORIGINAL_COMMIT.exec(line)?.[1];
        const [, yy, mo, dd, hh, mi, ss] = header;
        const second = `20${yy ?? ''}-${mo ?? ''}-${dd ?? ''}T${(hh ?? '').padStart(2, '0')}:${mi ?? ''}:${ss ?? ''}Z`;
        current = { committedAt: micros ? microsToIso(BigInt(micros)) : second, statements: [] };
        event = 'other';
      } else if (line.includes('\tQuery\t')) {
        event = 'query';
        statement = [];
      } else if (line.includes('\tRows_query')) {
        event = 'rows_query';
        rowsQuery = [];
      } else {
        event = 'other';
      }
      continue;
    }
    if (!current) continue;
    if (line.startsWith('# at ')) {
      endRowsQuery();
      continue;
    }
    const gtid = GTID_NEXT.exec(line)?.[1];
    if (gtid) {
      if (!current.gtid && gtid !== 'AUTOMATIC' && gtid !== 'ANONYMOUS') current.gtid = gtid;
      continue;
    }
    if (event === 'rows_query') {
      if (line.startsWith('# ') && rowsQuery) rowsQuery.push(line.slice(2));
      continue;
    }
    const row = ROW_CHANGE.exec(line)?.[1];
    if (row) {
      if (current.statements.at(-1) !== row) current.statements.push(row);
      continue;
    }
    if (event === 'query' && statement) {
      if (statement.length === 0 && isSessionPreamble(line)) continue;
      if (line === STATEMENT_END || line.endsWith(STATEMENT_END)) {
        const last = line === STATEMENT_END ? '' : line.slice(0, -STATEMENT_END.length);
        const text = [...statement, ...(last ? [last] : [])].join('\n').trim();
        if (text && !/^(BEGIN|COMMIT|XA (START|END|PREPARE|COMMIT|ROLLBACK)\b.*)$/i.test(text))
          current.statements.push(text);
        statement = undefined;
        event = 'other';
        continue;
      }
      statement.push(line);
    }
  }
  finish();
  return out;
}

/** Lower case, backquotes gone, runs of white space as one space. */
function normalize(text: string): string {
  return text.toLowerCase().replace(/`/g, '').replace(/\s+/g, ' ').trim();
}

/** Without schema qualifiers: `shop.orders` as `orders`. */
function unqualified(normalized: string): string {
  return normalized.replace(/\b[a-z_$][\w$]*\.(?=[a-z_$`])/g, '');
}

/**
 * Whether a statement is the one a user names: case, backquotes and white space aside, the statement contains the text, or does once its schema qualifiers are dropped (`drop table orders` names
 * ``DROP TABLE `shop`.`orders` /* generated by server *\/``, and a row change `DELETE FROM orders`
 * the row event `DELETE FROM \`shop\`.\`orders\``).
 */
export function statementMatches(statement: string, wanted: string): boolean {
  const w = normalize(wanted);
  if (!w) return false;
  const s = normalize(statement);
  return s.includes(w) || unqualified(s).includes(w);
}

/**
 * The words a coarse filter may require of a transaction's text before the exact match (each is in
 * the text of any statement statementMatches accepts): the runs of letters, digits, `_` and `$`.
 */
export function coarseWords(wanted: string): string[] {
  return normalize(wanted).match(/[a-z0-9_$]+/g) ?? [];
}
