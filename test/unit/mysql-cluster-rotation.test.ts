// The rotation of a MySQLCluster's own accounts (lib/mysql/credential-rotation.ts): the next step over every
// combination of observed facts, and a model of the world driven by the decision from every state an
// interruption can leave. The model holds what a real cluster holds: each account's primary and retained
// password (the same on every member: they replicate), the credentials Secret, the controller's cache of
// it (behind the Secret for a while after each write), each agent's mounted copy (behind it longer: the
// kubelet refreshes it), each replica's stored SOURCE_PASSWORD, and the jobs and bootstrapping members
// that took a password from their environment when they started. After every step and every change of
// the world no user of any password is refused, the Secret's passwords are always accepted, and every
// rotation ends with the old passwords refused.
import assert from 'node:assert/strict';
import type { AccountHolds } from '../../lib/mysql/password-rotation.js';
import type { ThreadState } from '../../lib/mysql/topology.js';
import type {
  ClusterAccount,
  ClusterAccountFacts,
  ClusterRotationFacts,
  ClusterRotationRequest,
  ClusterRotationStep,
  ReplicaChannel,
} from '../../lib/mysql/credential-rotation.js';
import {
  CLUSTER_ACCOUNTS,
  clusterRotationInFlight,
  clusterRotationPhase,
  decideClusterRotation,
  describeClusterRotationStep,
  formatRotationRequest,
  parseRotationRequest,
} from '../../lib/mysql/credential-rotation.js';

const HOLDS: readonly AccountHolds[] = ['current', 'next', 'other', 'unknown'];
const ALL = CLUSTER_ACCOUNTS;
const all = (t: string): ClusterRotationRequest => ({ token: t, accounts: ALL });
const only = (t: string, ...accounts: ClusterAccount[]): ClusterRotationRequest => ({ token: t, accounts });

const accountsOf = (f: (a: ClusterAccount) => ClusterAccountFacts) =>
  Object.fromEntries(ALL.map((a) => [a, f(a)])) as Record<ClusterAccount, ClusterAccountFacts>;

/** A cluster whose users have all moved to the Secret's passwords of `revision`. */
const settled = (revision: string): Omit<ClusterRotationFacts, 'accounts' | 'secretWritable'> => ({
  channels: [
    { member: 'shop-1', password: 'current', receiver: 'ON', applier: 'ON' },
    { member: 'shop-2', password: 'current', receiver: 'ON', applier: 'ON' },
  ],
  agents: ['shop-0', 'shop-1', 'shop-2'].map((member) => ({ member, revision })),
  bootstrapping: [],
  jobs: [],
  controllerRenewed: true,
});

/** Every combination of the Secret's, the request's and the accounts' facts, the cluster settled (110 592). */
function* everySecretAndAccounts(): Generator<ClusterRotationFacts> {
  const accountStates = HOLDS.flatMap((holds) => [false, true].map((retains) => ({ holds, retains })));
  for (const requested of [undefined, all('T1'), only('T1', 'replication')])
    for (const completed of [undefined, 'T1'])
      for (const secretWritable of [true, false])
        for (const secretRevision of [undefined, 'T1', 'T2'])
          for (const switched of [undefined, ['replication'] as ClusterAccount[]])
            for (const staged of [undefined, all('T1'), only('T2', 'root')])
              for (const root of accountStates)
                for (const replication of accountStates)
                  for (const admin of accountStates)
                    yield {
                      ...(requested ? { requested } : {}),
                      ...(completed ? { completed } : {}),
                      secretWritable,
                      ...(secretRevision ? { secretRevision } : {}),
                      ...(switched ? { switched } : {}),
                      ...(staged ? { staged } : {}),
                      // clone and backup vary with the others: every state of each is still met.
                      accounts: { root, replication, admin, clone: admin, backup: root },
                      ...settled(secretRevision ?? '0'),
                    };
}

