// kube-router's NetworkPolicy controller on the real node, for the tests of what recon8s's policies
// admit: the node's bridge CNI enforces no policy, so a test that must see a refusal starts this beside
// it (only the firewall: no router, no service proxy, no CNI of its own) and stops it when done. Its
// rules (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-* chains, KUBE-* ipsets) are removed on stop by its own
// --cleanup-config, and the node's teardown removes any KUBE-* chain left (and kills the process: its
// command line names the node's run directory, through the kubeconfig).
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { NodeCluster } from './index.js';

const BUILD_SCRIPT = fileURLToPath(new URL('./build-kube-router.sh', import.meta.url));
/** The node's Service range (node.sh SVC_CIDR): kube-router's policies let Service traffic be judged after DNAT. */
const SERVICE_CIDR = '10.0.0.0/24';
/** Where its output goes, for whoever wonders why a connection was refused. */
export const KUBE_ROUTER_LOG = '/tmp/recon8s-kube-router.log';

/** The path of the kube-router binary, building it first when the cache lacks it (minutes, once). */
export function kubeRouterBinary(): string {
  const r = spawnSync('bash', [BUILD_SCRIPT], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 30 * 60_000,
  });
  const path = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || path === '')
    throw new Error(
      `kube-router could not be built (${BUILD_SCRIPT} exited ${r.status ?? r.signal}); see its output above`,
    );
  return path;
}

export interface PolicyController {
  /** Stops it and removes every rule and ipset it made. */
  stop(): Promise<void>;
}

/** Starts kube-router's policy controller against the node; resolves once its firewall is hooked in. */
export async function startPolicyController(node: NodeCluster): Promise<PolicyController> {
  const binary = kubeRouterBinary();
  const { stdout } = await node.kubectl(['get', 'nodes', '-o', 'jsonpath={.items[0].metadata.name}']);
  const nodeName = stdout.trim();
  if (!nodeName) throw new Error('the node has no Node object');
  const log = createWriteStream(KUBE_ROUTER_LOG, { flags: 'w' });
  const child: ChildProcess = spawn(
    binary,
    [
      `--kubeconfig=${node.kubeconfigPath}`,
      `--hostname-override=${nodeName}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      '--enable-cni=false',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--iptables-sync-period=10s',
      '--health-port=0',
      '--metrics-port=0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`kube-router exited ${child.exitCode}; see ${KUBE_ROUTER_LOG}`);
    // Its own top-level chain, hooked into FORWARD: it judges pod traffic from now on.
    const forward = spawnSync('iptables', ['-w', '-S', 'FORWARD'], { encoding: 'utf8' });
    if (forward.status === 0 && forward.stdout.includes('KUBE-ROUTER-FORWARD')) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`kube-router did not program its firewall within 60 s; see ${KUBE_ROUTER_LOG}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return {
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }
      // Its policy controller's cleanup, then the rest of --cleanup-config, which on this node panics in
      // the service proxy's (no IPVS): judged by what is left, not by its exit code.
      const cleanup = spawnSync(binary, ['--cleanup-config', `--kubeconfig=${node.kubeconfigPath}`], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      log.end();
      // On this node its cleanup reports its policy rules gone and leaves them (seen in CI's e2e lane):
      // what is still there is removed here, rule by rule, beside kube-proxy's live rules.
      removeLeftovers();
      const left = leftovers();
      if (left.length > 0)
        throw new Error(
          `kube-router --cleanup-config (exit ${cleanup.status ?? cleanup.signal}) left ${left.join(', ')}: ${cleanup.stderr}`,
        );
    },
  };
}

const OURS = /KUBE-(ROUTER|POD-FW|NWPLCY)/;

/**
 * Deletes kube-router's rules in other chains that jump to its chains, then its chains, then its ipsets.
 * `iptables -S` prints each rule shell-quoted (comments hold spaces), so bash reads it back.
 */
function removeLeftovers(): void {
  for (const table of ['filter', 'nat', 'mangle', 'raw']) {
    const rules = spawnSync('iptables', ['-w', '-t', table, '-S'], { encoding: 'utf8' }).stdout.split('\n');
    for (const rule of rules)
      if (rule.startsWith('-A ') && OURS.test(rule) && !OURS.test(rule.split(' ')[1] ?? ''))
        spawnSync('bash', ['-c', `iptables -w -t ${table} -D ${rule.slice(3)}`]);
    const chains = rules.filter((r) => r.startsWith('-N ') && OURS.test(r)).map((r) => r.slice(3).trim());
    for (const chain of chains) spawnSync('iptables', ['-w', '-t', table, '-F', chain]);
    for (const chain of chains) spawnSync('iptables', ['-w', '-t', table, '-X', chain]);
  }
  for (const set of spawnSync('ipset', ['list', '-n'], { encoding: 'utf8' }).stdout.split('\n'))
    if (/^(KUBE-|kube-router)/.test(set)) spawnSync('ipset', ['destroy', set]);
}

/** kube-router's iptables chains and ipsets still on the host. */
export function leftovers(): string[] {
  const rules = spawnSync('iptables-save', [], { encoding: 'utf8' }).stdout;
  const chains = [...new Set(rules.match(/KUBE-(ROUTER|POD-FW|NWPLCY)[-A-Z0-9]*/g) ?? [])];
  const sets = spawnSync('ipset', ['list', '-n'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((n) => /^(KUBE-|kube-router)/.test(n));
  return [...chains.map((c) => `chain ${c}`), ...sets.map((n) => `ipset ${n}`)];
}
