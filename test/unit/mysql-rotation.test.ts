// An App's password rotation (lib/mysql/password-rotation.ts): the next step from what is observed, over every
// combination of observed facts, and a model of the world (the account's two passwords, the Secret, the
// pods and the passwords they started with) driven by the decision from every state an interruption can
// leave: no pod is ever refused, and every rotation ends with the old password refused.
import assert from 'node:assert/strict';
import type { AccountHolds, RotationFacts, RotationStep } from '../../lib/mysql/password-rotation.js';
import {
  decideRotation,
  describeRotationStep,
  rotationActor,
  rotationInFlight,
  rotationPhase,
} from '../../lib/mysql/password-rotation.js';

const TOKENS = [undefined, 'T1', 'T2'] as const;
const HOLDS: readonly AccountHolds[] = ['current', 'next', 'other', 'unknown'];

/** Every combination of the facts (3 888). */
function* everyFacts(): Generator<RotationFacts> {
  for (const requested of TOKENS)
    for (const completed of [undefined, 'T1'] as const)
      for (const secretRevision of TOKENS)
        for (const staged of TOKENS)
          for (const holds of HOLDS)
            for (const retains of [false, true])
              for (const rollRevision of TOKENS)
                for (const rolledRevision of TOKENS)
                  yield {
                    ...(requested ? { requested } : {}),
                    ...(completed ? { completed } : {}),
                    ...(secretRevision ? { secretRevision } : {}),
                    ...(staged ? { staged } : {}),
                    account: { holds, retains },
                    ...(rollRevision ? { rollRevision } : {}),
                    ...(rolledRevision ? { rolledRevision } : {}),
                  };
}

const tokenOf = (s: RotationStep): string | undefined => ('token' in s ? s.token : undefined);

