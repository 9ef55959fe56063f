import assert from 'node:assert/strict';
import type { MySQLClusterProps } from '../../constructs/index.js';
import type { ExpectedMySQLProblem } from './support/mysql-synth.js';
import { assertMySQLProblem, invalidMySQL, synthMySQL } from './support/mysql-synth.js';

/** spec.backup.verify as it resolves when not given. */
const VERIFY_DEFAULTS = {
  enabled: true,
  scratchSize: '10Gi',
  resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } },
};
const BACKUP = { schedule: '0 3 * * *', persistentVolumeClaimName: 'shop-backups' };
const STORE = { bucket: 'shop-backups', prefix: 'prod/shop', credentialsSecretName: 'store-keys' };
/** STORE as the construct resolves it (its defaults applied), as a refused value shows it. */
const RESOLVED_STORE = {
  ...STORE,
  region: 'us-east-1',
  forcePathStyle: true,
  allowInsecureEndpoint: false,
  rcloneImage: 'docker.io/rclone/rclone:1.75.2',
};
const EOL = /end-of-life and get no security fixes/;

interface FailCase extends ExpectedMySQLProblem {
  readonly name: string;
  readonly props: unknown;
  readonly id?: string;
}

const cases: FailCase[] = [
  // The name: every child's name is derived from it.
  {
    name: 'fails on a name that is not a DNS-1035 label',
    id: 'My_DB',
    props: {},
    field: 'metadata.name',
    value: 'My_DB',
    expected: /DNS-1035 label/,
  },
  {
    name: 'fails on a name starting with a digit',
    id: '1db',
    props: {},
    field: 'metadata.name',
    value: '1db',
    expected: /DNS-1035 label/,
  },
  {
    name: 'fails on a name of 53 characters, leaving no room for the children names',
    id: 'a'.repeat(53),
    props: {},
    field: 'metadata.name',
    value: 'a'.repeat(53),
    expected: /at most 52 characters/,
  },
  {
    name: 'fails on a name of 46 characters with backups: the CronJob "<name>-backup" would exceed 52',
    id: 'a'.repeat(46),
    props: { backup: BACKUP },
    field: 'metadata.name',
    value: 'a'.repeat(46),
    expected: /at most 45 characters, so that the backup CronJob "<name>-backup" \(at most 52 characters\) fits/,
  },
  // replicas
  {
    name: 'fails when replicas is 0',
    props: { replicas: 0 },
    field: 'spec.replicas',
    value: 0,
    expected: /an integer from 1 to 9/,
  },
  {
    name: 'fails when replicas is 10',
    props: { replicas: 10 },
    field: 'spec.replicas',
    value: 10,
    expected: /an integer from 1 to 9/,
  },
  {
    name: 'fails when replicas is not an integer',
    props: { replicas: 1.5 },
    field: 'spec.replicas',
    value: 1.5,
    expected: /an integer/,
  },
  {
    name: 'fails when replicas is a string',
    props: { replicas: '3' },
    field: 'spec.replicas',
    value: '3',
    expected: /an integer/,
  },
  // semiSyncReplicas
  {
    name: 'fails when semiSyncReplicas is negative',
    props: { semiSyncReplicas: -1 },
    field: 'spec.semiSyncReplicas',
    value: -1,
    expected: /an integer from 0 to 8/,
  },
  {
    name: 'fails when semiSyncReplicas is 9',
    props: { replicas: 9, semiSyncReplicas: 9 },
    field: 'spec.semiSyncReplicas',
    value: 9,
    expected: /an integer from 0 to 8/,
  },
  {
    name: 'fails when semiSyncReplicas is not an integer',
    props: { semiSyncReplicas: 1.5 },
    field: 'spec.semiSyncReplicas',
    value: 1.5,
    expected: /an integer/,
  },
  {
    name: 'fails when semiSyncReplicas equals the default 3 replicas: the primary cannot acknowledge for itself',
    props: { semiSyncReplicas: 3 },
    field: 'spec.semiSyncReplicas',
    value: 3,
    expected: /semiSyncReplicas must be less than replicas/,
  },
  {
    name: 'fails when semiSyncReplicas equals spec.replicas',
    props: { replicas: 2, semiSyncReplicas: 2 },
    field: 'spec.semiSyncReplicas',
    value: 2,
    expected: /semiSyncReplicas must be less than replicas \(the primary cannot acknowledge for itself\)/,
  },
  // failoverAfterSeconds
  {
    name: 'fails when failoverAfterSeconds is 9',
    props: { failoverAfterSeconds: 9 },
    field: 'spec.failoverAfterSeconds',
    value: 9,
    expected: /an integer from 10 to 3600/,
  },
  {
    name: 'fails when failoverAfterSeconds is 3601',
    props: { failoverAfterSeconds: 3601 },
    field: 'spec.failoverAfterSeconds',
    value: 3601,
    expected: /an integer from 10 to 3600/,
  },
  {
    name: 'fails when failoverAfterSeconds is a string',
    props: { failoverAfterSeconds: '30' },
    field: 'spec.failoverAfterSeconds',
    value: '30',
    expected: /an integer/,
  },
  // version
  {
    name: 'fails on version 8.0, saying it is end-of-life',
    props: { version: '8.0' },
    field: 'spec.version',
    value: '8.0',
    expected: EOL,
  },
  {
    name: 'fails on version 8.0, naming the supported releases',
    props: { version: '8.0' },
    field: 'spec.version',
    value: '8.0',
    expected: /one of "8\.4", "9\.7"/,
  },
  {
    name: 'fails on version 5.7, saying it is end-of-life',
    props: { version: '5.7' },
    field: 'spec.version',
    value: '5.7',
    expected: EOL,
  },
  {
    name: 'fails on an unknown version 9.1',
    props: { version: '9.1' },
    field: 'spec.version',
    value: '9.1',
    expected: /one of "8\.4", "9\.7"/,
  },
  {
    name: 'fails when version is a number',
    props: { version: 8.4 },
    field: 'spec.version',
    value: 8.4,
    expected: /a string/,
  },
  // image
  {
    name: 'fails on an empty image',
    props: { image: '' },
    field: 'spec.image',
    value: '',
    expected: /at least 1 character/,
  },
  {
    name: 'fails on an image with a space',
    props: { image: 'mysql 8.4' },
    field: 'spec.image',
    value: 'mysql 8.4',
    expected: /an image reference: \[host\[:port\]\/\]name\[:tag\]/,
  },
  {
    name: 'fails on an image that is not an image reference (a digest too short to be one)',
    props: { image: 'mysql@sha256:abc' },
    field: 'spec.image',
    value: 'mysql@sha256:abc',
    expected: /an image reference: .*the name in lowercase/,
  },
  {
    name: 'fails on an image longer than 512 characters',
    props: { image: 'm'.repeat(513) },
    field: 'spec.image',
    value: 'm'.repeat(513),
    expected: /at most 512 characters/,
  },
  // storage
  {
    name: 'fails on a storage size of "ten gigs"',
    props: { storage: { size: 'ten gigs' } },
    field: 'spec.storage.size',
    value: 'ten gigs',
    expected: /a Kubernetes quantity/,
  },
  {
    name: 'fails on a negative storage size',
    props: { storage: { size: -1 } },
    field: 'spec.storage.size',
    value: -1,
    expected: /a Kubernetes quantity/,
  },
  {
    name: 'fails on a storage size of "0"',
    props: { storage: { size: '0' } },
    field: 'spec.storage.size',
    value: '0',
    expected: /with a byte unit/,
  },
  {
    name: 'fails on a storage size without a unit (20 would be a 20-byte volume)',
    props: { storage: { size: 20 } },
    field: 'spec.storage.size',
    value: 20,
    expected: /an amount with a byte unit, such as "256Mi" or "10Gi" \(a bare number is bytes/,
  },
  {
    name: 'fails on a storage size in thousandths ("20m")',
    props: { storage: { size: '20m' } },
    field: 'spec.storage.size',
    value: '20m',
    expected: /"m" thousandths of one/,
  },
  {
    name: 'fails on a memory request without a unit (1 would be one byte)',
    props: { resources: { requests: { memory: 1 } } },
    field: 'spec.resources.requests.memory',
    value: 1,
    expected: /an amount with a byte unit/,
  },
  {
    name: 'fails on a memory limit of "512m" (half a byte)',
    props: { resources: { limits: { memory: '512m' } } },
    field: 'spec.resources.limits.memory',
    value: '512m',
    expected: /an amount with a byte unit/,
  },
  {
    name: 'fails on a storage size of 0Gi',
    props: { storage: { size: '0Gi' } },
    field: 'spec.storage.size',
    value: '0Gi',
    expected: /greater than zero/,
  },
  {
    name: 'fails on a storage size of the number 0',
    props: { storage: { size: 0 } },
    field: 'spec.storage.size',
    value: 0,
    expected: /with a byte unit/,
  },
  {
    name: 'fails on a storageClassName that is not a DNS subdomain',
    props: { storage: { storageClassName: 'Fast_SSD' } },
    field: 'spec.storage.storageClassName',
    value: 'Fast_SSD',
    expected: /a DNS subdomain name/,
  },
  {
    name: 'fails on no access modes',
    props: { storage: { accessModes: [] } },
    field: 'spec.storage.accessModes',
    value: [],
    expected: /at least 1 item/,
  },
  {
    name: 'fails on an unknown access mode',
    props: { storage: { accessModes: ['ReadOnlyMany'] } },
    field: 'spec.storage.accessModes[0]',
    value: 'ReadOnlyMany',
    expected: /one of "ReadWriteOnce"/,
  },
  {
    name: 'fails on a repeated access mode',
    props: { storage: { accessModes: ['ReadWriteOnce', 'ReadWriteOnce'] } },
    field: 'spec.storage.accessModes[1]',
    value: 'ReadWriteOnce',
    expected: /no duplicates/,
  },
  {
    name: 'fails on an unknown storage field',
    props: { storage: { sizeGi: 10 } },
    field: 'spec.storage.sizeGi',
    value: 10,
    expected: /no such field; known fields: size, storageClassName, accessModes/,
  },
  // resources
  {
    name: 'fails on a CPU request that is not a quantity',
    props: { resources: { requests: { cpu: 'lots' } } },
    field: 'spec.resources.requests.cpu',
    value: 'lots',
    expected: /a Kubernetes quantity/,
  },
  {
    name: 'fails on an unknown resource',
    props: { resources: { limits: { gpu: 1 } } },
    field: 'spec.resources.limits.gpu',
    value: 1,
    expected: /no such field/,
  },
  // credentials
  {
    name: 'fails on a credentialsSecretName that is not a DNS subdomain',
    props: { credentialsSecretName: 'My Secret' },
    field: 'spec.credentialsSecretName',
    value: 'My Secret',
    expected: /a DNS subdomain name/,
  },
  // tls.issuerRef
  {
    name: 'fails when tlsSecretName and tls.issuerRef are both given',
    props: { tlsSecretName: 'mine', tls: { issuerRef: { name: 'shop-ca' } } },
    field: 'spec.tls.issuerRef',
    value: { name: 'shop-ca', kind: 'Issuer', group: 'cert-manager.io' },
    expected: /tlsSecretName and tls.issuerRef exclude each other/,
  },
  {
    name: 'fails on a tls.issuerRef without a name',
    props: { tls: { issuerRef: { kind: 'Issuer' } } },
    field: 'spec.tls.issuerRef.name',
    expected: /required/,
  },
  {
    name: 'fails on a tls.issuerRef.name that is not a DNS subdomain',
    props: { tls: { issuerRef: { name: 'Shop CA' } } },
    field: 'spec.tls.issuerRef.name',
    value: 'Shop CA',
    expected: /a DNS subdomain name/,
  },
  {
    name: 'fails on a tls.issuerRef.kind other than Issuer or ClusterIssuer',
    props: { tls: { issuerRef: { name: 'shop-ca', kind: 'CertificateAuthority' } } },
    field: 'spec.tls.issuerRef.kind',
    value: 'CertificateAuthority',
    expected: /one of "Issuer", "ClusterIssuer"/,
  },
  {
    name: 'fails on a tls.issuerRef.group that is not a DNS subdomain',
    props: { tls: { issuerRef: { name: 'shop-ca', group: 'Cert Manager' } } },
    field: 'spec.tls.issuerRef.group',
    value: 'Cert Manager',
    expected: /a DNS subdomain name/,
  },
  // mysqlConf
  {
    name: 'fails on the managed my.cnf key server-id',
    props: { mysqlConf: { 'server-id': '7' } },
    field: 'spec.mysqlConf',
    value: { 'server-id': '7' },
    expected: /no options that recon8s manages, in any spelling \(server_id, gtid_mode/,
  },
  {
    name: 'fails on a managed option in another spelling (skip-log-bin)',
    props: { mysqlConf: { 'skip-log-bin': 'ON' } },
    field: 'spec.mysqlConf',
    value: { 'skip-log-bin': 'ON' },
    expected: /no options that recon8s manages/,
  },
  {
    name: 'fails on a managed option behind loose_ (loose-server-id)',
    props: { mysqlConf: { 'loose-server-id': '3' } },
    field: 'spec.mysqlConf',
    value: { 'loose-server-id': '3' },
    expected: /no options that recon8s manages/,
  },
  {
    name: 'fails on the managed my.cnf key gtid_mode',
    props: { mysqlConf: { gtid_mode: 'OFF' } },
    field: 'spec.mysqlConf',
    value: { gtid_mode: 'OFF' },
    expected: /no options that recon8s manages/,
  },
  {
    name: 'fails on the managed my.cnf key super_read_only',
    props: { mysqlConf: { super_read_only: 'OFF' } },
    field: 'spec.mysqlConf',
    value: { super_read_only: 'OFF' },
    expected: /no options that recon8s manages/,
  },
  {
    name: 'fails on a managed semi-synchronous replication option (rpl_semi_sync_source_enabled)',
    props: { mysqlConf: { rpl_semi_sync_source_enabled: 'OFF' } },
    field: 'spec.mysqlConf',
    value: { rpl_semi_sync_source_enabled: 'OFF' },
    expected: /no options that recon8s manages.*rpl_semi_sync_source_enabled/,
  },
  {
    name: 'fails on a managed semi-synchronous option behind loose- (loose-rpl-semi-sync-source-timeout)',
    props: { mysqlConf: { 'loose-rpl-semi-sync-source-timeout': '10' } },
    field: 'spec.mysqlConf',
    value: { 'loose-rpl-semi-sync-source-timeout': '10' },
    expected: /no options that recon8s manages/,
  },
  {
    name: 'fails on an upper-case my.cnf key',
    props: { mysqlConf: { Max_Connections: '9' } },
    field: 'spec.mysqlConf["Max_Connections"]',
    value: 'Max_Connections',
    expected: /a lower-case option name/,
  },
  {
    name: 'fails on a my.cnf value of more than one line',
    props: { mysqlConf: { init_connect: 'a\nb' } },
    field: 'spec.mysqlConf["init_connect"]',
    value: 'a\nb',
    expected: /a single line/,
  },
  {
    name: 'fails on a my.cnf value longer than 1024 characters',
    props: { mysqlConf: { init_connect: 'x'.repeat(1025) } },
    field: 'spec.mysqlConf["init_connect"]',
    value: 'x'.repeat(1025),
    expected: /at most 1024 characters/,
  },
  {
    name: 'fails on more than 128 my.cnf options',
    props: { mysqlConf: Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`opt_${i}`, '1'])) },
    field: 'spec.mysqlConf',
    value: '129 keys',
    expected: /at most 128 keys/,
  },
  // backup
  {
    name: 'fails on the backup schedule "every day"',
    props: { backup: { ...BACKUP, schedule: 'every day' } },
    field: 'spec.backup.schedule',
    value: 'every day',
    expected: /a five-field cron expression/,
  },
  {
    name: 'fails on a backup without a schedule',
    props: { backup: { persistentVolumeClaimName: 'b' } },
    field: 'spec.backup.schedule',
    expected: /required/,
  },
  {
    name: 'fails on a backup with two destinations',
    props: { backup: { ...BACKUP, s3: STORE } },
    field: 'spec.backup',
    value: {
      ...BACKUP,
      s3: RESOLVED_STORE,
      method: 'logical',
      scratchSize: '10Gi',
      retain: 7,
      suspend: false,
      verify: VERIFY_DEFAULTS,
    },
    expected: /exactly one destination: persistentVolumeClaimName or s3/,
  },
  {
    name: 'fails on binlogIntervalMinutes without s3',
    props: { backup: { ...BACKUP, binlogIntervalMinutes: 5 } },
    field: 'spec.backup.binlogIntervalMinutes',
    value: 5,
    expected: /binlogIntervalMinutes needs s3/,
  },
  {
    name: 'fails on a physical backup to a volume',
    props: { backup: { ...BACKUP, method: 'physical' } },
    field: 'spec.backup.method',
    value: 'physical',
    expected: /method physical needs s3/,
  },
  {
    name: 'fails on a backup method that is neither logical nor physical',
    props: { backup: { schedule: '@daily', s3: STORE, method: 'snapshot' } },
    field: 'spec.backup.method',
    value: 'snapshot',
    expected: /one of "logical", "physical"/,
  },
  {
    name: 'fails on a bucket name S3 refuses',
    props: { backup: { schedule: '@daily', s3: { ...STORE, bucket: 'My_Bucket' } } },
    field: 'spec.backup.s3.bucket',
    value: 'My_Bucket',
    expected: /an S3 bucket name/,
  },
  {
    name: 'fails on a plain-HTTP store endpoint unless the spec accepts the risk by name',
    props: { backup: { schedule: '@daily', s3: { ...STORE, endpoint: 'http://minio.storage:9000' } } },
    field: 'spec.backup.s3.endpoint',
    value: 'http://minio.storage:9000',
    expected: /an https:\/\/ endpoint: .*set allowInsecureEndpoint: true/,
  },
  {
    name: 'fails on a plain-HTTP endpoint of the store a restore reads too',
    props: { restore: { s3: { ...STORE, endpoint: 'http://minio.storage:9000', allowInsecureEndpoint: false } } },
    field: 'spec.restore.s3.endpoint',
    value: 'http://minio.storage:9000',
    expected: /an https:\/\/ endpoint/,
  },
  {
    name: 'fails on a restore point that is not a UTC time',
    props: { restore: { s3: STORE, pointInTime: '2026-11-24 10:15' } },
    field: 'spec.restore.pointInTime',
    value: '2026-11-24 10:15',
    expected: /a UTC time such as/,
  },
  {
    name: 'fails on a restore to both a point in time and a GTID set',
    props: {
      restore: { s3: STORE, pointInTime: '2026-11-24T10:15:00Z', gtidSet: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77' },
    },
    field: 'spec.restore',
    value: {
      s3: RESOLVED_STORE,
      backup: 'latest',
      pointInTime: '2026-11-24T10:15:00Z',
      gtidSet: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77',
    },
    expected: /at most one of pointInTime, gtidSet and beforeGtid/,
  },
  {
    name: 'fails on a restore to both a point in time and just before a transaction',
    props: {
      restore: {
        s3: STORE,
        pointInTime: '2026-11-24T10:15:00Z',
        beforeGtid: '3e11fa47-71ca-11e1-9e33-c80aa9429562:78',
      },
    },
    field: 'spec.restore',
    value: {
      s3: RESOLVED_STORE,
      backup: 'latest',
      pointInTime: '2026-11-24T10:15:00Z',
      beforeGtid: '3e11fa47-71ca-11e1-9e33-c80aa9429562:78',
    },
    expected: /at most one of pointInTime, gtidSet and beforeGtid/,
  },
  {
    name: 'fails on a beforeGtid that is a set, not one transaction',
    props: { restore: { s3: STORE, beforeGtid: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77' } },
    field: 'spec.restore.beforeGtid',
    value: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77',
    expected: /one transaction's GTID such as/,
  },
  {
    name: 'fails on backups into the prefix the restore reads',
    props: { restore: { s3: STORE }, backup: { schedule: '@daily', s3: STORE } },
    field: 'spec.backup.s3.prefix',
    value: 'prod/shop',
    expected: /must not name the prefix restore.s3 reads from/,
  },
  {
    name: 'fails on a backup without a destination',
    props: { backup: { schedule: '@daily' } },
    field: 'spec.backup',
    value: {
      schedule: '@daily',
      method: 'logical',
      scratchSize: '10Gi',
      retain: 7,
      suspend: false,
      verify: VERIFY_DEFAULTS,
    },
    expected: /exactly one destination: persistentVolumeClaimName or s3/,
  },
  {
    name: 'fails on a backup volume name that is not a DNS subdomain',
    props: { backup: { ...BACKUP, persistentVolumeClaimName: 'Backups!' } },
    field: 'spec.backup.persistentVolumeClaimName',
    value: 'Backups!',
    expected: /a DNS subdomain name/,
  },
  {
    name: 'fails when backup.retain is 0',
    props: { backup: { ...BACKUP, retain: 0 } },
    field: 'spec.backup.retain',
    value: 0,
    expected: /an integer from 1 to 1000/,
  },
  {
    name: 'fails when backup.retain is 1001',
    props: { backup: { ...BACKUP, retain: 1001 } },
    field: 'spec.backup.retain',
    value: 1001,
    expected: /an integer from 1 to 1000/,
  },
  {
    name: 'fails when backup.suspend is not a boolean',
    props: { backup: { ...BACKUP, suspend: 'yes' } },
    field: 'spec.backup.suspend',
    value: 'yes',
    expected: /true or false/,
  },
  // pvcRetention
  {
    name: 'fails on pvcRetention.whenDeleted "Keep"',
    props: { pvcRetention: { whenDeleted: 'Keep' } },
    field: 'spec.pvcRetention.whenDeleted',
    value: 'Keep',
    expected: /one of "Retain", "Delete"/,
  },
  {
    name: 'fails on pvcRetention.whenScaled "Keep"',
    props: { pvcRetention: { whenScaled: 'Keep' } },
    field: 'spec.pvcRetention.whenScaled',
    value: 'Keep',
    expected: /one of "Retain", "Delete"/,
  },
  // metadata and scheduling
  {
    name: 'fails on a label under app.kubernetes.io/',
    props: { labels: { 'app.kubernetes.io/name': 'x' } },
    field: 'spec.labels',
    value: { 'app.kubernetes.io/name': 'x' },
    expected: /no keys under app\.kubernetes\.io\//,
  },
  {
    name: 'fails on an invalid label value',
    props: { labels: { team: 'a b' } },
    field: 'spec.labels["team"]',
    value: 'a b',
    expected: /a label value/,
  },
  {
    name: 'fails on an annotation under app.kubernetes.io/',
    props: { annotations: { 'app.kubernetes.io/x': 'y' } },
    field: 'spec.annotations',
    value: { 'app.kubernetes.io/x': 'y' },
    expected: /no keys under app\.kubernetes\.io\//,
  },
  {
    name: 'fails on an invalid nodeSelector key',
    props: { nodeSelector: { 'bad key': 'x' } },
    field: 'spec.nodeSelector["bad key"]',
    value: 'bad key',
    expected: /a qualified label key/,
  },
  {
    name: 'fails when tolerations is not a list',
    props: { tolerations: { key: 'x' } },
    field: 'spec.tolerations',
    value: { key: 'x' },
    expected: /a list of/,
  },
  {
    name: 'fails when affinity is not an object',
    props: { affinity: 'spread' },
    field: 'spec.affinity',
    value: 'spread',
    expected: /an object/,
  },
  // placement, nodeLoss
  {
    name: 'fails on placement.spreadMembers "Always"',
    props: { placement: { spreadMembers: 'Always' } },
    field: 'spec.placement.spreadMembers',
    value: 'Always',
    expected: /one of "Preferred", "Required"/,
  },
  {
    name: 'fails on placement.zoneSpread "Zones"',
    props: { placement: { zoneSpread: 'Zones' } },
    field: 'spec.placement.zoneSpread',
    value: 'Zones',
    expected: /one of "None", "Preferred", "Required"/,
  },
  {
    name: 'fails on nodeLoss.recoverAfterSeconds under a minute (a node that missed a few heartbeats is not lost)',
    props: { nodeLoss: { recoverAfterSeconds: 30 } },
    field: 'spec.nodeLoss.recoverAfterSeconds',
    value: 30,
    expected: /an integer from 60 to 604800/,
  },
  {
    name: 'fails on nodeLoss.recoverAfterSeconds past a week',
    props: { nodeLoss: { recoverAfterSeconds: 604801 } },
    field: 'spec.nodeLoss.recoverAfterSeconds',
    value: 604801,
    expected: /an integer from 60 to 604800/,
  },
  {
    name: 'fails on an unknown imagePullPolicy',
    props: { imagePullPolicy: 'Sometimes' },
    field: 'spec.imagePullPolicy',
    value: 'Sometimes',
    expected: /one of "Always", "IfNotPresent", "Never"/,
  },
  // shape
  {
    name: 'fails on an unknown field and names the known ones',
    props: { replica: 3 },
    field: 'spec.replica',
    value: 3,
    expected: /no such field; known fields: replicas, semiSyncReplicas, failoverAfterSeconds, version, image/,
  },
  {
    name: 'fails when the spec is not an object',
    props: 'three replicas',
    field: 'spec',
    value: 'three replicas',
    expected: /an object/,
  },
];

describe('MySQLCluster validation', () => {
  for (const c of cases) {
    it(c.name, () => {
      const { error } = invalidMySQL(c.props, c.id);
      assertMySQLProblem(error, c);
    });
  }

  it('fails on version 9.1 without calling it end-of-life', () => {
    const { error } = invalidMySQL({ version: '9.1' });
    assert.equal(error.problems.length, 1);
    assert.doesNotMatch(error.message, /end-of-life/);
  });

  it('fails with the subject and every problem reported together', () => {
    const { error } = invalidMySQL(
      {
        replicas: 0,
        version: '5.7',
        storage: { size: 'ten gigs' },
        mysqlConf: { 'server-id': '1' },
        backup: { ...BACKUP, schedule: 'every day' },
        replica: 3,
      },
      'Shop',
    );
    assert.match(error.message, /^MySQLCluster "Shop" is invalid:\n/);
    const want: ExpectedMySQLProblem[] = [
      { field: 'metadata.name', value: 'Shop', expected: /DNS-1035 label/ },
      { field: 'spec.replicas', value: 0, expected: /an integer from 1 to 9/ },
      { field: 'spec.version', value: '5.7', expected: EOL },
      { field: 'spec.storage.size', value: 'ten gigs', expected: /a Kubernetes quantity/ },
      { field: 'spec.mysqlConf', value: { 'server-id': '1' }, expected: /no options that recon8s manages/ },
      { field: 'spec.backup.schedule', value: 'every day', expected: /cron expression/ },
      { field: 'spec.replica', value: 3, expected: /no such field/ },
    ];
    for (const w of want) assertMySQLProblem(error, w);
  });

  it('accepts an https:// store endpoint, and an http:// one only with allowInsecureEndpoint', () => {
    for (const s3 of [
      { ...STORE, endpoint: 'https://minio.storage:9000' },
      { ...STORE, endpoint: 'http://10.250.0.1:9000', allowInsecureEndpoint: true },
      { ...STORE, endpoint: undefined },
    ])
      assert.equal(synthMySQL({ backup: { schedule: '@daily', s3 } }).cluster.spec.backup?.s3?.endpoint, s3.endpoint);
  });

  it('accepts semiSyncReplicas below replicas, 0 with a single member, and defaults failoverAfterSeconds to 30', () => {
    const { cluster } = synthMySQL({ replicas: 5, semiSyncReplicas: 4, failoverAfterSeconds: 10 });
    assert.equal(cluster.spec.semiSyncReplicas, 4);
    assert.equal(cluster.spec.failoverAfterSeconds, 10);
    assert.equal(synthMySQL({ replicas: 1, semiSyncReplicas: 0 }).cluster.spec.semiSyncReplicas, 0);
    const defaults = synthMySQL().cluster.spec;
    assert.equal(defaults.semiSyncReplicas, undefined);
    assert.equal(defaults.failoverAfterSeconds, 30);
  });

  it('fails before creating anything, leaving the chart empty', () => {
    const { chart } = invalidMySQL({ replicas: 0, backup: BACKUP });
    assert.deepEqual(chart.toJson(), []);
    assert.equal(chart.node.children.length, 0);
  });

  it('accepts the longest names each shape of cluster leaves room for: 52 without backups, 45 with', () => {
    const names = (id: string, props: unknown): string[] =>
      synthMySQL(props as MySQLClusterProps, id)
        .objects.map((o) => o.metadata?.name ?? '')
        .sort();
    assert.ok(names('a'.repeat(52), {}).includes('a'.repeat(52)));
    const withBackup = names('b'.repeat(45), { backup: BACKUP });
    assert.ok(
      withBackup.includes(`${'b'.repeat(45)}-backup`) && `${'b'.repeat(45)}-backup`.length === 52,
      withBackup.join(','),
    );
  });
});
