// High availability on the real node: a writer inserts numbered rows through <name>-primary (the
// Service's cluster IP, from this process) and records which inserts MySQL acknowledged; meanwhile a
// sampler asks every member whether it is writable and lists the pods labelled primary. Failover
// (SIGKILL of the primary's mysqld), switchover and an errant member must lose no acknowledged row and
// never show two writable members or two primary labels. Beside the writer, a register workload
// (support/registers.ts: four clients reading and writing four registers through <name>-primary as an
// ordinary application account) runs through every fault, and its history must be linearizable (issue
// 43: no client reads a write that a failover discards). A real Prometheus on the host scrapes the
// members' metrics sidecars (as docs/monitoring.md configures it) and the controller throughout, and
// evaluates the shipped alert rules: the failover must raise them, and every series the dashboard and
// the alerts name must be there.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { Writable } from 'node:stream';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { RowDataPacket } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import { main } from '../../lib/cli/cli.js';
import type { Controller } from '../../lib/controller/controller.js';
import type { RequestEvent } from '../../lib/kube/index.js';
import { eventually } from '../integration/eventually.js';
import { podProcesses } from './support/pod-processes.js';
import { startTestController } from '../integration/support/controller.js';
import { NODE_HOOK_TIMEOUT_MS, discardNamespace, freshRestrictedNamespace, useSharedNode } from './cluster.js';
import { RowWriter } from './support/row-writer.js';
import type { ClusterObject } from './support/mysql-members.js';
import { localSql, mustSql, mysqlClusterResource, secondsSince } from './support/mysql-members.js';
import type { RegisterRun } from './support/registers.js';
import { RegisterTable, assertLinearizable, clusterCa } from './support/registers.js';
import type { PrometheusServer } from './support/prometheus.js';
import {
  CONTROLLER_JOB,
  ONLY_AFTER_BACKUP_RUNS,
  buildPrometheus,
  documentedPodScrapeJob,
  shippedQueries,
  startWithShippedRules,
} from './support/prometheus.js';

const NAME = 'ha';
const MEMBERS = [0, 1, 2].map((i) => `${NAME}-${i}`);
const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const BOOTSTRAP_MS = 8 * 60_000; // members bootstrap in ~1 min; on a machine short of CPU, several
const RECOVERY_MS = 3 * 60_000;
/** The backup volume the cluster names, which nobody creates. */
const MISSING_CLAIM = 'ha-backups-never-created';
/**
 * Prometheus scrapes the members' sidecars this often (each scrape is a dozen queries on the member's
 * mysqld: every 2 s, beside the other lanes, scrapes took 0.7 s on average and up to 2.1 s), and the
 * controller and the rules every second: the primary's outage before a failover (7-20 s here) must
 * show in the alerts.
 */
const SCRAPE_INTERVAL = '5s';

/** What a replica's receiver last heard from its source, for a failure message. */
const HEARD_SQL =
  'SELECT c.SERVICE_STATE, c.LAST_HEARTBEAT_TIMESTAMP, c.LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP, NOW(6), ' +
  'c.LAST_ERROR_NUMBER, cfg.HEARTBEAT_INTERVAL, cfg.HOST FROM performance_schema.replication_connection_status c ' +
  'JOIN performance_schema.replication_connection_configuration cfg USING (CHANNEL_NAME)';

