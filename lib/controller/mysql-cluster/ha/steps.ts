// How the HA loop carries out the step decide() chose: one function per kind of Step, each returning
// the Events and metrics it produced (and, for a promotion that must wait, the problem that ends the
// pass). Every SQL statement and label of a step goes through the pass's session and label helpers,
// which check leadership first: none once it is lost.
import { MYSQL_PORT } from '../../../../constructs/index.js';
import type { Step } from '../../../mysql/topology.js';
import type { ManagedEvent, Problem } from '../../kind-controller.js';
import type { Look } from './observe.js';
import type { Pass } from './pass.js';
import type { MemberActions, StepMetric } from './ports.js';
import { APPLY_TIMEOUT_S } from './timing.js';

/** A step that acts (decide() also says steady and wait, which the loop handles itself). */
export type ActionStep = Exclude<Step, { type: 'steady' } | { type: 'wait' }>;

export interface StepOutcome {
  readonly events: readonly ManagedEvent[];
  readonly metrics: readonly StepMetric[];
  /** Set when the step could not be taken yet (a candidate still applying): the pass ends with it. */
  readonly waiting?: Problem;
}

type Execute<S extends ActionStep> = (step: S, pass: Pass, look: Look) => Promise<StepOutcome>;

const done = (...events: ManagedEvent[]): StepOutcome => ({ events, metrics: [] });

/** The session of a member that answered this look (none once leadership is lost). */
function session(pass: Pass, look: Look, name: string): MemberActions {
  pass.leading();
  const s = look.sessions.get(name);
  if (!s) throw new Error(`member ${name} does not answer`);
  return s;
}

