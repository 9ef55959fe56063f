import type {
  KubeConfig,
  KubernetesObject as LiveObject,
  V1PersistentVolumeClaim,
  V1Pod,
} from '@kubernetes/client-node';
import { APP, MYSQL_CLUSTER } from '../../constructs/index.js';
import type { OperatorPods } from '../../constructs/index.js';
import type { Informer } from '../informer/index.js';
import type { KubeClient, RequestEvent } from '../kube/index.js';
import { createKubeClient, getObject } from '../kube/index.js';
import { createLeaderElector } from '../leader/index.js';
import type { LeaderElector } from '../leader/index.js';
import type { ControllerMetrics } from '../observability/controller-metrics.js';
import { createControllerMetrics } from '../observability/controller-metrics.js';
import type { HealthServer } from '../observability/health-server.js';
import { startHealthServer } from '../observability/health-server.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { Registry } from '../observability/metrics.js';
import { workqueueMetrics } from '../queue/queue-metrics.js';
import { WorkQueue } from '../queue/work-queue.js';
import { runWorkers } from '../queue/worker-pool.js';
import type { WorkerPool } from '../queue/worker-pool.js';
import { createEventRecorder } from './events.js';
import type { KindController } from './kind-controller.js';
import { KIND_CONTROLLERS, OWNER_KINDS, parseQueueKey, queueKey } from './kinds.js';
import { MemberReportLog } from './mysql-cluster/member-reports.js';
import { createNamedObjectCache, createSecretCache } from './mysql-cluster/secret-cache.js';
import { CERTIFICATE_API_VERSION, CERTIFICATE_PLURAL } from '../mysql/cert-manager.js';
import { Reconciler } from './reconciler.js';
import type { Term } from './reconciler.js';
import { watchOwnersAndChildren, watchPods } from './watches.js';

export const CONTROLLER_NAME = 'recon8s';

export interface LeaderElectionOptions {
  /** The namespace of the Lease (the controller's own). */
  readonly namespace: string;
  /** @default "recon8s-controller" */
  readonly name?: string;
  readonly identity?: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
}

export interface ControllerOptions {
  readonly kubeconfigPath?: string;
  readonly inCluster?: boolean;
  /** An already loaded config (tests). */
  readonly kubeConfig?: KubeConfig;
  /** Namespaces to watch; none: all namespaces. */
  readonly namespaces?: readonly string[];
  /** Concurrent reconciles of Apps. @default 4 */
  readonly workers?: number;
  /**
   * Concurrent reconciles of MySQLClusters, on workers of their own: a cluster's look at its members (and
   * a promotion's wait for a replica, up to a minute) never holds an App's worker, and a backlog of Apps
   * never delays failure detection. @default 4
   */
  readonly mysqlWorkers?: number;
  /** Leader election on a Lease; absent: this process reconciles on its own (one replica only!). */
  readonly leaderElection?: LeaderElectionOptions;
  /** `host:port` of /metrics; "0" disables. @default ":8080" */
  readonly metricsAddr?: string;
  /** `host:port` of /healthz and /readyz; "0" disables. @default ":8081" */
  readonly healthAddr?: string;
  /** Every resource is reconciled again this often, even when nothing changed. @default 10 minutes */
  readonly resyncPeriodMs?: number;
  /** The ClusterRole that grants Secrets, named by a CredentialsForbidden condition. @default "recon8s-credentials" */
  readonly credentialsClusterRole?: string;
  /**
   * The ServiceAccounts an App may run as, as an allow-list (constructs/app/reference-allow-list.ts);
   * an App naming another is refused (Degraded/ReferenceNotAllowed). @default ["*"]: any of its namespace
   */
  readonly appServiceAccounts?: readonly string[];
  /** The Secrets an App's pods may name (env, envFrom, volumes, image pull Secrets), likewise. @default ["*"] */
  readonly appSecrets?: readonly string[];
  /** The controller's own pods, admitted to every MySQLCluster's members by its NetworkPolicy. @default every pod of recon8s-system */
  readonly operatorPods?: OperatorPods;
  readonly logger?: Logger;
  /**
   * Every request the controller's client sends, as it is answered (beside the metrics, which cannot
   * tell a GET of one object from a list or a watch): how tests count what a reconcile asks.
   */
  readonly onRequest?: (event: RequestEvent) => void;
}

export interface Controller {
  readonly client: KubeClient;
  readonly metrics: ControllerMetrics;
  readonly health: HealthServer | undefined;
  readonly elector: LeaderElector | undefined;
  /** True while this process reconciles (it leads, or runs without leader election). */
  isActive(): boolean;
  /** Resolves once every informer has its first list. */
  synced(): Promise<void>;
  /** Graceful shutdown: stop reconciling (finishing reconciles under way), release the Lease, stop watching. */
  stop(): Promise<void>;
}

