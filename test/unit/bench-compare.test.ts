import assert from 'node:assert/strict';
import {
  buildComparison,
  formatComparison,
  formatRatio,
  formatSpread,
  markdownTable,
  median,
  pairRatios,
  spread,
} from '../../bench/compare.js';
import type { RoundResult, Side } from '../../bench/results.js';
import type { PhaseFigures } from '../../bench/snapshot.js';

describe('bench comparison', () => {
  it('takes the median of an odd and an even count, NaN of none', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });

  it('spreads finite values only: median, min, max and how many', () => {
    assert.deepEqual(spread([5, undefined, 1, NaN, 3]), { median: 3, min: 1, max: 5, n: 3 });
    assert.equal(spread([undefined, NaN]), undefined);
  });

  it('divides round by round, leaving out rounds without both figures or with a 0 divisor', () => {
    assert.deepEqual(pairRatios([2, 3, 4, 1], [1, undefined, 0, 4]), [2, 0.25]);
    assert.deepEqual(pairRatios([1, 2], [3]), [0.3333]);
  });

  it('prints a single value, or the median with its range', () => {
    assert.equal(formatSpread(undefined, 1), '—');
    assert.equal(formatSpread({ median: 12.34, min: 12.34, max: 12.34, n: 1 }, 1), '12.3');
    assert.equal(formatSpread({ median: 12.34, min: 11.9, max: 13.04, n: 3 }, 1), '12.3 (11.9–13.0)');
    assert.equal(formatSpread({ median: 7, min: 7.01, max: 6.99, n: 2 }, 0), '7');
    assert.equal(formatRatio(undefined), 'n/a');
    assert.equal(formatRatio({ median: 1.344, min: 1.344, max: 1.344, n: 1 }), '1.34×');
    assert.equal(formatRatio({ median: 1.344, min: 1.2, max: 1.5, n: 2 }), '1.34× (1.20–1.50×)');
  });

  it('lays out a Markdown table, numbers right-aligned', () => {
    assert.equal(
      markdownTable(
        ['what', 'a'],
        [
          ['x', '1'],
          ['longer', '100'],
        ],
      ),
      ['| what   |   a |', '| ------ | --: |', '| x      |   1 |', '| longer | 100 |'].join('\n'),
    );
  });

  const figures = (over: Partial<PhaseFigures>): PhaseFigures => ({
    seconds: 1,
    reconciles: 0,
    reconcilesByResult: {},
    childApplies: {},
    prunes: 0,
    controllerRequests: {},
    controllerRequestsTotal: 0,
    controllerWrites: 0,
    apiServerRequests: {},
    apiServerWrites: 0,
    etcdWrites: {},
    benchOwnRequests: {},
    cpuSeconds: {},
    meanReconcileMs: 0,
    meanRequestMs: {},
    meanQueueWaitMs: 0,
    watchRestarts: {},
    ...over,
  });
  const roundOf = (round: number, side: Side, convergeSeconds: number, restartWrites: number): RoundResult => ({
    round,
    side,
    namespace: `${side}-bench-r${round}`,
    childKinds: ['Deployment', 'Service'],
    converge: {
      ...figures({ controllerRequestsTotal: 100 * round }),
      convergeSeconds,
      quietSeconds: convergeSeconds + 1,
      reconcilesPerResource: 1,
    },
    restart: {
      ...figures({ controllerWrites: restartWrites }),
      startSeconds: 1,
      passSeconds: 2,
      peakRssMiB: 10,
      logs: {},
    },
  });

  it('compares the two sides round by round, with the floor and recon8s converge ÷ floor', () => {
    const rounds = [roundOf(1, 'recon8s', 12, 0), roundOf(1, 'peer', 10, 2000), roundOf(2, 'recon8s', 15, 0)];
    rounds.push(roundOf(2, 'peer', 10, 2000));
    const rows = buildComparison(rounds, {
      before: { objects: 1, seconds: 4, objectsPerSecond: 1, errors: 0 },
      after: { objects: 1, seconds: 6, objectsPerSecond: 1, errors: 0 },
    });
    const row = (label: string): (typeof rows)[number] | undefined => rows.find((r) => r.label.startsWith(label));
    const converge = row('converge wall time');
    assert.deepEqual(converge?.recon8s, { median: 13.5, min: 12, max: 15, n: 2 });
    assert.deepEqual(converge?.peer, { median: 10, min: 10, max: 10, n: 2 });
    assert.deepEqual(converge?.ratio, { median: 1.35, min: 1.2, max: 1.5, n: 2 });
    // 0 writes ÷ 2000: a ratio of 0; nothing measured for the resync of the peer: no peer column.
    assert.deepEqual(row('restart with a cold cache')?.ratio, { median: 0, min: 0, max: 0, n: 2 });
    assert.equal(row('peak RSS'), undefined);
    assert.deepEqual(row('floor')?.recon8s, { median: 5, min: 4, max: 6, n: 2 });
    assert.deepEqual(row('recon8s converge ÷ floor')?.ratio, { median: 2.7, min: 2.4, max: 3, n: 2 });

    const table = formatComparison(rows, 'N = 1000 Apps', true);
    assert.match(table, /^\| N = 1000 Apps +\| +recon8s \| +peer \| +ratio \|$/m);
    assert.match(
      table,
      /\| converge wall time \(create → all children right\), s +\| 13\.5 \(12\.0–15\.0\) \| +10\.0 \| 1\.35× \(1\.20–1\.50×\) \|/,
    );
    assert.match(table, /\| recon8s converge ÷ floor +\| +\| +\| 2\.70× \(2\.40–3\.00×\) \|/);
    assert.doesNotMatch(formatComparison(rows, 'N', false), /peer/);
  });
});
