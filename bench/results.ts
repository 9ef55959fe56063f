import type { BenchArgs } from './args.js';
import type { LogCounts } from './controller-process.js';
import type { FloorPass } from './floor.js';
import type { PhaseFigures } from './snapshot.js';

export interface Distribution {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Which controller a round ran. */
export type Side = 'recon8s' | 'peer';

/** Where a round stood when the run ended early (totals since its current controller process started). */
export interface PartialFigures {
  readonly watch: {
    childrenPresent: number;
    childrenExpected: number;
    resourcesObserved: number;
    resources: number;
    pending: number;
  };
  readonly reconcilesByResult: Record<string, number>;
  readonly childApplies: Record<string, number>;
  readonly controllerRequests: Record<string, number>;
  readonly lastControllerLogLines: string[];
  /** CPU seconds per process since the phase under way began, and its wall time. */
  readonly phaseCpuSeconds: Record<string, number>;
  readonly phaseWallSeconds: number;
}

/** One controller (recon8s or the peer) through converge, resync, latency and restart, in its own namespace. */
export interface RoundResult {
  /** 1-based. */
  readonly round: number;
  readonly side: Side;
  readonly namespace: string;
  /** Child kinds expected per resource (the peer renders only a Deployment and a Service). */
  readonly childKinds: readonly string[];
  /** Spawn → the `started` log line (caches synced). */
  controllerStartSeconds?: number;
  create?: {
    readonly seconds: number;
    readonly perSecond: number;
    readonly errors: number;
    readonly firstError?: string;
  };
  converge?: PhaseFigures & {
    /** From the first create to the moment every resource had its children and had observed its generation. */
    readonly convergeSeconds: number;
    /** From the first create to an empty, idle work queue (seen idle for 2 s; this is where it went idle). */
    readonly quietSeconds: number;
    readonly reconcilesPerResource: number;
  };
  /** --idle-seconds: a window after convergence in which nothing changes (no create, no resync due). */
  idle?: PhaseFigures & {
    /** Resyncs the controller's period put inside the window (then the window is not at rest). */
    readonly resyncsInWindow: number;
  };
  /** Undefined for the peer: its SyncPeriod is 10 h, so it does not resync within a run. */
  resync?: PhaseFigures & { readonly expectedReconciles: number };
  latency?: {
    readonly changes: number;
    readonly perSecond: number;
    readonly timedOut: number;
    /** Spec PATCH sent → the bench's watch sees the Deployment with the new replicas, ms. */
    readonly specToChildMs: Distribution;
    /** The PATCH round trip alone, ms. */
    readonly patchMs: Distribution;
    readonly figures: PhaseFigures;
    readonly controllerWritesPerChange: number;
  };
  restart?: PhaseFigures & {
    /** Spawn → the `started` log line (informers synced). */
    readonly startSeconds: number;
    /** Spawn → every resource reconciled once and the work queue idle (where it went idle, not the 2 s after). */
    readonly passSeconds: number;
    readonly peakRssMiB: number;
    /** The restarted controller's log lines by `level msg`. */
    readonly logs: LogCounts;
  };
  memory?: {
    readonly controllerIdleMiB: number;
    /** VmHWM of the first controller process (peak over its life: converge, resync, latency). */
    readonly controllerPeakMiB?: number;
    readonly controllerPeakByPhaseMiB: Record<string, number>;
    readonly controllerFinalRssMiB?: number;
  };
  /** The first controller process's log lines by `level msg`. */
  controllerLogs?: LogCounts;
  /** The bench's own watches restarting (by `resource reason`): the API server cuts off a reader that falls behind. */
  benchWatchRestarts?: Record<string, number>;
  /** When the run ended during this round: where things stood. */
  partial?: PartialFigures;
  /** Deleting the round's objects and namespace afterwards (so the next round's API server does not carry them). */
  cleanupSeconds?: number;
}

/** One figure of the comparison: the median over rounds and the range. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** How many rounds it is over. */
  readonly n: number;
}

/** One row of the recon8s ÷ peer table. */
export interface ComparisonRow {
  readonly label: string;
  readonly recon8s?: Spread;
  readonly peer?: Spread;
  /** recon8s ÷ peer per round (rounds where both were measured and the peer's figure is not 0). */
  readonly ratio?: Spread;
  /** Digits to print the values with. */
  readonly digits: number;
}

/** Everything the bench measured; sections appear as their phase completes (a timeout prints what is there). */
export interface BenchResults {
  readonly settings: BenchArgs & {
    readonly cpus: number;
    readonly node: string;
    readonly kubernetes?: string;
    /** HEAD and the uncommitted files under lib/ and constructs/ the controller ran with. */
    readonly git: string;
    controllerEntry?: string;
    /** The peer's binary, and whether this run built it. */
    peer?: { readonly binary: string; readonly built: boolean; readonly buildSeconds: number };
  };
  status: 'running' | 'complete' | 'timeout' | 'SIGINT' | 'SIGTERM' | 'error';
  error?: string;
  /** The phase under way when the run ended (for a timeout or error). */
  phase?: string;
  controlPlaneStartSeconds?: number;
  workload?: {
    readonly resources: number;
    readonly apps: number;
    readonly autoscaledApps: number;
    readonly mysqlClusters: number;
    readonly children: number;
    readonly childrenByKind: Record<string, number>;
    readonly renderMsPerResource: number;
  };
  /** Each controller's pass, in the order run: round 1 recon8s, round 1 peer, round 2 recon8s, ... */
  rounds: RoundResult[];
  /** recon8s ÷ peer (with --peer), or recon8s over its rounds alone. */
  comparison?: ComparisonRow[];
  benchMemory?: {
    readonly atStartMiB: number;
    /** With the first round's watches, before its controller started. */
    readonly beforeControllerMiB?: number;
  };
  floor?: {
    /** Pass 1 (create) into an empty namespace before the rounds... */
    before?: FloorPass & { readonly cpuSeconds: Record<string, number> };
    /** ...and into another one after them: two samples, since this machine is shared. */
    after?: FloorPass & { readonly cpuSeconds: Record<string, number> };
    /** The same objects again: what a loop without diff sends on every resync. */
    noop?: FloorPass & { readonly cpuSeconds: Record<string, number> };
    /** recon8s converge time / the mean of the two floor creates (median over rounds); and the range against each floor sample and round. */
    ratio?: number;
    ratioRange?: readonly [number, number];
    /** Writes per resync: the floor's no-op re-apply, and recon8s's (median over rounds). */
    steadyStateWrites?: { readonly floor: number; readonly controller?: number };
  };
  /** The bench's own event-loop delay (its timestamps are only as good as this). */
  benchEventLoopDelayMs?: { readonly p99: number; readonly max: number };
  /** 1-minute load average: this is a shared 2-CPU machine. */
  loadAverage?: { atStart: number; atEnd?: number };
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number =>
    sorted.length === 0
      ? 0
      : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0);
  const r = (n: number): number => Math.round(n * 10) / 10;
  return {
    count: sorted.length,
    p50: r(at(50)),
    p90: r(at(90)),
    p99: r(at(99)),
    max: r(sorted[sorted.length - 1] ?? 0),
    mean: r(sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : 0),
  };
}
