// A member lost with its node: when its volume is bound to that node (local storage), the member can
// only come back by being re-created elsewhere, empty, and joining by clone. This decides, per member,
// whether to do nothing, to wait (and say why), or to remove the member's pod and claim so that the
// StatefulSet re-creates both on another node. Pure: a function of the members, their Nodes and the
// time, tested over every combination (test/unit/mysql-node-loss.test.ts).
//
// When a node counts as down (fenced), in the order they are judged:
// - its Node object is gone from the API (Kubernetes itself then force-deletes its pods: the pod garbage
//   collector), or
// - it is NotReady and carries the node.kubernetes.io/out-of-service taint (non-graceful node shutdown:
//   a person or a fencing agent made sure it is down), or
// - it has been NotReady for spec.nodeLoss.recoverAfterSeconds, when the user opted in. The risk: a node
//   cut off from the API server and the controller, but not from the members, still runs mysqld on that
//   volume and may still acknowledge the primary's writes while its data is discarded.
// A Ready node is never down, taint or not.
//
// Never, whatever the node: for a member that still answers over SQL (its node is not down); for a
// claim whose volume is not bound to the node (network storage moves with its pod: the taint alone
// has Kubernetes move it); for the current primary (the HA loop fails over first, and only then is the
// former primary re-created); when no other member serves as primary to clone from; for a member whose
// volume may hold acknowledged writes no other member has; for two members at once (nothing while any
// member that is not lost is not ready, and one lost member at a time, the lowest ordinal first).
//
// What the caller supplies (lib/controller/mysql-cluster gathers it, once per look):
// - `members`: every member of the StatefulSet (ordinals below spec.replicas), whether or not its pod
//   or claim exists: its pod (uid, spec.nodeName, Ready condition, deletionTimestamp), its data claim
//   (data-<pod>: uid, deletionTimestamp, and `volumeNode`, the single node its bound PersistentVolume's
//   required nodeAffinity pins it to on kubernetes.io/hostname; absent when unbound or not so pinned),
//   and whether the member answered the last SQL look (ClusterView).
// - `nodes`: the Nodes those pods and volumes name (a name missing here is a Node deleted from the API):
//   the Ready condition's status and lastTransitionTime, and the taint keys.
// - `currentPrimary`: status.currentPrimary; `recoverAfterSeconds`: spec.nodeLoss.recoverAfterSeconds.
// - `soleCopies`: members whose volume may hold acknowledged writes no other member has, with why; at
//   least the former primary of status.lastFailover while what it holds beyond the new primary is not
//   proven unacknowledged (no recorded term, a term with semiSyncReplicas 0, or `unprovable` set:
//   lib/mysql/rejoin.ts states the proof).
// - `now`, in milliseconds since the epoch.
// What the caller does with the verdicts:
// - `recover` (at most one per call): delete `claim` (when given) with a precondition on its uid, then
//   delete `pod` (when given) with gracePeriodSeconds 0 and a precondition on its uid, in that order:
//   the StatefulSet controller creates no pod while its claim is being deleted, and once the claim is
//   gone it creates both anew, so the new pod is never bound to the old claim. Record a Warning Event
//   (reason MemberLostWithNode, the message) on the MySQLCluster. The PersistentVolume is left alone
//   (recon8s does not own it; its reclaim policy applies once the claim is gone). Then look again.
// - `wait`: report the reason and message in status (Degraded) and as a Warning Event, once per change.
// - `none`: nothing.

/** The taint of non-graceful node shutdown: the node is down, its pods and volumes may be released. */
export const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';

/** A member's pod, as the API has it. */
export interface NodeLossPod {
  readonly uid: string;
  /** spec.nodeName; absent while the pod is not scheduled. */
  readonly nodeName?: string;
  /** Its Ready condition is True. */
  readonly ready: boolean;
  /** metadata.deletionTimestamp is set (e.g. evicted from a node that cannot confirm it). */
  readonly deleting: boolean;
}

/** A member's data claim, and where its volume lives. */
export interface NodeLossClaim {
  readonly name: string;
  readonly uid: string;
  /** metadata.deletionTimestamp is set. */
  readonly deleting: boolean;
  /**
   * The one node the bound PersistentVolume's required nodeAffinity pins it to (kubernetes.io/hostname):
   * local storage. Absent when the claim is unbound, or its volume can be reached from other nodes.
   */
  readonly volumeNode?: string;
}

export interface NodeLossMember {
  /** The pod's name, `<cluster>-<ordinal>`, whether or not the pod exists. */
  readonly name: string;
  /** Absent when the member has no pod. */
  readonly pod?: NodeLossPod;
  /** Absent when the member has no claim. */
  readonly claim?: NodeLossClaim;
  /** It answered the controller over SQL at the last look. */
  readonly answers: boolean;
}

