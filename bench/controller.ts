// The controller benchmark: `npm run bench -- --apps 1000 --mysql 50 --workers 4` (see bench/args.ts), and
// side by side with a controller-runtime peer: `npm run bench -- --apps 1000 --peer ../shared/peers/cr-app --rounds 3`.
// A script, never run by `npm test`. Progress on stderr; the report, a comparison table, then one JSON line, on stdout.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { HttpMethod } from '@kubernetes/client-node';
import { allChildTypes } from '../lib/controller/kinds.js';
import type { KubeClient } from '../lib/kube/index.js';
import { createKubeClient } from '../lib/kube/index.js';
import { KUBE_VERSION, startControlPlane } from '../test/controlplane/index.js';
import type { ControlPlane } from '../test/controlplane/index.js';
import { installCrds } from '../test/integration/support/controller.js';
import { RequestLedger, countingClient } from './api-requests.js';
import type { BenchArgs } from './args.js';
import { USAGE, parseBenchArgs } from './args.js';
import { buildComparison, floorSamples, median } from './compare.js';
import { compiledEntry, tsxEntry } from './controller-build.js';
import type { ControllerEntry } from './controller-build.js';
import { ControllerProcess } from './controller-process.js';
import { floorPass } from './floor.js';
import type { FloorPass } from './floor.js';
import { buildPeer } from './peer-build.js';
import { startPeer } from './peer-process.js';
import { sleep } from './pool.js';
import { cpuSnapshot, diffCpu, loadAverage, processName, round } from './proc-stats.js';
import { formatReport } from './report.js';
import type { BenchResults, RoundResult } from './results.js';
import { RunGuard } from './run-guard.js';
import { deleteNamespace, runRound } from './round.js';
import type { ControllerSpec, RoundContext, Started } from './round.js';
import { buildWorkload, hasFixedReplicas, renderResource } from './workload.js';

const FLOOR_BEFORE = 'recon8s-floor-before';
const FLOOR_AFTER = 'recon8s-floor-after';
/** What the peer renders for an App (no PodDisruptionBudget, no HorizontalPodAutoscaler). */
const PEER_CHILD_KINDS: ReadonlySet<string> = new Set(['Deployment', 'Service']);

const startedAt = performance.now();
function progress(message: string): void {
  process.stderr.write(`[bench +${((performance.now() - startedAt) / 1000).toFixed(1)}s] ${message}\n`);
}

const mib = (bytes: number): number => round(bytes / 2 ** 20, 1);

/** What the run started, for the cleanup (the round under way adds its controller, sampler and watch). */
interface RunStarted extends Started {
  controlPlane?: ControlPlane;
  entry?: ControllerEntry;
  clients: KubeClient[];
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
    rounds: [],
  };
  results.loadAverage = { atStart: loadAverage() };
  const started: RunStarted = { clients: [] };
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
  loopDelay.disable();
  results.benchEventLoopDelayMs = { p99: round(loopDelay.percentile(99) / 1e6, 1), max: round(loopDelay.max / 1e6, 1) };
  results.loadAverage.atEnd = loadAverage();
  results.comparison = buildComparison(results.rounds, results.floor);

  process.stdout.write(`${formatReport(results)}\n`);
  process.stdout.write(`${JSON.stringify(results)}\n`);

  progress('cleaning up');
  await Promise.race([cleanup(started), sleep(30_000)]);
  guard.dispose();
  return results.status === 'complete' ? 0 : results.status === 'error' ? 1 : results.status === 'timeout' ? 3 : 130;
}

