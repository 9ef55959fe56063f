import type { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import type { KubernetesObject } from '../common/custom-resource.js';
import type { OperatorPods } from '../common/operator-install.js';
import { DEFAULT_OPERATOR_PODS } from '../common/operator-install.js';
import { synthesizeAlone } from '../common/custom-resource.js';
import { refuseDuplicateObjects } from '../common/unique-objects.js';
import { resolveSpec } from '../schema/kind.js';
import { backupCronJob, binlogCronJob } from './backup.js';
import { configMaps } from './config-maps.js';
import { clusterContext } from './context.js';
import { disruptionBudget } from './disruption-budget.js';
import { networkPolicy } from './network-policy.js';
import { MYSQL_PORT, databaseSelector } from './layout.js';
import { services } from './services.js';
import { MYSQL_CLUSTER } from './spec.js';
import type { MySQLClusterSpec, ResolvedMySQLClusterSpec } from './spec.generated.js';
import { statefulSet } from './statefulset.js';

/**
 * What the recon8s controller applies for a MySQLCluster resource: identical members, one of which
 * the controller makes the writable primary (status.currentPrimary, pod label
 * `recon8s.dev/role=primary`), the others read-only replicas that follow it by semi-synchronous GTID
 * replication. New replicas are provisioned by cloning the primary, and so is a replica that can no
 * longer catch up because the primary purged binary logs it needs (its previous data is kept until
 * the clone replicates; see scripts/reprovision.sh).
 *
 * The construct id is the cluster's name, from which every object's name is derived: the
 * StatefulSet `<name>`, the Services `<name>-headless` (members are `<name>-N.<name>-headless`),
 * `<name>-primary` (writes: the pod labelled primary, wherever it is) and `<name>-replicas` (reads:
 * the ready pods labelled replica), the ConfigMaps `<name>-config` and `<name>-scripts`, the
 * PodDisruptionBudget `<name>-mysql`, the NetworkPolicy `<name>-mysql` (unless networkPolicy.enabled is
 * false) and, with `backup`, the CronJob `<name>-backup` (with `backup.s3`
 * also `<name>-binlog`, which archives the binary logs). Objects get the chart's namespace.
 *
 * Passwords never appear in props or in the output: the pods read them from the Secret named by
 * {@link MySQLClusterObjects.credentialsSecretName}, which the controller creates.
 *
 * Not exported from the package: these objects are only a database together with the controller that
 * owns them (every member starts read-only, and only the controller makes one writable, fails over,
 * switches over and rolls the `OnDelete` StatefulSet). Applied on their own they would be a cluster
 * that never takes a write, and the controller never adopts objects it does not control. Users get
 * {@link MySQLCluster} (the resource) and see these objects through `render()` or
 * `MySQLCluster.renderObjects()`.
 */
export class MySQLClusterObjects extends Construct {
  /** The props with every default applied. */
  readonly spec: ResolvedMySQLClusterSpec;
  readonly statefulSet: k8s.KubeStatefulSet;
  readonly headlessService: k8s.KubeService;
  readonly primaryService: k8s.KubeService;
  readonly replicasService: k8s.KubeService;
  /** my.cnf. */
  readonly config: k8s.KubeConfigMap;
  /** The scripts the init containers, the sidecar, the readiness probe and the backup job run. */
  readonly scripts: k8s.KubeConfigMap;
  readonly disruptionBudget: k8s.KubePodDisruptionBudget;
  /** Who may connect to the members (spec.networkPolicy; absent when turned off). */
  readonly networkPolicy?: k8s.KubeNetworkPolicy;
  /** The backup CronJob, when `backup` is set. */
  readonly backup?: k8s.KubeCronJob;
  /** The binary-log archive CronJob, when `backup.s3` is set (and binlogIntervalMinutes is not 0). */
  readonly binlogArchive?: k8s.KubeCronJob;
  /** Name of the Secret with root-password and replication-password (spec.credentialsSecretName ?? `${name}-credentials`). */
  readonly credentialsSecretName: string;
  /** Host:port for writes, within the namespace. */
  readonly primaryEndpoint: string;
  /** Host:port for reads, within the namespace. */
  readonly replicasEndpoint: string;
  /** The labels the members are selected by. */
  readonly podSelector: Readonly<Record<string, string>>;

  /** @throws InvalidSpecError listing every problem, when the name or the props are invalid. */
  constructor(scope: Construct, id: string, props: MySQLClusterSpec = {}, install: MySQLClusterInstall = {}) {
    // Validate before the construct exists: an invalid spec must leave nothing half-built behind.
    const spec = resolveSpec<ResolvedMySQLClusterSpec>(MYSQL_CLUSTER, id, props);
    super(scope, id);
    refuseDuplicateObjects(this);
    this.spec = spec;
    const ctx = clusterContext(id, spec);
    this.credentialsSecretName = ctx.names.credentialsSecret;
    this.primaryEndpoint = `${ctx.names.primaryService}:${MYSQL_PORT}`;
    this.replicasEndpoint = `${ctx.names.replicasService}:${MYSQL_PORT}`;
    this.podSelector = databaseSelector(id);

    const maps = configMaps(this, ctx);
    this.config = maps.config;
    this.scripts = maps.scripts;
    const svc = services(this, ctx);
    this.headlessService = svc.headless;
    this.primaryService = svc.primary;
    this.replicasService = svc.replicas;
    this.statefulSet = statefulSet(this, ctx, maps.hash);
    this.disruptionBudget = disruptionBudget(this, ctx);
    this.networkPolicy = networkPolicy(this, ctx, install.operator ?? DEFAULT_OPERATOR_PODS);
    if (spec.backup) {
      this.backup = backupCronJob(this, ctx, spec.backup);
      this.binlogArchive = binlogCronJob(this, ctx, spec.backup);
    }
  }
}

/** What the objects depend on besides the spec: facts of the operator's install, which the controller knows. */
export interface MySQLClusterInstall {
  /**
   * The operator's pods, which the NetworkPolicy admits to the members.
   * @default every pod of the namespace recon8s-system
   */
  readonly operator?: OperatorPods;
}

/** The objects of MySQLCluster `name` in `namespace`, alone in a chart, as the controller renders them. */
export function renderMySQLClusterObjects(
  name: string,
  namespace: string | undefined,
  spec: MySQLClusterSpec,
  install: MySQLClusterInstall = {},
): KubernetesObject[] {
  return synthesizeAlone(namespace, (chart) => new MySQLClusterObjects(chart, name, spec, install));
}
