// The SQL of a rotation of the cluster's own accounts (credential-rotation.ts decides): what the primary
// holds of root, replication, recon8s-admin, recon8s-clone and recon8s-backup, what a replica's channel holds, and the statements.
// Thin on purpose. As root, over TLS that verified the member (member-sql.ts openVerified): setting
// another account's password and reading a replica's connection metadata take it. Passwords are values
// (mysql2 quotes them), never in the SQL text; the server writes them to no log in clear (ALTER USER
// and CHANGE REPLICATION SOURCE are rewritten there).
import type { Connection, RowDataPacket } from 'mysql2/promise';
import {
  MYSQL_ADMIN_USER,
  MYSQL_BACKUP_USER,
  MYSQL_CLONE_USER,
  MYSQL_REPLICATION_USER,
} from '../../constructs/index.js';
import type { AccountAdminOptions } from './account-sql.js';
import { closeSession, takesWrites } from './account-sql.js';
import { QUERY_TIMEOUT_MS, openVerified } from './member-sql.js';
import { passwordFingerprint } from './accounts.js';
import type { ClusterAccount, ReplicaChannel } from './credential-rotation.js';
import { CLUSTER_ACCOUNTS } from './credential-rotation.js';
import { threadState } from './topology.js';

/** STOP REPLICA IO_THREAD waits for the receiver to end what it is writing to the relay log. */
const STOP_RECEIVER_TIMEOUT_MS = 60_000;

/** The MySQL accounts of each cluster account: root is two (the socket's and the network's). */
export const MYSQL_ACCOUNTS: Readonly<Record<ClusterAccount, readonly { user: string; host: string }[]>> = {
  root: [
    { user: 'root', host: 'localhost' },
    { user: 'root', host: '%' },
  ],
  replication: [{ user: MYSQL_REPLICATION_USER, host: '%' }],
  admin: [{ user: MYSQL_ADMIN_USER, host: '%' }],
  clone: [{ user: MYSQL_CLONE_USER, host: '%' }],
  backup: [{ user: MYSQL_BACKUP_USER, host: '%' }],
};

/** What the primary has of one cluster account. */
export interface ObservedClusterAccount {
  /** It exists (every one of its MySQL accounts). */
  readonly exists: boolean;
  /** The fingerprint a rotation recorded of its password (absent: no rotation ever set it). */
  readonly fingerprint?: string;
  /** One of its MySQL accounts has a retained (secondary) password. */
  readonly retains: boolean;
}

/** A password to set, and what the account's attribute records of it (never the password). */
export interface PasswordToSet {
  readonly account: ClusterAccount;
  readonly password: string;
  /** The rotation whose password it is (the agents compare it with the revision of their mounted Secret). */
  readonly revision: string;
  /** RETAIN CURRENT PASSWORD: the one it replaces still logs in until discarded. */
  readonly retain: boolean;
}

/** The fingerprint of a cluster account's password (accounts.ts): root's is its user's. */
export function clusterFingerprint(account: ClusterAccount, password: string): string {
  return passwordFingerprint(MYSQL_ACCOUNTS[account][0]?.user ?? account, password);
}

/**
 * ALTER USER for every MySQL account of `p.account`, in one statement (atomic: root's two accounts never
 * disagree), with the attribute that records which password it holds.
 */
export function setPasswordSql(p: PasswordToSet): { readonly sql: string; readonly values: readonly string[] } {
  const users = MYSQL_ACCOUNTS[p.account];
  const auth = `IDENTIFIED BY ?${p.retain ? ' RETAIN CURRENT PASSWORD' : ''}`;
  const attribute = JSON.stringify({
    recon8s: { account: p.account, fingerprint: clusterFingerprint(p.account, p.password), revision: p.revision },
  });
  return {
    sql: `ALTER USER ${users.map(() => `?@? ${auth}`).join(', ')} ATTRIBUTE ?`,
    values: [...users.flatMap((u) => [u.user, u.host, p.password]), attribute],
  };
}

/** What a pass of the rotation does on one member: a ClusterAccountSession, or a fake in tests. */
export interface ClusterAccountActions {
  takesWrites(): Promise<boolean>;
  observe(): Promise<Record<ClusterAccount, ObservedClusterAccount>>;
  setPassword(p: PasswordToSet): Promise<void>;
  discardOldPasswords(accounts: readonly ClusterAccount[]): Promise<void>;
  /** The member's channel, its stored password compared with `replicationPassword` (in the server). */
  channel(replicationPassword: string): Promise<Omit<ReplicaChannel, 'member'>>;
  repoint(replicationPassword: string): Promise<void>;
  close(): Promise<void>;
}

