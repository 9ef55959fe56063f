// The agent's one-off logins beside its pool of socket sessions (local-sql.ts): one query over a
// verified TCP session to a member (its own address, a peer, the primary), and whether an account logs
// in over mysqld's local socket. Each session is closed after its one use.
import { readFileSync } from 'node:fs';
import type { RowDataPacket } from 'mysql2/promise';
import { MYSQL_PORT } from '../../constructs/mysql-member.js';
import { dropSession } from '../mysql/session-end.js';
import type { AgentConfig } from './config.js';
import { connectVerified } from './local-sql.js';

/** One query over a verified session (connectVerified), closed after. */
export async function tcpQuery(
  config: AgentConfig,
  host: string,
  user: string,
  password: string,
  sql: string,
): Promise<Record<string, unknown> | undefined> {
  const ca = readFileSync(config.caFile, 'utf8');
  const c = await connectVerified({
    host,
    servername: config.memberTlsName,
    port: MYSQL_PORT,
    user,
    password,
    ca,
    timeoutMs: 5000,
  });
  try {
    const [rows] = await c.query<RowDataPacket[]>({ sql, timeout: 5000 });
    return rows[0];
  } finally {
    // A peer that fell silent mid-query (its node gone) does not keep the socket open.
    dropSession(c);
  }
}

/** Whether `user` logs in with `password` over mysqld's local socket (no TLS: nothing leaves the pod). */
export async function socketLoginWorks(socketPath: string, user: string, password: string): Promise<boolean> {
  const { createConnection } = await import('mysql2/promise');
  try {
    const c = await createConnection({ socketPath, user, password, connectTimeout: 5000 });
    c.destroy();
    return true;
  } catch {
    return false;
  }
}
