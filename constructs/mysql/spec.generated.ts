// Generated from constructs/mysql/spec.ts by constructs/schema/codegen.ts (npm run codegen). Do not edit.
import type { k8s } from 'cdk8s-plus-28';

/**
 * A highly available MySQL cluster: one writable primary (any member; the controller records it in
 * status.currentPrimary) and read-only replicas that follow it by semi-synchronous GTID
 * replication.
 */
export interface MySQLClusterSpec {
  /**
   * Members: 1 primary plus replicas-1 read-only replicas.
   * @default 3
   */
  readonly replicas?: number;
  /**
   * Replicas that must have received a transaction before its commit is acknowledged to the client
   * (semi-synchronous replication, AFTER_SYNC). Every acknowledged write then survives the loss of
   * the primary. With fewer replicas up, writes wait rather than risk loss; 0 turns semi-synchronous
   * replication off (a failover may then lose the last acknowledged writes).
   * @default - half the members, rounded down (1 for 2 or 3 members, 2 for 4 or 5)
   */
  readonly semiSyncReplicas?: number;
  /**
   * How long the primary may be unreachable before a replica is promoted (when a majority of members
   * answers and a replica holds every acknowledged transaction). A primary that comes back after a
   * restart is replaced at once. A primary cut off from every other member makes itself read-only
   * after a quarter of this.
   * @default 30
   */
  readonly failoverAfterSeconds?: number;
  /**
   * MySQL long-term-support release: "8.4" or "9.7". End-of-life releases (5.7, 8.0) are refused;
   * downgrades too.
   * @default "9.7"
   */
  readonly version?: "8.4" | "9.7";
  /**
   * Overrides the container image (it must be the same release as version).
   * @default - mysql:<version>
   */
  readonly image?: string;
  /**
   * The image of the agent beside mysqld in every member (`recon8s agent`: probes, self-fencing,
   * accounts, re-provisioning): the recon8s image of the same release as the controller.
   * @default "ghcr.io/recon8s/recon8s:0.1.0"
   */
  readonly agentImage?: string;
  /**
   * The PersistentVolumeClaim each member gets for its data directory.
   * @default - 10Gi ReadWriteOnce volumes of the default StorageClass
   */
  readonly storage?: MySQLStorage;
  /**
   * Compute resources of the main container. When set, exactly these requests and limits are used. A
   * CPU limit is not set by default: it throttles without protecting anything.
   * @default {"requests":{"cpu":"250m","memory":"1Gi"},"limits":{"memory":"1Gi"}}
   */
  readonly resources?: ResourceRequirements;
  /**
   * The Secret holding the passwords (keys root-password, replication-password and admin-password,
   * the last for the account the controller manages the members as). When you create it, recon8s
   * only reads it; when it is the default and missing, the controller creates it once with random
   * passwords (and adds a missing admin-password to one it created before). Passwords never appear
   * in the spec.
   * @default - <name>-credentials
   */
  readonly credentialsSecretName?: string;
  /**
   * The Secret holding the certificate every member presents (keys tls.crt, tls.key and ca.crt, as
   * cert-manager writes them): clients verify members with ca.crt before they send a password. When
   * you name one (a cert-manager Certificate whose DNS names include each member as
   * <name>-N.<name>-headless and the Services), recon8s only reads it; when it is the default and
   * missing, the controller creates a CA of the cluster (in <name>-ca, never mounted in a pod) and
   * the member certificate, and renews the latter, with no restart, while a third of its year is
   * left.
   * @default - <name>-tls
   */
  readonly tlsSecretName?: string;
  /**
   * Extra my.cnf [mysqld] options. Replication and identity options (server-id, gtid_mode,
   * read_only, log_bin, ...) are managed by recon8s and refused here.
   * @default - none
   */
  readonly mysqlConf?: Readonly<Record<string, string>>;
  /**
   * Scheduled logical backups: the application's schemas (one consistent snapshot at a recorded GTID
   * set) and accounts, never the mysql schema; taken from a replica when there is one. Into a
   * PersistentVolumeClaim, or into an object store together with the binary logs, from which
   * `restore` creates a new cluster at any point in time.
   * @default - none
   */
  readonly backup?: MySQLBackup;
  /**
   * Create this cluster from another one's backup in an object store: its first member loads the
   * backup, replays the archived binary logs up to the point asked for, and only then starts
   * serving; the other members clone it. Only when the cluster is created (fixed afterwards). The
   * cluster keeps its own credentials Secret; the application's accounts come with the backup.
   * @default - none
   */
  readonly restore?: MySQLRestore;
  /**
   * What happens to data volumes when the cluster is deleted or scaled down. Data is kept unless you
   * say otherwise.
   * @default - Retain when deleted and when scaled down
   */
  readonly pvcRetention?: MySQLPvcRetention;
  /**
   * Per-member metrics: a mysqld_exporter sidecar in every member pod (replication lag,
   * semi-synchronous replication, connections, InnoDB and query figures), logging in over the pod
   * loopback as a read-only account of its own (recon8s-exporter: PROCESS, REPLICATION CLIENT,
   * SELECT on performance_schema) whose password is the credentials Secret key exporter-password.
   * The pods carry the prometheus.io/scrape, port and path annotations.
   * @default - off
   */
  readonly monitoring?: MySQLMonitoring;
  /**
   * Labels added to every rendered object and to the pod template (never to selectors). Keys under
   * app.kubernetes.io/ are reserved.
   * @default - none
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * Annotations added to every rendered object and to the pod template.
   * @default - none
   */
  readonly annotations?: Readonly<Record<string, string>>;
  /**
   * Node labels a pod requires (nodeSelector).
   * @default - none
   */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /**
   * Tolerations of the pods, as in a PodSpec (validated by the API server when the workload is
   * applied).
   * @default - none
   */
  readonly tolerations?: readonly k8s.Toleration[];
  /**
   * Affinity of the pods, as in a PodSpec (validated by the API server when the workload is
   * applied).
   * @default - a preferred anti-affinity that spreads pods across nodes
   */
  readonly affinity?: k8s.Affinity;
  /**
   * When the kubelet pulls the image.
   * @default "IfNotPresent"
   */
  readonly imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /**
   * Pause reconciliation: the controller leaves this resource's children exactly as they are (no
   * apply, no prune, no Secret writes) and reports Progressing=False reason Paused, until this is
   * cleared. cdk8s synth ignores it.
   * @default false
   */
  readonly paused?: boolean;
}

