// The side-by-side table: each figure as the median over rounds (min–max), and recon8s ÷ peer per round.
import type { FloorPass } from './floor.js';
import type { ComparisonRow, RoundResult, Side, Spread } from './results.js';

/** The median (the mean of the two middle values for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

/** Median and min–max of the finite values; undefined when there are none. */
export function spread(values: readonly (number | undefined)[]): Spread | undefined {
  const finite = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (finite.length === 0) return undefined;
  return { median: median(finite), min: Math.min(...finite), max: Math.max(...finite), n: finite.length };
}

/** a[i] ÷ b[i] for each index where both are finite and b[i] is not 0. */
export function pairRatios(a: readonly (number | undefined)[], b: readonly (number | undefined)[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x !== undefined && y !== undefined && Number.isFinite(x) && Number.isFinite(y) && y !== 0)
      out.push(Math.round((x / y) * 1e4) / 1e4);
  }
  return out;
}

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

/** `12.3` for one round (or no spread), `12.3 (11.9–13.0)` for several; `—` when not measured. */
export function formatSpread(s: Spread | undefined, digits: number): string {
  if (s === undefined) return '—';
  const m = fixed(s.median, digits);
  const lo = fixed(s.min, digits);
  const hi = fixed(s.max, digits);
  return s.n === 1 || lo === hi ? m : `${m} (${lo}–${hi})`;
}

/** `1.34×`, or `1.34× (1.20–1.51×)` over several rounds; `n/a` when there is no ratio (not measured, or ÷ 0). */
export function formatRatio(s: Spread | undefined): string {
  if (s === undefined) return 'n/a';
  const m = fixed(s.median, 2);
  const lo = fixed(s.min, 2);
  const hi = fixed(s.max, 2);
  return s.n === 1 || lo === hi ? `${m}×` : `${m}× (${lo}–${hi}×)`;
}

