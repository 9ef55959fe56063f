// The controller benchmark: `npm run bench -- --apps 1000 --mysql 50 --workers 4` (see bench/args.ts).
// A script, never run by `npm test`. Progress on stderr; a table, then one JSON line, on stdout.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { HttpMethod } from '@kubernetes/client-node';
import { allChildTypes } from '../lib/controller/kinds.js';
import type { KubeClient } from '../lib/kube/index.js';
import { apiError, createKubeClient } from '../lib/kube/index.js';
import { KUBE_VERSION, startControlPlane } from '../test/controlplane/index.js';
import type { ControlPlane } from '../test/controlplane/index.js';
import { installCrds } from '../test/integration/support/controller.js';
import { RequestLedger, countingClient } from './api-requests.js';
import type { BenchArgs } from './args.js';
import { USAGE, parseBenchArgs } from './args.js';
import { ClusterWatch, OWNER_TYPES } from './cluster-watch.js';
import { compiledEntry, tsxEntry } from './controller-build.js';
import type { ControllerEntry } from './controller-build.js';
import { ControllerProcess, controllerFigures } from './controller-process.js';
import { floorPass } from './floor.js';
import type { FloorPass } from './floor.js';
import { totalBy } from './prometheus.js';
import { runPaced, runPool, sleep, until } from './pool.js';
import { RssSampler, cpuSnapshot, diffCpu, loadAverage, processName, round } from './proc-stats.js';
import { formatReport } from './report.js';
import type { BenchResults } from './results.js';
import { distribution } from './results.js';
import { RunGuard } from './run-guard.js';
import { comparePhase, takeSnapshot } from './snapshot.js';
import type { Snapshot, SnapshotSources } from './snapshot.js';
import type { BenchResource } from './workload.js';
import {
  GROUP_VERSION,
  INITIAL_REPLICAS,
  buildWorkload,
  hasFixedReplicas,
  refOf,
  renderResource,
  resourceObject,
} from './workload.js';

const BENCH_NAMESPACE = 'recon8s-bench';
const FLOOR_BEFORE = 'recon8s-floor-before';
const FLOOR_AFTER = 'recon8s-floor-after';
const QUIET_MS = 2_000;

const startedAt = performance.now();
function progress(message: string): void {
  process.stderr.write(`[bench +${((performance.now() - startedAt) / 1000).toFixed(1)}s] ${message}\n`);
}

const mib = (bytes: number): number => round(bytes / 2 ** 20, 1);

/** What the run started, for the cleanup. */
interface Started {
  controlPlane?: ControlPlane;
  entry?: ControllerEntry;
  controller?: ControllerProcess;
  sampler?: RssSampler;
  watch?: ClusterWatch;
  clients: KubeClient[];
  /** Fills in what can still be read when the run ends early. */
  partial?: () => Promise<void>;
}