/** {@link MySQLClusterSpec} with every default applied. */
export interface ResolvedMySQLClusterSpec {
  readonly replicas: number;
  readonly semiSyncReplicas?: number;
  readonly failoverAfterSeconds: number;
  readonly version: "8.4" | "9.7";
  readonly image?: string;
  readonly agentImage: string;
  readonly storage: ResolvedMySQLStorage;
  readonly resources: ResolvedResourceRequirements;
  readonly credentialsSecretName?: string;
  readonly tlsSecretName?: string;
  readonly mysqlConf?: Readonly<Record<string, string>>;
  readonly backup?: ResolvedMySQLBackup;
  readonly restore?: ResolvedMySQLRestore;
  readonly pvcRetention: ResolvedMySQLPvcRetention;
  readonly monitoring: ResolvedMySQLMonitoring;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly k8s.Toleration[];
  readonly affinity?: k8s.Affinity;
  readonly imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  readonly paused: boolean;
}

/**
 * The PersistentVolumeClaim each member gets for its data directory.
 */
export interface MySQLStorage {
  /**
   * Capacity of each data volume, greater than zero. It may grow (when the StorageClass allows
   * expansion) but never shrink.
   * @default "10Gi"
   */
  readonly size?: string | number;
  /**
   * The StorageClass of the volumes. Fixed once created.
   * @default - the cluster default StorageClass
   */
  readonly storageClassName?: string;
  /**
   * Access modes of the volumes. Fixed once created.
   * @default ["ReadWriteOnce"]
   */
  readonly accessModes?: ReadonlyArray<"ReadWriteOnce" | "ReadWriteOncePod" | "ReadWriteMany">;
}

/** {@link MySQLStorage} with every default applied. */
export interface ResolvedMySQLStorage {
  readonly size: string | number;
  readonly storageClassName?: string;
  readonly accessModes: ReadonlyArray<"ReadWriteOnce" | "ReadWriteOncePod" | "ReadWriteMany">;
}

/**
 * Compute resources of the main container. When set, exactly these requests and limits are used. A
 * CPU limit is not set by default: it throttles without protecting anything.
 */
export interface ResourceRequirements {
  /**
   * What the scheduler reserves for the container.
   * @default - none
   */
  readonly requests?: ResourceList;
  /**
   * The most the container may use.
   * @default - none
   */
  readonly limits?: ResourceList;
}

/** {@link ResourceRequirements} with every default applied. */
export interface ResolvedResourceRequirements {
  readonly requests?: ResolvedResourceList;
  readonly limits?: ResolvedResourceList;
}

/**
 * What the scheduler reserves for the container.
 */
export interface ResourceList {
  /**
   * CPU, in cores, e.g. "250m" or 1.
   * @default - none
   */
  readonly cpu?: string | number;
  /**
   * Memory, with a byte unit, e.g. "256Mi".
   * @default - none
   */
  readonly memory?: string | number;
}

