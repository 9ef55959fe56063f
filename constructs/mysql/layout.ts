// The fixed facts of a MySQLCluster's layout that the TypeScript and the shell scripts must agree on:
// names derived from the cluster name, paths inside the containers, ports, identities, Secret keys.
import { selectorLabels } from '../common/metadata.js';

/** app.kubernetes.io/name of everything a MySQLCluster renders. */
export const APP_NAME = 'mysql';
/** Components (app.kubernetes.io/component): database pods and backup pods must never select each other. */
export const DATABASE_COMPONENT = 'database';
export const BACKUP_COMPONENT = 'backup';

export const MYSQL_PORT = 3306;
/** The container that runs mysqld (its restarts and state tell the controller mysqld stopped). */
export const MYSQL_CONTAINER = 'mysql';
/** The init container that makes sure a member has a data directory (scripts/bootstrap.sh). */
export const MYSQL_BOOTSTRAP_CONTAINER = 'bootstrap';
export const MYSQL_PORT_NAME = 'mysql';

/** The mysql user and group of the official image: the data files on existing volumes belong to them. */
export const MYSQL_UID = 999;

/** server_id = offset + ordinal: unique per member and never 0 (a server_id of 0 refuses to replicate). */
export const SERVER_ID_OFFSET = 100;

/** The keys of the credentials Secret. */
export const SECRET_KEYS = {
  rootPassword: 'root-password',
  replicationPassword: 'replication-password',
  adminPassword: 'admin-password',
  /** The backup and binary-log jobs' account (BACKUP_USER): the only password those jobs get. */
  backupPassword: 'backup-password',
  /** The account a new or re-provisioned member clones the primary as (CLONE_USER). */
  clonePassword: 'clone-password',
  /** The metrics sidecar's account (spec.monitoring); generated with the others, required only with monitoring on. */
  exporterPassword: 'exporter-password',
} as const;

/** The keys of the history ConfigMap (MySQLClusterNames.history). */
export const HISTORY_KEYS = {
  /** The member the controller chose as the cluster's first primary: written once, never changed. */
  firstPrimary: 'first-primary',
} as const;

/**
 * The credentials Secret during a rotation of the cluster's own accounts (`recon8s rotate-credentials
 * mysqlcluster`): the staged new password of an account is `<its key>-next` (generated there before
 * MySQL is told, so that no crash loses a password an account holds; gone once switched in), and
 * `credentials-revision` names the rotation whose passwords the Secret holds (absent before the first).
 * The revision is a key, not an annotation: the members' agents read the Secret as files, and say which
 * revision they read, so that the old passwords are discarded only once every agent reads the new ones.
 */
export const NEXT_PASSWORD_SUFFIX = '-next';
export const CREDENTIALS_REVISION_KEY = 'credentials-revision';
/** The revision the agents report while the Secret has no credentials-revision (its first passwords). */
export const INITIAL_CREDENTIALS_REVISION = '0';
/** On the credentials Secret: the accounts the last rotation switched ("root,replication,admin"). */
export const ROTATED_ACCOUNTS_ANNOTATION = 'recon8s.dev/rotated-accounts';

/** The account replicas connect to the primary as. */
export const REPLICATION_USER = 'replication';
/**
 * Its privileges: receiving the binary log (semi-synchronous acknowledgements and GTID auto-positioning
 * need no more). Not BACKUP_ADMIN: that would let its password clone the whole data set (CLONE_USER does).
 */
export const REPLICATION_GRANTS = 'REPLICATION SLAVE';

/**
 * The account a new or re-provisioned member clones the primary as (CLONE INSTANCE FROM it: the donor's
 * account needs BACKUP_ADMIN, and nothing else). TLS required: it carries the whole data set.
 */
export const CLONE_USER = 'recon8s-clone';
export const CLONE_GRANTS = 'BACKUP_ADMIN';

/**
 * The account of the backup and binary-log jobs, over TLS only, with what a consistent dump and the
 * binary-log archive need and nothing more, each checked on MySQL 9.7 (test/integration/mysql-real.test.ts):
 * SELECT (the data, routines, the accounts' CREATE USER and grants, performance_schema), SHOW VIEW, TRIGGER
 * (without it mysqldump leaves triggers out, silently) and EVENT (mysqldump --routines --events --triggers);
 * RELOAD (FLUSH TABLES WITH READ LOCK of --single-transaction with a GTID point and of the checksums'
 * snapshot, FLUSH BINARY LOGS of the archive, for which FLUSH_TABLES is not enough); PROCESS (mysqldump's
 * tablespaces, INNODB_TRX); REPLICATION CLIENT (SHOW BINARY LOGS); REPLICATION SLAVE (SHOW BINLOG EVENTS,
 * mysqlbinlog --read-from-remote-server). No write to any table, no account management, no BACKUP_ADMIN.
 */
