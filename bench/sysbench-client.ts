// sysbench 1.0.20 (Debian's package) as bench/sysbench.ts drives it: installed once, run in a private
// directory holding its TLS files and its --config-file, its report parsed, and the CPU it used itself
// sampled while it runs (it shares the node's two cores with the mysqld it measures).
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { readCpuSeconds } from './proc-stats.js';

const progress = (line: string): boolean => process.stderr.write(`[bench] ${line}\n`);

/** sysbench from Debian's package, installed once (as the node installs its own packages). */
export function ensureSysbench(): void {
  if (spawnSync('sysbench', ['--version']).status === 0) return;
  progress('installing sysbench (Debian package)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['-o', 'DPkg::Lock::Timeout=600', 'update'],
    ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '--no-install-recommends', 'sysbench'],
  ]) {
    const r = spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed`);
  }
}

export interface SysbenchResult {
  readonly tps: number;
  readonly transactions: number;
  readonly p95Ms: number;
  readonly errors: number;
  readonly reconnects: number;
  /** Transactions per second of each one-second report. */
  readonly perSecond: number[];
}

/** What sysbench printed: the totals, and the per-second reports of --report-interval=1. */
export function parseSysbench(out: string): SysbenchResult {
  const number = (re: RegExp): number => {
    const m = re.exec(out);
    if (!m?.[1]) throw new Error(`sysbench printed no ${re.source}:\n${out.slice(-2000)}`);
    return Number(m[1]);
  };
  const perSecond = [...out.matchAll(/^\[ *\d+s \] thds: \d+ tps: ([\d.]+)/gm)].map((m) => Number(m[1]));
  return {
    tps: number(/transactions: +\d+ +\(([\d.]+) per sec\.\)/),
    transactions: number(/transactions: +(\d+) +\(/),
    p95Ms: number(/95th percentile: +([\d.]+)/),
    errors: number(/ignored errors: +(\d+)/),
    reconnects: number(/reconnects: +(\d+)/),
    perSecond,
  };
}

export interface SysbenchExit {
  readonly out: string;
  /** Exited 0 (a signal or another code: it crashed, as 1.0.20 does when its server goes away). */
  readonly ok: boolean;
  readonly how: string;
  /** User + system CPU seconds sysbench used, as last sampled (every 200 ms) before it exited. */
  readonly cpuSeconds: number;
}

export function runSysbench(dir: string, args: string[]): Promise<SysbenchExit> {
  return new Promise((resolve, reject) => {
    const child = spawn('sysbench', [`--config-file=${join(dir, 'sysbench.conf')}`, ...args], { cwd: dir });
    let out = '';
    let cpuSeconds = 0;
    const sample = (): void => {
      const s = child.pid === undefined ? undefined : readCpuSeconds(child.pid);
      if (s !== undefined) cpuSeconds = s;
    };
    const timer = setInterval(sample, 200);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    // Its last report is printed just before it exits: the CPU read then is all but the teardown's.
    child.stdout.on('end', sample);
    child.on('error', (e) => {
      clearInterval(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearInterval(timer);
      resolve({ out, ok: code === 0, how: signal ?? `code ${code}`, cpuSeconds });
    });
  });
}

export async function sysbench(dir: string, args: string[]): Promise<SysbenchExit> {
  const r = await runSysbench(dir, args);
  if (!r.ok) throw new Error(`sysbench ${args.join(' ')} exited (${r.how}):\n${r.out.slice(-2000)}`);
  return r;
}