/** {@link ResourceList} with every default applied. */
export interface ResolvedResourceList {
  readonly cpu?: string | number;
  readonly memory?: string | number;
}

/**
 * Scheduled logical backups: the application's schemas (one consistent snapshot at a recorded GTID
 * set) and accounts, never the mysql schema; taken from a replica when there is one. Into a
 * PersistentVolumeClaim, or into an object store together with the binary logs, from which
 * `restore` creates a new cluster at any point in time.
 */
export interface MySQLBackup {
  /**
   * When to back up, as a cron expression in UTC, e.g. "0 3 * * *".
   */
  readonly schedule: string;
  /**
   * The existing PersistentVolumeClaim the backups are written to. recon8s never creates or deletes
   * it.
   * @default - none
   */
  readonly persistentVolumeClaimName?: string;
  /**
   * An S3-compatible bucket (AWS S3 or a self-hosted store). The credentials come from a Secret:
   * they never appear in the spec, a log, an Event or a command line.
   * @default - none
   */
  readonly s3?: MySQLObjectStore;
  /**
   * With s3: how often the binary logs are archived (the primary switches to a new log, and the
   * closed ones are copied). A point-in-time restore reaches at most the last archived log. 0
   * archives none.
   * @default - 5 with s3
   */
  readonly binlogIntervalMinutes?: number;
  /**
   * How many backups to keep; older ones (and binary logs only they needed) are removed after a
   * successful backup.
   * @default 7
   */
  readonly retain?: number;
  /**
   * Pause the schedule without removing it.
   * @default false
   */
  readonly suspend?: boolean;
  /**
   * With s3: after each backup, the backup job restores it, and the archived binary logs after it,
   * into a scratch mysqld of its own (an emptyDir volume, no network, nothing shared with the
   * cluster), checks every table (CHECK TABLE) and compares each table's row count and CHECKSUM
   * TABLE with those the backup recorded in its own snapshot. The result is
   * status.backup.lastVerified, an Event, metrics, and Degraded (BackupVerificationFailed) when it
   * fails. `recon8s backup verify` runs it on demand.
   * @default - enabled, with a 10Gi scratch volume
   */
  readonly verify?: MySQLBackupVerify;
}

/** {@link MySQLBackup} with every default applied. */
export interface ResolvedMySQLBackup {
  readonly schedule: string;
  readonly persistentVolumeClaimName?: string;
  readonly s3?: ResolvedMySQLObjectStore;
  readonly binlogIntervalMinutes?: number;
  readonly retain: number;
  readonly suspend: boolean;
  readonly verify: ResolvedMySQLBackupVerify;
}

/**
 * An S3-compatible bucket (AWS S3 or a self-hosted store). The credentials come from a Secret:
 * they never appear in the spec, a log, an Event or a command line.
 */
export interface MySQLObjectStore {
  /**
   * The bucket. recon8s never creates or deletes it.
   */
  readonly bucket: string;
  /**
   * The folder within the bucket that holds one cluster's backups (base/<backup>/) and binary logs
   * (binlog/), e.g. "prod/orders". A restore names the source cluster's prefix.
   */
  readonly prefix: string;
  /**
   * The store's URL, e.g. "https://minio.storage.svc:9000".
   * @default - AWS S3 of the region
   */
  readonly endpoint?: string;
  /**
   * The region the requests are signed for.
   * @default "us-east-1"
   */
  readonly region?: string;
  /**
   * Address the bucket in the path (https://endpoint/bucket/key) rather than as a host name:
   * self-hosted stores need it.
   * @default true
   */
  readonly forcePathStyle?: boolean;
  /**
   * The Secret holding the access key (keys access-key-id and secret-access-key). recon8s only reads
   * it.
   */
  readonly credentialsSecretName: string;
  /**
   * An image with the rclone client on its PATH and a POSIX shell: rclone is copied from it into the
   * pods that talk to the store (the official MySQL images have none; the mysql image of the project
   * test node has it, so there rcloneImage may name that image).
   * @default "docker.io/rclone/rclone:1.75.2"
   */
  readonly rcloneImage?: string;
}

/** {@link MySQLObjectStore} with every default applied. */
export interface ResolvedMySQLObjectStore {
  readonly bucket: string;
  readonly prefix: string;
  readonly endpoint?: string;
  readonly region: string;
  readonly forcePathStyle: boolean;
  readonly credentialsSecretName: string;
  readonly rcloneImage: string;
}

/**
 * With s3: after each backup, the backup job restores it, and the archived binary logs after it,
 * into a scratch mysqld of its own (an emptyDir volume, no network, nothing shared with the
 * cluster), checks every table (CHECK TABLE) and compares each table's row count and CHECKSUM
 * TABLE with those the backup recorded in its own snapshot. The result is
 * status.backup.lastVerified, an Event, metrics, and Degraded (BackupVerificationFailed) when it
 * fails. `recon8s backup verify` runs it on demand.
 */
