/*
 * `npm test`: the whole suite, as lanes that run side by side (test/README.md has the tiers and their
 * times). The end-to-end tests mostly wait (on pods, on mysqld, on failover timers) and the unit and
 * integration tests mostly compute, so on two cores running them together takes little more than the
 * longer of the two. Each lane is its own mocha process. An integration lane starts its control plane
 * on first use (test/hooks.ts stops it); the end-to-end lanes share one real node, which this runner
 * starts before them and stops after the last (its watchdog takes it down should this process die).
 *
 *   tsx test/run.ts                 checks, unit + integration, e2e, and the builds nothing waits for yet
 *   tsx test/run.ts unit [more...]  one or more tiers: checks, unit, integration, e2e
 *
 * Every lane runs to its end whatever the others do; the run fails when any lane failed. The end of the
 * output repeats each lane's failing tests, then a table of the lanes, and its last line is the total,
 * "N passed, N failed", for whoever reads only the tail (as CI's record does).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { E2E_OPT_OUT, NODE_HANDLE_ENV } from './e2e/cluster.js';
import type { NodeCluster } from './node/index.js';
import { nodeHandle, startNodeCluster } from './node/index.js';
import { VERSITYGW_VERSION } from './s3/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'node_modules', '.bin');

interface Lane {
  readonly name: string;
  /** Commands run one after another; the lane stops at the first that fails. */
  readonly commands: readonly (readonly string[])[];
  /** Mocha lanes: their summary lines are counted. */
  readonly mocha?: boolean;
  /** End-to-end lanes: they share one real node, which this runner starts (and stops after them). */
  readonly node?: boolean;
}

const mocha = (...globs: string[]): string[] => [join(BIN, 'mocha'), ...globs];
const e2e = (name: string, ...files: string[]): Lane => ({
  name,
  commands: [mocha(...files.map((f) => `test/e2e/${f}.test.ts`))],
  mocha: true,
  node: true,
});

/**
 * The end-to-end files, in lanes that run at once on the one node: each file works in namespaces of
 * its own. Balanced by their measured times (test/README.md), the longest first.
 */
const E2E_LANES: readonly Lane[] = [
  e2e('e2e-backup', 'mysql-backup'),
  e2e('e2e-ha', 'mysql-ha', 'app'),
  e2e('e2e-lifecycle', 'mysql-lifecycle', 'mysql-restart'),
  e2e('e2e-mysql', 'mysql', 'example', 'node'),
  // The operator installed as users install it, one install at a time: install.yaml and the README's
  // quickstart both use the namespace recon8s-system and the ClusterRoles "recon8s", and the Helm
  // chart refuses a release beside install.test.ts's operator, which watches every namespace.
  e2e('e2e-operator', 'install', 'quickstart', 'install-helm'),
];

/**
 * How many end-to-end lanes run on the node at once; the next starts when one ends, in E2E_LANES's order.
 * On this machine kind (2 shared cores) a second e2e lane beside the unit and integration lanes made
 * clusters of three miss their waits on 26-27 Nov 2026, when every probe started bash and a mysql
 * client and every primary's sidecar logged in to each peer every second; so one at a time beside
 * them, for a while. Since the members' agent removed those, two at a time throughout passed (28 Nov,
 * a whole warm run in 12 min 36 s instead of 16 min 29 s, every e2e test green): the e2e lanes are the
 * longer chain, and the wait-bound e2e work fits beside the CPU-bound unit and integration lanes.
 */
const E2E_AT_ONCE = { besideOtherLanes: 2, alone: 2 } as const;

/**
 * Runs `work` over `items`, starting them in order while fewer than `limit()` run; `limit` is asked
 * again whenever an item ends and whenever `changed` fires. Results in input order.
 */
function inPool<T, R>(
  items: readonly T[],
  limit: () => number,
  work: (item: T) => Promise<R>,
  changed: EventEmitter,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  let running = 0;
  return new Promise((resolve, reject) => {
    const fill = (): void => {
      while (next < items.length && running < limit()) {
        const i = next++;
        running++;
        work(items[i] as T).then((r) => {
          results[i] = r;
          running--;
          fill();
        }, reject);
      }
      if (next === items.length && running === 0) {
        changed.off('change', fill);
        resolve(results);
      }
    };
    changed.on('change', fill);
    fill();
  });
}

