// What the controller does to the sandbox's members (support/mysql-sandbox.ts), with the SQL it sends
// (lib/mysql/member-sql.ts) as its administrative account over verified TLS, for the real-mysqld tests
// that play its part: make member 0 the primary, point the others at it, wait for them.
import assert from 'node:assert/strict';
import { MYSQL_REPLICATION_USER } from '../../../constructs/index.js';
import { changeSourceStatement } from '../../../lib/mysql/member-sql.js';
import { eventually } from '../eventually.js';
import type { SandboxMember } from './mysql-sandbox.js';
import { SANDBOX_NAMES } from './mysql-sandbox.js';

/** A string literal, as mysql2 quotes it (the session's sql_mode is '', so backslashes escape). */
export const literal = (v: string): string => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** SQL as root over the member's socket; rows tab-separated, asserted to succeed. */
export function sql(m: SandboxMember, text: string): string {
  const r = m.sql(text);
  assert.ok(r.ok, `SQL on member ${m.ordinal} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** What the controller sends, as its account, over TCP. */
export function controllerSql(m: SandboxMember, text: string): string {
  const r = m.adminSql(`SET SESSION sql_mode = '';\n${text}`);
  assert.ok(r.ok, `the controller's SQL on member ${m.ordinal} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** The controller's enableWrites: semi-synchronous replication with `waitCount` acknowledgements, then writable. */
export function makePrimary(m: SandboxMember, waitCount = 1): string {
  return controllerSql(
    m,
    [
      `SET GLOBAL rpl_semi_sync_source_wait_for_replica_count = ${waitCount}`,
      `SET GLOBAL rpl_semi_sync_source_enabled = ${waitCount > 0 ? 'ON' : 'OFF'}`,
      'SET GLOBAL super_read_only = OFF',
      'SET GLOBAL read_only = OFF',
      // As the controller's enableWrites: the primary serves clients (a fencing may have kept them out).
      'SET PERSIST offline_mode = OFF;',
    ].join(';\n'),
  );
}

/** `statement` with its placeholders filled in order: strings as literals, numbers as they are. */
export const inline = (statement: string, values: readonly (string | number)[]): string => {
  let i = 0;
  return statement.replace(/\?/g, () => {
    const v = values[i++] ?? '';
    return typeof v === 'number' ? String(v) : literal(v);
  });
};

/**
 * The controller's replicateFrom, its very statement (changeSourceStatement): the member follows the
 * primary (member 0) by GTID, over TLS that verifies it by name, with the replication password of the
 * member's mounted Secret (what the controller reads).
 */
export function follow(m: SandboxMember): string {
  const change = changeSourceStatement({
    host: SANDBOX_NAMES.members[0],
    port: 3306,
    user: MYSQL_REPLICATION_USER,
    password: m.credentials()['replication-password'] ?? '',
  });
  return controllerSql(m, ['STOP REPLICA', inline(change.sql, change.values), 'START REPLICA;'].join(';\n'));
}

/** Until the member's agent answers /livez. */
export const alive = (m: SandboxMember) =>
  eventually(() => assert.ok(m.probe('live').ok, `member ${m.ordinal} does not answer`), {
    timeoutMs: 90_000,
    intervalMs: 250,
    maxIntervalMs: 1000,
    description: `member ${m.ordinal} answers (the agent's /livez)`,
    diagnose: () => m.diagnose(),
  });

/** Until the member's agent answers /readyz with 200. */
export const ready = (m: SandboxMember) =>
  eventually(() => assert.ok(m.probe('ready').ok, `member ${m.ordinal} not ready`), {
    timeoutMs: 90_000,
    intervalMs: 250,
    maxIntervalMs: 1000,
    description: `member ${m.ordinal} ready (the agent's /readyz)`,
    diagnose: () => m.diagnose(),
  });
