// Scheduled logical backups into a volume the user owns (see backup-script.ts for what a backup is).
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { containerSecurityContext, podSecurityContext } from '../common/security.js';
import type { MySQLClusterContext } from './context.js';
import { clusterLabels, objectMeta, secretEnv } from './context.js';
import type { ResolvedMySQLBackup } from './spec.generated.js';
import { BACKUP_COMPONENT, MYSQL_UID, PATHS, SECRET_KEYS } from './layout.js';
import { SCRIPT } from './scripts.js';

const BACKUP_RESOURCES: k8s.ResourceRequirements = {
  requests: { cpu: k8s.Quantity.fromString('100m'), memory: k8s.Quantity.fromString('128Mi') },
  limits: { memory: k8s.Quantity.fromString('512Mi') },
};

export function backupCronJob(
  scope: Construct,
  ctx: MySQLClusterContext,
  backup: ResolvedMySQLBackup,
): k8s.KubeCronJob {
  const { names } = ctx;
  // Labelled as the backup component: these pods must never match the database selector, or the
  // Services would route clients to a backup job and the StatefulSet would count it as a member.
  const labels = clusterLabels(ctx, BACKUP_COMPONENT);
  return new k8s.KubeCronJob(scope, 'Backup', {
    metadata: objectMeta(ctx, names.backup, BACKUP_COMPONENT),
    spec: {
      schedule: backup.schedule,
      // The schedule is documented as UTC: the kube-controller-manager's local zone must not matter.
      timeZone: 'Etc/UTC',
      // Two dumps at once only slow each other down and race on retention.
      concurrencyPolicy: 'Forbid',
      suspend: backup.suspend,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels },
        spec: {
          backoffLimit: 2,
          template: {
            metadata: { labels, annotations: ctx.spec.annotations ? { ...ctx.spec.annotations } : undefined },
            spec: backupPodSpec(ctx, backup),
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

function backupPodSpec(ctx: MySQLClusterContext, backup: ResolvedMySQLBackup): k8s.PodSpec {
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
    containers: [
      {
        name: 'backup',
        image: ctx.image,
        imagePullPolicy: ctx.spec.imagePullPolicy,
        command: ['bash', `${PATHS.scripts}/${SCRIPT.backup}`],
        env: [
          { name: 'CLUSTER_NAME', value: ctx.names.cluster },
          { name: 'BACKUP_HOST', value: backupHost(ctx) },
          { name: 'BACKUP_RETAIN', value: String(backup.retain) },
          secretEnv(ctx, 'MYSQL_ROOT_PASSWORD', SECRET_KEYS.rootPassword),
        ],
        resources: BACKUP_RESOURCES,
        securityContext: containerSecurityContext({ runAsNonRoot: true, readOnlyRootFilesystem: true }),
        volumeMounts: [
          { name: 'scripts', mountPath: PATHS.scripts, readOnly: true },
          { name: 'backup', mountPath: PATHS.backup },
          { name: 'tmp', mountPath: PATHS.tmp },
        ],
      },
    ],
    volumes: [
      { name: 'scripts', configMap: { name: ctx.names.scripts } },
      { name: 'backup', persistentVolumeClaim: { claimName: backup.persistentVolumeClaimName } },
      { name: 'tmp', emptyDir: {} },
    ],
  };
}