async function main(): Promise<number> {
  let args: BenchArgs | undefined;
  try {
    args = parseBenchArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n\n${USAGE}`);
    return 2;
  }
  if (!args) {
    process.stdout.write(USAGE);
    return 0;
  }
  const results: BenchResults = {
    settings: {
      ...args,
      cpus: availableParallelism(),
      node: process.version,
      kubernetes: KUBE_VERSION,
      git: gitState(),
    },
    status: 'running',
  };
  results.loadAverage = { atStart: loadAverage() };
  const started: Started = { clients: [] };
  const guard = new RunGuard(args.timeoutMinutes * 60_000);
  guard.onKill(() => started.controller?.killNow());

  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const run = runBench(args, results, started);
  run.catch(() => undefined);
  const outcome = await Promise.race([
    run.then(
      () => 'complete' as const,
      (e: unknown) => e,
    ),
    guard.stopped,
  ]);
  if (outcome === 'complete') results.status = 'complete';
  else if (outcome === 'timeout' || outcome === 'SIGINT' || outcome === 'SIGTERM') results.status = outcome;
  else {
    results.status = 'error';
    results.error = outcome instanceof Error ? outcome.message : String(outcome);
  }
  if (results.status !== 'complete') {
    progress(
      `run ended: ${results.status}${results.error ? `: ${results.error}` : ''} (phase ${results.phase ?? '?'})`,
    );
    await Promise.race([started.partial?.().catch(() => undefined), sleep(5_000)]);
  }
  if (started.controller && !results.controllerLogs) results.controllerLogs = started.controller.logs();
  if (started.watch) results.benchWatchRestarts = { ...started.watch.restarts };
  loopDelay.disable();
  results.benchEventLoopDelayMs = { p99: round(loopDelay.percentile(99) / 1e6, 1), max: round(loopDelay.max / 1e6, 1) };
  results.loadAverage.atEnd = loadAverage();

  process.stdout.write(`${formatReport(results)}\n`);
  process.stdout.write(`${JSON.stringify(results)}\n`);

  progress('cleaning up');
  await Promise.race([cleanup(started), sleep(30_000)]);
  guard.dispose();
  return results.status === 'complete' ? 0 : results.status === 'error' ? 1 : results.status === 'timeout' ? 3 : 130;
}

async function cleanup(s: Started): Promise<void> {
  s.sampler?.stop();
  await s.controller?.stop(5_000).catch(() => undefined);
  await s.watch?.stop().catch(() => undefined);
  await Promise.all(s.clients.map((c) => c.close().catch(() => undefined)));
  await s.controlPlane?.stop().catch(() => undefined);
  await s.entry?.dispose().catch(() => undefined);
}

/** `HEAD <sha>` plus the uncommitted files the controller's code comes from (others edit concurrently). */
function gitState(): string {
  try {
    const git = (...a: string[]): string =>
      execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const dirty = git('status', '--porcelain', '--', 'lib', 'constructs')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3));
    return `HEAD ${git('rev-parse', '--short', 'HEAD').trim()}${dirty.length ? ` + uncommitted ${dirty.join(' ')}` : ''}`;
  } catch {
    return 'unknown';
  }
}

async function runBench(args: BenchArgs, results: BenchResults, started: Started): Promise<void> {
  const benchAtStartMiB = mib(process.memoryUsage().rss);
  const N = args.apps + args.mysql;

  // ---- the controller's code, as it ships (or through tsx) --------------------------------------
  results.phase = 'build';
  if (args.controllerRuntime === 'compiled') {
    progress('compiling lib/ (tsc -p tsconfig.build.json) into a temp dir');
    const built = await compiledEntry();
    started.entry = built;
    progress(`  compiled in ${built.buildSeconds} s`);
  } else {
    started.entry = tsxEntry();
  }
  const entry = started.entry;
  results.settings.controllerEntry = entry.description;

  // ---- the control plane ----------------------------------------------------------------------
  results.phase = 'control plane';
  progress('starting etcd + kube-apiserver');
  let t = performance.now();
  const cp = await startControlPlane({
    // The test control plane's Service range is a /24: ~250 ClusterIPs, fewer than the bench's Services.
    apiServerArgs: [
      '--max-requests-inflight=1000',
      '--max-mutating-requests-inflight=500',
      '--service-cluster-ip-range=10.0.0.0/16',
    ],
    onProgress: (m) => progress(`  ${m}`),
  });
  started.controlPlane = cp;
  results.controlPlaneStartSeconds = round((performance.now() - t) / 1000, 2);
  await installCrds(cp);
  const componentPids: Record<string, number> = {};
  for (const pid of cp.pids()) componentPids[processName(pid) ?? String(pid)] = pid;
  progress(
    `control plane up (${Object.entries(componentPids)
      .map(([n, p]) => `${n} ${p}`)
      .join(', ')}); CRDs established`,
  );

  const ledger = new RequestLedger();
  const admin = createKubeClient({
    kubeConfig: cp.kubeConfig(),
    userAgent: 'recon8s-bench',
    fieldManager: 'recon8s-bench',
  });
  const floorClient = createKubeClient({
    kubeConfig: cp.kubeConfig(),
    userAgent: 'recon8s-bench-floor',
    fieldManager: 'floor',
  });
  started.clients.push(admin, floorClient);
  const bench = countingClient(admin, ledger);
  for (const name of [BENCH_NAMESPACE, FLOOR_BEFORE, FLOOR_AFTER]) {
    await bench.request({
      method: HttpMethod.POST,
      path: '/api/v1/namespaces',
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }),
      headers: { 'Content-Type': 'application/json' },
    });
  }

  // ---- the workload and what it must converge to ----------------------------------------------
  results.phase = 'workload';
  const resources = buildWorkload(args.apps, args.mysql);
  // The backup volumes the MySQLClusters name exist, as a user makes them (recon8s never creates them):
  // without them every cluster is Degraded/BackupVolumeMissing and looked at again every 30 s.
  for (const r of resources) {
    const claim = (r.spec as { backup?: { persistentVolumeClaimName?: string } }).backup?.persistentVolumeClaimName;
    if (claim === undefined) continue;
    await bench.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${BENCH_NAMESPACE}/persistentvolumeclaims`,
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: claim },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      }),
      headers: { 'Content-Type': 'application/json' },
    });
  }
  t = performance.now();
  const rendered = resources.map((r) => renderResource(r, BENCH_NAMESPACE));
  const renderMs = performance.now() - t;
  const childrenByKind: Record<string, number> = {};
  for (const objects of rendered) for (const o of objects) childrenByKind[o.kind] = (childrenByKind[o.kind] ?? 0) + 1;
  const deploymentOf = new Map<string, string>();
  resources.forEach((r, i) => {
    const d = rendered[i]?.find((o) => o.kind === 'Deployment');
    if (d) deploymentOf.set(r.name, d.metadata.name);
  });
  results.workload = {
    resources: N,
    apps: args.apps,
    autoscaledApps: resources.filter((r) => r.kind === 'App' && !hasFixedReplicas(r)).length,
    mysqlClusters: args.mysql,
    children: Object.values(childrenByKind).reduce((a, b) => a + b, 0),
    childrenByKind,
    renderMsPerResource: round(renderMs / Math.max(N, 1), 2),
  };
  progress(`workload: ${N} resources → ${results.workload.children} children (render ${Math.round(renderMs)} ms)`);

  // ---- 6a: the floor, once before the controller runs (once more after it) -----------------------
  results.phase = 'floor before';
  const floorRun = async (
    namespace: string,
    what: string,
  ): Promise<FloorPass & { cpuSeconds: Record<string, number> }> => {
    progress(
      `floor (${what}): render + server-side apply of ${N} resources into ${namespace}, concurrency ${args.workers}`,
    );
    const cpu0 = cpuSnapshot(componentPids);
    const pass = await floorPass(floorClient, resources, namespace, args.workers);
    progress(
      `  ${pass.objects} objects in ${pass.seconds} s${pass.errors ? `, ${pass.errors} errors: ${pass.firstError ?? ''}` : ''}`,
    );
    return { ...pass, cpuSeconds: diffCpu(cpuSnapshot(componentPids), cpu0) };
  };
  results.floor = { before: await floorRun(FLOOR_BEFORE, 'create, before the controller') };

  const watch = new ClusterWatch(bench, BENCH_NAMESPACE, allChildTypes(), OWNER_TYPES);
  started.watch = watch;
  await watch.start();
  resources.forEach((r, i) =>
    watch.expect(
      refOf(r.kind, r.name),
      (rendered[i] ?? []).map((o) => refOf(o.kind, o.metadata.name)),
    ),
  );
  const benchBeforeControllerMiB = mib(process.memoryUsage().rss);

  // ---- the controller, as a child process ------------------------------------------------------
  results.phase = 'controller start';
  const startController = async (): Promise<{ proc: ControllerProcess; seconds: number }> => {
    const t0 = performance.now();
    const proc = await ControllerProcess.start({
      nodeArgs: entry.nodeArgs,
      kubeconfigPath: cp.kubeconfigPath,
      namespace: BENCH_NAMESPACE,
      workers: args.workers,
      resyncSeconds: args.resyncSeconds,
      logLevel: args.controllerLogLevel,
    });
    return { proc, seconds: round((performance.now() - t0) / 1000, 2) };
  };
  const first = await startController();
  let controller = first.proc;
  started.controller = controller;
  results.controllerStartSeconds = first.seconds;
  const sampler = new RssSampler(controller.pid);
  started.sampler = sampler;
  sampler.setPhase('idle');
  progress(`controller pid ${controller.pid} started in ${first.seconds} s; metrics ${controller.metricsUrl}`);
  await sleep(1_000);
  const controllerIdleMiB = round(sampler.latest()?.rssMiB ?? 0, 1);
  const memory = (): NonNullable<BenchResults['memory']> => ({
    benchAtStartMiB,
    benchBeforeControllerMiB,
    controllerIdleMiB,
    controllerPeakMiB: round(sampler.latest()?.hwmMiB ?? NaN, 1),
    controllerPeakByPhaseMiB: sampler.peaksByPhase(),
    controllerFinalRssMiB: round(sampler.latest()?.rssMiB ?? NaN, 1),
  });
  results.memory = memory();
  let phaseStart = { at: performance.now(), cpu: cpuSnapshot({}) };
  const beginPhase = (name: string): void => {
    results.phase = name;
    sampler.setPhase(name);
    phaseStart = { at: performance.now(), cpu: cpuSnapshot(sources.pids()) };
  };
  started.partial = async () => {
    results.memory = memory();
    const cpuNow = cpuSnapshot(sources.pids());
    const m = controller.running ? await controller.metrics() : [];
    results.partial = {
      watch: watch.progress(),
      reconcilesByResult: totalBy(m, 'controller_runtime_reconcile_total', ['result']),
      childApplies: totalBy(m, 'recon8s_apply_total', ['kind', 'result']),
      controllerRequests: totalBy(m, 'rest_client_requests_total', ['method', 'code']),
      lastControllerLogLines: controller.lastLines(5).map((l) => l.slice(0, 400)),
      phaseCpuSeconds: diffCpu(cpuNow, phaseStart.cpu),
      phaseWallSeconds: round((performance.now() - phaseStart.at) / 1000, 1),
    };
  };

  const sources: SnapshotSources = {
    get controller() {
      return controller;
    },
    admin,
    ledger,
    pids: () => ({ controller: controller.running ? controller.pid : undefined, ...componentPids }),
  };
  const snap = (): Promise<Snapshot> => takeSnapshot(sources);
  const waitQuiet = async (timeoutMs: number): Promise<void> => {
    let last = -1;
    let stableSince = performance.now();
    await until(
      'the controller work queue to be idle',
      async () => {
        const f = controllerFigures(await controller.metrics());
        const now = performance.now();
        if (f.queueDepth !== 0 || f.activeWorkers !== 0 || f.reconciles !== last) stableSince = now;
        last = f.reconciles;
        return now - stableSince >= QUIET_MS;
      },
      timeoutMs,
      250,
    );
  };

  // ---- 1 + 2: create everything, time convergence ---------------------------------------------
  beginPhase('converge');
  const before = await snap();
  const t0 = performance.now();
  let created = 0;
  const ticker = setInterval(() => {
    void controller.metrics().then(
      (m) => {
        const p = watch.progress();
        progress(
          `  created ${created}/${N}; children ${p.childrenPresent}/${p.childrenExpected}; CRs observed ${p.resourcesObserved}/${p.resources}; reconciles ${controllerFigures(m).reconciles}, queue ${controllerFigures(m).queueDepth}; controller RSS ${round(sampler.latest()?.rssMiB ?? 0)} MiB`,
        );
      },
      () => undefined,
    );
  }, 5_000);
  try {
    progress(`creating ${N} resources (concurrency ${args.createConcurrency})`);
    const { errors } = await runPool(resources, args.createConcurrency, async (r) => {
      await bench.request({
        method: HttpMethod.POST,
        path: `/apis/${GROUP_VERSION}/namespaces/${BENCH_NAMESPACE}/${r.plural}`,
        body: JSON.stringify(resourceObject(r, BENCH_NAMESPACE)),
        headers: { 'Content-Type': 'application/json' },
      });
      created++;
    });
    const createSeconds = (performance.now() - t0) / 1000;
    results.create = {
      seconds: round(createSeconds, 2),
      perSecond: Math.round(created / createSeconds),
      errors: errors.length,
      ...(errors[0] !== undefined ? { firstError: apiError(errors[0]).message } : {}),
    };
    progress(`created ${created} in ${createSeconds.toFixed(1)} s; waiting for convergence`);
    if (created < N) throw new Error(`${N - created} creates failed: ${results.create.firstError ?? ''}`);
    const convergedAt = await watch.converged();
    progress(`converged in ${((convergedAt - t0) / 1000).toFixed(1)} s; waiting for the queue to go idle`);
    await waitQuiet(180_000);
    const after = await snap();
    const figures = comparePhase(before, after);
    results.converge = {
      ...figures,
      seconds: round((after.at - t0) / 1000, 2),
      convergeSeconds: round((convergedAt - t0) / 1000, 2),
      quietSeconds: round((after.at - t0) / 1000, 2),
      reconcilesPerResource: round(figures.reconciles / N, 2),
    };
  } finally {
    clearInterval(ticker);
  }
  results.memory = memory();

  // ---- 3: one steady-state resync --------------------------------------------------------------
  beginPhase('resync');
  progress(`waiting for a resync (every ${args.resyncSeconds} s): >= ${N} reconciles`);
  const r0 = await snap();
  const base = controllerFigures(r0.controller).reconciles;
  await until(
    `${N} resync reconciles`,
    async () => controllerFigures(await controller.metrics()).reconciles - base >= N,
    args.resyncSeconds * 2_000 + 120_000,
  );
  await waitQuiet(120_000);
  const r1 = await snap();
  results.resync = { ...comparePhase(r0, r1), expectedReconciles: N };
  progress(
    `resync: ${results.resync.reconciles} reconciles, controller writes ${results.resync.controllerWrites}, apiserver writes ${results.resync.apiServerWrites}`,
  );
  results.memory = memory();

  // ---- 4: spec change → child change latency ---------------------------------------------------
  beginPhase('latency');
  const sample = resources.filter(hasFixedReplicas).slice(0, args.latencySample);
  if (sample.length > 0) {
    progress(`latency: changing spec.replicas of ${sample.length} Apps at ${args.latencyRate}/s`);
    const l0 = await snap();
    const latencies: number[] = [];
    const patchMs: number[] = [];
    let timedOut = 0;
    const replicas = INITIAL_REPLICAS + 1;
    const { errors } = await runPaced(sample, args.latencyRate, async (r: BenchResource) => {
      const seen = watch.deploymentReplicas(deploymentOf.get(r.name) ?? r.name, replicas);
      const sent = performance.now();
      await bench.request({
        method: HttpMethod.PATCH,
        path: `/apis/${GROUP_VERSION}/namespaces/${BENCH_NAMESPACE}/apps/${r.name}`,
        body: JSON.stringify({ spec: { replicas } }),
        headers: { 'Content-Type': 'application/merge-patch+json' },
      });
      patchMs.push(performance.now() - sent);
      const at = await Promise.race([seen, sleep(120_000).then(() => undefined)]);
      if (at === undefined) timedOut++;
      else latencies.push(at - sent);
    });
    if (errors.length > 0) throw new Error(`latency: ${errors.length} patches failed: ${apiError(errors[0]).message}`);
    await waitQuiet(120_000);
    const figures = comparePhase(l0, await snap());
    results.latency = {
      changes: sample.length,
      perSecond: args.latencyRate,
      timedOut,
      specToChildMs: distribution(latencies),
      patchMs: distribution(patchMs),
      figures,
      controllerWritesPerChange: round(figures.controllerWrites / sample.length, 2),
    };
    progress(`latency: p50 ${results.latency.specToChildMs.p50} ms, p99 ${results.latency.specToChildMs.p99} ms`);
  }

  // ---- 5: memory of the first controller; then stop it -----------------------------------------
  results.phase = 'memory';
  results.memory = memory();
  results.controllerLogs = controller.logs();
  progress(`controller peak RSS (VmHWM) ${results.memory.controllerPeakMiB} MiB; stopping it`);
  sampler.stop();
  await controller.stop();

  // ---- 3b: a restart: a cold cache's first full pass -------------------------------------------
  if (args.restartCheck) {
    results.phase = 'restart';
    progress('restart: a new controller process, cold cache; counting the writes of its first full pass');
    const s0 = await snap();
    const spawnAt = performance.now();
    const second = await startController();
    controller = second.proc;
    started.controller = controller;
    const sampler2 = new RssSampler(controller.pid);
    await until(
      `${N} reconciles after the restart`,
      async () => controllerFigures(await controller.metrics()).reconciles >= N,
      300_000,
      250,
    );
    await waitQuiet(120_000);
    const s1 = await snap();
    results.restart = {
      ...comparePhase(s0, s1),
      startSeconds: second.seconds,
      passSeconds: round((s1.at - spawnAt) / 1000, 2),
      peakRssMiB: round(sampler2.latest()?.hwmMiB ?? NaN, 1),
      logs: controller.logs(),
    };
    sampler2.stop();
    progress(
      `restart: pass done in ${results.restart.passSeconds} s, controller writes ${results.restart.controllerWrites}, apiserver writes ${results.restart.apiServerWrites}`,
    );
    await controller.stop();
  }

  // ---- 6b: the floor again, and its steady state ---------------------------------------------------
  results.phase = 'floor after';
  const floor = results.floor;
  floor.after = await floorRun(FLOOR_AFTER, 'create, after the controller');
  floor.noop = await floorRun(FLOOR_AFTER, 'the same objects again: a no-op re-apply');
  floor.steadyStateWrites = {
    floor: floor.noop.objects,
    ...(results.resync ? { controller: results.resync.controllerWrites } : {}),
  };
  const convergeSeconds = results.converge?.convergeSeconds;
  const samples = [floor.before, floor.after]
    .filter((p): p is FloorPass & { cpuSeconds: Record<string, number> } => p !== undefined && p.errors === 0)
    .map((p) => p.seconds);
  if (convergeSeconds !== undefined && samples.length > 0) {
    floor.ratio = round(convergeSeconds / (samples.reduce((a, b) => a + b, 0) / samples.length), 2);
    floor.ratioRange = [
      round(convergeSeconds / Math.max(...samples), 2),
      round(convergeSeconds / Math.min(...samples), 2),
    ];
  }
  results.phase = 'done';
}

process.exitCode = await main();
// Informers, pools and timers may hold the event loop; everything this run started has been stopped.
process.exit();
