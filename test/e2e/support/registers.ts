// A register workload, as Jepsen tests databases (issue 43): a few clients read and write a few
// registers (rows of regs.registers) through a MySQLCluster's <name>-primary Service, as an ordinary
// application account (SELECT, INSERT, UPDATE on one database, over TLS verified with the cluster's
// CA), each on its own connection, one statement at a time with a short timeout. Every operation is
// recorded with its invocation and return times and what the client knows of its outcome; the history
// is then checked for linearizability (test/support/linearizability.ts). Each run has keys of its own,
// so every register starts absent (null), and a counter of its own for the values written, so a read
// names exactly one write.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import type { RegisterCheck, RegisterOperation } from '../../support/linearizability.js';
import { checkRegisters } from '../../support/linearizability.js';
import { eventually } from '../../integration/eventually.js';
import { dropConnection } from './row-writer.js';

/** A run's history, checked: `assertLinearizable` asserts on it. */
export interface CheckedRun {
  readonly what: string;
  readonly result: RegisterCheck;
}

/** Fails, with the window that cannot be ordered, unless the history was found linearizable. */
export function assertLinearizable(run: CheckedRun): void {
  assert.equal(
    run.result.verdict,
    'linearizable',
    `the register history through ${run.what} is ${run.result.verdict}:\n${run.result.explanation}`,
  );
}

/** The application account's name. */
export const REGISTERS_USER = 'registers';

/** The CA that verifies a MySQLCluster's members (its status.tlsSecretName's ca.crt), as clients verify them. */
export async function clusterCa(
  core: CoreV1Api,
  custom: CustomObjectsApi,
  namespace: string,
  name: string,
): Promise<string> {
  const cluster = (await custom.getNamespacedCustomObject({
    group: 'recon8s.dev',
    version: 'v1alpha1',
    plural: 'mysqlclusters',
    namespace,
    name,
  })) as { status?: { tlsSecretName?: string } };
  const secretName = cluster.status?.tlsSecretName;
  assert.ok(secretName, `MySQLCluster ${namespace}/${name} names no TLS Secret in its status`);
  const secret = await core.readNamespacedSecret({ namespace, name: secretName });
  const ca = Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
  assert.ok(ca, `Secret ${namespace}/${secretName} has no ca.crt`);
  return ca;
}

interface Login {
  readonly user: string;
  readonly password: string;
  readonly ca: string;
}

/** MySQL errors that prove a statement was refused before it took effect (autocommit: nothing to roll back). */
const REFUSED = new Set([
  1290, // ER_OPTION_PREVENTS_STATEMENT: read_only, super_read_only or offline_mode, checked before the statement runs and again at its commit, which it then rolls back
  3032, // ER_SERVER_OFFLINE_MODE
  1142, // ER_TABLEACCESS_DENIED_ERROR
]);

/**
 * What a client knows of a statement that raised `e` after its connection was open: `fail` only when
 * it was never sent or MySQL refused it (REFUSED); anything else (a timeout, a lost connection, a
 * killed query: a commit may wait for a semi-synchronous acknowledgement and be kept without one) is
 * `unknown`.
 */