export interface NodeLossNode {
  readonly name: string;
  /** The status of the Node's Ready condition ('Unknown' when the kubelet stopped reporting). */
  readonly ready: 'True' | 'False' | 'Unknown';
  /** The Ready condition's lastTransitionTime, in milliseconds since the epoch. */
  readonly readySince: number;
  readonly taintKeys: readonly string[];
}

export interface NodeLossFacts {
  readonly members: readonly NodeLossMember[];
  /** The Nodes the members' pods and volumes name; one missing here was deleted from the API. */
  readonly nodes: readonly NodeLossNode[];
  /** status.currentPrimary. */
  readonly currentPrimary?: string;
  /** spec.nodeLoss.recoverAfterSeconds: absent, only a fenced (tainted or deleted) node counts as down. */
  readonly recoverAfterSeconds?: number;
  /** Members whose volume may hold acknowledged writes no other member has, and why. */
  readonly soleCopies?: readonly { readonly member: string; readonly why: string }[];
  /** Milliseconds since the epoch. */
  readonly now: number;
}

/** Why a member on a lost node is not recovered now. */
export type NodeLossWaitReason =
  /** The node is NotReady, and nothing says it is down: no taint, and the policy's time not reached. */
  | 'NodeNotReady'
  /** The node counts as down, but the member answers over SQL. */
  | 'MemberAnswers'
  /** The member's volume is not bound to the node: Kubernetes moves it with its pod. */
  | 'VolumeNotNodeBound'
  /** The member is the current primary: the HA loop fails over first. */
  | 'PrimaryOnLostNode'
  /** No other member serves as primary, ready, to clone from. */
  | 'NoPrimaryToClone'
  /** Its volume may hold acknowledged writes no other member has. */
  | 'SoleCopy'
  /** Another member is not ready, or is recovered first: one member at a time. */
  | 'OneAtATime'
  /** Its claim is being deleted and its pod is gone: the StatefulSet re-creates both. */
  | 'Recovering';

/** How the node was known to be down. */
export type NodeDownEvidence = 'NodeDeleted' | 'OutOfService' | 'NotReadyTooLong';

export type NodeLossVerdict =
  | { readonly kind: 'none'; readonly member: string }
  | {
      readonly kind: 'wait';
      readonly member: string;
      readonly node: string;
      readonly reason: NodeLossWaitReason;
      readonly message: string;
    }
  | {
      readonly kind: 'recover';
      readonly member: string;
      readonly node: string;
      readonly evidence: NodeDownEvidence;
      /** The claim to delete (uid precondition); absent when it is being deleted already. */
      readonly claim?: { readonly name: string; readonly uid: string };
      /** The pod to force-delete (uid precondition); absent when there is none. */
      readonly pod?: { readonly name: string; readonly uid: string };
      readonly message: string;
    };

/** One verdict per member, in the order given; at most one `recover`. */
export function decideNodeLoss(facts: NodeLossFacts): NodeLossVerdict[] {
  const nodes = new Map(facts.nodes.map((n) => [n.name, n]));
  const first = facts.members.map((m) => judge(m, facts, nodes));
  // Members already under way hold every other back: one being re-created (its claim being deleted),
  // or one that is not lost but not whole (a re-created member cloning, or unwell for another reason).
  const busy = [
    ...first
      .filter((v) => v.kind === 'wait' && v.reason === 'Recovering')
      .map((v) => `${v.member} is being re-created`),
    ...facts.members.filter((m) => !isLost(m, nodes) && !isWhole(m)).map((m) => `${m.name} is not ready`),
  ];
  const candidates = first
    .filter((v): v is Extract<NodeLossVerdict, { kind: 'recover' }> => v.kind === 'recover')
    .sort((a, b) => ordinal(a.member) - ordinal(b.member) || a.member.localeCompare(b.member));
  const chosen = busy.length === 0 ? candidates[0] : undefined;
  const holdBack = busy[0] ?? `${chosen?.member ?? ''} is recovered first`;
  return first.map((v): NodeLossVerdict => {
    if (v.kind !== 'recover' || v === chosen) return v;
    return {
      kind: 'wait',
      member: v.member,
      node: v.node,
      reason: 'OneAtATime',
      message: `member ${v.member} is lost with its node ${v.node}, but member ${holdBack}: members are recovered one at a time`,
    };
  });
}

/** The node the member lives on: its volume's when that is bound to one, else its pod's. */
function memberNode(m: NodeLossMember): string | undefined {
  return m.claim?.volumeNode ?? m.pod?.nodeName;
}

function isLost(m: NodeLossMember, nodes: ReadonlyMap<string, NodeLossNode>): boolean {
  const at = memberNode(m);
  return at !== undefined && nodes.get(at)?.ready !== 'True';
}

