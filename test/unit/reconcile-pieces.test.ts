import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { applySetId, groupKind } from '../../lib/reconcile/applyset.js';
import { containsDesired, firstDifference } from '../../lib/reconcile/compare.js';
import { mergeConditions } from '../../lib/reconcile/conditions.js';
import { stampChildren } from '../../lib/reconcile/desired.js';
import { workloadConditions, workloadFigures } from '../../lib/reconcile/status.js';

describe('comparing desired with live', () => {
  const desired = { spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image: 'nginx', resources: { limits: { memory: '1024Mi' } } }] } } } };

  it('accepts a live object that holds every desired field plus defaults and foreign fields', () => {
    const live = { metadata: { annotations: { foreign: 'x' } }, spec: { replicas: 2, progressDeadlineSeconds: 600, template: { spec: { containers: [{ name: 'app', image: 'nginx', terminationMessagePath: '/dev/termination-log', resources: { limits: { memory: '1Gi' } } }] } } } };
    assert.ok(containsDesired(desired, live));
  });

  it('finds a changed field we own and names its path', () => {
    const live = { spec: { replicas: 3, template: { spec: { containers: [{ name: 'app', image: 'nginx' }] } } } };
    assert.equal(firstDifference(desired, live, ''), 'spec.replicas');
  });

  it('finds a list that gained or lost items', () => {
    const live = { spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image: 'nginx', resources: { limits: { memory: '1Gi' } } }, { name: 'sidecar' }] } } } };
    assert.equal(firstDifference(desired, live, ''), 'spec.template.spec.containers');
  });

  it('takes an absent live field for a zero value the API server omitted', () => {
    assert.ok(containsDesired({ probe: { initialDelaySeconds: 0, periodSeconds: 10 }, hostNetwork: false }, { probe: { periodSeconds: 10 } }));
    assert.ok(!containsDesired({ probe: { initialDelaySeconds: 5 } }, { probe: {} }));
  });

  it('compares quantities by value, not by spelling', () => {
    assert.ok(containsDesired({ cpu: '500m', memory: '1Gi', storage: '10Gi' }, { cpu: '0.5', memory: '1073741824', storage: '10240Mi' }));
    assert.ok(!containsDesired({ memory: '1Gi' }, { memory: '1G' }));
    assert.ok(!containsDesired({ image: 'nginx:1.27' }, { image: 'nginx:1.28' }));
  });
});

describe('ApplySet', () => {
  it('derives the parent id as KEP-3659 defines it', () => {
    // sha256("web.shop.App.recon8s.dev"), base64url without padding.
    assert.equal(applySetId({ name: 'web', namespace: 'shop', kind: 'App', group: 'recon8s.dev' }), 'applyset-' + Buffer.from(
      sha256Hex('web.shop.App.recon8s.dev'), 'hex').toString('base64url') + '-v1');
    assert.equal(groupKind('apps/v1', 'Deployment'), 'Deployment.apps');
    assert.equal(groupKind('v1', 'Service'), 'Service');
  });
});

// An independent computation of the digest (coreutils), so the test does not reuse the code under test.
function sha256Hex(s: string): string {
  const r = spawnSync('sha256sum', { input: s, encoding: 'utf8' });
  return r.stdout.split(' ')[0] ?? '';
}

describe('stamping children', () => {
  const owner = { apiVersion: 'recon8s.dev/v1alpha1', kind: 'App', group: 'recon8s.dev', namespace: 'shop', name: 'web', uid: 'u-1' };
  const [child] = stampChildren([{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { a: 'b' } }, spec: {} }], owner);

  it('makes the custom resource the controller owner, blocking owner deletion', () => {
    assert.deepEqual(child?.object.metadata.ownerReferences, [{ apiVersion: 'recon8s.dev/v1alpha1', kind: 'App', name: 'web', uid: 'u-1', controller: true, blockOwnerDeletion: true }]);
  });

  it('adds ApplySet membership and keeps the rendered labels', () => {
    assert.equal(child?.object.metadata.labels?.a, 'b');
    assert.equal(child?.object.metadata.labels?.['applyset.kubernetes.io/part-of'], applySetId(owner));
    assert.equal(child?.object.metadata.namespace, 'shop');
  });

  it('hashes the rendered object so that a spec change shows', () => {
    const [other] = stampChildren([{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { a: 'c' } }, spec: {} }], owner);
    assert.notEqual(child?.hash, other?.hash);
    assert.equal(child?.object.metadata.annotations?.['recon8s.dev/desired-hash'], child?.hash);
  });
});

describe('conditions', () => {
  const t0 = new Date('2026-01-01T00:00:00.123Z');
  const t1 = new Date('2026-01-01T00:05:00Z');

  it('keeps lastTransitionTime while the status does not change', () => {
    const first = mergeConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'Unavailable', message: '0/2' }], 1, t0);
    assert.equal(first[0]?.lastTransitionTime, '2026-01-01T00:00:00Z');
    const same = mergeConditions(first, [{ type: 'Ready', status: 'False', reason: 'Unavailable', message: '1/2' }], 2, t1);
    assert.equal(same[0]?.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.equal(same[0]?.message, '1/2');
    assert.equal(same[0]?.observedGeneration, 2);
    const flipped = mergeConditions(same, [{ type: 'Ready', status: 'True', reason: 'Available', message: '2/2' }], 2, t1);
    assert.equal(flipped[0]?.lastTransitionTime, '2026-01-01T00:05:00Z');
  });

  it('is Ready only when every desired replica is updated and available', () => {
    const live = (status: Record<string, unknown>) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', generation: 3 }, status });
    const rolling = workloadConditions('Deployment', workloadFigures(live({ observedGeneration: 3, replicas: 2, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2 }), 2));
    assert.deepEqual(rolling.map((c) => `${c.type}=${c.status}`), ['Ready=False', 'Progressing=True', 'Degraded=False']);
    const done = workloadConditions('Deployment', workloadFigures(live({ observedGeneration: 3, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }), 2));
    assert.deepEqual(done.map((c) => `${c.type}=${c.status}`), ['Ready=True', 'Progressing=False', 'Degraded=False']);
    const stale = workloadConditions('Deployment', workloadFigures(live({ observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }), 2));
    assert.equal(stale[0]?.status, 'False');
    const stuck = workloadConditions('Deployment', workloadFigures(live({ observedGeneration: 3, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x" has timed out progressing.' }] }), 2));
    assert.deepEqual(stuck[2], { type: 'Degraded', status: 'True', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x" has timed out progressing.' });
  });
});
