import type { FloorPass } from './floor.js';
import { formatComparison } from './compare.js';
import type { BenchResults, Distribution, RoundResult } from './results.js';
import type { PhaseFigures } from './snapshot.js';

/** Left-aligned first column, right-aligned numbers. */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly (string | number)[])[],
  indent = '  ',
): string {
  const all = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...all.map((r) => String(r[i] ?? '').length)));
  const line = (r: readonly (string | number)[]): string =>
    indent +
    r
      .map((v, i) => (i === 0 ? String(v).padEnd(widths[i] ?? 0) : String(v).padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), indent + widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const kv = (o: Readonly<Record<string, number>>): string =>
  Object.keys(o).length === 0
    ? 'none'
    : Object.entries(o)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ');
const dist = (d: Distribution): string =>
  `p50 ${d.p50}  p90 ${d.p90}  p99 ${d.p99}  max ${d.max}  mean ${d.mean}  (n=${d.count})`;

function requestTable(f: PhaseFigures): string {
  const rows = Object.entries(f.apiServerRequests).map(([k, v]) => {
    const [verb = '', resource = ''] = k.split(' ');
    return [verb, resource, v];
  });
  return formatTable(['verb', 'resource', 'apiserver'], rows, '    ');
}

function phaseLines(f: PhaseFigures): string[] {
  return [
    `  reconciles: ${f.reconciles} (${kv(f.reconcilesByResult)}); children sent: ${kv(f.childApplies)}; prunes: ${f.prunes}`,
    `  controller requests (rest_client_requests_total): ${f.controllerRequestsTotal} — ${kv(f.controllerRequests)}; writes ${f.controllerWrites}`,
    `  apiserver requests on the controller's resources (apiserver_request_total, bench's own subtracted), writes ${f.apiServerWrites}:`,
    requestTable(f),
    `    bench's own in this window: ${kv(f.benchOwnRequests)}`,
    `  writes that reached etcd (a no-op apply does not): ${kv(f.etcdWrites)}`,
    `  mean reconcile ${f.meanReconcileMs} ms; mean queue wait ${f.meanQueueWaitMs} ms; mean request ms by method: ${kv(f.meanRequestMs)}; watch restarts: ${kv(f.watchRestarts)}`,
  ];
}

function header(r: BenchResults): string[] {
  const s = r.settings;
  const out: string[] = [];
  out.push(
    `recon8s controller benchmark: --apps ${s.apps} --mysql ${s.mysql} --workers ${s.workers} --rounds ${s.rounds} (resync ${s.resyncSeconds} s; ${s.cpus} CPUs; node ${s.node}; kube ${s.kubernetes ?? '?'})`,
  );
  out.push(`source: ${s.git}; controller: ${s.controllerEntry}`);
  if (s.peer)
    out.push(
      `peer: ${s.peerDir ?? '?'} → ${s.peer.binary}${s.peer.built ? ` (built in ${s.peer.buildSeconds} s)` : ' (cached build)'}; same Apps, its own namespace, after recon8s in each round`,
    );
  out.push(
    `status: ${r.status}${r.phase && r.status !== 'complete' ? ` (during ${r.phase})` : ''}${r.error ? ` — ${r.error}` : ''}`,
  );
  if (r.controlPlaneStartSeconds !== undefined)
    out.push(`control plane (etcd + kube-apiserver, no kcm) started in ${r.controlPlaneStartSeconds} s`);
  const w = r.workload;
  if (w)
    out.push(
      `workload ${s.workload}: ${w.resources} resources (${w.apps} Apps of which ${w.autoscaledApps} autoscaled, ${w.mysqlClusters} MySQLClusters) → ${w.children} children (${kv(w.childrenByKind)}); render ${w.renderMsPerResource} ms/resource`,
    );
  return out;
}

/** Everything measured in one controller's pass (sections 1–5 and 3b). */
function roundDetail(r: BenchResults, x: RoundResult): string[] {
  const s = r.settings;
  const out: string[] = [];
  out.push(
    '',
    `=== round ${x.round}: ${x.side} (namespace ${x.namespace}; expects ${x.childKinds.join(', ')} per resource) ===`,
  );
  out.push(`controller process started (caches synced) in ${x.controllerStartSeconds ?? '?'} s`);
  if (x.partial) {
    const p = x.partial;
    out.push('', 'Where the run stopped (totals since the current controller started):');
    out.push(
      `  children ${p.watch.childrenPresent}/${p.watch.childrenExpected}; CRs with observedGeneration == generation ${p.watch.resourcesObserved}/${p.watch.resources}`,
    );
    out.push(
      `  reconciles: ${kv(p.reconcilesByResult)}; children sent: ${kv(p.childApplies)}; controller requests: ${kv(p.controllerRequests)}`,
    );
    out.push(`  CPU seconds in the ${p.phaseWallSeconds} s of the phase under way: ${kv(p.phaseCpuSeconds)}`);
    out.push('  last controller log lines:', ...p.lastControllerLogLines.map((l) => `    ${l}`));
  }

  out.push('', '1. Time to converge');
  if (x.create)
    out.push(
      `  create: ${r.workload?.resources ?? '?'} CRs in ${x.create.seconds} s (${x.create.perSecond}/s, concurrency ${s.createConcurrency}), errors ${x.create.errors}${x.create.firstError ? ` (${x.create.firstError})` : ''}`,
    );
  const c = x.converge;
  if (c) {
    out.push(
      `  CONVERGED (every child exists, every CR observedGeneration == generation): ${c.convergeSeconds} s after the first create`,
    );
    out.push(`  work queue idle: ${c.quietSeconds} s; ${c.reconcilesPerResource} reconciles per resource`);
    out.push('', '2. API requests during convergence (first create → queue idle)');
    out.push(...phaseLines(c));
  } else out.push('  not converged');

  if (x.idle) {
    const i = x.idle;
    const perMinute = (n: number): number => Math.round((n / Math.max(i.seconds, 1)) * 60 * 100) / 100;
    out.push('', `2b. At rest: ${i.seconds} s in which nothing changed (--idle-seconds)`);
    out.push(
      `  CONTROLLER REQUESTS: ${i.controllerRequestsTotal} (${perMinute(i.controllerRequestsTotal)}/min); reconciles ${i.reconciles}; controller CPU ${i.cpuSeconds.controller ?? '?'} s (${perMinute(i.cpuSeconds.controller ?? 0)} s/min)${i.resyncsInWindow > 0 ? `; the window held ${i.resyncsInWindow} resync period(s): not at rest` : ''}`,
    );
    out.push(...phaseLines(i));
  }

  out.push('', '3. Writes during one steady-state resync');
  if (x.resync) {
    out.push(
      `  CONTROLLER WRITES: ${x.resync.controllerWrites} (rest_client); APISERVER WRITES: ${x.resync.apiServerWrites}; ${x.resync.reconciles} reconciles (expected >= ${x.resync.expectedReconciles}) in ${x.resync.seconds} s`,
    );
    out.push(...phaseLines(x.resync));
  } else out.push(x.side === 'peer' ? "  n/a: the peer keeps controller-runtime's 10 h SyncPeriod" : '  not measured');

  out.push('', '4. Latency from a spec change to the child change');
  if (x.latency) {
    const l = x.latency;
    out.push(`  ${l.changes} Apps: spec.replicas 2 → 3 at ${l.perSecond}/s; timed out ${l.timedOut}`);
    out.push(`  PATCH sent → Deployment.spec.replicas seen (ms): ${dist(l.specToChildMs)}`);
    out.push(`  the PATCH alone (ms):                            ${dist(l.patchMs)}`);
    out.push(
      `  controller writes per change: ${l.controllerWritesPerChange} (${l.figures.controllerWrites} writes, ${l.figures.reconciles} reconciles for ${l.changes} changes)`,
    );
    out.push(...phaseLines(l.figures));
  } else out.push('  not measured');

  out.push('', '5. Controller memory (child process, /proc/<pid>/status)');
  const m = x.memory;
  if (m) {
    out.push(
      `  controller: idle after start ${m.controllerIdleMiB} MiB RSS; PEAK (VmHWM) ${m.controllerPeakMiB ?? '?'} MiB; at the end ${m.controllerFinalRssMiB ?? '?'} MiB`,
    );
    out.push(`  peak RSS by phase (MiB): ${kv(m.controllerPeakByPhaseMiB)}`);
  }
  if (x.restart) {
    const y = x.restart;
    out.push('', '3b. Controller restart (cold cache): first full pass');
    out.push(
      `  started in ${y.startSeconds} s, work queue idle ${y.passSeconds} s after spawn; peak RSS ${y.peakRssMiB} MiB; CONTROLLER WRITES ${y.controllerWrites}, APISERVER WRITES ${y.apiServerWrites}`,
    );
    out.push(...phaseLines(y));
    out.push(`  its log lines: ${kv(y.logs)}`);
  }
  if (x.controllerLogs) out.push('', `controller log lines (first controller process): ${kv(x.controllerLogs)}`);
  if (x.benchWatchRestarts && Object.keys(x.benchWatchRestarts).length > 0)
    out.push(
      `the bench's own watch restarts (its convergence view lags while one reconnects): ${kv(x.benchWatchRestarts)}`,
    );
  return out;
}

/** One line for a round after the first: the comparison table has its figures too. */
function roundLine(x: RoundResult): string {
  const parts = [
    `converged ${x.converge?.convergeSeconds ?? '?'} s`,
    `requests ${x.converge?.controllerRequestsTotal ?? '?'} (writes ${x.converge?.controllerWrites ?? '?'})`,
    `reconciles ${x.converge?.reconciles ?? '?'}`,
    `controller CPU ${x.converge?.cpuSeconds.controller ?? '?'} s`,
    `p50/p99 ${x.latency?.specToChildMs.p50 ?? '?'}/${x.latency?.specToChildMs.p99 ?? '?'} ms`,
    `peak RSS ${x.memory?.controllerPeakMiB ?? '?'} MiB`,
    `restart writes ${x.restart?.controllerWrites ?? '?'}, idle after ${x.restart?.passSeconds ?? '?'} s`,
  ];
  return `  round ${x.round} ${x.side} (${x.namespace}): ${parts.join('; ')}${x.partial ? ' — run ended during it' : ''}`;
}

/** The plain-text report (stdout). */
export function formatReport(r: BenchResults): string {
  const s = r.settings;
  const out: string[] = header(r);
  const later: RoundResult[] = [];
  for (const x of r.rounds) {
    if (x.round === 1 || x.partial) out.push(...roundDetail(r, x));
    else later.push(x);
  }
  if (later.length > 0) out.push('', 'Later rounds (details in the JSON line):', ...later.map(roundLine));

  out.push('', '6. The floor: render() + server-side apply, no informers/diff/status/events (separate namespaces)');
  const f = r.floor;
  const pass = (p: FloorPass | undefined): string =>
    p
      ? `${p.objects} objects in ${p.seconds} s (${p.objectsPerSecond}/s, concurrency ${s.workers}), errors ${p.errors}${p.firstError ? ` (${p.firstError})` : ''}`
      : 'not measured';
  if (f) {
    out.push(`  create, before the controllers ran: ${pass(f.before)}`);
    out.push(`  create, after the controllers ran:  ${pass(f.after)}`);
    out.push(`  the same objects again (what a diff-less loop sends every resync): ${pass(f.noop)}`);
    out.push(
      `  RATIO recon8s converge / floor create: ${f.ratio ?? '?'}x (median over rounds; ${f.ratioRange ? `${f.ratioRange[0]}–${f.ratioRange[1]}x against each floor sample and round` : '?'})`,
    );
    out.push(
      `  steady-state writes per resync: floor ${f.steadyStateWrites?.floor ?? '?'} vs recon8s ${f.steadyStateWrites?.controller ?? '?'}`,
    );
  } else out.push('  not measured');

  out.push('', 'Where time goes: CPU seconds per process and phase');
  const rows: (string | number)[][] = [];
  const names = ['controller', 'kube-apiserver', 'etcd', 'bench', 'others'];
  const add = (name: string, cpu: Record<string, number> | undefined, secs: number | undefined): void => {
    if (cpu) rows.push([name, secs ?? 0, ...names.map((n) => cpu[n] ?? '-')]);
  };
  for (const x of r.rounds) {
    const tag = `r${x.round} ${x.side}`;
    add(`${tag} converge`, x.converge?.cpuSeconds, x.converge?.seconds);
    add(`${tag} resync`, x.resync?.cpuSeconds, x.resync?.seconds);
    add(`${tag} latency`, x.latency?.figures.cpuSeconds, x.latency?.figures.seconds);
    add(`${tag} restart`, x.restart?.cpuSeconds, x.restart?.seconds);
  }
  add('floor create (before)', f?.before?.cpuSeconds, f?.before?.seconds);
  add('floor create (after)', f?.after?.cpuSeconds, f?.after?.seconds);
  add('floor no-op re-apply', f?.noop?.cpuSeconds, f?.noop?.seconds);
  for (const row of rows) {
    const wall = Number(row[1]);
    const others = Number(row[names.indexOf('others') + 2]);
    row.push(wall > 0 && Number.isFinite(others) ? `${Math.round((others / (wall * s.cpus)) * 100)}%` : '-');
  }
  out.push(formatTable(['phase', 'wall s', ...names, 'noise'], rows));
  out.push(
    `  (${s.cpus} CPUs: a row is CPU-bound when its CPU seconds add up to ~${s.cpus}x its wall time. "others" is the rest of the`,
  );
  out.push(
    `  machine — other people's builds and tests — and "noise" its share of the machine's capacity in that phase.`,
  );
  out.push(`  Load average at start ${r.loadAverage?.atStart ?? '?'}, at the end ${r.loadAverage?.atEnd ?? '?'}.)`);

  if (r.benchMemory)
    out.push(
      '',
      `bench process (not the controller): ${r.benchMemory.atStartMiB} MiB at start, ${r.benchMemory.beforeControllerMiB ?? '?'} MiB with its watches before the first controller started`,
    );
  if (r.benchEventLoopDelayMs)
    out.push(
      `the bench's event-loop delay (bounds its timestamps): p99 ${r.benchEventLoopDelayMs.p99} ms, max ${r.benchEventLoopDelayMs.max} ms`,
    );

  if (r.comparison && r.comparison.length > 0) {
    const withPeer = r.rounds.some((x) => x.side === 'peer');
    const done = Math.max(0, ...r.rounds.map((x) => x.round));
    out.push(
      '',
      withPeer
        ? `recon8s vs the controller-runtime peer: median over ${done} round(s) (min–max); ratio = recon8s ÷ peer per round, median (min–max)`
        : `recon8s: median over ${done} round(s) (min–max)`,
    );
    out.push(
      formatComparison(r.comparison, `N = ${s.apps} Apps${s.mysql > 0 ? ` + ${s.mysql} MySQLClusters` : ''}`, withPeer),
    );
    if (withPeer)
      out.push(
        `  ${
          s.workload === 'peer-job'
            ? 'Workload peer-job: both sides render the same Deployment and Service per App (recon8s with spec.disruptionBudget.enabled and spec.networkPolicy.enabled false and no autoscaling); recon8s also writes its ApplySet parent metadata, Events and conditions.'
            : 'Workload realistic: the peer renders a Deployment and a Service per App; recon8s adds a PodDisruptionBudget, an HPA for autoscaled Apps, its ApplySet parent metadata, Events and conditions.'
        } The peer's requests are its own rest_client counts; the API server's counts are the bench's own subtracted, each controller running alone. The floor is recon8s's render of the same workload.`,
      );
  }
  return out.join('\n');
}
