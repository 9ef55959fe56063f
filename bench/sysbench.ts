// What high availability costs a real client: sysbench 1.0.20 (Debian's package, a client nobody here
// wrote) through <name>-primary over TLS, against a 3-member and a 1-member MySQLCluster of the same
// resources on the real node (test/node), then a SIGKILL of the 3-member cluster's primary mysqld in the
// middle of a run: `npm run bench:sysbench -- [--seconds 45] [--threads 4] [--tables 4] [--rows 20000]`.
// A script, never run by `npm test`: progress on stderr, a table and one JSON line on stdout.
//
// TLS: sysbench 1.0.20 has only `--mysql-ssl=on`, which reads client-key.pem, client-cert.pem and
// cacert.pem from its working directory (the "client files" it failed to find when run by hand). The
// bench gives it the cluster's CA and the members' certificate (it carries client auth) in a private
// directory, and the password in a `--config-file` there: none of it on a command line.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createConnection } from 'mysql2/promise';
import { freshRestrictedNamespace } from '../test/e2e/cluster.js';
import { mysqlClusterResource } from '../test/e2e/support/mysql-members.js';
import { podProcesses } from '../test/e2e/support/pod-processes.js';
import { startTestController } from '../test/integration/support/controller.js';
import { startNodeCluster } from '../test/node/index.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '45' },
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
const progress = (line: string): boolean => process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** sysbench from Debian's package, installed once (as the node installs its own packages). */
function ensureSysbench(): void {
  if (spawnSync('sysbench', ['--version']).status === 0) return;
  progress('installing sysbench (Debian package)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['-o', 'DPkg::Lock::Timeout=600', 'update'],
    ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '--no-install-recommends', 'sysbench'],
  ]) {
    const r = spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed`);
  }
}

interface SysbenchResult {
  tps: number;
  p95Ms: number;
  errors: number;
  reconnects: number;
  /** Transactions per second of each one-second report. */
  perSecond: number[];
}

/** What sysbench printed: the totals, and the per-second reports of --report-interval=1. */
function parseSysbench(out: string): SysbenchResult {
  const number = (re: RegExp): number => {
    const m = re.exec(out);
    if (!m?.[1]) throw new Error(`sysbench printed no ${re.source}:\n${out.slice(-2000)}`);
    return Number(m[1]);
  };
  const perSecond = [...out.matchAll(/^\[ *\d+s \] thds: \d+ tps: ([\d.]+)/gm)].map((m) => Number(m[1]));
  return {
    tps: number(/transactions: +\d+ +\(([\d.]+) per sec\.\)/),
    p95Ms: number(/95th percentile: +([\d.]+)/),
    errors: number(/ignored errors: +(\d+)/),
    reconnects: number(/reconnects: +(\d+)/),
    perSecond,
  };
}

/** The host's CPU time so far (all cores, USER_HZ ticks): busy and total, from /proc/stat. */
function cpuTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  return { busy: total - idle, total };
}

interface SysbenchExit {
  readonly out: string;
  /** Exited 0 (a signal or another code: it crashed, as 1.0.20 does when its server goes away). */
  readonly ok: boolean;
  readonly how: string;
}

function runSysbench(dir: string, args: string[]): Promise<SysbenchExit> {
  return new Promise((resolve, reject) => {
    const child = spawn('sysbench', [`--config-file=${join(dir, 'sysbench.conf')}`, ...args], { cwd: dir });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ out, ok: code === 0, how: signal ?? `code ${code}` }));
  });
}

async function sysbench(dir: string, args: string[]): Promise<string> {
  const r = await runSysbench(dir, args);
  if (!r.ok) throw new Error(`sysbench ${args.join(' ')} exited (${r.how}):\n${r.out.slice(-2000)}`);
  return r.out;
}

ensureSysbench();
const node = await startNodeCluster({ onOutput: () => undefined });
const results: Record<string, number> = {};
const dirs: string[] = [];
try {
  const ns = await freshRestrictedNamespace(node, 'bench-sysbench');
  const kc = node.kubeConfig();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const controller = await startTestController(node, { namespaces: [ns], resyncPeriodMs: 60_000 });
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

  /** A cluster Ready, an account for sysbench, its files in a private directory, the tables prepared. */
  const prepare = async (members: number): Promise<{ name: string; dir: string; host: string }> => {
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
    for (const sql of [
      'CREATE DATABASE sbtest',
      "CREATE USER 'sbtest'@'%' IDENTIFIED BY ? REQUIRE SSL",
      "GRANT ALL ON sbtest.* TO 'sbtest'@'%'",
    ])
      await root.query({ sql, values: sql.includes('?') ? [password] : [] });
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
    return { name, dir, host };
  };

  /** One run, and how busy the machine's cores were meanwhile (what bounds it when it is near 100 %). */
  const measure = async (c: { name: string; dir: string }, test: string): Promise<SysbenchResult & { cpu: number }> => {
    const before = cpuTicks();
    const r = parseSysbench(await sysbench(c.dir, [test, `--time=${runSeconds}`, '--report-interval=1', 'run']));
    const after = cpuTicks();
    const cpu = Math.round((100 * (after.busy - before.busy)) / (after.total - before.total));
    progress(
      `${c.name} ${test}: ${r.tps.toFixed(1)} TPS, p95 ${r.p95Ms} ms, ${r.errors} errors, host CPU ${cpu} % busy`,
    );
    return { ...r, cpu };
  };

  const three = await prepare(3);
  const threeRw = await measure(three, 'oltp_read_write');
  const threeWo = await measure(three, 'oltp_write_only');

  // The failover under load: the primary's mysqld killed a third of the way in (this machine is the node).
  const primary = (await cluster(three.name)).status?.currentPrimary ?? '';
  const uid = (await core.readNamespacedPod({ namespace: ns, name: primary })).metadata?.uid ?? '';
  // sysbench 1.0.20 may crash when its server goes away mid-transaction (it did here, on a signal): as
  // an application's supervisor would, the bench starts it again at once until the run's time is up,
  // and the gap is measured on the wall clock from the kill to the first second that commits again.
  const killAt = Math.round(runSeconds / 3);
  const start = performance.now();
  const deadline = start + runSeconds * 1000;
  let killedAt = Infinity;
  void sleep(killAt * 1000).then(() => {
    const mysqld = podProcesses(uid).find((p) => /(^|\/)mysqld( |$)/.test(p.args));
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
  const failover = { reconnects: reconnects + restarts };

  await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: three.name });
  const one = await prepare(1);
  const oneRw = await measure(one, 'oltp_read_write');
  const oneWo = await measure(one, 'oltp_write_only');
  await controller.stop();

  Object.assign(results, {
    threeReadWriteTps: threeRw.tps,
    threeReadWriteP95Ms: threeRw.p95Ms,
    threeReadWriteCpuBusyPercent: threeRw.cpu,
    oneReadWriteCpuBusyPercent: oneRw.cpu,
    threeWriteOnlyCpuBusyPercent: threeWo.cpu,
    oneWriteOnlyCpuBusyPercent: oneWo.cpu,
    oneReadWriteTps: oneRw.tps,
    oneReadWriteP95Ms: oneRw.p95Ms,
    readWriteRatio: Number((threeRw.tps / oneRw.tps).toFixed(2)),
    threeWriteOnlyTps: threeWo.tps,
    threeWriteOnlyP95Ms: threeWo.p95Ms,
    oneWriteOnlyTps: oneWo.tps,
    oneWriteOnlyP95Ms: oneWo.p95Ms,
    writeOnlyRatio: Number((threeWo.tps / oneWo.tps).toFixed(2)),
    failoverZeroTpsSeconds: zeroSeconds,
    failoverReconnects: failover.reconnects,
  });
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await node.stop();
}
const r = results;
process.stdout.write(
  `sysbench 1.0.20 through <name>-primary over TLS, ${threads} threads, ${tables} tables × ${rows} rows, ${runSeconds} s per run, on the real node (load ${loadavg()[0]?.toFixed(2)})\n`,
);
process.stdout.write(
  [
    '| test | 3 members: TPS / p95 / host CPU busy | 1 member: TPS / p95 / host CPU busy | 3 ÷ 1 (TPS) |',
    '|---|---|---|---|',
    `| oltp_read_write | ${r.threeReadWriteTps} / ${r.threeReadWriteP95Ms} ms / ${r.threeReadWriteCpuBusyPercent} % | ${r.oneReadWriteTps} / ${r.oneReadWriteP95Ms} ms / ${r.oneReadWriteCpuBusyPercent} % | ${r.readWriteRatio} |`,
    `| oltp_write_only | ${r.threeWriteOnlyTps} / ${r.threeWriteOnlyP95Ms} ms / ${r.threeWriteOnlyCpuBusyPercent} % | ${r.oneWriteOnlyTps} / ${r.oneWriteOnlyP95Ms} ms / ${r.oneWriteOnlyCpuBusyPercent} % | ${r.writeOnlyRatio} |`,
    `| primary's mysqld killed mid-run (oltp_write_only, 3 members) | ${r.failoverZeroTpsSeconds} s with no transaction (${r.failoverReconnects} reconnects or restarts of sysbench) | | |`,
  ].join('\n') + '\n',
);
process.stdout.write(`${JSON.stringify({ threads, tables, rows, runSeconds, ...results })}\n`);
