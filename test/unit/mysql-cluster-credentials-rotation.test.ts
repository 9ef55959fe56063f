// A pass of the rotation of a MySQLCluster's own accounts (lib/controller/mysql-cluster/credential-rotation-pass.ts)
// against fakes: the credentials Secret (merge patches with a resourceVersion, and a cache that is behind
// it), members whose accounts and channels behave as MySQL's do, and agents that report the revision
// their mounted copy of the Secret has. Passes run until the rotation completes, as the manager runs
// them; what they say (status, Events, problems) never holds a password.
import assert from 'node:assert/strict';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type {
  ClusterAccountActions,
  ObservedClusterAccount,
  PasswordToSet,
} from '../../lib/mysql/cluster-account-sql.js';
import { clusterFingerprint, setPasswordSql } from '../../lib/mysql/cluster-account-sql.js';
import type { ClusterAccount, ClusterRotationRequest } from '../../lib/mysql/credential-rotation.js';
import { CLUSTER_ACCOUNTS } from '../../lib/mysql/credential-rotation.js';
import type { ThreadState } from '../../lib/mysql/topology.js';
import type {
  RotationEnvironment,
  RotationOutcome,
} from '../../lib/controller/mysql-cluster/credential-rotation-pass.js';
import {
  ACCOUNT_KEYS,
  rotateClusterCredentials,
  secretState,
  stagePatch,
  switchPatch,
} from '../../lib/controller/mysql-cluster/credential-rotation-pass.js';
import { bootstrappingMembers, runningJobs } from '../../lib/controller/mysql-cluster/credential-rotation-loop.js';
import { mergeSecret } from './support/merge-secret.js';

