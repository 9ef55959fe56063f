import {
  DEFAULT_OPERATOR_PODS,
  DNS_LABEL_PATTERN,
  QUALIFIED_KEY_PATTERN,
  allowListProblems,
} from '../../constructs/index.js';
import type { OperatorPods } from '../../constructs/index.js';
import { startController } from '../controller/controller.js';
import { isLogLevel, jsonLogger } from '../observability/logger.js';
import { UsageError } from './usage-error.js';

export const CONTROLLER_USAGE = `Usage: recon8s controller [options]

Runs the controller: watches App and MySQLCluster resources and converges their children.

Options:
  --kubeconfig PATH                    kubeconfig to use (default: in-cluster config in a pod, else $KUBECONFIG or ~/.kube/config)
  --namespaces NS[,NS...]              watch only these namespaces (default: all)
  --workers N                          concurrent reconciles of Apps (default: 4)
  --mysql-workers N                    concurrent reconciles of MySQLClusters, apart from the Apps' (default: 4)
  --leader-elect                       hold a Lease before reconciling; run with it when there is more than one replica
  --leader-election-namespace NS       namespace of the Lease (default: $POD_NAMESPACE, else "default")
  --leader-election-id NAME            name of the Lease (default: recon8s-controller)
  --leader-election-lease-duration S   how long a lease holds without renewal (default: 15)
  --leader-election-renew-deadline S   how long the leader keeps trying to renew before it steps down (default: 10)
  --leader-election-retry-period S     how often to try to acquire or renew (default: 2)
  --metrics-bind-address HOST:PORT     /metrics (default: :8080; "0" disables)
  --health-probe-bind-address HOST:PORT  /healthz and /readyz (default: :8081; "0" disables)
  --resync-period SECONDS              reconcile everything again this often (default: 600)
  --credentials-cluster-role NAME      the ClusterRole granting Secrets, named when a grant is missing (default: recon8s-credentials)
  --app-service-accounts LIST          the ServiceAccounts an App may run as, comma-separated: *, NAMESPACE/*, NAME or
                                       NAMESPACE/NAME each; empty: only the namespace default (default: *, any)
  --app-secrets LIST                   the Secrets an App's pods may name (env, envFrom, volumes, image pull Secrets),
                                       likewise; empty: none but the App's own database binding (default: *, any)
  --operator-namespace NS              the namespace of the controller's pods, which every MySQLCluster's NetworkPolicy
                                       admits to its members (default: $POD_NAMESPACE, else recon8s-system)
  --operator-pod-labels K=V[,K=V...]   the labels of the controller's pods there (default: any pod of that namespace)
  --log-level debug|info|warn|error    (default: info)
`;

export interface ControllerFlags {
  readonly kubeconfig?: string;
  readonly namespaces?: string;
  readonly workers?: string;
  readonly 'mysql-workers'?: string;
  readonly 'leader-elect'?: boolean;
  readonly 'leader-election-namespace'?: string;
  readonly 'leader-election-id'?: string;
  readonly 'leader-election-lease-duration'?: string;
  readonly 'leader-election-renew-deadline'?: string;
  readonly 'leader-election-retry-period'?: string;
  readonly 'metrics-bind-address'?: string;
  readonly 'health-probe-bind-address'?: string;
  readonly 'resync-period'?: string;
  readonly 'credentials-cluster-role'?: string;
  readonly 'app-service-accounts'?: string;
  readonly 'app-secrets'?: string;
  readonly 'operator-namespace'?: string;
  readonly 'operator-pod-labels'?: string;
  readonly 'log-level'?: string;
}

export const CONTROLLER_OPTIONS = {
  kubeconfig: { type: 'string' },
  namespaces: { type: 'string' },
  workers: { type: 'string' },
  'mysql-workers': { type: 'string' },
  'leader-elect': { type: 'boolean' },
  'leader-election-namespace': { type: 'string' },
  'leader-election-id': { type: 'string' },
  'leader-election-lease-duration': { type: 'string' },
  'leader-election-renew-deadline': { type: 'string' },
  'leader-election-retry-period': { type: 'string' },
  'metrics-bind-address': { type: 'string' },
  'health-probe-bind-address': { type: 'string' },
  'resync-period': { type: 'string' },
  'credentials-cluster-role': { type: 'string' },
  'app-service-accounts': { type: 'string' },
  'app-secrets': { type: 'string' },
  'operator-namespace': { type: 'string' },
  'operator-pod-labels': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function positiveInt(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`--${flag} must be a positive whole number, got "${value}"`, CONTROLLER_USAGE);
  return n;
}

