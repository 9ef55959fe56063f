// A member lost with its node (lib/mysql/node-loss.ts decides; this gathers and acts). At the end of a
// pass, once decide() has said steady or wait: inert while every member's pod is Ready and answers (no
// request at all); else it reads the members' data claims (and their PersistentVolumes) and the Nodes
// their pods and volumes name, through ports.nodeLoss, and carries out the verdicts:
// - `recover`: deletes the claim (uid precondition), then force-deletes the pod (gracePeriodSeconds 0,
//   uid precondition), in that order, with a Warning Event MemberLostWithNode, and asks for a look soon;
// - `wait`: a Degraded problem with the verdict's reason and message, and one Warning Event per member,
//   node and reason (the `once` key), so a wait that lasts is not repeated every poll.
// Nothing is read again while the members' pods stay as they were when a read found every node they
// name Ready (a pod that cannot start costs one read, not one per look). A read the controller is not
// allowed (403: the node-reader ClusterRole is not bound) is reported as a problem and one Event,
// nothing is judged about node loss, and it is tried again after FORBIDDEN_RETRY_MS (or a pod change).
import { apiError } from '../../../kube/index.js';
import type { NodeLossClaim, NodeLossFacts, NodeLossMember } from '../../../mysql/node-loss.js';
import { decideNodeLoss } from '../../../mysql/node-loss.js';
import type { FailoverRecord } from '../../../mysql/rejoin.js';
import type { ManagedEvent, Problem } from '../../kind-controller.js';
import type { Look } from './observe.js';
import type { Pass } from './pass.js';

export interface NodeLossOutcome {
  readonly problems: readonly Problem[];
  readonly events: readonly ManagedEvent[];
  /** A member's claim or pod was deleted: look again soon. */
  readonly acted: boolean;
}

const NOTHING: NodeLossOutcome = { problems: [], events: [], acted: false };

/** How soon refused reads are tried again while the pods stay as they were. */
export const FORBIDDEN_RETRY_MS = 60_000;

