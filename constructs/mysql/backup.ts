// Scheduled backups (logical or physical) into a volume the user owns or an object store, and the binary-log archive
// beside them in the store (see scripts/backup.sh and scripts/binlog.sh for what they are).
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { containerSecurityContext, podSecurityContext } from '../common/security.js';
import type { MySQLClusterContext } from './context.js';
import { clusterLabels, objectMeta, secretEnv } from './context.js';
import type { ResolvedMySQLBackup } from './spec.generated.js';
import { BACKUP_COMPONENT, MYSQL_UID, PATHS, SECRET_KEYS } from './layout.js';
import {
  encryptionKeyVolume,
  rcloneInitContainer,
  storeEnv,
  storeMounts,
  storeVolumes,
  toolsMount,
  toolsVolume,
} from './object-store.js';
import { SCRIPT } from './scripts.js';
import { quantity, quantityBytes, resourceRequirements } from '../common/resources.js';

/** A physical backup's container: the client, a recipient mysqld (a 128 MiB buffer pool) and gzip. */
const PHYSICAL_BACKUP_RESOURCES: k8s.ResourceRequirements = {
  requests: { cpu: k8s.Quantity.fromString('250m'), memory: k8s.Quantity.fromString('512Mi') },
  limits: { memory: k8s.Quantity.fromString('1Gi') },
};

/** How often the binary logs are archived when the spec does not say. */
export const DEFAULT_BINLOG_INTERVAL_MINUTES = 5;

const BACKUP_RESOURCES: k8s.ResourceRequirements = {
  requests: { cpu: k8s.Quantity.fromString('100m'), memory: k8s.Quantity.fromString('128Mi') },
  limits: { memory: k8s.Quantity.fromString('512Mi') },
};

export function backupCronJob(
  scope: Construct,
  ctx: MySQLClusterContext,
  backup: ResolvedMySQLBackup,
): k8s.KubeCronJob {
  const base = backupPodSpec(ctx, backup, SCRIPT.backup, [
    { name: 'BACKUP_HOST', value: backupHost(ctx) },
    { name: 'BACKUP_RETAIN', value: String(backup.retain) },
    { name: 'BACKUP_METHOD', value: backup.method },
  ]);
  const pod = backup.method === 'physical' ? withCloneScratch(ctx, backup, base) : base;
  return cronJob(scope, 'Backup', ctx, {
    name: ctx.names.backup,
    schedule: backup.schedule,
    suspend: backup.suspend,
    // A dump that failed is tried twice more (the Job's back-off: 10 s, 20 s), then at the next schedule.
    backoffLimit: 2,
    pod: backup.s3 && backup.verify.enabled ? withVerification(ctx, backup, pod) : pod,
  });
}

/**
 * The backup, then its verification (scripts/verify-backup.sh): the backup becomes the last init container,
 * so that the verification starts only once it has succeeded, and runs in a container of its own
 * with its own resources and scratch volume. It gets no credential of the cluster's, only the store's.
 */
function withVerification(ctx: MySQLClusterContext, backup: ResolvedMySQLBackup, pod: k8s.PodSpec): k8s.PodSpec {
  const [dump] = pod.containers;
  if (!dump || !backup.s3) return pod;
  const verify = backup.verify;
  return {
    ...pod,
    initContainers: [...(pod.initContainers ?? []), dump],
    containers: [
      {
        name: VERIFY_CONTAINER,
        image: ctx.image,
        imagePullPolicy: ctx.spec.imagePullPolicy,
        command: ['bash', `${PATHS.scripts}/${SCRIPT.verifyBackup}`],
        env: [
          { name: 'CLUSTER_NAME', value: ctx.names.cluster },
          { name: 'VERIFY_SCRATCH_BYTES', value: String(quantityBytes(String(verify.scratchSize))) },
          ...storeEnv(backup.s3),
        ],
        resources: resourceRequirements(verify.resources),
        securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
        volumeMounts: [
          { name: 'scripts', mountPath: PATHS.scripts, readOnly: true },
          ...storeMounts(backup.s3),
          { name: 'tmp', mountPath: PATHS.tmp },
          { name: 'verify-scratch', mountPath: PATHS.verifyScratch },
        ],
      },
    ],
    volumes: [
      ...(pod.volumes ?? []),
      { name: 'verify-scratch', emptyDir: { sizeLimit: quantity(verify.scratchSize) } },
    ],
  };
}