export interface MySQLBackupVerify {
  /**
   * Verify each backup.
   * @default true
   */
  readonly enabled?: boolean;
  /**
   * The scratch volume's size limit (emptyDir sizeLimit). A backup whose tables (data and indexes,
   * as recorded when it was taken) do not fit in half of it is not verified: the result says so
   * (Skipped).
   * @default "10Gi"
   */
  readonly scratchSize?: string | number;
  /**
   * Compute resources of the verification (its scratch mysqld and the restore into it). When set,
   * exactly these requests and limits are used. A CPU limit is not set by default: it throttles
   * without protecting anything.
   * @default {"requests":{"cpu":"250m","memory":"512Mi"},"limits":{"memory":"1Gi"}}
   */
  readonly resources?: MySQLBackupVerifyResources;
}

/** {@link MySQLBackupVerify} with every default applied. */
export interface ResolvedMySQLBackupVerify {
  readonly enabled: boolean;
  readonly scratchSize: string | number;
  readonly resources: ResolvedMySQLBackupVerifyResources;
}

/**
 * Compute resources of the verification (its scratch mysqld and the restore into it). When set,
 * exactly these requests and limits are used. A CPU limit is not set by default: it throttles
 * without protecting anything.
 */
export interface MySQLBackupVerifyResources {
  /**
   * What the scheduler reserves for the container.
   * @default - none
   */
  readonly requests?: ResourceList;
  /**
   * The most the container may use.
   * @default - none
   */
  readonly limits?: ResourceList;
}

/** {@link MySQLBackupVerifyResources} with every default applied. */
export interface ResolvedMySQLBackupVerifyResources {
  readonly requests?: ResolvedResourceList;
  readonly limits?: ResolvedResourceList;
}

/**
 * Create this cluster from another one's backup in an object store: its first member loads the
 * backup, replays the archived binary logs up to the point asked for, and only then starts
 * serving; the other members clone it. Only when the cluster is created (fixed afterwards). The
 * cluster keeps its own credentials Secret; the application's accounts come with the backup.
 */
export interface MySQLRestore {
  /**
   * An S3-compatible bucket (AWS S3 or a self-hosted store). The credentials come from a Secret:
   * they never appear in the spec, a log, an Event or a command line.
   */
  readonly s3: MySQLObjectStore;
  /**
   * The backup to start from: its name (the UTC time it started, e.g. "20261124T030000Z"), or
   * "latest" (with pointInTime: the latest that ended before it; with beforeGtid: the latest that
   * does not hold that transaction).
   * @default "latest"
   */
  readonly backup?: string;
  /**
   * Replay the binary logs up to this moment (UTC): every transaction committed before it, none at
   * or after it. The restore fails, serving nothing, if the archive does not reach it.
   * @default - none
   */
  readonly pointInTime?: string;
  /**
   * Replay exactly the archived transactions in this GTID set (beyond the backup). The restore fails
   * if the archive lacks any of them.
   * @default - none
   */
  readonly gtidSet?: string;
  /**
   * Replay the archived binary logs up to this transaction, without it: everything archived before
   * it, in the order it was archived (so a bad statement is left out even when other writes share
   * its second). The restore fails if the archive after the backup does not hold it, or the backup
   * already does.
   * @default - none
   */
  readonly beforeGtid?: string;
}

/** {@link MySQLRestore} with every default applied. */
export interface ResolvedMySQLRestore {
  readonly s3: ResolvedMySQLObjectStore;
  readonly backup: string;
  readonly pointInTime?: string;
  readonly gtidSet?: string;
  readonly beforeGtid?: string;
}

/**
 * What happens to data volumes when the cluster is deleted or scaled down. Data is kept unless you
 * say otherwise.
 */
export interface MySQLPvcRetention {
  /**
   * On deleting the MySQLCluster.
   * @default "Retain"
   */
  readonly whenDeleted?: "Retain" | "Delete";
  /**
   * On scaling replicas down.
   * @default "Retain"
   */
  readonly whenScaled?: "Retain" | "Delete";
}

/** {@link MySQLPvcRetention} with every default applied. */
export interface ResolvedMySQLPvcRetention {
  readonly whenDeleted: "Retain" | "Delete";
  readonly whenScaled: "Retain" | "Delete";
}

/**
 * Per-member metrics: a mysqld_exporter sidecar in every member pod (replication lag,
 * semi-synchronous replication, connections, InnoDB and query figures), logging in over the pod
 * loopback as a read-only account of its own (recon8s-exporter: PROCESS, REPLICATION CLIENT,
 * SELECT on performance_schema) whose password is the credentials Secret key exporter-password.
 * The pods carry the prometheus.io/scrape, port and path annotations.
 */
