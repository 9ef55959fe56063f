// One controller's pass in its own namespace: create → converge, (resync), spec-change latency, memory,
// and a restart with a cold cache. recon8s and the controller-runtime peer go through the same code;
// only how their process starts and what they render differ (a ControllerSpec).
import { HttpMethod } from '@kubernetes/client-node';
import type { KubeClient, RawRequest } from '../lib/kube/index.js';
import { apiError } from '../lib/kube/index.js';
import type { KubernetesObject } from '../constructs/index.js';
import type { RequestLedger } from './api-requests.js';
import type { BenchArgs } from './args.js';
import type { WatchedType } from './cluster-watch.js';
import { ClusterWatch, OWNER_TYPES } from './cluster-watch.js';
import type { ControllerProcess } from './controller-process.js';
import { controllerFigures } from './controller-process.js';
import { runPaced, runPool, sleep, until } from './pool.js';
import { totalBy } from './prometheus.js';
import { RssSampler, cpuSnapshot, diffCpu, round } from './proc-stats.js';
import type { RoundResult, Side } from './results.js';
import { distribution } from './results.js';
import { comparePhase, takeSnapshot } from './snapshot.js';
import type { Snapshot, SnapshotSources } from './snapshot.js';
import type { BenchResource } from './workload.js';
import { GROUP_VERSION, INITIAL_REPLICAS, hasFixedReplicas, refOf, resourceObject } from './workload.js';

/** The work queue counts as idle once it has been empty, with no worker busy and no new reconcile, this long. */
export const QUIET_MS = 2_000;

/** What the run has running, for the cleanup and for a report of where an early end found it. */
export interface Started {
  controller?: ControllerProcess;
  sampler?: RssSampler;
  watch?: ClusterWatch;
  /** Fills in what can still be read when the run ends early. */
  partial?: () => Promise<void>;
}

/** How one controller is run. */
export interface ControllerSpec {
  readonly side: Side;
  /** Starts a controller process that watches `namespace` and resolves once its caches have synced. */
  start(namespace: string): Promise<ControllerProcess>;
  /** The child kinds it renders; undefined: every child render() gives. */
  readonly childKinds?: ReadonlySet<string>;
  /** Whether to wait for (and measure) a resync: the peer keeps controller-runtime's 10 h SyncPeriod. */
  readonly resync: boolean;
}

/** What every round shares. */
export interface RoundContext {
  readonly args: BenchArgs;
  readonly resources: readonly BenchResource[];
  /** render() of each resource, in the same order (namespace aside, names are what matter). */
  readonly rendered: readonly (readonly KubernetesObject[])[];
  /** The bench's client whose requests are noted in `ledger` (subtracted from the API server's counts). */
  readonly bench: KubeClient;
  /** Admin credentials, uncounted: the API server's /metrics. */
  readonly admin: KubeClient;
  readonly ledger: RequestLedger;
  /** The child types the bench watches (every kind recon8s renders). */
  readonly childTypes: readonly WatchedType[];
  /** etcd and kube-apiserver pids, by name, for CPU figures. */
  readonly componentPids: Readonly<Record<string, number>>;
  readonly started: Started;
  readonly progress: (message: string) => void;
  /** Names the phase under way (for a timeout's report). */
  readonly setPhase: (phase: string) => void;
  /** Called once the round's watches are up, before its controller starts (the bench's memory then). */
  readonly beforeController?: () => void;
}

const json = { 'Content-Type': 'application/json' };

