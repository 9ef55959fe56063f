// Which stops of mysqld could have acknowledged a commit no replica had (lib/agent/stops.ts): every way a
// run can end, as its record and the next start show it.
import assert from 'node:assert/strict';
import type { NextStart, RunRecord, StopsRecord } from '../../lib/agent/stops.js';
import { UNSAFE_STOPS_KEPT, afterStart, sameRun, stopOutcome, unsafeStop } from '../../lib/agent/stops.js';

const HELD = 'aaaaaaaa-0000-0000-0000-000000000001:1-10';
const MORE = 'aaaaaaaa-0000-0000-0000-000000000001:1-11';
const AT = '2026-11-28T04:00:00.000Z';
const run = (stop?: RunRecord['stop']): RunRecord => ({ startedAt: 1_000_000, ...(stop ? { stop } : {}) });
const next = (executed: string, crashed: boolean): NextStart => ({ executed, crashed });

describe('agent: the stops of mysqld', () => {
  it('judges every way a run ends: fenced with nothing after, or a crash, is safe; anything else is not', () => {
    const cases: { previous: RunRecord | undefined; crashed: boolean; executed: string; unsafe: RegExp | undefined }[] =
      [];
    for (const crashed of [false, true])
      for (const executed of [HELD, MORE]) {
        // No record of the run: the first start with the record judges nothing.
        cases.push({ previous: undefined, crashed, executed, unsafe: undefined });
        // Fenced by the hook: safe only while nothing was committed after (a crash changes nothing).
        cases.push({
          previous: run({ state: 'fenced', at: AT, executed: HELD }),
          crashed,
          executed,
          unsafe:
            executed === HELD ? undefined : /committed after its agent fenced it for the stop at 2026-11-28T04:00:00/,
        });
        // The pod was stopped and no hook came (a crash may follow: the kubelet's SIGKILL cut the shutdown short).
        cases.push({
          previous: run({ state: 'signalled', at: AT }),
          crashed,
          executed,
          unsafe:
            /its pod was stopped at 2026-11-28T04:00:00.000Z and no preStop hook asked its agent to fence it first/,
        });
        // The hook began and its fencing did not end: the kubelet's SIGTERM came anyway.
        cases.push({
          previous: run({ state: 'requested', at: AT }),
          crashed,
          executed,
          unsafe: /stopped at 2026-11-28T04:00:00.000Z before its agent's fencing had ended/,
        });
        // No stop asked through the hook: a crash releases nothing, a clean shutdown may have.
        cases.push({
          previous: run(),
          crashed,
          executed,
          unsafe: crashed ? undefined : /shut down cleanly without its agent fencing it first/,
        });
      }
    for (const c of cases) {
      const outcome = stopOutcome(c.previous, next(c.executed, c.crashed));
      if (c.previous === undefined) assert.deepEqual(outcome, { kind: 'unknown' });
      else if (c.unsafe === undefined)
        assert.equal(outcome.kind, c.previous.stop ? 'fenced' : 'crashed', JSON.stringify(c));
      const why = unsafeStop(c.previous, next(c.executed, c.crashed));
      const label = JSON.stringify(c);
      if (c.unsafe === undefined) assert.equal(why, undefined, label);
      else assert.match(why ?? '', c.unsafe, label);
    }
  });

  it("counts only the member's own commits after its fencing: a replica's applier applying the primary's is no commit of it", () => {
    const own = 'aaaaaaaa-0000-0000-0000-000000000001';
    const other = 'bbbbbbbb-0000-0000-0000-000000000002';
    const fencedAt = run({ state: 'fenced', at: AT, executed: `${own}:1-5,${other}:1-10`, serverUuid: own });
    assert.deepEqual(stopOutcome(fencedAt, next(`${own}:1-5,${other}:1-12`, false)), { kind: 'fenced', at: AT });
    const outcome = stopOutcome(fencedAt, next(`${own}:1-6,${other}:1-10`, false));
    assert.equal(outcome.kind, 'unsafe');
  });

  it('records the run that started, and an unsafe stop with what mysqld held at that start, keeping the last few', () => {
    let record: StopsRecord = { unsafe: [] };
    const first = afterStart(record, 1_000_000, next(HELD, false), AT);
    assert.deepEqual(first, { record: { run: { startedAt: 1_000_000 }, unsafe: [] }, outcome: { kind: 'unknown' } });
    record = first.record;
    for (let i = 1; i <= UNSAFE_STOPS_KEPT + 2; i++) {
      const after = afterStart(record, 1_000_000 + i * 60_000, next(`${HELD.slice(0, -2)}${10 + i}`, false), AT);
      assert.ok(after.unsafe, `stop ${i}`);
      record = after.record;
    }
    assert.equal(record.unsafe.length, UNSAFE_STOPS_KEPT);
    assert.equal(record.unsafe.at(-1)?.executed, `${HELD.slice(0, -2)}${10 + UNSAFE_STOPS_KEPT + 2}`);
    assert.equal(record.unsafe[0]?.executed, `${HELD.slice(0, -2)}13`, 'the oldest dropped first');
  });

  it('takes two reads of one start as one run (Uptime is whole seconds), a minute apart as two', () => {
    assert.ok(sameRun(1_000_000, 1_001_000));
    assert.ok(sameRun(1_000_000, 998_000));
    assert.ok(!sameRun(1_000_000, 1_060_000));
  });
});