export interface MySQLMonitoring {
  /**
   * Run the metrics sidecar.
   * @default false
   */
  readonly enabled?: boolean;
  /**
   * The mysqld_exporter image, 0.15 or later, with mysqld_exporter on its PATH (the project test
   * node image has it).
   * @default "quay.io/prometheus/mysqld-exporter:v0.19.0"
   */
  readonly image?: string;
  /**
   * The port the sidecar serves /metrics on (container port named metrics).
   * @default 9104
   */
  readonly port?: number;
  /**
   * Compute resources of the metrics sidecar (its memory limit bounds it). When set, exactly these
   * requests and limits are used. A CPU limit is not set by default: it throttles without protecting
   * anything.
   * @default {"requests":{"cpu":"10m","memory":"32Mi"},"limits":{"memory":"64Mi"}}
   */
  readonly resources?: MySQLExporterResources;
}

/** {@link MySQLMonitoring} with every default applied. */
export interface ResolvedMySQLMonitoring {
  readonly enabled: boolean;
  readonly image: string;
  readonly port: number;
  readonly resources: ResolvedMySQLExporterResources;
}

/**
 * Compute resources of the metrics sidecar (its memory limit bounds it). When set, exactly these
 * requests and limits are used. A CPU limit is not set by default: it throttles without protecting
 * anything.
 */
export interface MySQLExporterResources {
  /**
   * What the scheduler reserves for the container.
   * @default - none
   */
  readonly requests?: ResourceList;
  /**
   * The most the container may use.
   * @default - none
   */
  readonly limits?: ResourceList;
}

/** {@link MySQLExporterResources} with every default applied. */
export interface ResolvedMySQLExporterResources {
  readonly requests?: ResolvedResourceList;
  readonly limits?: ResolvedResourceList;
}

/**
 * What the controller last observed.
 */
export interface MySQLClusterStatus {
  /**
   * The metadata.generation this status describes.
   * @default - none
   */
  readonly observedGeneration?: number;
  /**
   * Conditions Ready, Progressing and Degraded.
   * @default - none
   */
  readonly conditions?: readonly Condition[];
  /**
   * Members of the StatefulSet.
   * @default - none
   */
  readonly replicas?: number;
  /**
   * Members that are ready.
   * @default - none
   */
  readonly readyReplicas?: number;
  /**
   * The label selector of the members (for the scale subresource).
   * @default - none
   */
  readonly selector?: string;
  /**
   * Host:port of the writable primary.
   * @default - none
   */
  readonly primaryEndpoint?: string;
  /**
   * Host:port for reads.
   * @default - none
   */
  readonly replicasEndpoint?: string;
  /**
   * The Secret holding the passwords.
   * @default - none
   */
  readonly credentialsSecretName?: string;
  /**
   * The Secret holding the members’ certificate; its ca.crt verifies them.
   * @default - none
   */
  readonly tlsSecretName?: string;
  /**
   * The member (pod) that takes writes; the controller alone moves it.
   * @default - none
   */
  readonly currentPrimary?: string;
  /**
   * What each member answered when the controller last looked.
   * @default - none
   */
  readonly members?: readonly MySQLMemberStatus[];
  /**
   * The accounts of the Apps bound to this cluster (App spec.database), as the controller last made
   * them on the primary.
   * @default - none
   */
  readonly accounts?: readonly MySQLAccountStatus[];
  /**
   * The rotation of the cluster's own accounts: root, replication and recon8s-admin (`recon8s
   * rotate-credentials mysqlcluster`, the recon8s.dev/rotate-credentials annotation). Never holds a
   * password.
   * @default - none
   */
  readonly credentialRotation?: MySQLCredentialRotationStatus;
  /**
   * The backups and the binary-log archive, as their jobs last reported.
   * @default - none
   */
  readonly backup?: MySQLBackupStatus;
  /**
   * How this cluster was restored (spec.restore), as its first member reported.
   * @default - none
   */
  readonly restore?: MySQLRestoreStatus;
  /**
   * The last failure of the restore (spec.restore), kept until the restore succeeds or the resource
   * changes: a crash-looping restore is reported failed in every phase of its back-off.
   * @default - none
   */
  readonly restoreFailure?: MySQLRestoreFailureStatus;
  /**
   * A primary’s term, recorded before it took a write: what a failover from it can later prove about
   * what it holds.
   * @default - none
   */
  readonly primaryTerm?: MySQLPrimaryTermStatus;
  /**
   * The last failover: what the controller knew when it promoted a replica, so that the former
   * primary may rejoin by clone on its own when what it holds beyond the new primary provably was
   * never acknowledged.
   * @default - none
   */
  readonly lastFailover?: MySQLFailoverStatus;
  /**
   * The last switchover request (annotation recon8s.dev/switchover) and how it ended.
   * @default - none
   */
  readonly switchover?: MySQLSwitchoverStatus;
}

