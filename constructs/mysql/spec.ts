// The one definition of the MySQLCluster kind: its props/spec, status, and CRD facts.
import * as s from '../schema/schema.js';
import { DEFAULT_OPERATOR_IMAGE } from '../common/operator-image.js';
import type { KindDefinition } from '../schema/schema.js';
import {
  IMAGE_REFERENCE_HINT,
  IMAGE_REFERENCE_PATTERN,
  affinity,
  metadataMap,
  nodeSelector,
  paused,
  resources,
  tolerations,
} from '../common/spec-nodes.js';
import { conditions, observedGeneration } from '../common/status-nodes.js';
import { SPEC_PATTERNS } from './grammar.js';

/** MySQL long-term-support releases we run, oldest first (the order forbids downgrades). */
export const SUPPORTED_MYSQL_VERSIONS = ['8.4', '9.7'] as const;
/** Releases we refuse, and why. */
export const END_OF_LIFE_MYSQL_VERSIONS: Readonly<Record<string, string>> = {
  '5.7': 'MySQL 5.7 reached end of life in October 2023 and gets no security fixes',
  '8.0': 'MySQL 8.0 reached end of life in April 2026 and gets no security fixes',
};
const versionWords = SUPPORTED_MYSQL_VERSIONS.map((v) => `"${v}"`).join(' or ');
const eolList = Object.keys(END_OF_LIFE_MYSQL_VERSIONS)
  .map((v) => `'${v}'`)
  .join(', ');

/** my.cnf options recon8s sets itself (replication, identity, paths), in underscore spelling. */
export const MANAGED_MYSQL_OPTIONS = [
  'server_id',
  'gtid_mode',
  'enforce_gtid_consistency',
  'read_only',
  'super_read_only',
  'log_bin',
  'datadir',
  'socket',
  'port',
  'bind_address',
  'report_host',
  'pid_file',
  'plugin_load',
  'relay_log',
  'skip_replica_start',
  'tmpdir',
  'rpl_semi_sync_source_enabled',
  'rpl_semi_sync_source_timeout',
  'rpl_semi_sync_source_wait_for_replica_count',
  'rpl_semi_sync_source_wait_no_replica',
  'rpl_semi_sync_source_wait_point',
  'rpl_semi_sync_replica_enabled',
  'ssl_ca',
  'ssl_cert',
  'ssl_key',
  'clone_ssl_ca',
  'clone_ssl_cert',
  'clone_ssl_key',
] as const;

/**
 * Matches an option name (after "-" became "_") that sets a managed option, in any spelling MySQL
 * accepts: `loose_` and the boolean prefixes `skip_`, `disable_`, `enable_`, `maximum_` included, so
 * that "skip-log-bin" or "loose-server-id" cannot slip past.
 */
export const MANAGED_MYSQL_OPTION_PATTERN = `^(loose_)?(skip_|disable_|enable_|maximum_)?(${MANAGED_MYSQL_OPTIONS.join('|')})$`;

// Downgrades are refused: the data dictionary of a newer release cannot be read by an older one.
const noDowngradeCel = SUPPORTED_MYSQL_VERSIONS.map((v, i) => [v, SUPPORTED_MYSQL_VERSIONS.slice(0, i)] as const)
  .filter(([, older]) => older.length > 0)
  .map(([v, older]) => `!(oldSelf == '${v}' && self in [${older.map((o) => `'${o}'`).join(', ')}])`)
  .join(' && ');

const storage = s.object({
  typeName: 'MySQLStorage',
  description: 'The PersistentVolumeClaim each member gets for its data directory.',
  default: {},
  defaultDoc: '10Gi ReadWriteOnce volumes of the default StorageClass',
  properties: {
    size: s.optional(
      s.quantity({
        description:
          'Capacity of each data volume, greater than zero. It may grow (when the StorageClass allows expansion) but never shrink.',
        default: '10Gi',
        positive: true,
        bytes: true,
      }),
    ),
    storageClassName: s.optional(
      s.string({
        description: 'The StorageClass of the volumes. Fixed once created.',
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
        defaultDoc: 'the cluster default StorageClass',
      }),
    ),
    accessModes: s.optional(
      s.array({
        description: 'Access modes of the volumes. Fixed once created.',
        items: s.string({
          description: 'An access mode.',
          enum: ['ReadWriteOnce', 'ReadWriteOncePod', 'ReadWriteMany'],
        }),
        minItems: 1,
        maxItems: 3,
        listType: 'set',
        default: ['ReadWriteOnce'],
      }),
    ),
  },
  rules: [
    s.transitionRule(
      '!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0',
      'storage.size may grow but never shrink',
      { fieldPath: '.size' },
    ),
    s.transitionRule(
      'has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)',
      'storage.storageClassName is immutable once set (the volumes already exist)',
      { fieldPath: '.storageClassName' },
    ),
    s.transitionRule(
      '!has(self.accessModes) || !has(oldSelf.accessModes) || self.accessModes == oldSelf.accessModes',
      'storage.accessModes is immutable once set (the volumes already exist)',
      { fieldPath: '.accessModes' },
    ),
  ],
});

/** The credentials Secret keys of an object store. */
export const OBJECT_STORE_SECRET_KEYS = { accessKeyId: 'access-key-id', secretAccessKey: 'secret-access-key' } as const;
/** Where the rclone client is copied from when the MySQL image has none (the official images have none). */
export const DEFAULT_RCLONE_IMAGE = 'docker.io/rclone/rclone:1.75.2';
/** The Secret key an encryption of backups is keyed with (s3.encryption, backup.encryption). */
const encryptionKeyRef = s.object({
  typeName: 'MySQLObjectStoreEncryptionKeyRef',
  description:
    'The Secret key holding the encryption passphrase: one line of at least 32 printable characters without spaces, e.g. from `openssl rand -base64 48`. It reaches the jobs as a file, never an environment variable or a command line; recon8s only reads it. Keep a copy outside the cluster: without it no backup can be restored.',
  properties: {
    name: s.required(
      s.string({
        description: "The Secret, in the cluster's namespace.",
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
      }),
    ),
    key: s.optional(
      s.string({
        description: 'The key within the Secret.',
        pattern: '^[-._a-zA-Z0-9]+$',
        patternHint: 'a Secret key (letters, digits, "-", "_" and ".")',
        maxLength: 253,
        default: 'encryption-key',
      }),
    ),
  },
});