/** Whether lanes off the node are still running, and an event each time that changes. */
class OtherLanes extends EventEmitter {
  running = 0;
  track<T>(lane: Promise<T>): Promise<T> {
    this.running++;
    return lane.finally(() => {
      this.running--;
      this.emit('change');
    });
  }
}

/**
 * The NetworkPolicy file runs kube-router's policy controller, which enforces every NetworkPolicy on the
 * node, the other lanes' MySQLClusters' included (whose tests reach members from pods no policy
 * admits, e.g. a restore pod): so alone, once every other end-to-end lane is done.
 */
const NETWORK_POLICY: Lane = e2e('e2e-network-policy', 'mysql-network-policy');

/** The node's own teardown: it stops the node, so it runs once every other end-to-end lane is done. */
const NODE_TEARDOWN: Lane = e2e('e2e-teardown', 'teardown/node-teardown');

/**
 * The multi-node rig (test/node/nodes.sh): a control plane and worker nodes of its own, which use the
 * host's bridge, routes and sysctls as the single node does, so it starts once that node is down.
 */
const NODES_RIG: Lane = {
  name: 'e2e-nodes',
  // The rig's own checks (web only, three nodes), then MySQL's node faults on a four-node rig of their own:
  // one MySQLCluster, every fault in sequence in the one file.
  commands: [mocha('test/e2e/nodes.test.ts'), mocha('test/e2e/mysql-nodes.test.ts')],
  mocha: true,
};

/**
 * The integration files that need no control plane (real mysqld in a sandbox, the images, the packages
 * as users install them, helm, the S3 server): a lane of their own, beside the ones that use it.
 */
const HOST_FILES = [
  'images',
  'mysql-real',
  'mysql-rotation',
  'package-cdk8s-template',
  'package-controller',
  'package-crd-import',
  'package-docker',
  'package',
  's3-store',
  // Last: they use binaries built in the background (helm, promtool), which a cold run is still building
  // while the files above run.
  'helm-chart',
  'alert-rules',
].map((f) => `test/integration/${f}.test.ts`);
const API_FILES = ['test/integration/**/*.test.ts', ...HOST_FILES.map((f) => `--ignore=${f}`)];

/**
 * Type check and lint, at lower CPU priority: nothing waits on them, and they take minutes of CPU that a
 * cold run's Kubernetes build (which every integration and end-to-end test waits on) and the timed
 * waits of the tests need more.
 */
const CHECKS: Lane = {
  name: 'checks',
  commands: [
    ['nice', '-n', '10', 'npm', 'run', '--silent', 'typecheck'],
    ['nice', '-n', '10', 'npm', 'run', '--silent', 'lint'],
  ],
};
const INTEGRATION_HOST: Lane = { name: 'integration-host', commands: [mocha(...HOST_FILES)], mocha: true };

const LANES: Readonly<Record<string, readonly Lane[]>> = {
  checks: [CHECKS],
  unit: [{ name: 'unit', commands: [mocha('test/unit/**/*.test.ts')], mocha: true }],
  integration: [{ name: 'integration-api', commands: [mocha(...API_FILES)], mocha: true }, INTEGRATION_HOST],
  e2e: E2E_LANES,
  // The whole run: the unit tests in the same process as the integration files that use the shared
  // control plane, which starts while they run.
  all: [
    ...E2E_LANES,
    { name: 'unit+integration-api', commands: [mocha('test/unit/**/*.test.ts', ...API_FILES)], mocha: true },
    INTEGRATION_HOST,
    CHECKS,
  ],
};

/**
 * Binaries only some tests need, built once per machine (flock'd scripts: a test that needs one
 * meanwhile waits for this build instead of starting its own). At low CPU priority: the control plane
 * and the node, which every later test waits on, build first. In the order they are needed: the
 * end-to-end lanes start first with the S3 server (backups) and Prometheus (HA, and the backup lane's
 * last test); promtool shares Prometheus's module graph (most of its packages are compiled by then),
 * and it and helm serve the integration files that run last in their lane and the last end-to-end
 * file (install-helm).
 */