/** An allow-list flag: undefined when not given; "" is the empty list (allow none). */
function allowList(flag: 'app-service-accounts' | 'app-secrets', value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const problems = allowListProblems(`--${flag}`, entries);
  if (problems.length > 0) throw new UsageError(problems.join('; '), CONTROLLER_USAGE);
  return entries;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/**
 * The controller's own pods, for the MySQLClusters' NetworkPolicies: the flags, else the namespace the
 * pod runs in (the downward API's $POD_NAMESPACE), else the default install's.
 */
export function operatorPods(
  namespaceFlag: string | undefined,
  labelsFlag: string | undefined,
  podNamespace: string | undefined,
): OperatorPods {
  const namespace = namespaceFlag ?? (podNamespace || DEFAULT_OPERATOR_PODS.namespace);
  if (!new RegExp(DNS_LABEL_PATTERN).test(namespace) || namespace.length > 63)
    throw new UsageError(
      `--operator-namespace must be a namespace name (a DNS label), got "${namespace}"`,
      CONTROLLER_USAGE,
    );
  if (labelsFlag === undefined) return { namespace };
  const podLabels: Record<string, string> = {};
  for (const entry of labelsFlag.split(',').map((e) => e.trim())) {
    const at = entry.indexOf('=');
    const key = entry.slice(0, at);
    const value = entry.slice(at + 1);
    if (at < 1 || !new RegExp(QUALIFIED_KEY_PATTERN).test(key) || !LABEL_VALUE.test(value))
      throw new UsageError(
        `--operator-pod-labels must be KEY=VALUE pairs of label keys and values, comma-separated, got "${entry}"`,
        CONTROLLER_USAGE,
      );
    podLabels[key] = value;
  }
  return { namespace, podLabels };
}

/** Runs until SIGTERM or SIGINT, then shuts down gracefully (releasing the Lease). */
export async function controllerCommand(flags: ControllerFlags): Promise<number> {
  const level = flags['log-level'] ?? 'info';
  if (!isLogLevel(level))
    throw new UsageError(`--log-level must be debug, info, warn or error, got "${level}"`, CONTROLLER_USAGE);
  const logger = jsonLogger({ level, fields: { logger: 'recon8s' } });
  const workers = positiveInt('workers', flags.workers, 4);
  const mysqlWorkers = positiveInt('mysql-workers', flags['mysql-workers'], 4);
  const resyncSeconds = positiveInt('resync-period', flags['resync-period'], 600);
  const lease = {
    duration: positiveInt('leader-election-lease-duration', flags['leader-election-lease-duration'], 15),
    renewDeadline: positiveInt('leader-election-renew-deadline', flags['leader-election-renew-deadline'], 10),
    retryPeriod: positiveInt('leader-election-retry-period', flags['leader-election-retry-period'], 2),
  };
  // client-go's rule: the leader must give up before another may take over.
  if (!(lease.duration > lease.renewDeadline && lease.renewDeadline > lease.retryPeriod)) {
    throw new UsageError(
      `leader election needs lease duration > renew deadline > retry period, got ${lease.duration} > ${lease.renewDeadline} > ${lease.retryPeriod}`,
      CONTROLLER_USAGE,
    );
  }
  const namespaces = flags.namespaces
    ?.split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const appServiceAccounts = allowList('app-service-accounts', flags['app-service-accounts']);
  const appSecrets = allowList('app-secrets', flags['app-secrets']);
  const operator = operatorPods(flags['operator-namespace'], flags['operator-pod-labels'], process.env.POD_NAMESPACE);
  const inCluster = !flags.kubeconfig && !process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST !== undefined;
  const controller = await startController({
    kubeconfigPath: flags.kubeconfig ?? process.env.KUBECONFIG,
    inCluster,
    namespaces,
    workers,
    mysqlWorkers,
    resyncPeriodMs: resyncSeconds * 1000,
    credentialsClusterRole: flags['credentials-cluster-role'],
    appServiceAccounts,
    appSecrets,
    operatorPods: operator,
    metricsAddr: flags['metrics-bind-address'],
    healthAddr: flags['health-probe-bind-address'],
    leaderElection: flags['leader-elect']
      ? {
          namespace: flags['leader-election-namespace'] ?? process.env.POD_NAMESPACE ?? 'default',
          name: flags['leader-election-id'],
          leaseDurationMs: lease.duration * 1000,
          renewDeadlineMs: lease.renewDeadline * 1000,
          retryPeriodMs: lease.retryPeriod * 1000,
        }
      : undefined,
    logger,
  });
  logger.info('started', {
    namespaces: namespaces ?? 'all',
    workers,
    mysqlWorkers,
    leaderElection: Boolean(flags['leader-elect']),
    appServiceAccounts: appServiceAccounts ?? '*',
    appSecrets: appSecrets ?? '*',
    operatorPods: operator,
    metrics: controller.health?.metricsAddress,
    health: controller.health?.healthAddress,
  });
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      logger.info('shutting down', { signal });
      resolve();
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
  });
  await controller.stop();
  logger.info('stopped');
  return 0;
}
