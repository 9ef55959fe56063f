// The agent's passwords come from the mounted credentials Secret, read when used (lib/agent/credential-files.ts),
// and its pooled root sessions follow a rotated root password without a restart (lib/agent/local-sql.ts).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool, PoolOptions } from 'mysql2/promise';
import { CredentialsError, readCredentials } from '../../lib/agent/credential-files.js';
import { LocalSql } from '../../lib/agent/local-sql.js';

/** A Secret volume as the kubelet writes it: a version directory, `..data` linking to it, a link per key. */
function secretVolume(dir: string, data: Record<string, string>, version: string): void {
  const versionDir = join(dir, `..${version}`);
  mkdirSync(versionDir);
  for (const [k, v] of Object.entries(data)) writeFileSync(join(versionDir, k), v);
  symlinkSync(`..${version}`, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const k of Object.keys(data)) {
    try {
      symlinkSync(`..data/${k}`, join(dir, k));
    } catch {
      // already linked
    }
  }
}

describe('agent: the mounted credentials Secret', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'recon8s-credentials-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the passwords and the revision of one version of the Secret, 0 before any rotation', () => {
    const first = {
      'root-password': 'r0',
      'replication-password': 'p0',
      'admin-password': 'a0',
      'clone-password': 'c0',
      'backup-password': 'b0',
      'exporter-password': 'e0',
    };
    secretVolume(dir, first, 'v1');
    assert.deepEqual(readCredentials(dir), {
      revision: '0',
      root: 'r0',
      replication: 'p0',
      admin: 'a0',
      clone: 'c0',
      backup: 'b0',
    });
    assert.equal(readCredentials(dir, true).exporter, 'e0');
    // The kubelet swaps ..data to a new version: read whole, never half of each.
    secretVolume(dir, { ...first, 'root-password': 'r1', 'credentials-revision': 'T1' }, 'v2');
    assert.deepEqual(readCredentials(dir), {
      revision: 'T1',
      root: 'r1',
      replication: 'p0',
      admin: 'a0',
      clone: 'c0',
      backup: 'b0',
    });
  });

  it('says which key is missing, never a password', () => {
    writeFileSync(join(dir, 'root-password'), 'secret-root');
    assert.throws(
      () => readCredentials(dir),
      (e: Error) =>
        e instanceof CredentialsError &&
        /has no replication-password/.test(e.message) &&
        !e.message.includes('secret-root'),
    );
  });
});

describe('agent: root sessions follow the Secret', () => {
  /** A fake mysql2 pool: which password it was made with, whether it was ended, the queries it ran. */
  interface FakePool {
    readonly password: string;
    ended: boolean;
    readonly queries: string[];
  }
  /** Pools whose logins `refuse` says are refused; a query `SLOW` runs until `finish()`. */
  const fakePools = (refuse: (password: string) => boolean) => {
    const made: FakePool[] = [];
    const slow: (() => void)[] = [];
    const create = (o: PoolOptions): Pool => {
      const fake: FakePool = { password: String(o.password), ended: false, queries: [] };
      made.push(fake);
      return {
        pool: { on: () => undefined },
        query: async ({ sql }: { sql: string }) => {
          if (refuse(fake.password)) throw Object.assign(new Error('Access denied'), { errno: 1045 });
          fake.queries.push(sql);
          if (sql === 'SLOW') await new Promise<void>((r) => slow.push(r));
          return [[{ sql }], []];
        },
        end: () => ((fake.ended = true), Promise.resolve()),
      } as unknown as Pool;
    };
    return { made, create, finish: () => slow.splice(0).forEach((r) => r()) };
  };

  it('opens sessions with the password the file says now, and ends the old pool once its statements are done', async () => {
    let password = 'old';
    const { made, create, finish } = fakePools(() => false);
    const sql = await LocalSql.open('/sock', () => password, create);
    await sql.exec('SELECT 1');
    const slow = sql.exec('SLOW');
    password = 'new';
    await sql.exec('SELECT 2');
    const state = () => made.map((p) => [p.password, p.ended, p.queries]);
    // The old pool lives while its statement runs (a clone may take hours on it).
    assert.deepEqual(state(), [
      ['old', false, ['SELECT 1', 'SLOW']],
      ['new', false, ['SELECT 2']],
    ]);
    finish();
    await slow;
    assert.deepEqual(state(), [
      ['old', true, ['SELECT 1', 'SLOW']],
      ['new', false, ['SELECT 2']],
    ]);
    await sql.close();
    assert.equal(made[1]?.ended, true);
  });

  it('tries once more when the password it read a moment before was refused and the file changed meanwhile', async () => {
    let password = 'old';
    const { made, create } = fakePools((p) => p === 'old');
    const sql = await LocalSql.open('/sock', () => password, create);
    const reading = sql.rows('SELECT 1');
    password = 'new';
    assert.deepEqual(await reading, [{ sql: 'SELECT 1' }]);
    assert.deepEqual(
      made.map((p) => [p.password, p.queries]),
      [
        ['old', []],
        ['new', ['SELECT 1']],
      ],
    );
    await assert.rejects(
      (await LocalSql.open('/sock', () => 'old', fakePools(() => true).create)).rows('SELECT 1'),
      /Access denied/,
      'a refusal with the password the file still says is an error',
    );
  });
});
