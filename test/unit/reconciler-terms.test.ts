// Terms of leadership (Reconciler.startTerm / endTerm): a leader deposed and elected again at once
// starts its new term while the old one's reconciles are still winding down; the old term's end must
// close only its own managers, never leave the new term without any (then no MySQLCluster would be
// managed, and nothing would fail over, for the whole term).
import assert from 'node:assert/strict';
import type { EventRecorder } from '../../lib/controller/events.js';
import { Reconciler } from '../../lib/controller/reconciler.js';
import type { KubeClient } from '../../lib/kube/index.js';
import { silentLogger } from '../../lib/observability/logger.js';

function reconciler(): Reconciler {
  return new Reconciler({
    // Nothing here is reconciled: the terms alone are exercised.
    client: {} as KubeClient,
    owners: new Map(),
    children: new Map(),
    childNames: new Map(),
    events: {} as EventRecorder,
    logger: silentLogger,
  });
}

describe('Reconciler terms of leadership', () => {
  it("keeps the new term's managers when the old term ends after it started", async () => {
    const r = reconciler();
    const old = r.startTerm();
    const next = r.startTerm();
    assert.notEqual(next, old);
    assert.ok(next.get('MySQLCluster'), 'a MySQLCluster manager in the new term');
    const manager = next.get('MySQLCluster');
    await r.endTerm(old);
    assert.equal(r.term, next);
    assert.ok(manager);
    assert.equal(r.term.get('MySQLCluster'), manager, "the new term's MySQLCluster manager is still the one that acts");
  });

  it('ends the current term: no manager is left to act for it', async () => {
    const r = reconciler();
    const term = r.startTerm();
    await r.endTerm(term);
    assert.notEqual(r.term, term);
    assert.equal(r.term.size, 0);
  });
});
