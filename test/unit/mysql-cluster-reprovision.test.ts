// Re-provisioning a replica by clone (constructs/mysql/reprovision-script.ts), run with bash against
// the fake mysql programs: what is decided, what is cloned where, what is kept, what is reported.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { SCRIPT_WAIT_MS, eventually, scriptSandbox } from './support/mysql-scripts.js';

const REPLICATION_PASSWORD = `repl'"\\#;--`;
const MEMBER = {
  HEADLESS_SERVICE: 'shop-headless',
  PRIMARY_HOST: 'shop-primary',
  MYSQL_ROOT_PASSWORD: `r00t'"\\#$ x`,
  MYSQL_REPLICATION_PASSWORD: REPLICATION_PASSWORD,
  MYSQL_ADMIN_PASSWORD: `4dmin'"\\#%s`,
};
// What a MySQL 9.7 receiver reports when the primary purged binary logs it still needs.
const PURGED =
  "13114\tGot fatal error 1236 from source when reading data from binary log: 'Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup.'";

describe('MySQLCluster re-provisioning by clone', function () {
  // Each test waits (up to SCRIPT_WAIT_MS, twice at most) for the sidecar: generous for a busy machine.
  this.timeout(3 * SCRIPT_WAIT_MS);
  let box: ScriptSandbox;
  const volume = (...p: string[]) => box.path('volume', ...p);
  const termination = () =>
    existsSync(box.path('termination-log')) ? readFileSync(box.path('termination-log'), 'utf8') : '';
  /** A member's data directory with one file of its own. */
  const dataDir = (name: string, file: string) => {
    mkdirSync(volume(name), { recursive: true });
    for (const f of ['mysql.ibd', file]) writeFileSync(volume(name, f), name);
  };
  /** The pod's annotations, as the downward API volume shows them. */
  const annotate = (reprovision?: string) =>
    writeFileSync(
      box.path('annotations'),
      [
        'kubernetes.io/config.seen="2026-11-22T20:00:00.000000000Z"',
        ...(reprovision === undefined ? [] : [`recon8s.dev/reprovision="${reprovision}"`]),
        'recon8s.dev/config-hash="0123abcd"',
        '',
      ].join('\n'),
    );
  const requestDone = () =>
    existsSync(volume('reprovision-request.done'))
      ? readFileSync(volume('reprovision-request.done'), 'utf8')
      : undefined;
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

  describe('the replication sidecar', () => {
    /** Runs the sidecar until it exits by itself; fails if it does not. */
    async function runToExit(fake: Record<string, string>): Promise<number | null> {
      const child = box.start('replication.sh', env(fake));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const code = await Promise.race([
        exited,
        new Promise<string>((r) => setTimeout(() => r('still running'), SCRIPT_WAIT_MS)),
      ]);
      child.kill('SIGTERM');
      assert.notEqual(code, 'still running');
      return code as number | null;
    }

    /** Runs the sidecar until `until` holds, then stops it. */
    async function runUntil(fake: Record<string, string>, until: () => boolean, what: string): Promise<void> {
      const child = box.start('replication.sh', env(fake));
      try {
        await eventually(until, what);
      } finally {
        child.kill('SIGTERM');
      }
    }

    it('clones the primary beside the data directory, reports it, and restarts mysqld on the clone', async () => {
      dataDir('data', 'own-file');
      assert.equal(await runToExit({ FAKE_RECEIVER_ERROR: PURGED, FAKE_STATES: 'OFF\tON' }), 0);
      // The member's data is untouched; the complete clone waits beside it, under its final name.
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.cloned']);
      assert.ok(existsSync(volume('data', 'own-file')));
      assert.ok(existsSync(volume('data.cloned', 'mysql.ibd')));
      const calls = box.calls();
      assert.ok(
        calls.includes(
          `CLONE INSTANCE FROM 'replication'@'shop-primary':3306 IDENTIFIED BY 'repl\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.clone')}';`,
        ),
        calls,
      );
      assert.ok(calls.includes("SET GLOBAL clone_valid_donor_list = 'shop-primary:3306';"), calls);
      assert.match(calls, /^mysql .* -e SHUTDOWN$/m);
      assert.match(
        termination(),
        /^ReprovisionedByClone: shop-1 was re-provisioned by clone from shop-primary: the primary no longer has the binary logs this replica needs \(Got fatal error 1236 .*\)\. Its previous data directory is kept until the clone replicates\.$/,
      );
      for (const line of calls.split('\n').filter((l) => l.startsWith('mysql ')))
        assert.equal(line.includes("repl'"), false, line);
      assert.equal(termination().includes("repl'"), false);
    });

    it('removes what an interrupted attempt left before cloning again', async () => {
      dataDir('data', 'own-file');
      dataDir('data.clone', 'half-written');
      assert.equal(await runToExit({ FAKE_RECEIVER_ERROR: PURGED }), 0);
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.cloned']);
      assert.equal(existsSync(volume('data.cloned', 'half-written')), false);
    });

    it('reports a failed clone without the statement, and leaves the data as it was', async () => {
      dataDir('data', 'own-file');
      const error =
        "ERROR 3862 (HY000) at line 3: Clone Donor Error: 1158 : Got an error reading communication packets near 'IDENTIFIED BY 'repl\\'";
      assert.equal(await runToExit({ FAKE_RECEIVER_ERROR: PURGED, FAKE_CLONE_ERROR: error }), 1);
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['mysql.ibd', 'own-file']);
      assert.equal(box.calls().includes('-e SHUTDOWN'), false);
      assert.equal(
        termination(),
        'ReprovisionFailed: shop-1 could not be re-provisioned by clone from shop-primary: ERROR 3862 (HY000) at line 3: Clone Donor Error: 1158 : Got an error reading communication packets; its data is unchanged, and it tries again when this container restarts',
      );
    });

    const refusals: [string, Record<string, string>, RegExp][] = [
      [
        'a member that is not super-read-only',
        { FAKE_SUPER_READ_ONLY: '0' },
        /not re-provisioning: this member is writable/,
      ],
      [
        'a member with transactions the primary does not have',
        { FAKE_GTID_SUBSET: '0' },
        /has transactions the primary does not have/,
      ],
      ['a donor that is not writable', { FAKE_DONOR_READ_ONLY: '1' }, /is read-only, not a primary/],
      ['while a clone is under way', { FAKE_CLONE_STATE: 'In Progress' }, /a clone is under way/],
    ];
    for (const [what, fake, says] of refusals) {
      it(`never clones over ${what}`, async () => {
        dataDir('data', 'own-file');
        let stderr = '';
        const child = box.start('replication.sh', env({ FAKE_RECEIVER_ERROR: PURGED, ...fake }));
        child.stderr?.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        try {
          await eventually(() => says.test(stderr), `the sidecar to say ${String(says)}`);
        } finally {
          child.kill('SIGTERM');
        }
        assert.equal(box.calls().includes('CLONE INSTANCE'), false);
        assert.deepEqual(readdirSync(volume()), ['data']);
        assert.equal(termination(), '');
      });
    }

    it('leaves any other receiver error alone: no clone, and no receiver restart (the controller decides)', async () => {
      dataDir('data', 'own-file');
      const other =
        "13114\tGot fatal error 1236 from source when reading data from binary log: 'Slave has more GTIDs than the master has, using the master's SERVER_UUID.'";
      await runUntil(
        { FAKE_RECEIVER_ERROR: other, FAKE_STATES: 'OFF\tON' },
        () => box.calls().includes('LAST_ERROR_NUMBER'),
        'the sidecar to look at the receiver',
      );
      const calls = box.calls();
      assert.equal(calls.includes('CLONE INSTANCE'), false);
      assert.equal(/START\\? REPLICA|STOP\\? REPLICA|STDIN/.test(calls), false, calls);
      assert.deepEqual(readdirSync(volume()), ['data']);
    });

    it('never looks at re-provisioning on the writable member, even when asked or when logs were purged', async () => {
      dataDir('data', 'own-file');
      annotate('2026-11-22T21:00:00Z');
      // Once the accounts were checked, the sidecar asks again whether the member is writable.
      await runUntil(
        { FAKE_READ_ONLY: '0', FAKE_RECEIVER_ERROR: PURGED },
        () => box.calls().split('-e SELECT\\ @@GLOBAL.read_only\n').length > 2,
        'the sidecar to check the member twice',
      );
      const calls = box.calls();
      assert.equal(/CLONE INSTANCE|LAST_ERROR_NUMBER|super_read_only/.test(calls), false, calls);
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.equal(requestDone(), undefined);
    });

    describe('on request (the recon8s.dev/reprovision pod annotation)', () => {
      const REQUEST = '2026-11-22T21:00:00Z';

      it('re-provisions a replicating member by clone, even with transactions the primary lacks, and records the request', async () => {
        dataDir('data', 'own-file');
        annotate(REQUEST);
        // Errant transactions, and no purged binary logs: only the request asks for the clone.
        assert.equal(await runToExit({ FAKE_GTID_SUBSET: '0', FAKE_STATES: 'ON\tON' }), 0);
        assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.cloned', 'reprovision-request.done']);
        assert.ok(existsSync(volume('data', 'own-file')), 'the old data stays until the clone replicates');
        assert.equal(requestDone(), REQUEST);
        const calls = box.calls();
        assert.ok(
          calls.includes(
            `CLONE INSTANCE FROM 'replication'@'shop-primary':3306 IDENTIFIED BY 'repl\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.clone')}';`,
          ),
          calls,
        );
        assert.match(calls, /^mysql .* -e SHUTDOWN$/m);
        assert.equal(
          termination(),
          `ReprovisionedByClone: shop-1 was re-provisioned by clone from shop-primary: the pod's recon8s.dev/reprovision annotation asks for it (${REQUEST}). Its previous data directory is kept until the clone replicates.`,
        );
      });

      it('does not re-provision again for a request it already handled', async () => {
        dataDir('data', 'clone-file');
        annotate(REQUEST);
        writeFileSync(volume('reprovision-request.done'), REQUEST);
        // The request is not new: the sidecar goes on to the purged-logs check, which finds nothing.
        await runUntil(
          { FAKE_GTID_SUBSET: '0', FAKE_STATES: 'ON\tON' },
          () => box.calls().includes('LAST_ERROR_NUMBER'),
          'the sidecar to look at the receiver',
        );
        assert.equal(box.calls().includes('CLONE INSTANCE'), false);
        assert.equal(termination(), '');
        assert.equal(requestDone(), REQUEST);
      });

      it('re-provisions again for a new value of the annotation', async () => {
        dataDir('data', 'clone-file');
        annotate('2026-11-23T08:00:00Z');
        writeFileSync(volume('reprovision-request.done'), REQUEST);
        assert.equal(await runToExit({ FAKE_GTID_SUBSET: '0' }), 0);
        assert.ok(existsSync(volume('data.cloned', 'mysql.ibd')));
        assert.equal(requestDone(), '2026-11-23T08:00:00Z');
      });

      for (const [what, write] of [
        ['without the annotation', () => annotate()],
        ['with an empty annotation', () => annotate('')],
        ['without the annotations file', () => undefined],
      ] as const) {
        it(`does nothing ${what}`, async () => {
          dataDir('data', 'own-file');
          write();
          await runUntil(
            { FAKE_GTID_SUBSET: '0' },
            () => box.calls().includes('LAST_ERROR_NUMBER'),
            'the sidecar to look at the receiver',
          );
          assert.equal(box.calls().includes('CLONE INSTANCE'), false);
          assert.deepEqual(readdirSync(volume()), ['data']);
        });
      }

      it('keeps a request it may not carry out yet (the donor is not a primary) for later', async () => {
        dataDir('data', 'own-file');
        annotate(REQUEST);
        let stderr = '';
        const child = box.start('replication.sh', env({ FAKE_DONOR_READ_ONLY: '1' }));
        child.stderr?.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        try {
          await eventually(() => /is read-only, not a primary/.test(stderr), 'the sidecar to refuse');
        } finally {
          child.kill('SIGTERM');
        }
        assert.equal(box.calls().includes('CLONE INSTANCE'), false);
        assert.equal(requestDone(), undefined);
        assert.deepEqual(readdirSync(volume()), ['data']);
      });

      it('does not record a request whose clone failed, so that it is tried again', async () => {
        dataDir('data', 'own-file');
        annotate(REQUEST);
        assert.equal(await runToExit({ FAKE_CLONE_ERROR: 'ERROR 3862 (HY000) at line 3: Clone Donor Error' }), 1);
        assert.equal(requestDone(), undefined);
        assert.deepEqual(readdirSync(volume()), ['data']);
        assert.match(termination(), /^ReprovisionFailed: /);
      });
    });

    it('keeps the previous data directory until the clone replicates, then removes it', async () => {
      dataDir('data', 'clone-file');
      dataDir('data.previous', 'own-file');
      // The sidecar looked at replication, decided, and paused until its next round.
      const lookedAndPaused = () => {
        const calls = box.calls();
        const looked = calls.indexOf('JOIN');
        return looked >= 0 && calls.indexOf('\nsleep 10\n', looked) >= 0;
      };
      await runUntil({ FAKE_STATES: 'CONNECTING\tON' }, lookedAndPaused, 'the sidecar to look at replication');
      assert.deepEqual(readdirSync(volume()).sort(), ['data', 'data.previous']);
      await runUntil(
        { FAKE_STATES: 'ON\tON' },
        () => !existsSync(volume('data.previous')),
        'the previous data to be removed',
      );
      assert.deepEqual(readdirSync(volume()), ['data']);
      assert.ok(existsSync(volume('data', 'clone-file')));
    });
  });

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
