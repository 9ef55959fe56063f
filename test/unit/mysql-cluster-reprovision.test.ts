// Re-provisioning a replica by clone: the part that runs before mysqld (constructs/mysql/scripts/reprovision.sh),
// run with bash against the fake mysql programs. The agent's part (deciding, cloning, reporting) is
// test/unit/agent-reprovision.test.ts.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { SCRIPT_WAIT_MS, scriptSandbox } from './support/mysql-scripts.js';

const REPLICATION_PASSWORD = `repl'"\\#;--`;
const MEMBER = {
  HEADLESS_SERVICE: 'shop-headless',
  PRIMARY_HOST: 'shop-primary',
  MYSQL_ROOT_PASSWORD: `r00t'"\\#$ x`,
  MYSQL_REPLICATION_PASSWORD: REPLICATION_PASSWORD,
  MYSQL_ADMIN_PASSWORD: `4dmin'"\\#%s`,
  MYSQL_CLONE_PASSWORD: 'clone-pw',
  MYSQL_BACKUP_PASSWORD: 'backup-pw',
};

describe('MySQLCluster re-provisioning by clone', function () {
  this.timeout(3 * SCRIPT_WAIT_MS);
  let box: ScriptSandbox;
  const volume = (...p: string[]) => box.path('volume', ...p);
  /** A member's data directory with one file of its own. */
  const dataDir = (name: string, file: string) => {
    mkdirSync(volume(name), { recursive: true });
    for (const f of ['mysql.ibd', file]) writeFileSync(volume(name, f), name);
  };
  // A read-only member (every member is, until the controller makes one the primary).
  const env = (fake: Record<string, string> = {}) => ({
    POD_NAME: 'shop-1',
    DATA_VOLUME: volume(),
    TERMINATION_LOG: box.path('termination-log'),
    POD_ANNOTATIONS: box.path('annotations'),
    FAKE_READ_ONLY: '1',
    ...MEMBER,
    ...fake,
  });

  beforeEach(() => {
    box = scriptSandbox();
    mkdirSync(volume());
  });
  afterEach(() => box.cleanup());

  describe('start-mysqld.sh', () => {
    const start = () => {
      // The fake mysqld runs until told to shut down: it is told at once.
      writeFileSync(`${box.fakeDir}/shutdown`, '');
      const r = box.run('start-mysqld.sh', env());
      assert.equal(r.status, 0, r.stderr);
      assert.match(box.calls(), /^mysqld --defaults-file=\/etc\/mysql\/recon8s\/my\.cnf$/m);
    };

    it('starts mysqld on the data directory as it is when no clone waits', () => {
      dataDir('data', 'own-file');
      start();
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.ok(existsSync(volume('data', 'own-file')));
    });

    it('puts a complete clone in place first, keeping the previous data aside, without the donor identity', () => {
      dataDir('data', 'own-file');
      dataDir('data.cloned', 'clone-file');
      for (const f of ['auto.cnf', 'mysqld-auto.cnf']) writeFileSync(volume('data.cloned', f), "the donor's");
      start();
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.previous']);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['clone-file', 'mysql.ibd']);
      assert.deepEqual(readdirSync(volume('data.previous')).sort(), ['mysql.ibd', 'own-file']);
    });

    it('finishes a swap that was interrupted after the data was set aside', () => {
      dataDir('data.previous', 'own-file');
      dataDir('data.cloned', 'clone-file');
      start();
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.previous']);
      assert.ok(existsSync(volume('data', 'clone-file')));
      assert.ok(existsSync(volume('data.previous', 'own-file')));
    });

    it('keeps the original data when an earlier clone is replaced before it ever replicated', () => {
      dataDir('data.previous', 'own-file');
      dataDir('data', 'first-clone');
      dataDir('data.cloned', 'second-clone');
      start();
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.previous']);
      assert.ok(existsSync(volume('data', 'second-clone')));
      assert.ok(existsSync(volume('data.previous', 'own-file')));
    });
  });

  it('bootstrap puts a finished clone in place when the whole pod restarted, and clones nothing', () => {
    dataDir('data.previous', 'own-file');
    dataDir('data.cloned', 'clone-file');
    const r = box.run('bootstrap.sh', env());
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /nothing to do/);
    assert.ok(existsSync(volume('data', 'clone-file')));
    assert.equal(box.calls().includes('CLONE INSTANCE'), false);
  });
});