/**
 * A physical backup (scripts/backup.sh) runs a throwaway mysqld that clones a member into a scratch volume
 * of its own (spec.backup.scratchSize) before it streams the copy to the store: that server's memory
 * too, beside the client's.
 */
function withCloneScratch(ctx: MySQLClusterContext, backup: ResolvedMySQLBackup, pod: k8s.PodSpec): k8s.PodSpec {
  return {
    ...pod,
    containers: pod.containers.map((c) => ({
      ...c,
      resources: PHYSICAL_BACKUP_RESOURCES,
      // The clone account (BACKUP_ADMIN): the backup account's grants cannot clone.
      env: [...(c.env ?? []), secretEnv(ctx, 'MYSQL_CLONE_PASSWORD', SECRET_KEYS.clonePassword)],
      volumeMounts: [...(c.volumeMounts ?? []), { name: 'backup-scratch', mountPath: PATHS.backupScratch }],
    })),
    volumes: [
      ...(pod.volumes ?? []),
      { name: 'backup-scratch', emptyDir: { sizeLimit: quantity(backup.scratchSize) } },
    ],
  };
}

/** The verification's container in the backup job's pod. */
export const VERIFY_CONTAINER = 'verify';

/**
 * With backups to an object store, the binary-log archive (every binlogIntervalMinutes; none when 0).
 * Every minute-step of a day that divides it evenly runs exactly on time; others run at the next
 * multiple within the hour.
 */
export function binlogCronJob(
  scope: Construct,
  ctx: MySQLClusterContext,
  backup: ResolvedMySQLBackup,
): k8s.KubeCronJob | undefined {
  const minutes = backup.binlogIntervalMinutes ?? DEFAULT_BINLOG_INTERVAL_MINUTES;
  if (!backup.s3 || minutes === 0) return undefined;
  return cronJob(scope, 'BinlogArchive', ctx, {
    name: ctx.names.binlogArchive,
    schedule: minutes === 60 ? '0 * * * *' : `*/${minutes} * * * *`,
    suspend: backup.suspend,
    // The next run is minutes away and copies whatever this one did not: no retries.
    backoffLimit: 0,
    pod: backupPodSpec(ctx, backup, SCRIPT.binlog, [{ name: 'PRIMARY_HOST', value: ctx.names.primaryHost }]),
  });
}

interface CronJobOptions {
  readonly name: string;
  readonly schedule: string;
  readonly suspend: boolean;
  readonly backoffLimit: number;
  readonly pod: k8s.PodSpec;
}

function cronJob(scope: Construct, id: string, ctx: MySQLClusterContext, o: CronJobOptions): k8s.KubeCronJob {
  // Labelled as the backup component: these pods must never match the database selector, or the
  // Services would route clients to a backup job and the StatefulSet would count it as a member.
  const labels = clusterLabels(ctx, BACKUP_COMPONENT);
  return new k8s.KubeCronJob(scope, id, {
    metadata: objectMeta(ctx, o.name, BACKUP_COMPONENT),
    spec: {
      schedule: o.schedule,
      // The schedule is documented as UTC: the kube-controller-manager's local zone must not matter.
      timeZone: 'Etc/UTC',
      // Two runs at once only slow each other down and race on retention.
      concurrencyPolicy: 'Forbid',
      suspend: o.suspend,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels },
        spec: {
          backoffLimit: o.backoffLimit,
          template: {
            metadata: { labels, annotations: ctx.spec.annotations ? { ...ctx.spec.annotations } : undefined },
            spec: o.pod,
          },
        },
      },
    },
  });
}

/**
 * Dumps from the replicas Service when there are replicas (any ready member; usually a replica, so
 * the primary's writers do not share their server with the dump), otherwise from the primary.
 */
