// The StatefulSet: identical members. Which one is the primary is not in the template: every member
// starts read-only, and the controller makes one writable and labels it (see lib/mysql/decide.ts).
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { objectLabels } from '../common/metadata.js';
import { quantity, resourceRequirements } from '../common/resources.js';
import { containerSecurityContext, podSecurityContext } from '../common/security.js';
import type { MySQLClusterContext } from './context.js';
import { clusterLabels, objectMeta, secretEnv } from './context.js';
import {
  APP_NAME,
  CONFIG_HASH_ANNOTATION,
  DATABASE_COMPONENT,
  MYSQL_PORT,
  MYSQL_BOOTSTRAP_CONTAINER,
  MYSQL_CONTAINER,
  MYSQL_PORT_NAME,
  MYSQL_UID,
  AGENT_HTTP_PATHS,
  AGENT_PORT,
  AGENT_TLS_PORT,
  AGENT_TLS_PORT_NAME,
  AGENT_PORT_NAME,
  PATHS,
  SECRET_KEYS,
  DATA_VOLUME,
  HISTORY_KEYS,
  databaseSelector,
} from './layout.js';
import { exporterContainers, metricsLabels, scrapeAnnotations } from './exporter.js';
import { rcloneInitContainer, storeEnv, storeMounts, storeVolumes } from './object-store.js';
import { SCRIPT } from './scripts.js';
import type { ResolvedMySQLRestore } from './spec.generated.js';
import { memberAffinity, memberTopologySpread } from './placement.js';

const VOLUMES = {
  config: 'config',
  podInfo: 'pod-info',
  memberConfig: 'member-config',
  scripts: 'scripts',
  run: 'run',
  tmp: 'tmp',
  tls: 'tls',
  credentials: 'credentials',
} as const;

/** mysqld flushes its buffer pool on shutdown; a kill instead means crash recovery at the next start. */
const TERMINATION_GRACE_SECONDS = 120;

export function statefulSet(scope: Construct, ctx: MySQLClusterContext, configHash: string): k8s.KubeStatefulSet {
  const { spec, names } = ctx;
  const selector = databaseSelector(names.cluster);
  return new k8s.KubeStatefulSet(scope, 'StatefulSet', {
    metadata: objectMeta(ctx, names.statefulSet, DATABASE_COMPONENT),
    spec: {
      replicas: spec.replicas,
      serviceName: names.headlessService,
      selector: { matchLabels: selector },
      // Every member's pod is created at once, and a member that cannot be Ready (read-only, waiting
      // for a primary) never holds the others back: after every pod was deleted together, the members
      // must all come back for the controller to find the one that holds the data (OrderedReady left
      // ordinals 1.. uncreated while ordinal 0 waited for a primary, forever). Bootstrap needs no
      // order: ordinal 0 of a new cluster initializes, the others wait for a primary and clone it.
      // Immutable on a StatefulSet: the controller re-creates an older one around its pods
      // (lib/controller/mysql-cluster/statefulset-replacement.ts).
      podManagementPolicy: 'Parallel',
      // The controller re-creates outdated pods itself, one at a time, replicas first and the primary
      // only after a switchover: the StatefulSet controller does not know which member is the primary.
      updateStrategy: { type: 'OnDelete' },
      persistentVolumeClaimRetentionPolicy: {
        whenDeleted: spec.pvcRetention.whenDeleted,
        whenScaled: spec.pvcRetention.whenScaled,
      },
      volumeClaimTemplates: [dataClaimTemplate(ctx)],
      template: {
        metadata: {
          labels: { ...clusterLabels(ctx, DATABASE_COMPONENT), ...metricsLabels(ctx) },
          annotations: { ...spec.annotations, ...scrapeAnnotations(ctx), [CONFIG_HASH_ANNOTATION]: configHash },
        },
        spec: podSpec(ctx, selector),
      },
    },
  });
}

/**
 * The claim template is immutable once the StatefulSet exists, so it depends only on what may not
 * change: no user labels or annotations (they may change), only our fixed labels. Growing
 * storage.size changes it too: the PVCs are resized directly, and the StatefulSet is re-created with
 * orphaned pods, which the controller (not this pure construct) has to do.
 */
function dataClaimTemplate(ctx: MySQLClusterContext): k8s.KubePersistentVolumeClaimProps {
  const { storage } = ctx.spec;
  return {
    metadata: {
      name: DATA_VOLUME,
      labels: objectLabels({ name: APP_NAME, instance: ctx.names.cluster, component: DATABASE_COMPONENT }),
    },
    spec: {
      accessModes: [...storage.accessModes],
      storageClassName: storage.storageClassName,
      resources: { requests: { storage: quantity(storage.size) } },
    },
  };
}