describe('App password rotation: the decision', () => {
  describe('over every combination of observed facts', () => {
    const all = [...everyFacts()];

    it('covers 3 888 combinations, each with one step whose words hold no password', () => {
      assert.equal(all.length, 3888);
      for (const f of all) {
        const step = decideRotation(f);
        assert.ok(describeRotationStep(step).length > 0);
        assert.deepEqual(decideRotation(f), step, 'the same facts give the same step');
      }
    });

    it('stages only when nothing is staged and the Secret does not hold the rotation yet', () => {
      for (const f of all) {
        const step = decideRotation(f);
        if (step.kind !== 'stage') continue;
        assert.equal(f.staged, undefined, JSON.stringify(f));
        assert.notEqual(f.secretRevision, step.token, JSON.stringify(f));
        assert.notEqual(step.token, f.completed, JSON.stringify(f));
      }
    });

    it('retains only when the account holds the Secret password the pods use, and a new one is staged', () => {
      for (const f of all) {
        const step = decideRotation(f);
        if (step.kind !== 'retain') continue;
        assert.equal(f.account.holds, 'current', JSON.stringify(f));
        assert.equal(f.staged, step.token, JSON.stringify(f));
      }
    });

    it('switches the Secret only when the account accepts both passwords', () => {
      for (const f of all) {
        const step = decideRotation(f);
        if (step.kind !== 'switch') continue;
        assert.equal(f.account.holds, 'next', JSON.stringify(f));
        assert.equal(f.account.retains, true, JSON.stringify(f));
      }
    });

    it('discards the old password of a rotation only once every pod runs the template of the switched Secret', () => {
      for (const f of all) {
        const step = decideRotation(f);
        if (step.kind !== 'discard') continue;
        assert.equal(f.account.retains, true, JSON.stringify(f));
        assert.equal(f.account.holds, 'current', JSON.stringify(f));
        assert.equal(f.staged, undefined, JSON.stringify(f));
        if (step.token === undefined) {
          // Outside a rotation: a secondary password recon8s did not leave.
          assert.equal(rotationInFlight(f), undefined, JSON.stringify(f));
          continue;
        }
        assert.equal(f.secretRevision, step.token, JSON.stringify(f));
        assert.equal(f.rollRevision, step.token, JSON.stringify(f));
        assert.equal(f.rolledRevision, step.token, JSON.stringify(f));
      }
    });

    it('completes only with the old password gone, the account on the Secret password and every pod rolled', () => {
      for (const f of all) {
        const step = decideRotation(f);
        if (step.kind !== 'complete') continue;
        assert.equal(f.account.retains, false, JSON.stringify(f));
        assert.equal(f.account.holds, 'current', JSON.stringify(f));
        assert.equal(f.staged, undefined, JSON.stringify(f));
        assert.equal(f.secretRevision, step.token, JSON.stringify(f));
        assert.equal(f.rolledRevision, step.token, JSON.stringify(f));
      }
    });

    it('repairs drift without losing a password pods may use: with the present one retained once the Secret is switched', () => {
      for (const f of all) {
        const step = decideRotation(f);
        if (step.kind !== 'repair') continue;
        assert.ok(f.account.holds === 'other' || f.account.holds === 'next', JSON.stringify(f));
        const switchedInFlight = f.staged === undefined && tokenOf(step) !== undefined;
        assert.equal(step.retain, switchedInFlight, JSON.stringify(f));
      }
    });

    it('never acts on an account the cluster has not reported', () => {
      for (const f of all) {
        if (f.account.holds !== 'unknown') continue;
        const step = decideRotation(f);
        assert.ok(['awaitAccount', 'stage'].includes(step.kind), `${JSON.stringify(f)} → ${step.kind}`);
      }
    });

    it('finishes a staged rotation first, whatever token is asked for meanwhile', () => {
      for (const f of all) {
        if (f.staged === undefined) continue;
        assert.equal(tokenOf(decideRotation(f)), f.staged, JSON.stringify(f));
      }
    });

    it('gives each step one actor, and a phase exactly when a rotation is under way', () => {
      for (const f of all) {
        const step = decideRotation(f);
        assert.ok(['app', 'cluster', 'none'].includes(rotationActor(step)));
        assert.equal(rotationPhase(step) !== undefined, rotationInFlight(f) !== undefined, JSON.stringify(f));
      }
    });
  });

  describe('at each point a rotation can be interrupted', () => {
    const base: RotationFacts = { requested: 'T1', account: { holds: 'current', retains: false } };
    const cases: readonly [string, RotationFacts, RotationStep][] = [
      ['nothing asked for', { account: { holds: 'current', retains: false } }, { kind: 'idle' }],
      ['asked for: stage first', base, { kind: 'stage', token: 'T1' }],
      ['staged, MySQL untouched', { ...base, staged: 'T1' }, { kind: 'retain', token: 'T1' }],
      [
        'retained, Secret not switched',
        { ...base, staged: 'T1', account: { holds: 'next', retains: true } },
        { kind: 'switch', token: 'T1' },
      ],
      [
        'switched, pods not asked to roll',
        { ...base, secretRevision: 'T1', account: { holds: 'current', retains: true } },
        { kind: 'roll', token: 'T1' },
      ],
      [
        'asked to roll, pods rolling',
        { ...base, secretRevision: 'T1', rollRevision: 'T1', account: { holds: 'current', retains: true } },
        { kind: 'awaitPods', token: 'T1' },
      ],
      [
        'rolled, old password still retained',
        {
          ...base,
          secretRevision: 'T1',
          rollRevision: 'T1',
          rolledRevision: 'T1',
          account: { holds: 'current', retains: true },
        },
        { kind: 'discard', token: 'T1' },
      ],
      [
        'discarded, not recorded',
        { ...base, secretRevision: 'T1', rollRevision: 'T1', rolledRevision: 'T1' },
        { kind: 'complete', token: 'T1' },
      ],
      [
        'recorded',
        { ...base, completed: 'T1', secretRevision: 'T1', rollRevision: 'T1', rolledRevision: 'T1' },
        { kind: 'idle' },
      ],
      [
        'a second rotation after the first',
        { ...base, requested: 'T2', completed: 'T1', secretRevision: 'T1', rollRevision: 'T1', rolledRevision: 'T1' },
        { kind: 'stage', token: 'T2' },
      ],
      [
        'retained password discarded by hand before the switch: restored',
        { ...base, staged: 'T1', account: { holds: 'next', retains: false } },
        { kind: 'restore', token: 'T1' },
      ],
      [
        'account reset by hand before the switch: the pods’ password is set again',
        { ...base, staged: 'T1', account: { holds: 'other', retains: true } },
        { kind: 'repair', retain: false, token: 'T1' },
      ],
      [
        'account reset by hand after the switch: the new one set, the present one retained',
        { ...base, secretRevision: 'T1', account: { holds: 'other', retains: false } },
        { kind: 'repair', retain: true, token: 'T1' },
      ],
      [
        'a secondary password outside any rotation',
        { account: { holds: 'current', retains: true } },
        { kind: 'discard' },
      ],
      [
        'drift outside any rotation: plain repair, as before',
        { account: { holds: 'other', retains: false } },
        { kind: 'repair', retain: false },
      ],
      [
        'the account not reported yet',
        { ...base, staged: 'T1', account: { holds: 'unknown', retains: false } },
        {
          kind: 'awaitAccount',
          token: 'T1',
        },
      ],
    ];
    for (const [what, facts, step] of cases)
      it(`${what}: ${step.kind}`, () => assert.deepEqual(decideRotation(facts), step));
  });

  describe('driving a model of the world from any state an interruption leaves', () => {
    /** The account's passwords, the Secret, the pods (each started with the Secret's password of the time). */
    interface World {
      primary: string;
      secondary?: string;
      password: string;
      next?: string;
      secretRevision?: string;
      staged?: string;
      requested?: string;
      completed?: string;
      rollRevision?: string;
      pods: { revision?: string; password: string }[];
      generated: number;
    }
    const facts = (w: World): RotationFacts => {
      const holds: AccountHolds =
        w.primary === w.password ? 'current' : w.next !== undefined && w.primary === w.next ? 'next' : 'other';
      const rolled = w.rollRevision !== undefined && w.pods.every((p) => p.revision === w.rollRevision);
      return {
        ...(w.requested ? { requested: w.requested } : {}),
        ...(w.completed ? { completed: w.completed } : {}),
        ...(w.secretRevision ? { secretRevision: w.secretRevision } : {}),
        ...(w.staged ? { staged: w.staged } : {}),
        account: { holds, retains: w.secondary !== undefined },
        ...(w.rollRevision ? { rollRevision: w.rollRevision } : {}),
        ...(rolled ? { rolledRevision: w.rollRevision } : {}),
      };
    };
    /** What a step does to the world (for awaitPods: the Deployment replaces one more pod). */
    const act = (w: World, s: RotationStep): void => {
      switch (s.kind) {
        case 'stage':
          w.next = `generated-${++w.generated}`;
          w.staged = s.token;
          return;
        case 'retain':
          w.secondary = w.primary;
          w.primary = w.next ?? assert.fail('retain without a staged password');
          return;
        case 'restore':
          w.secondary = w.primary;
          w.primary = w.password;
          return;
        case 'switch':
          w.password = w.next ?? assert.fail('switch without a staged password');
          delete w.next;
          delete w.staged;
          w.secretRevision = s.token;
          return;
        case 'roll':
          w.rollRevision = s.token;
          return;
        case 'awaitPods': {
          const old = w.pods.findIndex((p) => p.revision !== w.rollRevision);
          if (old >= 0) w.pods[old] = { ...(w.rollRevision ? { revision: w.rollRevision } : {}), password: w.password };
          return;
        }
        case 'discard':
          delete w.secondary;
          return;
        case 'complete':
          w.completed = s.token;
          return;
        case 'repair':
          if (s.retain) w.secondary = w.primary;
          w.primary = w.password;
          return;
        case 'awaitAccount':
        case 'idle':
          return;
      }
    };
    const accepted = (w: World, password: string) => password === w.primary || password === w.secondary;

    /** Runs the decision to the end; every pod's password is accepted after every step. */
    const drive = (w: World): string[] => {
      const steps: string[] = [];
      for (let i = 0; i < 50; i++) {
        const step = decideRotation(facts(w));
        if (step.kind === 'idle') return steps;
        steps.push(step.kind);
        act(w, step);
        for (const p of w.pods) assert.ok(accepted(w, p.password), `a pod was refused after ${steps.join(' → ')}`);
      }
      return assert.fail(`no end after ${steps.join(' → ')}`);
    };
    const fresh = (): World => ({
      primary: 'initial',
      password: 'initial',
      requested: 'T1',
      pods: [{ password: 'initial' }, { password: 'initial' }, { password: 'initial' }],
      generated: 0,
    });

    it('runs a rotation through every step, in order, and ends with the old password refused', () => {
      const w = fresh();
      assert.deepEqual(drive(w), [
        'stage',
        'retain',
        'switch',
        'roll',
        'awaitPods',
        'awaitPods',
        'awaitPods',
        'discard',
        'complete',
      ]);
      assert.equal(w.completed, 'T1');
      assert.equal(accepted(w, 'initial'), false);
      assert.ok(w.pods.every((p) => p.password === w.password && accepted(w, p.password)));
    });

    it('resumes from the state after every step (an interruption there) and ends the same way, twice in a row', () => {
      // Every prefix of the run: stop, and drive again from what is there (then a second rotation).
      for (let stop = 0; stop < 9; stop++) {
        const w = fresh();
        for (let i = 0; i < stop; i++) act(w, decideRotation(facts(w)));
        drive(w);
        assert.equal(w.completed, 'T1', `stopped after ${stop} steps`);
        assert.equal(accepted(w, 'initial'), false);
        const before = w.password;
        w.requested = 'T2';
        drive(w);
        assert.equal(w.completed, 'T2');
        assert.equal(accepted(w, before), false);
        assert.notEqual(w.password, before);
      }
    });

    it('keeps every pod logging in when someone meddles with the account or the Secret at any point', () => {
      const meddling: readonly [string, (w: World) => void][] = [
        ['discards the retained password by hand', (w) => void delete w.secondary],
        ['a new rotation is asked for', (w) => void (w.requested = 'T9')],
        ['password-next is deleted by hand', (w) => void (delete w.next, delete w.staged)],
      ];
      for (let stop = 0; stop < 9; stop++)
        for (const [what, meddle] of meddling) {
          const w = fresh();
          for (let i = 0; i < stop; i++) act(w, decideRotation(facts(w)));
          meddle(w);
          // What the meddling itself breaks is not the decision's doing; from there on nothing more may break.
          const usable = w.pods.every((p) => accepted(w, p.password));
          if (!usable) continue;
          drive(w);
          assert.ok(w.completed !== undefined, `${what} after ${stop} steps: never completed`);
          assert.equal(w.secondary, undefined, `${what} after ${stop} steps`);
        }
    });
  });
});
