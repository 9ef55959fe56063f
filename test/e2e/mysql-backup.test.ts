// Backups to a real S3-compatible store (versitygw, started by the test on the node's address) and
// restores from it on the real node: a backup under a running writer, a restore into a new cluster
// with the same rows, a point-in-time restore to just before a destructive statement, a broken
// store reported, not retried hot, and recovered from, and, last, binary logs that expire before the
// archive copied them: the gap reported as a condition, an Event and a metric, and the shipped alert
// firing in a real Prometheus that scrapes the controller.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { main } from '../../lib/cli/cli.js';
import type { Controller } from '../../lib/controller/controller.js';
import { NODE_IP } from '../node/index.js';
import type { S3Server } from '../s3/index.js';
import { startS3Server } from '../s3/index.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, freshRestrictedNamespace, useSharedNode } from './cluster.js';
import { mustSql, mysqlClusterResource } from './support/mysql-members.js';
import type { PrometheusServer } from './support/prometheus.js';
import { ONLY_AFTER_BACKUP_RUNS, buildPrometheus, startWithShippedRules } from './support/prometheus.js';

const SOURCE = 'src';
const BUCKET = 'backups';
const PREFIX = 'e2e/src';
const STORE_SECRET = 'store';
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const BOOTSTRAP_MS = 8 * 60_000; // members bootstrap in ~1 min; on a machine short of CPU, several
const JOB_MS = 3 * 60_000;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface BackupStatus {
  name?: string;
  source?: string;
  location?: string;
  sizeBytes?: number;
  gtidSet?: string;
  lastSuccessfulTime?: string;
  binlogsArchivedUntil?: string;
}
interface ClusterObject {
  status?: {
    readyReplicas?: number;
    conditions?: Condition[];
    backup?: BackupStatus;
    restore?: { backup?: string; pointInTime?: string; beforeGtid?: string; gtidSet?: string; replayedLogs?: number };
  };
}