const BACKGROUND_BUILDS: readonly (readonly string[])[] = [
  ['nice', '-n', '15', 'bash', join(ROOT, 'test/s3/build-versitygw.sh'), VERSITYGW_VERSION],
  // cert-manager's controllers and CRDs (test/integration/mysql-cert-manager.test.ts, mid-lane).
  ['nice', '-n', '15', 'bash', join(ROOT, 'test/cert-manager/build-cert-manager.sh')],
  ['nice', '-n', '15', 'bash', join(ROOT, 'test/prometheus/build-prometheus.sh')],
  ['nice', '-n', '15', 'bash', join(ROOT, 'test/prometheus/build-promtool.sh')],
  ['nice', '-n', '15', 'bash', join(ROOT, 'test/helm/build-helm.sh')],
];

interface Outcome {
  readonly lane: string;
  readonly ok: boolean;
  readonly seconds: number;
  readonly passing: number;
  readonly failing: number;
  readonly pending: number;
  readonly failed?: string;
  /** Mocha's account of the failing tests (from "N failing" on), repeated at the end of the run. */
  readonly failures?: string;
}

/** Lines of one lane's failures repeated at the end: CI shows only the tail of the output. */
const RECAP_LINES = 60;

/** Mocha's epilogue from its "N failing" line on, or undefined when nothing failed. */
function failureAccount(text: string): string | undefined {
  const lines = stripVTControlCharacters(text).split('\n');
  const start = lines.findIndex((l) => /^\s*\d+ failing\b/.test(l));
  if (start < 0) return undefined;
  const account = lines.slice(start).filter((l, i, all) => l.trim() !== '' || all[i - 1]?.trim() !== '');
  return account.length > RECAP_LINES
    ? [
        ...account.slice(0, RECAP_LINES),
        `  … ${account.length - RECAP_LINES} more lines above, in the lane's output`,
      ].join('\n')
    : account.join('\n');
}

const count = (text: string, word: string): number =>
  [...stripVTControlCharacters(text).matchAll(new RegExp(`^\\s*(\\d+) ${word}\\b`, 'gm'))].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );

/** Processes still running, killed when the run ends (a background build nothing waited for). */
const backgroundBuilds = new Set<ChildProcess>();

