import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

/** The benchmark's settings (`npm run bench -- --help`). */
export interface BenchArgs {
  readonly apps: number;
  readonly mysql: number;
  readonly workers: number;
  /** Concurrent CR creates (and floor is separate: it uses `workers`). */
  readonly createConcurrency: number;
  /** The controller's resync period, seconds: the steady-state pass of item 3. */
  readonly resyncSeconds: number;
  /** Apps whose spec.replicas is changed to measure change-to-child latency. */
  readonly latencySample: number;
  /** Spec changes per second during the latency phase. */
  readonly latencyRate: number;
  /** Whole-run bound, minutes. */
  readonly timeoutMinutes: number;
  readonly controllerLogLevel: 'debug' | 'info' | 'warn' | 'error';
  /** After the resync pass, restart the controller (cold cache) and count the writes of its first full pass. */
  readonly restartCheck: boolean;
  /**
   * After convergence, a window of this many seconds with nothing changing: what converged resources cost
   * at rest (requests, CPU). 0: not measured.
   */
  readonly idleSeconds: number;
  /** Run the controller from a tsc build (as it ships) or through the tsx loader. */
  readonly controllerRuntime: 'compiled' | 'tsx';
  /** Rounds (with a peer, in alternating order: recon8s first in odd rounds); figures are median and min–max. */
  readonly rounds: number;
  /** The controller-runtime peer's source folder (`--peer DIR`), absolute; undefined runs recon8s alone. */
  readonly peerDir?: string;
  /**
   * What each App asks for. `realistic`: a PodDisruptionBudget per App and an HPA for one in ten.
   * `peer-job`: exactly the peer's job, a Deployment and a Service per App (disruptionBudget off, no
   * autoscaling), so that both sides write the same objects.
   */
  readonly workload: BenchWorkload;
}

export const WORKLOADS = ['realistic', 'peer-job'] as const;
export type BenchWorkload = (typeof WORKLOADS)[number];

export const USAGE = `Usage: npm run bench -- [options]

Starts its own etcd + kube-apiserver, installs the CRDs, runs the controller as a child process
(a tsc build of lib/cli/main.ts, or with --tsx through the tsx loader) and measures convergence,
API requests, steady-state writes, spec-change latency, controller memory, and a render+apply
floor; with --peer, the same for a controller-runtime peer, round after round. Progress goes to
stderr; the report, a comparison table and a final JSON line go to stdout.

Options:
  --apps N                 Apps to create (default 1000)
  --mysql M                MySQLClusters to create (default 50; with --peer 0, and nothing else is accepted)
  --workers W              controller workers, and the floor's concurrency (default 4)
  --create-concurrency C   concurrent CR creates (default 32)
  --resync-seconds S       the controller's resync period (default 20)
  --latency-sample K       Apps whose spec.replicas is changed (default 200)
  --latency-rate R         changes per second (default 20)
  --timeout-minutes T      stop everything and print what was measured after T minutes (default 15)
  --controller-log-level L debug|info|warn|error (default info, as in production)
  --no-restart-check       skip the cold-cache pass after a controller restart
  --idle-seconds S         after convergence, measure S seconds in which nothing changes: the controller's
                           requests and CPU at rest (default 0: not measured; keep S below --resync-seconds,
                           or the window holds a resync). With --apps 0 --mysql 50: what idle MySQLClusters
                           cost (on this control plane no pod ever runs: each is a cluster that cannot start)
  --rounds N               rounds; each runs recon8s (and, with --peer, the peer: after recon8s in odd
                           rounds, before it in even ones) in a fresh namespace,
                           emptied and deleted after each pass; figures are the median and min–max over rounds (default 1)
  --peer DIR               the controller-runtime peer's folder (e.g. ../shared/peers/cr-app): built once
                           into ~/.cache/recon8s/peers/<hash of its sources>/ and run after recon8s in each
                           round, on the same control plane, with the same Apps in its own namespace; prints
                           ratios recon8s ÷ peer (its resync is not measured: its SyncPeriod is 10 h)
  --workload W             realistic: Apps with a PodDisruptionBudget each and one in ten autoscaled
                           (3.1 children per App); peer-job: the peer's job exactly, a Deployment and
                           a Service per App (spec.disruptionBudget.enabled false, no autoscaling), so
                           both sides write the same objects (default: peer-job with --peer, realistic without)
  --tsx                    run the controller as node --import tsx lib/cli/main.ts (default: a tsc
                           build of lib/ in a temp dir, as it ships; tsx adds ~60 MiB RSS and startup CPU)
  -h, --help

Environment: RECON8S_BENCH_CONTROLLER_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR" passes Node flags to the
controller process only (a CPU profile is written when it exits).
`;