function podSpec(ctx: MySQLClusterContext, selector: Record<string, string>): k8s.PodSpec {
  const { spec } = ctx;
  return {
    securityContext: {
      // uid/gid 999 own the files of the official image; fsGroup makes the volume theirs.
      ...podSecurityContext({ runAsUser: MYSQL_UID, runAsGroup: MYSQL_UID, fsGroup: MYSQL_UID, runAsNonRoot: true }),
      // A recursive chown of a large data volume at every start would delay it by minutes.
      fsGroupChangePolicy: 'OnRootMismatch',
    },
    // MySQL needs neither the API server nor a variable per Service in the namespace.
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
    affinity: memberAffinity(spec, selector),
    topologySpreadConstraints: memberTopologySpread(spec.placement, selector),
    nodeSelector: spec.nodeSelector ? { ...spec.nodeSelector } : undefined,
    tolerations: spec.tolerations ? [...spec.tolerations] : undefined,
    initContainers: [
      ...(spec.restore ? [rcloneInitContainer(spec.restore.s3.rcloneImage, spec.imagePullPolicy)] : []),
      bootstrapContainer(ctx),
    ],
    containers: [
      mysqlContainer(ctx),
      agentContainer(ctx),
      ...exporterContainers(ctx, { config: VOLUMES.config, run: VOLUMES.run }),
    ],
    volumes: [
      { name: VOLUMES.config, configMap: { name: ctx.names.config } },
      { name: VOLUMES.scripts, configMap: { name: ctx.names.scripts } },
      { name: VOLUMES.memberConfig, emptyDir: {} },
      { name: VOLUMES.run, emptyDir: {} },
      { name: VOLUMES.tmp, emptyDir: {} },
      // Readable by mysqld's group only (fsGroup); the key is a secret of the members.
      { name: VOLUMES.tls, secret: { secretName: ctx.names.tlsSecret, defaultMode: 0o440 } },
      // The passwords, for the agent, which reads them when it uses them (layout.ts PATHS.credentials).
      { name: VOLUMES.credentials, secret: { secretName: ctx.names.credentialsSecret, defaultMode: 0o440 } },
      ...(spec.restore ? storeVolumes(spec.restore.s3) : []),
      // The pod's annotations, for the agent (a re-provisioning request).
      {
        name: VOLUMES.podInfo,
        downwardApi: {
          items: [{ path: 'annotations', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.annotations' } }],
        },
      },
    ],
  };
}

/** What every container of the pod shares: image, identity, a read-only root file system. */
function baseContainer(ctx: MySQLClusterContext, name: string): k8s.Container {
  return {
    name,
    image: ctx.image,
    imagePullPolicy: ctx.spec.imagePullPolicy,
    securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
  };
}

const mount = (name: string, mountPath: string, readOnly = false): k8s.VolumeMount =>
  readOnly ? { name, mountPath, readOnly } : { name, mountPath };
const runScript = (file: string): string[] => ['bash', `${PATHS.scripts}/${file}`];
const podNameEnv: k8s.EnvVar = {
  name: 'POD_NAME',
  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } },
};

/** What the bootstrap and the agent both know of the member: its name, the other members, the primary. */
function memberPlaceEnv(ctx: MySQLClusterContext): k8s.EnvVar[] {
  return [
    podNameEnv,
    { name: 'HEADLESS_SERVICE', value: ctx.names.headlessService },
    { name: 'PRIMARY_HOST', value: ctx.names.primaryHost },
  ];
}

/** The bootstrap's: the passwords of the pod's start (it runs once, before mysqld, and sets or uses them then). */
function memberEnv(ctx: MySQLClusterContext): k8s.EnvVar[] {
  return [
    ...memberPlaceEnv(ctx),
    secretEnv(ctx, 'MYSQL_ROOT_PASSWORD', SECRET_KEYS.rootPassword),
    secretEnv(ctx, 'MYSQL_REPLICATION_PASSWORD', SECRET_KEYS.replicationPassword),
    secretEnv(ctx, 'MYSQL_ADMIN_PASSWORD', SECRET_KEYS.adminPassword),
    // The clone account's (a member without data clones the primary as it), and the backup account's
    // (created with the others by the first member of a new cluster).
    secretEnv(ctx, 'MYSQL_CLONE_PASSWORD', SECRET_KEYS.clonePassword),
    secretEnv(ctx, 'MYSQL_BACKUP_PASSWORD', SECRET_KEYS.backupPassword),
    // With monitoring: the bootstrap of a new cluster creates the metrics sidecar's account, and the
    // primary's agent makes sure it exists, e.g. when monitoring is turned on later.
    ...(ctx.spec.monitoring.enabled ? [secretEnv(ctx, 'MYSQL_EXPORTER_PASSWORD', SECRET_KEYS.exporterPassword)] : []),
  ];
}

