// Backup and restore times for a database of a given size, on the real node (test/node) against the
// test suite's S3 server (versitygw): `npm run bench:backup -- [--mib 256] [--members 2]`.
// A script, never run by `npm test`: progress on stderr, a table and one JSON line on stdout.
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { freshRestrictedNamespace } from '../test/e2e/cluster.js';
import { mustSql, mysqlClusterResource } from '../test/e2e/support/mysql-members.js';
import { startTestController } from '../test/integration/support/controller.js';
import { NODE_IP, startNodeCluster } from '../test/node/index.js';
import { startS3Server } from '../test/s3/index.js';

const { values } = parseArgs({
  options: { mib: { type: 'string', default: '256' }, members: { type: 'string', default: '2' } },
});
const mib = Number(values.mib);
const members = Number(values.members);
if (!Number.isInteger(mib) || mib < 1 || !Number.isInteger(members) || members < 1 || members > 5) {
  process.stderr.write('usage: npm run bench:backup -- [--mib N] [--members 1..5]\n');
  process.exit(2);
}

const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const progress = (line: string): boolean => process.stderr.write(`[bench] ${line}\n`);
const seconds = (since: number): number => Number(((performance.now() - since) / 1000).toFixed(1));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const node = await startNodeCluster({ onOutput: () => undefined });
const s3 = await startS3Server({ host: NODE_IP });
const figures: Record<string, number | string> = {};
try {
  await s3.createBucket('bench');
  const ns = await freshRestrictedNamespace(node, 'bench-backup');
  const kc = node.kubeConfig();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const batch = kc.makeApiClient(BatchV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const sql = (pod: string, text: string) => mustSql(kc, ns, pod, text);
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'store' },
      stringData: { 'access-key-id': s3.accessKeyId, 'secret-access-key': s3.secretAccessKey },
    },
  });
  const controller = await startTestController(node, { namespaces: [ns], resyncPeriodMs: 60_000 });
  const store = {
    bucket: 'bench',
    prefix: 'db',
    endpoint: s3.endpoint,
    allowInsecureEndpoint: true, // versitygw on the host speaks plain HTTP
    credentialsSecretName: 'store',
    rcloneImage: node.images.mysql,
  };
  const resources = { resources: { requests: { cpu: '100m', memory: '512Mi' }, limits: { memory: '2Gi' } } };
  const ready = async (name: string, n: number): Promise<void> => {
    for (const t0 = performance.now(); ; await sleep(500)) {
      const cr = (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as {
        status?: { readyReplicas?: number; conditions?: { type: string; status: string; message?: string }[] };
      };
      if (cr.status?.readyReplicas === n) return;
      if (performance.now() - t0 > 30 * 60_000) throw new Error(`${name} not Ready: ${JSON.stringify(cr.status)}`);
    }
  };
  const runJob = async (cronJob: string, name: string): Promise<number> => {
    const t0 = performance.now();
    await node.kubectl(['--namespace', ns, 'create', 'job', name, `--from=cronjob/${cronJob}`]);
    for (; ; await sleep(500)) {
      const job = await batch.readNamespacedJob({ namespace: ns, name });
      if (job.status?.succeeded) return seconds(t0);
      if (job.status?.failed) throw new Error(`${name} failed`);
    }
  };

  await custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: ns,
    body: mysqlClusterResource(node.images.mysql, 'db', members, {
      ...resources,
      storage: { size: `${Math.max(2, Math.ceil((mib * 4) / 1024))}Gi` },
      backup: { schedule: '0 3 * * *', suspend: true, s3: store },
    }),
  });
  await ready('db', members);
  progress(`db: ${members} members Ready; loading ~${mib} MiB`);
  const load = performance.now();
  // Rows of 1 KiB (hex of random digests, SHA2: MySQL 9.7 has no MD5; about half of it compresses away).
  await sql(
    'db-0',
    'CREATE DATABASE bench; USE bench; CREATE TABLE bench.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(1024)); INSERT INTO bench.t (v) SELECT REPEAT(SHA2(RAND(), 256), 16) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) a, (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) b',
  );
  for (let rows = 16; rows < mib * 1024; rows *= 2)
    await sql('db-0', 'INSERT INTO bench.t (v) SELECT REPEAT(SHA2(RAND(), 256), 16) FROM bench.t');
  const dataMiB = Number(
    await sql(
      'db-0',
      "ANALYZE TABLE bench.t; SELECT ROUND((data_length + index_length) / 1048576) FROM information_schema.tables WHERE table_schema = 'bench' AND table_name = 't'",
    ).then((out) => out.split('\n').at(-1)),
  );
  const rows = Number(await sql('db-0', 'SELECT COUNT(*) FROM bench.t'));
  figures.rows = rows;
  figures.tableMiB = dataMiB;
  progress(`loaded ${rows} rows (${dataMiB} MiB on disk) in ${seconds(load)} s; waiting for the replicas`);
  if (members > 1)
    for (let i = 1; i < members; i++)
      for (; ; await sleep(1000)) if (Number(await sql(`db-${i}`, 'SELECT COUNT(*) FROM bench.t')) === rows) break;

  // The Job: the backup (an init container), then its verification by a restore (spec.backup.verify).
  figures.backupJobS = await runJob('db-backup', 'bench-backup');
  const backup = (
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name: 'db' })) as {
      status?: { backup?: { sizeBytes?: number; name?: string; durationSeconds?: number } };
    }
  ).status?.backup;
  figures.backupS = backup?.durationSeconds ?? -1;
  figures.backupMiB = Number(((backup?.sizeBytes ?? 0) / 1048576).toFixed(1));
  progress(`backup ${backup?.name ?? '?'}: ${figures.backupMiB} MiB in ${figures.backupS} s`);
  // What the verification reported (its termination message): time, and its container's peak memory and CPU.
  const [pod] = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'job-name=bench-backup' })).items;
  const message = pod?.status?.containerStatuses?.find((c) => c.name === 'verify')?.state?.terminated?.message ?? '';
  const verified = /^BackupVerified: (.*)$/s.exec(message.trim());
  if (!verified) throw new Error(`the verification did not pass: ${message}`);
  const report = JSON.parse(verified[1] ?? '{}') as {
    durationSeconds?: number;
    peakMemoryBytes?: number;
    cpuMilliseconds?: number;
    tables?: number;
  };
  figures.verifyS = report.durationSeconds ?? -1;
  figures.verifyPeakMiB = Math.round((report.peakMemoryBytes ?? 0) / 1048576);
  figures.verifyCpuS = Number(((report.cpuMilliseconds ?? 0) / 1000).toFixed(1));
  progress(`verified in ${figures.verifyS} s, peak ${figures.verifyPeakMiB} MiB, CPU ${figures.verifyCpuS} s`);

  await sql('db-0', "INSERT INTO bench.t (v) SELECT 'after the backup' FROM bench.t LIMIT 1000");
  await sleep(1500);
  const point = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await sleep(1500);
  figures.binlogS = await runJob('db-binlog', 'bench-binlog');

  let t0 = performance.now();
  await custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: ns,
    body: mysqlClusterResource(node.images.mysql, 'restored', 1, {
      ...resources,
      storage: { size: `${Math.max(2, Math.ceil((mib * 4) / 1024))}Gi` },
      restore: { pointInTime: point, s3: store },
    }),
  });
  await ready('restored', 1);
  figures.restoreToReadyS = seconds(t0);
  const restoredRows = Number(await sql('restored-0', 'SELECT COUNT(*) FROM bench.t'));
  if (restoredRows !== rows + 1000) throw new Error(`restored ${restoredRows} rows, expected ${rows + 1000}`);
  progress(`point-in-time restore Ready in ${figures.restoreToReadyS} s with ${restoredRows} rows`);
  t0 = performance.now();
  await custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: ns,
    body: mysqlClusterResource(node.images.mysql, 'fresh', 1, resources),
  });
  await ready('fresh', 1);
  figures.emptyClusterReadyS = seconds(t0);
  await controller.stop();
} finally {
  await s3.stop();
  await node.stop();
}
process.stdout.write(
  `MySQLCluster backup and point-in-time restore on the real node (2 cores, load ${loadavg()[0]?.toFixed(2)})\n`,
);
process.stdout.write(
  [
    '| what | figure |',
    '|---|---|',
    `| table | ${figures.rows} rows of ~1 KiB, ${figures.tableMiB} MiB on disk |`,
    `| backup (dump from a replica with per-table checksums, gzip, stream to S3) | ${figures.backupS} s, ${figures.backupMiB} MiB stored |`,
    `| verification by a restore into a scratch mysqld (load, compare, replay, CHECK TABLE) | ${figures.verifyS} s, peak memory ${figures.verifyPeakMiB} MiB, CPU ${figures.verifyCpuS} s |`,
    `| the backup Job: both, pod start to end | ${figures.backupJobS} s |`,
    `| binary-log archive Job | ${figures.binlogS} s |`,
    `| restore to a point in time: create → Ready (1 member) | ${figures.restoreToReadyS} s |`,
    `| for comparison: an empty 1-member cluster, create → Ready | ${figures.emptyClusterReadyS} s |`,
  ].join('\n') + '\n',
);
process.stdout.write(`${JSON.stringify({ mib, members, ...figures })}\n`);