const CHANNELS: readonly (readonly ReplicaChannel[])[] = (() => {
  const states: [ReplicaChannel['password'], ThreadState, ThreadState][] = [
    ['current', 'ON', 'ON'],
    ['current', 'CONNECTING', 'ON'],
    ['current', 'OFF', 'OFF'],
    ['other', 'ON', 'ON'],
    ['other', 'OFF', 'OFF'],
    ['none', 'OFF', 'OFF'],
    ['unknown', 'OFF', 'OFF'],
  ];
  return states.flatMap(([p1, r1, a1]) =>
    states.map(([p2, r2, a2]) => [
      { member: 'shop-1', password: p1, receiver: r1, applier: a1 },
      { member: 'shop-2', password: p2, receiver: r2, applier: a2 },
    ]),
  );
})();

/** A rotation of `accounts` switched to T1, with every combination of what its users did since (9 408). */
function* everyUsersAfterTheSwitch(): Generator<ClusterRotationFacts> {
  for (const accounts of [ALL, ['replication'], ['root'], ['admin']] as ClusterAccount[][])
    for (const retains of [false, true])
      for (const channels of CHANNELS)
        for (const agents of [
          [{ member: 'shop-0', revision: 'T1' }],
          [{ member: 'shop-0', revision: '0' }],
          [{ member: 'shop-0' }],
        ])
          for (const bootstrapping of [[], ['shop-2']])
            for (const jobs of [[], ['shop-backup-1']])
              for (const controllerRenewed of [true, false])
                yield {
                  requested: { token: 'T1', accounts },
                  secretWritable: true,
                  secretRevision: 'T1',
                  switched: accounts,
                  accounts: accountsOf(() => ({ holds: 'current', retains })),
                  channels,
                  agents,
                  bootstrapping,
                  jobs,
                  controllerRenewed,
                };
}

const tokenOf = (s: ClusterRotationStep): string | undefined => ('token' in s ? s.token : undefined);
const accountsIn = (s: ClusterRotationStep): readonly ClusterAccount[] => ('accounts' in s ? s.accounts : []);
const show = (f: ClusterRotationFacts) => JSON.stringify(f);

/** Whether every user of `account`'s old password has moved, by the facts. */
function moved(f: ClusterRotationFacts, account: ClusterAccount, token: string): boolean {
  if (!f.controllerRenewed || f.agents.some((a) => a.revision !== token)) return false;
  if (account === 'clone' && f.bootstrapping.length > 0) return false;
  if (account === 'replication') {
    const runs = (c: ReplicaChannel) => c.applier === 'ON' || c.receiver !== 'OFF';
    if (f.bootstrapping.length > 0) return false;
    if (
      !f.channels.every((c) => c.password === 'none' || (c.password === 'current' && (!runs(c) || c.receiver === 'ON')))
    )
      return false;
  }
  if (account === 'backup' && f.jobs.length > 0) return false;
  return true;
}