async function cleanup(s: RunStarted): Promise<void> {
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

async function runBench(args: BenchArgs, results: BenchResults, started: RunStarted): Promise<void> {
  results.benchMemory = { atStartMiB: mib(process.memoryUsage().rss) };
  const N = args.apps + args.mysql;

  // ---- the controllers' code: recon8s as it ships (or through tsx), the peer by go build -------------
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
  let peerBinary: string | undefined;
  if (args.peerDir !== undefined) {
    progress(`building the peer in ${args.peerDir} (go build; cached by the hash of its sources)`);
    const peer = await buildPeer(args.peerDir);
    peerBinary = peer.binary;
    results.settings.peer = { binary: peer.binary, built: peer.built, buildSeconds: peer.buildSeconds };
    progress(`  ${peer.built ? `built in ${peer.buildSeconds} s` : 'cached'}: ${peer.binary}`);
  }

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
      // Emptying a namespace between passes deletes thousands of objects in one delete-collection, which
      // takes longer than the default 60 s (the API server then drops the connection: "socket hang up").
      '--request-timeout=5m',
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
  for (const name of [FLOOR_BEFORE, FLOOR_AFTER]) {
    await bench.request({
      method: HttpMethod.POST,
      path: '/api/v1/namespaces',
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }),
      headers: { 'Content-Type': 'application/json' },
    });
  }

  // ---- the workload and what it must converge to ----------------------------------------------
  results.phase = 'workload';
  const resources = buildWorkload(args.apps, args.mysql, args.workload);
  t = performance.now();
  const rendered = resources.map((r) => renderResource(r, 'recon8s-bench'));
  const renderMs = performance.now() - t;
  const childrenByKind: Record<string, number> = {};
  for (const objects of rendered) for (const o of objects) childrenByKind[o.kind] = (childrenByKind[o.kind] ?? 0) + 1;
  results.workload = {
    resources: N,
    apps: args.apps,
    autoscaledApps: resources.filter((r) => r.kind === 'App' && !hasFixedReplicas(r)).length,
    mysqlClusters: args.mysql,
    children: Object.values(childrenByKind).reduce((a, b) => a + b, 0),
    childrenByKind,
    renderMsPerResource: round(renderMs / Math.max(N, 1), 2),
  };
  progress(
    `workload ${args.workload}: ${N} resources → ${results.workload.children} children (render ${Math.round(renderMs)} ms)`,
  );

  // ---- 6a: the floor, once before the controllers run (once more after them) ----------------------
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
  results.floor = { before: await floorRun(FLOOR_BEFORE, 'create, before the controllers') };

  // ---- the rounds: recon8s and the peer, in alternating order, each in a fresh namespace ------------
  const childTypes = allChildTypes();
  const ctx: RoundContext = {
    args,
    resources,
    rendered,
    bench,
    admin,
    ledger,
    childTypes,
    componentPids,
    started,
    progress,
    setPhase: (p) => {
      results.phase = p;
    },
    beforeController: () => {
      if (results.benchMemory && results.benchMemory.beforeControllerMiB === undefined)
        results.benchMemory = { ...results.benchMemory, beforeControllerMiB: mib(process.memoryUsage().rss) };
    },
  };
  const recon8s: ControllerSpec = {
    side: 'recon8s',
    resync: true,
    start: (namespace) =>
      ControllerProcess.start({
        nodeArgs: entry.nodeArgs,
        kubeconfigPath: cp.kubeconfigPath,
        namespace,
        workers: args.workers,
        resyncSeconds: args.resyncSeconds,
        logLevel: args.controllerLogLevel,
      }),
  };
  const specs: ControllerSpec[] = [recon8s];
  if (peerBinary !== undefined) {
    const binary = peerBinary;
    specs.push({
      side: 'peer',
      resync: false,
      childKinds: PEER_CHILD_KINDS,
      start: (namespace) => startPeer({ binary, kubeconfigPath: cp.kubeconfigPath, namespace, workers: args.workers }),
    });
  }
  for (let i = 1; i <= args.rounds; i++) {
    // Alternating order (recon8s first in odd rounds, the peer first in even ones): drift over the run
    // (etcd's growing database, the machine's other load) does not favour one side.
    for (const spec of i % 2 === 1 ? specs : [...specs].reverse()) {
      const result: RoundResult = {
        round: i,
        side: spec.side,
        namespace: `${spec.side === 'recon8s' ? 'recon8s' : 'peer'}-bench-r${i}`,
        childKinds: [...new Set(rendered.flat().map((o) => o.kind))].filter((k) => spec.childKinds?.has(k) ?? true),
      };
      results.rounds.push(result);
      progress(`round ${i}/${args.rounds}: ${spec.side} in namespace ${result.namespace}`);
      await runRound(ctx, spec, result);
      // Emptied and gone before the next pass: otherwise the API server's watch cache and etcd carry
      // every earlier round's objects, and later rounds (the peer's in particular) pay for them.
      results.phase = `r${i} ${spec.side}: delete namespace`;
      const d0 = performance.now();
      await deleteNamespace(admin, result.namespace, childTypes);
      result.cleanupSeconds = round((performance.now() - d0) / 1000, 1);
      progress(`  namespace ${result.namespace} deleted in ${result.cleanupSeconds} s`);
    }
  }

  // ---- 6b: the floor again, and its steady state ---------------------------------------------------
  results.phase = 'floor after';
  const floor = results.floor;
  floor.after = await floorRun(FLOOR_AFTER, 'create, after the controllers');
  floor.noop = await floorRun(FLOOR_AFTER, 'the same objects again: a no-op re-apply');
  const ours = results.rounds.filter((r) => r.side === 'recon8s');
  const resyncWrites = ours.flatMap((r) => (r.resync ? [r.resync.controllerWrites] : []));
  floor.steadyStateWrites = {
    floor: floor.noop.objects,
    ...(resyncWrites.length > 0 ? { controller: median(resyncWrites) } : {}),
  };
  const converge = ours.flatMap((r) => (r.converge ? [r.converge.convergeSeconds] : []));
  const samples = floorSamples(floor);
  if (converge.length > 0 && samples.length > 0) {
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    floor.ratio = round(median(converge) / mean, 2);
    floor.ratioRange = [
      round(Math.min(...converge) / Math.max(...samples), 2),
      round(Math.max(...converge) / Math.min(...samples), 2),
    ];
  }
  results.phase = 'done';
}

process.exitCode = await main();
// Informers, pools and timers may hold the event loop; everything this run started has been stopped.
process.exit();
