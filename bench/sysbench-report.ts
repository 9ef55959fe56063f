// What bench/sysbench.ts prints: one row per run, and what each factor of the 3-member ÷ 1-member
// ratio costs, computed from rows of the same run. Pure: the bench measures, this divides.

/** How the cluster was set for a run. Everything but `as shipped` is a bench-only knob, restored after. */
export type Variant =
  /** As recon8s configures it: semi-synchronous AFTER_SYNC, sync_binlog=1, innodb_flush_log_at_trx_commit=1. */
  | 'as shipped'
  /** sync_binlog=0 and innodb_flush_log_at_trx_commit=2 on every member: no fsync per commit group. */
  | 'no fsync'
  /** rpl_semi_sync_source_enabled=OFF on the primary; the replicas still receive and apply everything. */
  | 'semi-sync off'
  /** Semi-sync off and STOP REPLICA on both replicas: the primary alone, the replicas' mysqld idle. */
  | 'replicas stopped'
  /** replica_parallel_workers=1 on both replicas (MySQL's default is 4): a candidate product setting. */
  | 'one applier';

export interface Row {
  readonly members: 1 | 3;
  readonly variant: Variant;
  readonly test: 'oltp_read_write' | 'oltp_write_only';
  readonly tps: number;
  readonly p95Ms: number;
  /** The whole machine's busy share of its cores over the run, % (other people's work included). */
  readonly hostBusyPercent: number;
  /** CPU milliseconds per transaction: the whole machine's busy time. */
  readonly hostCpuMsPerTx: number;
  /** The primary's mysqld. */
  readonly primaryCpuMsPerTx: number;
  /** Both replicas' mysqld together (0 for 1 member). */
  readonly replicasCpuMsPerTx: number;
  /** sysbench itself (the client, TLS included). */
  readonly sysbenchCpuMsPerTx: number;
  /** Average wait of a commit for its acknowledgement (Rpl_semi_sync_source_tx_wait_time ÷ tx_waits), µs. */
  readonly ackWaitUs?: number;
}

/** CPU the transaction costs the cluster and its client: mysqld of every member and sysbench. */
export function oursMsPerTx(r: Row): number {
  return r.primaryCpuMsPerTx + r.replicasCpuMsPerTx + r.sysbenchCpuMsPerTx;
}

/**
 * Cores the rest of the machine kept busy meanwhile (other people's work, the node's own): the host's
 * busy time beyond the cluster's and sysbench's. What it takes is not there for the cluster.
 */
export function othersCores(r: Row): number {
  return round2(Math.max(0, ((r.hostCpuMsPerTx - oursMsPerTx(r)) * r.tps) / 1000));
}

const fixed = (n: number | undefined, digits: number): string => (n === undefined ? '–' : n.toFixed(digits));

export function rowsTable(rows: readonly Row[]): string {
  const base = (test: Row['test']) =>
    rows.find((r) => r.members === 1 && r.variant === 'as shipped' && r.test === test);
  return [
    '| members | setting | test | TPS | p95 | ÷ 1 member | host CPU busy | cores others used | CPU ms/tx: primary + replicas + sysbench (host) | ack wait |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const one = base(r.test);
      return [
        '',
        r.members,
        r.variant,
        r.test,
        r.tps.toFixed(0),
        `${r.p95Ms} ms`,
        one ? (r.tps / one.tps).toFixed(2) : '–',
        `${r.hostBusyPercent} %`,
        othersCores(r).toFixed(2),
        `${fixed(r.primaryCpuMsPerTx, 2)} + ${fixed(r.replicasCpuMsPerTx, 2)} + ${fixed(r.sysbenchCpuMsPerTx, 2)} (${fixed(r.hostCpuMsPerTx, 2)})`,
        r.ackWaitUs === undefined ? '–' : `${r.ackWaitUs.toFixed(0)} µs`,
        '',
      ]
        .join(' | ')
        .trim();
    }),
  ].join('\n');
}

export interface Decomposition {
  readonly test: Row['test'];
  /** 3 members ÷ 1 member, both as shipped. */
  readonly ratio: number;
  /** 3 members with semi-sync off ÷ with it on: what waiting for the acknowledgement costs. */
  readonly semiSyncOffGain?: number;
  /** 3 members, replicas stopped ÷ semi-sync off: what the replicas' receiving and applying costs. */
  readonly replicasStoppedGain?: number;
  /** 3 members, replicas stopped ÷ 1 member: ~1 when nothing else differs. */
  readonly primaryAloneRatio?: number;
  /** 3 members with one applier per replica ÷ as shipped. */
  readonly oneApplierGain?: number;
  /** 1 member without fsync ÷ with it: what the commit's fsync costs a member. */
  readonly oneNoFsyncGain?: number;
  /** 3 members without fsync ÷ with it. */
  readonly threeNoFsyncGain?: number;
  /**
   * The ratio were throughput bound by CPU alone: the CPU a 1-member transaction costs ÷ what a
   * 3-member one costs (mysqld of every member and sysbench), on the same cores.
   */
  readonly cpuBoundRatio: number;
}

export function decompose(rows: readonly Row[]): Decomposition[] {
  const tests = [...new Set(rows.map((r) => r.test))];
  const out: Decomposition[] = [];
  for (const test of tests) {
    const at = (members: 1 | 3, variant: Variant) =>
      rows.find((r) => r.test === test && r.members === members && r.variant === variant);
    const three = at(3, 'as shipped');
    const one = at(1, 'as shipped');
    if (!three || !one) continue;
    const gain = (a?: Row, b?: Row) => (a && b ? round2(a.tps / b.tps) : undefined);
    out.push({
      test,
      ratio: round2(three.tps / one.tps),
      semiSyncOffGain: gain(at(3, 'semi-sync off'), three),
      replicasStoppedGain: gain(at(3, 'replicas stopped'), at(3, 'semi-sync off')),
      primaryAloneRatio: gain(at(3, 'replicas stopped'), one),
      oneApplierGain: gain(at(3, 'one applier'), three),
      oneNoFsyncGain: gain(at(1, 'no fsync'), one),
      threeNoFsyncGain: gain(at(3, 'no fsync'), three),
      cpuBoundRatio: round2(oursMsPerTx(one) / oursMsPerTx(three)),
    });
  }
  return out;
}

export function decompositionTable(ds: readonly Decomposition[]): string {
  const x = (n: number | undefined) => (n === undefined ? '–' : `× ${n.toFixed(2)}`);
  return [
    '| test | 3 ÷ 1 | semi-sync off (3) | replicas stopped (3, semi-sync off) | replicas stopped ÷ 1 member | no fsync (1) | no fsync (3) | one applier (3) | 3 ÷ 1 were CPU all that bounds it |',
    '|---|---|---|---|---|---|---|---|---|',
    ...ds.map((d) =>
      [
        '',
        d.test,
        d.ratio.toFixed(2),
        x(d.semiSyncOffGain),
        x(d.replicasStoppedGain),
        d.primaryAloneRatio === undefined ? '–' : d.primaryAloneRatio.toFixed(2),
        x(d.oneNoFsyncGain),
        x(d.threeNoFsyncGain),
        x(d.oneApplierGain),
        d.cpuBoundRatio.toFixed(2),
        '',
      ]
        .join(' | ')
        .trim(),
    ),
  ].join('\n');
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
