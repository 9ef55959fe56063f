// The registry of kinds is all a kind needs: its definition (constructs) names every child type it
// renders, its controller module is found by kind, and the operator is granted exactly those types.
import assert from 'node:assert/strict';
import { App as Cdk8sApp, Testing } from 'cdk8s';
import { OperatorChart } from '../../constructs/index.js';
import { KINDS, render } from '../../constructs/index.js';
import type { Recon8sResource } from '../../constructs/index.js';
import { CHILD_TYPES, KIND_CONTROLLERS, allChildTypes, kindController } from '../../lib/controller/kinds.js';

/** A resource of each kind with every optional companion switched on, so that every child kind renders. */
const EVERYTHING: Readonly<Record<string, Recon8sResource>> = {
  App: {
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      image: 'nginx:1.27',
      ports: [{ name: 'http', port: 8080 }],
      autoscaling: { minReplicas: 2, maxReplicas: 5 },
    },
  } as Recon8sResource,
  MySQLCluster: {
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'MySQLCluster',
    metadata: { name: 'db', namespace: 'shop' },
    spec: {
      version: '8.4',
      replicas: 3,
      storage: { size: '1Gi' },
      backup: { schedule: '@daily', persistentVolumeClaimName: 'backups' },
    },
  } as Recon8sResource,
};

describe('the registry of kinds', () => {
  it('has one controller module for every kind the constructs define, and no other', () => {
    assert.deepEqual(KIND_CONTROLLERS.map((k) => k.definition.kind).sort(), KINDS.map((k) => k.kind).sort());
    for (const kind of KINDS) assert.equal(kindController(kind.kind)?.definition, kind);
    assert.equal(kindController('Deployment'), undefined);
  });

  for (const kind of KINDS) {
    it(`${kind.kind}: declares exactly the child types it renders (everything switched on)`, () => {
      const example = EVERYTHING[kind.kind];
      assert.ok(example, `add an example of ${kind.kind} to this test`);
      const rendered = new Set(render(example).map((o) => `${o.apiVersion}/${o.kind}`));
      const declared = new Set(kind.childTypes.map((t) => `${t.apiVersion}/${t.kind}`));
      assert.deepEqual([...rendered].sort(), [...declared].sort());
      assert.deepEqual(CHILD_TYPES[kind.kind], kind.childTypes);
    });
  }

  it('lets the operator prune (delete) exactly the union of the child types, the MySQL pods it rolls, and the claims of members lost with their node', () => {
    const chart = Testing.synth(new OperatorChart(new Cdk8sApp(), 'operator'));
    const role = chart.find(
      (o: { kind?: string; metadata?: { name?: string } }) =>
        o.kind === 'ClusterRole' && o.metadata?.name === 'recon8s',
    ) as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] };
    const granted = role.rules
      .filter((r) => r.verbs.includes('delete'))
      .flatMap((r) => r.resources.map((p) => `${r.apiGroups[0] ?? ''}/${p}`))
      .sort();
    const children = allChildTypes().map(
      (t) => `${t.apiVersion.includes('/') ? t.apiVersion.split('/')[0] : ''}/${t.plural}`,
    );
    // Pods are not children: the controller deletes a MySQL member's pod to roll it (OnDelete). Claims
    // neither: it deletes a member's data claim only when the member is lost with its node (node-loss.ts).
    assert.deepEqual(granted, [...children, '/persistentvolumeclaims', '/pods'].sort());
  });
});
