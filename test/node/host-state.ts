import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { NODE_IP, NODE_RUN_DIR } from './index.js';

const run = (command: string, args: readonly string[]): string => {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
};

/** Everything a node leaves on the host while it runs; empty when the host is as it was. */
export function nodeLeftovers(): string[] {
  const left: string[] = [];
  if (existsSync(NODE_RUN_DIR)) left.push(`directory ${NODE_RUN_DIR}`);
  if (run('ip', ['-o', 'addr', 'show', 'dev', 'lo']).includes(` ${NODE_IP}/32`))
    left.push(`address ${NODE_IP}/32 on lo`);
  if (run('ip', ['-o', 'link', 'show']).includes('recon8s0')) left.push('bridge recon8s0');
  const chains = run('iptables-save', [])
    .split('\n')
    .filter((l) => /KUBE-|CNI-/.test(l));
  if (chains.length > 0) left.push(`${chains.length} iptables lines with KUBE-/CNI- chains`);
  // kube-router's policy controller (kube-router.ts), when a test ran it.
  const sets = run('ipset', ['list', '-n'])
    .split('\n')
    .filter((n) => /^(KUBE-|kube-router)/.test(n));
  if (sets.length > 0) left.push(`ipsets ${sets.join(', ')}`);
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .filter((l) => l.includes(`${NODE_RUN_DIR}/`));
  if (mounts.length > 0) left.push(`${mounts.length} mounts under ${NODE_RUN_DIR}`);
  const processes = run('pgrep', ['-af', `${NODE_RUN_DIR}/`])
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.includes('pgrep'));
  if (processes.length > 0) left.push(`processes: ${processes.join('; ')}`);
  const cgroups = readdirSync('/sys/fs/cgroup').filter((h) => existsSync(`/sys/fs/cgroup/${h}/recon8s-node`));
  if (cgroups.length > 0) left.push(`cgroups recon8s-node in ${cgroups.join(', ')}`);
  return left;
}

/** The sysctls the node changes, as they are now. */
export function nodeSysctls(): Record<string, string> {
  const names = [
    'vm.overcommit_memory',
    'vm.panic_on_oom',
    'kernel.panic',
    'kernel.panic_on_oops',
    'net.ipv4.ip_forward',
    'net.bridge.bridge-nf-call-iptables',
  ];
  return Object.fromEntries(names.map((n) => [n, run('sysctl', ['-n', n]).trim()]));
}

/** The sysctls as the running node recorded them before it changed any. */
export function sysctlsBeforeNode(): Record<string, string> {
  const text = readFileSync(`${NODE_RUN_DIR}/sysctl.orig`, 'utf8');
  return Object.fromEntries(
    text
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}