function isWhole(m: NodeLossMember): boolean {
  return m.pod !== undefined && !m.pod.deleting && m.pod.ready && m.answers;
}

function ordinal(name: string): number {
  const n = /-(\d+)$/.exec(name)?.[1];
  return n === undefined ? Number.MAX_SAFE_INTEGER : Number(n);
}

/** How the node is known to be down, or the wait that says why it is not (yet). */
function nodeDown(
  node: string,
  found: NodeLossNode | undefined,
  facts: NodeLossFacts,
): { readonly down: NodeDownEvidence } | { readonly notYet: string } | undefined {
  if (!found) return { down: 'NodeDeleted' };
  if (found.ready === 'True') return undefined;
  if (found.taintKeys.includes(OUT_OF_SERVICE_TAINT)) return { down: 'OutOfService' };
  const notReadyMs = Math.max(0, facts.now - found.readySince);
  const after = facts.recoverAfterSeconds;
  if (after !== undefined && notReadyMs >= after * 1000) return { down: 'NotReadyTooLong' };
  const since = `node ${node} is NotReady (Ready ${found.ready}) for ${Math.floor(notReadyMs / 1000)} s`;
  const then =
    after === undefined
      ? `once the node carries the ${OUT_OF_SERVICE_TAINT} taint (it is down)`
      : `once the node carries the ${OUT_OF_SERVICE_TAINT} taint, or in ${Math.ceil((after * 1000 - notReadyMs) / 1000)} s (spec.nodeLoss.recoverAfterSeconds ${after})`;
  return { notYet: `${since}: the member is re-created on another node ${then}` };
}

const EVIDENCE_WORDS: Readonly<Record<NodeDownEvidence, string>> = {
  NodeDeleted: 'was deleted from the API',
  OutOfService: `carries the ${OUT_OF_SERVICE_TAINT} taint`,
  NotReadyTooLong: 'has been NotReady for spec.nodeLoss.recoverAfterSeconds',
};

/** The verdict for one member on its own; the one-at-a-time rule is applied over all of them after. */
function judge(m: NodeLossMember, facts: NodeLossFacts, nodes: ReadonlyMap<string, NodeLossNode>): NodeLossVerdict {
  const node = memberNode(m);
  if (node === undefined) return { kind: 'none', member: m.name };
  const state = nodeDown(node, nodes.get(node), facts);
  if (state === undefined) return { kind: 'none', member: m.name };
  const wait = (reason: NodeLossWaitReason, why: string): NodeLossVerdict => ({
    kind: 'wait',
    member: m.name,
    node,
    reason,
    message: `member ${m.name}: ${why}`,
  });
  if ('notYet' in state) {
    // A member that answers on a NotReady node (its kubelet alone stopped) is not lost.
    return m.answers ? { kind: 'none', member: m.name } : wait('NodeNotReady', state.notYet);
  }
  const down = `node ${node} ${EVIDENCE_WORDS[state.down]}`;
  if (m.answers) return wait('MemberAnswers', `${down}, but the member still answers over SQL: it is left alone`);
  if (m.claim?.volumeNode === undefined)
    return wait(
      'VolumeNotNodeBound',
      `${down}; its volume is not bound to that node, so it moves with its pod, which Kubernetes re-creates once the pod is deleted (the ${OUT_OF_SERVICE_TAINT} taint has it force-deleted)`,
    );
  if (m.name === facts.currentPrimary)
    return wait('PrimaryOnLostNode', `${down}; it is the primary: another member is promoted first`);
  const primary = facts.members.find((p) => p.name === facts.currentPrimary);
  if (!primary || !isWhole(primary) || isLost(primary, nodes))
    return wait('NoPrimaryToClone', `${down}; no other member serves as primary to clone from`);
  const sole = facts.soleCopies?.find((s) => s.member === m.name);
  if (sole)
    return wait(
      'SoleCopy',
      `${down}; its volume may hold acknowledged writes no other member has (${sole.why}): a person decides (docs/mysql-ha.md#node-loss)`,
    );
  const claim = m.claim.deleting ? undefined : { name: m.claim.name, uid: m.claim.uid };
  const pod = m.pod ? { name: m.name, uid: m.pod.uid } : undefined;
  if (!claim && !pod)
    return wait(
      'Recovering',
      `${down}; its claim ${m.claim.name} is being deleted: the StatefulSet re-creates the member once it is gone`,
    );
  return {
    kind: 'recover',
    member: m.name,
    node,
    evidence: state.down,
    ...(claim ? { claim } : {}),
    ...(pod ? { pod } : {}),
    message: `member ${m.name}: ${down}; its claim ${m.claim.name} (a volume bound to that node) and its pod are removed, and the StatefulSet re-creates it on another node, where it clones ${primary.name}`,
  };
}