function outcomeOf(e: unknown): 'fail' | 'unknown' {
  const err = e as { errno?: number; fatal?: boolean; message?: string };
  if (/can't add new command when connection is in closed state/i.test(err.message ?? '')) return 'fail';
  if (err.fatal !== true && err.errno !== undefined && REFUSED.has(err.errno)) return 'fail';
  return 'unknown';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface RegisterRunOptions {
  /** Clients that read and write (default 4). */
  readonly clients?: number;
  /** Registers (default 4). */
  readonly keys?: number;
  /** Each statement's timeout, and the connection's (default 2 s): a statement sent and not answered within it is unknown. */
  readonly timeoutMs?: number;
  /** A client's pause between two operations (default 20 ms: ~150 operations a second in all, on two busy cores). */
  readonly pauseMs?: number;
}

/** One run of the workload: its clients, its keys, its history. */
export class RegisterRun {
  private readonly history: RegisterOperation[] = [];
  private readonly loops: Promise<void>[] = [];
  private readonly readerGroups: { stopped: boolean; loops: Promise<void>[] }[] = [];
  private stopped = false;
  private counter = 0;
  private nextClient = 1;
  private readonly timeoutMs: number;
  private readonly pauseMs: number;
  private readonly keys: number[];
  /** When the run started (performance.now()): the history's times count from it. */
  readonly startedAt = performance.now();
  /** The last errors, for a failure message. */
  readonly errors: string[] = [];

  constructor(
    /** Where the clients connect, looked up at every (re)connection: the primary Service's address. */
    host: () => string,
    private readonly login: Login,
    firstKey: number,
    options: RegisterRunOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.pauseMs = options.pauseMs ?? 20;
    this.keys = Array.from({ length: options.keys ?? 4 }, (_, i) => firstKey + i);
    for (let i = 0; i < (options.clients ?? 4); i++) this.loops.push(this.client(this.nextClient++, host, () => true));
  }

  /**
   * `count` more clients that only read, through `address` (e.g. a member's own address, which a client
   * with an old route or a stale endpoint still reaches), until `stop()` of the handle returned.
   */
  readersThrough(address: string, count = 2): { stop: () => Promise<void>; clients: number[] } {
    const group = { stopped: false, loops: [] as Promise<void>[] };
    const clients: number[] = [];
    for (let i = 0; i < count; i++) {
      const id = this.nextClient++;
      clients.push(id);
      group.loops.push(
        this.client(
          id,
          () => address,
          () => false,
          group,
        ),
      );
    }
    this.readerGroups.push(group);
    return {
      clients,
      stop: async () => {
        group.stopped = true;
        await Promise.all(group.loops);
      },
    };
  }

  /** How many operations were acknowledged so far (reads and writes). */
  acknowledged(): number {
    return this.history.filter((o) => o.outcome === 'ok').length;
  }

  /** Stops every client (each ends its statement in flight) and returns the history. */
  async stop(): Promise<RegisterOperation[]> {
    this.stopped = true;
    for (const g of this.readerGroups) g.stopped = true;
    await Promise.all([...this.loops, ...this.readerGroups.flatMap((g) => g.loops)]);
    return [...this.history];
  }

  /** Resolves once `count` more operations were acknowledged. */
  async more(count: number, timeoutMs: number): Promise<void> {
    const target = this.acknowledged() + count;
    await eventually(
      () =>
        assert.ok(
          this.acknowledged() >= target,
          `${this.acknowledged()} acknowledged; last errors: ${this.errors.slice(-5).join(' | ')}`,
        ),
      { timeoutMs, intervalMs: 100, description: `${count} more acknowledged register operations` },
    );
  }

  /**
   * Stops the run, checks its history and prints what was checked (and, when it is not linearizable,
   * the window that cannot be ordered); `assertLinearizable` asserts on the result, so that a test can
   * finish its other checks (and leave the cluster healthy for the next) first. `marks`: instants
   * (performance.now()) to print relative to the history's start, e.g. the fault's.
   */
  async check(what: string, marks: Record<string, number> = {}): Promise<CheckedRun> {
    const history = await this.stop();
    const result = checkRegisters(history, { startMs: this.startedAt });
    const at = Object.entries(marks)
      .map(([name, ms]) => `${name} at ${((ms - this.startedAt) / 1000).toFixed(3)} s`)
      .join(', ');
    console.log(`      registers through ${what}: ${result.summary}${at ? `; ${at}` : ''}`);
    if (result.verdict !== 'linearizable') {
      console.log(result.explanation.replace(/^/gm, '        '));
      console.log(`        the clients' last errors:\n${this.errors.map((e) => `          ${e}`).join('\n')}`);
    }
    return { what: `${what}${at ? ` (${at})` : ''}`, result };
  }

  private connect(host: string): Promise<Connection> {
    return createConnection({
      host,
      port: 3306,
      user: this.login.user,
      password: this.login.password,
      // Verified with the cluster's CA, as every client of recon8s does (by address: no name to check).
      ssl: { ca: this.login.ca, rejectUnauthorized: true },
      connectTimeout: this.timeoutMs,
    });
  }

  /** One client: a read or a write of a random key at a time, on one connection, reconnecting after any error. */
  private async client(
    id: number,
    host: () => string,
    writes: () => boolean,
    group?: { stopped: boolean },
  ): Promise<void> {
    let c: Connection | undefined;
    while (!this.stopped && !group?.stopped) {
      const key = this.keys[Math.floor(Math.random() * this.keys.length)] as number;
      const writing = writes() && Math.random() < 0.5;
      const written = writing ? ++this.counter : null;
      const invokeMs = performance.now();
      let sent = false;
      let outcome: RegisterOperation['outcome'] = 'ok';
      let value: number | null = written;
      let error: string | undefined;
      try {
        c ??= await this.connect(host());
        sent = true;
        if (writing)
          await c.query({
            sql: 'INSERT INTO regs.registers (k, v) VALUES (?, ?) AS n ON DUPLICATE KEY UPDATE v = n.v',
            values: [key, written],
            timeout: this.timeoutMs,
          });
        else {
          const [rows] = await c.query<RowDataPacket[]>({
            sql: 'SELECT v FROM regs.registers WHERE k = ?',
            values: [key],
            timeout: this.timeoutMs,
          });
          const v: unknown = rows[0]?.v;
          value = v === undefined || v === null ? null : Number(v);
        }
      } catch (e) {
        // Refused before it was sent (no connection) or by MySQL: failed; otherwise it may have taken effect.
        outcome = sent ? outcomeOf(e) : 'fail';
        if (!writing) value = null;
        error = (e as Error).message;
        this.errors.push(`${new Date().toISOString()} client ${id} ${writing ? 'write' : 'read'}: ${error}`);
        if (this.errors.length > 20) this.errors.shift();
        dropConnection(c);
        c = undefined;
      }
      this.history.push({
        client: id,
        key,
        kind: writing ? 'write' : 'read',
        value,
        invokeMs,
        returnMs: performance.now(),
        outcome,
        ...(error === undefined ? {} : { error }),
      });
      await sleep(outcome === 'ok' ? this.pauseMs : 200);
    }
    dropConnection(c);
  }
}

/**
 * The registers' table and its application account on a MySQLCluster, created through `host` (its
 * primary Service) as root: runs of the workload start from it, each with keys of its own.
 */
export class RegisterTable {
  private runs = 0;

  private constructor(
    private readonly login: Login,
    private readonly keysPerRun: number,
  ) {}

  /** Creates the database regs, its table, and an account with SELECT, INSERT, UPDATE on regs.* only, TLS required. */
  static async create(o: {
    readonly host: string;
    readonly rootPassword: string;
    readonly ca: string;
    readonly keysPerRun?: number;
  }): Promise<RegisterTable> {
    const password = randomBytes(18).toString('base64url');
    const root = await createConnection({
      host: o.host,
      port: 3306,
      user: 'root',
      password: o.rootPassword,
      ssl: { ca: o.ca, rejectUnauthorized: true },
      connectTimeout: 10_000,
    });
    try {
      for (const sql of [
        'CREATE DATABASE IF NOT EXISTS regs',
        'CREATE TABLE IF NOT EXISTS regs.registers (k INT PRIMARY KEY, v BIGINT)',
        `CREATE USER IF NOT EXISTS '${REGISTERS_USER}'@'%' IDENTIFIED BY ? REQUIRE SSL`,
        `ALTER USER '${REGISTERS_USER}'@'%' IDENTIFIED BY ?`,
        `GRANT SELECT, INSERT, UPDATE ON regs.* TO '${REGISTERS_USER}'@'%'`,
      ])
        await root.query({ sql, values: sql.includes('?') ? [password] : [], timeout: 30_000 });
    } finally {
      dropConnection(root);
    }
    return new RegisterTable({ user: REGISTERS_USER, password, ca: o.ca }, o.keysPerRun ?? 4);
  }

  /** Starts a run through `host()` (looked up at every connection) on keys no run used before. */
  start(host: () => string, options: RegisterRunOptions = {}): RegisterRun {
    const keys = options.keys ?? this.keysPerRun;
    return new RegisterRun(host, this.login, ++this.runs * 1000, { ...options, keys });
  }
}
