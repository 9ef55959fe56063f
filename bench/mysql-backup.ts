// Backup and restore times, logical and physical, for a database of a given size on the real node
// (test/node) against the test suite's S3 server (versitygw), beside the disk's own read and write rate
// measured in the same run: `flock /tmp/recon8s-e2e.lock npm run bench:backup -- [--mib 1024] [--members 2]`.
// A script, never run by `npm test`: progress on stderr, a table and one JSON line on stdout.
import { BatchV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { freshRestrictedNamespace } from '../test/e2e/cluster.js';
import { mustSql, mysqlClusterResource } from '../test/e2e/support/mysql-members.js';
import { startTestController } from '../test/integration/support/controller.js';
import { NODE_IP, NODE_RUN_DIR, startNodeCluster } from '../test/node/index.js';
import { startS3Server } from '../test/s3/index.js';

const { values } = parseArgs({
  options: { mib: { type: 'string', default: '1024' }, members: { type: 'string', default: '2' } },
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
// A run stopped from outside (SIGINT, SIGTERM: a deadline) keeps what it measured and leaves no node running.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    progress(`${signal}: stopping the node`);
    process.stdout.write(`${JSON.stringify({ mib, members, stopped: signal, ...figures })}\n`);
    void Promise.allSettled([s3.stop(), node.stop()]).then(() => process.exit(130));
  });
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
  // Rows of 1 KiB: 16 hex digests of 16 random numbers (SHA2: MySQL 9.7 has no MD5). Hex carries 4 bits a
  // byte, so gzip takes about half away, as from much real data; one digest repeated would compress ~20×
  // and time gzip on data no user has.
  const row = `CONCAT(${Array.from({ length: 16 }, () => 'SHA2(RAND(), 256)').join(', ')})`;
  await sql(
    'db-0',
    `CREATE DATABASE bench; USE bench; CREATE TABLE bench.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(1024)); INSERT INTO bench.t (v) SELECT ${row} FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) a, (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) b`,
  );
  for (let rows = 16; rows < mib * 1024; rows *= 2)
    await sql('db-0', `INSERT INTO bench.t (v) SELECT ${row} FROM bench.t`);
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

  // The disk the volumes and emptyDirs live on (the node's run directory), in this same run: the limit
  // both methods are held to. 1 GiB written with O_DIRECT and synced, then read back with O_DIRECT.
  const probe = join(NODE_RUN_DIR, 'bench-disk-probe');
  const dd = async (args: string[]): Promise<number> => {
    const t0 = performance.now();
    const r = spawnSync('dd', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`dd ${args.join(' ')}: ${r.stderr}`);
    return 1024 / ((performance.now() - t0) / 1000);
  };
  figures.diskWriteMiBs = Number(
    (await dd(['if=/dev/zero', `of=${probe}`, 'bs=4M', 'count=256', 'oflag=direct', 'conv=fsync'])).toFixed(0),
  );
  figures.diskReadMiBs = Number((await dd([`if=${probe}`, 'of=/dev/null', 'bs=4M', 'iflag=direct'])).toFixed(0));
  rmSync(probe, { force: true });
  progress(`disk: write ${figures.diskWriteMiBs} MiB/s, read ${figures.diskReadMiBs} MiB/s (O_DIRECT, 1 GiB)`);

  type Method = 'logical' | 'physical';
  const clusterStatus = async (name: string) =>
    (
      (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as {
        status?: {
          backup?: { sizeBytes?: number; name?: string; durationSeconds?: number; method?: string };
          restore?: { replayedLogs?: number };
        };
      }
    ).status;
  const backups: Partial<Record<Method, { name: string; dataBytes: number }>> = {};
  // Each method: the Job (the backup, an init container, then its verification by a restore).
  for (const method of ['logical', 'physical'] as const) {
    await custom.patchNamespacedCustomObject(
      { ...GROUP, namespace: ns, name: 'db', body: { spec: { backup: { method } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    for (; ; await sleep(500)) {
      const pod = (await batch.readNamespacedCronJob({ namespace: ns, name: 'db-backup' })).spec?.jobTemplate.spec
        ?.template.spec;
      const c = [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].find((x) => x.name === 'backup');
      if (c?.env?.find((e) => e.name === 'BACKUP_METHOD')?.value === method) break;
    }
    figures[`${method}BackupJobS`] = await runJob('db-backup', `bench-${method}`);
    const backup = (await clusterStatus('db'))?.backup;
    if (backup?.method !== method || !backup.name) throw new Error(`no ${method} backup: ${JSON.stringify(backup)}`);
    const manifest = JSON.parse(
      readFileSync(join(s3.dataDir, 'bench', 'db', 'base', backup.name, 'manifest.json'), 'utf8'),
    ) as { dataBytes?: number; cloneSeconds?: number; streamSeconds?: number };
    backups[method] = { name: backup.name, dataBytes: manifest.dataBytes ?? 0 };
    // The physical backup's two parts (its manifest): the clone into the scratch volume, then tar | gzip -1 to the store.
    if (manifest.cloneSeconds !== undefined) figures[`${method}CloneS`] = manifest.cloneSeconds;
    if (manifest.streamSeconds !== undefined) figures[`${method}StreamS`] = manifest.streamSeconds;
    figures[`${method}BackupS`] = backup.durationSeconds ?? -1;
    figures[`${method}StoredMiB`] = Number(((backup.sizeBytes ?? 0) / 1048576).toFixed(1));
    progress(
      `${method} backup ${backup.name}: ${figures[`${method}StoredMiB`]} MiB in ${figures[`${method}BackupS`]} s`,
    );
    // What the verification reported (its termination message): time, and its container's peak memory and CPU.
    const [pod] = (await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=bench-${method}` })).items;
    const message = pod?.status?.containerStatuses?.find((c) => c.name === 'verify')?.state?.terminated?.message ?? '';
    const verified = /^BackupVerified: (.*)$/s.exec(message.trim());
    if (!verified) throw new Error(`the ${method} verification did not pass: ${message}`);
    const report = JSON.parse(verified[1] ?? '{}') as { durationSeconds?: number; peakMemoryBytes?: number };
    figures[`${method}VerifyS`] = report.durationSeconds ?? -1;
    figures[`${method}VerifyPeakMiB`] = Math.round((report.peakMemoryBytes ?? 0) / 1048576);
    progress(`${method}: verified in ${figures[`${method}VerifyS`]} s`);
  }
  const dataDirMiB = (backups.physical?.dataBytes ?? 0) / 1048576;
  figures.dataDirMiB = Number(dataDirMiB.toFixed(0));

  // Writes after both backups, archived: a physical restore to a point after them replays them.
  await sql('db-0', "INSERT INTO bench.t (v) SELECT 'after the backup' FROM bench.t LIMIT 1000");
  await sleep(1500);
  const point = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await sleep(1500);
  figures.binlogS = await runJob('db-binlog', 'bench-binlog');

  /** Seconds the first member spent in its bootstrap (the restore itself), by the kubelet's clock. */
  const bootstrapSeconds = async (pod: string): Promise<number> => {
    const done = (await core.readNamespacedPod({ namespace: ns, name: pod })).status?.initContainerStatuses?.find(
      (c) => c.name === 'bootstrap',
    )?.state?.terminated;
    if (!done?.startedAt || !done.finishedAt) throw new Error(`${pod}: no finished bootstrap`);
    return (new Date(done.finishedAt).getTime() - new Date(done.startedAt).getTime()) / 1000;
  };
  for (const [method, restore, expected] of [
    ['logical', { backup: backups.logical?.name }, rows],
    ['physical', { pointInTime: point }, rows + 1000],
  ] as const) {
    const name = `restored-${method}`;
    const t0 = performance.now();
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(node.images.mysql, name, 1, {
        ...resources,
        storage: { size: `${Math.max(2, Math.ceil((mib * 4) / 1024))}Gi` },
        restore: { ...restore, s3: store },
      }),
    });
    await ready(name, 1);
    figures[`${method}RestoreToReadyS`] = seconds(t0);
    figures[`${method}RestoreS`] = await bootstrapSeconds(`${name}-0`);
    const restoredRows = Number(await sql(`${name}-0`, 'SELECT COUNT(*) FROM bench.t'));
    if (restoredRows !== expected) throw new Error(`${name}: ${restoredRows} rows, expected ${expected}`);
    figures[`${method}ReplayedLogs`] = (await clusterStatus(name))?.restore?.replayedLogs ?? 0;
    progress(
      `${method} restore: bootstrap ${figures[`${method}RestoreS`]} s, Ready in ${figures[`${method}RestoreToReadyS`]} s`,
    );
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name });
  }
  // A replacement member: one more member of db, which starts empty and clones a member (the donor
  // copies the whole data directory over the network) before it replicates; Ready once it has caught up.
  const added = `db-${members}`;
  const grown = performance.now();
  await custom.patchNamespacedCustomObject(
    { ...GROUP, namespace: ns, name: 'db', body: { spec: { replicas: members + 1 } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await ready('db', members + 1);
  figures.cloneMemberToReadyS = seconds(grown);
  figures.cloneMemberBootstrapS = await bootstrapSeconds(added);
  const clonedRows = Number(await sql(added, 'SELECT COUNT(*) FROM bench.t'));
  if (clonedRows !== rows + 1000) throw new Error(`${added}: ${clonedRows} rows, expected ${rows + 1000}`);
  progress(
    `replacement member ${added}: bootstrap (the clone) ${figures.cloneMemberBootstrapS} s, Ready in ${figures.cloneMemberToReadyS} s`,
  );

  const t0 = performance.now();
  await custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: ns,
    body: mysqlClusterResource(node.images.mysql, 'fresh', 1, resources),
  });
  await ready('fresh', 1);
  figures.emptyClusterReadyS = seconds(t0);
  await controller.stop();
} catch (err) {
  // A failure late in a long run keeps what was measured before it.
  process.stdout.write(`${JSON.stringify({ mib, members, failed: String(err), ...figures })}\n`);
  throw err;
} finally {
  await s3.stop();
  await node.stop();
}
const rate = (key: string): string => {
  const secs = Number(figures[key]);
  return secs > 0 ? (Number(figures.dataDirMiB) / secs).toFixed(1) : '?';
};
/** How many times faster the physical method was than the logical one at the same step. */
const faster = (logical: string, physical: string): string => {
  const l = Number(figures[logical]);
  const p = Number(figures[physical]);
  return l > 0 && p > 0 ? (l / p).toFixed(2) : '?';
};
const share = (key: string, disk: string): string => {
  const secs = Number(figures[key]);
  return secs > 0 ? ((Number(figures.dataDirMiB) / secs / Number(figures[disk])) * 100).toFixed(0) : '?';
};
process.stdout.write(
  `MySQLCluster backup and restore, logical and physical, on the real node (2 cores, load ${loadavg()[0]?.toFixed(2)})\n`,
);
process.stdout.write(
  [
    '| what | logical | physical |',
    '|---|---|---|',
    `| data | ${figures.rows} rows of ~1 KiB, ${figures.tableMiB} MiB of table; ${figures.dataDirMiB} MiB of data directory | |`,
    `| disk (same run, O_DIRECT) | write ${figures.diskWriteMiBs} MiB/s, read ${figures.diskReadMiBs} MiB/s | |`,
    `| backup (status.backup.durationSeconds) | ${figures.logicalBackupS} s, ${rate('logicalBackupS')} MiB/s of data directory (${share('logicalBackupS', 'diskReadMiBs')} % of the disk's read) | ${figures.physicalBackupS} s, ${rate('physicalBackupS')} MiB/s (${share('physicalBackupS', 'diskReadMiBs')} %) |`,
    `| the physical backup's parts (manifest) | | clone to scratch ${figures.physicalCloneS} s, ${rate('physicalCloneS')} MiB/s; tar \\| gzip -1 to the store ${figures.physicalStreamS} s, ${rate('physicalStreamS')} MiB/s |`,
    `| physical ÷ logical speed (logical s ÷ physical s) | | backup ${faster('logicalBackupS', 'physicalBackupS')}×, restore ${faster('logicalRestoreS', 'physicalRestoreS')}× |`,
    `| stored | ${figures.logicalStoredMiB} MiB | ${figures.physicalStoredMiB} MiB |`,
    `| verification by a restore | ${figures.logicalVerifyS} s, peak ${figures.logicalVerifyPeakMiB} MiB | ${figures.physicalVerifyS} s, peak ${figures.physicalVerifyPeakMiB} MiB |`,
    `| the backup Job, both, pod start to end | ${figures.logicalBackupJobS} s | ${figures.physicalBackupJobS} s |`,
    `| restore: the first member's bootstrap | ${figures.logicalRestoreS} s, ${rate('logicalRestoreS')} MiB/s (${share('logicalRestoreS', 'diskWriteMiBs')} % of the disk's write) | ${figures.physicalRestoreS} s, ${rate('physicalRestoreS')} MiB/s (${share('physicalRestoreS', 'diskWriteMiBs')} %), ${figures.physicalReplayedLogs} archived logs replayed to a point in time |`,
    `| restore: create → Ready (1 member) | ${figures.logicalRestoreToReadyS} s | ${figures.physicalRestoreToReadyS} s |`,
    `| replacement member by clone (db scaled to ${members + 1}): its bootstrap; create → Ready | | ${figures.cloneMemberBootstrapS} s, ${rate('cloneMemberBootstrapS')} MiB/s (${share('cloneMemberBootstrapS', 'diskWriteMiBs')} % of the disk's write); ${figures.cloneMemberToReadyS} s |`,
    `| binary-log archive Job | ${figures.binlogS} s | |`,
    `| for comparison: an empty 1-member cluster, create → Ready | ${figures.emptyClusterReadyS} s | |`,
  ].join('\n') + '\n',
);
const ratios = {
  physicalBackupSpeedup: faster('logicalBackupS', 'physicalBackupS'),
  physicalRestoreSpeedup: faster('logicalRestoreS', 'physicalRestoreS'),
  physicalBackupPctOfDiskRead: share('physicalBackupS', 'diskReadMiBs'),
  physicalRestorePctOfDiskWrite: share('physicalRestoreS', 'diskWriteMiBs'),
};
process.stdout.write(`${JSON.stringify({ mib, members, ...figures, ...ratios })}\n`);
