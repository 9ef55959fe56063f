// Every command of the CLI against what goes wrong before a cluster answers: a kubeconfig that cannot
// be used and a server that cannot be reached. Each must say `error: …` in one line, exit non-zero
// and print no stack trace. (A resource that does not exist needs an API server:
// test/integration/cli-mysql.test.ts.) Plus what helps a user find their way: --version, help of a
// command, a suggestion for a mistyped one, a quiet end when the reader of the output goes away.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suggestCommand } from '../../lib/cli/cli.js';
import { parseDuration } from '../../lib/cli/duration.js';
import { switchoverRefusal } from '../../lib/cli/mysql-command.js';
import { REPO_ROOT, runCliHere } from '../support/run.js';

const APP = `apiVersion: recon8s.dev/v1alpha1
kind: App
metadata: {name: web, namespace: shop}
spec: {image: nginx}
`;

// A token that must never be shown, in a file that is not YAML.
const BAD_KUBECONFIG = 'users: [{name: u, user: {token: s3cr3t-t0ken}\nnot: [valid\n';
// Port 1 on loopback: nothing listens there, the connection is refused at once.
const UNREACHABLE_KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: shop}}]
current-context: x
`;

const run = runCliHere;

describe('the recon8s CLI, when things go wrong', function () {
  this.timeout(30_000);
  let dir: string;
  let app: string;
  const kubeconfigs: Record<string, string> = {};
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'recon8s-cli-failures-'));
    app = join(dir, 'app.yaml');
    writeFileSync(app, APP);
    for (const [name, text] of Object.entries({ bad: BAD_KUBECONFIG, unreachable: UNREACHABLE_KUBECONFIG })) {
      kubeconfigs[name] = join(dir, `${name}.kubeconfig`);
      writeFileSync(kubeconfigs[name], text);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const commands: readonly (readonly string[])[] = [
    ['diff', '-f', 'APP'],
    ['apply', '-f', 'APP', '--timeout', '10s'],
    ['status', 'db'],
    ['switchover', 'db', '--timeout', '10s'],
    ['backup', 'db', '--timeout', '10s'],
    ['backups', 'db', '--timeout', '10s'],
    ['binlog', 'archive', 'db', '--timeout', '10s'],
  ];
  const failures: readonly { readonly kubeconfig: string; readonly says: RegExp }[] = [
    { kubeconfig: 'bad', says: /^error: no usable kubeconfig in .*bad\.kubeconfig: .*not valid YAML/ },
    {
      kubeconfig: 'unreachable',
      says: /^error: .*(cannot reach the API server at https:\/\/127\.0\.0\.1:1|ECONNREFUSED)/,
    },
  ];
  for (const command of commands)
    for (const failure of failures)
      it(`${command[0]} with a ${failure.kubeconfig} kubeconfig: one error line, exit 2, no stack trace`, async () => {
        const args = [
          ...command.map((a) => (a === 'APP' ? app : a)),
          '--kubeconfig',
          kubeconfigs[failure.kubeconfig] ?? '',
        ];
        const r = await run(args);
        assert.equal(r.code, 2, `${r.out}${r.err}`);
        assert.match(r.err, failure.says);
        assert.equal(r.err.trimEnd().split('\n').length, 1, r.err);
        assert.doesNotMatch(r.err, /\n\s+at /, 'a stack trace');
        assert.doesNotMatch(r.err, /s3cr3t/, 'the kubeconfig file itself is never shown');
      });

  it('controller with a bad kubeconfig: one error line, exit 2, no stack trace', async () => {
    const r = await run(['controller', '--kubeconfig', kubeconfigs.bad ?? '']);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /^error: .*not valid YAML/);
    assert.equal(r.err.trimEnd().split('\n').length, 1, r.err);
  });

  it('controller with an App allow-list entry it cannot read: one error line naming the flag and the value, exit 2', async () => {
    const r = await run(['controller', '--app-secrets', 'shop/web,Bad_Name', '--kubeconfig', kubeconfigs.bad ?? '']);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /^error: --app-secrets: "Bad_Name" is not an allow-list entry: expected "\*", "NAMESPACE\/\*"/);
  });

  it('prints its version with --version, -V and version', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V', 'version']) {
      const r = await run([flag]);
      assert.equal(r.code, 0);
      assert.equal(r.out, `recon8s ${version}\n`);
    }
  });

  it('prints the help of one command with "help <command>", the same as "<command> --help"', async () => {
    for (const command of [
      'render',
      'controller',
      'diff',
      'apply',
      'switchover',
      'status',
      'backup',
      'backups',
      'binlog',
    ]) {
      const help = await run(['help', command]);
      const own = await run([command, '--help']);
      assert.equal(help.code, 0, command);
      assert.match(help.out, new RegExp(`^Usage: recon8s ${command}\\b`), command);
      assert.equal(help.out, own.out, command);
    }
    const unknown = await run(['help', 'rendr']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /^error: unknown command "rendr"; did you mean "render"\?/);
  });

  it('suggests the command a typo meant, and nothing for what is far from every command', async () => {
    assert.equal(suggestCommand('rendr'), 'render');
    assert.equal(suggestCommand('swithcover'), 'switchover');
    assert.equal(suggestCommand('statsu'), 'status');
    assert.equal(suggestCommand('backupss'), 'backups');
    assert.equal(suggestCommand('deploy'), undefined);
    const r = await run(['aply', '-f', 'x']);
    assert.equal(r.code, 2);
    assert.match(r.err, /^error: unknown command "aply"; did you mean "apply"\?\n/);
    const far = await run(['deploy']);
    assert.match(far.err, /^error: unknown command "deploy"\n/);
  });

  it('reads every --timeout the same way: a duration (90s, 5m, 1h30m) or a bare number of seconds', async () => {
    assert.equal(parseDuration('90s'), 90_000);
    assert.equal(parseDuration('2m'), 120_000);
    assert.equal(parseDuration('120'), 120_000);
    for (const command of [
      ['apply', '-f', app],
      ['switchover', 'db'],
      ['backup', 'db'],
      ['backups', 'db'],
      ['binlog', 'archive', 'db'],
    ]) {
      const r = await run([...command, '--timeout', 'soon', '--kubeconfig', kubeconfigs.unreachable ?? '']);
      assert.equal(r.code, 2, command[0]);
      assert.match(r.err, /^error: --timeout must be a duration like 90s, 5m or 1h30m, got "soon"/, command[0]);
    }
  });

  it('refuses a switchover that cannot happen, before asking for it, and says why', () => {
    const cluster = (replicas: number) => ({
      spec: { replicas },
      status: {
        currentPrimary: 'db-0',
        members: ['db-0', 'db-1', 'db-2']
          .slice(0, replicas)
          .map((name) => ({ name, role: 'replica' as const, reachable: true })),
      },
    });
    assert.equal(
      switchoverRefusal('shop/db', cluster(1), undefined),
      'MySQLCluster shop/db has 1 member: there is no replica to switch over to',
    );
    assert.equal(
      switchoverRefusal('shop/db', cluster(3), 'db-0'),
      'db-0 is the primary of MySQLCluster shop/db already',
    );
    assert.equal(
      switchoverRefusal('shop/db', cluster(3), 'db-7'),
      'db-7 is not a member of MySQLCluster shop/db (its members: db-0, db-1, db-2)',
    );
    assert.equal(switchoverRefusal('shop/db', cluster(3), 'db-2'), undefined);
    assert.equal(switchoverRefusal('shop/db', cluster(3), undefined), undefined);
  });

  it('ends quietly when the reader of its output goes away (render | head)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${REPO_ROOT}lib/cli/main.ts`, 'render', '-f', '-'], {
      cwd: REPO_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // Enough Apps that the output outgrows the pipe's buffer after its reader has gone.
    child.stdin.end(Array.from({ length: 100 }, (_, i) => APP.replace('name: web', `name: web-${i}`)).join('---\n'));
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });
});
