import type { KubeClient } from '../lib/kube/index.js';
import {
  WRITE_METHODS,
  apiServerByVerb,
  benchEtcdWrites,
  etcdWrites,
  fetchApiServerRequests,
  sortKeys,
  subtractCounts,
  writesIn,
} from './api-requests.js';
import type { RequestLedger } from './api-requests.js';
import type { ControllerProcess } from './controller-process.js';
import type { Sample } from './prometheus.js';
import { diffSamples, total, totalBy } from './prometheus.js';
import type { CpuSnapshot } from './proc-stats.js';
import { cpuSnapshot, diffCpu, round } from './proc-stats.js';

/** Every counter the bench reads, at one moment. */
export interface Snapshot {
  readonly at: number;
  readonly controller: readonly Sample[];
  readonly apiServer: readonly Sample[];
  readonly benchOwn: Readonly<Record<string, number>>;
  readonly cpu: CpuSnapshot;
}

export interface SnapshotSources {
  readonly controller: ControllerProcess | undefined;
  readonly admin: KubeClient;
  readonly ledger: RequestLedger;
  /** Processes whose CPU is sampled, by name (the bench itself is always included). */
  readonly pids: () => Readonly<Record<string, number | undefined>>;
}

export async function takeSnapshot(src: SnapshotSources): Promise<Snapshot> {
  const [controller, apiServer] = await Promise.all([
    src.controller?.running ? src.controller.metrics() : Promise.resolve([]),
    fetchApiServerRequests(src.admin),
  ]);
  return {
    at: performance.now(),
    controller,
    apiServer,
    benchOwn: src.ledger.snapshot(),
    cpu: cpuSnapshot(src.pids()),
  };
}

/** What happened between two snapshots. */
export interface PhaseFigures {
  readonly seconds: number;
  /** controller_runtime_reconcile_total, by result. */
  readonly reconciles: number;
  readonly reconcilesByResult: Record<string, number>;
  /** recon8s_apply_total: children sent, by `kind result` (result = why: missing, spec-changed, drifted, error). */
  readonly childApplies: Record<string, number>;
  readonly prunes: number;
  /** The controller's own rest_client_requests_total, by `METHOD code`. */
  readonly controllerRequests: Record<string, number>;
  readonly controllerRequestsTotal: number;
  /** POST + PUT + PATCH + DELETE, from the controller's own metrics. */
  readonly controllerWrites: number;
  /** apiserver_request_total on the controller's resources, by `VERB resource`, minus the bench's own requests. */
  readonly apiServerRequests: Record<string, number>;
  readonly apiServerWrites: number;
  /** Writes that reached etcd on the controller's resources, by `operation resource` (bench's own subtracted). */
  readonly etcdWrites: Record<string, number>;
  /** The bench's own requests in the same window (already subtracted above). */
  readonly benchOwnRequests: Record<string, number>;
  /** CPU seconds used per process. */
  readonly cpuSeconds: Record<string, number>;
  readonly meanReconcileMs: number;
  /** Mean client-side latency per HTTP method, ms (watch: until the stream opened). */
  readonly meanRequestMs: Record<string, number>;
  readonly meanQueueWaitMs: number;
  /** recon8s_watch_restarts_total by `resource reason`. */
  readonly watchRestarts: Record<string, number>;
}

export function comparePhase(before: Snapshot, after: Snapshot): PhaseFigures {
  const c = diffSamples(after.controller, before.controller);
  const apiDiff = diffSamples(after.apiServer, before.apiServer);
  const api = apiServerByVerb(apiDiff);
  const benchOwn = subtractCounts(after.benchOwn, before.benchOwn);
  const apiMinusBench = subtractCounts(api, benchOwn);
  const byMethod = totalBy(c, 'rest_client_requests_total', ['method', 'code']);
  const mean = (name: string, filter?: (l: Readonly<Record<string, string>>) => boolean): number => {
    const count = total(c, `${name}_count`, filter);
    return count > 0 ? round((total(c, `${name}_sum`, filter) / count) * 1000, 2) : 0;
  };
  const verbs = Object.keys(totalBy(c, 'rest_client_request_duration_seconds_count', ['verb']));
  return {
    seconds: round((after.at - before.at) / 1000, 2),
    reconciles: total(c, 'controller_runtime_reconcile_total'),
    reconcilesByResult: totalBy(c, 'controller_runtime_reconcile_total', ['result']),
    childApplies: sortKeys(totalBy(c, 'recon8s_apply_total', ['kind', 'result'])),
    prunes: total(c, 'recon8s_prune_total'),
    controllerRequests: sortKeys(byMethod),
    controllerRequestsTotal: total(c, 'rest_client_requests_total'),
    controllerWrites: total(c, 'rest_client_requests_total', (l) => WRITE_METHODS.has(l.method ?? '')),
    apiServerRequests: apiMinusBench,
    apiServerWrites: writesIn(apiMinusBench),
    etcdWrites: subtractCounts(etcdWrites(apiDiff), benchEtcdWrites(benchOwn)),
    benchOwnRequests: benchOwn,
    cpuSeconds: diffCpu(after.cpu, before.cpu),
    meanReconcileMs: mean('controller_runtime_reconcile_time_seconds'),
    meanRequestMs: Object.fromEntries(
      verbs.map((v) => [v, mean('rest_client_request_duration_seconds', (l) => l.verb === v)]),
    ),
    meanQueueWaitMs: mean('workqueue_queue_duration_seconds'),
    watchRestarts: sortKeys(totalBy(c, 'recon8s_watch_restarts_total', ['resource', 'reason'])),
  };
}