const rcloneImage = s.string({
  description:
    'An image with the rclone client on its PATH and a POSIX shell: rclone is copied from it into the pods that talk to the store or encrypt (the official MySQL images have none; the mysql image of the project test node has it, so there rcloneImage may name that image).',
  minLength: 1,
  maxLength: 512,
  pattern: IMAGE_REFERENCE_PATTERN,
  patternHint: IMAGE_REFERENCE_HINT,
  default: DEFAULT_RCLONE_IMAGE,
});

const objectStore = s.object({
  typeName: 'MySQLObjectStore',
  description:
    'An S3-compatible bucket (AWS S3 or a self-hosted store). The credentials come from a Secret: they never appear in the spec, a log, an Event or a command line.',
  rules: [
    s.rule<{ endpoint?: string; allowInsecureEndpoint?: boolean }>(
      "!has(self.endpoint) || self.endpoint.startsWith('https://') || (has(self.allowInsecureEndpoint) && self.allowInsecureEndpoint)",
      'an https:// endpoint: over http:// anyone on the network path reads every backup and can rewrite what a restore loads (set allowInsecureEndpoint: true to accept that)',
      (v) => v.endpoint === undefined || v.endpoint.startsWith('https://') || v.allowInsecureEndpoint === true,
      { fieldPath: '.endpoint' },
    ),
    s.transitionRule(
      'has(self.encryption) == has(oldSelf.encryption) || self.bucket != oldSelf.bucket || self.prefix != oldSelf.prefix',
      'turning encryption on or off needs a new prefix (or bucket): the jobs read every object of the old one with the new setting, and none of them would be readable',
      { fieldPath: '.encryption' },
    ),
  ],
  properties: {
    bucket: s.required(
      s.string({
        description: 'The bucket. recon8s never creates or deletes it.',
        pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
        patternHint: 'an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)',
        maxLength: 63,
      }),
    ),
    prefix: s.required(
      s.string({
        description:
          'The folder within the bucket that holds one cluster\'s backups (base/<backup>/) and binary logs (binlog/), e.g. "prod/orders". A restore names the source cluster\'s prefix.',
        pattern: '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$',
        patternHint:
          'folder names of letters, digits, "_", "." and "-" separated by "/", without a leading or trailing "/"',
        maxLength: 512,
      }),
    ),
    endpoint: s.optional(
      s.string({
        description:
          "The store's URL, e.g. \"https://minio.storage.svc:9000\". https:// (the server's certificate is verified against the system's CAs) unless allowInsecureEndpoint says otherwise.",
        pattern: '^https?://[^\\s/]+(/[^\\s]*)?$',
        patternHint: 'an http:// or https:// URL',
        maxLength: 512,
        defaultDoc: 'AWS S3 of the region',
      }),
    ),
    allowInsecureEndpoint: s.optional(
      s.boolean({
        description:
          'Accept an http:// endpoint: the backups (all the data and the account hashes) and the binary logs then cross the network in the clear, and whoever is on the path can read them and rewrite what a restore loads. For a store on the same host or a test only.',
        default: false,
      }),
    ),
    region: s.optional(
      s.string({
        description: 'The region the requests are signed for.',
        pattern: '^[a-z0-9-]+$',
        patternHint: 'a region name such as "eu-west-1"',
        maxLength: 64,
        default: 'us-east-1',
      }),
    ),
    forcePathStyle: s.optional(
      s.boolean({
        description:
          'Address the bucket in the path (https://endpoint/bucket/key) rather than as a host name: self-hosted stores need it.',
        default: true,
      }),
    ),
    credentialsSecretName: s.required(
      s.string({
        description: `The Secret holding the access key (keys ${OBJECT_STORE_SECRET_KEYS.accessKeyId} and ${OBJECT_STORE_SECRET_KEYS.secretAccessKey}). recon8s only reads it.`,
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
      }),
    ),
    encryption: s.optional(
      s.object({
        typeName: 'MySQLObjectStoreEncryption',
        description:
          "Client-side encryption of everything the jobs write to the store (dumps, manifests, binary logs, their JSON and state.json): rclone's crypt (NaCl secretbox, XSalsa20-Poly1305, authenticated per 64 KiB block), names left readable. The store then holds nothing readable without the key, and an object changed, swapped for one written without the key, or read with another key is refused by name before any of it is used. A restore or verification of these backups names the same key. Set it on a new prefix: objects written before it (or without it) are not readable with it.",
        properties: {
          secretRef: s.required(encryptionKeyRef),
        },
      }),
    ),
    rcloneImage: s.optional(rcloneImage),
  },
});