/** Judges and carries out node loss on what the pass's last look found. */
export async function handleNodeLoss(pass: Pass, look: Look): Promise<NodeLossOutcome> {
  const cluster = pass.ctx.cr.metadata.name;
  const size = pass.sts?.spec?.replicas ?? pass.replicas;
  const members = Array.from({ length: size }, (_, i) => `${cluster}-${i}`);
  const podOf = new Map(pass.pods.map((p) => [p.metadata?.name ?? '', p]));
  const answers = (m: string): boolean => look.observed.some((v) => v.name === m && v.sql !== undefined);
  const ready = (m: string): boolean =>
    (podOf.get(m)?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  // Steady state: nothing is read.
  if (members.every((m) => podOf.get(m)?.metadata?.deletionTimestamp === undefined && ready(m) && answers(m))) {
    pass.memory.nodeLossQuiet = undefined;
    return NOTHING;
  }
  // Nor again while the pods are as they were when the last read found every node they name Ready.
  const seen = JSON.stringify(
    members.map((m) => {
      const p = podOf.get(m);
      const deleting = p?.metadata?.deletionTimestamp !== undefined;
      return [m, p?.metadata?.uid, p?.metadata?.resourceVersion, p?.spec?.nodeName, deleting, ready(m), answers(m)];
    }),
  );
  const quiet = pass.memory.nodeLossQuiet;
  const now = pass.ports.clock.now();
  if (quiet?.seen === seen && (quiet.until === undefined || now < quiet.until))
    return { problems: quiet.problems, events: [], acted: false };

  const { nodeLoss } = pass.ports;
  let facts: NodeLossFacts;
  try {
    const claims = await Promise.all(members.map((_, i) => nodeLoss.claim(pass.names.dataClaim(i))));
    const lossMembers = members.map((name, i): NodeLossMember => {
      const p = podOf.get(name);
      const claim: NodeLossClaim | undefined = claims[i];
      return {
        name,
        ...(p?.metadata?.uid
          ? {
              pod: {
                uid: p.metadata.uid,
                ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
                ready: ready(name),
                deleting: p.metadata.deletionTimestamp !== undefined,
              },
            }
          : {}),
        ...(claim ? { claim } : {}),
        answers: answers(name),
      };
    });
    const named = new Set(
      lossMembers.flatMap((m) => [m.pod?.nodeName, m.claim?.volumeNode]).filter((n): n is string => !!n),
    );
    const nodes = named.size > 0 ? await nodeLoss.nodes([...named].sort()) : [];
    const primary = pass.primary;
    const sole = soleCopy(pass.records.failover, primary);
    const after = pass.recoverAfterSeconds;
    facts = {
      members: lossMembers,
      nodes,
      ...(primary !== undefined ? { currentPrimary: primary } : {}),
      ...(after !== undefined ? { recoverAfterSeconds: after } : {}),
      ...(sole ? { soleCopies: [sole] } : {}),
      now: pass.ports.clock.wallClock().getTime(),
    };
  } catch (e) {
    if (apiError(e).code !== 403) throw e;
    const message = `the controller may not read the Nodes, PersistentVolumes or claims a member lost with its node is judged by (${apiError(e).message}): node loss is not acted on; bind the install's node-reader ClusterRole (docs/install.md)`;
    const problems = [{ reason: 'NodeLossForbidden', message }];
    // Not asked again for a while unless the pods change: a refusal costs a request a minute, not one per look.
    pass.memory.nodeLossQuiet = { seen, problems, until: now + FORBIDDEN_RETRY_MS };
    return {
      problems,
      events: [{ type: 'Warning', reason: 'NodeLossForbidden', message, once: 'node-loss/forbidden' }],
      acted: false,
    };
  }

  const problems: Problem[] = [];
  const events: ManagedEvent[] = [];
  let acted = false;
  const verdicts = decideNodeLoss(facts);
  const allReady = facts.members.every((m) =>
    [m.pod?.nodeName, m.claim?.volumeNode].every(
      (n) => !n || facts.nodes.some((f) => f.name === n && f.ready === 'True'),
    ),
  );
  pass.memory.nodeLossQuiet = allReady && verdicts.every((v) => v.kind === 'none') ? { seen, problems: [] } : undefined;
  for (const v of verdicts) {
    if (v.kind === 'wait') {
      problems.push({ reason: v.reason, message: v.message });
      events.push({
        type: 'Warning',
        reason: v.reason,
        message: v.message,
        once: `node-loss/${v.member}/${v.node}/${v.reason}`,
      });
    } else if (v.kind === 'recover') {
      // The claim first: the StatefulSet creates no pod while its claim is being deleted, so the new
      // pod is never bound to the old claim.
      pass.leading();
      if (v.claim) await nodeLoss.deleteClaim(v.claim.name, v.claim.uid);
      pass.leading();
      if (v.pod) await pass.ports.pods.forceDelete(v.pod.name, v.pod.uid);
      pass.pods = pass.pods.filter((p) => p.metadata?.name !== v.member);
      pass.log.info('mysql member lost with its node removed', {
        member: v.member,
        node: v.node,
        evidence: v.evidence,
      });
      events.push({ type: 'Warning', reason: 'MemberLostWithNode', message: v.message });
      acted = true;
    }
  }
  return { problems, events, acted };
}

/**
 * The former primary of the last failover, while what it may hold beyond the primary is not proven
 * unacknowledged (lib/mysql/rejoin.ts): no recorded term, semi-synchronous replication off during it,
 * as many replicas out of reach as acknowledgements, a look since that made it unprovable, or a
 * primary other than the one the failover promoted. Its volume is then the only copy of what it holds.
 */
export function soleCopy(
  failover: FailoverRecord | undefined,
  primary: string | undefined,
): { readonly member: string; readonly why: string } | undefined {
  if (!failover) return undefined;
  const at = `it was the primary until the failover to ${failover.to} at ${failover.time}`;
  const why = (reason: string): { member: string; why: string } => ({
    member: failover.from,
    why: `${at}, and ${reason}`,
  });
  if (!failover.term) return why('its term was not recorded');
  if (failover.term.semiSyncReplicas < 1) return why('semi-synchronous replication was off during its term');
  if (failover.outOfReach >= failover.term.semiSyncReplicas)
    return why(`${failover.outOfReach} of its replicas were out of reach then`);
  if (failover.unprovable !== undefined) return why(failover.unprovable);
  if (failover.to !== primary) return why(`the primary is ${primary ?? 'none'}, not ${failover.to}`);
  return undefined;
}