/** {@link MySQLClusterStatus} with every default applied. */
export interface ResolvedMySQLClusterStatus {
  readonly observedGeneration?: number;
  readonly conditions?: readonly ResolvedCondition[];
  readonly replicas?: number;
  readonly readyReplicas?: number;
  readonly selector?: string;
  readonly primaryEndpoint?: string;
  readonly replicasEndpoint?: string;
  readonly credentialsSecretName?: string;
  readonly tlsSecretName?: string;
  readonly currentPrimary?: string;
  readonly members?: readonly ResolvedMySQLMemberStatus[];
  readonly accounts?: readonly ResolvedMySQLAccountStatus[];
  readonly credentialRotation?: ResolvedMySQLCredentialRotationStatus;
  readonly backup?: ResolvedMySQLBackupStatus;
  readonly restore?: ResolvedMySQLRestoreStatus;
  readonly restoreFailure?: ResolvedMySQLRestoreFailureStatus;
  readonly primaryTerm?: ResolvedMySQLPrimaryTermStatus;
  readonly lastFailover?: ResolvedMySQLFailoverStatus;
  readonly switchover?: ResolvedMySQLSwitchoverStatus;
}

/**
 * One aspect of the current state (metav1.Condition).
 */
export interface Condition {
  /**
   * Ready, Progressing or Degraded.
   */
  readonly type: string;
  /**
   * True, False or Unknown.
   */
  readonly status: "True" | "False" | "Unknown";
  /**
   * The metadata.generation this condition was set from.
   * @default - none
   */
  readonly observedGeneration?: number;
  /**
   * When status last changed (RFC 3339).
   */
  readonly lastTransitionTime: string;
  /**
   * A CamelCase reason for the last transition.
   */
  readonly reason: string;
  /**
   * A human-readable explanation.
   */
  readonly message: string;
}

/** {@link Condition} with every default applied. */
export interface ResolvedCondition {
  readonly type: string;
  readonly status: "True" | "False" | "Unknown";
  readonly observedGeneration?: number;
  readonly lastTransitionTime: string;
  readonly reason: string;
  readonly message: string;
}

/**
 * One member.
 */
export interface MySQLMemberStatus {
  /**
   * The pod.
   */
  readonly name: string;
  /**
   * primary, replica, or none (serving nothing: not yet configured, unreachable, errant).
   */
  readonly role: "primary" | "replica" | "none";
  /**
   * It answered the controller over SQL.
   */
  readonly reachable: boolean;
  /**
   * read_only is off.
   * @default - none
   */
  readonly writable?: boolean;
  /**
   * It replicates from the primary.
   * @default - none
   */
  readonly replicating?: boolean;
  /**
   * Transactions it holds that the primary lacks (a GTID set).
   * @default - none
   */
  readonly errantTransactions?: string;
  /**
   * Why it did not answer, or its replication error.
   * @default - none
   */
  readonly message?: string;
}

/** {@link MySQLMemberStatus} with every default applied. */
export interface ResolvedMySQLMemberStatus {
  readonly name: string;
  readonly role: "primary" | "replica" | "none";
  readonly reachable: boolean;
  readonly writable?: boolean;
  readonly replicating?: boolean;
  readonly errantTransactions?: string;
  readonly message?: string;
}

/**
 * One App's account.
 */
export interface MySQLAccountStatus {
  /**
   * The App, in the namespace of the cluster.
   */
  readonly app: string;
  /**
   * The MySQL account (host %).
   */
  readonly user: string;
  /**
   * The database it is granted.
   * @default - none
   */
  readonly database?: string;
  /**
   * readWrite or readOnly.
   * @default - none
   */
  readonly access?: string;
  /**
   * The account exists with exactly that access.
   */
  readonly ready: boolean;
  /**
   * Why not, in one word.
   * @default - none
   */
  readonly reason?: string;
  /**
   * What was done, or why not.
   * @default - none
   */
  readonly message?: string;
  /**
   * The revision of the App's password the account holds (a rotation's token, or 0 for the first);
   * absent when it is neither of the App Secret's.
   * @default - none
   */
  readonly passwordRevision?: string;
  /**
   * The account also accepts a retained (old) password, during a rotation.
   * @default - none
   */
  readonly retainsPassword?: boolean;
}