const b64 = (v: string) => Buffer.from(v).toString('base64');
const unb64 = (v: string | undefined) => (v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8'));

interface Account {
  primary: string;
  secondary?: string;
  fingerprint?: string;
  revision?: string;
}

/** A cluster of three members (shop-0 the primary) and its credentials Secret, as the fakes see them. */
class World {
  secret: V1Secret = {
    metadata: { name: 'shop-credentials', namespace: 'db', resourceVersion: '1', labels: {} },
    data: {
      'root-password': b64('root-0'),
      'replication-password': b64('repl-0'),
      'admin-password': b64('admin-0'),
      'clone-password': b64('clone-0'),
      'backup-password': b64('backup-0'),
    },
  };
  /** What the controller's cache has. */
  cache: V1Secret = structuredClone(this.secret);
  accounts: Record<ClusterAccount, Account> = {
    root: { primary: 'root-0' },
    replication: { primary: 'repl-0' },
    admin: { primary: 'admin-0' },
    clone: { primary: 'clone-0' },
    backup: { primary: 'backup-0' },
  };
  channels = new Map<string, { password: string; receiver: ThreadState }>([
    ['shop-1', { password: 'repl-0', receiver: 'ON' }],
    ['shop-2', { password: 'repl-0', receiver: 'ON' }],
  ]);
  /** Each member's agent: the revision its mounted Secret says. */
  agents = new Map([
    ['10.0.0.10', '0'],
    ['10.0.0.11', '0'],
    ['10.0.0.12', '0'],
  ]);
  readonly statements: string[] = [];
  logins: string[] = [];
  failNext: Error | undefined;
  bootstrapping: string[] = [];
  jobs: string[] = [];

  accepted(a: ClusterAccount, password: string): boolean {
    return this.accounts[a].primary === password || this.accounts[a].secondary === password;
  }

  /** The kubelet and the informer catch up: the cache and every agent read the Secret as it is. */
  catchUp(): void {
    this.cache = structuredClone(this.secret);
    const revision = unb64(this.secret.data?.['credentials-revision']) ?? '0';
    for (const ip of this.agents.keys()) this.agents.set(ip, revision);
    for (const c of this.channels.values()) if (c.receiver === 'CONNECTING') c.receiver = 'ON';
  }

  member(name: string, password: string): ClusterAccountActions {
    if (!this.accepted('root', password)) throw Object.assign(new Error('Access denied'), { errno: 1045 });
    this.logins.push(`${name} root`);
    const fail = () => {
      const e = this.failNext;
      this.failNext = undefined;
      if (e) throw e;
    };
    return {
      takesWrites: () => Promise.resolve(name === 'shop-0'),
      observe: () =>
        Promise.resolve(
          Object.fromEntries(
            CLUSTER_ACCOUNTS.map((a): [ClusterAccount, ObservedClusterAccount] => {
              const x = this.accounts[a];
              return [
                a,
                {
                  exists: true,
                  ...(x.fingerprint ? { fingerprint: x.fingerprint } : {}),
                  retains: x.secondary !== undefined,
                },
              ];
            }),
          ) as Record<ClusterAccount, ObservedClusterAccount>,
        ),
      setPassword: (p: PasswordToSet) => {
        fail();
        this.statements.push(setPasswordSql(p).sql);
        const x = this.accounts[p.account];
        this.accounts[p.account] = {
          primary: p.password,
          ...(p.retain ? { secondary: x.primary } : x.secondary ? { secondary: x.secondary } : {}),
          fingerprint: clusterFingerprint(p.account, p.password),
          revision: p.revision,
        };
        return Promise.resolve();
      },
      discardOldPasswords: (accounts) => {
        fail();
        this.statements.push(`DISCARD ${accounts.join(',')}`);
        for (const a of accounts) delete this.accounts[a].secondary;
        return Promise.resolve();
      },
      channel: (replication) => {
        const c = this.channels.get(name);
        return Promise.resolve(
          c
            ? { password: c.password === replication ? 'current' : 'other', receiver: c.receiver, applier: 'ON' }
            : { password: 'none', receiver: 'OFF', applier: 'OFF' },
        );
      },
      repoint: (replication) => {
        fail();
        this.statements.push(`REPOINT ${name}`);
        const c = this.channels.get(name);
        if (c) Object.assign(c, { password: replication, receiver: 'CONNECTING' });
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    };
  }

  env(o: { busy?: boolean } = {}): RotationEnvironment {
    const ips: Record<string, string> = { 'shop-0': '10.0.0.10', 'shop-1': '10.0.0.11', 'shop-2': '10.0.0.12' };
    const names = Object.fromEntries(Object.entries(ips).map(([n, ip]) => [ip, n]));
    return {
      readSecret: () => Promise.resolve(structuredClone(this.cache)),
      patchSecret: (secret, patch) => {
        if (secret.metadata?.resourceVersion !== this.secret.metadata?.resourceVersion)
          return Promise.resolve(undefined);
        this.secret = mergeSecret(this.secret, patch);
        return Promise.resolve(structuredClone(this.secret));
      },
      primary: { name: 'shop-0', ip: '10.0.0.10' },
      members: Object.entries(ips).map(([name, ip]) => ({ name, ip })),
      bootstrapping: this.bootstrapping,
      jobs: this.jobs,
      agentRevision: (ip) => Promise.resolve(this.agents.get(ip)),
      open: (ip, password) => Promise.resolve(this.member(names[ip] ?? ip, password)),
      controllerBusy: () => o.busy === true,
      checkLeading: () => undefined,
    };
  }
}

const inputs = (requested?: ClusterRotationRequest, completed?: string) => ({
  ...(requested ? { requested } : {}),
  ...(completed ? { completed } : {}),
  secretWritable: () => true,
});

/** Passes as the manager runs them, the world catching up between them, until the rotation completes. */
async function rotate(w: World, requested: ClusterRotationRequest): Promise<RotationOutcome[]> {
  const outcomes: RotationOutcome[] = [];
  let completed: string | undefined;
  for (let pass = 0; pass < 20; pass++) {
    const o = await rotateClusterCredentials(inputs(requested, completed), w.env());
    outcomes.push(o);
    completed = o.status?.completed;
    if (completed === requested.token) return outcomes;
    w.catchUp();
  }
  return assert.fail(`not complete after 20 passes: ${JSON.stringify(outcomes.map((o) => o.status))}`);
}

describe('MySQLCluster: a pass of the rotation of its own accounts', () => {
  it('rotates root, replication and admin: staged, retained and switched in one pass, replicas re-pointed one at a time, discarded once every user moved', async () => {
    const w = new World();
    const outcomes = await rotate(w, { token: 'T1', accounts: CLUSTER_ACCOUNTS });
    assert.deepEqual(
      outcomes.map((o) => o.events.map((e) => e.reason)),
      [
        ['CredentialsRotationStaged', 'ClusterAccountPasswordRetained', 'CredentialsRotationSwitched'],
        // root and admin have moved once the agents read the switched Secret; replication waits for the replicas.
        ['ReplicaRepointed', 'ClusterAccountOldPasswordDiscarded'],
        ['ReplicaRepointed'],
        ['ClusterAccountOldPasswordDiscarded', 'CredentialsRotationCompleted'],
      ],
    );
    assert.deepEqual(
      outcomes
        .flatMap((o) => o.events.filter((e) => e.reason === 'ClusterAccountOldPasswordDiscarded'))
        .map((e) => e.message),
      [
        'every user of the old passwords of root, admin, clone, backup has moved: discarding them (rotation T1)',
        'every user of the old passwords of replication has moved: discarding them (rotation T1)',
      ],
    );
    // The first pass ends waiting for the controller's cache to show the switch it wrote.
    assert.equal(outcomes[0]?.status?.phase, 'WaitingForClients');
    assert.match(outcomes[0]?.status?.message ?? '', /the controller to read the switched Secret/);
    assert.deepEqual(outcomes.at(-1)?.status, {
      requested: 'T1',
      accounts: [...CLUSTER_ACCOUNTS],
      completed: 'T1',
    });
    const state = secretState(w.secret);
    assert.equal(state.revision, 'T1');
    assert.deepEqual(state.next, {});
    for (const a of CLUSTER_ACCOUNTS) {
      const now = state.current[a] ?? '';
      assert.ok(w.accepted(a, now), a);
      assert.equal(w.accounts[a].secondary, undefined, `${a} still retains the old password`);
      assert.equal(w.accounts[a].revision, 'T1');
    }
    assert.ok([...w.channels.values()].every((c) => c.password === state.current.replication && c.receiver === 'ON'));
  });

  it('never says a password: not in the status, an Event, a problem or a statement’s text', async () => {
    const w = new World();
    const outcomes = await rotate(w, { token: 'T1', accounts: CLUSTER_ACCOUNTS });
    const passwords = [
      'root-0',
      'repl-0',
      'admin-0',
      ...Object.values(secretState(w.secret).current).filter((p): p is string => p !== undefined),
    ];
    const said = JSON.stringify([outcomes, w.statements]);
    for (const p of passwords) assert.ok(!said.includes(p), `a password in what was said: ${said}`);
  });

  it('waits for each user of the old passwords: an agent that reads the old Secret, a running job for the backup account, the Apps’ pass for all', async () => {
    const w = new World();
    w.jobs = ['shop-backup-1'];
    const env = w.env();
    await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), env);
    w.cache = structuredClone(w.secret); // the informer caught up, the kubelet has not
    let o = await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), w.env({ busy: true }));
    assert.deepEqual(o.step, {
      kind: 'await',
      token: 'T1',
      awaiting: ['the controller to read the switched Secret'],
    });
    for (let i = 0; i < 3; i++)
      o = await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), w.env());
    assert.equal(o.step.kind, 'await');
    assert.match(o.status?.message ?? '', /the agent of shop-0 to read the switched Secret \(it reads revision 0\)/);
    for (const ip of w.agents.keys()) w.agents.set(ip, 'T1');
    // The replicas re-pointed one by one, root, replication, admin and clone discarded; the backup account
    // waits for the backup job that started with its old password.
    for (let i = 0; i < 5; i++) {
      o = await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), w.env());
      for (const c of w.channels.values()) c.receiver = 'ON';
    }
    assert.equal(o.step.kind, 'await');
    assert.match(o.status?.message ?? '', /^waiting for job pod shop-backup-1 to finish/);
    assert.equal(w.accounts.replication.secondary, undefined);
    assert.equal(w.accounts.admin.secondary, undefined);
    assert.equal(w.accepted('root', 'root-0'), false, 'a backup job holds no root password: root does not wait for it');
    assert.ok(w.accepted('backup', 'backup-0'), 'the backup account still accepts the old password the job holds');
    w.jobs.length = 0;
    o = await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), w.env());
    assert.equal(o.status?.completed, 'T1');
    assert.equal(w.accepted('backup', 'backup-0'), false);
  });

  it('rotates only the accounts asked for', async () => {
    const w = new World();
    await rotate(w, { token: 'T1', accounts: ['admin'] });
    assert.equal(w.accounts.root.primary, 'root-0');
    assert.equal(w.accounts.replication.primary, 'repl-0');
    assert.notEqual(w.accounts.admin.primary, 'admin-0');
    assert.deepEqual(
      w.statements.filter((s) => s.startsWith('REPOINT')),
      [],
    );
    assert.equal(w.secret.metadata?.annotations?.['recon8s.dev/rotated-accounts'], 'admin');
  });

  it('does nothing, and opens no session, when no rotation is asked for or the last one is complete', async () => {
    const w = new World();
    for (const i of [inputs(), inputs({ token: 'T0', accounts: CLUSTER_ACCOUNTS }, 'T0')]) {
      const o = await rotateClusterCredentials(i, w.env());
      assert.equal(o.step.kind, 'idle');
      assert.equal(o.busy, false);
    }
    assert.deepEqual(w.logins, []);
    assert.equal(w.secret.metadata?.resourceVersion, '1');
  });

  it('refuses a Secret the spec names: a Degraded reason and a Warning, and neither the Secret nor MySQL touched', async () => {
    const w = new World();
    const o = await rotateClusterCredentials(
      { requested: { token: 'T1', accounts: CLUSTER_ACCOUNTS }, secretWritable: () => false },
      w.env(),
    );
    assert.equal(o.status?.phase, 'Refused');
    assert.deepEqual(
      o.problems.map((p) => p.reason),
      ['CredentialsRotationRefused'],
    );
    assert.deepEqual(
      o.events.map((e) => [e.type, e.reason]),
      [['Warning', 'CredentialsRotationRefused']],
    );
    assert.equal(w.secret.metadata?.resourceVersion, '1');
    assert.deepEqual(w.statements, []);
  });

  it('reports a failed statement (a Warning, the status’ message) without throwing, and the next pass resumes from what is there', async () => {
    const w = new World();
    w.failNext = Object.assign(new Error('Lock wait timeout exceeded'), { code: 'ER_LOCK_WAIT_TIMEOUT' });
    const o = await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), w.env());
    assert.deepEqual(
      o.events.map((e) => e.reason),
      ['CredentialsRotationStaged', 'CredentialsRotationFailed'],
    );
    assert.match(o.status?.message ?? '', /ER_LOCK_WAIT_TIMEOUT: Lock wait timeout exceeded/);
    assert.equal(o.busy, true);
    w.catchUp();
    const rest = await rotate(w, { token: 'T1', accounts: CLUSTER_ACCOUNTS });
    assert.equal(rest.at(-1)?.status?.completed, 'T1');
  });

  it('stops at a Secret changed since it was read (its cache behind), and writes nothing over it', async () => {
    const w = new World();
    w.secret = mergeSecret(w.secret, {}); // someone wrote it: the cache is one version behind
    const o = await rotateClusterCredentials(inputs({ token: 'T1', accounts: CLUSTER_ACCOUNTS }), w.env());
    assert.equal(o.step.kind, 'stage');
    assert.deepEqual(o.events, []);
    assert.deepEqual(secretState(w.secret).next, {});
    assert.deepEqual(w.statements, []);
  });
});

