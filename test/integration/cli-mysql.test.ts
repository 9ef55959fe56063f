// The MySQLCluster commands of the CLI against a real API server, with no controller running: what they
// say about a resource that does not exist, a switchover that cannot happen (refused at once, never
// asked for), one nobody answers (withdrawn when the command gives up), and the request of a rotation
// of the cluster's own accounts.
import assert from 'node:assert/strict';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { runCliHere } from '../support/run.js';
import { freshNamespace, useSharedControlPlane } from './cluster.js';
import { installCrds } from './support/controller.js';

const GROUP = { group: 'recon8s.dev', version: 'v1alpha1', plural: 'mysqlclusters' };
const SWITCHOVER_ANNOTATION = 'recon8s.dev/switchover';

describe('recon8s switchover, status, backup, backups and rotate-credentials (real API server, no controller)', function () {
  this.timeout(60_000);
  const controlPlane = useSharedControlPlane();
  let ns: string;
  let custom: CustomObjectsApi;

  const run = (args: readonly string[]) =>
    runCliHere([...args, '-n', ns, '--kubeconfig', controlPlane().kubeconfigPath]);
  const create = (name: string, replicas: number, spec: Record<string, unknown> = {}) =>
    custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: ns,
      body: {
        apiVersion: 'recon8s.dev/v1alpha1',
        kind: 'MySQLCluster',
        metadata: { name },
        spec: { replicas, ...spec },
      },
    });
  const annotations = async (name: string) =>
    (
      (await custom.getNamespacedCustomObject({ ...GROUP, namespace: ns, name })) as {
        metadata: { annotations?: Record<string, string> };
      }
    ).metadata.annotations ?? {};

  before(async function () {
    this.timeout(120_000);
    await installCrds(controlPlane());
    ns = await freshNamespace('cli-mysql');
    custom = controlPlane().kubeConfig().makeApiClient(CustomObjectsApi);
  });

  for (const command of [['status'], ['switchover', '--timeout', '5s'], ['backup'], ['backups']])
    it(`${command[0]} of a MySQLCluster that does not exist: one error line naming it, exit 2`, async () => {
      const [verb = '', ...options] = command;
      const r = await run([verb, 'nowhere', ...options]);
      assert.equal(r.code, 2, `${r.out}${r.err}`);
      assert.match(
        r.err,
        new RegExp(`^error: .*(MySQLCluster ${ns}/nowhere does not exist|MySQLCluster nowhere does not exist there)`),
      );
      assert.equal(r.err.trimEnd().split('\n').length, 1, r.err);
    });

  it('refuses at once the switchover of a one-member cluster, saying why, and asks for nothing', async () => {
    await create('single', 1);
    // The default timeout (2m) is longer than this test's: only a refusal before any request ends it in time.
    const r = await run(['switchover', 'single']);
    assert.equal(r.code, 1, `${r.out}${r.err}`);
    assert.equal(r.err, `Refused: MySQLCluster ${ns}/single has 1 member: there is no replica to switch over to\n`);
    assert.equal((await annotations('single'))[SWITCHOVER_ANNOTATION], undefined);
  });

  it('withdraws a switchover request nobody answered when it gives up, and says so', async () => {
    await create('unanswered', 3);
    const r = await run(['switchover', 'unanswered', '--timeout', '2s']);
    assert.equal(r.code, 1, `${r.out}${r.err}`);
    assert.match(r.out, /^requested a switchover of MySQLCluster .*\/unanswered/);
    assert.equal(r.err, 'no outcome within 2s: is the recon8s controller running? The request was withdrawn.\n');
    assert.equal((await annotations('unanswered'))[SWITCHOVER_ANNOTATION], undefined);
  });

  it("records a rotation of the cluster's own accounts as an annotation with a fresh token, the accounts named when not all", async () => {
    await create('rotating', 3);
    const all = await run(['rotate-credentials', 'mysqlcluster', 'rotating']);
    assert.equal(all.code, 0, `${all.out}${all.err}`);
    const token = /\((\S+)\)\n$/.exec(all.out)?.[1] ?? '';
    assert.match(
      all.out,
      /^requested a rotation of the accounts of MySQLCluster .*\/rotating \(root, replication, admin, clone, backup\)/,
    );
    assert.equal((await annotations('rotating'))['recon8s.dev/rotate-credentials'], token);
    const some = await run([
      'rotate-credentials',
      'mysqlcluster',
      'rotating',
      '--account',
      'replication',
      '--account',
      'admin',
    ]);
    assert.equal(some.code, 0, `${some.out}${some.err}`);
    assert.match((await annotations('rotating'))['recon8s.dev/rotate-credentials'] ?? '', /^replication,admin@\S+$/);
    assert.notEqual((await annotations('rotating'))['recon8s.dev/rotate-credentials'], `replication,admin@${token}`);
  });

  it('refuses to rotate the passwords of a Secret the spec names (recon8s only reads it), and asks for nothing', async () => {
    await create('byo', 3, { credentialsSecretName: 'vault-synced' });
    const r = await run(['rotate-credentials', 'mysqlcluster', 'byo']);
    assert.equal(r.code, 1, `${r.out}${r.err}`);
    assert.match(r.err, /^Refused: MySQLCluster .*\/byo takes its passwords from Secret vault-synced/);
    assert.equal((await annotations('byo'))['recon8s.dev/rotate-credentials'], undefined);
  });
});
