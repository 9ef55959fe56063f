// A real Prometheus server (test/prometheus/build-prometheus.sh, the release promtool is pinned to) on
// the host, for the end-to-end proof of the shipped alerts and dashboard: it scrapes what a user's
// Prometheus would (the members' metrics sidecars through Kubernetes service discovery, the
// controller's /metrics), evaluates the shipped rules, and is asked through its HTTP API. Used by
// test/e2e/mysql-ha.test.ts (failovers, the members' series) and test/e2e/mysql-backup.test.ts (the
// series of backup and archive runs, the archive gap).
import type { ChildProcess } from 'node:child_process';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Chart } from 'cdk8s';
import { parse, stringify } from 'yaml';
import { Recon8sAlertRules } from '../../../constructs/operator/alert-rules.js';
import type { AlertRulesProps } from '../../../constructs/operator/alert-rules.js';
import { dashboardQueries, grafanaDashboard } from '../../../constructs/operator/dashboard.js';
import { eventually } from '../../integration/eventually.js';
import { REPO_ROOT } from '../../support/run.js';

/** Builds (once per machine: minutes; after promtool's build, much less) or finds the server; its path. */
export function buildPrometheus(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [join(REPO_ROOT, 'test/prometheus/build-prometheus.sh')],
      { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`test/prometheus/build-prometheus.sh failed (${error.message}):\n${stderr}`))
          : resolve(stdout.trim()),
    );
  });
}

/**
 * The shipped rules, as the PrometheusRule the construct renders carries them (its spec is a Prometheus
 * rule file: `groups`).
 */
export function shippedRuleFile(props: AlertRulesProps = {}): { groups: { name: string; rules: unknown[] }[] } {
  const chart = new Chart(new App(), 'test');
  const rules = new Recon8sAlertRules(chart, 'alerts', props);
  return (rules.rule.toJson() as { spec: { groups: { name: string; rules: unknown[] }[] } }).spec;
}

/**
 * The series only a backup or a binary-log archive run sets (its outcome, its time, the archive's
 * reach, a gap): a cluster whose backups never run has none of them (the HA e2e's), one whose backups
 * and archive run has all four (the backup e2e's). The controller's registry has each (dashboard.test.ts).
 */
export const ONLY_AFTER_BACKUP_RUNS: readonly string[] = [
  'recon8s_mysql_backup_last_success_timestamp_seconds',
  'recon8s_mysql_backup_failing',
  'recon8s_mysql_binlog_archived_until_timestamp_seconds',
  'recon8s_mysql_binlog_archive_gap',
];

/**
 * The "Plain Prometheus" scrape job of docs/monitoring.md, read from the page as a user copies it (so
 * the page's YAML is what is proven), with the service discovery pointed at `kubeconfig` and
 * `namespaces`.
 */
export function documentedPodScrapeJob(kubeconfig: string, namespaces: readonly string[]): Record<string, unknown> {
  const page = readFileSync(join(REPO_ROOT, 'docs/monitoring.md'), 'utf8');
  const block = /```yaml\n(\s*- job_name: kubernetes-pods\n[\s\S]*?)```/.exec(page)?.[1];
  if (!block) throw new Error('docs/monitoring.md has no ```yaml block with the kubernetes-pods job');
  const indent = /^\s*/.exec(block)?.[0].length ?? 0;
  const text = block
    .split('\n')
    .map((l) => l.slice(indent))
    .join('\n');
  const [job] = parse(text) as Record<string, unknown>[];
  if (!job) throw new Error(`the kubernetes-pods block of docs/monitoring.md parses to nothing:\n${text}`);
  const sd = job.kubernetes_sd_configs as Record<string, unknown>[];
  return {
    ...job,
    kubernetes_sd_configs: sd.map((c) => ({ ...c, kubeconfig_file: kubeconfig, namespaces: { names: namespaces } })),
  };
}

/** The job name the controller's target has in Prometheus (`job="..."`). */
export const CONTROLLER_JOB = 'recon8s-controller';

/**
 * Starts Prometheus with the shipped rules exactly as the PrometheusRule carries them, evaluated every
 * second, scraping the controller's /metrics every second (it runs in the test process, on loopback: a
 * static target, no pod to discover) and `scrapeConfigs` besides (every `scrapeInterval`).
 */
export function startWithShippedRules(
  binary: string,
  controllerMetricsAddress: string,
  options: { readonly scrapeInterval?: string; readonly scrapeConfigs?: readonly Record<string, unknown>[] } = {},
): Promise<PrometheusServer> {
  const interval = options.scrapeInterval ?? '5s';
  return startPrometheus(
    binary,
    {
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: '1s' },
      rule_files: ['recon8s-alerts.yaml'],
      scrape_configs: [
        {
          job_name: CONTROLLER_JOB,
          scrape_interval: '1s',
          scrape_timeout: '1s',
          static_configs: [{ targets: [controllerMetricsAddress] }],
        },
        ...(options.scrapeConfigs ?? []),
      ],
    },
    { 'recon8s-alerts.yaml': shippedRuleFile() },
  );
}

