// A member lost with its node, through the HA loop (lib/controller/mysql-cluster/ha/node-loss.ts) with
// every port faked (support/ha-world.ts): members spread one per node, each on a volume bound to its node
// (local storage). What is asserted is what a user would notice: which claim and pod are deleted, in what
// order and how often, the Degraded reasons and Events that say why nothing is done, that the primary is
// never removed before another member is primary, and that a steady cluster reads no Node at all. The
// decision itself is tested over every combination in test/unit/mysql-node-loss.test.ts; on real nodes
// it is not tested yet.
import assert from 'node:assert/strict';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { ManagedEvent } from '../../lib/controller/kind-controller.js';
import { volumeNode } from '../../lib/controller/mysql-cluster/ha/kube-ports.js';
import type { Controller, World } from './support/ha-world.js';
import { WALL_START, assertOnePrimary, healthyCluster, reasons } from './support/ha-world.js';

const warnings = (events: readonly ManagedEvent[], reason: string): ManagedEvent[] =>
  events.filter((e) => e.type === 'Warning' && e.reason === reason);

async function spreadCluster(): Promise<{ world: World; ctl: Controller }> {
  const { world, ctl } = await healthyCluster();
  world.spreadOnNodes();
  return { world, ctl };
}

describe('the HA loop and a member lost with its node (fake ports)', () => {
  it('a steady cluster reads no Node and no claim, however many passes', async () => {
    const { world, ctl } = await spreadCluster();
    for (let i = 0; i < 5; i++) {
      world.t += 5_000;
      const steady = await ctl.pass();
      assert.deepEqual(steady.problems, []);
    }
    assert.deepEqual(world.kubeReads, []);
    assert.deepEqual(world.deleted, []);
  });

  it('a member whose pod cannot start on a Ready node: its claim and node read once, not again while its pod stays as it is', async () => {
    const { world, ctl } = await spreadCluster();
    const pod = world.pods.get('ha-2');
    if (pod) pod.status = { ...pod.status, conditions: [{ type: 'Ready', status: 'False' }] };
    world.m('ha-2').up = false;
    world.t += 1_000;
    await ctl.pass();
    assert.deepEqual(world.kubeReads.sort(), [
      'claim data-ha-0',
      'claim data-ha-1',
      'claim data-ha-2',
      'node node-0',
      'node node-1',
      'node node-2',
    ]);
    world.kubeReads.length = 0;
    for (let i = 0; i < 3; i++) {
      world.t += 5_000;
      await ctl.pass();
    }
    assert.equal(world.kubeReads.length, 0, `nothing changed: nothing read, not ${world.kubeReads.join(', ')}`);
    // Its node is lost and tainted out-of-service: the taint manager evicts the pod (NoExecute), which
    // changes it (its kubelet never confirms the deletion), so it is read again, and recovered.
    world.powerOff('node-2', { outOfService: true });
    const evicted = world.pods.get('ha-2');
    if (evicted?.metadata) evicted.metadata.deletionTimestamp = new Date(WALL_START + world.t);
    world.t += 1_000;
    await ctl.pass();
    assert.ok(world.kubeReads.includes('node node-2'));
    assert.deepEqual(world.deleted, ['claim data-ha-2', 'pod ha-2']);
  });

  it('a replica whose node carries node.kubernetes.io/out-of-service: its claim, then its pod, deleted once; no other member touched', async () => {
    const { world, ctl } = await spreadCluster();
    world.powerOff('node-2', { outOfService: true });
    world.t += 1_000;
    const acted = await ctl.pass();
    assert.deepEqual(world.deleted, ['claim data-ha-2', 'pod ha-2']);
    const lost = warnings(world.events, 'MemberLostWithNode');
    assert.equal(lost.length, 1);
    assert.match(
      lost[0]?.message ?? '',
      /^member ha-2: node node-2 carries the node\.kubernetes\.io\/out-of-service taint; its claim data-ha-2 .* re-creates it on another node, where it clones ha-0$/,
    );
    assert.ok((acted.requeueAfterMs ?? Infinity) <= 1_000, 'looked at again soon');
    // Only what the node fault asked for: ha-0 and ha-1 keep their pods and claims, nothing restarted.
    assert.deepEqual([...world.pods.keys()].sort(), ['ha-0', 'ha-1']);
    assert.deepEqual([...world.claims.keys()].sort(), ['data-ha-0', 'data-ha-1']);
    assert.deepEqual(world.restarted, []);
    assertOnePrimary(world, 'ha-0');
    // Looked at again while the StatefulSet has not re-created it: nothing more is deleted.
    for (let i = 0; i < 3; i++) {
      world.t += 1_000;
      await ctl.pass();
    }
    assert.deepEqual(world.deleted, ['claim data-ha-2', 'pod ha-2']);
    assert.equal(warnings(world.events, 'MemberLostWithNode').length, 1);
    assertOnePrimary(world, 'ha-0');
  });

  it('a replica whose node is NotReady without the taint: waits, says why in Degraded and in one Event, deletes nothing; the taint then lets it act', async () => {
    const { world, ctl } = await spreadCluster();
    world.powerOff('node-2');
    const waits = [];
    for (let i = 0; i < 4; i++) {
      world.t += 30_000;
      waits.push(await ctl.pass());
    }
    assert.deepEqual(world.deleted, []);
    for (const w of waits) {
      const problem = w.problems.find((p) => p.reason === 'NodeNotReady');
      assert.match(
        problem?.message ?? '',
        /^member ha-2: node node-2 is NotReady \(Ready Unknown\) for \d+ s: the member is re-created on another node once the node carries the node\.kubernetes\.io\/out-of-service taint/,
      );
    }
    // One Event for the wait, however many looks see it (recorded once per key: events.ts).
    const said = warnings(world.events, 'NodeNotReady');
    assert.ok(said.length >= 1);
    assert.deepEqual([...new Set(said.map((e) => e.once))], ['node-loss/ha-2/node-2/NodeNotReady']);
    assertOnePrimary(world, 'ha-0');

    world.markOutOfService('node-2');
    world.t += 1_000;
    await ctl.pass();
    assert.deepEqual(world.deleted, ['claim data-ha-2', 'pod ha-2']);
  });

  it("the primary's node lost: nothing deleted until another member is primary, then the former primary's claim and pod", async () => {
    const { world, ctl } = await spreadCluster();
    world.powerOff('node-0', { outOfService: true });
    world.t += 1_000;
    const first = await ctl.pass();
    assert.ok(reasons(first.problems).includes('PrimaryOnLostNode'), JSON.stringify(first.problems));
    assert.deepEqual(world.deleted, []);
    // Every look until the failover: still nothing deleted.
    while (world.status.currentPrimary === 'ha-0') {
      assert.deepEqual(world.deleted, [], `deleted while ha-0 is the primary at t=${world.t}`);
      world.t += 1_000;
      await ctl.pass();
      assert.ok(world.t < 60_000, 'no failover');
    }
    assertOnePrimary(world, 'ha-1');
    // The failover's pass, or the next, removes the former primary (its term was semi-synchronous, and
    // ha-1 took over from a candidate set that held every acknowledged write).
    world.t += 1_000;
    await ctl.pass();
    assert.deepEqual(world.deleted, ['claim data-ha-0', 'pod ha-0']);
    assert.equal(warnings(world.events, 'MemberLostWithNode').length, 1);
    assert.match(warnings(world.events, 'MemberLostWithNode')[0]?.message ?? '', /where it clones ha-1$/);
    assert.ok(world.pods.has('ha-2') && world.claims.has('data-ha-2'), 'ha-2 untouched');
  });

  it('Nodes the controller may not read (403): reported as NodeLossForbidden, nothing judged or deleted, the loop goes on', async () => {
    const { world, ctl } = await spreadCluster();
    world.nodesForbidden = true;
    world.powerOff('node-2', { outOfService: true });
    world.t += 1_000;
    const seen = await ctl.pass();
    world.t += 1_000;
    const again = await ctl.pass();
    for (const m of [seen, again]) {
      assert.deepEqual(reasons(m.problems), ['NodeLossForbidden']);
      assert.match(m.problems[0]?.message ?? '', /may not read the Nodes.*node loss is not acted on/);
    }
    assert.deepEqual(
      [...new Set(warnings(world.events, 'NodeLossForbidden').map((e) => e.once))],
      ['node-loss/forbidden'],
    );
    assert.deepEqual(world.deleted, []);
    assertOnePrimary(world, 'ha-0');
    // Asked once, not at every look, while the pods stay as they are.
    assert.equal(world.kubeReads.filter((r) => r === 'node node-2').length, 1, world.kubeReads.join(', '));
    // Granted meanwhile: tried again within a minute, and the member is recovered.
    world.nodesForbidden = false;
    world.t += 1_000;
    await ctl.pass();
    assert.deepEqual(world.deleted, []);
    world.t += 60_000;
    await ctl.pass();
    assert.deepEqual(world.deleted, ['claim data-ha-2', 'pod ha-2']);
  });
});