function int(name: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number >= ${min}, got "${text}"`);
  return n;
}

/** Parses argv; returns undefined when help was asked for. Throws on bad input. */
export function parseBenchArgs(argv: readonly string[]): BenchArgs | undefined {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      apps: { type: 'string' },
      mysql: { type: 'string' },
      workers: { type: 'string' },
      'create-concurrency': { type: 'string' },
      'resync-seconds': { type: 'string' },
      'latency-sample': { type: 'string' },
      'latency-rate': { type: 'string' },
      'timeout-minutes': { type: 'string' },
      'controller-log-level': { type: 'string' },
      'no-restart-check': { type: 'boolean' },
      'idle-seconds': { type: 'string' },
      tsx: { type: 'boolean' },
      rounds: { type: 'string' },
      peer: { type: 'string' },
      workload: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return undefined;
  const level = values['controller-log-level'] ?? 'info';
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error')
    throw new Error(`--controller-log-level must be debug, info, warn or error, got "${level}"`);
  const timeoutText = values['timeout-minutes'];
  const timeoutMinutes = timeoutText === undefined ? 15 : Number(timeoutText);
  if (!(timeoutMinutes > 0)) throw new Error(`--timeout-minutes must be a positive number, got "${timeoutText}"`);
  const rateText = values['latency-rate'];
  const latencyRate = rateText === undefined ? 20 : Number(rateText);
  if (!(latencyRate > 0)) throw new Error(`--latency-rate must be a positive number, got "${rateText}"`);
  const peer = values.peer;
  if (peer !== undefined && peer.trim() === '')
    throw new Error('--peer must name the peer\'s folder (e.g. ../shared/peers/cr-app), got ""');
  // The peer reconciles Apps only: a MySQLCluster would never converge in its namespace.
  const mysql = int('mysql', values.mysql, peer === undefined ? 50 : 0, 0);
  if (peer !== undefined && mysql > 0)
    throw new Error(
      `--mysql ${mysql} cannot be used with --peer: the peer reconciles Apps only; expected --mysql 0 (the default with --peer)`,
    );
  const workload = values.workload ?? (peer === undefined ? 'realistic' : 'peer-job');
  if (!isWorkload(workload)) throw new Error(`--workload must be ${WORKLOADS.join(' or ')}, got "${workload}"`);
  return {
    apps: int('apps', values.apps, 1000, 0),
    mysql,
    workers: int('workers', values.workers, 4, 1),
    createConcurrency: int('create-concurrency', values['create-concurrency'], 32, 1),
    resyncSeconds: int('resync-seconds', values['resync-seconds'], 20, 1),
    latencySample: int('latency-sample', values['latency-sample'], 200, 0),
    latencyRate,
    timeoutMinutes,
    controllerLogLevel: level,
    restartCheck: values['no-restart-check'] !== true,
    idleSeconds: int('idle-seconds', values['idle-seconds'], 0, 0),
    controllerRuntime: values.tsx ? 'tsx' : 'compiled',
    rounds: int('rounds', values.rounds, 1, 1),
    ...(peer !== undefined ? { peerDir: resolve(peer) } : {}),
    workload,
  };
}

function isWorkload(w: string): w is BenchWorkload {
  return (WORKLOADS as readonly string[]).includes(w);
}