/** Every query the dashboard and the shipped rules evaluate, with Grafana's variables as Grafana fills them. */
export function shippedQueries(namespace: string, cluster: string): { readonly from: string; readonly expr: string }[] {
  const fill = (expr: string): string =>
    expr
      .replaceAll('$__rate_interval', '1m')
      .replaceAll('$__range', '1h')
      .replaceAll('$__interval', '15s')
      .replaceAll('$namespace', namespace)
      .replaceAll('$cluster', cluster);
  const dashboard = grafanaDashboard() as { annotations: { list: { name?: string; expr: string }[] } };
  return [
    ...dashboardQueries().map((q) => ({ from: `panel "${q.panel}"`, expr: fill(q.expr) })),
    ...dashboard.annotations.list.map((a) => ({ from: `annotation "${a.name ?? ''}"`, expr: fill(a.expr) })),
    ...shippedRuleFile().groups.flatMap((g) =>
      (g.rules as { alert: string; expr: string }[]).map((r) => ({ from: `alert ${r.alert}`, expr: r.expr })),
    ),
  ];
}

/** One sample of an instant query's vector. */
export interface Sample {
  readonly metric: Record<string, string>;
  readonly value: readonly [number, string];
}
/** One alert of /api/v1/alerts. */
export interface ActiveAlert {
  readonly labels: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly activeAt: string;
  readonly value: string;
}
/** One target of /api/v1/targets. */
export interface Target {
  readonly labels: Record<string, string>;
  readonly scrapePool: string;
  readonly scrapeUrl: string;
  readonly health: 'up' | 'down' | 'unknown';
  readonly lastError: string;
  readonly lastScrapeDuration: number;
}

export interface PrometheusServer {
  readonly url: string;
  /** The server's own log so far (stderr), for failure messages. */
  log(): string;
  /** The CPU time the server has used (user and system), from /proc. */
  cpuSeconds(): number;
  /** An instant query's vector. */
  query(expr: string): Promise<Sample[]>;
  alerts(): Promise<ActiveAlert[]>;
  targets(): Promise<Target[]>;
  /** The metric names a query selects, as Prometheus's own parser reads it (/api/v1/parse_query). */
  metricNames(expr: string): Promise<string[]>;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
}

/** The kernel's clock ticks per second for /proc times (USER_HZ: 100 on Linux). */
const CLOCK_TICKS = 100;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Collects the names of the vector and matrix selectors of /api/v1/parse_query's syntax tree. */
function selectorNames(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) {
    for (const n of node) selectorNames(n, into);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if ((o.type === 'vectorSelector' || o.type === 'matrixSelector') && typeof o.name === 'string' && o.name)
    into.add(o.name);
  for (const [k, v] of Object.entries(o)) if (k !== 'matchers') selectorNames(v, into);
}

/** Servers started and not stopped yet, with their directories. */
const running = new Map<ChildProcess, string>();
// Should the test process end without its after hook (a crash), the server must not outlive it.
process.on('exit', () => {
  for (const [p, dir] of running) {
    p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Starts Prometheus with `config` (a prometheus.yml as an object; `rule_files` may name files written
 * beside it through `files`), waits until it is ready, and hands back its API.
 */
export async function startPrometheus(
  binary: string,
  config: Record<string, unknown>,
  files: Readonly<Record<string, unknown>> = {},
): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'recon8s-prometheus-'));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), stringify(content));
  writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    binary,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  running.set(child, dir);
  let log = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (c: string) => {
    log = (log + c).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
    }
    running.delete(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}:\n${log}`);
        const res = await fetch(`${url}/-/ready`);
        if (!res.ok) throw new Error(`/-/ready: ${res.status}`);
      },
      { timeoutMs: 60_000, intervalMs: 100, description: `Prometheus ready on ${url}` },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url,
    log: () => log,
    cpuSeconds: () => {
      // /proc/PID/stat: utime and stime are fields 14 and 15, after the parenthesised command name.
      const fields = readFileSync(`/proc/${child.pid ?? 0}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    },
    query: async (expr) =>
      (await api<{ resultType: string; result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: ActiveAlert[] }>('/api/v1/alerts')).alerts,
    targets: async () => (await api<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets,
    metricNames: async (expr) => {
      const names = new Set<string>();
      selectorNames(await api<unknown>(`/api/v1/parse_query?query=${encodeURIComponent(expr)}`), names);
      return [...names];
    },
    stop,
  };
}