/**
 * Starts the controller: informers for App and MySQLCluster and for their children (selected by the
 * managed-by label, mapped back to their owner through the controller ownerReference), a rate-limited
 * work queue, and workers that run the Reconciler — only while this process holds the Lease when
 * leader election is on. Informers run on every replica, so a new leader starts with a warm cache.
 */
export async function startController(opts: ControllerOptions): Promise<Controller> {
  const logger = opts.logger ?? silentLogger;
  const registry = new Registry();
  registry.collectProcessMetrics();
  const metrics = createControllerMetrics(registry);
  const client = createKubeClient({
    kubeconfigPath: opts.kubeconfigPath,
    inCluster: opts.inCluster,
    kubeConfig: opts.kubeConfig,
    logger,
    hooks: {
      onRequest: (e) => {
        metrics.restClientRequests.inc({ code: e.code, method: e.method, host: e.host });
        metrics.restClientRequestDuration.observe({ verb: e.method }, e.durationMs / 1000);
        opts.onRequest?.(e);
      },
    },
  });
  const scopes: (string | undefined)[] = opts.namespaces?.length ? [...opts.namespaces] : [undefined];
  const resyncPeriodMs = opts.resyncPeriodMs ?? 10 * 60_000;
  /**
   * One queue and its workers per kind (MySQLClusters apart from Apps), while this process reconciles:
   * keys queued while it does not are dropped (a new term queues every resource).
   */
  let lanes: Map<string, { readonly queue: WorkQueue; readonly pool: WorkerPool }> | undefined;
  const enqueue = (key: string): void => lanes?.get(parseQueueKey(key).kind)?.queue.add(key);

  const watchHooks = (resource: string) => ({
    onWatchRestart: (reason: string) => metrics.watchRestarts.inc({ resource, reason }),
    onRelist: (reason: string) => metrics.watchRelists.inc({ resource, reason }),
  });

  const { owners, children, childNames, informers } = watchOwnersAndChildren({
    client,
    kinds: OWNER_KINDS,
    namespaces: scopes,
    logger,
    resyncPeriodMs,
    hooks: watchHooks,
    onKey: enqueue,
    isEcho: (child) => reconciler.isOwnEcho(child),
    isOwnerEcho: (cr) => reconciler.isOwnWrite(cr),
    onDeleted: (uid) => {
      reconciler.forget(uid);
      secrets.release(uid);
      certificates.release(uid);
      claims.release(uid);
    },
  });
  const allInformers: Informer<LiveObject>[] = [...informers];

  const events = createEventRecorder(client, logger);
  // The kinds' pods: a change of one (ready, failing, restarted, gone) may change its resource's status
  // or what its manager must do, so the resource (the pod's instance label) is looked at again. A pod
  // may also report what it did in a container's termination message (MySQL members after
  // re-provisioning by clone): it becomes an Event on its resource. Only the active replica records;
  // a new leader looks at every pod once, and the Events' names make each report one Event whoever records it.
  const reported = new MemberReportLog();
  const report = (kc: KindController, pod: V1Pod): void => {
    for (const r of reported.fresh(kc.pods?.reports?.(pod) ?? [])) {
      const owner = owners.get(kc.definition.kind)?.informer.get(r.namespace, r.owner);
      if (owner) events.record(owner, r.type, r.reason, r.message, { once: r.key });
    }
  };
  const pods = watchPods({
    client,
    kinds: KIND_CONTROLLERS,
    namespaces: scopes,
    logger,
    hooks: watchHooks,
    onPod: (kc, pod, key, deleted) => {
      if (!lanes) return;
      if (key) enqueue(key);
      if (!deleted) report(kc, pod);
    },
  });
  allInformers.push(...pods.informers);
  // The Secrets resources read (MySQL credentials), each watched by name once read.
  const secrets = createSecretCache({
    client,
    logger,
    hooks: watchHooks('secrets'),
    onChange: (owner) => {
      enqueue(queueKey(owner.kind, owner.namespace, owner.name));
    },
  });
  // A MySQLCluster's cert-manager Certificate (spec.tls.issuerRef), watched by name once it exists: never
  // before, so a controller where cert-manager is not installed watches nothing of it.
  const certificates = createNamedObjectCache<LiveObject>({
    client,
    logger,
    hooks: watchHooks(CERTIFICATE_PLURAL),
    type: { apiVersion: CERTIFICATE_API_VERSION, kind: 'Certificate', plural: CERTIFICATE_PLURAL },
    readLive: (namespace, name) =>
      getObject<LiveObject>(
        client,
        `/apis/${CERTIFICATE_API_VERSION}/namespaces/${namespace}/${CERTIFICATE_PLURAL}/${encodeURIComponent(name)}`,
      ),
    watchMissing: false,
    onChange: (owner) => {
      enqueue(queueKey(owner.kind, owner.namespace, owner.name));
    },
  });
  // The backup volume a MySQLCluster names (spec.backup.persistentVolumeClaimName), watched by name once
  // read: whether it exists is asked at every reconcile, and would otherwise be a GET each time.
  const claims = createNamedObjectCache<V1PersistentVolumeClaim>({
    client,
    logger,
    hooks: watchHooks('persistentvolumeclaims'),
    type: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims' },
    readLive: (namespace, name) =>
      getObject<V1PersistentVolumeClaim>(
        client,
        `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${encodeURIComponent(name)}`,
      ),
    watchMissing: true,
    onChange: (owner) => {
      enqueue(queueKey(owner.kind, owner.namespace, owner.name));
    },
  });
  const reconciler = new Reconciler({
    client,
    owners,
    children,
    childNames,
    events,
    logger,
    metrics,
    pods: (kind, namespace) => (pods.byKind.get(kind) ?? []).flatMap((i) => i.list(namespace)),
    install: {
      credentialsClusterRole: opts.credentialsClusterRole,
      appReferences: { serviceAccounts: opts.appServiceAccounts, secrets: opts.appSecrets },
      operatorPods: opts.operatorPods,
    },
    secrets: secrets.read,
    certificates: certificates.read,
    claims: claims.read,
    wake: enqueue,
  });

  const workers = { [APP.kind]: opts.workers ?? 4, [MYSQL_CLUSTER.kind]: opts.mysqlWorkers ?? 4 };
  let term: Term | undefined;
  const startWorkers = (): void => {
    term = reconciler.startTerm();
    lanes = new Map(
      OWNER_KINDS.map(({ kind }) => {
        // Apps keep the controller's own name (its metrics' `controller` and `name` labels).
        const name = kind === APP.kind ? CONTROLLER_NAME : `${CONTROLLER_NAME}-${kind.toLowerCase()}`;
        const queue = new WorkQueue({ metrics: workqueueMetrics(metrics, name) });
        const pool = runWorkers({
          name,
          queue,
          workers: workers[kind] ?? 4,
          // The signal ends with leadership (or shutdown): a deposed leader's reconcile stops at its next step.
          reconcile: (key, signal) => reconciler.reconcile(key, signal),
          logger,
          metrics,
        });
        return [kind, { queue, pool }];
      }),
    );
    for (const { kind, informer } of owners.values())
      for (const o of informer.list()) enqueue(queueKey(kind.kind, o.metadata.namespace ?? '', o.metadata.name));
    for (const kc of KIND_CONTROLLERS)
      for (const informer of pods.byKind.get(kc.definition.kind) ?? [])
        for (const pod of informer.list()) report(kc, pod);
    logger.info('reconciling', { workers });
  };
  const stopWorkers = async (): Promise<void> => {
    const ending = lanes;
    const endingTerm = term;
    lanes = undefined;
    term = undefined;
    await Promise.all([...(ending?.values() ?? [])].map((l) => l.pool.stop()));
    if (endingTerm) await reconciler.endTerm(endingTerm);
  };

  const synced = Promise.all(allInformers.map((i) => i.start())).then(() => undefined);
  const health = await startHealthServer({
    metricsAddr: opts.metricsAddr,
    healthAddr: opts.healthAddr,
    registry,
    logger,
    readyChecks: {
      informers: () => {
        if (!allInformers.every((i) => i.hasSynced())) throw new Error('informers have not synced');
      },
    },
  });

  let elector: LeaderElector | undefined;
  await synced;
  if (opts.leaderElection) {
    const le = opts.leaderElection;
    elector = createLeaderElector({
      client,
      namespace: le.namespace,
      name: le.name ?? 'recon8s-controller',
      identity: le.identity,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      logger,
      hooks: {
        onLeaderChange: (isLeader) =>
          metrics.leaderElectionMasterStatus.set({ name: le.name ?? 'recon8s-controller' }, isLeader ? 1 : 0),
      },
      onStartedLeading: async (signal) => {
        startWorkers();
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        await stopWorkers();
      },
    });
    elector.start();
  } else {
    startWorkers();
  }

  let stopping: Promise<void> | undefined;
  return {
    client,
    metrics,
    health,
    elector,
    isActive: () => lanes !== undefined,
    synced: () => synced,
    stop: () => {
      stopping ??= (async () => {
        await elector?.stop({ release: true });
        await stopWorkers();
        await Promise.all([...allInformers.map((i) => i.stop()), secrets.stop(), certificates.stop(), claims.stop()]);
        await health?.close();
        await client.close();
      })();
      return stopping;
    },
  };
}