describe('Cluster accounts rotation: the decision', () => {
  describe('over every combination of the Secret, the request and the accounts', () => {
    const facts = [...everySecretAndAccounts()];

    it('covers 110 592 combinations, each with one step whose words hold no password, the same each time', () => {
      assert.equal(facts.length, 110_592);
      for (const f of facts) {
        const step = decideClusterRotation(f);
        assert.ok(describeClusterRotationStep(step).length > 0);
        assert.deepEqual(decideClusterRotation(f), step);
        assert.equal(clusterRotationPhase(step) !== undefined, clusterRotationInFlight(f) !== undefined, show(f));
      }
    });

    it('stages only in a Secret recon8s may write, with nothing staged, and not for a completed token', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'stage') continue;
        assert.equal(f.secretWritable, true, show(f));
        assert.equal(f.staged, undefined, show(f));
        assert.notEqual(f.secretRevision, step.token, show(f));
        assert.notEqual(step.token, f.completed, show(f));
        assert.deepEqual(step.accounts, f.requested?.accounts, show(f));
      }
    });

    it('refuses a Secret the spec names only before anything was staged or switched', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'refuse') continue;
        assert.equal(f.secretWritable, false, show(f));
        assert.equal(f.staged, undefined, show(f));
        assert.notEqual(f.secretRevision, step.token, show(f));
      }
    });

    it('sets the new password only on staged accounts that hold the Secret password every user has', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'retain') continue;
        assert.equal(f.staged?.token, step.token, show(f));
        for (const a of step.accounts) {
          assert.ok(f.staged.accounts.includes(a), show(f));
          assert.equal(f.accounts[a].holds, 'current', show(f));
        }
      }
    });

    it('switches the Secret only when every staged account accepts both passwords', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'switch') continue;
        assert.deepEqual(step.accounts, f.staged?.accounts, show(f));
        for (const a of step.accounts) assert.deepEqual(f.accounts[a], { holds: 'next', retains: true }, show(f));
      }
    });

    it('never sets, discards or reports a password of an account the primary did not report', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (!['retain', 'restore', 'repair', 'discard'].includes(step.kind)) continue;
        for (const a of accountsIn(step)) assert.notEqual(f.accounts[a].holds, 'unknown', show(f));
      }
    });

    it('repairs drift without dropping a password users may hold: after the switch the present one is retained', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'repair') continue;
        assert.equal(step.retain, f.staged === undefined, show(f));
        for (const a of step.accounts) assert.ok(['other', 'next'].includes(f.accounts[a].holds), show(f));
      }
    });

    it('finishes a staged rotation first, whatever is asked for meanwhile', () => {
      for (const f of facts) {
        if (f.staged === undefined) continue;
        assert.equal(tokenOf(decideClusterRotation(f)), f.staged.token, show(f));
      }
    });

    it('touches only the accounts of the rotation under way', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        const token = tokenOf(step);
        if (token === undefined) continue;
        const rotating =
          f.staged?.accounts ?? (f.secretRevision === token ? (f.switched ?? ALL) : (f.requested?.accounts ?? []));
        for (const a of accountsIn(step)) assert.ok(rotating.includes(a), `${step.kind} ${a}: ${show(f)}`);
      }
    });
  });

  describe('over every combination of what the users did after the switch', () => {
    const facts = [...everyUsersAfterTheSwitch()];

    it('covers 9 408 combinations', () => assert.equal(facts.length, 9408));

    it('discards an account’s old password only once every user of it has moved', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'discard') continue;
        for (const a of step.accounts) {
          assert.ok(moved(f, a, 'T1'), `${a}: ${show(f)}`);
          assert.equal(f.accounts[a].retains, true, show(f));
        }
      }
    });

    it('completes only with no old password left and every user moved', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'complete') continue;
        for (const a of f.switched ?? ALL) {
          assert.ok(moved(f, a, 'T1'), `${a}: ${show(f)}`);
          assert.equal(f.accounts[a].retains, false, show(f));
        }
      }
    });

    it('re-points a replica only in a replication rotation the controller reads, and only while the other running replicas are connected', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        if (step.kind !== 'repoint') continue;
        assert.ok(f.switched?.includes('replication'), show(f));
        assert.equal(f.controllerRenewed, true, show(f));
        const channel = f.channels.find((c) => c.member === step.member);
        assert.equal(channel?.password, 'other', show(f));
        for (const c of f.channels)
          if (c !== channel && (c.applier === 'ON' || c.receiver !== 'OFF')) assert.equal(c.receiver, 'ON', show(f));
      }
    });

    it('waits, saying for what, whenever it neither re-points, discards nor completes', () => {
      for (const f of facts) {
        const step = decideClusterRotation(f);
        assert.ok(['repoint', 'discard', 'complete', 'await'].includes(step.kind), `${step.kind}: ${show(f)}`);
        if (step.kind === 'await') assert.ok(step.awaiting.length > 0, show(f));
      }
    });
  });

  describe('at each point a rotation can be interrupted', () => {
    const held = (holds: AccountHolds, retains: boolean) => accountsOf(() => ({ holds, retains }));
    const base: ClusterRotationFacts = {
      requested: all('T1'),
      secretWritable: true,
      accounts: held('current', false),
      ...settled('0'),
    };
    const switched: ClusterRotationFacts = {
      ...base,
      secretRevision: 'T1',
      switched: ALL,
      accounts: held('current', true),
      ...settled('T1'),
    };
    const cases: readonly [string, ClusterRotationFacts, ClusterRotationStep][] = [
      ['nothing asked for', { ...base, requested: undefined }, { kind: 'idle' }],
      ['asked for: stage first', base, { kind: 'stage', token: 'T1', accounts: ALL }],
      ['asked for, the Secret is the user’s', { ...base, secretWritable: false }, { kind: 'refuse', token: 'T1' }],
      ['staged, MySQL untouched', { ...base, staged: all('T1') }, { kind: 'retain', token: 'T1', accounts: ALL }],
      [
        'staged, one account retained',
        { ...base, staged: all('T1'), accounts: { ...held('current', false), root: { holds: 'next', retains: true } } },
        { kind: 'retain', token: 'T1', accounts: ['replication', 'admin', 'clone', 'backup'] },
      ],
      [
        'retained, Secret not switched',
        { ...base, staged: all('T1'), accounts: held('next', true) },
        { kind: 'switch', token: 'T1', accounts: ALL },
      ],
      [
        'switched, the controller’s cache behind',
        { ...switched, controllerRenewed: false },
        { kind: 'await', token: 'T1', awaiting: ['the controller to read the switched Secret'] },
      ],
      [
        'switched, replicas still on the old password',
        {
          ...switched,
          channels: [
            { member: 'shop-1', password: 'other', receiver: 'ON', applier: 'ON' },
            { member: 'shop-2', password: 'other', receiver: 'ON', applier: 'ON' },
          ],
        },
        { kind: 'repoint', token: 'T1', member: 'shop-1' },
      ],
      [
        're-pointed one, its receiver reconnecting: the other waits',
        {
          ...switched,
          channels: [
            { member: 'shop-1', password: 'current', receiver: 'CONNECTING', applier: 'ON' },
            { member: 'shop-2', password: 'other', receiver: 'ON', applier: 'ON' },
          ],
        },
        {
          kind: 'discard',
          token: 'T1',
          accounts: ['root', 'admin', 'clone', 'backup'],
        },
      ],
      [
        'an agent still reads the old Secret',
        { ...switched, agents: [{ member: 'shop-0', revision: '0' }] },
        {
          kind: 'await',
          token: 'T1',
          awaiting: ['the agent of shop-0 to read the switched Secret (it reads revision 0)'],
        },
      ],
      [
        'a backup started before the switch still runs: the backup account waits, the others (root too) are discarded',
        { ...switched, jobs: ['shop-backup-1'] },
        { kind: 'discard', token: 'T1', accounts: ['root', 'replication', 'admin', 'clone'] },
      ],
      [
        'only the backup account left, its job still running',
        {
          ...switched,
          jobs: ['shop-backup-1'],
          accounts: { ...held('current', false), backup: { holds: 'current', retains: true } },
        },
        {
          kind: 'await',
          token: 'T1',
          awaiting: ['job pod shop-backup-1 to finish (it started with the old backup password)'],
        },
      ],
      ['every user moved', switched, { kind: 'discard', token: 'T1', accounts: ALL }],
      ['discarded, not recorded', { ...switched, accounts: held('current', false) }, { kind: 'complete', token: 'T1' }],
      ['recorded', { ...switched, completed: 'T1', accounts: held('current', false) }, { kind: 'idle' }],
      [
        'a second rotation after the first',
        { ...switched, requested: only('T2', 'admin'), completed: 'T1', accounts: held('current', false) },
        { kind: 'stage', token: 'T2', accounts: ['admin'] },
      ],
      [
        'the retained password discarded by hand before the switch: restored',
        { ...base, staged: all('T1'), accounts: held('next', false) },
        { kind: 'restore', token: 'T1', accounts: ALL },
      ],
      [
        'no writable primary to report the accounts',
        { ...base, staged: all('T1'), accounts: held('unknown', false) },
        { kind: 'awaitAccount', token: 'T1', accounts: ALL },
      ],
    ];
    for (const [what, facts, step] of cases)
      it(`${what}: ${step.kind}`, () => assert.deepEqual(decideClusterRotation(facts), step));
  });

  describe('the request annotation', () => {
    it('reads "[<account>,...@]<token>": no accounts is all three, an unknown one is no request', () => {
      assert.deepEqual(parseRotationRequest('t-1'), { token: 't-1', accounts: ALL });
      assert.deepEqual(parseRotationRequest('admin,replication@t-1'), {
        token: 't-1',
        accounts: ['replication', 'admin'],
      });
      assert.equal(parseRotationRequest('exporter@t-1'), undefined);
      assert.equal(parseRotationRequest('replication@'), undefined);
      assert.equal(parseRotationRequest(''), undefined);
      assert.equal(parseRotationRequest(undefined), undefined);
      for (const r of [all('t-1'), only('t-2', 'root'), only('t-3', 'root', 'admin')])
        assert.deepEqual(parseRotationRequest(formatRotationRequest(r)), r);
    });
  });
});

