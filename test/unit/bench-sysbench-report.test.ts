import assert from 'node:assert/strict';
import { parseSysbench } from '../../bench/sysbench-client.js';
import type { Row } from '../../bench/sysbench-report.js';
import { decompose, oursMsPerTx, othersCores } from '../../bench/sysbench-report.js';

const row = (members: 1 | 3, variant: Row['variant'], tps: number, cpu: Partial<Row> = {}): Row => ({
  members,
  variant,
  test: 'oltp_write_only',
  tps,
  p95Ms: 10,
  hostBusyPercent: 95,
  hostCpuMsPerTx: 3,
  primaryCpuMsPerTx: 0.8,
  replicasCpuMsPerTx: members === 3 ? 1.4 : 0,
  sysbenchCpuMsPerTx: 0.2,
  ...cpu,
});

describe('sysbench bench report', () => {
  it('reads the totals and the one-second reports sysbench 1.0.20 prints', () => {
    const out = [
      '[ 1s ] thds: 4 tps: 651.93 qps: 3919.54 (r/w/o: 0.00/2611.69/1307.86) lat (ms,95%): 13.95 err/s: 0.00 reconn/s: 0.00',
      '[ 2s ] thds: 4 tps: 0.00 qps: 0.00 (r/w/o: 0.00/0.00/0.00) lat (ms,95%): 0.00 err/s: 0.00 reconn/s: 0.00',
      'SQL statistics:',
      '    transactions:                        19731  (657.64 per sec.)',
      '    ignored errors:                      6      (0.20 per sec.)',
      '    reconnects:                          0      (0.00 per sec.)',
      'Latency (ms):',
      '         95th percentile:                       13.95',
    ].join('\n');
    assert.deepEqual(parseSysbench(out), {
      tps: 657.64,
      transactions: 19731,
      p95Ms: 13.95,
      errors: 6,
      reconnects: 0,
      perSecond: [651.93, 0],
    });
    assert.throws(() => parseSysbench('FATAL: unable to connect'), /sysbench printed no transactions/);
  });

  it('divides each variant by its baseline of the same test, and leaves out what was not run', () => {
    const [d] = decompose([
      row(3, 'as shipped', 600),
      row(3, 'semi-sync off', 660),
      row(3, 'replicas stopped', 1320),
      row(1, 'as shipped', 1200),
      row(1, 'no fsync', 2400),
    ]);
    assert.deepEqual(d, {
      test: 'oltp_write_only',
      ratio: 0.5,
      semiSyncOffGain: 1.1,
      replicasStoppedGain: 2,
      primaryAloneRatio: 1.1,
      oneApplierGain: undefined,
      oneNoFsyncGain: 2,
      threeNoFsyncGain: undefined,
      // 1 member: 0.8 + 0.2 ms a transaction; 3 members: 0.8 + 1.4 + 0.2.
      cpuBoundRatio: 0.42,
    });
    assert.deepEqual(decompose([row(3, 'as shipped', 600)]), [], 'no ratio without the 1-member run');
  });

  it("counts the machine's busy time beyond the cluster's and sysbench's as others' cores", () => {
    const r = row(1, 'as shipped', 1000, { hostCpuMsPerTx: 1.9 });
    assert.equal(oursMsPerTx(r), 1);
    assert.equal(othersCores(r), 0.9);
    assert.equal(othersCores(row(1, 'as shipped', 1000, { hostCpuMsPerTx: 0.5 })), 0, 'never below 0');
  });
});