export const BACKUP_USER = 'recon8s-backup';
export const BACKUP_GRANTS =
  'SELECT, SHOW VIEW, TRIGGER, EVENT, RELOAD, PROCESS, REPLICATION CLIENT, REPLICATION SLAVE';

/**
 * The account the controller manages the members as (fencing, promotion, pointing replicas): only the
 * privileges that needs, never data access. SYSTEM_USER: fencing must end every client's session, and
 * MySQL lets only an account with it end those of one with it (root has it).
 */
export const ADMIN_USER = 'recon8s-admin';
export const ADMIN_GRANTS =
  'SYSTEM_VARIABLES_ADMIN, REPLICATION_SLAVE_ADMIN, REPLICATION CLIENT, RELOAD, PROCESS, CONNECTION_ADMIN, SYSTEM_USER';

/**
 * The account the metrics sidecar (spec.monitoring) reads the member's figures as: over mysqld's local
 * socket only ('localhost' matches nothing but a socket login under skip_name_resolve), reading status
 * and performance_schema, never data. A socket needs no TLS, and require_secure_transport admits it.
 */
export const EXPORTER_USER = 'recon8s-exporter';
export const EXPORTER_HOST = 'localhost';
/** What the account was before it moved to the socket: dropped where it is found (lib/agent/accounts.ts). */
export const FORMER_EXPORTER_HOST = '127.0.0.1';
export const EXPORTER_GRANTS = 'PROCESS, REPLICATION CLIENT';
/** A scrape opens one connection; a few more allow for overlapping scrapes, never a flood. */
export const EXPORTER_MAX_CONNECTIONS = 3;

/**
 * The label the controller puts on each database pod: `primary` on the one member that takes writes,
 * `replica` on those replicating from it, `none` on the others (not configured yet, unreachable, or
 * holding errant transactions). The Services select by it, so that they follow the primary wherever it
 * moves; the pod template never carries it.
 */
export const ROLE_LABEL = 'recon8s.dev/role';
export const ROLES = { primary: 'primary', replica: 'replica', none: 'none' } as const;

/** Asking the controller for a switchover: the annotation's value is the request ("[<pod>@]<id>"). */
export const SWITCHOVER_ANNOTATION = 'recon8s.dev/switchover';

/**
 * Asking a member to be re-provisioned by clone of the primary, discarding what it holds that the
 * primary lacks: a new value of this pod annotation (e.g. a timestamp) is a new request. The
 * agent reads it from a downward API volume.
 */
export const REPROVISION_ANNOTATION = 'recon8s.dev/reprovision';

/** The pod template annotation that changes whenever my.cnf or the scripts change, so that pods roll. */
export const CONFIG_HASH_ANNOTATION = 'recon8s.dev/config-hash';

/** The volume claim template's name; the PersistentVolumeClaims are data-<cluster>-<ordinal>. */
export const DATA_VOLUME = 'data';

/** The data directory's name within the data volume. */
export const DATA_DIR_NAME = 'data';