describe('MySQLCluster: the credentials Secret during a rotation', () => {
  it('stages a new password per account as <key>-next with the token, and switches by copying it as stored', () => {
    const secret: V1Secret = {
      metadata: { resourceVersion: '1' },
      data: {
        'root-password': b64('r0'),
        'replication-password': b64('p0'),
        'admin-password': b64('a0'),
        'clone-password': b64('c0'),
        'backup-password': b64('b0'),
      },
    };
    const staged = mergeSecret(
      secret,
      stagePatch('T1', ['root', 'replication'], () => 'generated'),
    );
    assert.deepEqual(secretState(staged).staged, { token: 'T1', accounts: ['root', 'replication'] });
    assert.deepEqual(secretState(staged).next, { root: 'generated', replication: 'generated' });
    const patch = switchPatch(staged, 'T1', ['root', 'replication']);
    // Copied as stored: the base64 of the -next key, never decoded.
    assert.equal(patch.data?.[ACCOUNT_KEYS.root], staged.data?.['root-password-next']);
    const switched = mergeSecret(staged, patch);
    const state = secretState(switched);
    assert.deepEqual(state, {
      current: { root: 'generated', replication: 'generated', admin: 'a0', clone: 'c0', backup: 'b0' },
      next: {},
      revision: 'T1',
      switched: ['root', 'replication'],
    });
  });

  it('finishes a -next key written by hand (no token) as the rotation asked for', () => {
    const secret: V1Secret = { data: { 'admin-password-next': b64('x') } };
    assert.deepEqual(secretState(secret, { token: 'T5', accounts: ['admin'] }).staged, {
      token: 'T5',
      accounts: ['admin'],
    });
  });
});