function backupHost(ctx: MySQLClusterContext): string {
  return ctx.spec.replicas > 1 ? ctx.names.replicasService : ctx.names.primaryService;
}

function backupPodSpec(
  ctx: MySQLClusterContext,
  backup: ResolvedMySQLBackup,
  script: string,
  env: readonly k8s.EnvVar[],
): k8s.PodSpec {
  const store = backup.s3;
  const destination = store
    ? {
        mounts: storeMounts(store),
        volumes: storeVolumes(store),
        env: storeEnv(store),
        rcloneImage: store.rcloneImage,
      }
    : volumeDestination(backup);
  return {
    // The same identity as the database, so the files on the backup volume belong to the mysql user.
    securityContext: {
      ...podSecurityContext({ runAsUser: MYSQL_UID, runAsGroup: MYSQL_UID, fsGroup: MYSQL_UID, runAsNonRoot: true }),
      fsGroupChangePolicy: 'OnRootMismatch',
    },
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    nodeSelector: ctx.spec.nodeSelector ? { ...ctx.spec.nodeSelector } : undefined,
    tolerations: ctx.spec.tolerations ? [...ctx.spec.tolerations] : undefined,
    initContainers: destination.rcloneImage
      ? [rcloneInitContainer(destination.rcloneImage, ctx.spec.imagePullPolicy)]
      : undefined,
    containers: [
      {
        name: script === SCRIPT.binlog ? 'binlog' : 'backup',
        image: ctx.image,
        imagePullPolicy: ctx.spec.imagePullPolicy,
        command: ['bash', `${PATHS.scripts}/${script}`],
        env: [
          { name: 'CLUSTER_NAME', value: ctx.names.cluster },
          ...env,
          // The backup account's password, and no other of the cluster's (root's least of all).
          secretEnv(ctx, 'MYSQL_BACKUP_PASSWORD', SECRET_KEYS.backupPassword),
          ...destination.env,
        ],
        resources: BACKUP_RESOURCES,
        securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
        volumeMounts: [
          { name: 'scripts', mountPath: PATHS.scripts, readOnly: true },
          ...destination.mounts,
          { name: 'tmp', mountPath: PATHS.tmp },
          { name: 'tls', mountPath: PATHS.tls, readOnly: true },
        ],
      },
    ],
    volumes: [
      { name: 'scripts', configMap: { name: ctx.names.scripts } },
      ...destination.volumes,
      { name: 'tmp', emptyDir: {} },
      // Only the CA certificate, to verify the member it dumps from: a job is a client, it needs no key.
      { name: 'tls', secret: { secretName: ctx.names.tlsSecret, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    ],
  };
}

const BACKUP_KEY_VOLUME = 'backup-key';

/**
 * A backup volume as the backup job writes to it (scripts/backup.sh): the claim, and with
 * backup.encryption rclone (copied in from its image) and the key's file, whose path alone is in the
 * environment (the key never is).
 */
function volumeDestination(backup: ResolvedMySQLBackup): {
  mounts: k8s.VolumeMount[];
  volumes: k8s.Volume[];
  env: k8s.EnvVar[];
  rcloneImage: string | undefined;
} {
  const claim: k8s.Volume = {
    name: 'backup',
    persistentVolumeClaim: { claimName: backup.persistentVolumeClaimName ?? '' },
  };
  const encryption = backup.encryption;
  if (!encryption) {
    return { mounts: [{ name: 'backup', mountPath: PATHS.backup }], volumes: [claim], env: [], rcloneImage: undefined };
  }
  return {
    mounts: [
      { name: 'backup', mountPath: PATHS.backup },
      toolsMount,
      { name: BACKUP_KEY_VOLUME, mountPath: PATHS.backupKey, readOnly: true },
    ],
    volumes: [claim, toolsVolume, encryptionKeyVolume(BACKUP_KEY_VOLUME, encryption.secretRef)],
    env: [{ name: 'BACKUP_ENCRYPTION_KEY_FILE', value: PATHS.backupKeyFile }],
    rcloneImage: encryption.rcloneImage,
  };
}