/** Creates the round's namespace and what a user would have made beforehand (the backup volumes). */
async function prepareNamespace(ctx: RoundContext, namespace: string): Promise<void> {
  await ctx.bench.request({
    method: HttpMethod.POST,
    path: '/api/v1/namespaces',
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }),
    headers: json,
  });
  // The backup volumes the MySQLClusters name exist, as a user makes them (recon8s never creates them):
  // without them every cluster is Degraded/BackupVolumeMissing and looked at again every 30 s.
  for (const r of ctx.resources) {
    const claim = (r.spec as { backup?: { persistentVolumeClaimName?: string } }).backup?.persistentVolumeClaimName;
    if (claim === undefined) continue;
    await ctx.bench.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${namespace}/persistentvolumeclaims`,
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: claim },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      }),
      headers: json,
    });
  }
}

/**
 * Runs one controller through the phases, filling `result` as each completes (so an early end still
 * reports what was measured). Stops its processes and watches before it returns or throws.
 */
export async function runRound(ctx: RoundContext, spec: ControllerSpec, result: RoundResult): Promise<void> {
  const { resources, started } = ctx;
  const N = resources.length;
  const namespace = result.namespace;
  const label = `r${result.round} ${spec.side}`;
  const say = (m: string): void => ctx.progress(`[${label}] ${m}`);
  const phase = (name: string): void => ctx.setPhase(`${label}: ${name}`);

  phase('namespace');
  await prepareNamespace(ctx, namespace);
  const watch = new ClusterWatch(ctx.bench, namespace, ctx.childTypes, OWNER_TYPES);
  started.watch = watch;
  await watch.start();
  const deploymentOf = new Map<string, string>();
  resources.forEach((r, i) => {
    const children = (ctx.rendered[i] ?? []).filter((o) => spec.childKinds?.has(o.kind) ?? true);
    watch.expect(
      refOf(r.kind, r.name),
      children.map((o) => refOf(o.kind, o.metadata.name)),
    );
    const d = children.find((o) => o.kind === 'Deployment');
    if (d) deploymentOf.set(r.name, d.metadata.name);
  });
  ctx.beforeController?.();

  try {
    await phases(ctx, spec, result, watch, deploymentOf, say, phase, N);
  } finally {
    started.sampler?.stop();
    started.sampler = undefined;
    await started.controller?.stop().catch(() => undefined);
    started.controller = undefined;
    result.benchWatchRestarts = { ...watch.restarts };
    await watch.stop().catch(() => undefined);
    started.watch = undefined;
  }
}

async function phases(
  ctx: RoundContext,
  spec: ControllerSpec,
  result: RoundResult,
  watch: ClusterWatch,
  deploymentOf: ReadonlyMap<string, string>,
  say: (m: string) => void,
  phase: (name: string) => void,
  N: number,
): Promise<void> {
  const { args, resources, started, bench } = ctx;
  const namespace = result.namespace;

  // ---- the controller, as a child process ------------------------------------------------------
  phase('controller start');
  const startController = async (): Promise<{ proc: ControllerProcess; seconds: number }> => {
    const t0 = performance.now();
    const proc = await spec.start(namespace);
    return { proc, seconds: round((performance.now() - t0) / 1000, 2) };
  };
  const first = await startController();
  let controller = first.proc;
  started.controller = controller;
  result.controllerStartSeconds = first.seconds;
  const sampler = new RssSampler(controller.pid);
  started.sampler = sampler;
  sampler.setPhase('idle');
  say(`controller pid ${controller.pid} started in ${first.seconds} s; metrics ${controller.metricsUrl}`);
  await sleep(1_000);
  const controllerIdleMiB = round(sampler.latest()?.rssMiB ?? 0, 1);
  const memory = (): NonNullable<RoundResult['memory']> => ({
    controllerIdleMiB,
    controllerPeakMiB: round(sampler.latest()?.hwmMiB ?? NaN, 1),
    controllerPeakByPhaseMiB: sampler.peaksByPhase(),
    controllerFinalRssMiB: round(sampler.latest()?.rssMiB ?? NaN, 1),
  });
  result.memory = memory();

  const sources: SnapshotSources = {
    get controller() {
      return controller;
    },
    admin: ctx.admin,
    ledger: ctx.ledger,
    pids: () => ({ controller: controller.running ? controller.pid : undefined, ...ctx.componentPids }),
  };
  let phaseStart = { at: performance.now(), cpu: cpuSnapshot({}) };
  const beginPhase = (name: string): void => {
    phase(name);
    sampler.setPhase(name);
    phaseStart = { at: performance.now(), cpu: cpuSnapshot(sources.pids()) };
  };
  started.partial = async () => {
    if (started.sampler === sampler) result.memory = memory();
    const cpuNow = cpuSnapshot(sources.pids());
    const m = controller.running ? await controller.metrics() : [];
    result.partial = {
      watch: watch.progress(),
      reconcilesByResult: totalBy(m, 'controller_runtime_reconcile_total', ['result']),
      childApplies: totalBy(m, 'recon8s_apply_total', ['kind', 'result']),
      controllerRequests: totalBy(m, 'rest_client_requests_total', ['method', 'code']),
      lastControllerLogLines: controller.lastLines(5).map((l) => l.slice(0, 400)),
      phaseCpuSeconds: diffCpu(cpuNow, phaseStart.cpu),
      phaseWallSeconds: round((performance.now() - phaseStart.at) / 1000, 1),
    };
    if (!result.controllerLogs) result.controllerLogs = controller.logs();
  };
  const snap = (): Promise<Snapshot> => takeSnapshot(sources);
  /** Resolves with the moment the queue went idle (then stayed idle for QUIET_MS). */
  const waitQuiet = async (timeoutMs: number): Promise<number> => {
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
    return stableSince;
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
        const f = controllerFigures(m);
        say(
          `  created ${created}/${N}; children ${p.childrenPresent}/${p.childrenExpected}; CRs observed ${p.resourcesObserved}/${p.resources}; reconciles ${f.reconciles}, queue ${f.queueDepth}; controller RSS ${round(sampler.latest()?.rssMiB ?? 0)} MiB`,
        );
      },
      () => undefined,
    );
  }, 5_000);
  try {
    say(`creating ${N} resources in ${namespace} (concurrency ${args.createConcurrency})`);
    const { errors } = await runPool(resources, args.createConcurrency, async (r) => {
      await bench.request({
        method: HttpMethod.POST,
        path: `/apis/${GROUP_VERSION}/namespaces/${namespace}/${r.plural}`,
        body: JSON.stringify(resourceObject(r, namespace)),
        headers: json,
      });
      created++;
    });
    const createSeconds = (performance.now() - t0) / 1000;
    result.create = {
      seconds: round(createSeconds, 2),
      perSecond: Math.round(created / createSeconds),
      errors: errors.length,
      ...(errors[0] !== undefined ? { firstError: apiError(errors[0]).message } : {}),
    };
    say(`created ${created} in ${createSeconds.toFixed(1)} s; waiting for convergence`);
    if (created < N) throw new Error(`${N - created} creates failed: ${result.create.firstError ?? ''}`);
    const convergedAt = await watch.converged();
    say(`converged in ${((convergedAt - t0) / 1000).toFixed(1)} s; waiting for the queue to go idle`);
    const idleAt = await waitQuiet(180_000);
    const after = await snap();
    const figures = comparePhase(before, after);
    result.converge = {
      ...figures,
      seconds: round((after.at - t0) / 1000, 2),
      convergeSeconds: round((convergedAt - t0) / 1000, 2),
      quietSeconds: round((Math.max(idleAt, convergedAt) - t0) / 1000, 2),
      reconcilesPerResource: round(figures.reconciles / Math.max(N, 1), 2),
    };
  } finally {
    clearInterval(ticker);
  }
  result.memory = memory();

  // ---- 2b: at rest: what converged resources cost while nothing changes ---------------------------
  if (args.idleSeconds > 0) {
    beginPhase('idle');
    say(`at rest: ${args.idleSeconds} s in which nothing changes`);
    const i0 = await snap();
    await sleep(args.idleSeconds * 1000);
    const i1 = await snap();
    const figures = comparePhase(i0, i1);
    const sinceStart = (i1.at - i0.at) / 1000;
    result.idle = { ...figures, resyncsInWindow: Math.floor(sinceStart / args.resyncSeconds) };
    say(
      `at rest: ${figures.controllerRequestsTotal} controller requests, ${figures.reconciles} reconciles, ${figures.cpuSeconds.controller ?? '?'} s controller CPU in ${figures.seconds} s`,
    );
  }
  // ---- 3: one steady-state resync --------------------------------------------------------------
  if (spec.resync) {
    beginPhase('resync');
    say(`waiting for a resync (every ${args.resyncSeconds} s): >= ${N} reconciles`);
    const r0 = await snap();
    const base = controllerFigures(r0.controller).reconciles;
    await until(
      `${N} resync reconciles`,
      async () => controllerFigures(await controller.metrics()).reconciles - base >= N,
      args.resyncSeconds * 2_000 + 120_000,
    );
    await waitQuiet(120_000);
    const r1 = await snap();
    result.resync = { ...comparePhase(r0, r1), expectedReconciles: N };
    say(
      `resync: ${result.resync.reconciles} reconciles, controller writes ${result.resync.controllerWrites}, apiserver writes ${result.resync.apiServerWrites}`,
    );
    result.memory = memory();
  }

  // ---- 4: spec change → child change latency ---------------------------------------------------
  beginPhase('latency');
  const sample = resources.filter(hasFixedReplicas).slice(0, args.latencySample);
  if (sample.length > 0) {
    say(`latency: changing spec.replicas of ${sample.length} Apps at ${args.latencyRate}/s`);
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
        path: `/apis/${GROUP_VERSION}/namespaces/${namespace}/apps/${r.name}`,
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
    result.latency = {
      changes: sample.length,
      perSecond: args.latencyRate,
      timedOut,
      specToChildMs: distribution(latencies),
      patchMs: distribution(patchMs),
      figures,
      controllerWritesPerChange: round(figures.controllerWrites / sample.length, 2),
    };
    say(`latency: p50 ${result.latency.specToChildMs.p50} ms, p99 ${result.latency.specToChildMs.p99} ms`);
  }

  // ---- 5: memory of the first controller; then stop it -----------------------------------------
  phase('memory');
  result.memory = memory();
  result.controllerLogs = controller.logs();
  say(`controller peak RSS (VmHWM) ${result.memory.controllerPeakMiB} MiB; stopping it`);
  sampler.stop();
  started.sampler = undefined;
  await controller.stop();

  // ---- 3b: a restart: a cold cache's first full pass -------------------------------------------
  if (args.restartCheck) {
    phase('restart');
    say('restart: a new controller process, cold cache; counting the writes of its first full pass');
    const s0 = await snap();
    const spawnAt = performance.now();
    const second = await startController();
    controller = second.proc;
    started.controller = controller;
    const sampler2 = new RssSampler(controller.pid);
    started.sampler = sampler2;
    await until(
      `${N} reconciles after the restart`,
      async () => controllerFigures(await controller.metrics()).reconciles >= N,
      300_000,
      250,
    );
    const idleAt = await waitQuiet(120_000);
    const s1 = await snap();
    result.restart = {
      ...comparePhase(s0, s1),
      startSeconds: second.seconds,
      passSeconds: round((idleAt - spawnAt) / 1000, 2),
      peakRssMiB: round(sampler2.latest()?.hwmMiB ?? NaN, 1),
      logs: controller.logs(),
    };
    sampler2.stop();
    started.sampler = undefined;
    say(
      `restart: queue idle ${result.restart.passSeconds} s after spawn, controller writes ${result.restart.controllerWrites}, apiserver writes ${result.restart.apiServerWrites}`,
    );
    await controller.stop();
  }
  started.partial = undefined;
}

/**
 * Empties and deletes a round's namespace and waits until it is gone, so the next round's API server
 * and etcd do not carry (nor cache, nor send watch events for) the previous round's objects. There is
 * no kube-controller-manager: no garbage collector and no namespace controller, so the bench deletes
 * each type's objects itself, then finalizes the namespace.
 */
export async function deleteNamespace(
  client: KubeClient,
  namespace: string,
  types: readonly WatchedType[],
  timeoutMs = 120_000,
): Promise<void> {
  const base = (t: WatchedType): string =>
    t.apiVersion.includes('/') ? `/apis/${t.apiVersion}` : `/api/${t.apiVersion}`;
  const all: WatchedType[] = [
    ...OWNER_TYPES,
    ...types,
    { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims' },
    { apiVersion: 'v1', kind: 'Event', plural: 'events' },
  ];
  const seen = new Set<string>();
  for (const t of all) {
    const path = `${base(t)}/namespaces/${namespace}/${t.plural}`;
    if (seen.has(path)) continue;
    seen.add(path);
    await send(client, { method: HttpMethod.DELETE, path });
  }
  const nsPath = `/api/v1/namespaces/${namespace}`;
  await send(client, { method: HttpMethod.DELETE, path: nsPath });
  await send(client, {
    method: HttpMethod.PUT,
    path: `${nsPath}/finalize`,
    body: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace },
      spec: { finalizers: [] },
    }),
    headers: json,
  });
  await until(
    `namespace ${namespace} to be gone`,
    async () => {
      try {
        await send(client, { path: nsPath });
        return false;
      } catch (e) {
        if (apiError(e).code === 404) return true;
        throw e;
      }
    },
    timeoutMs,
    250,
  );
}

/** A request whose answer is read to the end (a delete-collection answers with every object it deleted). */
async function send(client: KubeClient, req: RawRequest): Promise<void> {
  await client.request(req);
}
