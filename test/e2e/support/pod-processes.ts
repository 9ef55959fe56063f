// A pod's processes as this machine sees them (the real node runs here): found by the pod's UID in
// their cgroup, for what the kubelet starts in a pod (probes, sidecars) and what it costs.
import { readFileSync, readdirSync } from 'node:fs';

export interface PodProcess {
  readonly pid: number;
  readonly args: string;
  /** Resident memory, KiB. */
  readonly rssKiB: number;
  /** User + system CPU since it started, seconds. */
  readonly cpuSeconds: number;
  /** How long it has run, seconds. */
  readonly ageSeconds: number;
  /**
   * Ended, not reaped: what `kubectl exec` ran in the mysql container (mysqld is its PID 1 and reaps
   * nothing). Its command line is empty.
   */
  readonly zombie: boolean;
  /** The state letter of /proc/PID/stat (R, S, D, Z, ...). */
  readonly state: string;
}

const TICKS = 100; // USER_HZ

export function podProcesses(podUid: string): PodProcess[] {
  const wanted = [podUid, podUid.replace(/-/g, '_')];
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  const out: PodProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8');
      if (!wanted.some((w) => cgroup.includes(w))) continue;
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({
        pid: Number(entry),
        args,
        rssKiB: Number(/^VmRSS:\s*(\d+)/m.exec(status)?.[1] ?? 0),
        cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS,
        ageSeconds: uptime - Number(fields[19]) / TICKS,
        zombie: fields[0] === 'Z',
        state: fields[0] ?? '?',
      });
    } catch {
      // The process ended meanwhile.
    }
  }
  return out;
}
