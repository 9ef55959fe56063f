import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Memory of a process from /proc/<pid>/status, in MiB. */
export interface Memory {
  /** Resident set size now. */
  readonly rssMiB: number;
  /** The kernel's high-water mark of the resident set (peak RSS over the process's life). */
  readonly hwmMiB: number;
}

export function readMemory(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU seconds a process has used, from /proc/<pid>/stat (fields 14 and 15). */
export function readCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return (utime + stime) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/** The program name of a process (/proc/<pid>/comm). */
export function processName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** CPU seconds of named processes at one moment; `diffCpu` turns two into the CPU used between them. */
export type CpuSnapshot = Readonly<Record<string, number>>;

export function cpuSnapshot(pids: Readonly<Record<string, number | undefined>>): CpuSnapshot {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    if (pid === undefined) continue;
    const s = readCpuSeconds(pid);
    if (s !== undefined) out[name] = s;
  }
  const self = process.cpuUsage();
  out.bench = (self.user + self.system) / 1e6;
  const machine = machineBusySeconds();
  if (machine !== undefined) out[MACHINE] = machine;
  return out;
}

const MACHINE = '(machine)';

/** CPU seconds the whole machine has been busy (all CPUs; /proc/stat minus idle and iowait). */
export function machineBusySeconds(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, ...fields] = line.trim().split(/\s+/);
    const n = fields.slice(0, 8).map(Number);
    const busy = n.reduce((a, b) => a + b, 0) - (n[3] ?? 0) - (n[4] ?? 0);
    return busy / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds per process between two snapshots, plus `others`: what the rest of the machine used
 * meanwhile (other people's tests, builds) — the noise in the figures.
 */
export function diffCpu(after: CpuSnapshot, before: CpuSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  let ours = 0;
  for (const [name, v] of Object.entries(after)) {
    if (name === MACHINE) continue;
    out[name] = round(v - (before[name] ?? 0), 2);
    ours += out[name] ?? 0;
  }
  const machine = after[MACHINE];
  const machineBefore = before[MACHINE];
  if (machine !== undefined && machineBefore !== undefined)
    out.others = round(Math.max(0, machine - machineBefore - ours), 2);
  return out;
}

/** The 1-minute load average. */
export function loadAverage(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
}

/**
 * Samples the resident set of one process every `intervalMs` and keeps the peak per phase (the
 * kernel's VmHWM is the peak over the whole life; the phases say when it happened).
 */
export class RssSampler {
  private readonly peaks = new Map<string, number>();
  private phase = 'start';
  private timer: NodeJS.Timeout | undefined;
  private last: Memory | undefined;

  constructor(
    private readonly pid: number,
    intervalMs = 200,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  setPhase(phase: string): void {
    this.sample();
    this.phase = phase;
    this.sample();
  }

  sample(): Memory | undefined {
    const m = readMemory(this.pid);
    if (m) {
      this.last = m;
      this.peaks.set(this.phase, Math.max(this.peaks.get(this.phase) ?? 0, m.rssMiB));
    }
    return m;
  }

  /** Peak RSS seen per phase, MiB. */
  peaksByPhase(): Record<string, number> {
    return Object.fromEntries([...this.peaks].map(([k, v]) => [k, round(v, 1)]));
  }

  /** The last reading (VmHWM included); taken again now if the process still runs. */
  latest(): Memory | undefined {
    return this.sample() ?? this.last;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
