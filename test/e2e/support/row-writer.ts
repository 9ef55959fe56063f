// The lost-write check's writer: inserts first, first + 1, ... into one table through an address (the
// primary Service's), one at a time, reconnecting after any error, and records which inserts MySQL
// acknowledged, when, and when attempts failed. Shared by the HA and whole-cluster restart files.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import { eventually } from '../../integration/eventually.js';
import { dropSession } from '../../../lib/mysql/session-end.js';

export interface RowWriterOptions {
  /**
   * The address to connect to (the primary Service's cluster IP), or a function giving it at each
   * connection (where this process reaches no cluster IP: the address the Service routes to).
   */
  readonly host: string | (() => Promise<string>);
  /** root's password. */
  readonly password: string;
  /** The table written to (`db.table`, with an INT PRIMARY KEY column `id`). */
  readonly table: string;
  /** The first id; each writer of a file takes a range of its own. */
  readonly first: number;
  /** A pause after each acknowledged insert (ms), to keep the writer from saturating a small node. @default 0 */
  readonly pauseMs?: number;
}

/** Closes a connection now, its socket destroyed (lib/mysql/session-end.ts says why): undefined is nothing. */
export function dropConnection(c: Connection | undefined): void {
  if (c) dropSession(c);
}

export class RowWriter {
  readonly acknowledged: number[] = [];
  /** Monotonic ms of each acknowledgement, in the order of `acknowledged`. */
  readonly acknowledgedAt: number[] = [];
  /** Monotonic ms of each failed attempt. */
  readonly failures: number[] = [];
  /** The last errors, for a failure message. */
  readonly errors: string[] = [];
  private next: number;
  private stopped = false;
  private done: Promise<void> | undefined;

  constructor(private readonly o: RowWriterOptions) {
    this.next = o.first;
  }

  start(): void {
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  /** Resolves once `count` more inserts were acknowledged. */
  async more(count: number, timeoutMs: number, why?: string): Promise<void> {
    const target = this.acknowledged.length + count;
    await eventually(
      () =>
        assert.ok(
          this.acknowledged.length >= target,
          `${this.acknowledged.length} acknowledged; last errors: ${this.errors.slice(-5).join(' | ')}`,
        ),
      {
        timeoutMs,
        intervalMs: 100,
        description: `${count} more acknowledged writes${why !== undefined ? ` (${why})` : ''}`,
      },
    );
  }

  private async loop(): Promise<void> {
    let c: Connection | undefined;
    while (!this.stopped) {
      const id = this.next++;
      try {
        c ??= await createConnection({
          host: typeof this.o.host === 'string' ? this.o.host : await this.o.host(),
          port: 3306,
          user: 'root',
          password: this.o.password,
          ssl: { rejectUnauthorized: false },
          connectTimeout: 2000,
        });
        // A commit waits for a semi-synchronous acknowledgement; one that never comes is not acknowledged.
        await c.query({ sql: `INSERT INTO ${this.o.table} (id) VALUES (?)`, values: [id], timeout: 10_000 });
        this.acknowledged.push(id);
        this.acknowledgedAt.push(performance.now());
        if (this.o.pauseMs) await sleep(this.o.pauseMs);
      } catch (e) {
        this.failures.push(performance.now());
        this.errors.push(`${new Date().toISOString()} ${(e as Error).message}`);
        if (this.errors.length > 50) this.errors.shift();
        dropConnection(c);
        c = undefined;
        await sleep(200);
      }
    }
    dropConnection(c);
  }
}