describe('Cluster accounts rotation: driving a model of the world', () => {
  interface Secret {
    version: number;
    current: Record<ClusterAccount, string>;
    next: Partial<Record<ClusterAccount, string>>;
    revision?: string;
    staged?: ClusterRotationRequest;
    switched?: ClusterAccount[];
  }
  interface World {
    /** The accounts, as every member has them (they replicate). */
    server: Record<ClusterAccount, { primary: string; secondary?: string }>;
    secret: Secret;
    /** The controller's cache of the Secret (what the manager and the Apps' accounts read). */
    cache: Secret;
    /** Set by a write of this pass: the rest of the pass decides from what the API server answered. */
    written?: Secret;
    requested?: ClusterRotationRequest;
    completed?: string;
    primary: string;
    /** Each replica's stored SOURCE_PASSWORD and receiver. */
    channels: { member: string; password: string; receiver: ThreadState }[];
    /** Each member's agent: its mounted copy of the Secret. */
    agents: { member: string; files: Secret }[];
    jobs: { name: string; backup: string }[];
    bootstrapping: { member: string; replication: string; clone: string }[];
    generated: number;
  }
  const copy = (s: Secret): Secret => structuredClone(s);
  const fresh = (request: ClusterRotationRequest = all('T1')): World => {
    const secret: Secret = {
      version: 1,
      current: { root: 'root-0', replication: 'repl-0', admin: 'admin-0', clone: 'clone-0', backup: 'backup-0' },
      next: {},
    };
    return {
      server: {
        root: { primary: 'root-0' },
        replication: { primary: 'repl-0' },
        admin: { primary: 'admin-0' },
        clone: { primary: 'clone-0' },
        backup: { primary: 'backup-0' },
      },
      secret,
      cache: copy(secret),
      requested: request,
      primary: 'shop-0',
      channels: ['shop-1', 'shop-2'].map((member) => ({ member, password: 'repl-0', receiver: 'ON' as ThreadState })),
      agents: ['shop-0', 'shop-1', 'shop-2'].map((member) => ({ member, files: copy(secret) })),
      jobs: [{ name: 'shop-backup-1', backup: 'backup-0' }],
      bootstrapping: [],
      generated: 0,
    };
  };
  const accepted = (w: World, a: ClusterAccount, password: string) =>
    w.server[a].primary === password || w.server[a].secondary === password;
  /** The Secret a decision is made from: what this pass wrote, or else the cache. */
  const view = (w: World): Secret => w.written ?? w.cache;

  const facts = (w: World): ClusterRotationFacts => {
    const s = view(w);
    const holds = (a: ClusterAccount): AccountHolds =>
      w.server[a].primary === s.current[a] ? 'current' : w.server[a].primary === s.next[a] ? 'next' : 'other';
    return {
      ...(w.requested ? { requested: w.requested } : {}),
      ...(w.completed ? { completed: w.completed } : {}),
      secretWritable: true,
      ...(s.revision ? { secretRevision: s.revision } : {}),
      ...(s.switched ? { switched: s.switched } : {}),
      ...(s.staged ? { staged: s.staged } : {}),
      accounts: accountsOf((a) => ({ holds: holds(a), retains: w.server[a].secondary !== undefined })),
      channels: w.channels.map((c) => ({
        member: c.member,
        password: c.password === s.current.replication ? 'current' : 'other',
        receiver: c.receiver,
        applier: 'ON',
      })),
      agents: w.agents.map((a) => ({ member: a.member, revision: a.files.revision ?? '0' })),
      bootstrapping: w.bootstrapping.map((b) => b.member),
      jobs: w.jobs.map((j) => j.name),
      controllerRenewed: w.cache.version >= s.version,
    };
  };

  /** A write to the Secret, compare-and-swap on the version the decision read. */
  const write = (w: World, change: (s: Secret) => void): void => {
    if (view(w).version !== w.secret.version) return;
    change(w.secret);
    w.secret.version++;
    w.written = copy(w.secret);
  };

  const act = (w: World, s: ClusterRotationStep): void => {
    const seen = view(w);
    switch (s.kind) {
      case 'stage':
        write(w, (secret) => {
          for (const a of s.accounts) secret.next[a] = `${a}-${++w.generated}`;
          secret.staged = { token: s.token, accounts: s.accounts };
        });
        return;
      case 'retain':
        for (const a of s.accounts)
          w.server[a] = {
            primary: seen.next[a] ?? assert.fail(`retain ${a} unstaged`),
            secondary: w.server[a].primary,
          };
        return;
      case 'restore':
        for (const a of s.accounts) w.server[a] = { primary: seen.current[a], secondary: w.server[a].primary };
        return;
      case 'repair':
        // Without RETAIN, MySQL keeps a secondary password as it is.
        for (const a of s.accounts)
          w.server[a] = {
            primary: seen.current[a],
            ...(s.retain
              ? { secondary: w.server[a].primary }
              : w.server[a].secondary
                ? { secondary: w.server[a].secondary }
                : {}),
          };
        return;
      case 'switch':
        write(w, (secret) => {
          for (const a of s.accounts) secret.current[a] = secret.next[a] ?? assert.fail(`switch ${a} unstaged`);
          secret.next = {};
          delete secret.staged;
          secret.revision = s.token;
          secret.switched = [...s.accounts];
        });
        return;
      case 'repoint': {
        const c = w.channels.find((x) => x.member === s.member) ?? assert.fail(s.member);
        c.password = seen.current.replication;
        c.receiver = 'CONNECTING';
        return;
      }
      case 'discard':
        for (const a of s.accounts) delete w.server[a].secondary;
        return;
      case 'complete':
        w.completed = s.token;
        return;
      case 'refuse':
      case 'await':
      case 'awaitAccount':
      case 'idle':
        return;
    }
  };

  /** Things that happen by themselves, in the order a real cluster does them at the latest. */
  const events: readonly [string, (w: World) => boolean][] = [
    [
      'the controller’s cache catches up',
      (w) => w.cache.version < w.secret.version && ((w.cache = copy(w.secret)), true),
    ],
    [
      'a receiver connects',
      (w) => {
        const c = w.channels.find((x) => x.receiver === 'CONNECTING' && accepted(w, 'replication', x.password));
        return c !== undefined && ((c.receiver = 'ON'), true);
      },
    ],
    [
      'the kubelet refreshes an agent’s mounted Secret',
      (w) => {
        const a = w.agents.find((x) => x.files.version < w.secret.version);
        return a !== undefined && ((a.files = copy(w.secret)), true);
      },
    ],
    ['a job ends', (w) => w.jobs.length > 0 && (w.jobs.shift(), true)],
    ['a member finishes bootstrapping', (w) => w.bootstrapping.length > 0 && (w.bootstrapping.shift(), true)],
  ];
  const settle = (w: World): string | undefined => {
    for (const [what, happen] of events) if (happen(w)) return what;
    return undefined;
  };

  /** Every user of a password, and what it holds. */
  const users = (w: World): [string, ClusterAccount, string][] => [
    ...ALL.map((a): [string, ClusterAccount, string] => [`the controller (${a})`, a, w.cache.current[a]]),
    ...w.agents.flatMap((g) =>
      ALL.map((a): [string, ClusterAccount, string] => [`the agent of ${g.member} (${a})`, a, g.files.current[a]]),
    ),
    ...w.channels.map((c): [string, ClusterAccount, string] => [`replica ${c.member}`, 'replication', c.password]),
    ...w.jobs.map((j): [string, ClusterAccount, string] => [`job ${j.name}`, 'backup', j.backup]),
    ...w.bootstrapping.flatMap((b): [string, ClusterAccount, string][] => [
      [`bootstrap of ${b.member}`, 'replication', b.replication],
      [`clone of ${b.member}`, 'clone', b.clone],
    ]),
  ];
  const check = (w: World, after: string): void => {
    for (const [who, a, password] of users(w)) assert.ok(accepted(w, a, password), `${who} was refused after ${after}`);
    for (const a of ALL) {
      // The Secret and the server never disagree: its password logs in, and the one the account holds is in it.
      assert.ok(accepted(w, a, w.secret.current[a]), `the Secret's ${a} password was refused after ${after}`);
      assert.ok(
        [w.secret.current[a], w.secret.next[a]].includes(w.server[a].primary),
        `${a} holds a password the Secret lost after ${after}`,
      );
    }
  };

  /**
   * Runs the decision to the end. A pass is one decision; `samePass` says whether the next decision is
   * still of the pass that wrote (from what the API server answered) or a new one (from the cache).
   * When the decision waits, the world moves on by one event.
   */
  const drive = (w: World, samePass: (i: number) => boolean = () => false): string[] => {
    const steps: string[] = [];
    for (let i = 0; i < 200; i++) {
      if (!samePass(i)) delete w.written;
      const step = decideClusterRotation(facts(w));
      if (step.kind === 'idle') return steps;
      steps.push(step.kind);
      act(w, step);
      check(w, steps.join(' → '));
      if (['await', 'awaitAccount'].includes(step.kind) || i % 3 === 2) {
        const what = settle(w);
        if (what) check(w, `${steps.join(' → ')} and ${what}`);
        else if (step.kind === 'await')
          assert.fail(`waits for nothing that can happen: ${describeClusterRotationStep(step)}`);
      }
    }
    return assert.fail(`no end after ${steps.join(' → ')}`);
  };

  const oldRefused = (w: World, before: Record<ClusterAccount, string>, accounts: readonly ClusterAccount[]) => {
    for (const a of accounts) assert.equal(accepted(w, a, before[a]), false, `the old ${a} password still logs in`);
    for (const a of ALL.filter((x) => !accounts.includes(x))) assert.equal(w.server[a].primary, before[a], a);
  };

  it('runs a rotation of all three accounts through every step, in order, and ends with the old passwords refused', () => {
    const w = fresh();
    const before = { ...w.secret.current };
    const steps = drive(w, () => true).filter((s, i, a) => s !== a[i - 1]);
    assert.deepEqual(steps.slice(0, 3), ['stage', 'retain', 'switch']);
    assert.ok(steps.includes('repoint'));
    assert.equal(steps.at(-1), 'complete');
    assert.equal(w.completed, 'T1');
    oldRefused(w, before, ALL);
    assert.ok(w.channels.every((c) => c.password === w.secret.current.replication && c.receiver === 'ON'));
  });

  for (const accounts of [['replication'], ['root'], ['admin'], ['root', 'admin']] as ClusterAccount[][])
    it(`rotates ${accounts.join(' and ')} alone, leaving the others as they were`, () => {
      const w = fresh(only('T1', ...accounts));
      const before = { ...w.secret.current };
      drive(w);
      assert.equal(w.completed, 'T1');
      oldRefused(w, before, accounts);
    });

  it('resumes from the state after every step (an interruption there), whether the cache is behind or not, and ends the same way, twice in a row', () => {
    for (const samePass of [() => false, () => true, (i: number) => i % 2 === 0])
      for (let stop = 0; stop < 30; stop++) {
        const w = fresh();
        const before = { ...w.secret.current };
        for (let i = 0; i < stop; i++) {
          const step = decideClusterRotation(facts(w));
          act(w, step);
          if (step.kind === 'await') settle(w);
        }
        delete w.written;
        drive(w, samePass);
        assert.equal(w.completed, 'T1', `stopped after ${stop} steps`);
        for (const a of ALL) assert.equal(w.server[a].secondary, undefined);
        const second = { ...w.secret.current };
        w.requested = only('T2', 'replication', 'admin');
        w.jobs.push({ name: 'shop-backup-2', backup: w.secret.current.backup });
        drive(w, samePass);
        assert.equal(w.completed, 'T2');
        oldRefused(w, second, ['replication', 'admin']);
        assert.equal(accepted(w, 'root', before.root), false, `stopped after ${stop} steps`);
      }
  });

  it('keeps every user logging in when the world moves at any time: events at every point of a long random run', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 300; run++) {
      const w = fresh(random() < 0.5 ? all('T1') : only('T1', 'replication'));
      w.bootstrapping.push({ member: 'shop-3', replication: 'repl-0', clone: 'clone-0' });
      const before = { ...w.secret.current };
      const steps: string[] = [];
      for (let i = 0; i < 400 && w.completed !== 'T1'; i++) {
        if (random() < 0.5) delete w.written;
        const step = decideClusterRotation(facts(w));
        steps.push(step.kind);
        act(w, step);
        check(w, steps.join(' → '));
        // Anything may happen between two decisions, in any order: not only the next event.
        while (random() < 0.5) {
          const [what, happen] = events[Math.floor(random() * events.length)] ?? assert.fail();
          if (happen(w)) check(w, `${steps.join(' → ')} and ${what}`);
        }
      }
      assert.equal(w.completed, 'T1', `run ${run}: ${steps.join(' → ')}`);
      oldRefused(w, before, w.requested?.accounts ?? ALL);
    }
  });

  it('stays safe when someone or something meddles at any point, and still completes', () => {
    const meddling: readonly [string, (w: World) => void][] = [
      ['discards the retained passwords by hand', (w) => ALL.forEach((a) => delete w.server[a].secondary)],
      ['a new rotation is asked for', (w) => void (w.requested = only('T9', 'root'))],
      [
        'the -next keys are deleted by hand',
        (w) => {
          w.secret.next = {};
          delete w.secret.staged;
          w.secret.version++;
        },
      ],
      [
        'a failover: a replica is promoted, the old primary follows it with the password the controller reads',
        (w) => {
          const promoted = w.channels.shift() ?? assert.fail();
          w.channels.push({ member: w.primary, password: w.cache.current.replication, receiver: 'ON' });
          w.primary = promoted.member;
        },
      ],
      [
        'the manager re-points a replica with the password it reads',
        (w) => {
          const c = w.channels[0] ?? assert.fail();
          c.password = w.cache.current.replication;
        },
      ],
      [
        'a backup starts with the password the kubelet gives it',
        (w) => void w.jobs.push({ name: `shop-backup-${w.generated + 10}`, backup: w.secret.current.backup }),
      ],
    ];
    for (let stop = 0; stop < 30; stop++)
      for (const [what, meddle] of meddling) {
        const w = fresh();
        for (let i = 0; i < stop; i++) {
          const step = decideClusterRotation(facts(w));
          act(w, step);
          if (step.kind === 'await') settle(w);
        }
        delete w.written;
        meddle(w);
        // What the meddling itself breaks is not the decision's doing; from there on nothing more may break.
        const intact = ALL.every(
          (a) =>
            accepted(w, a, w.secret.current[a]) &&
            [w.secret.current[a], w.secret.next[a]].includes(w.server[a].primary),
        );
        if (!intact || !users(w).every(([, a, p]) => accepted(w, a, p))) continue;
        drive(w);
        assert.ok(w.completed !== undefined, `${what} after ${stop} steps: never completed`);
        for (const a of ALL) assert.equal(w.server[a].secondary, undefined, `${what} after ${stop} steps: ${a}`);
      }
  });
});
