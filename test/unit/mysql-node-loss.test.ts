import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import { OUT_OF_SERVICE_TAINT, decideNodeLoss } from '../../lib/mysql/node-loss.js';
import type {
  NodeLossFacts,
  NodeLossMember,
  NodeLossNode,
  NodeLossVerdict,
  NodeLossWaitReason,
} from '../../lib/mysql/node-loss.js';

const NOW = Date.parse('2026-11-24T10:00:00Z');
const SECOND = 1000;

const name = (ordinal: number): string => `db-${ordinal}`;
const nodeOf = (ordinal: number): string => `node-${ordinal}`;

const podOf = (ordinal: number) => ({
  uid: `pod-uid-${ordinal}`,
  nodeName: nodeOf(ordinal),
  ready: true,
  deleting: false,
});
const claimOf = (ordinal: number) => ({
  name: `data-${name(ordinal)}`,
  uid: `claim-uid-${ordinal}`,
  deleting: false,
  volumeNode: nodeOf(ordinal),
});

/** A member running whole on its own node, its volume bound there. */
function whole(ordinal: number): NodeLossMember {
  return { name: name(ordinal), pod: podOf(ordinal), claim: claimOf(ordinal), answers: true };
}

/** A member on a node that stopped: its pod not ready (the node controller says so), silent. */
function lost(ordinal: number, overrides: Partial<NodeLossMember> = {}): NodeLossMember {
  const m = whole(ordinal);
  return { ...m, pod: m.pod && { ...m.pod, ready: false }, answers: false, ...overrides };
}

const readyNode = (ordinal: number): NodeLossNode => ({
  name: nodeOf(ordinal),
  ready: 'True',
  readySince: NOW - 3600 * SECOND,
  taintKeys: [],
});

function notReadyNode(
  ordinal: number,
  o: { forSeconds?: number; tainted?: boolean; status?: 'False' | 'Unknown' } = {},
) {
  return {
    name: nodeOf(ordinal),
    ready: o.status ?? 'Unknown',
    readySince: NOW - (o.forSeconds ?? 120) * SECOND,
    taintKeys: ['node.kubernetes.io/unreachable', ...(o.tainted ? [OUT_OF_SERVICE_TAINT] : [])],
  } satisfies NodeLossNode;
}

/** Three members, db-0 the primary; db-1 as given on node-1 as given. */
function facts(
  member1: NodeLossMember,
  node1: NodeLossNode | undefined,
  o: Partial<NodeLossFacts> = {},
): NodeLossFacts {
  return {
    members: [whole(0), member1, whole(2)],
    nodes: [readyNode(0), ...(node1 ? [node1] : []), readyNode(2)],
    currentPrimary: name(0),
    now: NOW,
    ...o,
  };
}

const verdictOf = (vs: readonly NodeLossVerdict[], member: string): NodeLossVerdict => {
  const v = vs.find((x) => x.member === member);
  assert.ok(v, `a verdict for ${member}`);
  return v;
};
const reasonOf = (v: NodeLossVerdict): string => (v.kind === 'wait' ? v.reason : v.kind);

