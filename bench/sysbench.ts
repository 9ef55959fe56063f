// What high availability costs a real client, and what bounds it: sysbench 1.0.20 (Debian's package, a
// client nobody here wrote) through <name>-primary over TLS, against a 3-member and a 1-member
// MySQLCluster of the same resources on the real node (test/node), then a SIGKILL of the 3-member
// cluster's primary mysqld in the middle of a run:
// `npm run bench:sysbench -- [--seconds 30] [--threads 4] [--tables 4] [--rows 20000]`.
// A script, never run by `npm test`: progress on stderr, tables and one JSON line on stdout.
//
// Each factor of the 3 ÷ 1 ratio is isolated on the same clusters in the same run, by bench-only
// knobs set at runtime and restored (and read back) before the next run: no fsync per commit
// (sync_binlog=0, innodb_flush_log_at_trx_commit=2), no semi-synchronous wait (the replicas still
// replicate), the replicas stopped. Every run also records the CPU per transaction of each mysqld
// (their processes' /proc times) and of sysbench, the host's busy share, and the primary's average
// wait for an acknowledgement. The controller is stopped while semi-sync is off (it would turn it on)
// and while the replicas' appliers are restarted with one worker (a candidate product setting).
//
// TLS: sysbench 1.0.20 has only `--mysql-ssl=on`, which reads client-key.pem, client-cert.pem and
// cacert.pem from its working directory (the "client files" it failed to find when run by hand). The
// bench gives it the cluster's CA and the members' certificate (it carries client auth) in a private
// directory, and the password in a `--config-file` there: none of it on a command line.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createConnection } from 'mysql2/promise';
import type { Controller } from '../lib/controller/controller.js';
import { freshRestrictedNamespace } from '../test/e2e/cluster.js';
import { mustSql, mysqlClusterResource } from '../test/e2e/support/mysql-members.js';
import { podProcesses } from '../test/e2e/support/pod-processes.js';
import { startTestController } from '../test/integration/support/controller.js';
import { startNodeCluster } from '../test/node/index.js';
import { ensureSysbench, parseSysbench, runSysbench, sysbench } from './sysbench-client.js';
import type { Row, Variant } from './sysbench-report.js';
import { decompose, decompositionTable, rowsTable } from './sysbench-report.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    threads: { type: 'string', default: '4' },
    tables: { type: 'string', default: '4' },
    rows: { type: 'string', default: '20000' },
  },
});
const runSeconds = Number(values.seconds);
const threads = Number(values.threads);
const tables = Number(values.tables);
const rows = Number(values.rows);
if (![runSeconds, threads, tables, rows].every((n) => Number.isInteger(n) && n > 0)) {
  process.stderr.write('usage: npm run bench:sysbench -- [--seconds N] [--threads N] [--tables N] [--rows N]\n');
  process.exit(2);
}

const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const TESTS = ['oltp_read_write', 'oltp_write_only'] as const;
const progress = (line: string): boolean => process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The host's CPU time so far (all cores, USER_HZ ticks): busy and total, from /proc/stat. */
function cpuTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  return { busy: total - idle, total };
}
const USER_HZ = 100;

const MYSQLD = /(^|\/)mysqld( |$)/;
/** CPU seconds the pod's mysqld has used since it started (0 if none runs). */
const mysqldCpu = (uid: string): number => podProcesses(uid).find((p) => MYSQLD.test(p.args))?.cpuSeconds ?? 0;

/** Median time of a TCP connect from this host to `ip:port`, ms (a round trip: SYN, SYN-ACK). */
async function connectRoundTripMs(ip: string, port: number, tries = 21): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < tries; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const s = connect({ host: ip, port }, () => {
        s.destroy();
        resolve();
      });
      s.setTimeout(2000, () => s.destroy(new Error(`connect to ${ip}:${port} timed out`)));
      s.on('error', reject);
    });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? NaN;
}