export class ClusterAccountSession implements ClusterAccountActions {
  private constructor(private readonly c: Connection) {}

  static async open(o: AccountAdminOptions): Promise<ClusterAccountSession> {
    return new ClusterAccountSession(await openVerified(o));
  }

  async close(): Promise<void> {
    await closeSession(this.c);
  }

  private async rows(sql: string, values?: readonly unknown[], timeout = QUERY_TIMEOUT_MS): Promise<RowDataPacket[]> {
    const [rows] = await this.c.query<RowDataPacket[]>({ sql, values: values ? [...values] : undefined, timeout });
    return rows;
  }

  takesWrites(): Promise<boolean> {
    return takesWrites(this.c);
  }

  async observe(): Promise<Record<ClusterAccount, ObservedClusterAccount>> {
    const rows = await this.rows(
      `SELECT u.User AS user, u.Host AS host,
              JSON_UNQUOTE(JSON_EXTRACT(a.ATTRIBUTE, '$.recon8s.fingerprint')) AS fingerprint,
              JSON_EXTRACT(u.User_attributes, '$.additional_password') IS NOT NULL AS retains
         FROM mysql.user u
         LEFT JOIN information_schema.USER_ATTRIBUTES a ON a.USER = u.User AND a.HOST = u.Host
        WHERE u.User IN (?)`,
      [[...new Set(Object.values(MYSQL_ACCOUNTS).flatMap((us) => us.map((u) => u.user)))]],
    );
    const found = (user: string, host: string) => rows.find((r) => r.user === user && r.host === host);
    const observed = {} as Record<ClusterAccount, ObservedClusterAccount>;
    for (const account of CLUSTER_ACCOUNTS) {
      const each = MYSQL_ACCOUNTS[account].map((u) => found(u.user, u.host));
      // root's network account is the one the controller logs in as: its attribute stands for both.
      const fingerprint = each.at(-1)?.fingerprint;
      observed[account] = {
        exists: each.every((r) => r !== undefined),
        ...(typeof fingerprint === 'string' && fingerprint !== '' ? { fingerprint } : {}),
        retains: each.some((r) => Number(r?.retains) === 1),
      };
    }
    return observed;
  }

  async setPassword(p: PasswordToSet): Promise<void> {
    const { sql, values } = setPasswordSql(p);
    await this.rows(sql, values);
  }

  async discardOldPasswords(accounts: readonly ClusterAccount[]): Promise<void> {
    const users = accounts.flatMap((a) => MYSQL_ACCOUNTS[a]);
    if (users.length === 0) return;
    await this.rows(
      `ALTER USER ${users.map(() => '?@? DISCARD OLD PASSWORD').join(', ')}`,
      users.flatMap((u) => [u.user, u.host]),
    );
  }

  async channel(replicationPassword: string): Promise<Omit<ReplicaChannel, 'member'>> {
    // The stored password is compared in the server: it never crosses the network back.
    const [row] = await this.rows(
      `SELECT BINARY m.User_password = BINARY ? AS current, c.SERVICE_STATE AS receiver, a.SERVICE_STATE AS applier
         FROM mysql.slave_master_info m
         JOIN performance_schema.replication_connection_status c ON c.CHANNEL_NAME = m.Channel_name
         JOIN performance_schema.replication_applier_status a ON a.CHANNEL_NAME = m.Channel_name
        WHERE m.Channel_name = ''`,
      [replicationPassword],
    );
    if (!row) return { password: 'none', receiver: 'OFF', applier: 'OFF' };
    return {
      password: Number(row.current) === 1 ? 'current' : 'other',
      receiver: threadState(row.receiver),
      applier: threadState(row.applier),
    };
  }

  /**
   * The channel's password only: its receiver stopped (its applier goes on), the password changed, and
   * the receiver started again unless it was stopped before (a replica the manager stopped on purpose).
   */
  async repoint(replicationPassword: string): Promise<void> {
    const [row] = await this.rows(
      "SELECT SERVICE_STATE AS receiver FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''",
    );
    const running = threadState(row?.receiver) !== 'OFF';
    await this.rows('STOP REPLICA IO_THREAD', undefined, STOP_RECEIVER_TIMEOUT_MS);
    await this.rows('CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = ?', [replicationPassword]);
    if (running) await this.rows('START REPLICA IO_THREAD');
  }
}