const EXECUTE: { readonly [K in ActionStep['type']]: Execute<Extract<ActionStep, { type: K }>> } = {
  async bootstrap(step, pass, look) {
    await pass.choosePrimary(step.member, look.observed);
    await pass.ports.records.ensureHistory(step.member, pass.leading);
    return done({ type: 'Normal', reason: 'PrimaryElected', message: `${step.member} is the first primary` });
  },

  async fence(step, pass, look) {
    const primary = pass.primary;
    await session(pass, look, step.member).fence({ cutOff: step.cutOffMs !== undefined });
    if (step.cutOffMs !== undefined)
      return done({
        type: 'Warning',
        reason: 'PrimaryIsolated',
        message: `none of the replicas of the primary ${step.member} has heard from it for ${Math.round(step.cutOffMs / 1000)} s though it answers (a partition between them): made it read-only and ended its client sessions, to fail over`,
      });
    if (step.writable)
      return done({
        type: 'Warning',
        reason: 'Fenced',
        message: `${step.member} was writable but is not the primary (${primary ?? 'none'}): made it read-only and ended its client sessions`,
      });
    return done();
  },

  async label(step, pass) {
    await pass.label(step.member, step.role);
    return done();
  },

  async enableWrites(step, pass, look) {
    await pass.records.beforeEnableWrites(step.member, step.waitCount);
    await session(pass, look, step.member).enableWrites(step.waitCount);
    pass.memory.down = undefined;
    if (look.observed.find((m) => m.name === step.member)?.sql?.writable) return done();
    return done({
      type: 'Normal',
      reason: 'PrimaryWritable',
      message: `${step.member} takes writes${step.waitCount > 0 ? `, each acknowledged once ${step.waitCount} replica(s) received it` : ' (semi-synchronous replication off)'}`,
    });
  },

  async replicate(step, pass, look) {
    await session(pass, look, step.member).replicateFrom(step.sourceHost, MYSQL_PORT);
    return done();
  },

  async stopReplication(step, pass, look) {
    await session(pass, look, step.member).stopReplication();
    return done();
  },

  async admitClients(step, pass, look) {
    await session(pass, look, step.member).admitClients();
    return done({
      type: 'Normal',
      reason: 'ClientsAdmitted',
      message: `${step.member} serves clients again: it was kept offline since its fencing (it might have held commits a failover discards), and the primary ${pass.primary ?? ''} now holds everything it has`,
    });
  },

  async stopReceivers(step, pass, look) {
    for (const m of step.members) await session(pass, look, m).stopReceiver();
    return done();
  },

  async promote(step, pass, look) {
    if (!(await session(pass, look, step.to).waitForApplied(step.mustApply, APPLY_TIMEOUT_S)))
      return {
        events: [],
        metrics: [],
        waiting: {
          reason: 'FailoverWaiting',
          message: `${step.to} has not applied the transactions it received within ${APPLY_TIMEOUT_S} s; it is promoted once it has`,
        },
      };
    await session(pass, look, step.to).leaveReplication();
    const { clock } = pass.ports;
    const down = pass.memory.down;
    const downMs = down?.primary === step.from ? clock.now() - down.since : 0;
    await pass.choosePrimary(step.to, look.observed, step);
    pass.memory.down = undefined;
    if (pass.sessions.isSilent(step.from)) pass.fenceInBackground(step.from);
    return {
      events: [
        {
          type: 'Warning',
          reason: 'FailedOver',
          message: `promoted ${step.to}: the primary ${step.from} was lost (${lostHow(step, downMs)}); ${step.to} holds every transaction the replicas received (${step.mustApply.count()} in all)`,
        },
      ],
      metrics: [{ kind: 'failover' }],
    };
  },

  async switchover(step, pass, look) {
    const { clock } = pass.ports;
    const started = clock.now();
    await pass.label(step.from, 'none');
    // A stopping one is never asked again (its pod is going away): fence() says what that saves.
    await session(pass, look, step.from).fence(step.stopping ? { stopping: true } : {});
    const executed = await session(pass, look, step.from).executed();
    if (!(await session(pass, look, step.to).waitForApplied(executed, APPLY_TIMEOUT_S))) {
      const failed = { kind: 'switchover', outcome: 'failed' } as const;
      if (step.stopping) {
        // Its pod is going away: never writable again; a failover follows once it is down.
        const message = `${step.to} did not catch up with ${step.from}, whose pod is stopping, within ${APPLY_TIMEOUT_S} s; ${step.from} stays read-only`;
        return { events: [{ type: 'Warning', reason: 'SwitchoverFailed', message }], metrics: [failed] };
      }
      // Writable again as enableWrites does it: semi-synchronous replication first (fence() turned it
      // off), so that no commit is acknowledged before a replica has it.
      await pass.records.beforeEnableWrites(step.from, pass.waitCount);
      await session(pass, look, step.from).enableWrites(pass.waitCount);
      await pass.label(step.from, 'primary');
      const message = `${step.to} did not catch up with ${step.from} within ${APPLY_TIMEOUT_S} s; ${step.from} stays the primary`;
      if (step.requestId) pass.handled({ requestId: step.requestId, outcome: 'Failed', message });
      pass.switchover = undefined;
      return { events: [{ type: 'Warning', reason: 'SwitchoverFailed', message }], metrics: [failed] };
    }
    await session(pass, look, step.to).leaveReplication();
    await pass.choosePrimary(step.to, look.observed);
    pass.memory.down = undefined;
    const why = step.requestId ? ' (requested)' : step.stopping ? ' (its pod is stopping)' : '';
    const message = `${step.to} is the primary instead of ${step.from}${why}; ${step.from} stopped taking writes ${Math.round(clock.now() - started)} ms before ${step.to} had applied all of them`;
    if (step.requestId) pass.handled({ requestId: step.requestId, outcome: 'Done', message });
    pass.switchover = undefined;
    return {
      events: [{ type: 'Normal', reason: 'SwitchedOver', message }],
      metrics: [{ kind: 'switchover', outcome: 'done' }],
    };
  },

  refuseSwitchover(step, pass) {
    pass.handled({ requestId: step.requestId, outcome: 'Refused', message: step.message });
    pass.switchover = undefined;
    return Promise.resolve({
      events: [{ type: 'Warning', reason: 'SwitchoverRefused', message: step.message }],
      metrics: [{ kind: 'switchover', outcome: 'refused' }],
    });
  },

  async restart(step, pass) {
    await pass.ports.pods.restart(step.member);
    pass.pods = pass.pods.filter((p) => p.metadata?.name !== step.member);
    return done({
      type: 'Normal',
      reason: 'RollingUpdate',
      message: `re-creating ${step.member} from the new pod template${step.member === pass.primary ? '' : ' (a replica)'}`,
    });
  },
};

/** Carries out `step` on what `look` found. */
export function execute(step: ActionStep, pass: Pass, look: Look): Promise<StepOutcome> {
  return (EXECUTE[step.type] as Execute<ActionStep>)(step, pass, look);
}

/** A step as the log names it. */
export function describeStep(step: Step): Record<string, unknown> {
  switch (step.type) {
    case 'promote':
      return { from: step.from, to: step.to, ...(step.stopped !== undefined ? { stopped: step.stopped } : {}) };
    case 'switchover':
      return { from: step.from, to: step.to };
    case 'stopReceivers':
      return { members: step.members.join(',') };
    case 'label':
      return { member: step.member, role: step.role };
    case 'steady':
    case 'wait':
    case 'refuseSwitchover':
      return {};
    default:
      return { member: step.member };
  }
}

/** How a failover's primary was lost, as its Event says it. */
function lostHow(step: Step & { type: 'promote' }, downMs: number): string {
  if (step.cutOffMs !== undefined) return `heard by none of its replicas for ${Math.round(step.cutOffMs / 1000)} s`;
  const down = `down ${(downMs / 1000).toFixed(1)} s`;
  return step.stopped !== undefined ? `${down}: ${step.stopped}` : down;
}