function sum(counts: Readonly<Record<string, number>>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** One figure of a round, and how it is labelled and printed. */
interface Metric {
  readonly label: string;
  readonly digits: number;
  readonly get: (r: RoundResult) => number | undefined;
}

export const METRICS: readonly Metric[] = [
  {
    label: 'converge wall time (create → all children right), s',
    digits: 1,
    get: (r) => r.converge?.convergeSeconds,
  },
  { label: 'converge: first create → work queue idle, s', digits: 1, get: (r) => r.converge?.quietSeconds },
  {
    label: 'API requests during convergence (controller rest_client)',
    digits: 0,
    get: (r) => r.converge?.controllerRequestsTotal,
  },
  {
    label: 'API writes during convergence (controller rest_client)',
    digits: 0,
    get: (r) => r.converge?.controllerWrites,
  },
  {
    label: 'API writes during convergence (apiserver side, bench subtracted)',
    digits: 0,
    get: (r) => r.converge?.apiServerWrites,
  },
  {
    label: 'writes that reached etcd during convergence',
    digits: 0,
    get: (r) => (r.converge ? sum(r.converge.etcdWrites) : undefined),
  },
  { label: 'reconciles during convergence', digits: 0, get: (r) => r.converge?.reconciles },
  { label: 'controller CPU s during convergence', digits: 1, get: (r) => r.converge?.cpuSeconds.controller },
  {
    label: 'kube-apiserver CPU s during convergence',
    digits: 1,
    get: (r) => r.converge?.cpuSeconds['kube-apiserver'],
  },
  { label: 'etcd CPU s during convergence', digits: 1, get: (r) => r.converge?.cpuSeconds.etcd },
  {
    label: 'spec.replicas change → Deployment seen, p50 ms',
    digits: 0,
    get: (r) => r.latency?.specToChildMs.p50,
  },
  {
    label: 'spec.replicas change → Deployment seen, p99 ms',
    digits: 0,
    get: (r) => r.latency?.specToChildMs.p99,
  },
  { label: 'peak RSS (VmHWM), MiB', digits: 0, get: (r) => r.memory?.controllerPeakMiB },
  { label: 'steady-state resync: writes', digits: 0, get: (r) => r.resync?.controllerWrites },
  {
    label: 'restart with a cold cache, nothing changed: writes',
    digits: 0,
    get: (r) => r.restart?.controllerWrites,
  },
  {
    label: 'restart: writes that reached etcd',
    digits: 0,
    get: (r) => (r.restart ? sum(r.restart.etcdWrites) : undefined),
  },
  { label: 'restart: start → queue idle, s', digits: 1, get: (r) => r.restart?.passSeconds },
];

/** The figure per round number (index 0 = round 1) for one side; undefined where that round did not measure it. */
function perRound(rounds: readonly RoundResult[], side: Side, get: Metric['get']): (number | undefined)[] {
  const count = Math.max(0, ...rounds.map((r) => r.round));
  const out: (number | undefined)[] = Array.from({ length: count }, () => undefined);
  for (const r of rounds) if (r.side === side) out[r.round - 1] = get(r);
  return out;
}

/** The mean of the floor's create passes that had no errors, seconds. */
export function floorSamples(floor: { before?: FloorPass; after?: FloorPass } | undefined): number[] {
  return [floor?.before, floor?.after]
    .filter((p): p is FloorPass => p !== undefined && p.errors === 0)
    .map((p) => p.seconds);
}

/**
 * The rows of the table: every metric for both sides (median and min–max over rounds) with recon8s ÷ peer
 * per round; then the server-side-apply floor and recon8s's converge ÷ floor.
 */
export function buildComparison(
  rounds: readonly RoundResult[],
  floor?: { before?: FloorPass; after?: FloorPass },
): ComparisonRow[] {
  const rows: ComparisonRow[] = [];
  for (const m of METRICS) {
    const ours = perRound(rounds, 'recon8s', m.get);
    const theirs = perRound(rounds, 'peer', m.get);
    const recon8s = spread(ours);
    const peer = spread(theirs);
    const ratio = spread(pairRatios(ours, theirs));
    if (recon8s === undefined && peer === undefined) continue;
    rows.push({
      label: m.label,
      digits: m.digits,
      ...(recon8s ? { recon8s } : {}),
      ...(peer ? { peer } : {}),
      ...(ratio ? { ratio } : {}),
    });
  }
  const samples = floorSamples(floor);
  const floorSpread = spread(samples);
  if (floorSpread) {
    rows.push({ label: 'floor: render + server-side apply, no controller, s', digits: 1, recon8s: floorSpread });
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    const ratio = spread(perRound(rounds, 'recon8s', (r) => r.converge?.convergeSeconds).map((c) => (c ?? NaN) / mean));
    if (ratio) rows.push({ label: 'recon8s converge ÷ floor', digits: 2, ratio });
  }
  return rows;
}

/** A Markdown table (it reads in a terminal too): first column left-aligned, the others right-aligned. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(3, h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${widths.map((w, i) => (i === 0 ? (cells[i] ?? '').padEnd(w) : (cells[i] ?? '').padStart(w))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** The comparison as a Markdown table; without a peer, the recon8s column alone. */
export function formatComparison(rows: readonly ComparisonRow[], heading: string, withPeer: boolean): string {
  const body = rows.map((r): string[] => {
    // A row of ratios only (recon8s converge ÷ floor): the figure goes in the last column.
    const ratioOnly = r.recon8s === undefined && r.peer === undefined;
    if (!withPeer) return [r.label, ratioOnly ? formatRatio(r.ratio) : formatSpread(r.recon8s, r.digits)];
    if (ratioOnly) return [r.label, '', '', formatRatio(r.ratio)];
    return [
      r.label,
      formatSpread(r.recon8s, r.digits),
      formatSpread(r.peer, r.digits),
      r.peer === undefined || r.recon8s === undefined ? '' : formatRatio(r.ratio),
    ];
  });
  return markdownTable(withPeer ? [heading, 'recon8s', 'peer', 'ratio'] : [heading, 'recon8s'], body);
}
