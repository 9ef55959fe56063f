// local_sql (common.sh), what a person's `kubectl exec … mysql` and the scripts in the mysql container
// run: root over the local socket, with root's password as the mounted credentials Secret has it now,
// not as an environment variable had it at the container's start.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { scriptSandbox } from './support/mysql-scripts.js';

describe('local_sql', () => {
  let box: ScriptSandbox;
  beforeEach(() => {
    box = scriptSandbox();
    writeFileSync(join(box.scripts, 'local-sql.sh'), '. "${BASH_SOURCE[0]%/*}/common.sh"\nlocal_sql -e "SELECT 1"\n');
  });
  afterEach(() => box.cleanup());

  const credentials = (rootPassword: string) => {
    const dir = box.path('credentials');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'root-password'), rootPassword);
    return dir;
  };
  /** The password the mysql client was handed, and its argv. */
  const handed = () => {
    const calls = box.calls();
    return { argv: calls.split('\n').find((l) => l.startsWith('mysql ')) ?? '', options: calls };
  };

  it("logs in with the mounted Secret's root password, byte for byte, over the socket, though the environment holds a stale one", () => {
    const r = box.run('local-sql.sh', {
      CREDENTIALS_DIR: credentials(`rotated'"\\#$ x\n`),
      MYSQL_ROOT_PASSWORD: 'stale',
    });
    assert.equal(r.status, 0, r.stderr);
    const { argv, options } = handed();
    assert.match(argv, / --socket=\/var\/run\/mysqld\/mysqld\.sock /, argv);
    assert.doesNotMatch(argv, /--host=/, argv);
    // Byte for byte, its trailing newline too (as the option file escapes it).
    assert.ok(options.includes('password="rotated\'\\"\\\\#$ x\\n"'), options);
    assert.equal(options.includes('stale'), false, options);
  });

  it('uses MYSQL_ROOT_PASSWORD where no credentials are mounted (the bootstrap, the jobs)', () => {
    const r = box.run('local-sql.sh', { CREDENTIALS_DIR: box.path('none'), MYSQL_ROOT_PASSWORD: 'from-env' });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(handed().options.includes('password="from-env"'), handed().options);
  });

  it('fails naming both places when neither has the password, and runs no client', () => {
    const r = box.run('local-sql.sh', { CREDENTIALS_DIR: box.path('none') });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /root's password is neither in \S+\/none\/root-password nor in MYSQL_ROOT_PASSWORD/);
    assert.equal(handed().argv, '');
  });
});