/** {@link MySQLAccountStatus} with every default applied. */
export interface ResolvedMySQLAccountStatus {
  readonly app: string;
  readonly user: string;
  readonly database?: string;
  readonly access?: string;
  readonly ready: boolean;
  readonly reason?: string;
  readonly message?: string;
  readonly passwordRevision?: string;
  readonly retainsPassword?: boolean;
}

/**
 * The rotation of the cluster's own accounts: root, replication and recon8s-admin (`recon8s
 * rotate-credentials mysqlcluster`, the recon8s.dev/rotate-credentials annotation). Never holds a
 * password.
 */
export interface MySQLCredentialRotationStatus {
  /**
   * The token of the rotation asked for.
   * @default - none
   */
  readonly requested?: string;
  /**
   * The accounts it rotates.
   * @default - none
   */
  readonly accounts?: ReadonlyArray<"root" | "replication" | "admin">;
  /**
   * The token of the last rotation completed (the old passwords refused).
   * @default - none
   */
  readonly completed?: string;
  /**
   * The phase of the rotation under way: Staging, Retaining, Switching, Repointing,
   * WaitingForClients, Discarding, Completing, Repairing, WaitingForAccount or Refused; absent when
   * none is.
   * @default - none
   */
  readonly phase?: string;
  /**
   * What is being done, or waited for.
   * @default - none
   */
  readonly message?: string;
}

/** {@link MySQLCredentialRotationStatus} with every default applied. */
export interface ResolvedMySQLCredentialRotationStatus {
  readonly requested?: string;
  readonly accounts?: ReadonlyArray<"root" | "replication" | "admin">;
  readonly completed?: string;
  readonly phase?: string;
  readonly message?: string;
}

/**
 * The backups and the binary-log archive, as their jobs last reported.
 */
export interface MySQLBackupStatus {
  /**
   * When the last backup that completed ended.
   * @default - none
   */
  readonly lastSuccessfulTime?: string;
  /**
   * That backup (its name is the UTC time it started).
   * @default - none
   */
  readonly name?: string;
  /**
   * Where it is (s3://bucket/prefix/base/<name>/, or a file).
   * @default - none
   */
  readonly location?: string;
  /**
   * Its size, compressed.
   * @default - none
   */
  readonly sizeBytes?: number;
  /**
   * The transactions it holds (its consistent point).
   * @default - none
   */
  readonly gtidSet?: string;
  /**
   * How long it took.
   * @default - none
   */
  readonly durationSeconds?: number;
  /**
   * The member it was taken from.
   * @default - none
   */
  readonly source?: string;
  /**
   * Every transaction committed before this time is in the binary-log archive.
   * @default - none
   */
  readonly binlogsArchivedUntil?: string;
  /**
   * The last verification of a backup by a restore (spec.backup.verify).
   * @default - none
   */
  readonly lastVerified?: MySQLBackupVerificationStatus;
}

/** {@link MySQLBackupStatus} with every default applied. */
export interface ResolvedMySQLBackupStatus {
  readonly lastSuccessfulTime?: string;
  readonly name?: string;
  readonly location?: string;
  readonly sizeBytes?: number;
  readonly gtidSet?: string;
  readonly durationSeconds?: number;
  readonly source?: string;
  readonly binlogsArchivedUntil?: string;
  readonly lastVerified?: ResolvedMySQLBackupVerificationStatus;
}

/**
 * The last verification of a backup by a restore (spec.backup.verify).
 */
export interface MySQLBackupVerificationStatus {
  /**
   * The backup verified.
   */
  readonly backup: string;
  /**
   * When the verification ended.
   */
  readonly time: string;
  /**
   * Passed, Failed (message says what: the object that could not be read, the table that differs) or
   * Skipped (message says why).
   */
  readonly result: "Passed" | "Failed" | "Skipped";
  /**
   * How long it took.
   * @default - none
   */
  readonly durationSeconds?: number;
  /**
   * How many tables were checked.
   * @default - none
   */
  readonly tables?: number;
  /**
   * How many archived binary logs were replayed after it.
   * @default - none
   */
  readonly replayedLogs?: number;
  /**
   * What failed, or why it was skipped.
   * @default - none
   */
  readonly message?: string;
}

/** {@link MySQLBackupVerificationStatus} with every default applied. */
export interface ResolvedMySQLBackupVerificationStatus {
  readonly backup: string;
  readonly time: string;
  readonly result: "Passed" | "Failed" | "Skipped";
  readonly durationSeconds?: number;
  readonly tables?: number;
  readonly replayedLogs?: number;
  readonly message?: string;
}

/**
 * How this cluster was restored (spec.restore), as its first member reported.
 */