describe('MySQLCluster: the pods that still hold a password of their start', () => {
  const pod = (name: string, component: string, status: V1Pod['status']): V1Pod => ({
    metadata: { name, labels: { 'app.kubernetes.io/component': component } },
    status,
  });
  it('bootstrapping: a member whose bootstrap runs; jobs: a backup pod with a container running', () => {
    const running = { state: { running: {} } };
    const done = { state: { terminated: { exitCode: 0 } } };
    const pods = [
      pod('shop-0', 'database', {
        initContainerStatuses: [{ name: 'bootstrap', ...done }],
        containerStatuses: [{ name: 'mysql', ...running }],
      } as V1Pod['status']),
      pod('shop-1', 'database', { initContainerStatuses: [{ name: 'bootstrap', ...running }] } as V1Pod['status']),
      pod('shop-2', 'database', {
        initContainerStatuses: [{ name: 'bootstrap', state: { waiting: {} } }],
      } as V1Pod['status']),
      pod('shop-backup-1', 'backup', { containerStatuses: [{ name: 'backup', ...running }] } as V1Pod['status']),
      pod('shop-binlog-1', 'backup', { containerStatuses: [{ name: 'binlog', ...done }] } as V1Pod['status']),
    ];
    assert.deepEqual(
      bootstrappingMembers(pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'database')),
      ['shop-1'],
    );
    assert.deepEqual(runningJobs(pods), ['shop-backup-1']);
  });
});
