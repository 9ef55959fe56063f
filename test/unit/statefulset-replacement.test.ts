import assert from 'node:assert/strict';
import type { KubernetesObject as LiveObject, V1StatefulSet } from '@kubernetes/client-node';
import { describe, it } from 'mocha';
import type { KubernetesObject } from '../../constructs/index.js';
import {
  describeChange,
  immutableChanges,
  withLiveImmutableFields,
} from '../../lib/controller/mysql-cluster/statefulset-replacement.js';
import { synthMySQL } from './support/mysql-synth.js';

/** The StatefulSet recon8s renders, and a live one: the same, as the API server holds it, changed by `edit`. */
function pair(edit: (live: V1StatefulSet) => void = () => undefined): {
  desired: KubernetesObject;
  live: LiveObject;
} {
  const rendered = synthMySQL({ storage: { size: '2Gi', storageClassName: 'fast' } }).statefulSet;
  const live = structuredClone(rendered);
  live.metadata = { ...live.metadata, uid: 'uid-1', namespace: 'db' };
  edit(live);
  return { desired: rendered as unknown as KubernetesObject, live };
}

function claimSize(sts: V1StatefulSet, size: string): void {
  const template = sts.spec?.volumeClaimTemplates?.[0];
  assert.ok(template?.spec?.resources?.requests);
  template.spec.resources.requests.storage = size;
}

describe('the StatefulSet fields recon8s re-creates it for', () => {
  it('finds none when the live StatefulSet holds what is rendered', () => {
    const { desired, live } = pair();
    assert.deepEqual(immutableChanges(desired, live), []);
  });

  it("finds the pod management policy of a StatefulSet an older recon8s made (OrderedReady, or the API server's default)", () => {
    const { desired, live } = pair((sts) => {
      if (sts.spec) sts.spec.podManagementPolicy = 'OrderedReady';
    });
    const changes = immutableChanges(desired, live);
    assert.deepEqual(changes, [{ field: 'podManagementPolicy', from: 'OrderedReady', to: 'Parallel' }]);
    assert.equal(describeChange(changes[0] as (typeof changes)[0]), 'podManagementPolicy OrderedReady → Parallel');
    const defaulted = pair((sts) => {
      if (sts.spec) delete sts.spec.podManagementPolicy;
    });
    assert.deepEqual(immutableChanges(defaulted.desired, defaulted.live), changes);
  });

  it('finds claim templates whose size grew, and compares sizes by value', () => {
    const { desired, live } = pair((sts) => claimSize(sts, '1Gi'));
    const changes = immutableChanges(desired, live);
    assert.equal(changes.length, 1);
    assert.equal(changes[0]?.field, 'volumeClaimTemplates');
    assert.equal(describeChange(changes[0] as (typeof changes)[0]), 'data volumes grown (data 2Gi)');
    const same = pair((sts) => claimSize(sts, '2048Mi'));
    assert.deepEqual(immutableChanges(same.desired, same.live), []);
  });

  it('finds both at once, each once', () => {
    const { desired, live } = pair((sts) => {
      claimSize(sts, '1Gi');
      if (sts.spec) sts.spec.podManagementPolicy = 'OrderedReady';
    });
    assert.deepEqual(
      immutableChanges(desired, live).map((c) => c.field),
      ['volumeClaimTemplates', 'podManagementPolicy'],
    );
  });

  it('re-creates for nothing else: a claim template changed otherwise, or one that shrank', () => {
    const otherClass = pair((sts) => {
      const template = sts.spec?.volumeClaimTemplates?.[0];
      if (template?.spec) template.spec.storageClassName = 'another';
      claimSize(sts, '1Gi');
    });
    assert.deepEqual(immutableChanges(otherClass.desired, otherClass.live), []);
    const shrunk = pair((sts) => claimSize(sts, '5Gi'));
    assert.deepEqual(immutableChanges(shrunk.desired, shrunk.live), []);
    const renamed = pair((sts) => {
      const template = sts.spec?.volumeClaimTemplates?.[0];
      if (template?.metadata) template.metadata.name = 'other';
    });
    assert.deepEqual(immutableChanges(renamed.desired, renamed.live), []);
  });

  it('while it cannot be re-created, applies everything else with the live immutable fields', () => {
    const { desired, live } = pair((sts) => {
      claimSize(sts, '1Gi');
      if (sts.spec) delete sts.spec.podManagementPolicy;
    });
    const applied = withLiveImmutableFields(desired, live) as unknown as V1StatefulSet;
    assert.equal(applied.spec?.podManagementPolicy, 'OrderedReady');
    assert.equal(applied.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '1Gi');
    assert.deepEqual(applied.spec?.template, (desired as unknown as V1StatefulSet).spec?.template);
    assert.deepEqual(immutableChanges(applied as unknown as KubernetesObject, live), []);
  });
});