export interface MySQLRestoreStatus {
  /**
   * The backup it started from.
   */
  readonly backup: string;
  /**
   * Where that backup is.
   * @default - none
   */
  readonly location?: string;
  /**
   * The point in time it was restored to, if any.
   * @default - none
   */
  readonly pointInTime?: string;
  /**
   * The transaction it was restored to just before (left out), if any.
   * @default - none
   */
  readonly beforeGtid?: string;
  /**
   * The transactions it holds after the restore.
   * @default - none
   */
  readonly gtidSet?: string;
  /**
   * Archived binary logs replayed.
   * @default - none
   */
  readonly replayedLogs?: number;
  /**
   * When the restore completed.
   * @default - none
   */
  readonly completedAt?: string;
}

/** {@link MySQLRestoreStatus} with every default applied. */
export interface ResolvedMySQLRestoreStatus {
  readonly backup: string;
  readonly location?: string;
  readonly pointInTime?: string;
  readonly beforeGtid?: string;
  readonly gtidSet?: string;
  readonly replayedLogs?: number;
  readonly completedAt?: string;
}

/**
 * The last failure of the restore (spec.restore), kept until the restore succeeds or the resource
 * changes: a crash-looping restore is reported failed in every phase of its back-off.
 */
export interface MySQLRestoreFailureStatus {
  /**
   * Why it failed, as the first member reported.
   */
  readonly message: string;
  /**
   * The resource generation it failed at (a later one clears it).
   */
  readonly generation: number;
}

/** {@link MySQLRestoreFailureStatus} with every default applied. */
export interface ResolvedMySQLRestoreFailureStatus {
  readonly message: string;
  readonly generation: number;
}

/**
 * A primary’s term, recorded before it took a write: what a failover from it can later prove about
 * what it holds.
 */
export interface MySQLPrimaryTermStatus {
  /**
   * The member (pod) that was the primary.
   */
  readonly member: string;
  /**
   * Its server_uuid during the term.
   */
  readonly serverUuid: string;
  /**
   * Its own transactions (of its server_uuid) when the term began, a GTID set: any of that uuid
   * beyond them was committed during the term or after.
   */
  readonly ownGtidsAtStart: string;
  /**
   * The fewest semi-synchronous acknowledgements its commits waited for during the term (0: at some
   * point none).
   */
  readonly semiSyncReplicas: number;
}

/** {@link MySQLPrimaryTermStatus} with every default applied. */
export interface ResolvedMySQLPrimaryTermStatus {
  readonly member: string;
  readonly serverUuid: string;
  readonly ownGtidsAtStart: string;
  readonly semiSyncReplicas: number;
}

/**
 * The last failover: what the controller knew when it promoted a replica, so that the former
 * primary may rejoin by clone on its own when what it holds beyond the new primary provably was
 * never acknowledged.
 */
export interface MySQLFailoverStatus {
  /**
   * The primary that was lost.
   */
  readonly from: string;
  /**
   * The replica promoted.
   */
  readonly to: string;
  /**
   * When.
   */
  readonly time: string;
  /**
   * Replicas of the lost primary that were not candidates (out of reach, errant, or following
   * another source).
   */
  readonly outOfReach: number;
  /**
   * A primary’s term, recorded before it took a write: what a failover from it can later prove about
   * what it holds.
   * @default - none
   */
  readonly term?: MySQLPrimaryTermStatus;
  /**
   * The lost primary’s own transactions when it was replaced, when it answered then (it had
   * restarted).
   * @default - none
   */
  readonly ownGtidsAtFailover?: string;
  /**
   * Why what the former primary holds can no longer be proven unacknowledged (seen since the
   * failover).
   * @default - none
   */
  readonly unprovable?: string;
  /**
   * The transactions of the former primary its agent was asked to discard by re-provisioning it by
   * clone (asked once).
   * @default - none
   */
  readonly discardRequested?: string;
}

/** {@link MySQLFailoverStatus} with every default applied. */
export interface ResolvedMySQLFailoverStatus {
  readonly from: string;
  readonly to: string;
  readonly time: string;
  readonly outOfReach: number;
  readonly term?: ResolvedMySQLPrimaryTermStatus;
  readonly ownGtidsAtFailover?: string;
  readonly unprovable?: string;
  readonly discardRequested?: string;
}

/**
 * The last switchover request (annotation recon8s.dev/switchover) and how it ended.
 */
export interface MySQLSwitchoverStatus {
  /**
   * The request, as the annotation carried it.
   */
  readonly requestId: string;
  /**
   * Done, Refused or Failed.
   */
  readonly outcome: "Done" | "Refused" | "Failed";
  /**
   * What happened.
   */
  readonly message: string;
}

/** {@link MySQLSwitchoverStatus} with every default applied. */
export interface ResolvedMySQLSwitchoverStatus {
  readonly requestId: string;
  readonly outcome: "Done" | "Refused" | "Failed";
  readonly message: string;
}
