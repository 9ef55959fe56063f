// Rotating a MySQLCluster's own accounts (root, replication, recon8s-admin) on a real MySQL 9.7: three
// members replicating in the sandbox (support/mysql-sandbox.ts), each with its real agent reading its own
// copy of the credentials Secret, and the controller's passes (support/cluster-rotation-client.ts) with
// the Secret, the controller's cache and the kubelet modelled, while clients keep using the accounts.
// A file of its own: a rotated root password would be a surprise for the tests of mysql-real.test.ts,
// which log in with the sandbox's first one.
import assert from 'node:assert/strict';
import { REFUSED_LOGINS_SQL } from '../support/mysql-counters.js';
import { eventually } from './eventually.js';
import type { MySQLSandbox, SandboxMember } from './support/mysql-sandbox.js';
import { INITIAL_CREDENTIALS, address, startMySQLSandbox } from './support/mysql-sandbox.js';
import { alive, follow, makePrimary, ready, sql } from './support/sandbox-cluster.js';

interface Tally {
  readonly attempts: number;
  readonly failed: number;
  readonly errors: Record<string, number>;
}

interface RotationFigures {
  readonly completed: boolean;
  readonly passes: number;
  readonly rotationMs: number;
  readonly phases: readonly { readonly phase: string; readonly atMs: number }[];
  readonly messages: readonly { readonly message: string; readonly atMs: number }[];
  readonly steps: readonly string[];
  readonly oldPasswords: Record<string, string>;
  readonly newPasswords: Record<string, string>;
  readonly secret: { readonly revision?: string; readonly staged: unknown; readonly switched: unknown };
  readonly writes?: Tally & { readonly written: number; readonly slowestWriteMs: number };
  readonly receivers: Record<
    string,
    { readonly samples: number; readonly off: number; readonly longestOffMs: number; readonly offAtEnd: boolean }
  >;
  readonly logins?: { controller: { admin: Tally; root: Tally }; job: Tally; probes: Tally };
  readonly error?: string;
}

