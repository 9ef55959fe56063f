// The shipped Grafana dashboard (constructs/operator/dashboard.ts): every panel's query parses on
// Prometheus's own engine (each wrapped as a recording rule, `promtool check rules`), and names only
// metrics that exist: the controller's checked against its real registry, the metrics sidecar's
// against the list test/e2e/mysql.test.ts finds served by a MySQL 9.7 member.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Chart, Testing } from 'cdk8s';
import { stringify } from 'yaml';
import { EXPORTER_METRICS } from '../../constructs/mysql/exporter.js';
import {
  CONTROLLER_METRICS,
  DASHBOARD_METRICS,
  Recon8sDashboard,
  dashboardQueries,
  grafanaDashboard,
} from '../../constructs/operator/dashboard.js';
import { createControllerMetrics } from '../../lib/observability/controller-metrics.js';
import { Registry } from '../../lib/observability/metrics.js';
import { REPO_ROOT } from '../support/run.js';

/** Grafana's variables, as Grafana would substitute them, so that Prometheus can parse the query. */
function substituted(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '2m')
    .replaceAll('$__range', '3h')
    .replaceAll('$__interval', '30s')
    .replaceAll('$namespace', 'shop')
    .replaceAll('$cluster', 'db');
}

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
]);

/** The metric names a (parsed, valid) query selects: identifiers that are neither functions, keywords, label names nor durations. */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?/g)) {
    const [, name = '', call] = m;
    if (call || KEYWORDS.has(name)) continue;
    names.add(name);
  }
  return [...names];
}

describe('the shipped Grafana dashboard', function () {
  this.timeout(30 * 60_000);
  let promtool = '';
  let dir = '';

  before(function () {
    this.timeout(30 * 60_000);
    promtool = execFileSync('bash', [join(REPO_ROOT, 'test/prometheus/build-promtool.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
    dir = mkdtempSync(join(tmpdir(), 'recon8s-dashboard-'));
  });
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  it("has queries that all parse on Prometheus's engine (each as a recording rule, promtool check rules)", () => {
    const queries = dashboardQueries();
    const dashboard = grafanaDashboard() as { annotations: { list: { expr: string }[] } };
    const exprs = [...queries.map((q) => q.expr), ...dashboard.annotations.list.map((a) => a.expr)];
    const rules = exprs.map((expr, i) => ({ record: `recon8s_dashboard:query_${i}`, expr: substituted(expr) }));
    writeFileSync(join(dir, 'dashboard-rules.yaml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
    const r = spawnSync(promtool, ['check', 'rules', join(dir, 'dashboard-rules.yaml')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
    // And a query that does not parse is refused the same way (the check can fail).
    writeFileSync(
      join(dir, 'broken.yaml'),
      stringify({ groups: [{ name: 'x', rules: [{ record: 'x:y', expr: 'sum by (pod (up)' }] }] }),
    );
    assert.notEqual(spawnSync(promtool, ['check', 'rules', join(dir, 'broken.yaml')]).status, 0);
  });

  it('names only exported metrics: the controller registry and the metrics sidecar series proven on 9.7', () => {
    const allowed = new Set(DASHBOARD_METRICS);
    for (const { panel, expr } of dashboardQueries()) {
      const names = metricNames(substituted(expr));
      assert.ok(names.length > 0, `${panel}: no metric found in ${expr}`);
      for (const name of names) assert.ok(allowed.has(name), `${panel}: ${name} is not an exported metric (${expr})`);
    }
    // Each listed controller metric is registered by the controller itself.
    const registry = new Registry();
    createControllerMetrics(registry);
    const registered = new Set(registry.prom.getMetricsAsArray().map((m) => m.name));
    for (const name of CONTROLLER_METRICS) assert.ok(registered.has(name), `the controller registers no ${name}`);
    // The sidecar's names come from EXPORTER_METRICS alone (test/e2e/mysql.test.ts scrapes each).
    const exporter = new Set<string>([
      ...EXPORTER_METRICS.everyMember,
      ...EXPORTER_METRICS.primary,
      ...EXPORTER_METRICS.replicas,
    ]);
    for (const name of DASHBOARD_METRICS)
      assert.ok(registered.has(name) || exporter.has(name), `${name} is neither the controller's nor the exporter's`);
  });

  it('finds the metric names a query selects (not its functions, labels or keywords)', () => {
    assert.deepEqual(
      metricNames(
        'sum by (pod, operation) (rate(mysql_global_status_innodb_row_ops_total{namespace="a", cluster=~"b|c"}[2m])) / on (pod) group_left max(up) or vector(0)',
      ),
      ['mysql_global_status_innodb_row_ops_total', 'up'],
    );
    assert.deepEqual(metricNames('time() - recon8s_x > 26 * 3600'), ['recon8s_x']);
  });

  it('covers topology and roles, lag, writes, connections, backups, archive coverage and failovers', () => {
    const text = JSON.stringify(grafanaDashboard());
    for (const metric of [
      'recon8s_mysql_member_role',
      'mysql_slave_status_seconds_behind_source',
      'mysql_global_status_commands_total',
      'mysql_global_status_threads_connected',
      'recon8s_mysql_backup_last_success_timestamp_seconds',
      'recon8s_mysql_binlog_archived_until_timestamp_seconds',
      'recon8s_mysql_failovers_total',
    ])
      assert.ok(text.includes(metric), metric);
  });

  it('ships as a ConfigMap labelled grafana_dashboard: "1" holding the JSON', () => {
    const chart = new Chart(new App(), 'test');
    new Recon8sDashboard(chart, 'd', { namespace: 'monitoring', labels: { team: 'db' } });
    const [cm] = Testing.synth(chart) as {
      kind: string;
      metadata: { name: string; namespace: string; labels: Record<string, string> };
      data: Record<string, string>;
    }[];
    assert.equal(cm?.kind, 'ConfigMap');
    assert.deepEqual(cm.metadata.labels, { team: 'db', grafana_dashboard: '1' });
    assert.equal(cm.metadata.namespace, 'monitoring');
    const parsed = JSON.parse(cm.data['recon8s-mysql.json'] ?? '') as { uid: string; panels: unknown[] };
    assert.equal(parsed.uid, 'recon8s-mysql');
    assert.ok(parsed.panels.length > 10);
  });
});