describe("where a claim's volume lives (kube-ports.ts volumeNode)", () => {
  const pv = (...terms: { key: string; operator: string; values?: string[] }[][]): V1PersistentVolume => ({
    spec: {
      nodeAffinity: { required: { nodeSelectorTerms: terms.map((matchExpressions) => ({ matchExpressions })) } },
    },
  });
  const host = (operator: string, ...values: string[]): { key: string; operator: string; values: string[] } => ({
    key: 'kubernetes.io/hostname',
    operator,
    values,
  });

  it('one node when every term pins kubernetes.io/hostname In, to one name in all', () => {
    assert.equal(volumeNode(pv([host('In', 'w-1')])), 'w-1');
    assert.equal(
      volumeNode(pv([host('In', 'w-1')], [host('In', 'w-1'), { key: 'zone', operator: 'In', values: ['a'] }])),
      'w-1',
    );
  });

  it('none when any node may reach it: no affinity, two hostnames, a term without the hostname, or NotIn', () => {
    assert.equal(volumeNode(undefined), undefined);
    assert.equal(volumeNode({ spec: {} }), undefined);
    assert.equal(volumeNode(pv([host('In', 'w-1', 'w-2')])), undefined);
    assert.equal(volumeNode(pv([host('In', 'w-1')], [host('In', 'w-2')])), undefined);
    assert.equal(volumeNode(pv([host('In', 'w-1')], [{ key: 'zone', operator: 'In', values: ['a'] }])), undefined);
    assert.equal(volumeNode(pv([host('NotIn', 'w-1')])), undefined);
  });
});