const verify = s.object({
  typeName: 'MySQLBackupVerify',
  description:
    "With s3: after each backup, the backup job restores it, and the archived binary logs after it, into a scratch mysqld of its own (an emptyDir volume, no network, nothing shared with the cluster), checks every table (CHECK TABLE) and compares each table's row count and CHECKSUM TABLE with those the backup recorded in its own snapshot. The result is status.backup.lastVerified, an Event, metrics, and Degraded (BackupVerificationFailed) when it fails. `recon8s backup verify` runs it on demand.",
  default: {},
  defaultDoc: 'enabled, with a 10Gi scratch volume',
  properties: {
    enabled: s.optional(s.boolean({ description: 'Verify each backup.', default: true })),
    scratchSize: s.optional(
      s.quantity({
        description:
          "The scratch volume's size limit (emptyDir sizeLimit). A backup whose tables (data and indexes, as recorded when it was taken) do not fit in half of it is not verified: the result says so (Skipped).",
        default: '10Gi',
        positive: true,
        bytes: true,
      }),
    ),
    resources: s.optional(
      resources(
        { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
        {
          typeName: 'MySQLBackupVerifyResources',
          what: 'the verification (its scratch mysqld and the restore into it)',
        },
      ),
    ),
  },
});

const backup = s.object({
  typeName: 'MySQLBackup',
  description:
    "Scheduled backups, taken from a replica when there is one: logical (the application's schemas, one consistent snapshot at a recorded GTID set, and accounts, never the mysql schema) or physical (a consistent copy of the data directory at a recorded GTID set; see method). Into a PersistentVolumeClaim (logical only), or into an object store together with the binary logs, from which `restore` creates a new cluster at any point in time.",
  rules: [
    s.rule<{ persistentVolumeClaimName?: string; s3?: unknown }>(
      'has(self.persistentVolumeClaimName) != has(self.s3)',
      'exactly one destination: persistentVolumeClaimName or s3',
      (v) => (v.persistentVolumeClaimName === undefined) !== (v.s3 === undefined),
    ),
    s.rule<{ s3?: unknown; encryption?: unknown }>(
      '!has(self.encryption) || !has(self.s3)',
      'encryption is for persistentVolumeClaimName: an object store is encrypted by s3.encryption',
      (v) => v.encryption === undefined || v.s3 === undefined,
      { fieldPath: '.encryption' },
    ),
    s.rule<{ s3?: unknown; method?: string }>(
      "!has(self.method) || self.method != 'physical' || has(self.s3)",
      'method physical needs s3 (a physical backup is restored and verified from an object store only)',
      (v) => v.method !== 'physical' || v.s3 !== undefined,
      { fieldPath: '.method' },
    ),
    s.rule<{ s3?: unknown; binlogIntervalMinutes?: number }>(
      '!has(self.binlogIntervalMinutes) || has(self.s3)',
      'binlogIntervalMinutes needs s3 (binary logs are archived to an object store only)',
      (v) => v.binlogIntervalMinutes === undefined || v.s3 !== undefined,
      { fieldPath: '.binlogIntervalMinutes' },
    ),
  ],
  properties: {
    schedule: s.required(
      s.string({
        description: 'When to back up, as a cron expression in UTC, e.g. "0 3 * * *".',
        pattern: '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|((\\S+\\s+){4}\\S+))$',
        patternHint: 'a five-field cron expression or a macro such as "@daily"',
        maxLength: 128,
      }),
    ),
    persistentVolumeClaimName: s.optional(
      s.string({
        description:
          'The existing PersistentVolumeClaim the backups are written to. recon8s never creates or deletes it.',
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
      }),
    ),
    s3: s.optional(objectStore),
    encryption: s.optional(
      s.object({
        typeName: 'MySQLBackupVolumeEncryption',
        description:
          "With persistentVolumeClaimName: client-side encryption of each backup the job writes to the volume, as s3.encryption does in a store: rclone's crypt (NaCl secretbox, XSalsa20-Poly1305, authenticated per 64 KiB block), in the job, before anything reaches the volume. Each backup is then <name>-<UTC time>.sql.gz.crypt (crypt's format, the gzipped dump inside), readable only with the key: a restore decrypts it with any rclone (docs/backup-restore.md#from-a-volume), and a file changed, swapped or read with another key is refused. Backups written before it stay as they were (.sql.gz), and retention counts both. For an object store, set s3.encryption instead.",
        properties: {
          secretRef: s.required(encryptionKeyRef),
          rcloneImage: s.optional(rcloneImage),
        },
      }),
    ),
    method: s.optional(
      s.string({
        description:
          'How each backup is taken. "logical": a mysqldump of the application\'s schemas and accounts (portable to another MySQL version or settings, and the smallest object for small databases; restored statement by statement). "physical": a consistent copy of the whole data directory, made with MySQL\'s clone plugin by a throwaway mysqld in the backup job from a replica (the primary when there is none), streamed gzipped to the object store (base/<backup>/datadir.tar.gz) with the GTID set it holds; restored by unpacking it, at the disk\'s speed rather than one statement at a time. Needs s3; a restore or verification needs the same MySQL version. Binary-log archiving, point-in-time restores and verification work on top of either (docs/mysql-backup.md).',
        enum: ['logical', 'physical'],
        default: 'logical',
      }),
    ),
    scratchSize: s.optional(
      s.quantity({
        description:
          "With method physical: the size limit of the backup job's scratch volume (emptyDir sizeLimit) the clone is made in before it is streamed to the store. It must hold the whole data directory (its tables, indexes, undo and redo logs).",
        default: '10Gi',
        positive: true,
        bytes: true,
      }),
    ),
    binlogIntervalMinutes: s.optional(
      s.integer({
        description:
          'With s3: how often the binary logs are archived (the primary switches to a new log, and the closed ones are copied). A point-in-time restore reaches at most the last archived log. 0 archives none.',
        minimum: 0,
        maximum: 60,
        defaultDoc: '5 with s3',
      }),
    ),
    retain: s.optional(
      s.integer({
        description:
          'How many backups to keep; older ones (and binary logs only they needed) are removed after a successful backup.',
        minimum: 1,
        maximum: 1000,
        default: 7,
      }),
    ),
    suspend: s.optional(s.boolean({ description: 'Pause the schedule without removing it.', default: false })),
    verify: s.optional(verify),
  },
});

const restore = s.object({
  typeName: 'MySQLRestore',
  description:
    "Create this cluster from another one's backup in an object store: its first member loads the backup, replays the archived binary logs up to the point asked for, and only then starts serving; the other members clone it. Only when the cluster is created (fixed afterwards). The cluster keeps its own credentials Secret; the application's accounts come with the backup.",
  rules: [
    s.rule<{ pointInTime?: string; gtidSet?: string; beforeGtid?: string }>(
      '[has(self.pointInTime), has(self.gtidSet), has(self.beforeGtid)].filter(x, x).size() <= 1',
      'at most one of pointInTime, gtidSet and beforeGtid',
      (v) => [v.pointInTime, v.gtidSet, v.beforeGtid].filter((x) => x !== undefined).length <= 1,
    ),
  ],
  properties: {
    s3: s.required(objectStore),
    backup: s.optional(
      s.string({
        description:
          'The backup to start from: its name (the UTC time it started, e.g. "20261124T030000Z"), or "latest" (with pointInTime: the latest that ended before it; with beforeGtid: the latest that does not hold that transaction).',
        pattern: SPEC_PATTERNS.backup,
        patternHint: '"latest" or a backup name such as "20261124T030000Z"',
        default: 'latest',
      }),
    ),
    pointInTime: s.optional(
      s.string({
        description:
          'Replay the binary logs up to this moment (UTC): every transaction committed before it, none at or after it. The restore fails, serving nothing, if the archive does not reach it.',
        pattern: SPEC_PATTERNS.time,
        patternHint: 'a UTC time such as "2026-11-24T10:15:00Z"',
      }),
    ),
    gtidSet: s.optional(
      s.string({
        description:
          'Replay exactly the archived transactions in this GTID set (beyond the backup). The restore fails if the archive lacks any of them.',
        pattern: SPEC_PATTERNS.gtidSet,
        patternHint: 'a GTID set such as "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77"',
        maxLength: 4096,
      }),
    ),
    beforeGtid: s.optional(
      s.string({
        description:
          'Replay the archived binary logs up to this transaction, without it: everything archived before it, in the order it was archived (so a bad statement is left out even when other writes share its second). The restore fails if the archive after the backup does not hold it, or the backup already does.',
        pattern: SPEC_PATTERNS.gtid,
        patternHint: 'one transaction\'s GTID such as "3e11fa47-71ca-11e1-9e33-c80aa9429562:42"',
      }),
    ),
  },
});

const pvcRetention = s.object({
  typeName: 'MySQLPvcRetention',
  description:
    'What happens to data volumes when the cluster is deleted or scaled down. Data is kept unless you say otherwise.',
  default: {},
  defaultDoc: 'Retain when deleted and when scaled down',
  properties: {
    whenDeleted: s.optional(
      s.string({ description: 'On deleting the MySQLCluster.', enum: ['Retain', 'Delete'], default: 'Retain' }),
    ),
    whenScaled: s.optional(
      s.string({ description: 'On scaling replicas down.', enum: ['Retain', 'Delete'], default: 'Retain' }),
    ),
  },
});

/**
 * The metrics sidecar's image: Prometheus' official mysqld_exporter, 0.15 or later (it reads
 * SHOW REPLICA STATUS, which MySQL 8.4 and 9.x have instead of SHOW SLAVE STATUS).
 */
export const DEFAULT_EXPORTER_IMAGE = 'quay.io/prometheus/mysqld-exporter:v0.19.0';
/** mysqld_exporter's registered default port. */
export const DEFAULT_EXPORTER_PORT = 9104;

const monitoring = s.object({
  typeName: 'MySQLMonitoring',
  description:
    'Per-member metrics: a mysqld_exporter sidecar in every member pod (replication lag, semi-synchronous replication, connections, InnoDB and query figures), logging in over the pod loopback as a read-only account of its own (recon8s-exporter: PROCESS, REPLICATION CLIENT, SELECT on performance_schema) whose password is the credentials Secret key exporter-password. The pods carry the prometheus.io/scrape, port and path annotations.',
  default: {},
  defaultDoc: 'off',
  rules: [
    s.rule<{ port?: number }>(
      '!has(self.port) || (self.port != 3306 && self.port != 33060)',
      'port must differ from the MySQL ports 3306 and 33060',
      (v) => v.port === undefined || (v.port !== 3306 && v.port !== 33060),
      { fieldPath: '.port' },
    ),
  ],
  properties: {
    enabled: s.optional(s.boolean({ description: 'Run the metrics sidecar.', default: false })),
    image: s.optional(
      s.string({
        description:
          'The mysqld_exporter image, 0.15 or later, with mysqld_exporter on its PATH (the project test node image has it).',
        minLength: 1,
        maxLength: 512,
        pattern: IMAGE_REFERENCE_PATTERN,
        patternHint: IMAGE_REFERENCE_HINT,
        default: DEFAULT_EXPORTER_IMAGE,
      }),
    ),
    port: s.optional(
      s.integer({
        description: 'The port the sidecar serves /metrics on (container port named metrics).',
        minimum: 1024,
        maximum: 65535,
        default: DEFAULT_EXPORTER_PORT,
      }),
    ),
    resources: s.optional(
      resources(
        { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
        { typeName: 'MySQLExporterResources', what: 'the metrics sidecar (its memory limit bounds it)' },
      ),
    ),
  },
});

const networkPolicy = s.object({
  typeName: 'MySQLNetworkPolicy',
  description:
    "The NetworkPolicy <name>-mysql (networking.k8s.io/v1) that admits to the members only what the cluster needs: the members themselves (replication, clones, the agents' peers) on 3306 and the agent's port; the operator's controller pods on 3306 and the agent's port; the cluster's backup, binary-log and verification jobs on 3306; the pods of Apps bound to it (App spec.database, labelled recon8s.dev/mysql-cluster=<name>) on 3306; and, with monitoring, the metrics port from metricsNamespaces. Everything else is refused where the network plugin enforces NetworkPolicies; where it does not, the policy is inert (docs/security.md).",
  default: {},
  defaultDoc: 'on',
  properties: {
    enabled: s.optional(
      s.boolean({
        description:
          'Render the NetworkPolicy. Turn it off only to manage the members\u2019 ingress yourself: without it, any pod that can reach a member may try its ports.',
        default: true,
      }),
    ),
    metricsNamespaces: s.optional(
      s.array({
        description:
          'The namespaces whose pods may scrape the metrics port (spec.monitoring), e.g. where Prometheus runs. The port serves figures only, never data or credentials.',
        items: s.string({
          description: 'A namespace.',
          minLength: 1,
          maxLength: 63,
          pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
          patternHint: 'a namespace name (a DNS label)',
        }),
        // At least one: an empty list of sources would admit every source.
        minItems: 1,
        maxItems: 16,
        listType: 'set',
        defaultDoc: 'any namespace',
      }),
    ),
  },
});

/** The group of cert-manager's own issuers. */
export const CERT_MANAGER_GROUP = 'cert-manager.io';

const tls = s.object({
  typeName: 'MySQLTls',
  description: "Where the members' certificate comes from (docs/tls.md).",
  defaultDoc: 'a CA of the cluster, generated by the controller',
  properties: {
    issuerRef: s.optional(
      s.object({
        typeName: 'MySQLCertificateIssuerRef',
        description:
          "A cert-manager issuer that signs the members' certificate instead of the CA the controller generates: the controller creates a cert-manager Certificate <name>-tls (the members' and the Services' DNS names, server and client auth) whose Secret <name>-tls the members present and every client verifies with its ca.crt (a CA Issuer writes it). cert-manager renews it; the members reload it with no restart. Until it is issued the members are held back (Degraded, reason CertificatePending).",
        properties: {
          name: s.required(
            s.string({
              description: 'The name of the Issuer (in the namespace of the cluster) or ClusterIssuer.',
              minLength: 1,
              maxLength: 253,
              pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
              patternHint: 'a DNS subdomain name',
            }),
          ),
          kind: s.optional(
            s.string({
              description: 'Issuer (namespaced) or ClusterIssuer.',
              enum: ['Issuer', 'ClusterIssuer'],
              default: 'Issuer',
            }),
          ),
          group: s.optional(
            s.string({
              description: "The API group of the issuer: cert-manager's own, or an external issuer's.",
              minLength: 1,
              maxLength: 253,
              pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
              patternHint: 'a DNS subdomain name',
              default: CERT_MANAGER_GROUP,
            }),
          ),
        },
      }),
    ),
  },
});

/** The label a node's zone is given by the cloud provider (or a person), well known in Kubernetes. */
export const ZONE_TOPOLOGY_KEY = 'topology.kubernetes.io/zone';

const placement = s.object({
  typeName: 'MySQLPlacement',
  description:
    "Where the members run: spread over nodes, and optionally over zones, so that one node's (or zone's) loss costs one member. docs/mysql-ha.md#placement says what each choice costs.",
  default: {},
  defaultDoc: 'members spread over nodes where the scheduler can (Preferred), no zone spread',
  properties: {
    spreadMembers: s.optional(
      s.string({
        description:
          'How the members are kept off one node (pod anti-affinity on kubernetes.io/hostname). Preferred: the scheduler spreads them when it can and otherwise puts two on one node, so that every member runs (a 3-member cluster on 2 nodes, a scale-up past the nodes, a member re-created while its node is lost). Required: never two on one node; a member that finds no free node stays Pending until one is. spec.affinity.podAntiAffinity, when given, replaces it.',
        enum: ['Preferred', 'Required'],
        default: 'Preferred',
      }),
    ),
    zoneSpread: s.optional(
      s.string({
        description: `Whether the members are spread over zones (a topology spread constraint on ${ZONE_TOPOLOGY_KEY}, at most one member more in one zone than in another). None: no zone spread. Preferred: the scheduler favours the spread (ScheduleAnyway). Required: a member that would break it stays Pending (DoNotSchedule), and none is placed on a node without the zone label. Nodes whose taints the members do not tolerate (unreachable, out of service) are not counted in either.`,
        enum: ['None', 'Preferred', 'Required'],
        default: 'None',
      }),
    ),
  },
});

/** The longest a node may be NotReady before nodeLoss.recoverAfterSeconds may act: a week. */
const MAX_NODE_LOSS_SECONDS = 7 * 24 * 3600;

const nodeLoss = s.object({
  typeName: 'MySQLNodeLoss',
  description:
    "What the controller does for a member lost with its node when the member's volume is bound to that node (local storage): it removes the member's pod and claim, and the StatefulSet re-creates the member on another node, where it joins by clone. Always once the node carries the node.kubernetes.io/out-of-service taint (a person or a fencing agent made sure it is down); never for the primary before the failover, never for two members at once, never for a volume that is not bound to the node, never for a member that still answers. What it waits for, and why, is in status (Degraded) and Events: docs/mysql-ha.md#node-loss.",
  default: {},
  defaultDoc: 'only a node tainted node.kubernetes.io/out-of-service',
  properties: {
    recoverAfterSeconds: s.optional(
      s.integer({
        description:
          "Also recover a member whose node has been NotReady this long without the taint. The risk: a node that is only cut off (from the API server and the controller, not from the members) still runs mysqld on that volume, which may still acknowledge the primary's writes while its data is discarded, and a failover in that window can lose those writes. Give it only when nodes that stop reporting are known to be down (docs/mysql-ha.md#node-loss).",
        minimum: 60,
        maximum: MAX_NODE_LOSS_SECONDS,
        defaultDoc: 'never: only the taint',
      }),
    ),
  },
});

export const mysqlSpec = s.object({
  typeName: 'MySQLClusterSpec',
  description:
    'A highly available MySQL cluster: one writable primary (any member; the controller records it in status.currentPrimary) and read-only replicas that follow it by semi-synchronous GTID replication.',
  rules: [
    s.rule<{ replicas?: number; semiSyncReplicas?: number }>(
      '!has(self.semiSyncReplicas) || self.semiSyncReplicas < (has(self.replicas) ? self.replicas : 3)',
      'semiSyncReplicas must be less than replicas (the primary cannot acknowledge for itself)',
      (v) => v.semiSyncReplicas === undefined || v.semiSyncReplicas < (v.replicas ?? 3),
      { fieldPath: '.semiSyncReplicas' },
    ),
    s.rule<{
      backup?: { s3?: { bucket: string; prefix: string } };
      restore?: { s3: { bucket: string; prefix: string } };
    }>(
      '!has(self.restore) || !has(self.backup) || !has(self.backup.s3) || self.backup.s3.bucket != self.restore.s3.bucket || self.backup.s3.prefix != self.restore.s3.prefix',
      "backup.s3 must not name the prefix restore.s3 reads from: a restored cluster writes its own history, which would mix with its source's",
      (v) =>
        !v.restore ||
        !v.backup?.s3 ||
        v.backup.s3.bucket !== v.restore.s3.bucket ||
        v.backup.s3.prefix !== v.restore.s3.prefix,
      { fieldPath: '.backup.s3.prefix' },
    ),
    s.rule<{ tlsSecretName?: string; tls?: { issuerRef?: unknown } }>(
      '!has(self.tlsSecretName) || !has(self.tls) || !has(self.tls.issuerRef)',
      'tlsSecretName and tls.issuerRef exclude each other: name your own Secret, or the issuer that signs the one recon8s asks cert-manager for',
      (v) => v.tlsSecretName === undefined || v.tls?.issuerRef === undefined,
      { fieldPath: '.tls.issuerRef' },
    ),
    s.transitionRule(
      'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore)',
      'restore is fixed once the cluster exists (it only decides how the cluster is created)',
      { fieldPath: '.restore' },
    ),
  ],
  properties: {
    replicas: s.optional(
      s.integer({
        description: 'Members: 1 primary plus replicas-1 read-only replicas.',
        minimum: 1,
        maximum: 9,
        default: 3,
      }),
    ),
    semiSyncReplicas: s.optional(
      s.integer({
        description:
          'Replicas that must have received a transaction before its commit is acknowledged to the client (semi-synchronous replication, AFTER_SYNC). Every acknowledged write then survives the loss of the primary. With fewer replicas up, writes wait rather than risk loss; 0 turns semi-synchronous replication off (a failover may then lose the last acknowledged writes).',
        minimum: 0,
        maximum: 8,
        defaultDoc: 'half the members, rounded down (1 for 2 or 3 members, 2 for 4 or 5)',
      }),
    ),
    failoverAfterSeconds: s.optional(
      s.integer({
        description:
          'How long the primary may be silent before a replica is promoted (when a majority of members answers and a replica holds every acknowledged transaction). A primary that comes back after a restart is replaced at once, and so, with semi-synchronous replication, is one whose mysql container exited or restarted (a crash). A primary cut off from every other member makes itself read-only after a quarter of this.',
        minimum: 10,
        maximum: 3600,
        default: 30,
      }),
    ),
    version: s.optional(
      s.string({
        description: `MySQL long-term-support release: ${versionWords}. End-of-life releases (5.7, 8.0) are refused; downgrades too.`,
        enum: SUPPORTED_MYSQL_VERSIONS,
        // The release the test suite proves on a real node (8.4 stays selectable, unproven here).
        default: '9.7',
        enumAsRuleMessage: `version must be a supported MySQL LTS release: ${versionWords}`,
        rules: [
          s.rule<string>(
            `!(self in [${eolList}])`,
            `a supported LTS release (${versionWords}): 5.7 and 8.0 are end-of-life and get no security fixes`,
            (v) => !Object.hasOwn(END_OF_LIFE_MYSQL_VERSIONS, v),
          ),
          s.transitionRule(
            noDowngradeCel,
            'version may be upgraded but never downgraded (the data directory of a newer release cannot be read by an older one)',
          ),
        ],
      }),
    ),
    image: s.optional(
      s.string({
        description: 'Overrides the container image (it must be the same release as version).',
        minLength: 1,
        maxLength: 512,
        pattern: IMAGE_REFERENCE_PATTERN,
        patternHint: IMAGE_REFERENCE_HINT,
        defaultDoc: 'mysql:<version>',
      }),
    ),
    agentImage: s.optional(
      s.string({
        description:
          'The image of the agent beside mysqld in every member (`recon8s agent`: probes, self-fencing, accounts, re-provisioning): the recon8s image of the same release as the controller.',
        minLength: 1,
        maxLength: 512,
        pattern: IMAGE_REFERENCE_PATTERN,
        patternHint: IMAGE_REFERENCE_HINT,
        default: DEFAULT_OPERATOR_IMAGE,
      }),
    ),
    storage: s.optional(storage),
    // Three members and an App beside them fit a 2-core node (the example, apps/examples.ts, on the project's own node).
    resources: s.optional(resources({ requests: { cpu: '250m', memory: '1Gi' }, limits: { memory: '1Gi' } })),
    credentialsSecretName: s.optional(
      s.string({
        description:
          "The Secret holding the passwords (keys root-password, replication-password, admin-password for the account the controller manages the members as, clone-password for the account new members clone the primary as, and backup-password for the backup and binary-log jobs' account). When you create it, recon8s only reads it; when it is the default and missing, the controller creates it once with random passwords (and adds a key it lacks to one it created before). Passwords never appear in the spec.",
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
        defaultDoc: '<name>-credentials',
      }),
    ),
    tlsSecretName: s.optional(
      s.string({
        description:
          'The Secret holding the certificate every member presents (keys tls.crt, tls.key and ca.crt, as cert-manager writes them): clients verify members with ca.crt before they send a password. When you name one (a cert-manager Certificate whose DNS names include each member as <name>-N.<name>-headless and the Services), recon8s only reads it; when it is the default and missing, the controller creates a CA of the cluster (in <name>-ca, never mounted in a pod) and the member certificate, and renews the latter, with no restart, while a third of its year is left.',
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        patternHint: 'a DNS subdomain name',
        maxLength: 253,
        defaultDoc: '<name>-tls',
      }),
    ),
    tls: s.optional(tls),
    mysqlConf: s.optional(
      s.map({
        description:
          'Extra my.cnf [mysqld] options. Replication and identity options (server-id, gtid_mode, read_only, log_bin, ...) are managed by recon8s and refused here.',
        values: s.string({
          description: 'The option value.',
          maxLength: 1024,
          pattern: '^[^\\n\\r]*$',
          patternHint: 'a single line',
        }),
        keyPattern: '^[a-z][a-z0-9_-]*$',
        keyPatternHint: 'a lower-case option name such as "max_connections"',
        maxProperties: 128,
        rules: [
          s.rule<Record<string, string>>(
            `self.all(k, !k.replace('-', '_').matches('${MANAGED_MYSQL_OPTION_PATTERN}'))`,
            `no options that recon8s manages, in any spelling (${MANAGED_MYSQL_OPTIONS.join(', ')})`,
            (m) => Object.keys(m).every((k) => !new RegExp(MANAGED_MYSQL_OPTION_PATTERN).test(k.replaceAll('-', '_'))),
          ),
        ],
      }),
    ),
    backup: s.optional(backup),
    restore: s.optional(restore),
    pvcRetention: s.optional(pvcRetention),
    monitoring: s.optional(monitoring),
    networkPolicy: s.optional(networkPolicy),
    labels: s.optional(metadataMap('labels')),
    annotations: s.optional(metadataMap('annotations')),
    nodeSelector: s.optional(nodeSelector),
    tolerations: s.optional(tolerations),
    affinity: s.optional({
      ...affinity,
      description:
        'Affinity of the pods, as in a PodSpec (validated by the API server when the workload is applied). Each of its parts (nodeAffinity, podAffinity, podAntiAffinity) replaces the one recon8s renders: placement.spreadMembers gives the podAntiAffinity unless this has one.',
      defaultDoc: 'the podAntiAffinity of placement.spreadMembers',
    }),
    placement: s.optional(placement),
    nodeLoss: s.optional(nodeLoss),
    imagePullPolicy: s.optional(
      s.string({
        description: 'When the kubelet pulls the image.',
        enum: ['Always', 'IfNotPresent', 'Never'],
        default: 'IfNotPresent',
      }),
    ),
    paused,
  },
});

/** A primary's term, as the controller records it (lib/mysql/rejoin.ts: what it proves and why). */
const primaryTermStatus = s.object({
  typeName: 'MySQLPrimaryTermStatus',
  description:
    'A primary\u2019s term, recorded before it took a write: what a failover from it can later prove about what it holds.',
  properties: {
    member: s.required(s.string({ description: 'The member (pod) that was the primary.' })),
    serverUuid: s.required(s.string({ description: 'Its server_uuid during the term.' })),
    ownGtidsAtStart: s.required(
      s.string({
        description:
          'Its own transactions (of its server_uuid) when the term began, a GTID set: any of that uuid beyond them was committed during the term or after.',
      }),
    ),
    semiSyncReplicas: s.required(
      s.integer({
        description:
          'The fewest semi-synchronous acknowledgements its commits waited for during the term (0: at some point none).',
        minimum: 0,
      }),
    ),
  },
});

export const mysqlStatus = s.object({
  typeName: 'MySQLClusterStatus',
  description: 'What the controller last observed.',
  properties: {
    observedGeneration,
    conditions,
    replicas: s.optional(s.integer({ description: 'Members of the StatefulSet.', minimum: 0 })),
    readyReplicas: s.optional(s.integer({ description: 'Members that are ready.', minimum: 0 })),
    selector: s.optional(s.string({ description: 'The label selector of the members (for the scale subresource).' })),
    primaryEndpoint: s.optional(s.string({ description: 'Host:port of the writable primary.' })),
    replicasEndpoint: s.optional(s.string({ description: 'Host:port for reads.' })),
    credentialsSecretName: s.optional(s.string({ description: 'The Secret holding the passwords.' })),
    tlsSecretName: s.optional(
      s.string({ description: 'The Secret holding the members\u2019 certificate; its ca.crt verifies them.' }),
    ),
    currentPrimary: s.optional(
      s.string({ description: 'The member (pod) that takes writes; the controller alone moves it.' }),
    ),
    members: s.optional(
      s.array({
        description: 'What each member answered when the controller last looked.',
        maxItems: 16,
        listType: 'map',
        listMapKeys: ['name'],
        items: s.object({
          typeName: 'MySQLMemberStatus',
          description: 'One member.',
          properties: {
            name: s.required(s.string({ description: 'The pod.' })),
            role: s.required(
              s.string({
                description: 'primary, replica, or none (serving nothing: not yet configured, unreachable, errant).',
                enum: ['primary', 'replica', 'none'],
              }),
            ),
            reachable: s.required(s.boolean({ description: 'It answered the controller over SQL.' })),
            writable: s.optional(s.boolean({ description: 'read_only is off.' })),
            replicating: s.optional(s.boolean({ description: 'It replicates from the primary.' })),
            errantTransactions: s.optional(
              s.string({ description: 'Transactions it holds that the primary lacks (a GTID set).' }),
            ),
            message: s.optional(s.string({ description: 'Why it did not answer, or its replication error.' })),
            cloning: s.optional(
              s.object({
                typeName: 'MySQLMemberCloning',
                description:
                  'The clone this member receives, as its donor reports it (present while the member clones the primary: a new member, a replacement, a re-provisioning).',
                properties: {
                  from: s.required(s.string({ description: 'The donor member.' })),
                  stage: s.required(s.string({ description: 'file copy, page copy or redo copy.' })),
                  doneMiB: s.required(s.integer({ description: 'The work of this stage done, in MiB.' })),
                  totalMiB: s.required(s.integer({ description: 'The work of this stage estimated, in MiB.' })),
                },
              }),
            ),
          },
        }),
      }),
    ),
    accounts: s.optional(
      s.array({
        description:
          'The accounts of the Apps bound to this cluster (App spec.database), as the controller last made them on the primary.',
        listType: 'map',
        listMapKeys: ['app'],
        items: s.object({
          typeName: 'MySQLAccountStatus',
          description: "One App's account.",
          properties: {
            app: s.required(s.string({ description: 'The App, in the namespace of the cluster.' })),
            user: s.required(s.string({ description: 'The MySQL account (host %).' })),
            database: s.optional(s.string({ description: 'The database it is granted.' })),
            access: s.optional(s.string({ description: 'readWrite or readOnly.' })),
            ready: s.required(s.boolean({ description: 'The account exists with exactly that access.' })),
            reason: s.optional(s.string({ description: 'Why not, in one word.' })),
            message: s.optional(s.string({ description: 'What was done, or why not.' })),
            passwordRevision: s.optional(
              s.string({
                description:
                  "The revision of the App's password the account holds (a rotation's token, or 0 for the first); absent when it is neither of the App Secret's.",
              }),
            ),
            retainsPassword: s.optional(
              s.boolean({ description: 'The account also accepts a retained (old) password, during a rotation.' }),
            ),
          },
        }),
      }),
    ),
    credentialRotation: s.optional(
      s.object({
        typeName: 'MySQLCredentialRotationStatus',
        description:
          "The rotation of the cluster's own accounts: root, replication, recon8s-admin, recon8s-clone and recon8s-backup (`recon8s rotate-credentials mysqlcluster`, the recon8s.dev/rotate-credentials annotation). Never holds a password.",
        properties: {
          requested: s.optional(s.string({ description: 'The token of the rotation asked for.' })),
          accounts: s.optional(
            s.array({
              description: 'The accounts it rotates.',
              maxItems: 5,
              items: s.string({
                description: 'root, replication, admin, clone or backup.',
                enum: ['root', 'replication', 'admin', 'clone', 'backup'],
              }),
            }),
          ),
          completed: s.optional(
            s.string({ description: 'The token of the last rotation completed (the old passwords refused).' }),
          ),
          phase: s.optional(
            s.string({
              description:
                'The phase of the rotation under way: Staging, Retaining, Switching, Repointing, WaitingForClients, Discarding, Completing, Repairing, WaitingForAccount or Refused; absent when none is.',
            }),
          ),
          message: s.optional(s.string({ description: 'What is being done, or waited for.' })),
        },
      }),
    ),
    backup: s.optional(
      s.object({
        typeName: 'MySQLBackupStatus',
        description: 'The backups and the binary-log archive, as their jobs last reported.',
        properties: {
          lastSuccessfulTime: s.optional(s.string({ description: 'When the last backup that completed ended.' })),
          name: s.optional(s.string({ description: 'That backup (its name is the UTC time it started).' })),
          method: s.optional(s.string({ description: 'How that backup was taken: logical or physical.' })),
          location: s.optional(s.string({ description: 'Where it is (s3://bucket/prefix/base/<name>/, or a file).' })),
          sizeBytes: s.optional(s.integer({ description: 'Its size, compressed.', minimum: 0 })),
          gtidSet: s.optional(s.string({ description: 'The transactions it holds (its consistent point).' })),
          durationSeconds: s.optional(s.integer({ description: 'How long it took.', minimum: 0 })),
          source: s.optional(s.string({ description: 'The member it was taken from.' })),
          binlogsArchivedUntil: s.optional(
            s.string({
              description: 'Every transaction committed before this time is in the binary-log archive.',
            }),
          ),
          lastVerified: s.optional(
            s.object({
              typeName: 'MySQLBackupVerificationStatus',
              description: 'The last verification of a backup by a restore (spec.backup.verify).',
              properties: {
                backup: s.required(s.string({ description: 'The backup verified.' })),
                time: s.required(s.string({ description: 'When the verification ended.' })),
                result: s.required(
                  s.string({
                    description:
                      'Passed, Failed (message says what: the object that could not be read, the table that differs) or Skipped (message says why).',
                    enum: ['Passed', 'Failed', 'Skipped'],
                  }),
                ),
                durationSeconds: s.optional(s.integer({ description: 'How long it took.', minimum: 0 })),
                tables: s.optional(s.integer({ description: 'How many tables were checked.', minimum: 0 })),
                replayedLogs: s.optional(
                  s.integer({ description: 'How many archived binary logs were replayed after it.', minimum: 0 }),
                ),
                message: s.optional(s.string({ description: 'What failed, or why it was skipped.' })),
              },
            }),
          ),
        },
      }),
    ),
    restore: s.optional(
      s.object({
        typeName: 'MySQLRestoreStatus',
        description: 'How this cluster was restored (spec.restore), as its first member reported.',
        properties: {
          backup: s.required(s.string({ description: 'The backup it started from.' })),
          location: s.optional(s.string({ description: 'Where that backup is.' })),
          pointInTime: s.optional(s.string({ description: 'The point in time it was restored to, if any.' })),
          beforeGtid: s.optional(
            s.string({ description: 'The transaction it was restored to just before (left out), if any.' }),
          ),
          gtidSet: s.optional(s.string({ description: 'The transactions it holds after the restore.' })),
          replayedLogs: s.optional(s.integer({ description: 'Archived binary logs replayed.', minimum: 0 })),
          completedAt: s.optional(s.string({ description: 'When the restore completed.' })),
        },
      }),
    ),
    restoreFailure: s.optional(
      s.object({
        typeName: 'MySQLRestoreFailureStatus',
        description:
          'The last failure of the restore (spec.restore), kept until the restore succeeds or the resource changes: a crash-looping restore is reported failed in every phase of its back-off.',
        properties: {
          message: s.required(s.string({ description: 'Why it failed, as the first member reported.' })),
          generation: s.required(
            s.integer({ description: 'The resource generation it failed at (a later one clears it).', minimum: 0 }),
          ),
        },
      }),
    ),
    primaryTerm: s.optional(primaryTermStatus),
    lastFailover: s.optional(
      s.object({
        typeName: 'MySQLFailoverStatus',
        description:
          'The last failover: what the controller knew when it promoted a replica, so that the former primary may rejoin by clone on its own when what it holds beyond the new primary provably was never acknowledged.',
        properties: {
          from: s.required(s.string({ description: 'The primary that was lost.' })),
          to: s.required(s.string({ description: 'The replica promoted.' })),
          time: s.required(s.string({ description: 'When.' })),
          outOfReach: s.required(
            s.integer({
              description:
                'Replicas of the lost primary that were not candidates (out of reach, errant, or following another source).',
              minimum: 0,
            }),
          ),
          term: s.optional(primaryTermStatus),
          ownGtidsAtFailover: s.optional(
            s.string({
              description:
                'The lost primary\u2019s own transactions when it was replaced, when it answered then (it had restarted).',
            }),
          ),
          unprovable: s.optional(
            s.string({
              description:
                'Why what the former primary holds can no longer be proven unacknowledged (seen since the failover).',
            }),
          ),
          discardRequested: s.optional(
            s.string({
              description:
                'The transactions of the former primary its agent was asked to discard by re-provisioning it by clone (asked once).',
            }),
          ),
        },
      }),
    ),
    switchover: s.optional(
      s.object({
        typeName: 'MySQLSwitchoverStatus',
        description: 'The last switchover request (annotation recon8s.dev/switchover) and how it ended.',
        properties: {
          requestId: s.required(s.string({ description: 'The request, as the annotation carried it.' })),
          outcome: s.required(
            s.string({ description: 'Done, Refused or Failed.', enum: ['Done', 'Refused', 'Failed'] }),
          ),
          message: s.required(s.string({ description: 'What happened.' })),
        },
      }),
    ),
  },
});

export const MYSQL_CLUSTER: KindDefinition = {
  group: 'recon8s.dev',
  version: 'v1alpha1',
  kind: 'MySQLCluster',
  plural: 'mysqlclusters',
  singular: 'mysqlcluster',
  shortNames: ['r8mysql'],
  categories: ['recon8s'],
  description: 'A MySQL primary/replica cluster with GTID replication, persistent storage and scheduled backups.',
  childTypes: [
    { apiVersion: 'apps/v1', kind: 'StatefulSet', plural: 'statefulsets' },
    { apiVersion: 'v1', kind: 'Service', plural: 'services' },
    { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets' },
    { apiVersion: 'batch/v1', kind: 'CronJob', plural: 'cronjobs' },
    { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', plural: 'networkpolicies' },
  ],
  spec: mysqlSpec,
  status: mysqlStatus,
  // A StatefulSet's controller-revision-hash label is "<name>-<hash of up to 10>", and labels are at most 63.
  maxNameLength: 52,
  conditionalNameLimits: [
    {
      // A CronJob's name is at most 52 characters: its Jobs are named "<cronjob>-<minutes since the epoch>".
      maxLength: 52 - '-backup'.length,
      whenCel: 'has(self.spec.backup)',
      when: (spec: { backup?: unknown }) => spec.backup !== undefined,
      because: 'the backup CronJob "<name>-backup" (at most 52 characters)',
    },
  ],
  printerColumns: [
    { name: 'Version', type: 'string', jsonPath: '.spec.version' },
    { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
    {
      name: 'Degraded',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Degraded")].reason',
      description: 'AsExpected, or why not.',
    },
    { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
    { name: 'Primary', type: 'string', jsonPath: '.status.currentPrimary' },
    { name: 'Endpoint', type: 'string', jsonPath: '.status.primaryEndpoint', priority: 1 },
    {
      name: 'Last-Backup',
      type: 'date',
      jsonPath: '.status.backup.lastSuccessfulTime',
      description: 'When the last backup that completed ended.',
      priority: 1,
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  scale: {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
};
