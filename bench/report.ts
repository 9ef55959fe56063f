import type { FloorPass } from './floor.js';
import type { BenchResults, Distribution } from './results.js';
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

/** The plain-text report (stdout). */
export function formatReport(r: BenchResults): string {
  const s = r.settings;
  const out: string[] = [];
  out.push(
    `recon8s controller benchmark: --apps ${s.apps} --mysql ${s.mysql} --workers ${s.workers} (resync ${s.resyncSeconds} s; ${s.cpus} CPUs; node ${s.node}; kube ${s.kubernetes ?? '?'})`,
  );
  out.push(`source: ${s.git}; controller: ${s.controllerEntry}`);
  out.push(
    `status: ${r.status}${r.phase && r.status !== 'complete' ? ` (during ${r.phase})` : ''}${r.error ? ` — ${r.error}` : ''}`,
  );
  if (r.controlPlaneStartSeconds !== undefined)
    out.push(
      `control plane (etcd + kube-apiserver, no kcm) started in ${r.controlPlaneStartSeconds} s; controller process started (informers synced) in ${r.controllerStartSeconds ?? '?'} s`,
    );
  const w = r.workload;
  if (w)
    out.push(
      `workload: ${w.resources} resources (${w.apps} Apps of which ${w.autoscaledApps} autoscaled, ${w.mysqlClusters} MySQLClusters) → ${w.children} children (${kv(w.childrenByKind)}); render ${w.renderMsPerResource} ms/resource`,
    );

  if (r.partial) {
    const p = r.partial;
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
  if (r.create)
    out.push(
      `  create: ${w?.resources ?? '?'} CRs in ${r.create.seconds} s (${r.create.perSecond}/s, concurrency ${s.createConcurrency}), errors ${r.create.errors}${r.create.firstError ? ` (${r.create.firstError})` : ''}`,
    );
  const c = r.converge;
  if (c) {
    out.push(
      `  CONVERGED (every child exists, every CR observedGeneration == generation): ${c.convergeSeconds} s after the first create`,
    );
    out.push(`  work queue idle: ${c.quietSeconds} s; ${c.reconcilesPerResource} reconciles per resource`);
    out.push('', '2. API requests during convergence (first create → queue idle)');
    out.push(...phaseLines(c));
  } else out.push('  not converged');

  out.push('', '3. Writes during one steady-state resync');
  if (r.resync) {
    out.push(
      `  CONTROLLER WRITES: ${r.resync.controllerWrites} (rest_client); APISERVER WRITES: ${r.resync.apiServerWrites}; ${r.resync.reconciles} reconciles (expected >= ${r.resync.expectedReconciles}) in ${r.resync.seconds} s`,
    );
    out.push(...phaseLines(r.resync));
  } else out.push('  not measured');

  out.push('', '4. Latency from a spec change to the child change');
  if (r.latency) {
    const l = r.latency;
    out.push(`  ${l.changes} Apps: spec.replicas 2 → 3 at ${l.perSecond}/s; timed out ${l.timedOut}`);
    out.push(`  PATCH sent → Deployment.spec.replicas seen (ms): ${dist(l.specToChildMs)}`);
    out.push(`  the PATCH alone (ms):                            ${dist(l.patchMs)}`);
    out.push(
      `  controller writes per change: ${l.controllerWritesPerChange} (${l.figures.controllerWrites} writes, ${l.figures.reconciles} reconciles for ${l.changes} changes)`,
    );
    out.push(...phaseLines(l.figures));
  } else out.push('  not measured');

  out.push('', '5. Controller memory (child process, /proc/<pid>/status)');
  const m = r.memory;
  if (m) {
    out.push(
      `  controller: idle after start ${m.controllerIdleMiB} MiB RSS; PEAK (VmHWM) ${m.controllerPeakMiB ?? '?'} MiB; at the end ${m.controllerFinalRssMiB ?? '?'} MiB`,
    );
    out.push(`  peak RSS by phase (MiB): ${kv(m.controllerPeakByPhaseMiB)}`);
    out.push(
      `  bench process (not the controller): ${m.benchAtStartMiB} MiB at start, ${m.benchBeforeControllerMiB} MiB with its watches before the controller started`,
    );
  }
  if (r.restart) {
    const x = r.restart;
    out.push('', '3b. Controller restart (cold cache): first full pass');
    out.push(
      `  started in ${x.startSeconds} s, full pass done (queue idle) ${x.passSeconds} s after spawn; peak RSS ${x.peakRssMiB} MiB; CONTROLLER WRITES ${x.controllerWrites}, APISERVER WRITES ${x.apiServerWrites}`,
    );
    out.push(...phaseLines(x));
    out.push(`  its log lines: ${kv(x.logs)}`);
  }

  out.push('', '6. The floor: render() + server-side apply, no informers/diff/status/events (separate namespaces)');
  const f = r.floor;
  const pass = (p: FloorPass | undefined): string =>
    p
      ? `${p.objects} objects in ${p.seconds} s (${p.objectsPerSecond}/s, concurrency ${s.workers}), errors ${p.errors}${p.firstError ? ` (${p.firstError})` : ''}`
      : 'not measured';
  if (f) {
    out.push(`  create, before the controller ran: ${pass(f.before)}`);
    out.push(`  create, after the controller ran:  ${pass(f.after)}`);
    out.push(`  the same objects again (what a diff-less loop sends every resync): ${pass(f.noop)}`);
    out.push(
      `  RATIO controller converge / floor create: ${f.ratio ?? '?'}x (${f.ratioRange ? `${f.ratioRange[0]}–${f.ratioRange[1]}x against each floor sample` : '?'})`,
    );
    out.push(
      `  steady-state writes per resync: floor ${f.steadyStateWrites?.floor ?? '?'} vs controller ${f.steadyStateWrites?.controller ?? '?'}`,
    );
  } else out.push('  not measured');

  out.push('', 'Where time goes: CPU seconds per process and phase');
  const phases: [string, PhaseFigures | undefined, number | undefined][] = [
    ['converge', c, c?.seconds],
    ['resync', r.resync, r.resync?.seconds],
    ['latency', r.latency?.figures, r.latency?.figures.seconds],
    ['restart', r.restart, r.restart?.seconds],
  ];
  const names = ['controller', 'kube-apiserver', 'etcd', 'bench', 'others'];
  const rows: (string | number)[][] = phases
    .filter(([, p]) => p)
    .map(([name, p, secs]) => [name, secs ?? 0, ...names.map((n) => p?.cpuSeconds[n] ?? '-')]);
  for (const [name, p] of [
    ['floor create (before)', f?.before],
    ['floor create (after)', f?.after],
    ['floor no-op re-apply', f?.noop],
  ] as const) {
    if (p) rows.push([name, p.seconds, ...names.map((n) => p.cpuSeconds[n] ?? '-')]);
  }
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

  if (r.controllerLogs) out.push('', `controller log lines (first controller): ${kv(r.controllerLogs)}`);
  if (r.benchWatchRestarts)
    out.push(
      `the bench's own watch restarts (its convergence view lags while one reconnects): ${kv(r.benchWatchRestarts)}`,
    );
  if (r.benchEventLoopDelayMs)
    out.push(
      `the bench's event-loop delay (bounds its timestamps): p99 ${r.benchEventLoopDelayMs.p99} ms, max ${r.benchEventLoopDelayMs.max} ms`,
    );
  return out.join('\n');
}