/**
 * Whether the cluster has a recorded history (the controller's history ConfigMap, read when the container
 * starts; empty while it does not exist): an empty data directory then never starts a new database.
 */
function historyEnv(ctx: MySQLClusterContext): k8s.EnvVar {
  return {
    name: 'RECON8S_RECORDED_HISTORY',
    valueFrom: {
      configMapKeyRef: { name: ctx.names.history, key: HISTORY_KEYS.firstPrimary, optional: true },
    },
  };
}

/** With spec.restore: what the first member of a new cluster restores (scripts/restore.sh). */
function restoreEnv(restore: ResolvedMySQLRestore): k8s.EnvVar[] {
  return [
    { name: 'RESTORE_BACKUP', value: restore.backup },
    ...(restore.pointInTime ? [{ name: 'RESTORE_POINT_IN_TIME', value: restore.pointInTime }] : []),
    ...(restore.gtidSet ? [{ name: 'RESTORE_GTID_SET', value: restore.gtidSet }] : []),
    ...(restore.beforeGtid ? [{ name: 'RESTORE_BEFORE_GTID', value: restore.beforeGtid }] : []),
    ...storeEnv(restore.s3),
  ];
}

/** Runs temporary mysqld servers (initialization, restore, clone): it gets the database's resources. */
function bootstrapContainer(ctx: MySQLClusterContext): k8s.Container {
  const { restore } = ctx.spec;
  return {
    ...baseContainer(ctx, MYSQL_BOOTSTRAP_CONTAINER),
    command: runScript(SCRIPT.bootstrap),
    env: [...memberEnv(ctx), historyEnv(ctx), ...(restore ? restoreEnv(restore) : [])],
    resources: resourceRequirements(ctx.spec.resources),
    volumeMounts: [
      mount(VOLUMES.scripts, PATHS.scripts, true),
      mount(VOLUMES.config, PATHS.config, true),
      // It writes the member's settings (init-config.sh) before anything reads them.
      mount(VOLUMES.memberConfig, PATHS.memberConfig),
      mount(DATA_VOLUME, PATHS.dataVolume),
      mount(VOLUMES.tmp, PATHS.tmp),
      mount(VOLUMES.tls, PATHS.tls, true),
      ...(restore ? storeMounts(restore.s3) : []),
    ],
  };
}

function mysqlContainer(ctx: MySQLClusterContext): k8s.Container {
  // The agent beside mysqld answers the probes from its pooled session (no process per probe). By
  // number: the kubelet looks a named port up in the probed container's own ports, and 9080 is the agent's.
  // Liveness asks only whether mysqld answers (a refusal counts as an answer, so a credentials problem
  // never gets a healthy server killed). Its timeout is the whole period: a busy node is slow, not
  // dead, and killing a database for it is the worse outcome.
  const ping: k8s.Probe = {
    httpGet: { path: AGENT_HTTP_PATHS.live, port: k8s.IntOrString.fromNumber(AGENT_PORT) },
    periodSeconds: 10,
    timeoutSeconds: 10,
  };
  return {
    ...baseContainer(ctx, MYSQL_CONTAINER),
    // mysqld with our my.cnf only, once a clone waiting to replace the data directory is in place.
    command: runScript(SCRIPT.startMysqld),
    ports: [{ name: MYSQL_PORT_NAME, containerPort: MYSQL_PORT }],
    // No password in its environment (it would stay the one of the container's start after a rotation):
    // a person's (and the tests') `kubectl exec … local_sql` reads root's from the mounted credentials.
    env: [podNameEnv],
    resources: resourceRequirements(ctx.spec.resources),
    volumeMounts: [
      mount(VOLUMES.config, PATHS.config, true),
      mount(VOLUMES.memberConfig, PATHS.memberConfig, true),
      mount(VOLUMES.scripts, PATHS.scripts, true),
      mount(DATA_VOLUME, PATHS.dataVolume),
      mount(VOLUMES.run, PATHS.run),
      mount(VOLUMES.tmp, PATHS.tmp),
      mount(VOLUMES.tls, PATHS.tls, true),
      mount(VOLUMES.credentials, PATHS.credentials, true),
    ],
    // Crash recovery of a large instance can take long; until the first ping succeeds, liveness
    // waits (up to an hour) instead of killing a server that is recovering. Asked every 2 s: readiness
    // is not asked before start-up succeeds, so this period is added to every start of mysqld (a
    // member's first, a restart, a failed-over primary's return); an HTTP request to the agent costs
    // next to nothing.
    startupProbe: { ...ping, periodSeconds: 2, failureThreshold: 1800 },
    // Before the kubelet stops mysqld (pod deleted, evicted, drained, a liveness restart), its agent makes
    // it read-only and ends its clients' sessions: mysqld's graceful shutdown tells a client whose commit
    // waits for a replica's acknowledgement that it succeeded (MySQL 9.7, proven in
    // test/integration/mysql-real.test.ts), and a primary cut off from its replicas would so acknowledge
    // writes no replica has. A hook that fails (the agent down) does not hold the stop: the agent records
    // a stop it did not fence as unsafe, and what it held is then never discarded automatically. A command
    // in this container, not an HTTP request by the kubelet: the agent fences only at the request of the
    // pod itself (its loopback), so that no other pod can take the primary's writes away.
    lifecycle: { preStop: { exec: { command: runScript(SCRIPT.preStop) } } },
    livenessProbe: { ...ping, failureThreshold: 6 },
    // Often: a new primary serves writes only once it is ready, and the agent answers from a pooled
    // session. Five failures in a row (10 s) before a member leaves its Service: a busy node is slow.
    readinessProbe: {
      httpGet: { path: AGENT_HTTP_PATHS.ready, port: k8s.IntOrString.fromNumber(AGENT_PORT) },
      periodSeconds: 2,
      timeoutSeconds: 5,
      failureThreshold: 5,
    },
  };
}