/** Paths inside the containers. The root file system is read-only; every writable path is a volume. */
export const PATHS = {
  /** The data volume. The data directory is a subdirectory, so that a file system's lost+found never
   * sits in it and a clone can be staged next to it and renamed into place atomically. */
  dataVolume: '/var/lib/mysql',
  dataDir: `/var/lib/mysql/${DATA_DIR_NAME}`,
  /** Socket and pid file (an emptyDir). */
  run: '/var/run/mysqld',
  socket: '/var/run/mysqld/mysqld.sock',
  pidFile: '/var/run/mysqld/mysqld.pid',
  tmp: '/tmp',
  /** The rendered my.cnf (the config ConfigMap, read-only). */
  config: '/etc/mysql/recon8s',
  /** The config ConfigMap again, in the metrics sidecar: its option file (exporter.cnf). */
  exporterConfig: '/etc/recon8s/exporter',
  myCnf: '/etc/mysql/recon8s/my.cnf',
  /** Per-member settings written at pod start (an emptyDir), included from my.cnf. */
  memberConfig: '/etc/mysql/recon8s.d',
  /** The pod's own annotations (a downward API volume). */
  podInfo: '/etc/recon8s/pod',
  /** The scripts ConfigMap, read-only. */
  scripts: '/opt/recon8s',
  /** Where the backup job mounts the backup volume. */
  backup: '/backup',
  /**
   * The credentials Secret, read-only, as files: the agent reads the passwords from here each time it
   * uses one (the kubelet updates the files when the Secret changes; an environment variable would
   * keep the value of the container's start). Also in mysqld's container, for a person's `mysql`.
   */
  credentials: '/etc/recon8s/credentials',
  /** The tls Secret (tls.crt, tls.key, ca.crt), read-only; files, not subPaths, so that a renewed certificate reaches running pods. */
  tls: '/etc/mysql/tls',
  tlsCa: '/etc/mysql/tls/ca.crt',
  tlsCert: '/etc/mysql/tls/tls.crt',
  tlsKey: '/etc/mysql/tls/tls.key',
  /** Programs copied into the pod by an init container (rclone, for the object store); an emptyDir. */
  tools: '/opt/recon8s-tools',
  /** The object store's encryption key (s3.encryption.secretRef), one file of the Secret's, read-only. */
  storeKey: '/etc/recon8s/store-key',
  storeKeyFile: '/etc/recon8s/store-key/key',
  /** A backup volume's encryption key (backup.encryption.secretRef), one file of the Secret's, read-only. */
  backupKey: '/etc/recon8s/backup-key',
  backupKeyFile: '/etc/recon8s/backup-key/key',
  /** Where the backup verification's scratch volume (an emptyDir with a size limit) is mounted. */
  verifyScratch: '/var/lib/recon8s-verify',
  /** Where a physical backup's job makes its clone (an emptyDir with a size limit: spec.backup.scratchSize). */
  backupScratch: '/var/lib/recon8s-backup',
} as const;

/** Termination-message reasons of the backup and binary-log jobs and of a restore; lib/controller reads them. */
export const STORE_REPORTS = {
  backupCompleted: 'BackupCompleted',
  backupFailed: 'BackupFailed',
  binlogsArchived: 'BinlogsArchived',
  binlogArchiveFailed: 'BinlogArchiveFailed',
  /** The run archived what there was, but logs expired before any run copied them: see scripts/binlog.sh. */
  binlogArchiveGap: 'BinlogArchiveGap',
  binlogsSearched: 'BinlogsSearched',
  backupVerified: 'BackupVerified',
  backupVerificationFailed: 'BackupVerificationFailed',
  backupVerificationSkipped: 'BackupVerificationSkipped',
  restored: 'Restored',
  restoreFailed: 'RestoreFailed',
} as const;

/**
 * What starts the termination message of a script that gave up (common.sh's die): the controller shows
 * such a line in the member's condition. Only marked lines: other output of a container may hold anything.
 */
export const GAVE_UP_PREFIX = 'recon8s gave up: ';

/** The prefix of the termination message that says why the agent exited (re-provisioning by clone: see
 * scripts/reprovision.sh); lib/controller reads it. */
export const MEMBER_REPORTS = { reprovisioned: 'ReprovisionedByClone', failed: 'ReprovisionFailed' } as const;

/** Where every member's and job's pod finds the CA certificate that verifies the members. */
export const TLS_CA_PATH = PATHS.tlsCa;

/** Everything named after a MySQLCluster. Names are stable: clients use the Service names, and a
 * StatefulSet's serviceName and selector are immutable. */