/** Runs one command; its lines go to stdout/stderr, prefixed when several lanes share the terminal. */
function runCommand(
  argv: readonly string[],
  prefix: string,
  keep: (line: string) => void,
  background = false,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  return new Promise((resolve) => {
    const [command = '', ...args] = argv;
    const child = spawn(command, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Read through a pipe, mocha would drop its colours: a terminal still gets them.
      env: process.stdout.isTTY ? { ...env, FORCE_COLOR: '1' } : env,
      // A background build gets a process group of its own, so that the end of the run stops the whole
      // of it (bash, go, compilers); lanes stay in ours, so that ^C reaches them.
      detached: background,
    });
    if (background) {
      backgroundBuilds.add(child);
      child.on('exit', () => backgroundBuilds.delete(child));
    }
    const forward = (stream: NodeJS.ReadableStream | null, to: NodeJS.WriteStream): void => {
      let rest = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          keep(line);
          to.write(`${prefix}${line}\n`);
        }
      });
      stream?.on('end', () => {
        if (rest !== '') {
          keep(rest);
          to.write(`${prefix}${rest}\n`);
        }
      });
    };
    forward(child.stdout, process.stdout);
    forward(child.stderr, process.stderr);
    child.on('error', (e) => {
      process.stderr.write(`${prefix}could not start ${command}: ${e.message}\n`);
      resolve(127);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

async function runLane(lane: Lane, prefixed: boolean, env: NodeJS.ProcessEnv = process.env): Promise<Outcome> {
  const started = performance.now();
  let text = '';
  const keep = (line: string): void => {
    if (lane.mocha) text += `${line}\n`;
  };
  let failed: string | undefined;
  for (const argv of lane.commands) {
    const code = await runCommand(argv, prefixed ? `${lane.name} │ ` : '', keep, false, env);
    if (code !== 0) {
      failed = `${argv.map((a) => a.replace(`${BIN}/`, '')).join(' ')} exited with ${code}`;
      break;
    }
  }
  const failures = failureAccount(text);
  return {
    lane: lane.name,
    ok: failed === undefined,
    seconds: (performance.now() - started) / 1000,
    passing: count(text, 'passing'),
    failing: count(text, 'failing'),
    pending: count(text, 'pending'),
    ...(failed ? { failed } : {}),
    ...(failures ? { failures } : {}),
  };
}

/**
 * Starts the node, runs the end-to-end lanes on it together, then its teardown test, and stops it
 * whatever happened. The node's watchdog takes it down should this process die.
 */
async function runOnNode(lanes: readonly Lane[], prefixed: boolean, others: OtherLanes): Promise<Outcome[]> {
  // The developer's opt-out (the lanes report their tests pending, or fail in CI): no node to start.
  if (E2E_OPT_OUT) return Promise.all(lanes.map((lane) => runLane(lane, prefixed)));
  const started = performance.now();
  let node: NodeCluster;
  try {
    node = await startNodeCluster({
      onOutput: (line) => process.stderr.write(`${prefixed ? 'node │ ' : ''}${line}\n`),
    });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    process.stderr.write(`${why}\n`);
    const seconds = (performance.now() - started) / 1000;
    return [
      {
        lane: 'node',
        ok: false,
        seconds,
        passing: 0,
        failing: 0,
        pending: 0,
        failed: `the node did not start: ${why}`,
      },
    ];
  }
  const dir = mkdtempSync(join(tmpdir(), 'recon8s-test-run-'));
  let outcomes: Outcome[];
  try {
    const handleFile = join(dir, 'node.json');
    writeFileSync(handleFile, JSON.stringify(nodeHandle(node)));
    const env = { ...process.env, [NODE_HANDLE_ENV]: handleFile };
    outcomes = await inPool(
      lanes,
      () => (others.running > 0 ? E2E_AT_ONCE.besideOtherLanes : E2E_AT_ONCE.alone),
      (lane) => runLane(lane, prefixed, env),
      others,
    );
    outcomes.push(await runLane(NETWORK_POLICY, prefixed, env));
    outcomes.push(await runLane(NODE_TEARDOWN, prefixed, env));
  } finally {
    await node.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  // In the whole run and the e2e lane set: once the single node is down.
  if (lanes.some((l) => E2E_LANES.includes(l))) outcomes.push(await runLane(NODES_RIG, prefixed));
  return outcomes;
}

function duration(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} min ${whole % 60} s`;
}

async function main(): Promise<number> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((a) => !(a in LANES));
  if (unknown.length > 0) {
    process.stderr.write(`unknown lane(s): ${unknown.join(', ')}; expected some of ${Object.keys(LANES).join(', ')}\n`);
    return 2;
  }
  const whole = asked.length === 0;
  const lanes = (whole ? ['all'] : asked).flatMap((name) => LANES[name] ?? []);
  const onNode = lanes.filter((l) => l.node);
  const prefixed = lanes.length > 1 || onNode.length > 0;
  const started = performance.now();
  if (whole)
    void (async () => {
      for (const build of BACKGROUND_BUILDS) await runCommand(build, 'builds │ ', () => undefined, true);
    })();
  const otherLanes = new OtherLanes();
  // Counted before the node's lanes are scheduled: they run one at a time until these have ended.
  const others = lanes.filter((l) => !l.node).map((lane) => otherLanes.track(runLane(lane, prefixed)));
  const [nodeOutcomes, ...otherOutcomes] = await Promise.all([
    onNode.length > 0 ? runOnNode(onNode, prefixed, otherLanes) : Promise.resolve([]),
    ...others,
  ]);
  const outcomes = [...(otherOutcomes as Outcome[]), ...(nodeOutcomes as Outcome[])];

  if (prefixed) for (const o of outcomes) if (o.failures) process.stdout.write(`\n${o.lane}, again:\n${o.failures}\n`);
  if (prefixed) {
    process.stdout.write(`\nlanes (wall ${duration((performance.now() - started) / 1000)}):\n`);
    for (const o of outcomes)
      process.stdout.write(
        `  ${o.lane.padEnd(17)} ${o.ok ? 'ok    ' : 'FAILED'} ${duration(o.seconds).padEnd(13)}` +
          `${o.lane === 'checks' || o.lane === 'node' ? '' : `${o.passing} passing, ${o.failing} failing, ${o.pending} pending`}` +
          `${o.failed ? `  (${o.failed})` : ''}\n`,
      );
  }
  const passed = outcomes.reduce((n, o) => n + o.passing, 0);
  const failedTests = outcomes.reduce((n, o) => n + o.failing, 0);
  const broken = outcomes.filter((o) => !o.ok);
  // A lane that failed without a failing test (a check, a crash) still counts as one failure.
  const failed = failedTests + broken.filter((o) => o.failing === 0).length;
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  for (const child of backgroundBuilds) if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
  return broken.length === 0 ? 0 : 1;
}

process.exitCode = await main();
