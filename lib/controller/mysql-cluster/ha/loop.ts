// A MySQLCluster's HA loop: the loop beside the render reconcile that keeps one writable primary.
//
// Contract: each time the cluster is reconciled (its children converged), a pass looks at every member
// over SQL (observe.ts: one session per member, kept between looks; one that ends wakes the cluster),
// asks decide() (lib/mysql/decide.ts, pure) for one step, takes it (steps.ts), and looks again, until
// decide() says steady or wait (at most MAX_STEPS times). It reports status.currentPrimary and the
// members, Degraded reasons for what it waits on, and an Event for every change of topology
// (report.ts). It asks to be called again soon (failure detection polls the members; nothing else
// would notice a primary that stops answering), and at once after a step (timing.ts). An error
// talking to one member is an observation (it "does not answer"), never a thrown error; an API error
// is thrown and retried. A member whose certificate the cluster's CA does not vouch for is one that
// does not answer too (it was sent no credential), and is reported: in status.members, in Degraded
// (MemberCertificateRejected) and by one Warning Event per pod and reason. What a failover must be
// able to prove later (each primary's term, the failover itself) is recorded in status at once,
// before what it guards (primary-records.ts); a former primary whose surplus rejoin.ts proves never
// acknowledged is asked to rejoin by clone (its pod's reprovision annotation, once) with a
// DiscardingUnacknowledged Event, once its agent reports no stop of its mysqld that could have
// acknowledged any of it (lib/agent/stops.ts). At the end of a pass, a member lost with its node
// (its volume bound there) is judged and, when it is safe, removed so that the StatefulSet re-creates
// it elsewhere (node-loss.ts): nothing is read for it while every member's pod is Ready and answers.
//
// Leader safety: nothing is done once `ctx.signal` is aborted (leadership lost): it is checked before
// every step and every write, and after every wait. A new primary is recorded only if the recorded one
// is still the one the steps were judged from (read live, then written with its resourceVersion as a
// precondition), so a controller that judged from a primary another controller has replaced since (a
// deposed leader's promotion) is refused, and a member is made writable only once its election is
// recorded.
//
// Everything it remembers of the cluster is in its memory (memory.ts); everything it reads or changes
// beyond the cache goes through its ports (ports.ts), which unit tests fake.
import { decide } from '../../../mysql/decide.js';
import type { ManageContext, ManagedEvent, Management } from '../../kind-controller.js';
import type { MySQLClusterFacts } from '../facts.js';
import type { HaMemory } from './memory.js';
import { handleNodeLoss } from './node-loss.js';
import { look } from './observe.js';
import { Pass } from './pass.js';
import type { HaPorts, MemberActions } from './ports.js';
import type { Judged } from './report.js';
import { finish, reportLook } from './report.js';
import { describeStep, execute } from './steps.js';
import { reloadRenewedCertificates } from './tls-reload.js';
import { BUSY_POLL_MS, MAX_STEPS } from './timing.js';

/** One pass of the HA loop over `ctx`'s cluster, remembering in `memory`, acting through `ports`. */
export async function runPass(
  ctx: ManageContext<MySQLClusterFacts>,
  memory: HaMemory,
  ports: HaPorts,
): Promise<Management> {
  const pass = await Pass.start(ctx, memory, ports);
  if (!pass) {
    // Nothing to look at: no session kept either.
    memory.sessions.endAll();
    return { fields: {}, problems: [], events: [] };
  }
  // A cluster with a recorded primary has a history: its members' bootstrap must see it (history.ts).
  if (pass.primary !== undefined) await ports.records.ensureHistory(pass.primary, pass.leading);
  const events: ManagedEvent[] = [];
  let last: Judged | undefined;
  for (let i = 0; i < MAX_STEPS; i++) {
    const sessions = new Map<string, MemberActions>();
    try {
      const seen = await look(pass, sessions);
      const decision = decide(seen.view);
      reportLook(ports.metrics, { look: seen, decision });
      pass.knownErrant.clear();
      for (const name of decision.errant) pass.knownErrant.add(name);
      last = { look: seen, decision, problems: [...decision.problems] };
      const step = decision.step;
      if (step.type === 'steady') {
        events.push(...(await reloadRenewedCertificates(sessions, pass.notAfter)));
        break;
      }
      if (step.type === 'wait') {
        // Members that do not answer yet (starting) are progress, not a problem: Ready says so.
        if (step.reason !== 'NoMemberAnswers') last.problems.push({ reason: step.reason, message: step.message });
        break;
      }
      pass.leading();
      pass.log.info('mysql step', { step: step.type, ...describeStep(step) });
      const outcome = await execute(step, pass, seen);
      events.push(...outcome.events);
      for (const metric of outcome.metrics) ports.metrics.count(metric);
      if (outcome.waiting) {
        last.problems.push(outcome.waiting);
        break;
      }
    } catch (e) {
      // A step that failed may have left a session in any state: none is used again.
      for (const name of sessions.keys()) pass.sessions.drop(name);
      throw e;
    }
  }
  if (!last) throw new Error('MAX_STEPS is at least 1');
  const nodeLoss = await handleNodeLoss(pass, last.look);
  events.push(...nodeLoss.events);
  const managed = await finish(pass, last, events);
  // Not in what the poll compares (finish): a NotReady node's wait counts its seconds.
  return {
    ...managed,
    problems: [...managed.problems, ...nodeLoss.problems],
    ...(nodeLoss.acted ? { requeueAfterMs: Math.min(managed.requeueAfterMs ?? BUSY_POLL_MS, BUSY_POLL_MS) } : {}),
  };
}