describe('MySQLCluster high availability on a real node (MySQL 9.7), its backup volume missing', function () {
  this.timeout(RECOVERY_MS + 60_000);
  const node = useSharedNode();
  let kc: KubeConfig;
  let ns: string;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let controller: Controller | undefined;
  /** The controller's requests to the API server while `recording` (the quiet-window test). */
  const requests: RequestEvent[] = [];
  let recording = false;
  let rootPassword = '';
  /** The register workload's table and account (created once the cluster is up). */
  let registerTable: RegisterTable | undefined;
  /** Built (or found) while the cluster starts; started by the first test. */
  let prometheusBinary: Promise<string> | undefined;
  let prometheus: PrometheusServer | undefined;
  const prom = (): PrometheusServer => {
    if (!prometheus) throw new Error('Prometheus did not start (see the first test)');
    return prometheus;
  };

  const sql = (pod: string, text: string) => mustSql(kc, ns, pod, text);
  const pod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ namespace: ns, name });
  const cluster = async () =>
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name: NAME })) as ClusterObject;
  const primary = async () => (await cluster()).status?.currentPrimary ?? '';

  /** Every member answers and serves: the primary writable, the others replicating from it. */
  async function healthy(timeoutMs: number): Promise<void> {
    await eventually(
      async () => {
        const status = (await cluster()).status;
        assert.equal(status?.members?.length, 3, JSON.stringify(status?.members));
        for (const m of status?.members ?? []) {
          assert.ok(m.reachable, `${m.name} answers`);
          if (m.name === status?.currentPrimary) assert.equal(m.role, 'primary');
          else assert.ok(m.role === 'replica' && m.replicating, `${m.name} replicates: ${JSON.stringify(m)}`);
        }
        for (const name of MEMBERS) {
          const p = await pod(name);
          assert.ok(
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
            `${name} Ready`,
          );
        }
      },
      { timeoutMs, intervalMs: 1000, description: 'every member serving' },
    );
  }

  /** Watches for two writable members or two primary labels, every 300 ms, until stopped. */
  function sampler(): { stop: () => Promise<string[]> } {
    const violations: string[] = [];
    let stopped = false;
    const run = (async () => {
      while (!stopped) {
        const pods = (
          await core.listNamespacedPod({ namespace: ns, labelSelector: `app.kubernetes.io/instance=${NAME}` })
        ).items;
        const labelled = pods.filter((p) => p.metadata?.labels?.['recon8s.dev/role'] === 'primary');
        if (labelled.length > 1)
          violations.push(`labelled primary: ${labelled.map((p) => p.metadata?.name).join(', ')}`);
        const writable: string[] = [];
        await Promise.all(
          pods.map(async (p) => {
            if (!p.status?.podIP) return;
            try {
              const c = await createConnection({
                host: p.status.podIP,
                port: 3306,
                user: 'root',
                password: rootPassword,
                ssl: { rejectUnauthorized: false },
                connectTimeout: 1000,
              });
              const [rows] = await c.query<RowDataPacket[]>('SELECT @@GLOBAL.read_only AS ro');
              if (Number(rows[0]?.ro) === 0) writable.push(p.metadata?.name ?? '');
              c.destroy();
            } catch {
              // Not answering: not writable.
            }
          }),
        );
        if (writable.length > 1) violations.push(`writable: ${writable.join(', ')}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    const handle = {
      stop: async () => {
        stopped = true;
        await run;
        return violations;
      },
    };
    samplers.push(handle);
    return handle;
  }

  /** The host pid of a pod's mysqld (this machine is the node): its cgroup names the pod's uid. */
  function mysqldPid(podUid: string): number {
    const wanted = [podUid, podUid.replace(/-/g, '_')];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'mysqld') continue;
        const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8');
        if (wanted.some((w) => cgroup.includes(w))) return Number(entry);
      } catch {
        // The process ended meanwhile.
      }
    }
    throw new Error(`no mysqld of pod ${podUid} on this machine`);
  }

  /** What the pod's processes are doing, for a failure message: pid, state, command line. */
  const processesOf = (podUid: string): string =>
    podProcesses(podUid)
      .map((p) => `${p.pid} [${p.state}] ${p.args}`)
      .join('\n');

  /** Writers still running when a test ends (it failed) are stopped: the next test needs a quiet cluster. */
  const running: RowWriter[] = [];
  const samplers: { stop: () => Promise<string[]> }[] = [];
  const registerRuns: RegisterRun[] = [];
  let writers = 0;
  afterEach(async () => {
    await Promise.all([
      ...running.splice(0).map((w) => w.stop()),
      ...samplers.splice(0).map((s) => s.stop()),
      ...registerRuns.splice(0).map((r) => r.stop()),
    ]);
  });

  async function newWriter(): Promise<RowWriter> {
    const service = await core.readNamespacedService({ namespace: ns, name: `${NAME}-primary` });
    // Each writer its own range of ids: the table keeps the rows of the writers before.
    const writer = new RowWriter({
      host: service.spec?.clusterIP ?? '',
      password: rootPassword,
      table: 'ha.w',
      first: ++writers * 1_000_000,
    });
    running.push(writer);
    writer.start();
    await writer.more(20, 30_000);
    return writer;
  }

  /** The register workload, started through the primary Service (the address read at each connection). */
  async function newRegisters(): Promise<RegisterRun> {
    const service = await core.readNamespacedService({ namespace: ns, name: `${NAME}-primary` });
    const address = service.spec?.clusterIP ?? '';
    if (!registerTable) throw new Error('the register table was not created (see the before hook)');
    const run = registerTable.start(() => address);
    registerRuns.push(run);
    await run.more(20, 30_000);
    return run;
  }

  /** The MySQLCluster's Events. */
  const clusterEvents = async () =>
    (
      await core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: `involvedObject.kind=MySQLCluster,involvedObject.name=${NAME}`,
      })
    ).items;

  /** Every acknowledged id is on `member`. */
  async function noneLost(member: string, acknowledged: readonly number[]): Promise<void> {
    const present = new Set((await sql(member, 'SELECT id FROM ha.w')).split('\n').map(Number));
    const lost = acknowledged.filter((id) => !present.has(id));
    assert.deepEqual(lost, [], `acknowledged rows missing on ${member}`);
  }

  const checksum = async (member: string) => (await sql(member, 'CHECKSUM TABLE ha.w')).split('\t')[1];
  const described = (member: string) =>
    sql(member, "SELECT REPLACE(@@GLOBAL.gtid_executed, '\\n', ''), COUNT(*), MIN(id), MAX(id) FROM ha.w");

  /** Every member of `members` holds exactly the rows of `reference` (CHECKSUM TABLE). */
  async function sameRows(reference: string, members: readonly string[]): Promise<void> {
    await eventually(
      async () => {
        const expected = await checksum(reference);
        for (const m of members)
          if ((await checksum(m)) !== expected)
            assert.fail(`${m} (${await described(m)}) differs from ${reference} (${await described(reference)})`);
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: `the rows of ${reference} everywhere` },
    );
  }

  before(async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS + BOOTSTRAP_MS);
    kc = node().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    // A rejection is reported by the first test, which waits for it.
    prometheusBinary = buildPrometheus();
    prometheusBinary.catch(() => undefined);
    ns = await freshRestrictedNamespace(node(), 'mysql-ha');
    // With leader election, as the operator runs (leader_election_master_status, which an alert reads).
    controller = await startTestController(node(), {
      namespaces: [ns],
      resyncPeriodMs: 30_000,
      leaderElection: { namespace: ns },
      onRequest: (e) => {
        if (recording) requests.push(e);
      },
    });
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      // Backups name a claim that never exists: every bootstrap, failover and switchover in this file
      // runs with that problem reported, since HA never waits on an optional feature.
      body: mysqlClusterResource(node().images.mysql, NAME, 3, {
        failoverAfterSeconds: 16,
        backup: { schedule: '0 3 1 1 *', persistentVolumeClaimName: MISSING_CLAIM },
        // The test image carries mysqld_exporter beside mysqld.
        monitoring: { enabled: true, image: node().images.mysql },
      }),
    });
    await healthy(BOOTSTRAP_MS);
    const degraded = (await cluster()).status?.conditions?.find((c) => c.type === 'Degraded');
    assert.equal(degraded?.status, 'True', JSON.stringify(degraded));
    assert.match(degraded?.reason ?? '', /BackupVolumeMissing/);
    assert.match(degraded?.message ?? '', new RegExp(`PersistentVolumeClaim ${MISSING_CLAIM} named in spec.backup`));
    const secret = await core.readNamespacedSecret({ namespace: ns, name: `${NAME}-credentials` });
    rootPassword = Buffer.from(secret.data?.['root-password'] ?? '', 'base64').toString('utf8');
    await sql(await primary(), 'CREATE DATABASE ha; CREATE TABLE ha.w (id INT PRIMARY KEY)');
    const service = await core.readNamespacedService({ namespace: ns, name: `${NAME}-primary` });
    registerTable = await RegisterTable.create({
      host: service.spec?.clusterIP ?? '',
      rootPassword,
      ca: await clusterCa(core, custom, ns, NAME),
    });
  });
  after(async () => {
    await prometheus?.stop();
    await controller?.stop();
    await discardNamespace(node(), ns);
  });

  /**
   * The old primary comes back read-only and follows the new one, or, when it holds a transaction no
   * replica had received (never acknowledged), is excluded until re-provisioned by clone: by the
   * controller on its own when it can prove that (lib/mysql/rejoin.ts), else by hand here, saying why;
   * then every member holds the new primary's rows.
   */
  async function rejoins(old: string, promoted: string, after: string): Promise<void> {
    await eventually(
      async () => {
        const m = (await cluster()).status?.members?.find((x) => x.name === old);
        assert.ok(m?.reachable && (m.replicating || m.errantTransactions), JSON.stringify(m));
      },
      { timeoutMs: RECOVERY_MS, intervalMs: 1000, description: `${old} back` },
    );
    const back = (await cluster()).status?.members?.find((x) => x.name === old);
    // What the controller says of it: re-provisioned on its own, or why not (or it rejoined meanwhile).
    const manual = back?.errantTransactions
      ? await eventually(
          async () => {
            const status = (await cluster()).status;
            if (!status?.members?.find((x) => x.name === old)?.errantTransactions) return undefined;
            const message = status.conditions?.find((c) => c.type === 'Degraded')?.message ?? '';
            const said = new RegExp(
              `member ${old} holds [^;]*; (?:they were never acknowledged|not discarded automatically: ([^;]*))`,
            ).exec(message);
            assert.ok(said, message);
            return said[1] ?? undefined;
          },
          { timeoutMs: 30_000, intervalMs: 1000, description: `what the controller says of ${old}` },
        )
      : undefined;
    if (back?.errantTransactions && manual === undefined)
      console.log(
        `      ${old} came back with unacknowledged transactions (${back.errantTransactions}): the controller re-provisions it on its own`,
      );
    if (manual !== undefined) {
      console.log(
        `      ${old} came back with transactions the primary lacks (${back?.errantTransactions ?? ''}), not discarded automatically (${manual}): re-provisioning it by hand`,
      );
      await core.patchNamespacedPod(
        {
          namespace: ns,
          name: old,
          body: { metadata: { annotations: { 'recon8s.dev/reprovision': `after ${after}` } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    await healthy(RECOVERY_MS);
    await sameRows(promoted, MEMBERS);
  }

  /**
   * Loses the primary under the writer (`lose`), then checks that a replica took over with every
   * acknowledged row, that no two members were writable or labelled primary meanwhile, and that the
   * old primary comes back as a replica with the same rows.
   */
  async function loseThePrimary(what: string, lose: (pod: V1Pod) => Promise<void>): Promise<void> {
    const writer = await newWriter();
    const registers = await newRegisters();
    const watch = sampler();
    const old = await primary();
    const killedAt = performance.now();
    await lose(await pod(old));
    await eventually(async () => assert.notEqual(await primary(), old), {
      timeoutMs: RECOVERY_MS,
      intervalMs: 200,
      description: 'a new primary',
    });
    const promotedAt = performance.now();
    const ackedBefore = writer.acknowledged.length;
    await writer.more(20, RECOVERY_MS);
    await registers.more(20, RECOVERY_MS);
    const firstWriteAfter = writer.failures.filter((t) => t > killedAt).at(-1) ?? killedAt;
    console.log(
      `      a new primary after ${secondsSince(killedAt, promotedAt)}; writes failed for ${secondsSince(killedAt, firstWriteAfter)} after ${what} (${writer.failures.length} failed attempts, ${ackedBefore} acknowledged before recovery)`,
    );
    await failedOverSafely(old, writer, watch, what, registers, { [what]: killedAt, 'a new primary': promotedAt });
  }

  /**
   * After a failover from `old` under `writer`, `registers` and `watch`: never two members writable, a
   * new primary holding every acknowledged write, `old` back as its replica, and the registers' history
   * linearizable (asserted last, so that a failure leaves the cluster healthy for the next test).
   * `marks`: instants of the fault to print beside the registers' history.
   */
  async function failedOverSafely(
    old: string,
    writer: RowWriter,
    watch: { stop: () => Promise<string[]> },
    after: string,
    registers: RegisterRun,
    marks: Record<string, number>,
  ): Promise<void> {
    await writer.stop();
    const checked = await registers.check(after, marks);
    assert.deepEqual(await watch.stop(), []);
    const promoted = await primary();
    assert.ok(MEMBERS.includes(promoted) && promoted !== old);
    await noneLost(promoted, writer.acknowledged);
    await rejoins(old, promoted, after);
    assertLinearizable(checked);
  }

  /** The active alerts of this file's cluster named `alertname`. */
  const alertsNamed = async (alertname: string) =>
    (await prom().alerts()).filter((a) => a.labels.alertname === alertname && a.labels.namespace === ns);
  /** A one-number instant query (0 when it returns nothing). */
  const scalarOf = async (expr: string): Promise<number> => Number((await prom().query(expr))[0]?.value[1] ?? 0);

  it('is scraped by a real Prometheus configured as docs/monitoring.md says: every member sidecar (Kubernetes service discovery, the pod annotations) and the controller up, the shipped rules loaded', async function () {
    // A first run on a machine builds Prometheus (test/run.ts starts that build beside the tests).
    this.timeout(30 * 60_000);
    const binary = await (prometheusBinary ?? buildPrometheus());
    const metricsAddress = controller?.health?.metricsAddress;
    assert.ok(metricsAddress, 'the controller serves /metrics');
    prometheus = await startWithShippedRules(binary, metricsAddress, {
      scrapeInterval: SCRAPE_INTERVAL,
      scrapeConfigs: [documentedPodScrapeJob(node().kubeconfigPath, [ns])],
    });
    const ips = new Map<string, string>();
    for (const m of MEMBERS) ips.set(m, (await pod(m)).status?.podIP ?? '');
    await eventually(
      async () => {
        const targets = await prom().targets();
        const members = targets.filter((t) => t.scrapePool === 'kubernetes-pods');
        assert.deepEqual(
          members.map((t) => [t.labels.pod, t.labels.namespace, t.labels.cluster, t.scrapeUrl]).sort(),
          MEMBERS.map((m) => [m, ns, NAME, `http://${ips.get(m)}:9104/metrics`]),
        );
        const controllerTargets = targets.filter((t) => t.scrapePool === CONTROLLER_JOB);
        assert.equal(controllerTargets.length, 1);
        for (const t of targets) assert.equal(t.health, 'up', `${t.scrapeUrl}: ${t.health} ${t.lastError}`);
        // Each member's sidecar logged in to its mysqld.
        assert.equal(await scalarOf(`count(mysql_up{namespace="${ns}", cluster="${NAME}"} == 1)`), 3);
      },
      {
        timeoutMs: 60_000,
        intervalMs: 500,
        description: 'every target up in Prometheus',
        diagnose: async () => `${JSON.stringify(await prom().targets(), null, 1)}\n${prom().log()}`,
      },
    );
    // The rules loaded and evaluated: no controller leading is not alerted (this one leads), the
    // missing backup volume is (Degraded, pending for its 15 minutes).
    await eventually(
      async () => {
        assert.equal(
          (await prom().alerts()).filter((a) => a.labels.alertname === 'Recon8sControllerNotLeading').length,
          0,
        );
        const degraded = await alertsNamed('Recon8sDegraded');
        assert.deepEqual(
          degraded.map((a) => [a.state, a.labels.kind, a.labels.name]),
          [['pending', 'MySQLCluster', NAME]],
        );
        assert.match(degraded[0]?.labels.reason ?? '', /BackupVolumeMissing/);
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the shipped rules evaluated' },
    );
    // Before any failover, the counter is there at 0: the first failover must be an increase.
    assert.deepEqual(
      (await prom().query(`recon8s_mysql_failovers_total{namespace="${ns}", cluster="${NAME}"}`)).map(
        (s) => s.value[1],
      ),
      ['0'],
    );
    // What a scrape costs (printed, not asserted).
    for (const m of MEMBERS) {
      const of = (metric: string) => scalarOf(`${metric}{job="kubernetes-pods", pod="${m}"}`);
      console.log(
        `      ${m}: scrape ${((await of('scrape_duration_seconds')) * 1000).toFixed(0)} ms, ${await of('scrape_samples_scraped')} samples`,
      );
    }
    console.log(
      `      controller: scrape ${((await scalarOf(`scrape_duration_seconds{job="${CONTROLLER_JOB}"}`)) * 1000).toFixed(0)} ms, ${await scalarOf(`scrape_samples_scraped{job="${CONTROLLER_JOB}"}`)} samples`,
    );
  });

  it('costs nothing at rest: a healthy cluster looked at for 20 s (and reconciled at its resync) gets no new session from the controller, and the API server no request but the Lease and watches (the backup claim too is watched)', async function () {
    this.timeout(120_000);
    // Every session the controller opens to a member is the administrative account's (the agents use
    // the replication account and root, the exporter its own).
    const adminLogins = async (): Promise<number[]> =>
      Promise.all(
        MEMBERS.map(async (m) =>
          Number(
            await sql(
              m,
              "SELECT COALESCE(SUM(TOTAL_CONNECTIONS), 0) FROM performance_schema.accounts WHERE USER = 'recon8s-admin'",
            ),
          ),
        ),
      );
    const atRest = (r: { path: string }): boolean => r.path.includes('/leases/') || r.path.includes('watch=true');
    await healthy(RECOVERY_MS);
    // Settled first: what becoming healthy queued is done (on a loaded machine, the last status write of
    // the recovery came inside the window once), i.e. no request but the Lease's and watches' for 5 s.
    requests.length = 0;
    recording = true;
    let busyAt = performance.now();
    await eventually(
      () => {
        if (requests.some((r) => !atRest(r))) busyAt = performance.now();
        requests.length = 0;
        assert.ok(performance.now() - busyAt >= 5_000);
      },
      {
        timeoutMs: 60_000,
        intervalMs: 500,
        description: 'the controller to settle: 5 s with no request but the Lease and watches',
      },
    );
    const statusBefore = JSON.stringify((await cluster()).status);
    const before = await adminLogins();
    const cpu = process.cpuUsage();
    requests.length = 0;
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    recording = false;
    const used = process.cpuUsage(cpu);
    const after = await adminLogins();
    // spec.backup.persistentVolumeClaimName (missing) is watched by name, never read at a look.
    // Known defect, not yet found (docs/mysql-ha-internals.md): under the full suite's load, a reconcile
    // at rest sometimes applies a status identical to the one the resource has (seen twice on 28 Nov: one
    // PATCH, the status the same before and after). Such a write is counted and printed, and tolerated only
    // when it changed nothing; any other request, or a status that changed, fails.
    const statusPath = `/apis/recon8s.dev/v1alpha1/namespaces/${ns}/mysqlclusters/${NAME}/status`;
    const statusAfter = JSON.stringify((await cluster()).status);
    const sameStatusWrites = requests.filter((r) => r.method === 'PATCH' && r.path.startsWith(`${statusPath}?`));
    if (sameStatusWrites.length > 0) {
      console.log(`      ${sameStatusWrites.length} status write(s) at rest that changed nothing (the known defect)`);
      assert.equal(statusAfter, statusBefore, 'a status write at rest changed the status');
    }
    const others = requests.filter((r) => !atRest(r) && !sameStatusWrites.includes(r));
    console.log(
      `      at rest for 20 s: ${requests.length} requests to the API server (the Lease's or watches'), ${after.map((a, i) => a - (before[i] ?? 0)).join('/')} new controller sessions per member (${before.join('/')} before), ${((used.user + used.system) / 1000).toFixed(0)} ms of CPU in this process (controller and test)`,
    );
    assert.deepEqual(
      others.map((r) => `${r.method} ${r.path} ${r.code}`),
      [],
      `status before the window: ${statusBefore}\nafter: ${statusAfter}`,
    );
    assert.deepEqual(after, before, 'sessions kept between looks: no new login');
  });

  it('promotes a replica when the primary mysqld is killed (SIGKILL): no acknowledged write lost, never two writable, the old primary rejoins', () =>
    loseThePrimary('the kill', async (p) => {
      process.kill(mysqldPid(p.metadata?.uid ?? ''), 'SIGKILL');
    }));

  it('raises the shipped alert in Prometheus on that failover: Recon8sMySQLFailedOver firing, and the dashboard marks it', async () => {
    const sel = `namespace="${ns}", cluster="${NAME}"`;
    await eventually(
      async () => {
        assert.equal(await scalarOf(`recon8s_mysql_failovers_total{${sel}}`), 1);
        const fired = await alertsNamed('Recon8sMySQLFailedOver');
        assert.deepEqual(
          fired.map((a) => [a.state, a.labels.cluster, a.labels.severity]),
          [['firing', NAME, 'warning']],
        );
      },
      {
        timeoutMs: 30_000,
        intervalMs: 500,
        description: 'Recon8sMySQLFailedOver firing',
        diagnose: async () => JSON.stringify(await prom().alerts(), null, 1),
      },
    );
    // The dashboard's failover annotation finds it (its query, over the whole test). A subquery's steps
    // fall on whole multiples of its step: the last one may precede, by up to 2 s, the sample the firing
    // alert was already evaluated from (seen once: 0).
    await eventually(
      async () =>
        assert.equal(await scalarOf(`max_over_time(changes(recon8s_mysql_failovers_total{${sel}}[2m])[15m:2s])`), 1),
      { timeoutMs: 30_000, intervalMs: 500, description: "the dashboard's failover annotation" },
    );
  });

  it('promotes a replica when the primary pod is deleted with no grace period: no acknowledged write lost, never two writable, the old primary rejoins', () =>
    loseThePrimary('the deletion', async (p) => {
      await core.deleteNamespacedPod({ namespace: ns, name: p.metadata?.name ?? '', gracePeriodSeconds: 0 });
    }));

  it('switches over at once when the primary pod is deleted gracefully (as a drain or an eviction does): its agent fences it before mysqld stops (the preStop hook, run by the kubelet in the mysql container, succeeds), no acknowledged write lost, never two writable, the old primary rejoins', async () => {
    let deleted = '';
    await loseThePrimary('the graceful deletion', async (p) => {
      deleted = p.metadata?.uid ?? '';
      await core.deleteNamespacedPod({ namespace: ns, name: p.metadata?.name ?? '' });
    });
    const hookFailures = (
      await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.uid=${deleted}` })
    ).items.filter((e) => e.reason === 'FailedPreStopHook');
    assert.deepEqual(
      hookFailures.map((e) => e.message),
      [],
      'the kubelet ran the preStop hook of the deleted primary without an error',
    );
  });

  it('promotes a replica when the primary is cut off from the network: the isolated primary makes itself read-only and acknowledges nothing the new primary lacks, and rejoins once healed', async function () {
    this.timeout(2 * RECOVERY_MS);
    const writer = await newWriter();
    const registers = await newRegisters();
    const watch = sampler();
    const old = await primary();
    // Every packet of the pod's network namespace but loopback is dropped (kubelet exec still works).
    const netns = ['-t', String(mysqldPid((await pod(old)).metadata?.uid ?? '')), '-n', 'iptables'];
    const rules = [
      ['INPUT', '!', '-i', 'lo', '-j', 'DROP'],
      ['OUTPUT', '!', '-o', 'lo', '-j', 'DROP'],
    ];
    const cutAt = performance.now();
    for (const r of rules) execFileSync('nsenter', [...netns, '-I', ...r]);
    // A commit in the isolated primary, from a client on its side of the partition (its own socket): it
    // waits for an acknowledgement no replica can send, holding the commit lock read-only needs, and
    // killing its session does not end that wait. The member must make itself read-only all the same,
    // and this client must never be told the commit succeeded.
    const stranded = localSql(kc, ns, old, 'INSERT INTO ha.w (id) VALUES (-2)');
    let promotedAt: number;
    try {
      await eventually(async () => assert.notEqual(await primary(), old), {
        timeoutMs: RECOVERY_MS,
        intervalMs: 200,
        description: 'a new primary',
        // What the controller waits on (Degraded names it) and what it saw of each member.
        diagnose: async () => JSON.stringify((await cluster()).status, null, 1),
      });
      promotedAt = performance.now();
      await writer.more(20, RECOVERY_MS);
      await registers.more(20, RECOVERY_MS);
      const lastFailure = writer.failures.filter((t) => t > cutAt).at(-1) ?? cutAt;
      console.log(
        `      a new primary after ${secondsSince(cutAt, promotedAt)}; writes failed for ${secondsSince(cutAt, lastFailure)} after the partition`,
      );
      // The isolated primary fenced itself; it says so in its agent's log.
      const log = await core.readNamespacedPodLog({ namespace: ns, name: old, container: 'agent' });
      const oldUid = (await pod(old)).metadata?.uid ?? '';
      assert.equal(
        await sql(old, 'SELECT @@GLOBAL.super_read_only'),
        '1',
        `${old} agent log:\n${log}\nits processes:\n${processesOf(oldUid)}\nsemi-sync source: ${await sql(old, 'SELECT @@GLOBAL.rpl_semi_sync_source_enabled')}\nsessions:\n${await sql(old, 'SELECT ID, USER, COMMAND, TIME, STATE, LEFT(INFO, 80) FROM information_schema.PROCESSLIST')}`,
      );
      assert.match(log, /reached no other member for \d+ s: making this member read-only/);
      // It released the commit stranded above (unacknowledged, and the failover discards it): it keeps every
      // client but the operator's and replication's accounts out until it rejoins (issue 43), so that no
      // client reads it; before issue 43 it let them back in once read-only.
      assert.equal(await sql(old, 'SELECT @@GLOBAL.offline_mode'), '1');
      const insert = await stranded;
      assert.equal(insert.ok, false, `the stranded commit was acknowledged to its client: ${insert.stdout}`);
    } finally {
      for (const r of rules) execFileSync('nsenter', [...netns, '-D', ...r]);
    }
    await failedOverSafely(old, writer, watch, 'the partition', registers, {
      'the cut': cutAt,
      'a new primary': promotedAt,
    });
  });

  it('had Recon8sMySQLPrimaryUnreachable pending while the partitioned primary was silent, not firing (for: 1m; it was replaced sooner)', async () => {
    // A killed primary is replaced within a scrape or two (it is known not to run); a silent one only
    // after failoverAfterSeconds, which the alert spans: Prometheus's ALERTS series kept it.
    const sel = `alertname="Recon8sMySQLPrimaryUnreachable", namespace="${ns}", cluster="${NAME}"`;
    await eventually(
      async () => assert.equal(await scalarOf(`max_over_time(ALERTS{${sel}, alertstate="pending"}[15m])`), 1),
      {
        timeoutMs: 30_000,
        intervalMs: 500,
        description: 'Recon8sMySQLPrimaryUnreachable pending during the partition',
      },
    );
    assert.equal(await scalarOf(`max_over_time(ALERTS{${sel}, alertstate="firing"}[15m])`), 0);
  });

  it('promotes a replica when only the primary and its replicas are cut apart (the controller and the kubelet still reach it): it is fenced, never two writable, no acknowledged write lost, and it rejoins once healed', async function () {
    this.timeout(2 * RECOVERY_MS);
    const writer = await newWriter();
    const registers = await newRegisters();
    const watch = sampler();
    const old = await primary();
    const oldIp = (await pod(old)).status?.podIP ?? '';
    const replicas = MEMBERS.filter((m) => m !== old);
    const ips = await Promise.all(replicas.map(async (m) => (await pod(m)).status?.podIP ?? ''));
    assert.ok(
      ips.every((ip) => ip !== ''),
      `replica IPs: ${ips.join(', ')}`,
    );
    // Only the replicas' addresses, both ways: the controller runs in this process (on the node, as the
    // kubelet's probes come from it) and CoreDNS has its own pod, so both still reach the primary. And the
    // cluster's own Services' addresses, outbound: kube-proxy translates a Service address on the node,
    // past this namespace's rules, so the primary would still reach the new one through its Service (its
    // agent did, and re-provisioned it by clone mid-partition: seen once in CI). A partition between
    // members cuts every path between them.
    const serviceIps = (await core.listNamespacedService({ namespace: ns })).items
      .filter((s) => s.metadata?.name?.startsWith(NAME))
      .flatMap((s) => s.spec?.clusterIPs ?? [])
      .filter((ip) => ip !== 'None');
    assert.ok(serviceIps.length > 0, `no Service address of ${NAME} in ${ns}`);
    const netns = ['-t', String(mysqldPid((await pod(old)).metadata?.uid ?? '')), '-n', 'iptables'];
    const rules = [
      ...ips.flatMap((ip) => [
        ['INPUT', '-s', ip, '-j', 'DROP'],
        ['OUTPUT', '-d', ip, '-j', 'DROP'],
      ]),
      ...serviceIps.map((ip) => ['OUTPUT', '-d', ip, '-j', 'DROP']),
    ];
    const failoversBefore = (await clusterEvents()).filter((e) => e.reason === 'FailedOver').length;
    const cutAt = performance.now();
    for (const r of rules) execFileSync('nsenter', [...netns, '-I', ...r]);
    // Readers that still reach the old primary by its own address throughout the cut (as a client with a
    // connection or an endpoint from before the failover does): what it serves them counts as served
    // through <name>-primary. Issue 43: once fenced, it released the commits stranded waiting for a
    // replica, and readers read them until the failover discarded them.
    const readers = registers.readersThrough(oldIp, 2);
    let promotedAt: number;
    try {
      await eventually(async () => assert.notEqual(await primary(), old), {
        timeoutMs: RECOVERY_MS,
        intervalMs: 200,
        description: 'a new primary',
        diagnose: async () =>
          `${JSON.stringify((await cluster()).status, null, 1)}\nwhat the replicas heard:\n${(
            await Promise.all(
              replicas.map(async (m) => `${m}: ${await sql(m, HEARD_SQL).catch((e: unknown) => String(e))}`),
            )
          ).join('\n')}`,
      });
      promotedAt = performance.now();
      await writer.more(20, RECOVERY_MS);
      await registers.more(20, RECOVERY_MS);
      const lastFailure = writer.failures.filter((t) => t > cutAt).at(-1) ?? cutAt;
      console.log(
        `      a new primary after ${secondsSince(cutAt, promotedAt)}; writes failed for ${secondsSince(cutAt, lastFailure)} after the primary was cut off from its replicas only (${writer.failures.length} failed attempts)`,
      );
      // The controller reaches it again, and failed over once. Usually because no replica heard it; but
      // when one of its looks fails while the primary's agent fences it (seen once in three runs), it
      // comes back read-only and is replaced as a restarted primary is: the same failover, by the other
      // rule (unit-tested, both). The Event says which.
      const status = (await cluster()).status;
      assert.equal(status?.members?.find((m) => m.name === old)?.reachable, true, JSON.stringify(status?.members));
      const failedOver = (await clusterEvents()).filter((e) => e.reason === 'FailedOver');
      assert.equal(failedOver.length, failoversBefore + 1, JSON.stringify(failedOver.map((e) => e.message)));
      const why = failedOver.at(-1)?.message ?? '';
      assert.match(why, new RegExp(`the primary ${old} was lost \\((heard by none of its replicas|down \\d+ s)`));
      console.log(`      failed over as: ${why}`);
      // Still cut off, so still fenced: nothing of the new primary's could reach it.
      const fencedNow = await sql(old, 'SELECT @@GLOBAL.super_read_only').catch(
        async (e: unknown) =>
          `${String(e)}\n${old} agent log:\n${await core.readNamespacedPodLog({ namespace: ns, name: old, container: 'agent', tailLines: 30 })}`,
      );
      assert.equal(fencedNow, '1');
    } finally {
      await readers.stop();
      for (const r of rules) execFileSync('nsenter', [...netns, '-D', ...r]);
    }
    await failedOverSafely(
      old,
      writer,
      watch,
      `the partial partition (clients ${readers.clients.join(', ')} read through ${old}'s own address during the cut)`,
      registers,
      { 'the cut': cutAt, 'a new primary': promotedAt, 'the heal': performance.now() },
    );
  });

  it('keeps taking writes while a replica is killed (SIGKILL), and the replica catches up', async () => {
    const writer = await newWriter();
    const registers = await newRegisters();
    const p = await primary();
    const victim = MEMBERS.find((m) => m !== p) ?? '';
    const killedAt = performance.now();
    process.kill(mysqldPid((await pod(victim)).metadata?.uid ?? ''), 'SIGKILL');
    // One acknowledgement per commit, and the other replica still gives it.
    await writer.more(50, 30_000);
    await registers.more(50, 30_000);
    await writer.stop();
    const checked = await registers.check('the replica kill', { 'the kill': killedAt });
    assert.equal(await primary(), p, 'no failover for a replica');
    await healthy(RECOVERY_MS);
    await sameRows(p, MEMBERS);
    await noneLost(victim, writer.acknowledged);
    assertLinearizable(checked);
  });

  it('switches over under the writer without losing an acknowledged write', async () => {
    const writer = await newWriter();
    const registers = await newRegisters();
    const watch = sampler();
    const from = await primary();
    const to = MEMBERS.find((m) => m !== from) ?? '';
    const out: string[] = [];
    const sink = new Writable({ write: (c: Buffer, _e, done) => (out.push(String(c)), done()) });
    const started = performance.now();
    const code = await main(
      ['switchover', NAME, '-n', ns, '--to', to, '--kubeconfig', node().kubeconfigPath],
      sink,
      sink,
    );
    assert.equal(code, 0, out.join(''));
    const switchedAt = performance.now();
    await writer.more(20, RECOVERY_MS);
    await registers.more(20, RECOVERY_MS);
    const failed = writer.failures.filter((t) => t >= started);
    const refusedMs = failed.length ? (failed.at(-1) ?? 0) - (failed[0] ?? 0) : 0;
    console.log(`      writes were refused for ${(refusedMs / 1000).toFixed(1)} s (${failed.length} failed attempts)`);
    await writer.stop();
    const checked = await registers.check('the switchover', { 'the request': started, 'its end': switchedAt });
    assert.deepEqual(await watch.stop(), []);
    assert.equal(await primary(), to);
    await noneLost(to, writer.acknowledged);
    await healthy(RECOVERY_MS);
    await sameRows(to, MEMBERS);
    assertLinearizable(checked);
  });

  it('rolls a my.cnf change over every member, replicas first, switching the primary over before its restart, losing nothing', async function () {
    this.timeout(2 * RECOVERY_MS);
    const before = new Map<string, string>();
    for (const m of MEMBERS) before.set(m, (await pod(m)).metadata?.uid ?? '');
    const failoversBefore = (await clusterEvents()).filter((e) => e.reason === 'FailedOver').length;
    const writer = await newWriter();
    const registers = await newRegisters();
    const watch = sampler();
    const old = await primary();
    const changedAt = performance.now();
    await custom.patchNamespacedCustomObject(
      { ...GROUP, namespace: ns, name: NAME, body: { spec: { mysqlConf: { max_connections: '181' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        for (const m of MEMBERS) assert.notEqual((await pod(m)).metadata?.uid, before.get(m), `${m} re-created`);
        for (const m of MEMBERS) assert.equal(await sql(m, 'SELECT @@max_connections'), '181');
      },
      { timeoutMs: 2 * RECOVERY_MS - 60_000, intervalMs: 2000, description: 'every member re-created with the change' },
    );
    await healthy(RECOVERY_MS);
    await writer.more(20, RECOVERY_MS);
    await registers.more(20, RECOVERY_MS);
    await writer.stop();
    const checked = await registers.check('the roll', { 'the change': changedAt });
    assert.deepEqual(await watch.stop(), []);
    assert.notEqual(await primary(), old, 'the primary moved before its pod was re-created');
    const events = await clusterEvents();
    assert.ok(events.some((e) => e.reason === 'SwitchedOver' && e.message?.includes(`instead of ${old}`)));
    assert.equal(events.filter((e) => e.reason === 'FailedOver').length, failoversBefore, 'no failover');
    await noneLost(await primary(), writer.acknowledged);
    await sameRows(await primary(), MEMBERS);
    assertLinearizable(checked);
  });

  it('excludes a member with an errant transaction, never promotes it, and re-provisions it on request', async function () {
    this.timeout(2 * RECOVERY_MS);
    const p = await primary();
    const errant = MEMBERS.find((m) => m !== p) ?? '';
    // A person makes a replica writable by hand and writes to it.
    await sql(
      errant,
      'SET GLOBAL super_read_only = OFF; INSERT INTO ha.w VALUES (-1); SET GLOBAL super_read_only = ON',
    );
    await eventually(
      async () => {
        const status = (await cluster()).status;
        const m = status?.members?.find((x) => x.name === errant);
        assert.ok(m?.errantTransactions, JSON.stringify(m));
        assert.equal(m.role, 'none');
        assert.equal((await pod(errant)).metadata?.labels?.['recon8s.dev/role'], 'none');
        const degraded = status?.conditions?.find((c) => c.type === 'Degraded');
        assert.equal(degraded?.reason, 'ErrantTransactions');
        assert.match(degraded?.message ?? '', new RegExp(`member ${errant} holds transactions the primary lacks`));
      },
      { timeoutMs: 60_000, description: `${errant} reported errant` },
    );
    const out: string[] = [];
    const sink = new Writable({ write: (c: Buffer, _e, done) => (out.push(String(c)), done()) });
    const code = await main(
      ['switchover', NAME, '-n', ns, '--to', errant, '--kubeconfig', node().kubeconfigPath],
      sink,
      sink,
    );
    assert.equal(code, 1, out.join(''));
    assert.match(out.join(''), /Refused: .* errant transactions and can never be promoted/);
    assert.equal(await primary(), p);

    await core.patchNamespacedPod(
      {
        namespace: ns,
        name: errant,
        body: { metadata: { annotations: { 'recon8s.dev/reprovision': 'errant-test' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await healthy(RECOVERY_MS);
    assert.equal(await sql(errant, 'SELECT COUNT(*) FROM ha.w WHERE id = -1'), '0');
    await sameRows(p, MEMBERS);
  });

  it('has, in Prometheus, every series the dashboard and the alerts read (after the failovers, switchovers and errant member above), and every target still up after the pods were re-created', async () => {
    const names = new Set<string>();
    for (const { from, expr } of shippedQueries(ns, NAME)) {
      const found = await prom().metricNames(expr);
      assert.ok(found.length > 0, `${from}: no metric in ${expr}`);
      for (const n of found) names.add(n);
    }
    const missing: string[] = [];
    for (const n of [...names].sort()) if ((await scalarOf(`count({__name__="${n}"})`)) === 0) missing.push(n);
    // Exactly those only a backup or archive run sets: every other one is served. This cluster's backups
    // never run (their volume is missing) and it archives no binary logs; test/e2e/mysql-backup.test.ts
    // runs both and finds these four in its Prometheus.
    assert.deepEqual(missing, ONLY_AFTER_BACKUP_RUNS.filter((n) => names.has(n)).sort());
    assert.ok(names.size > 25, `${names.size} metric names`);
    console.log(
      `      ${names.size - missing.length} of the ${names.size} metrics the dashboard and the alerts name have data`,
    );
    // What the scrapes cost over the file (printed, not asserted).
    for (const job of ['kubernetes-pods', CONTROLLER_JOB]) {
      const over = (f: 'avg' | 'max', metric: string) => scalarOf(`${f}(${f}_over_time(${metric}{job="${job}"}[30m]))`);
      const ms = async (f: 'avg' | 'max') => ((await over(f, 'scrape_duration_seconds')) * 1000).toFixed(0);
      console.log(
        `      ${job}: a scrape took ${await ms('avg')} ms on average, ${await ms('max')} ms at most; at most ${await over('max', 'scrape_samples_scraped')} samples per target`,
      );
    }
    console.log(
      `      ${await scalarOf('count({__name__=~".+"})')} series in Prometheus, which used ${prom().cpuSeconds().toFixed(1)} s of CPU since it started`,
    );
    // The events of this file, as Prometheus recorded them.
    const sel = `namespace="${ns}", cluster="${NAME}"`;
    assert.ok((await scalarOf(`recon8s_mysql_switchovers_total{${sel}, outcome="done"}`)) >= 2, 'switchovers done');
    assert.equal(await scalarOf(`max_over_time(recon8s_mysql_errant_members{${sel}}[15m])`), 1);
    assert.equal(
      await scalarOf(`max_over_time(ALERTS{alertname="Recon8sMySQLErrantMember", alertstate="pending", ${sel}}[15m])`),
      1,
      'Recon8sMySQLErrantMember was pending while the member was excluded',
    );
    // Kubernetes service discovery followed the members re-created above (the roll, the re-provisioning).
    await eventually(
      async () => {
        const targets = (await prom().targets()).filter((t) => t.scrapePool === 'kubernetes-pods');
        const ips = await Promise.all(MEMBERS.map(async (m) => (await pod(m)).status?.podIP ?? ''));
        assert.deepEqual(targets.map((t) => t.scrapeUrl).sort(), ips.map((ip) => `http://${ip}:9104/metrics`).sort());
        for (const t of targets) assert.equal(t.health, 'up', `${t.scrapeUrl}: ${t.lastError}`);
      },
      { timeoutMs: 30_000, intervalMs: 500, description: "the re-created members' sidecars scraped" },
    );
  });
});