export interface MySQLClusterNames {
  readonly cluster: string;
  readonly statefulSet: string;
  /** Governs the pods' DNS names: <cluster>-N.<headless>. Named "-headless" so that nobody mistakes it
   * for a load-balanced endpoint (its DNS name answers with every member, read-only replicas included). */
  readonly headlessService: string;
  readonly primaryService: string;
  readonly replicasService: string;
  readonly config: string;
  readonly scripts: string;
  readonly disruptionBudget: string;
  /** The NetworkPolicy admitting to the members only what the cluster needs (spec.networkPolicy). */
  readonly networkPolicy: string;
  readonly backup: string;
  /** The CronJob that archives the binary logs (with backups to an object store). */
  readonly binlogArchive: string;
  readonly credentialsSecret: string;
  /**
   * The ConfigMap the controller creates once the cluster has its first primary (never rendered: it
   * records what only the controller knows). Its presence tells a member's bootstrap that the cluster
   * has a history, so that an empty data directory clones a member holding it instead of starting a
   * new, empty database (scripts/bootstrap.sh).
   */
  readonly history: string;
  /** The members' certificate, key and CA certificate (tls.crt, tls.key, ca.crt), mounted in every pod that connects to a member. */
  readonly tlsSecret: string;
  /** The cluster's CA and its key, generated by the controller when it generates tlsSecret: never mounted in a pod. */
  readonly caSecret: string;
  /** The primary's name within the namespace: the primary Service, which follows the role label. */
  readonly primaryHost: string;
  /** A member's stable DNS name within the namespace, which replicas of it use as SOURCE_HOST. */
  memberHost(pod: string): string;
  /** The PersistentVolumeClaim holding a member's data (made by the StatefulSet, never by recon8s). */
  dataClaim(ordinal: number): string;
}

export function clusterNames(
  cluster: string,
  credentialsSecretName?: string,
  tlsSecretName?: string,
): MySQLClusterNames {
  const headlessService = `${cluster}-headless`;
  return {
    cluster,
    statefulSet: cluster,
    headlessService,
    primaryService: `${cluster}-primary`,
    replicasService: `${cluster}-replicas`,
    config: `${cluster}-config`,
    scripts: `${cluster}-scripts`,
    // Not the bare name: an App of the same name in the namespace has a PodDisruptionBudget called that.
    disruptionBudget: `${cluster}-mysql`,
    networkPolicy: `${cluster}-mysql`,
    backup: `${cluster}-backup`,
    binlogArchive: `${cluster}-binlog`,
    credentialsSecret: credentialsSecretName ?? `${cluster}-credentials`,
    history: `${cluster}-history`,
    tlsSecret: tlsSecretName ?? `${cluster}-tls`,
    caSecret: `${cluster}-ca`,
    primaryHost: `${cluster}-primary`,
    memberHost: (pod) => `${pod}.${headlessService}`,
    dataClaim: (ordinal) => `${DATA_VOLUME}-${cluster}-${ordinal}`,
  };
}

/** The labels the database pods are selected by (StatefulSet, Services, PodDisruptionBudget). */
export function databaseSelector(cluster: string): Record<string, string> {
  return selectorLabels({ name: APP_NAME, instance: cluster, component: DATABASE_COMPONENT });
}

/** The labels of a cluster's backup, binary-log and verification job pods (never the database selector). */
export function backupSelector(cluster: string): Record<string, string> {
  return selectorLabels({ name: APP_NAME, instance: cluster, component: BACKUP_COMPONENT });
}

export { BOUND_CLUSTER_LABEL } from '../common/metadata.js';

/**
 * The port of the agent beside each member (`recon8s agent`), plain HTTP: the kubelet's probes (from the
 * node) and the mysql container's preStop hook (from the pod's loopback), nothing else.
 */
export const AGENT_PORT = 9080;
export const AGENT_PORT_NAME = 'agent';
/**
 * The agent's TLS port: what the controller asks of the member (its mysqld's stops, the credentials
 * revision it reads), served with the member's own certificate, so that the controller verifies the
 * answer comes from that member (by the CA and the member's name), as it verifies its SQL sessions.
 * Only here: the HTTP port refuses these paths.
 */
export const AGENT_TLS_PORT = 9443;
export const AGENT_TLS_PORT_NAME = 'agent-tls';
/**
 * What the agent serves: on AGENT_PORT liveness (mysqld answers), readiness (the member does its job) and
 * the preStop hook; on AGENT_TLS_PORT the credentials revision and the unsafe stops.
 */
export const AGENT_HTTP_PATHS = {
  live: '/livez',
  ready: '/readyz',
  /** The credentials revision the agent reads in the mounted Secret now (a token, never a password); TLS port only. */
  credentials: '/credentials-revision',
  /**
   * The mysql container's preStop hook: the agent fences its member before the kubelet sends mysqld
   * SIGTERM (a graceful shutdown tells a client waiting for a replica's acknowledgement that its commit
   * succeeded: lib/agent/stops.ts).
   */
  preStop: '/pre-stop',
  /** The stops of this member's mysqld that could have acknowledged a commit no replica had (JSON); TLS port only. */
  stops: '/unsafe-stops',
} as const;