describe('MySQLCluster accounts rotated on a real MySQL 9.7', function () {
  this.timeout(10 * 60_000);
  let sandbox: MySQLSandbox;
  let members: SandboxMember[];
  let primary: SandboxMember;

  before(async function () {
    this.timeout(20 * 60_000); // the first run builds the image's root file system
    sandbox = await startMySQLSandbox();
    members = [0, 1, 2].map((i) => sandbox.member(i));
    primary = members[0] as SandboxMember;
    // As the controller configures them: the primary first, then each replica clones it.
    primary.start();
    await alive(primary);
    makePrimary(primary);
    await ready(primary);
    for (const m of members.slice(1)) {
      m.start();
      await alive(m);
      follow(m);
      await ready(m);
    }
  });
  after(async () => {
    await sandbox?.stop();
  });

  const refused = () => members.reduce((n, m) => n + Number(sql(m, REFUSED_LOGINS_SQL) || 0), 0);

  /** The controller's passes against the members, in their network, with the given load. */
  const rotate = (token: string, accounts: readonly string[], load: Record<string, unknown>): RotationFigures => {
    const r = sandbox.inNetwork(
      [process.execPath, '--import', 'tsx', new URL('./support/cluster-rotation-client.ts', import.meta.url).pathname],
      JSON.stringify({
        members: members.map((m) => ({
          name: `shop-${m.ordinal}`,
          ip: address(m.ordinal),
          credentialsDir: m.credentialsDir,
        })),
        primary: 'shop-0',
        ca: sandbox.ca.certPem,
        secret: primary.credentials(),
        token,
        accounts,
        // The informer sees a write within moments; the kubelets refresh their copies later, each its own.
        cacheLagMs: 200,
        kubeletLagMs: [700, 1400, 2100],
        passMs: 250,
        ...load,
      }),
      5 * 60_000,
    );
    assert.ok(r.ok, `the rotation client failed: ${r.stdout} ${r.stderr}`);
    const out = JSON.parse(r.stdout) as RotationFigures;
    console.log(`      rotation figures: ${JSON.stringify(out)}`);
    assert.equal(out.error, undefined, r.stdout);
    return out;
  };

  it("rotates the replication account while writes replicate: no replica's receiver stays disconnected, no write lost, the old password refused after", async () => {
    const refusedBefore = refused();
    sql(primary, 'CREATE DATABASE IF NOT EXISTS rot');
    const out = rotate('T1', ['replication'], { writes: { intervalMs: 10, table: 'rot.w' } });
    assert.ok(out.completed, JSON.stringify(out.phases));
    // Staged, retained and switched in one pass; each replica re-pointed alone; discarded once they reconnected.
    assert.deepEqual(
      out.steps.filter((s, i, all) => s !== all[i - 1]),
      [
        'CredentialsRotationStaged',
        'ClusterAccountPasswordRetained',
        'CredentialsRotationSwitched',
        'ReplicaRepointed',
        'ClusterAccountOldPasswordDiscarded',
        'CredentialsRotationCompleted',
      ],
    );
    assert.equal(out.steps.filter((s) => s === 'ReplicaRepointed').length, 2);
    // No write failed; every one is on every replica.
    assert.equal(out.writes?.failed, 0, JSON.stringify(out.writes));
    assert.ok((out.writes?.written ?? 0) > 50, JSON.stringify(out.writes));
    for (const m of members.slice(1))
      await eventually(
        () =>
          assert.equal(sql(m, 'SELECT COUNT(*), MAX(id) FROM rot.w'), `${out.writes?.written}\t${out.writes?.written}`),
        {
          timeoutMs: 30_000,
          intervalMs: 100,
          description: `every write on member ${m.ordinal}`,
        },
      );
    // Each receiver was re-pointed (stopped, then connected with the new password) and is connected.
    for (const [member, r] of Object.entries(out.receivers)) {
      assert.equal(r.offAtEnd, false, member);
      assert.ok(r.longestOffMs < 10_000, `${member}'s receiver was disconnected for ${r.longestOffMs} ms`);
    }
    for (const m of members.slice(1))
      assert.equal(
        sql(
          m,
          "SELECT SERVICE_STATE, LAST_ERROR_NUMBER FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''",
        ),
        'ON\t0',
      );
    for (const [where, outcome] of Object.entries(out.oldPasswords))
      assert.equal(outcome, 'ER_ACCESS_DENIED_ERROR', `the old password of ${where}`);
    for (const [where, outcome] of Object.entries(out.newPasswords)) assert.equal(outcome, 'ok', where);
    // The only logins refused are the test's own checks of the old password (one per member).
    assert.equal(refused() - refusedBefore, members.length);
    // Every member's copy of the Secret is the rotated one; root and admin are as they were.
    for (const m of members) {
      assert.equal(m.credentials()['credentials-revision'], 'T1');
      assert.equal(m.credentials()['root-password'], INITIAL_CREDENTIALS['root-password']);
    }
  });

  it('never sets an older password again: an agent whose mounted Secret is behind leaves the rotated account alone when its mysqld restarts', async () => {
    const rotated = primary.credentials();
    // The kubelet has not refreshed the primary's copy (it still says the first passwords), and mysqld restarts.
    primary.replaceCredentials(INITIAL_CREDENTIALS);
    sql(primary, 'SHUTDOWN');
    await eventually(() => assert.match(primary.log('mysql'), /the mysql container exited/), {
      timeoutMs: 60_000,
      description: 'mysqld to stop',
    });
    await alive(primary);
    makePrimary(primary);
    // The agent makes sure of the accounts on a writable member after each start: it cannot log in as
    // replication with its copy's password, and a rotation set the account to revision T1.
    await eventually(
      () =>
        assert.match(
          primary.log('agent'),
          /left account replication as it is: a rotation set it to the passwords of revision T1, and this member reads revision 0/,
        ),
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        description: 'the agent to leave the account alone',
        diagnose: () => primary.diagnose(),
      },
    );
    // The account still takes the rotated password only, and replication carries on.
    primary.replaceCredentials(rotated);
    sql(primary, 'INSERT INTO rot.w SELECT MAX(id) + 1 FROM rot.w');
    for (const m of members.slice(1)) {
      await ready(m);
      await eventually(
        () => assert.equal(sql(m, 'SELECT COUNT(*) FROM rot.w'), sql(primary, 'SELECT COUNT(*) FROM rot.w')),
        {
          timeoutMs: 60_000,
          intervalMs: 250,
          description: `member ${m.ordinal} to replicate after the restart`,
        },
      );
    }
  });

  it('rotates root, the controller’s admin account and the backup account while the controller, a backup job and the agents keep logging in: no failed login, no failed probe, the old passwords refused after', async () => {
    const refusedBefore = refused();
    // After the replication rotation when the whole file runs (its token completed); alone (--grep), the first.
    const completed = primary.credentials()['credentials-revision'];
    const out = rotate('T2', ['root', 'admin', 'backup'], {
      ...(completed ? { completed } : {}),
      // The job runs 4 s, and on until a pass has discarded the old passwords of admin (the client's Input.logins).
      logins: { intervalMs: 20, jobMs: 4000 },
    });
    assert.ok(out.completed, JSON.stringify(out.phases));
    const logins = out.logins ?? assert.fail('no login figures');
    assert.equal(logins.controller.admin.failed, 0, JSON.stringify(logins));
    assert.equal(logins.controller.root.failed, 0, JSON.stringify(logins));
    assert.equal(logins.job.failed, 0, JSON.stringify(logins));
    assert.equal(logins.probes.failed, 0, JSON.stringify(logins));
    assert.ok(logins.controller.admin.attempts > 20 && logins.job.attempts > 20, JSON.stringify(logins));
    // The backup job held the backup account's old password (and no root password): the backup account was
    // discarded only after it ended, root and admin before.
    const discarded = out.messages.filter((m) => /has moved: discarding them/.test(m.message));
    assert.deepEqual(
      discarded.map((m) => m.message),
      [
        'every user of the old passwords of root, admin has moved: discarding them (rotation T2)',
        'every user of the old passwords of backup has moved: discarding them (rotation T2)',
      ],
      JSON.stringify(out.messages),
    );
    assert.deepEqual(
      out.steps.filter((s) => s === 'ReplicaRepointed'),
      [],
    );
    for (const [where, outcome] of Object.entries(out.oldPasswords))
      assert.equal(outcome, 'ER_ACCESS_DENIED_ERROR', `the old password of ${where}`);
    for (const [where, outcome] of Object.entries(out.newPasswords)) assert.equal(outcome, 'ok', where);
    // The only logins refused are the test's own checks of the old passwords (three accounts, three members).
    assert.equal(refused() - refusedBefore, 3 * members.length);
    // A restarted agent logs in with the new root password: it reads the mounted Secret, not an environment of its start.
    for (const m of members) {
      assert.equal(m.restartAgent(), 1, `member ${m.ordinal}'s agent`);
      await eventually(() => assert.match(m.log('agent'), /the agent container exited with 137/), {
        timeoutMs: 30_000,
        description: `member ${m.ordinal}'s agent to stop`,
      });
      await ready(m);
    }
    assert.equal(refused() - refusedBefore, 3 * members.length);
  });
});