ensureSysbench();
const node = await startNodeCluster({ onOutput: () => undefined });
const results: Record<string, unknown> = {};
const table: Row[] = [];
const dirs: string[] = [];
let controller: Controller | undefined;
try {
  const ns = await freshRestrictedNamespace(node, 'bench-sysbench');
  const kc = node.kubeConfig();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const startController = async () => {
    controller = await startTestController(node, { namespaces: [ns], resyncPeriodMs: 60_000 });
  };
  const stopController = async () => {
    await controller?.stop();
    controller = undefined;
  };
  await startController();
  // The same resources for every member of both clusters; the storage fits the tables three times over.
  const resources = { resources: { requests: { cpu: '100m', memory: '512Mi' }, limits: { memory: '1Gi' } } };
  const cluster = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as {
      status?: { readyReplicas?: number; currentPrimary?: string; tlsSecretName?: string };
    };
  const ready = async (name: string, n: number): Promise<void> => {
    for (const t0 = performance.now(); ; await sleep(500)) {
      if ((await cluster(name)).status?.readyReplicas === n) return;
      if (performance.now() - t0 > 15 * 60_000)
        throw new Error(`${name} not Ready: ${JSON.stringify(await cluster(name))}`);
    }
  };
  const secretValue = async (name: string, key: string): Promise<string> =>
    Buffer.from((await core.readNamespacedSecret({ namespace: ns, name })).data?.[key] ?? '', 'base64').toString(
      'utf8',
    );
  const sql = (pod: string, statement: string): Promise<string> => mustSql(kc, ns, pod, statement);

  /** `attempt` until it succeeds, for up to 60 s. */
  const retried = async <T>(what: string, attempt: () => Promise<T>): Promise<T> => {
    const until = performance.now() + 60_000;
    for (;;) {
      try {
        return await attempt();
      } catch (e) {
        if (performance.now() > until)
          throw new Error(`waited 60 s for ${what}: ${(e as Error).message}`, { cause: e });
        await sleep(1000);
      }
    }
  };

  interface Prepared {
    readonly name: string;
    readonly members: 1 | 3;
    readonly dir: string;
    readonly primary: string;
    readonly replicas: readonly string[];
    /** Pod UID by pod name: their processes are found by it. */
    readonly uids: ReadonlyMap<string, string>;
  }

  /** A cluster Ready, an account for sysbench, its files in a private directory, the tables prepared. */
  const prepare = async (members: 1 | 3): Promise<Prepared> => {
    const name = `sb${members}`;
    await custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: mysqlClusterResource(node.images.mysql, name, members, { ...resources, storage: { size: '2Gi' } }),
    });
    await ready(name, members);
    const tls = (await cluster(name)).status?.tlsSecretName ?? `${name}-tls`;
    const host = (await core.readNamespacedService({ namespace: ns, name: `${name}-primary` })).spec?.clusterIP ?? '';
    const ca = await secretValue(tls, 'ca.crt');
    const password = randomBytes(18).toString('base64url');
    const rootPassword = await secretValue(`${name}-credentials`, 'root-password');
    // Ready can come a moment before the primary Service's endpoints reach kube-proxy (refused meanwhile).
    const root = await retried(`${name}-primary to answer`, () =>
      createConnection({ host, user: 'root', password: rootPassword, ssl: { ca, rejectUnauthorized: true } }),
    );
    for (const statement of [
      'CREATE DATABASE sbtest',
      "CREATE USER 'sbtest'@'%' IDENTIFIED BY ? REQUIRE SSL",
      "GRANT ALL ON sbtest.* TO 'sbtest'@'%'",
    ])
      await root.query({ sql: statement, values: statement.includes('?') ? [password] : [] });
    root.destroy();
    const dir = mkdtempSync(join(tmpdir(), 'recon8s-sysbench-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'cacert.pem'), ca, { mode: 0o600 });
    writeFileSync(join(dir, 'client-cert.pem'), await secretValue(tls, 'tls.crt'), { mode: 0o600 });
    writeFileSync(join(dir, 'client-key.pem'), await secretValue(tls, 'tls.key'), { mode: 0o600 });
    writeFileSync(
      join(dir, 'sysbench.conf'),
      [
        'db-driver=mysql',
        `mysql-host=${host}`,
        'mysql-user=sbtest',
        `mysql-password=${password}`,
        'mysql-db=sbtest',
        'mysql-ssl=on',
        // A failover ends connections; sysbench reconnects and counts them rather than stopping.
        'mysql-ignore-errors=all',
        `tables=${tables}`,
        `table-size=${rows}`,
        `threads=${threads}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    progress(`${name}: ${members} members Ready; preparing ${tables} tables × ${rows} rows`);
    await sysbench(dir, ['oltp_read_write', 'prepare']);
    const primary = (await cluster(name)).status?.currentPrimary ?? `${name}-0`;
    const pods = Array.from({ length: members }, (_, i) => `${name}-${i}`);
    const uids = new Map<string, string>();
    for (const pod of pods)
      uids.set(pod, (await core.readNamespacedPod({ namespace: ns, name: pod })).metadata?.uid ?? '');
    return { name, members, dir, primary, replicas: pods.filter((p) => p !== primary), uids };
  };

  /** The primary's semi-synchronous counters: commits waited for, and the time they waited (µs). */
  const ackCounters = async (c: Prepared): Promise<{ waits: number; waitUs: number }> => {
    const out = await sql(
      c.primary,
      "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME IN ('Rpl_semi_sync_source_tx_waits', 'Rpl_semi_sync_source_tx_wait_time')",
    );
    const v = new Map(out.split('\n').map((l) => l.split('\t') as [string, string]));
    return {
      waits: Number(v.get('Rpl_semi_sync_source_tx_waits') ?? NaN),
      waitUs: Number(v.get('Rpl_semi_sync_source_tx_wait_time') ?? NaN),
    };
  };

  /**
   * Until every replica has applied what the primary has (seconds it took): a run's replicas finish
   * its transactions before their CPU is read, and the next run starts with nothing left to apply.
   */
  const caughtUp = async (c: Prepared): Promise<number> => {
    const t0 = performance.now();
    const executed = await sql(c.primary, "SELECT REPLACE(@@GLOBAL.gtid_executed, '\\n', '')");
    if (!/^[0-9a-f:,-]*$/i.test(executed)) throw new Error(`${c.primary}: gtid_executed is ${executed}`);
    for (const pod of c.replicas) {
      const timedOut = await sql(pod, `SELECT WAIT_FOR_EXECUTED_GTID_SET('${executed}', 600)`);
      if (timedOut !== '0') throw new Error(`${pod} did not apply ${executed} within 600 s`);
    }
    return (performance.now() - t0) / 1000;
  };

  /**
   * One run: its throughput and latency, and the CPU each part used per transaction (the replicas'
   * until they applied the run's last transaction).
   */
  const measure = async (c: Prepared, test: Row['test'], variant: Variant): Promise<Row> => {
    const mysqlds = () => new Map([...c.uids].map(([pod, uid]) => [pod, mysqldCpu(uid)]));
    const ackBefore = c.members > 1 ? await ackCounters(c) : undefined;
    const cpuBefore = mysqlds();
    const hostBefore = cpuTicks();
    const exit = await sysbench(c.dir, [test, `--time=${runSeconds}`, '--report-interval=1', 'run']);
    const hostAfter = cpuTicks();
    const lag = c.members > 1 && variant !== 'replicas stopped' ? await caughtUp(c) : 0;
    const cpuAfter = mysqlds();
    const ackAfter = c.members > 1 ? await ackCounters(c) : undefined;
    const r = parseSysbench(exit.out);
    const perTx = (seconds: number) => Math.round((100_000 * seconds) / r.transactions) / 100; // ms, 2 digits
    const used = (pod: string) => (cpuAfter.get(pod) ?? 0) - (cpuBefore.get(pod) ?? 0);
    const waits = ackBefore && ackAfter ? ackAfter.waits - ackBefore.waits : 0;
    const row: Row = {
      members: c.members,
      variant,
      test,
      tps: r.tps,
      p95Ms: r.p95Ms,
      hostBusyPercent: Math.round((100 * (hostAfter.busy - hostBefore.busy)) / (hostAfter.total - hostBefore.total)),
      hostCpuMsPerTx: perTx((hostAfter.busy - hostBefore.busy) / USER_HZ),
      primaryCpuMsPerTx: perTx(used(c.primary)),
      replicasCpuMsPerTx: perTx(c.replicas.reduce((sum, p) => sum + used(p), 0)),
      sysbenchCpuMsPerTx: perTx(exit.cpuSeconds),
      ...(ackBefore && ackAfter && waits > 0 ? { ackWaitUs: (ackAfter.waitUs - ackBefore.waitUs) / waits } : {}),
    };
    progress(
      `${c.name} ${variant} ${test}: ${r.tps.toFixed(1)} TPS, p95 ${r.p95Ms} ms, ${r.errors} errors, host CPU ${row.hostBusyPercent} % busy, ` +
        `CPU ms/tx primary ${row.primaryCpuMsPerTx} replicas ${row.replicasCpuMsPerTx} sysbench ${row.sysbenchCpuMsPerTx} host ${row.hostCpuMsPerTx}` +
        (row.ackWaitUs === undefined ? '' : `, ack wait ${row.ackWaitUs.toFixed(0)} µs`) +
        (lag > 0 ? `, replicas applied the rest ${lag.toFixed(1)} s after` : ''),
    );
    table.push(row);
    return row;
  };
  const measureBoth = async (c: Prepared, variant: Variant): Promise<void> => {
    for (const test of TESTS) await measure(c, test, variant);
  };

  /**
   * `settings` as global variables on `pods` while `body` runs, then each variable's value from before,
   * read back: a member is never left with a bench-only setting.
   */
  const withGlobals = async (
    pods: readonly string[],
    settings: Readonly<Record<string, string>>,
    body: () => Promise<void>,
  ): Promise<void> => {
    const names = Object.keys(settings);
    const select = `SELECT ${names.map((n) => `@@GLOBAL.${n}`).join(', ')}`;
    const before = new Map<string, string>();
    for (const pod of pods) before.set(pod, await sql(pod, select));
    const set = (pod: string, vals: readonly string[]) =>
      sql(pod, names.map((n, i) => `SET GLOBAL ${n} = ${vals[i]}`).join('; '));
    let failure: unknown;
    try {
      for (const pod of pods) await set(pod, Object.values(settings));
      await body();
    } catch (e) {
      failure = e;
    }
    const left: string[] = [];
    for (const pod of pods) {
      const was = before.get(pod) ?? '';
      await set(pod, was.split('\t'));
      const now = await sql(pod, select);
      if (now !== was) left.push(`${pod}: ${names.join(', ')} are ${now}, not ${was} as before the bench`);
    }
    if (left.length > 0) throw new Error(left.join('; '), { cause: failure });
    if (failure !== undefined) throw failure;
  };
  const NO_FSYNC = { sync_binlog: '0', innodb_flush_log_at_trx_commit: '2' };

  const three = await prepare(3);
  // A figure beside the others, not a step the bench needs: NaN if the replica cannot be reached so.
  const rtt = await connectRoundTripMs(
    (await core.readNamespacedPod({ namespace: ns, name: three.replicas[0] ?? '' })).status?.podIP ?? '',
    3306,
  ).catch((e: unknown) => {
    progress(`no TCP round trip to ${three.replicas[0]}: ${(e as Error).message}`);
    return NaN;
  });
  progress(`TCP connect round trip host → ${three.replicas[0]}: ${rtt.toFixed(3)} ms (median of 21)`);
  await measureBoth(three, 'as shipped');
  await withGlobals([three.primary, ...three.replicas], NO_FSYNC, () => measureBoth(three, 'no fsync'));
  // The controller makes the primary's semi-synchronous source side what the spec says: not now.
  await stopController();
  // A candidate product setting: one applier thread per replica rather than MySQL's 4 workers and their
  // coordinator (replica_parallel_workers is read when the applier starts).
  const appliers = async (verb: 'START' | 'STOP') => {
    for (const pod of three.replicas) await sql(pod, `${verb} REPLICA SQL_THREAD`);
  };
  await appliers('STOP');
  await withGlobals(three.replicas, { replica_parallel_workers: '1' }, async () => {
    await appliers('START');
    try {
      await measureBoth(three, 'one applier');
    } finally {
      await appliers('STOP');
    }
  });
  await appliers('START');
  await withGlobals([three.primary], { rpl_semi_sync_source_enabled: 'OFF' }, async () => {
    await measureBoth(three, 'semi-sync off');
    try {
      for (const pod of three.replicas) await sql(pod, 'STOP REPLICA');
      await measureBoth(three, 'replicas stopped');
    } finally {
      for (const pod of three.replicas) await sql(pod, 'START REPLICA');
    }
  });
  // Semi-sync is on again: commits wait until a replica acknowledges; both must be connected again.
  await retried('both replicas to acknowledge again', async () => {
    const clients = await sql(
      three.primary,
      "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Rpl_semi_sync_source_clients'",
    );
    if (Number(clients) !== 2) throw new Error(`Rpl_semi_sync_source_clients is ${clients}`);
  });
  await caughtUp(three);
  await startController();

  // The failover under load: the primary's mysqld killed a third of the way in (this machine is the node).
  const primary = three.primary;
  const uid = three.uids.get(primary) ?? '';
  // sysbench 1.0.20 may crash when its server goes away mid-transaction (it did here, on a signal): as
  // an application's supervisor would, the bench starts it again at once until the run's time is up,
  // and the gap is measured on the wall clock from the kill to the first second that commits again.
  const killAt = Math.round(runSeconds / 3);
  const start = performance.now();
  const deadline = start + runSeconds * 1000;
  let killedAt = Infinity;
  void sleep(killAt * 1000).then(() => {
    const mysqld = podProcesses(uid).find((p) => MYSQLD.test(p.args));
    if (!mysqld) {
      progress(`no mysqld found in ${primary}: nothing killed`);
      return;
    }
    process.kill(mysqld.pid, 'SIGKILL');
    killedAt = performance.now();
    progress(`killed mysqld of ${primary} (pid ${mysqld.pid}) at ${((killedAt - start) / 1000).toFixed(1)} s`);
  });
  /** Each one-second report's end, ms on the monotonic clock, and its TPS. */
  const reports: { endMs: number; tps: number }[] = [];
  let restarts = 0;
  let reconnects = 0;
  while (performance.now() < deadline - 2000) {
    const runStart = performance.now();
    const left = Math.round((deadline - runStart) / 1000);
    const r = await runSysbench(three.dir, ['oltp_write_only', `--time=${left}`, '--report-interval=1', 'run']);
    for (const m of r.out.matchAll(/^\[ *(\d+)s \] thds: \d+ tps: ([\d.]+)/gm))
      reports.push({ endMs: runStart + Number(m[1]) * 1000, tps: Number(m[2]) });
    if (r.ok) reconnects += parseSysbench(r.out).reconnects;
    else {
      restarts++;
      progress(
        `sysbench exited (${r.how}) after ${((performance.now() - runStart) / 1000).toFixed(1)} s: started again`,
      );
    }
  }
  const firstAfter = reports.find((x) => x.endMs > killedAt && x.tps > 0);
  const zeroSeconds =
    firstAfter === undefined ? -1 : Math.max(0, Math.round((firstAfter.endMs - 1000 - killedAt) / 1000));
  progress(
    `failover under sysbench: ${zeroSeconds} s with no transaction, ${restarts} restarts of sysbench, ${reconnects} reconnects`,
  );

  await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: three.name });
  const one = await prepare(1);
  await measureBoth(one, 'as shipped');
  await withGlobals([one.primary], NO_FSYNC, () => measureBoth(one, 'no fsync'));
  await stopController();

  Object.assign(results, {
    connectRoundTripMs: Number(rtt.toFixed(3)),
    failoverZeroTpsSeconds: zeroSeconds,
    failoverReconnects: reconnects + restarts,
    rows: table,
    decomposition: decompose(table),
  });
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await controller?.stop().catch(() => undefined);
  await node.stop();
}
process.stdout.write(
  `sysbench 1.0.20 through <name>-primary over TLS, ${threads} threads, ${tables} tables × ${rows} rows, ${runSeconds} s per run, on the real node (load ${loadavg()[0]?.toFixed(2)})\n\n`,
);
process.stdout.write(`${rowsTable(table)}\n\n${decompositionTable(decompose(table))}\n\n`);
process.stdout.write(
  `TCP connect round trip, host → a replica: ${String(results.connectRoundTripMs)} ms; primary's mysqld killed mid-run (oltp_write_only, 3 members): ${String(results.failoverZeroTpsSeconds)} s with no transaction (${String(results.failoverReconnects)} reconnects or restarts of sysbench)\n`,
);
process.stdout.write(`${JSON.stringify({ threads, tables, rows, runSeconds, ...results })}\n`);
