// The README's quickstart, run as written: its shell blocks are read out of README.md (every ```sh
// fence of the "## Quickstart" section, in order) and run in one bash session on the real node, so a
// quickstart that stops working fails the suite. What a reader would see is what is asserted: the
// first write lands on one member, and after the switchover the second lands on another while the
// first is still there.
//
// Run by the suite, the node is up already (the runner's, shared with the other end-to-end lanes): the
// quickstart's `up --node` then says so and changes nothing, and its `down --node` is not run (the
// test prints that it is not, and why). Run by hand with no node up, every step runs, `up` and `down`
// included: flock /tmp/recon8s-node.lock npx mocha test/e2e/quickstart.test.ts
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_RUN_DIR } from '../node/index.js';
import { REPO_ROOT } from '../support/run.js';
import { E2E_OPT_OUT, NODE_HOOK_TIMEOUT_MS } from './cluster.js';

/** The quickstart's shell blocks, in order: every ```sh fence between "## Quickstart" and the next "## ". */
export function quickstartBlocks(readme: string): string[] {
  const start = readme.search(/^## Quickstart$/m);
  if (start < 0) throw new Error('README.md has no "## Quickstart" section');
  const rest = readme.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
}

const NODE_UP = 'npm run cluster -- up --node';
const NODE_DOWN = 'npm run cluster -- down --node';
/** The node's kubeconfig exists exactly while a node is up (test/controlplane/cli.ts reads it the same way). */
const nodeIsUp = (): boolean => existsSync(join(NODE_RUN_DIR, 'pki', 'admin.kubeconfig'));

/**
 * The lines this test does not run, each with the reason it prints in their place. `npm ci`: the
 * checkout is installed already (the suite's own command is `npm ci && npm test`), and reinstalling
 * node_modules would pull them from under the lanes running beside this one, and this test. The node's
 * `down`: only when the node was up before the quickstart began — then it is not the quickstart's to
 * stop (the test runner's, shared with the other end-to-end lanes, or a developer's).
 */
function skipped(nodeWasUp: boolean): Map<string, string> {
  const skip = new Map([['npm ci', 'the checkout is installed already; a reinstall would break the running lanes']]);
  if (nodeWasUp) skip.set(NODE_DOWN, "the node was up before the quickstart began: it is not the quickstart's to stop");
  return skip;
}

/** The blocks as one bash script: each block announced, skipped lines replaced by a note saying why. */
function script(blocks: readonly string[], skip: ReadonlyMap<string, string>): string {
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const body = blocks.map((block, i) => {
    const lines = block.split('\n').map((line) => {
      const reason = skip.get(line.replace(/\s+#.*$/, '').trim());
      return reason === undefined ? line : `echo ${quote(`quickstart test: not running "${line.trim()}": ${reason}`)}`;
    });
    return [`echo '::quickstart block ${i + 1}::'`, ...lines].join('\n');
  });
  return ['set -euo pipefail', 'set -x', `cd ${quote(REPO_ROOT)}`, ...body].join('\n');
}

/** Runs `text` in bash from the checkout; its output goes to the test's log as it comes, and is returned. */
function bash(text: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    // The quickstart's own KUBECONFIG comes from its `cluster env` line, not from the runner's.
    const env = { ...process.env };
    delete env.KUBECONFIG;
    const child = spawn('bash', ['-c', text], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let printed = 0;
    /** Whole lines to the log, prefixed; the rest once its line is complete. */
    const print = (all: boolean): void => {
      const end = all ? out.length : out.lastIndexOf('\n') + 1;
      if (end <= printed) return;
      process.stdout.write(out.slice(printed, end).replace(/^(?=.)/gm, 'quickstart| '));
      printed = end;
    };
    const keep = (chunk: Buffer): void => {
      out += chunk.toString();
      print(false);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => {
      print(true);
      resolve({ code, out });
    });
  });
}

interface Row {
  readonly id: number;
  readonly note: string;
  readonly writtenOn: string;
}

/** The rows of shop.orders a block printed (`mysql -N`: tab-separated). */
function rows(output: string): Row[] {
  return [...output.matchAll(/^(\d+)\t(\w+)\t(db-\d+)$/gm)].map((m) => ({
    id: Number(m[1]),
    note: m[2] ?? '',
    writtenOn: m[3] ?? '',
  }));
}

describe("the README's quickstart, run as written on the real node", function () {
  const blocks = quickstartBlocks(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'));
  let nodeWasUp = false;
  let ran = false;

  before(function () {
    if (E2E_OPT_OUT) {
      // As for every end-to-end test (test/e2e/cluster.ts): only by the developer's explicit choice.
      if (process.env.CI === 'true')
        throw new Error('RECON8S_E2E=skip is set in CI (CI=true): the end-to-end tests must run there; unset it.');
      this.skip();
    }
  });

  after(async function () {
    this.timeout(10 * 60_000);
    if (!ran) return;
    // Whatever a failed run left behind: what its teardown block would have removed.
    if (!nodeIsUp()) return;
    const cleanup = [
      'eval "$(npm run --silent cluster -- env --node)"',
      'kubectl delete namespace shop recon8s-system --ignore-not-found --timeout=5m || true',
      ...(nodeWasUp ? [] : [NODE_DOWN]),
    ].join('\n');
    await bash(cleanup);
  });

  it('has the steps a newcomer needs: the node up, the operator from dist/install.yaml, a write, a switchover, teardown', () => {
    const all = blocks.join('\n');
    for (const step of [
      NODE_UP,
      'kubectl apply -f dist/install.yaml',
      'kind: MySQLCluster',
      'kind: App',
      'INSERT INTO shop.orders',
      'npm run recon8s -- switchover db -n shop',
      'kubectl delete namespace shop',
      NODE_DOWN,
    ])
      assert.ok(all.includes(step), `the quickstart has no "${step}"`);
  });

  it('takes a write, moves the primary, and takes a write on the new primary, keeping the first', async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS + 30 * 60_000);
    nodeWasUp = nodeIsUp();
    const skip = skipped(nodeWasUp);
    for (const [line, reason] of skip) console.log(`quickstart test: will not run "${line}": ${reason}`);
    ran = true;
    const { code, out } = await bash(script(blocks, skip));
    assert.equal(code, 0, 'the quickstart failed (its output is above, each line prefixed "quickstart| ")');

    const written = rows(out);
    const first = written.filter((r) => r.note === 'first');
    const second = written.filter((r) => r.note === 'second');
    assert.ok(first.length > 0 && second.length > 0, `no rows printed:\n${out.slice(-3000)}`);
    // The last SELECT shows both rows; the first was written before the switchover, on the old primary.
    const last = written.slice(-2);
    assert.deepEqual(
      last.map((r) => r.note),
      ['first', 'second'],
    );
    const [before, after] = last as [Row, Row];
    assert.equal(before.writtenOn, first[0]?.writtenOn, 'the first row changed');
    assert.notEqual(after.writtenOn, before.writtenOn, 'the second write was not on a new primary');
    assert.match(out, /mysqlcluster\.recon8s\.dev\/db condition met/);
    assert.match(out, /app\.recon8s\.dev\/client condition met/);
    // The App wrote as an account of its own (spec.database), never as root.
    assert.match(out, /r8s_client_[0-9a-f]{10}@%$/m);
  });
});
