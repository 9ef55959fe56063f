// The grammars of the values recon8s reads from outside its own code (a bucket's objects and listings,
// a job's report, a member's answer, the spec), written once: the spec's patterns (admission), the
// scripts (layout.sh: common.sh's valid and checked) and the controller's and the CLI's parsers
// (lib/mysql/store-values.ts) all take them from here. Each is a whole-value regular expression in the
// subset that POSIX extended (bash's =~), ECMAScript and RE2 (the API server) read alike: no escapes,
// no classes but bracketed ones, no lazy or possessive quantifiers.
//
// Nothing any of them accepts can close a SQL string literal, start a shell expansion or an arithmetic
// expression, or name another path: no quote, backslash, `$`, blank, bracket or slash, and no name
// that is `.` or `..`.

const UUID = '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}';
/** A transaction number: 1 to 2^63-1 (MySQL's range), at most 19 digits. */
const GTID_NUMBER = '[1-9][0-9]{0,18}';
/** A GTID tag (MySQL 8.3+): a letter or "_", then up to 31 letters, digits or "_". */
const GTID_TAG = '[A-Za-z_][A-Za-z0-9_]{0,31}';
/** One server's part of a GTID set: uuid(:tag)?:interval(:interval)*, tags repeatable. */
const GTID_SOURCE = `${UUID}((:${GTID_TAG})?(:${GTID_NUMBER}(-${GTID_NUMBER})?)+)+`;
const BACKUP_NAME = '[0-9]{8}T[0-9]{6}Z';
const BINLOG_FILE = '[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}';

/** A grammar: its pattern, and what it is in words (for the message that refuses a value). */
export interface ValueGrammar {
  readonly pattern: string;
  readonly words: string;
}

/**
 * The grammars by name (the scripts' names: `valid gtid-set "$v"`). A GTID set is judged without the
 * blanks and newlines MySQL wraps a long one with (whoever checks one takes them out first).
 */
export const VALUE_GRAMMARS = {
  'gtid-set': {
    pattern: `^(${GTID_SOURCE}(,${GTID_SOURCE})*)?$`,
    words: 'a GTID set (uuid[:tag]:interval[:interval...], joined by commas)',
  },
  gtid: { pattern: `^${UUID}(:${GTID_TAG})?:${GTID_NUMBER}$`, words: 'one GTID (uuid[:tag]:number)' },
  uuid: { pattern: `^${UUID}$`, words: 'a server UUID' },
  'backup-name': {
    pattern: `^${BACKUP_NAME}$`,
    words: 'a backup name (the UTC time it started, e.g. 20261124T030000Z)',
  },
  time: {
    pattern: '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$',
    words: 'a UTC time such as 2026-11-24T10:15:00Z',
  },
  count: { pattern: '^(0|[1-9][0-9]{0,17})$', words: 'a whole number' },
  'binlog-file': {
    pattern: `^${BINLOG_FILE}$`,
    words: 'a binary log file name (letters, digits, ".", "_" and "-", not starting with ".")',
  },
  /** An archived binary log's JSON in binlog/ (see scripts/store.sh): <archived at>-<server uuid>-<file>.json. */
  segment: {
    pattern: `^${BACKUP_NAME}-${UUID}-${BINLOG_FILE}[.]json$`,
    words: 'an archived binary log name (<UTC time>-<server UUID>-<file>.json)',
  },
  /** How a backup was taken (a manifest's method; absent in a manifest before there were two: logical). */
  'backup-method': { pattern: '^(logical|physical)$', words: 'a backup method (logical or physical)' },
  host: { pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$', words: 'a host name' },
  /**
   * The object store's encryption passphrase (spec.backup.s3.encryption): one line of base64 or hex, long
   * enough to be a key rather than a password. Never shown in a message, only its length.
   */
  'encryption-key': {
    pattern: '^[A-Za-z0-9+/=_-]{32,1024}$',
    words: 'one line of 32 to 1024 base64 or hex characters (e.g. from openssl rand -base64 48)',
  },
} as const satisfies Readonly<Record<string, ValueGrammar>>;

export type ValueGrammarName = keyof typeof VALUE_GRAMMARS;

/**
 * The spec's own forms, built from the same pieces: a GTID set the user writes is never empty, and may
 * keep the blanks after its commas that MySQL's output wraps it with.
 */
export const SPEC_PATTERNS = {
  gtidSet: `^${GTID_SOURCE}(,\\s*${GTID_SOURCE})*$`,
  gtid: VALUE_GRAMMARS.gtid.pattern,
  time: VALUE_GRAMMARS.time.pattern,
  backup: `^(latest|${BACKUP_NAME})$`,
} as const;