describe('MySQLCluster backups to S3 and restores on a real node (MySQL 9.7, versitygw)', function () {
  this.timeout(2 * BOOTSTRAP_MS);
  const node = useSharedNode();
  let kc: KubeConfig;
  let ns: string;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;
  let s3: S3Server | undefined;
  let jobs = 0;
  /** Built (or found) while the cluster starts; started by the last test. */
  let prometheusBinary: Promise<string> | undefined;
  let prometheus: PrometheusServer | undefined;
  const prom = (): PrometheusServer => {
    if (!prometheus) throw new Error('Prometheus did not start');
    return prometheus;
  };

  const sql = (pod: string, text: string) => mustSql(kc, ns, pod, text);
  const cluster = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as ClusterObject;
  const store = () => {
    if (!s3) throw new Error('no S3 server');
    return {
      bucket: BUCKET,
      endpoint: s3.endpoint,
      // versitygw on the node's host speaks plain HTTP: said in the spec, as a user must say it.
      allowInsecureEndpoint: true,
      credentialsSecretName: STORE_SECRET,
      // The test image carries rclone itself (the official MySQL images do not: then the default rclone image).
      rcloneImage: node().images.mysql,
    };
  };
  const setStoreSecret = (secretAccessKey: string) =>
    core.replaceNamespacedSecret({
      namespace: ns,
      name: STORE_SECRET,
      body: {
        metadata: { name: STORE_SECRET },
        stringData: { 'access-key-id': s3?.accessKeyId ?? '', 'secret-access-key': secretAccessKey },
      },
    });

  async function allReady(name: string, n: number): Promise<void> {
    const started = Date.now();
    await eventually(
      async () => {
        const cr = await cluster(name);
        assert.equal(cr.status?.readyReplicas, n);
        assert.equal(cr.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      },
      { timeoutMs: BOOTSTRAP_MS, intervalMs: 1000, maxIntervalMs: 2000, description: `${name}: ${n} members Ready` },
    );
    console.log(`      ${name}: ${n} members Ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  /** Runs a Job made from one of the source's CronJobs and waits for it to end; true when it succeeded. */
  async function runJob(cronJob: string): Promise<{ name: string; succeeded: boolean; seconds: number }> {
    const name = `${cronJob}-t${++jobs}`;
    const started = Date.now();
    await node().kubectl(['--namespace', ns, 'create', 'job', name, `--from=cronjob/${cronJob}`]);
    let succeeded = false;
    await eventually(
      async () => {
        const job = await batch.readNamespacedJob({ namespace: ns, name });
        const done = job.status?.conditions?.find(
          (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
        );
        assert.ok(done, `${name} is still running`);
        succeeded = done.type === 'Complete';
      },
      { timeoutMs: JOB_MS, intervalMs: 1000, maxIntervalMs: 2000, description: `${name} done` },
    );
    return { name, succeeded, seconds: (Date.now() - started) / 1000 };
  }

  const events = async (reason: string): Promise<CoreV1Event[]> =>
    (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${SOURCE},reason=${reason}` }))
      .items;
  const degraded = async (): Promise<Condition | undefined> =>
    (await cluster(SOURCE)).status?.conditions?.find((c) => c.type === 'Degraded');
  /** What the source holds: ids, and a checksum of every row's content. */
  const rowsAndSum = (pod: string, where = '') =>
    sql(pod, `SELECT CONCAT(COUNT(*), '/', COALESCE(BIT_XOR(CRC32(CONCAT_WS('#', id, note))), 0)) FROM e2e.t ${where}`);
  const utcNow = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  /** The recon8s CLI, in this process, against the node; exit code and what it printed. */
  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out = new PassThrough();
    const err = new PassThrough();
    const chunks = { out: [] as Buffer[], err: [] as Buffer[] };
    out.on('data', (c: Buffer) => chunks.out.push(c));
    err.on('data', (c: Buffer) => chunks.err.push(c));
    const code = await main([...args, '--namespace', ns, '--kubeconfig', node().kubeconfigPath], out, err);
    return { code, out: Buffer.concat(chunks.out).toString('utf8'), err: Buffer.concat(chunks.err).toString('utf8') };
  }

  /** Inserts a row every ~100 ms until stopped; resolves to the ids written. */
  function startWriter(from: number): { stop: () => Promise<number[]> } {
    let running = true;
    const written: number[] = [];
    const loop = (async () => {
      for (let id = from; running; id++) {
        await sql(`${SOURCE}-0`, `INSERT INTO e2e.t VALUES (${id}, 'written during the backup')`);
        written.push(id);
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
        return written;
      },
    };
  }

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    batch = kc.makeApiClient(BatchV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    // A rejection is reported by the test that waits for it.
    prometheusBinary = buildPrometheus();
    prometheusBinary.catch(() => undefined);
    ns = await freshRestrictedNamespace(node(), 'mysql-backup');
    // Pods reach the node's address; the store listens there.
    s3 = await startS3Server({ host: NODE_IP });
    await s3.createBucket(BUCKET);
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: STORE_SECRET },
        stringData: { 'access-key-id': s3.accessKeyId, 'secret-access-key': s3.secretAccessKey },
      },
    });
    controller = await startTestController(node(), { namespaces: [ns], resyncPeriodMs: 30_000 });
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      // No schedule fires during the run: the tests run the jobs themselves.
      // Two members: the backups come from the replica, as they would from any of several.
      body: mysqlClusterResource(node().images.mysql, SOURCE, 2, {
        backup: { schedule: '0 3 * * *', suspend: true, s3: { ...store(), prefix: PREFIX } },
      }),
    });
    await allReady(SOURCE, 2);
    await sql(
      `${SOURCE}-0`,
      [
        'CREATE DATABASE e2e',
        'CREATE TABLE e2e.t (id INT PRIMARY KEY, note VARCHAR(64))',
        "INSERT INTO e2e.t VALUES (1, 'before the backup'), (2, 'before the backup')",
        'CREATE TABLE e2e.b (id INT PRIMARY KEY, v VARBINARY(8))',
        'INSERT INTO e2e.b VALUES (1, 0x00FF0A0D5C27)',
      ].join('; '),
    );
  });
  after(async () => {
    await prometheus?.stop();
    await controller?.stop();
    await discardNamespace(node(), ns);
    await s3?.stop();
  });

  let backupName = '';
  let backupGtids = '';

  it('backs up to the store while a writer keeps writing: status.backup says where, how big and at which GTID set; no replica gains a transaction', async () => {
    const writer = startWriter(100);
    const run = await runJob(`${SOURCE}-backup`);
    const written = await writer.stop();
    assert.ok(run.succeeded, `the backup job failed: ${JSON.stringify((await cluster(SOURCE)).status?.conditions)}`);
    assert.ok(written.length >= 3, `the writer wrote ${written.length} rows during the backup`);
    console.log(`      backup job done in ${run.seconds.toFixed(1)} s while ${written.length} rows were written`);

    let backup: BackupStatus = {};
    await eventually(
      async () => {
        backup = (await cluster(SOURCE)).status?.backup ?? {};
        assert.match(backup.name ?? '', /^\d{8}T\d{6}Z$/);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'status.backup' },
    );
    backupName = backup.name ?? '';
    backupGtids = backup.gtidSet ?? '';
    assert.equal(backup.location, `s3://${BUCKET}/${PREFIX}/base/${backupName}/`);
    assert.ok((backup.sizeBytes ?? 0) > 0);
    assert.match(backupGtids, /^[0-9a-f-]{36}:1-\d+$/);
    // The store has it, manifest last, and its size is what status says.
    const dir = join(s3?.dataDir ?? '', BUCKET, PREFIX, 'base', backupName);
    assert.ok(existsSync(join(dir, 'manifest.json')), `${dir}/manifest.json`);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { sizeBytes: number };
    assert.equal(manifest.sizeBytes, backup.sizeBytes);
    assert.equal((await events('BackupCompleted')).length, 1);
    // Taken from a replica, which gained nothing of its own (an errant transaction would exclude it).
    const primaryGtids = await sql(`${SOURCE}-0`, 'SELECT @@GLOBAL.gtid_executed');
    assert.match(
      (await cluster(SOURCE)).status?.backup?.source ?? '',
      new RegExp(`^${SOURCE}-1\\.`),
      'from the replica',
    );
    const own = await sql(`${SOURCE}-1`, `SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, '${primaryGtids}')`);
    assert.equal(own, '', `${SOURCE}-1 holds transactions the primary lacks`);
    // The job's pod as the API server has it: the backup account's password and no other of the cluster's
    // (never root's), in no container's environment nor as a volume.
    const [pod] = (await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${run.name}` })).items;
    assert.ok(pod, `the pod of ${run.name}`);
    const credentials = `${SOURCE}-credentials`;
    const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
    assert.deepEqual(
      containers.flatMap((c) =>
        (c.env ?? []).flatMap((e) =>
          e.valueFrom?.secretKeyRef?.name === credentials ? [`${e.name}=${e.valueFrom.secretKeyRef.key}`] : [],
        ),
      ),
      ['MYSQL_BACKUP_PASSWORD=backup-password'],
    );
    assert.ok(!containers.some((c) => (c.env ?? []).some((e) => e.name === 'MYSQL_ROOT_PASSWORD')));
    assert.ok(!containers.some((c) => (c.envFrom ?? []).some((e) => e.secretRef?.name === credentials)));
    assert.deepEqual(
      (pod.spec?.volumes ?? []).filter((v) => v.secret?.secretName === credentials || v.projected !== undefined),
      [],
    );
    // The dump logged in as the backup account, and replication cannot clone (BACKUP_ADMIN is the clone account's).
    assert.equal(
      await sql(`${SOURCE}-1`, "SELECT COUNT(*) FROM mysql.user WHERE user = 'recon8s-backup' AND ssl_type = 'ANY'"),
      '1',
    );
    assert.equal(
      await sql(`${SOURCE}-0`, "SHOW GRANTS FOR 'replication'@'%'"),
      'GRANT REPLICATION SLAVE ON *.* TO `replication`@`%`',
    );
    assert.match(
      await sql(`${SOURCE}-0`, "SHOW GRANTS FOR 'recon8s-clone'@'%'"),
      /GRANT BACKUP_ADMIN ON \*\.\* TO `recon8s-clone`@`%`/,
    );
  });

  it('verifies each backup by a restore into a scratch server (status.backup.lastVerified, an Event, metrics), and a corrupted object fails it, naming the object, until it is whole again', async () => {
    // The backup above: its Job went on to verify it. The checksums were taken in the dump's own
    // snapshot although a writer was writing.
    const dir = join(s3?.dataDir ?? '', BUCKET, PREFIX, 'base', backupName);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
      tables?: [string, number, number][];
      checksumsSkipped?: string;
      dataBytes?: number;
    };
    assert.equal(manifest.checksumsSkipped, undefined, manifest.checksumsSkipped);
    assert.deepEqual(
      manifest.tables?.map(([t]) => t),
      ['e2e.b', 'e2e.t'],
    );
    type Verified = { backup?: string; result?: string; tables?: number; message?: string; durationSeconds?: number };
    const lastVerified = async () =>
      ((await cluster(SOURCE)).status?.backup as { lastVerified?: Verified } | undefined)?.lastVerified;
    await eventually(
      async () => {
        const v = await lastVerified();
        assert.equal(v?.result, 'Passed', JSON.stringify(v));
        assert.equal(v.backup, backupName);
        assert.equal(v.tables, 2);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'status.backup.lastVerified Passed' },
    );
    const passedEvents = await events('BackupVerified');
    assert.equal(passedEvents.length, 1);
    console.log(`      ${passedEvents[0]?.message ?? ''}`);
    const metric = async (name: 'mysqlBackupVerified' | 'mysqlBackupVerificationFailed') =>
      (await controller?.metrics[name].get())?.values.find(
        (v) => v.labels.namespace === ns && v.labels.cluster === SOURCE,
      )?.value;
    assert.ok(((await metric('mysqlBackupVerified')) ?? 0) > Date.now() / 1000 - 600);
    assert.equal(await metric('mysqlBackupVerificationFailed'), 0);

    // One byte of the dump flipped in the store.
    const dump = join(dir, 'dump.sql.gz');
    const whole = readFileSync(dump);
    const flipped = Buffer.from(whole);
    const at = Math.floor(flipped.length / 2);
    flipped[at] = (flipped[at] ?? 0) ^ 0xff;
    writeFileSync(dump, flipped);
    const broken = await cli(['backup', 'verify', SOURCE, backupName]);
    console.log(`      ${broken.err.trim()}`);
    assert.equal(broken.code, 1, broken.out);
    const object = `s3://${BUCKET}/${PREFIX}/base/${backupName}/dump.sql.gz`;
    assert.ok(broken.err.includes(object), broken.err);
    await eventually(
      async () => {
        const c = await degraded();
        assert.equal(c?.reason, 'BackupVerificationFailed', JSON.stringify(c));
        assert.ok(c.message?.includes(object), c.message);
        assert.equal((await lastVerified())?.result, 'Failed');
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'Degraded BackupVerificationFailed' },
    );
    assert.equal((await events('BackupVerificationFailed')).length, 1);
    await eventually(async () => assert.equal(await metric('mysqlBackupVerificationFailed'), 1), {
      timeoutMs: 30_000,
      intervalMs: 1000,
      description: 'recon8s_mysql_backup_verification_failed 1',
    });

    // Whole again: verified on demand, and no longer Degraded.
    writeFileSync(dump, whole);
    const again = await cli(['backup', 'verify', SOURCE]);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, new RegExp(`^backup ${backupName} verified by a restore in \\d+ s: 2 tables match`));
    await eventually(
      async () => {
        assert.equal((await degraded())?.status, 'False');
        assert.equal((await lastVerified())?.result, 'Passed');
        assert.equal(await metric('mysqlBackupVerificationFailed'), 0);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'verified again, not Degraded' },
    );
  });

  it('restores into a new cluster from that backup: the rows at its GTID point, on every member, with the source data intact', async () => {
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(node().images.mysql, 'restored', 2, {
        restore: { backup: backupName, s3: { ...store(), prefix: PREFIX } },
      }),
    });
    await allReady('restored', 2);
    const restoredGtids = await sql('restored-0', 'SELECT @@GLOBAL.gtid_executed');
    assert.equal(restoredGtids, backupGtids, 'the restored history is exactly the backup');
    // The source at the backup's point: the rows whose transactions the backup holds. The writer wrote
    // one row per transaction with increasing ids, so they are the ids up to the restored maximum.
    const max = await sql('restored-0', 'SELECT MAX(id) FROM e2e.t');
    const expected = await rowsAndSum(`${SOURCE}-0`, `WHERE id <= ${max}`);
    for (const m of ['restored-0', 'restored-1']) {
      await eventually(async () => assert.equal(await rowsAndSum(m), expected), {
        timeoutMs: 60_000,
        intervalMs: 1000,
        description: `${m} has the rows`,
      });
      assert.equal(
        await sql(m, 'CHECKSUM TABLE e2e.b'),
        await sql(`${SOURCE}-0`, 'CHECKSUM TABLE e2e.b'),
        `binary data on ${m}`,
      );
    }
    const restore = (await cluster('restored')).status?.restore;
    assert.equal(restore?.backup, backupName);
    // It takes writes of its own, which reach its replica.
    await sql('restored-0', "INSERT INTO e2e.t VALUES (100000, 'after the restore')");
    await eventually(
      async () =>
        assert.equal(await sql('restored-1', 'SELECT note FROM e2e.t WHERE id = 100000'), 'after the restore'),
      {
        timeoutMs: 60_000,
        intervalMs: 500,
        description: 'restored-1 replicates',
      },
    );
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: 'restored' });
  });

  it('finds a DROP in the archived binary logs (recon8s binlog find), and restores to a point in time and to just before that DROP, which shares its second with a good write', async () => {
    await sql(`${SOURCE}-0`, "INSERT INTO e2e.t VALUES (5000, 'after the backup'), (5001, 'after the backup')");
    await sql(`${SOURCE}-0`, "UPDATE e2e.t SET note = 'updated after the backup' WHERE id = 1");
    await sql(
      `${SOURCE}-0`,
      'CREATE TABLE e2e.orders (id INT PRIMARY KEY); INSERT INTO e2e.orders VALUES (1), (2), (3)',
    );
    const before = await rowsAndSum(`${SOURCE}-0`);
    // The point: a whole second after the last good write, and before the mistake.
    await new Promise((r) => setTimeout(r, 1100));
    const point = utcNow();
    await new Promise((r) => setTimeout(r, 1100));
    // A good write and the mistake in one second (started early in it): only the GTID boundary tells them apart.
    const executed = () => sql(`${SOURCE}-0`, "SELECT REPLACE(@@global.gtid_executed, '\\n', '')");
    const gtidsBefore = await executed();
    while (Date.now() % 1000 > 200) await new Promise((r) => setTimeout(r, 20));
    await sql(`${SOURCE}-0`, "INSERT INTO e2e.t VALUES (5002, 'in the second of the mistake'); DROP TABLE e2e.orders");
    const beforeMistake = await rowsAndSum(`${SOURCE}-0`);
    const both = /^([0-9a-f-]{36}):(\d+)-(\d+)$/.exec(
      await sql(`${SOURCE}-0`, `SELECT GTID_SUBTRACT('${await executed()}', '${gtidsBefore}')`),
    );
    assert.ok(both, 'the write and the DROP are two transactions');
    const mistake = `${both[1] ?? ''}:${both[3] ?? ''}`;
    // What a user runs after a bad statement: archive now, and wait.
    const archived = await cli(['binlog', 'archive', SOURCE]);
    assert.equal(archived.code, 0, `${archived.err}${JSON.stringify((await cluster(SOURCE)).status?.conditions)}`);
    const reach = /^binary logs archived until (\S+): every transaction committed before it can be restored to/.exec(
      archived.out,
    );
    assert.ok(reach && (reach[1] ?? '') > point, archived.out);
    await eventually(
      async () => assert.ok(((await cluster(SOURCE)).status?.backup?.binlogsArchivedUntil ?? '') > point),
      { timeoutMs: 60_000, intervalMs: 1000, description: 'status.backup.binlogsArchivedUntil past the point' },
    );

    // Then finds the statement: one transaction, the DROP's, with the line to paste.
    const found = await cli(['binlog', 'find', SOURCE, '--statement', 'DROP TABLE orders']);
    console.log(found.out.replace(/^/gm, '      '));
    assert.equal(found.code, 0, `${found.err}${found.out}`);
    const rows = found.out.split('\n').filter((l) => /^[0-9a-f-]{36}:\d+ /.test(l));
    assert.equal(rows.length, 1, found.out);
    assert.match(rows[0] ?? '', /^(\S+) {2}(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d{6}Z {2}DROP TABLE `e2e`\.`orders`/);
    const pasted = /beforeGtid: "([^"]+)"/.exec(found.out)?.[1];
    assert.equal(pasted, mistake);
    // The good write shares the DROP's second: a point in time could not tell them apart.
    const writes = await cli(['binlog', 'find', SOURCE, '--statement', 'INSERT INTO e2e.t', '--since', point]);
    assert.equal(writes.code, 0, `${writes.err}${writes.out}`);
    const second = (line: string | undefined) => / {2}(\S{19})\.\d{6}Z {2}/.exec(line ?? '')?.[1];
    const good = writes.out.split('\n').find((l) => l.startsWith(`${both[1] ?? ''}:${both[2] ?? ''} `));
    assert.ok(second(good) && second(good) === second(rows[0]), writes.out);
    // Nothing matches outside the range asked for; that is exit 1 and says so.
    const none = await cli(['binlog', 'find', SOURCE, '--statement', 'DROP TABLE orders', '--until', point]);
    assert.equal(none.code, 1, none.out);
    assert.match(none.out, /^no archived transaction holds a statement matching "DROP TABLE orders"/);

    const started = Date.now();
    for (const [name, boundary] of [
      ['pitr', { pointInTime: point }],
      ['justbefore', { beforeGtid: pasted }],
    ] as const)
      await custom.createNamespacedCustomObject({
        ...GROUP,
        namespace: ns,
        body: mysqlClusterResource(node().images.mysql, name, 1, {
          restore: { ...boundary, s3: { ...store(), prefix: PREFIX } },
        }),
      });
    await allReady('pitr', 1);
    console.log(`      point-in-time restore Ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await allReady('justbefore', 1);
    console.log(
      `      restore to just before a transaction Ready after ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    // Everything but the DROP: the write of its second, and the table it dropped.
    assert.equal(await rowsAndSum('justbefore-0'), beforeMistake);
    assert.equal(await sql('justbefore-0', 'SELECT GROUP_CONCAT(id ORDER BY id) FROM e2e.orders'), '1,2,3');
    assert.equal((await cluster('justbefore')).status?.restore?.beforeGtid, mistake);
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: 'justbefore' });
    assert.equal(await rowsAndSum('pitr-0'), before);
    assert.equal(await sql('pitr-0', 'SELECT note FROM e2e.t WHERE id = 1'), 'updated after the backup');
    assert.equal(await sql('pitr-0', 'SELECT COUNT(*) FROM e2e.orders'), '3');
    const restore = (await cluster('pitr')).status?.restore;
    assert.equal(restore?.pointInTime, point);
    assert.ok((restore?.replayedLogs ?? 0) >= 1, JSON.stringify(restore));
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: 'pitr' });
  });

  it('refuses a restore it cannot complete and says why, serving nothing, through every phase of its back-off', async () => {
    const failing = {
      future: {
        restore: { pointInTime: '2099-01-01T00:00:00Z', s3: { ...store(), prefix: PREFIX } },
        why: /the archived binary logs reach \S+, before the point in time asked for \(2099-01-01T00:00:00Z\)/,
      },
      // A backup that is not there: the message lists the newest that are (fewer than five here).
      missing: {
        restore: { backup: '20200101T000000Z', s3: { ...store(), prefix: PREFIX } },
        why: /backup 20200101T000000Z is not in s3:\/\/\S+; the newest there: \d{8}T\d{6}Z/,
      },
    };
    for (const [name, { restore }] of Object.entries(failing))
      await custom.createNamespacedCustomObject({
        ...GROUP,
        namespace: ns,
        body: mysqlClusterResource(node().images.mysql, name, 1, { restore }),
      });
    const restoreFailed = async (name: string, why: RegExp): Promise<void> => {
      const c = (await cluster(name)).status?.conditions?.find((x) => x.type === 'Degraded');
      assert.equal(c?.reason, 'RestoreFailed', `${name}: ${JSON.stringify(c)}`);
      assert.match(c?.message ?? '', why);
    };
    for (const [name, { why }] of Object.entries(failing))
      await eventually(() => restoreFailed(name, why), {
        timeoutMs: BOOTSTRAP_MS,
        intervalMs: 2000,
        description: `${name}: Degraded RestoreFailed`,
      });
    // Sampled every 200 ms until the member has failed again after a back-off: never "no problems found".
    const restarts = async (name: string): Promise<number> =>
      (await core.readNamespacedPod({ namespace: ns, name: `${name}-0` })).status?.initContainerStatuses?.find(
        (c) => c.name === 'bootstrap',
      )?.restartCount ?? 0;
    const first = await restarts('future');
    let samples = 0;
    const until = Date.now() + 120_000;
    while ((await restarts('future')) < first + 2 && Date.now() < until) {
      for (const [name, { why }] of Object.entries(failing)) await restoreFailed(name, why);
      samples++;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok((await restarts('future')) >= first + 2, `the member restarted twice within 120 s (${samples} samples)`);
    for (const name of Object.keys(failing)) {
      assert.notEqual((await cluster(name)).status?.readyReplicas, 1);
      await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name });
    }
  });

  it('reports a broken store (wrong key, missing bucket) as Degraded and an Event, retries only as the Job allows, and recovers', async () => {
    await setStoreSecret('not-the-key');
    const denied = await runJob(`${SOURCE}-backup`);
    assert.equal(denied.succeeded, false);
    await eventually(
      async () => {
        const c = await degraded();
        assert.equal(c?.reason, 'BackupFailed', JSON.stringify(c));
        assert.match(c?.message ?? '', /SignatureDoesNotMatch|403|Forbidden|AccessDenied/);
        assert.doesNotMatch(c?.message ?? '', /not-the-key/);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'Degraded BackupFailed' },
    );
    assert.ok((await events('BackupFailed')).length >= 1);
    // Tried three times (the Job's backoffLimit 2, with its back-off), then left for the next schedule.
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${denied.name}` });
    assert.ok(pods.items.length <= 3, `${pods.items.length} pods for ${denied.name}`);

    await setStoreSecret(s3?.secretAccessKey ?? '');
    await custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        namespace: ns,
        name: SOURCE,
        body: { spec: { backup: { s3: { bucket: 'no-such-bucket' } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const cj = await batch.readNamespacedCronJob({ namespace: ns, name: `${SOURCE}-backup` });
        const env = cj.spec?.jobTemplate.spec?.template.spec?.containers[0]?.env ?? [];
        assert.equal(env.find((e) => e.name === 'STORE_BUCKET')?.value, 'no-such-bucket');
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the CronJob names the new bucket' },
    );
    assert.equal((await runJob(`${SOURCE}-backup`)).succeeded, false);
    await eventually(async () => assert.match((await degraded())?.message ?? '', /NoSuchBucket|does not exist/), {
      timeoutMs: 60_000,
      intervalMs: 1000,
      description: 'Degraded says the bucket is missing',
    });

    await custom.patchNamespacedCustomObject(
      { ...GROUP, namespace: ns, name: SOURCE, body: { spec: { backup: { s3: { bucket: BUCKET } } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        const cj = await batch.readNamespacedCronJob({ namespace: ns, name: `${SOURCE}-backup` });
        const env = cj.spec?.jobTemplate.spec?.template.spec?.containers[0]?.env ?? [];
        assert.equal(env.find((e) => e.name === 'STORE_BUCKET')?.value, BUCKET);
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the CronJob names the bucket again' },
    );
    // What a user runs: recon8s backup, then recon8s backups.
    const now = await cli(['backup', SOURCE]);
    assert.equal(now.code, 0, now.err);
    assert.match(
      now.out,
      /^backup \d{8}T\d{6}Z of src-1\.src-headless completed: \d+ bytes in \d+ s, GTID set '[0-9a-f-]{36}:1-\d+', at s3:\/\/backups\/e2e\/src\/base\//,
    );
    const list = await cli(['backups', SOURCE]);
    assert.equal(list.code, 0, list.err);
    assert.ok(list.out.includes(backupName), list.out);
    assert.equal(list.out.split('\n').filter((l) => /^\d{8}T\d{6}Z /.test(l)).length, 2, list.out);
    assert.match(list.out, /binary logs archived until \S+: spec\.restore\.pointInTime may be any time from /);
    // The listing ran as a Job of its own name: only the backup passes for one in `kubectl get jobs`.
    const jobs = (await batch.listNamespacedJob({ namespace: ns })).items.map((j) => j.metadata?.name ?? '');
    assert.equal(jobs.filter((j) => new RegExp(`^${SOURCE}-list-\\d+$`).test(j)).length, 1, jobs.join(', '));
    assert.equal(jobs.filter((j) => new RegExp(`^${SOURCE}-backup-\\d{10}$`).test(j)).length, 1, jobs.join(', '));
    await eventually(
      async () => {
        const c = await degraded();
        assert.equal(c?.status, 'False', JSON.stringify(c));
        assert.notEqual((await cluster(SOURCE)).status?.backup?.name, backupName);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'a new backup, and no longer Degraded' },
    );
  });

  it('backs up physically (a clone of the replica, spec.backup.method physical), verifies it by a restore, lists it, and restores it into a new cluster with the binary logs archived after it on top; both methods measured on the same data', async () => {
    // Data enough to measure by: 64 MiB of rows (hex digests, which gzip halves) in one table.
    await sql(
      `${SOURCE}-0`,
      [
        'SET SESSION cte_max_recursion_depth = 100000',
        'CREATE TABLE e2e.bulk (id INT PRIMARY KEY, v TEXT)',
        'INSERT INTO e2e.bulk WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 65536) SELECT i, CONCAT(SHA2(i, 512), SHA2(-i, 512), SHA2(i + 0.5, 512), SHA2(i - 0.5, 512), SHA2(i * 3, 512), SHA2(i * 5, 512), SHA2(i * 7, 512), SHA2(i * 11, 512)) FROM n',
      ].join('; '),
    );
    const setMethod = async (method: 'logical' | 'physical') => {
      await custom.patchNamespacedCustomObject(
        { ...GROUP, namespace: ns, name: SOURCE, body: { spec: { backup: { method } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await eventually(
        async () => {
          const cj = await batch.readNamespacedCronJob({ namespace: ns, name: `${SOURCE}-backup` });
          const pod = cj.spec?.jobTemplate.spec?.template.spec;
          const backup = [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].find((c) => c.name === 'backup');
          assert.equal(backup?.env?.find((e) => e.name === 'BACKUP_METHOD')?.value, method);
        },
        { timeoutMs: 30_000, intervalMs: 500, description: `the CronJob takes ${method} backups` },
      );
    };
    interface Manifest {
      name: string;
      method?: string;
      gtidSet: string;
      durationSeconds: number;
      sizeBytes: number;
      dataBytes: number;
    }
    /** A backup job of this method, then its manifest and the verification that followed it. */
    const backUp = async (method: 'logical' | 'physical', writing: boolean): Promise<Manifest> => {
      await setMethod(method);
      const before = (await cluster(SOURCE)).status?.backup?.name;
      const writer = writing ? startWriter(8000) : undefined;
      const run = await runJob(`${SOURCE}-backup`);
      const written = (await writer?.stop()) ?? [];
      assert.ok(run.succeeded, `the ${method} backup job failed: ${JSON.stringify((await cluster(SOURCE)).status)}`);
      let name = '';
      await eventually(
        async () => {
          const b = (await cluster(SOURCE)).status?.backup as (BackupStatus & { method?: string }) | undefined;
          assert.notEqual(b?.name, before);
          assert.equal(b?.method, method);
          name = b?.name ?? '';
          const verified = (b as { lastVerified?: { backup?: string; result?: string; message?: string } })
            .lastVerified;
          assert.equal(verified?.backup, name);
          assert.equal(verified.result, 'Passed', JSON.stringify(verified));
        },
        { timeoutMs: 60_000, intervalMs: 1000, description: `the ${method} backup in status, verified` },
      );
      const dir = join(s3?.dataDir ?? '', BUCKET, PREFIX, 'base', name);
      const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
      assert.equal(manifest.method, method);
      assert.ok(existsSync(join(dir, method === 'physical' ? 'datadir.tar.gz' : 'dump.sql.gz')));
      console.log(
        `      ${method} backup ${name}: ${manifest.sizeBytes} bytes in the store after ${manifest.durationSeconds} s (job ${run.seconds.toFixed(0)} s with its verification)${writing ? `, ${written.length} rows written meanwhile` : ''}`,
      );
      return manifest;
    };
    /** Seconds the restored cluster's first member spent in its bootstrap (the restore), by the kubelet's clock. */
    const bootstrapSeconds = async (pod: string): Promise<number> => {
      const status = (await core.readNamespacedPod({ namespace: ns, name: pod })).status?.initContainerStatuses;
      const done = status?.find((c) => c.name === 'bootstrap')?.state?.terminated;
      assert.ok(done?.startedAt && done.finishedAt, `${pod}: bootstrap ended`);
      return (new Date(done.finishedAt).getTime() - new Date(done.startedAt).getTime()) / 1000;
    };

    const logical = await backUp('logical', false);
    const physical = await backUp('physical', true);
    assert.match(physical.gtidSet, /^[0-9a-f-]{36}:1-\d+$/);
    // The copy is the replica's, consistent at its GTID set, taken while the writer wrote.
    assert.ok(physical.dataBytes > 64 * 2 ** 20, `${physical.dataBytes} bytes of data directory`);

    const listed = await cli(['backups', SOURCE]);
    assert.equal(listed.code, 0, listed.err);
    assert.match(listed.out, new RegExp(`^${physical.name} +\\S+ +physical +`, 'm'));
    assert.match(listed.out, new RegExp(`^${logical.name} +\\S+ +logical +`, 'm'));

    // Writes after the backup, archived: the restore replays them on top of the copy.
    await sql(`${SOURCE}-0`, "INSERT INTO e2e.t VALUES (9000, 'after the physical backup')");
    await sql(`${SOURCE}-0`, "UPDATE e2e.bulk SET v = 'changed after the physical backup' WHERE id <= 10");
    const expected = {
      t: await rowsAndSum(`${SOURCE}-0`),
      bulk: await sql(`${SOURCE}-0`, 'CHECKSUM TABLE e2e.bulk'),
      b: await sql(`${SOURCE}-0`, 'CHECKSUM TABLE e2e.b'),
    };
    await new Promise((r) => setTimeout(r, 1100));
    const point = utcNow();
    await new Promise((r) => setTimeout(r, 1100));
    const archived = await cli(['binlog', 'archive', SOURCE]);
    assert.equal(archived.code, 0, archived.err);

    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(node().images.mysql, 'physical', 2, {
        restore: { backup: 'latest', pointInTime: point, s3: { ...store(), prefix: PREFIX } },
      }),
    });
    await allReady('physical', 2);
    const restore = (await cluster('physical')).status?.restore;
    assert.equal(restore?.backup, physical.name, JSON.stringify(restore));
    assert.ok((restore?.replayedLogs ?? 0) >= 1, JSON.stringify(restore));
    for (const m of ['physical-0', 'physical-1'])
      await eventually(
        async () =>
          assert.deepEqual(
            {
              t: await rowsAndSum(m),
              bulk: await sql(m, 'CHECKSUM TABLE e2e.bulk'),
              b: await sql(m, 'CHECKSUM TABLE e2e.b'),
            },
            expected,
          ),
        { timeoutMs: 60_000, intervalMs: 1000, description: `${m} holds the source's data at the point` },
      );
    // Its own server identity and its own credentials: the source's root password logs in nowhere.
    assert.notEqual(await sql('physical-0', 'SELECT @@server_uuid'), await sql(`${SOURCE}-1`, 'SELECT @@server_uuid'));
    await sql('physical-0', "INSERT INTO e2e.t VALUES (100001, 'after the physical restore')");
    await eventually(
      async () => assert.equal(await sql('physical-1', 'SELECT COUNT(*) FROM e2e.t WHERE id = 100001'), '1'),
      { timeoutMs: 60_000, intervalMs: 500, description: 'physical-1 replicates' },
    );
    const physicalRestore = await bootstrapSeconds('physical-0');
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: 'physical' });

    // The dump of the same data, restored the same way, for the figures beside.
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(node().images.mysql, 'logical', 1, {
        restore: { backup: logical.name, s3: { ...store(), prefix: PREFIX } },
      }),
    });
    await allReady('logical', 1);
    assert.equal(await sql('logical-0', 'SELECT COUNT(*) FROM e2e.bulk'), '65536');
    const logicalRestore = await bootstrapSeconds('logical-0');
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: 'logical' });
    // The source as the test after this one expects it: dumps.
    await setMethod('logical');

    const mb = physical.dataBytes / 1e6;
    const rate = (seconds: number) => `${(mb / Math.max(seconds, 1)).toFixed(1)} MB/s`;
    console.log(
      `      ${mb.toFixed(0)} MB of data directory: backup physical ${physical.durationSeconds} s (${rate(physical.durationSeconds)}), logical ${logical.durationSeconds} s (${rate(logical.durationSeconds)}); restore (the first member's bootstrap) physical ${physicalRestore.toFixed(0)} s (${rate(physicalRestore)}, with ${restore?.replayedLogs ?? 0} archived logs replayed), logical ${logicalRestore.toFixed(0)} s (${rate(logicalRestore)})`,
    );
  });

  // Last: the gap stands (Degraded, the metric, the alert) until a newer backup holds the lost
  // transactions and the archive runs again, so it would fail the recovery the test above ends with.
  it('reports binary logs that expired before the archive copied them: Degraded and an Event BinlogArchiveGap naming the lost transactions, and Recon8sMySQLBinlogArchiveGap firing in a real Prometheus with the shipped rules, where every series of backup and archive runs has data', async function () {
    // A first run on a machine builds Prometheus (test/run.ts starts that build beside the tests).
    this.timeout(30 * 60_000);
    const binary = await (prometheusBinary ?? buildPrometheus());
    const metricsAddress = controller?.health?.metricsAddress;
    assert.ok(metricsAddress, 'the controller serves /metrics');
    const started = Date.now();
    prometheus = await startWithShippedRules(binary, metricsAddress);
    const sel = `namespace="${ns}", cluster="${SOURCE}"`;
    const values = async (expr: string) => (await prom().query(expr)).map((x) => x.value[1]);
    const gapAlerts = async () =>
      (await prom().alerts()).filter(
        (a) => a.labels.alertname === 'Recon8sMySQLBinlogArchiveGap' && a.labels.namespace === ns,
      );
    const diagnose = async () =>
      `${JSON.stringify(await prom().targets())}\n${JSON.stringify(await prom().alerts())}\n${prom().log()}`;
    // Before: the archive's last run (recon8s binlog archive, above) found no gap.
    await eventually(
      async () => {
        assert.deepEqual(await values(`recon8s_mysql_binlog_archive_gap{${sel}}`), ['0']);
        assert.deepEqual(await gapAlerts(), []);
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the controller scraped, no gap', diagnose },
    );
    console.log(`      Prometheus up, the controller scraped, after ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // The archive does not run: its schedule is suspended, as a user's CronJob may be left.
    const archiveJob = await batch.readNamespacedCronJob({ namespace: ns, name: `${SOURCE}-binlog` });
    assert.equal(archiveJob.spec?.suspend, true);
    // Two transactions after the newest backup, whose binary log then expires: mysqld itself removes
    // closed logs older than binlog_expire_logs_seconds (30 days by default; 1 s here for a moment)
    // when it rotates its log.
    const primary = `${SOURCE}-0`;
    const executed = () => sql(primary, "SELECT REPLACE(@@GLOBAL.gtid_executed, '\\n', '')");
    const before = await executed();
    await sql(
      primary,
      "INSERT INTO e2e.t VALUES (6000, 'never archived'); INSERT INTO e2e.t VALUES (6001, 'never archived')",
    );
    const lost = await sql(primary, `SELECT GTID_SUBTRACT('${await executed()}', '${before}')`);
    assert.match(lost, /^[0-9a-f-]{36}:\d+-\d+$/, 'two transactions');
    const expiry = await sql(primary, 'SELECT @@GLOBAL.binlog_expire_logs_seconds');
    try {
      await sql(primary, 'SET GLOBAL binlog_expire_logs_seconds = 1');
      await eventually(
        async () => {
          await sql(primary, 'FLUSH BINARY LOGS');
          assert.equal(await sql(primary, `SELECT GTID_SUBSET('${lost}', @@GLOBAL.gtid_purged)`), '1');
        },
        { timeoutMs: 30_000, intervalMs: 1000, description: `${lost} expired from the binary logs of ${primary}` },
      );
    } finally {
      await sql(primary, `SET GLOBAL binlog_expire_logs_seconds = ${Number(expiry)}`);
    }

    // The archive's next run (here the one a user starts): it archives what is left and reports the gap.
    const archivedAt = Date.now();
    const archive = await cli(['binlog', 'archive', SOURCE]);
    console.log(`      ${archive.err.trim()}`);
    assert.equal(archive.code, 1, `${archive.out}${archive.err}`);
    assert.equal(/transactions '([^']*)' are in no archived log/.exec(archive.err)?.[1], lost, archive.err);
    await eventually(
      async () => {
        const c = await degraded();
        assert.equal(c?.status, 'True', JSON.stringify(c));
        assert.match(c.reason ?? '', /BinlogArchiveGap/);
        assert.ok(c.message?.includes(`'${lost}'`), c.message);
        const gapEvents = await events('BinlogArchiveGap');
        assert.equal(gapEvents.length, 1);
        assert.equal(gapEvents[0]?.type, 'Warning');
        assert.ok(gapEvents[0]?.message?.includes(`'${lost}'`), gapEvents[0]?.message);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'Degraded BinlogArchiveGap and its Event' },
    );
    // No `for:`: it fires at the first evaluation that sees the metric at 1.
    await eventually(
      async () => {
        assert.deepEqual(await values(`recon8s_mysql_binlog_archive_gap{${sel}}`), ['1']);
        assert.deepEqual(
          (await gapAlerts()).map((a) => [a.state, a.labels.cluster, a.labels.severity]),
          [['firing', SOURCE, 'critical']],
        );
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'Recon8sMySQLBinlogArchiveGap firing', diagnose },
    );
    console.log(
      `      Recon8sMySQLBinlogArchiveGap firing ${((Date.now() - archivedAt) / 1000).toFixed(1)} s after the archive run started`,
    );

    // The series only backup and archive runs set, as this file's runs left them.
    for (const name of ONLY_AFTER_BACKUP_RUNS)
      assert.ok((await prom().query(`${name}{${sel}}`)).length > 0, `${name}{${sel}}: no data in Prometheus`);
    const failing = await prom().query(`recon8s_mysql_backup_failing{${sel}}`);
    assert.deepEqual(
      failing.map((x) => [x.metric.task, x.value[1]]).sort(),
      [
        ['backup', '0'],
        ['binlog', '0'],
      ],
      'the last backup and the last archive run succeeded (a gap is not a failed run)',
    );
    const lastSuccess = (await cluster(SOURCE)).status?.backup?.lastSuccessfulTime ?? '';
    assert.deepEqual(await values(`recon8s_mysql_backup_last_success_timestamp_seconds{${sel}}`), [
      String(Date.parse(lastSuccess) / 1000),
    ]);
    const archivedUntil = Number((await values(`recon8s_mysql_binlog_archived_until_timestamp_seconds{${sel}}`))[0]);
    assert.ok(
      archivedUntil >= Math.floor(archivedAt / 1000) - 1,
      `archived until ${archivedUntil}: the gap run's reach`,
    );
    console.log(
      `      Prometheus used ${prom().cpuSeconds().toFixed(1)} s of CPU; this test took ${((Date.now() - started) / 1000).toFixed(1)} s after the binary was found`,
    );
  });
});