describe('decideNodeLoss (a member lost with its node)', () => {
  describe('a node known to be down', () => {
    it('removes the claim, then the pod, of a replica whose node carries the out-of-service taint', () => {
      const v = verdictOf(decideNodeLoss(facts(lost(1), notReadyNode(1, { tainted: true }))), 'db-1');
      assert.deepEqual(v, {
        kind: 'recover',
        member: 'db-1',
        node: 'node-1',
        evidence: 'OutOfService',
        claim: { name: 'data-db-1', uid: 'claim-uid-1' },
        pod: { name: 'db-1', uid: 'pod-uid-1' },
        message:
          'member db-1: node node-1 carries the node.kubernetes.io/out-of-service taint; its claim data-db-1 (a volume bound to that node) and its pod are removed, and the StatefulSet re-creates it on another node, where it clones db-0',
      });
    });

    it('recovers a member whose Node was deleted from the API', () => {
      const v = verdictOf(decideNodeLoss(facts(lost(1), undefined)), 'db-1');
      assert.equal(v.kind === 'recover' && v.evidence, 'NodeDeleted');
    });

    it('recovers after recoverAfterSeconds NotReady without the taint, and not a second before', () => {
      const at = (forSeconds: number) =>
        verdictOf(
          decideNodeLoss(facts(lost(1), notReadyNode(1, { forSeconds }), { recoverAfterSeconds: 300 })),
          'db-1',
        );
      const v = at(300);
      assert.equal(v.kind === 'recover' && v.evidence, 'NotReadyTooLong');
      const before = at(299);
      assert.equal(reasonOf(before), 'NodeNotReady');
      assert.match(before.kind === 'wait' ? before.message : '', /in 1 s \(spec\.nodeLoss\.recoverAfterSeconds 300\)/);
    });

    it('recovers a member whose pod is already gone (Kubernetes force-deleted it), by its claim alone', () => {
      const v = verdictOf(
        decideNodeLoss(facts(lost(1, { pod: undefined }), notReadyNode(1, { tainted: true }))),
        'db-1',
      );
      assert.equal(v.kind, 'recover');
      assert.ok(v.kind === 'recover' && v.claim && !v.pod);
    });

    it('recovers a member whose pod was re-created Pending, unscheduled, beside a claim bound to the lost node', () => {
      const pending = lost(1, { pod: { uid: 'new-pod', ready: false, deleting: false } });
      const v = verdictOf(decideNodeLoss(facts(pending, notReadyNode(1, { tainted: true }))), 'db-1');
      assert.ok(v.kind === 'recover' && v.node === 'node-1' && v.pod?.uid === 'new-pod');
    });

    it('force-deletes the pod again while the claim is already being deleted', () => {
      const m = lost(1);
      const deleting = lost(1, { claim: m.claim && { ...m.claim, deleting: true } });
      const v = verdictOf(decideNodeLoss(facts(deleting, notReadyNode(1, { tainted: true }))), 'db-1');
      assert.ok(v.kind === 'recover' && !v.claim && v.pod?.uid === 'pod-uid-1');
    });

    it('waits for the StatefulSet once the claim is being deleted and the pod is gone', () => {
      const m = lost(1);
      const gone = lost(1, { pod: undefined, claim: m.claim && { ...m.claim, deleting: true } });
      const v = verdictOf(decideNodeLoss(facts(gone, notReadyNode(1, { tainted: true }))), 'db-1');
      assert.equal(reasonOf(v), 'Recovering');
    });
  });

  describe('waiting, and saying why', () => {
    it('waits for the taint on a NotReady node without a policy, saying so', () => {
      const v = verdictOf(decideNodeLoss(facts(lost(1), notReadyNode(1, { forSeconds: 3600 }))), 'db-1');
      assert.deepEqual(v, {
        kind: 'wait',
        member: 'db-1',
        node: 'node-1',
        reason: 'NodeNotReady',
        message:
          'member db-1: node node-1 is NotReady (Ready Unknown) for 3600 s: the member is re-created on another node once the node carries the node.kubernetes.io/out-of-service taint (it is down)',
      });
    });

    it('does nothing for a member that answers on a NotReady node (its kubelet alone stopped)', () => {
      const v = verdictOf(decideNodeLoss(facts(lost(1, { answers: true }), notReadyNode(1))), 'db-1');
      assert.equal(v.kind, 'none');
    });

    it('never acts on a Ready node, even one carrying the taint', () => {
      const tainted = { ...readyNode(1), taintKeys: [OUT_OF_SERVICE_TAINT] };
      assert.equal(verdictOf(decideNodeLoss(facts(lost(1), tainted)), 'db-1').kind, 'none');
    });

    it('does nothing for a cluster whose nodes are all Ready', () => {
      const vs = decideNodeLoss(facts(whole(1), readyNode(1)));
      assert.deepEqual(
        vs.map((v) => v.kind),
        ['none', 'none', 'none'],
      );
    });

    it('leaves the primary on a lost node to the failover, and recovers it once another is primary', () => {
      const before = facts(lost(1), notReadyNode(1, { tainted: true }), { currentPrimary: 'db-1' });
      assert.equal(reasonOf(verdictOf(decideNodeLoss(before), 'db-1')), 'PrimaryOnLostNode');
      const after = facts(lost(1), notReadyNode(1, { tainted: true }), { currentPrimary: 'db-2' });
      const v = verdictOf(decideNodeLoss(after), 'db-1');
      assert.ok(v.kind === 'recover' && /clones db-2/.test(v.message));
    });
  });

  describe('every condition alone holds a recovery back', () => {
    // From a member that is recovered (the node tainted, its volume bound to it, silent, a replica of a
    // whole primary), each change alone turns the recovery into the wait it names.
    const base = (): NodeLossFacts => facts(lost(1), notReadyNode(1, { tainted: true }));
    const cases: [string, () => NodeLossFacts, NodeLossWaitReason | 'none'][] = [
      ['the taint removed', () => facts(lost(1), notReadyNode(1)), 'NodeNotReady'],
      ['the node Ready again', () => facts(lost(1), { ...readyNode(1), taintKeys: [OUT_OF_SERVICE_TAINT] }), 'none'],
      [
        'the member answering',
        () => facts(lost(1, { answers: true }), notReadyNode(1, { tainted: true })),
        'MemberAnswers',
      ],
      [
        'a volume not bound to the node',
        () => {
          const m = lost(1);
          return facts(
            lost(1, { claim: m.claim && { ...m.claim, volumeNode: undefined } }),
            notReadyNode(1, { tainted: true }),
          );
        },
        'VolumeNotNodeBound',
      ],
      ['it being the primary', () => ({ ...base(), currentPrimary: 'db-1' }), 'PrimaryOnLostNode'],
      ['no primary recorded', () => ({ ...base(), currentPrimary: undefined }), 'NoPrimaryToClone'],
      [
        'the primary not answering',
        () => ({ ...base(), members: [{ ...whole(0), answers: false }, lost(1), whole(2)] }),
        'NoPrimaryToClone',
      ],
      [
        "the primary's node NotReady",
        () => ({ ...base(), nodes: [notReadyNode(0), notReadyNode(1, { tainted: true }), readyNode(2)] }),
        'NoPrimaryToClone',
      ],
      [
        'its volume a sole copy',
        () => ({ ...base(), soleCopies: [{ member: 'db-1', why: 'its term ran without acknowledgements' }] }),
        'SoleCopy',
      ],
      [
        'another member not ready',
        () => ({ ...base(), members: [whole(0), lost(1), { ...whole(2), pod: { ...podOf(2), ready: false } }] }),
        'OneAtATime',
      ],
      [
        "another member's pod missing (being re-created)",
        () => ({ ...base(), members: [whole(0), lost(1), { ...whole(2), pod: undefined }] }),
        'OneAtATime',
      ],
    ];
    it('recovers the base case', () => {
      assert.equal(verdictOf(decideNodeLoss(base()), 'db-1').kind, 'recover');
    });
    for (const [change, make, reason] of cases)
      it(`${change}: ${reason}`, () => {
        const v = verdictOf(decideNodeLoss(make()), 'db-1');
        assert.equal(reasonOf(v), reason);
        if (v.kind === 'wait') assert.match(v.message, /db-1/);
      });
  });

  describe('over every combination of one member and its node', () => {
    type NodeState = 'deleted' | 'ready' | 'readyTainted' | 'notReady' | 'notReadyTainted';
    const nodeStates: NodeState[] = ['deleted', 'ready', 'readyTainted', 'notReady', 'notReadyTainted'];
    const policies = [undefined, 60, 600];
    const notReadyFor = [30, 120, 3600];
    const pods = ['absent', 'notReady', 'deleting', 'ready'] as const;
    const claims = ['absent', 'nodeBound', 'nodeBoundDeleting', 'notNodeBound'] as const;
    const primaries = ['db-0', 'db-1', undefined] as const;

    function node1(state: NodeState, forSeconds: number): NodeLossNode | undefined {
      switch (state) {
        case 'deleted':
          return undefined;
        case 'ready':
          return readyNode(1);
        case 'readyTainted':
          return { ...readyNode(1), taintKeys: [OUT_OF_SERVICE_TAINT] };
        case 'notReady':
          return notReadyNode(1, { forSeconds, status: 'False' });
        case 'notReadyTainted':
          return notReadyNode(1, { forSeconds, tainted: true });
      }
    }
    function member1(pod: (typeof pods)[number], claim: (typeof claims)[number], answers: boolean): NodeLossMember {
      return {
        name: 'db-1',
        answers,
        ...(pod === 'absent'
          ? {}
          : { pod: { uid: 'p1', nodeName: 'node-1', ready: pod === 'ready', deleting: pod === 'deleting' } }),
        ...(claim === 'absent'
          ? {}
          : {
              claim: {
                name: 'data-db-1',
                uid: 'c1',
                deleting: claim === 'nodeBoundDeleting',
                ...(claim === 'notNodeBound' ? {} : { volumeNode: 'node-1' }),
              },
            }),
      };
    }

    let combinations = 0;
    let recovered = 0;
    it('recovers exactly when the node is down, the volume bound to it, the member silent, a replica of a whole primary, and not a sole copy', () => {
      for (const state of nodeStates)
        for (const forSeconds of notReadyFor)
          for (const recoverAfterSeconds of policies)
            for (const pod of pods)
              for (const claim of claims)
                for (const answers of [false, true])
                  for (const currentPrimary of primaries)
                    for (const sole of [false, true]) {
                      combinations++;
                      const m = member1(pod, claim, answers);
                      const f: NodeLossFacts = {
                        ...facts(m, node1(state, forSeconds)),
                        currentPrimary,
                        ...(recoverAfterSeconds !== undefined ? { recoverAfterSeconds } : {}),
                        ...(sole ? { soleCopies: [{ member: 'db-1', why: 'x' }] } : {}),
                      };
                      const vs = decideNodeLoss(f);
                      const label = JSON.stringify({
                        state,
                        forSeconds,
                        recoverAfterSeconds,
                        pod,
                        claim,
                        answers,
                        currentPrimary,
                        sole,
                      });
                      assert.deepEqual(
                        vs.map((v) => v.member),
                        ['db-0', 'db-1', 'db-2'],
                        label,
                      );
                      assert.ok(vs.filter((v) => v.kind === 'recover').length <= 1, label);
                      assert.equal(verdictOf(vs, 'db-0').kind, 'none', label);
                      assert.equal(verdictOf(vs, 'db-2').kind, 'none', label);
                      const down =
                        state === 'deleted' ||
                        state === 'notReadyTainted' ||
                        (state === 'notReady' &&
                          recoverAfterSeconds !== undefined &&
                          forSeconds >= recoverAfterSeconds);
                      const bound = claim === 'nodeBound' || claim === 'nodeBoundDeleting';
                      const somethingToRemove = claim === 'nodeBound' || pod !== 'absent';
                      const expected =
                        down && bound && !answers && currentPrimary === 'db-0' && !sole && somethingToRemove;
                      const v = verdictOf(vs, 'db-1');
                      assert.equal(v.kind === 'recover', expected, label);
                      if (v.kind === 'recover') {
                        recovered++;
                        assert.equal(v.claim !== undefined, claim === 'nodeBound', label);
                        assert.equal(v.pod !== undefined, pod !== 'absent', label);
                        assert.equal(
                          v.evidence,
                          state === 'deleted'
                            ? 'NodeDeleted'
                            : state === 'notReadyTainted'
                              ? 'OutOfService'
                              : 'NotReadyTooLong',
                          label,
                        );
                      }
                      // A node that is Ready, or a member that cannot be placed anywhere, is never waited on.
                      const placed = bound || pod !== 'absent';
                      if (state === 'ready' || state === 'readyTainted' || !placed) assert.equal(v.kind, 'none', label);
                      if (v.kind === 'wait')
                        assert.ok(v.message.startsWith('member db-1') && v.message.includes('node-1'), label);
                    }
      assert.equal(combinations, 5 * 3 * 3 * 4 * 4 * 2 * 3 * 2);
      assert.ok(recovered > 0);
    });
  });

  describe('one member at a time', () => {
    const tainted = (o: number) => notReadyNode(o, { tainted: true });

    it('recovers the lowest ordinal of two lost members and holds the other back, naming it', () => {
      const f: NodeLossFacts = {
        members: [whole(0), lost(1), lost(2)],
        nodes: [readyNode(0), tainted(1), tainted(2)],
        currentPrimary: 'db-0',
        now: NOW,
      };
      const vs = decideNodeLoss(f);
      assert.deepEqual(vs.map(reasonOf), ['none', 'recover', 'OneAtATime']);
      const held = verdictOf(vs, 'db-2');
      assert.match(held.kind === 'wait' ? held.message : '', /member db-1 is recovered first/);
    });

    it('holds the second back while the first is re-created, then while it clones, and lets it go once it is ready', () => {
      const claim1 = claimOf(1);
      const stages: [string, NodeLossMember, NodeLossNode[], string][] = [
        // Its claim being deleted, its pod gone.
        [
          'being re-created',
          lost(1, { pod: undefined, claim: { ...claim1, deleting: true } }),
          [tainted(1)],
          'OneAtATime',
        ],
        // Neither exists yet.
        ['gone', { name: 'db-1', answers: false }, [tainted(1)], 'OneAtATime'],
        // Re-created on node-3, cloning (not ready).
        [
          'cloning on node-3',
          {
            name: 'db-1',
            answers: false,
            pod: { uid: 'new', nodeName: 'node-3', ready: false, deleting: false },
            claim: { name: 'data-db-1', uid: 'new-claim', deleting: false, volumeNode: 'node-3' },
          },
          [tainted(1), readyNode(3)],
          'OneAtATime',
        ],
        [
          'ready on node-3',
          {
            name: 'db-1',
            answers: true,
            pod: { uid: 'new', nodeName: 'node-3', ready: true, deleting: false },
            claim: { name: 'data-db-1', uid: 'new-claim', deleting: false, volumeNode: 'node-3' },
          },
          [tainted(1), readyNode(3)],
          'recover',
        ],
      ];
      for (const [stage, m1, nodes, expected] of stages) {
        const vs = decideNodeLoss({
          members: [whole(0), m1, lost(2)],
          nodes: [readyNode(0), ...nodes, tainted(2)],
          currentPrimary: 'db-0',
          now: NOW,
        });
        assert.equal(reasonOf(verdictOf(vs, 'db-2')), expected, stage);
        assert.ok(vs.filter((v) => v.kind === 'recover').length <= 1, stage);
      }
    });

    it('recovers a lost member beside another lost one that is only waiting (its node not fenced)', () => {
      const vs = decideNodeLoss({
        members: [whole(0), lost(1), lost(2)],
        nodes: [readyNode(0), notReadyNode(1), tainted(2)],
        currentPrimary: 'db-0',
        now: NOW,
      });
      assert.deepEqual(vs.map(reasonOf), ['none', 'NodeNotReady', 'recover']);
    });

    it('never recovers two at once over every pair of lost-member states', () => {
      const states: [NodeLossMember, NodeLossNode | undefined][] = [
        [lost(1), tainted(1)],
        [lost(1), undefined],
        [lost(1), notReadyNode(1)],
        [lost(1, { pod: undefined }), tainted(1)],
        [whole(1), readyNode(1)],
      ];
      for (const [a, na] of states)
        for (const [b0, nb0] of states) {
          // The same states for db-2, on node-2.
          const b = { ...b0, name: 'db-2' };
          const nb = nb0 && { ...nb0, name: 'node-2' };
          const rename = (m: NodeLossMember): NodeLossMember => ({
            ...m,
            ...(m.pod ? { pod: { ...m.pod, nodeName: 'node-2' } } : {}),
            ...(m.claim ? { claim: { ...m.claim, volumeNode: 'node-2' } } : {}),
          });
          const vs = decideNodeLoss({
            members: [whole(0), a, rename(b)],
            nodes: [readyNode(0), ...(na ? [na] : []), ...(nb ? [nb] : [])],
            currentPrimary: 'db-0',
            now: NOW,
          });
          assert.ok(vs.filter((v) => v.kind === 'recover').length <= 1, JSON.stringify(vs));
        }
    });
  });
});
