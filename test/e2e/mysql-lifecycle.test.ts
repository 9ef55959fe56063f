// A MySQLCluster's life on the real node beyond its steady state: scaling out and back (never removing
// a member that alone acknowledged a commit), a backup
// that restores into a fresh cluster (data, binary columns, the application's accounts, on every
// member), and deleting and re-creating the cluster without losing data or passwords. One cluster
// serves every test, in order, as a user's cluster would.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { Controller } from '../../lib/controller/controller.js';
import { eventually } from '../integration/eventually.js';
import { startTestController } from '../integration/support/controller.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, freshRestrictedNamespace, useSharedNode } from './cluster.js';
import { execIn, mustSql, mysqlClusterResource, rowsOn as rowsOnMember } from './support/mysql-members.js';
import { podProcesses } from './support/pod-processes.js';

const NAME = 'db';
const RESTORED = 'restored';
/** The application account's password: test data, like the rows. */
const APP_PASSWORD = 'app-Pa55word';
const BACKUP_PVC = 'backups';
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
/** The first start of a 3-member cluster takes 40-60 s on 2 cores; each cloned member 20-40 s. */
const BOOTSTRAP_MS = 8 * 60_000; // members bootstrap in ~1 min; on a machine short of CPU, several
const members = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${name}-${i}`);

interface Condition {
  type: string;
  status: string;
  message?: string;
}
interface MySQLClusterObject {
  status?: { readyReplicas?: number; conditions?: Condition[] };
}

describe('MySQLCluster lifecycle on a real node (MySQL 9.7)', function () {
  this.timeout(2 * BOOTSTRAP_MS);
  const node = useSharedNode();
  let kc: KubeConfig;
  let ns: string;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;

  const sql = (pod: string, text: string) => mustSql(kc, ns, pod, text);
  const pod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ namespace: ns, name });
  const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const podExists = async (name: string) =>
    (await core.listNamespacedPod({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items.length > 0;
  const cluster = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as MySQLClusterObject;
  const setReplicas = (replicas: number) =>
    custom.patchNamespacedCustomObject(
      { ...GROUP, namespace: ns, name: NAME, body: { spec: { replicas } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  const createCluster = (name: string, replicas: number, extra: Record<string, unknown> = {}) =>
    custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(node().images.mysql, name, replicas, extra),
    });
  /** The spec of the cluster under test: its backups go to a volume the test owns; no schedule fires during the run. */
  const createMain = () =>
    createCluster(NAME, 3, { backup: { schedule: '0 3 * * *', persistentVolumeClaimName: BACKUP_PVC, suspend: true } });

  /** Every member Ready, and the MySQLCluster saying so. */
  async function allReady(name: string, n: number, timeoutMs = BOOTSTRAP_MS): Promise<void> {
    const started = Date.now();
    await eventually(
      async () => {
        for (const m of members(name, n)) assert.ok(isReady(await pod(m)), `${m} is not ready`);
        const cr = await cluster(name);
        assert.equal(cr.status?.readyReplicas, n);
        assert.equal(cr.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
      },
      { timeoutMs, intervalMs: 1000, maxIntervalMs: 2000, description: `${members(name, n).join(', ')} Ready` },
    );
    console.log(`      ${name}: ${n} members Ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  /** The rows of the test table on a member, once it has them all. */
  const rowsOn = (member: string, expected: string): Promise<void> => rowsOnMember(kc, ns, member, expected);

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    batch = kc.makeApiClient(BatchV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    ns = await freshRestrictedNamespace(node(), 'mysql-lifecycle');
    controller = await startTestController(node(), { namespaces: [ns], resyncPeriodMs: 30_000 });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: BACKUP_PVC },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    await createMain();
    await allReady(NAME, 3);
    await sql(
      `${NAME}-0`,
      'CREATE DATABASE e2e; CREATE TABLE e2e.t (id INT PRIMARY KEY, note VARCHAR(64)); INSERT INTO e2e.t VALUES (1, "before scaling")',
    );
    // What an application adds beside its rows: binary data, a role, an account of its own.
    await sql(
      `${NAME}-0`,
      [
        'CREATE TABLE e2e.b (id INT PRIMARY KEY, v VARBINARY(8)); INSERT INTO e2e.b VALUES (1, 0x00FF0A0D5C27)',
        'CREATE ROLE reader; GRANT SELECT ON e2e.* TO reader',
        `CREATE USER 'app'@'%' IDENTIFIED BY '${APP_PASSWORD}' DEFAULT ROLE reader; GRANT reader TO 'app'@'%'; GRANT INSERT ON e2e.t TO 'app'@'%'`,
      ].join('; '),
    );
  });
  after(async () => {
    await controller?.stop();
    await discardNamespace(node(), ns);
  });

  it('scales 3→5 (the new members clone and replicate) and back to 3, staying Ready with every row', async () => {
    await setReplicas(5);
    await allReady(NAME, 5);
    await sql(`${NAME}-0`, 'INSERT INTO e2e.t VALUES (2, "after scaling out")');
    // Row 1 was written before members 3 and 4 existed (they got it by clone), row 2 after (by replication).
    for (const m of [`${NAME}-3`, `${NAME}-4`]) {
      await rowsOn(m, '1,2');
      assert.equal(await sql(m, 'SELECT @@GLOBAL.super_read_only'), '1', `${m} is a read-only replica`);
    }

    // The members that stay cut off from the primary (packets dropped both ways, in their own network
    // namespace): row 3 is acknowledged by the leaving members 3 and 4 only. Scaling down must keep them
    // until a remaining replica has it, or a failover after the scale-down could lose it.
    const primaryIp = (await pod(`${NAME}-0`)).status?.podIP ?? '';
    const rules = [
      ['INPUT', '-s', primaryIp, '-j', 'DROP'],
      ['OUTPUT', '-d', primaryIp, '-j', 'DROP'],
    ];
    const netns = await Promise.all(
      [`${NAME}-1`, `${NAME}-2`].map(async (m) => {
        const pid = podProcesses((await pod(m)).metadata?.uid ?? '').find((p) => !p.zombie)?.pid;
        assert.ok(pid, `a process of ${m} on this machine`);
        return ['-t', String(pid), '-n', 'iptables'];
      }),
    );
    const cut = (action: '-I' | '-D'): void => {
      for (const n of netns) for (const r of rules) execFileSync('nsenter', [...n, action, ...r]);
    };
    cut('-I');
    let healedAt: number;
    try {
      await sql(`${NAME}-0`, 'INSERT INTO e2e.t VALUES (3, "acknowledged by the leaving members only")');
      await setReplicas(3);
      const degraded = await eventually(
        async () => {
          const c = (await cluster(NAME)).status?.conditions?.find((x) => x.type === 'Degraded');
          assert.match(c?.message ?? '', /keeps 5 members for now: db-4 holds transactions no remaining replica/);
          return c?.message ?? '';
        },
        { timeoutMs: 60_000, intervalMs: 500, description: 'the scale-down held' },
      );
      console.log(`      held: ${degraded}`);
      const sts = await kc.makeApiClient(AppsV1Api).readNamespacedStatefulSet({ namespace: ns, name: NAME });
      assert.equal(sts.spec?.replicas, 5, 'the StatefulSet keeps every member');
      for (const m of [`${NAME}-3`, `${NAME}-4`]) {
        assert.equal(await podExists(m), true, `${m} was removed while it alone held row 3`);
        assert.equal((await pod(m)).metadata?.labels?.['recon8s.dev/role'], 'none', `${m} left the replicas Service`);
      }
    } finally {
      cut('-D');
      healedAt = performance.now();
    }
    await eventually(
      async () => {
        assert.equal(await podExists(`${NAME}-4`), false);
        assert.equal(await podExists(`${NAME}-3`), false);
      },
      { timeoutMs: BOOTSTRAP_MS, intervalMs: 500, description: `${NAME}-3 and ${NAME}-4 gone` },
    );
    console.log(
      `      ${NAME}-3 and ${NAME}-4 gone ${((performance.now() - healedAt) / 1000).toFixed(1)} s after the cut healed`,
    );
    await allReady(NAME, 3);
    // The primary takes writes after the scale-down (one it waits for a remaining replica to acknowledge).
    await sql(`${NAME}-0`, 'INSERT INTO e2e.t VALUES (4, "after scaling back"); DELETE FROM e2e.t WHERE id = 4');
    for (const m of members(NAME, 3)) await rowsOn(m, '1,2,3');
  });

  it('takes a backup with a Job created from the backup CronJob, and the dump restores into a fresh cluster: the same rows on every member, binary data intact, the application account working', async function () {
    this.timeout(3 * BOOTSTRAP_MS);
    const job = `${NAME}-backup-manual`;
    await node().kubectl(['--namespace', ns, 'create', 'job', job, `--from=cronjob/${NAME}-backup`]);
    const done = await eventually(
      async () => {
        const j = await batch.readNamespacedJob({ namespace: ns, name: job });
        const finished = j.status?.conditions?.find(
          (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
        );
        assert.ok(finished, `${job} has not finished`);
        return finished.type;
      },
      { timeoutMs: BOOTSTRAP_MS, intervalMs: 1000, maxIntervalMs: 2000, description: `${job} finished` },
    );
    assert.equal(done, 'Complete', `${job} failed`);

    // A new cluster with its own generated credentials: the dump carries the application's schemas and
    // accounts, never the mysql schema with root's or the replication account's passwords.
    await createCluster(RESTORED, 2);
    await allReady(RESTORED, 2);

    const restorer = `${RESTORED}-from-backup`;
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: restorer },
        spec: {
          restartPolicy: 'Never',
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 999,
            runAsGroup: 999,
            fsGroup: 999,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'restore',
              image: node().images.mysql,
              imagePullPolicy: 'Never',
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              // The newest dump of this cluster, piped into the new primary; the password reaches the
              // client through a pipe (printf is a bash builtin), never a command line.
              command: [
                'bash',
                '-c',
                [
                  'set -euo pipefail',
                  `dump=$(ls /backup/${NAME}-*.sql.gz | tail -n 1)`,
                  'echo "restoring $dump"',
                  `gunzip -c "$dump" | mysql --defaults-extra-file=<(printf '[client]\\nuser=root\\npassword="%s"\\n' "$MYSQL_ROOT_PASSWORD") --host=${RESTORED}-primary --port=3306 --get-server-public-key`,
                ].join('\n'),
              ],
              env: [
                {
                  name: 'MYSQL_ROOT_PASSWORD',
                  valueFrom: { secretKeyRef: { name: `${RESTORED}-credentials`, key: 'root-password' } },
                },
              ],
              volumeMounts: [{ name: 'backup', mountPath: '/backup', readOnly: true }],
            },
          ],
          volumes: [{ name: 'backup', persistentVolumeClaim: { claimName: BACKUP_PVC, readOnly: true } }],
        },
      },
    });
    const phase = await eventually(
      async () => {
        const p = (await pod(restorer)).status?.phase;
        assert.ok(p === 'Succeeded' || p === 'Failed', `${restorer} is ${p ?? 'pending'}`);
        return p;
      },
      { timeoutMs: BOOTSTRAP_MS, intervalMs: 1000, maxIntervalMs: 2000, description: `${restorer} done` },
    );
    assert.equal(phase, 'Succeeded', await core.readNamespacedPodLog({ namespace: ns, name: restorer }));

    // The rows reached the new primary, and its replica by replication, byte for byte.
    for (const m of members(RESTORED, 2)) {
      await rowsOn(m, '1,2,3');
      assert.equal(await sql(m, 'SELECT HEX(v) FROM e2e.b'), '00FF0A0D5C27', `binary column on ${m}`);
    }
    // The application logs in to the restored primary with its own password and keeps its grants:
    // it reads through its role and writes where it may; the write replicates.
    const asApp = (text: string) =>
      execIn(kc, ns, `${RESTORED}-1`, 'mysql', [
        'bash',
        '-c',
        `mysql --defaults-extra-file=<(printf '[client]\\nuser=app\\npassword=%s\\n' "$2") --host=${RESTORED}-primary --port=3306 --get-server-public-key --batch --skip-column-names -e "$1"`,
        'app',
        text,
        APP_PASSWORD,
      ]);
    const appWrite = await asApp('INSERT INTO e2e.t VALUES (10, "by the application"); SELECT COUNT(*) FROM e2e.t');
    assert.ok(appWrite.ok, appWrite.stderr);
    assert.equal(appWrite.stdout.trim(), '4');
    const denied = await asApp('DELETE FROM e2e.t');
    assert.equal(denied.ok, false);
    assert.match(denied.stderr, /DELETE command denied/);
    await rowsOn(`${RESTORED}-1`, '1,2,3,10');
    // Root keeps the new cluster's own password (the restorer logged in with it; so do the probes).
    await allReady(RESTORED, 2);

    // Make room on the node for what follows.
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: RESTORED });
    await eventually(
      async () => assert.equal((await podExists(`${RESTORED}-0`)) || (await podExists(`${RESTORED}-1`)), false),
      {
        timeoutMs: BOOTSTRAP_MS,
        intervalMs: 1000,
        description: `${RESTORED}'s pods gone`,
      },
    );
  });

  it('keeps the data volumes and the credentials Secret when the MySQLCluster is deleted, and a re-created one serves the same data with the same passwords', async function () {
    this.timeout(3 * BOOTSTRAP_MS);
    const claims = members(NAME, 3).map((m) => `data-${m}`);
    const uids = async () =>
      Promise.all(
        claims.map(
          async (c) => (await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: c })).metadata?.uid,
        ),
      );
    const secret = async () => core.readNamespacedSecret({ namespace: ns, name: `${NAME}-credentials` });
    const claimsBefore = await uids();
    const secretBefore = await secret();

    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: NAME });
    await eventually(
      async () => {
        for (const m of members(NAME, 3)) assert.equal(await podExists(m), false, `${m} still runs`);
        const sets = await kc.makeApiClient(AppsV1Api).listNamespacedStatefulSet({ namespace: ns });
        assert.deepEqual(
          sets.items.map((s) => s.metadata?.name),
          [],
        );
      },
      { timeoutMs: BOOTSTRAP_MS, intervalMs: 1000, maxIntervalMs: 2000, description: `${NAME} gone` },
    );

    assert.deepEqual(await uids(), claimsBefore, 'the same data volumes');
    const secretAfter = await secret();
    assert.equal(secretAfter.metadata?.uid, secretBefore.metadata?.uid, 'the same Secret');
    assert.deepEqual(secretAfter.data, secretBefore.data, 'the same passwords');

    await createMain();
    await allReady(NAME, 3);
    assert.deepEqual((await secret()).data, secretBefore.data, 'the passwords are unchanged after re-creation');
    // The members log in with the Secret's root password: the data directories still hold the accounts it was set for.
    for (const m of members(NAME, 3)) await rowsOn(m, '1,2,3');
    await sql(`${NAME}-0`, 'INSERT INTO e2e.t VALUES (4, "after re-creation")');
    for (const m of members(NAME, 3)) await rowsOn(m, '1,2,3,4');
  });
});