/** The agent's memory: Node and mysql2, nothing of cdk8s (measured: docs/mysql-ha.md). */
const AGENT_RESOURCES: k8s.ResourceRequirements = {
  requests: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('48Mi') },
  limits: { memory: k8s.Quantity.fromString('128Mi') },
};

/**
 * `recon8s agent` (lib/agent): the probes, the cluster's accounts on the primary, self-fencing, and
 * re-provisioning a replica by clone. Its termination message is how it reports a re-provisioning
 * (the controller reads it from the pod status): the kubelet's default path and policy.
 */
function agentContainer(ctx: MySQLClusterContext): k8s.Container {
  return {
    name: 'agent',
    image: ctx.spec.agentImage,
    imagePullPolicy: ctx.spec.imagePullPolicy,
    securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
    // The image's entrypoint is the recon8s CLI.
    args: ['agent'],
    ports: [
      { name: AGENT_PORT_NAME, containerPort: AGENT_PORT },
      { name: AGENT_TLS_PORT_NAME, containerPort: AGENT_TLS_PORT },
    ],
    // No password in its environment: it reads them from the mounted Secret each time it uses one, so
    // that a rotated password reaches it without a restart, and it never sets an older one again.
    env: [
      ...memberPlaceEnv(ctx),
      ...(ctx.spec.monitoring.enabled ? [{ name: 'EXPORTER_ACCOUNT', value: 'true' }] : []),
      // The controller's questions, over TLS with the member's certificate (mounted below).
      { name: 'AGENT_TLS_PORT', value: String(AGENT_TLS_PORT) },
      { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
      // Every address of the pod (dual-stack: one per family), none of which is a peer.
      { name: 'POD_IPS', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIPs' } } },
      // Self-fencing is done well before a failover could promote another member: a quarter of the
      // delay, plus a look (a few seconds at most) every second.
      { name: 'SELF_FENCE_AFTER_SECONDS', value: String(Math.max(2, Math.floor(ctx.spec.failoverAfterSeconds / 4))) },
      // Memory over speed: the agent runs a few small queries a second, and its memory is paid per
      // member. Without the JIT, Node with mysql2 and a few TLS sessions keeps ~10 MiB less resident.
      { name: 'NODE_OPTIONS', value: '--jitless --max-old-space-size=48' },
    ],
    resources: AGENT_RESOURCES,
    volumeMounts: [
      // Re-provisioning by clone renames the clone and removes the data it replaced (scripts/reprovision.sh).
      mount(DATA_VOLUME, PATHS.dataVolume),
      mount(VOLUMES.run, PATHS.run),
      mount(VOLUMES.podInfo, PATHS.podInfo, true),
      mount(VOLUMES.tls, PATHS.tls, true),
      mount(VOLUMES.credentials, PATHS.credentials, true),
    ],
  };
}
