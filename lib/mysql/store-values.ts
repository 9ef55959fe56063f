// Values read from the object store, or from a job's report of what it found there, judged by the
// grammars the scripts and the spec use (constructs/mysql/grammar.ts): what does not match is left out
// rather than shown, recorded in status or suggested to a user as a restore point. Pure.
import type { MySQLValueGrammarName } from '../../constructs/index.js';
import { MYSQL_VALUE_GRAMMARS } from '../../constructs/index.js';

const compiled = new Map<MySQLValueGrammarName, RegExp>();

/** Whether `value` is a string of the grammar (a GTID set judged without the blanks MySQL wraps it with). */
export function isOf(grammar: MySQLValueGrammarName, value: unknown): value is string {
  if (typeof value !== 'string') return false;
  let re = compiled.get(grammar);
  if (!re) {
    re = new RegExp(MYSQL_VALUE_GRAMMARS[grammar].pattern);
    compiled.set(grammar, re);
  }
  return re.test(grammar === 'gtid-set' ? value.replace(/\s+/g, '') : value);
}

/** `value` when it is a string of the grammar (a GTID set without its blanks), else undefined. */
export function valueOf(grammar: MySQLValueGrammarName, value: unknown): string | undefined {
  if (!isOf(grammar, value)) return undefined;
  return grammar === 'gtid-set' ? value.replace(/\s+/g, '') : value;
}

/**
 * Free text from outside (a message, a statement, a location) as it may be shown on a terminal, in an
 * Event or in status: control characters (a terminal's escape sequences among them) as "?", on one
 * line, at most `max` characters.
 */
export function printable(text: string, max = 1024): string {
  // eslint-disable-next-line no-control-regex -- these are what is replaced
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => (c === '\n' || c === '\t' ? ' ' : '?'));
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
