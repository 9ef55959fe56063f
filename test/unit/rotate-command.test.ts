// `recon8s rotate-credentials app|mysqlcluster NAME` (lib/cli/rotate-command.ts): what it refuses before any
// request, the token it records, and what --wait prints of the status (never a password: it has none).
// Against an API server: test/integration/cli-mysql.test.ts.
import assert from 'node:assert/strict';
import { main } from '../../lib/cli/cli.js';
import { accountsOf, rotationProgress, rotationRefusal, rotationToken } from '../../lib/cli/rotate-command.js';
import { sink } from './support/sink.js';

describe('recon8s rotate-credentials', () => {
  it('refuses a command line that is not "app NAME" or "mysqlcluster NAME", or an account that is not one of the cluster’s, before any request', async () => {
    for (const [args, message] of [
      [['rotate-credentials'], /needs "app NAME" or "mysqlcluster NAME"/],
      [['rotate-credentials', 'app'], /needs "app NAME"/],
      [['rotate-credentials', 'app', 'a', 'b'], /needs "app NAME"/],
      [['rotate-credentials', 'secret', 'web'], /takes "app NAME" or "mysqlcluster NAME", got "secret"/],
      [
        ['rotate-credentials', 'mysqlcluster', 'db', '--account', 'exporter'],
        /--account takes root, replication, admin, clone, backup; got "exporter"/,
      ],
      [['rotate-credentials', 'app', 'web', '--account', 'root'], /--account is for a MySQLCluster/],
      [['rotate-credentials', 'app', 'web', '--timeout', 'soon'], /timeout|duration/i],
    ] as const) {
      const out = sink();
      const err = sink();
      assert.equal(await main([...args], out.stream, err.stream), 2, args.join(' '));
      assert.match(err.text(), message, args.join(' '));
      assert.match(err.text(), /Usage: recon8s rotate-credentials app NAME/);
    }
  });

  it('prints its usage with --help and through "recon8s help rotate-credentials"', async () => {
    for (const args of [
      ['rotate-credentials', '--help'],
      ['help', 'rotate-credentials'],
    ]) {
      const out = sink();
      assert.equal(await main(args, out.stream, sink().stream), 0);
      assert.match(out.text(), /Usage: recon8s rotate-credentials app NAME/);
    }
  });

  it('a token is the time and random digits: new for each request, sortable, a valid annotation value', () => {
    const t = rotationToken(new Date('2026-11-27T05:00:01.234Z'), () => 'a1b2c3');
    assert.equal(t, '2026-11-27t050001234z-a1b2c3');
    assert.notEqual(rotationToken(new Date(0)), rotationToken(new Date(0)));
  });

  it('refuses an App without a database binding', () => {
    assert.match(rotationRefusal('shop/web', { spec: {} }) ?? '', /no database binding/);
    assert.equal(rotationRefusal('shop/web', { spec: { database: { cluster: 'db', name: 'shop' } } }), undefined);
  });

  it('--wait prints each phase once, ignores the status of an earlier request, and ends when its token completed', () => {
    assert.deepEqual(rotationProgress('T2', { requested: 'T1', completed: 'T1' }, undefined), { done: false });
    const staging = rotationProgress(
      'T2',
      { requested: 'T2', completed: 'T1', phase: 'Staging', message: 'x' },
      undefined,
    );
    assert.deepEqual(staging, { line: 'Staging: x', phase: 'Staging', done: false });
    assert.deepEqual(rotationProgress('T2', { requested: 'T2', phase: 'Staging', message: 'x' }, 'Staging'), {
      done: false,
      phase: 'Staging',
    });
    assert.equal(
      rotationProgress('T2', { requested: 'T2', phase: 'RollingPods', message: 'y' }, 'Staging').line,
      'RollingPods: y',
    );
    const done = rotationProgress('T2', { requested: 'T2', completed: 'T2' }, 'Discarding');
    assert.equal(done.done, true);
    assert.match(done.line ?? '', /^Completed/);
  });

  it('--wait stops at a refused rotation of the cluster accounts', () => {
    const refused = rotationProgress(
      'T1',
      { requested: 'T1', phase: 'Refused', message: 'the Secret is yours' },
      undefined,
    );
    assert.deepEqual(refused, { line: 'Refused: the Secret is yours', phase: 'Refused', done: false, refused: true });
  });

  it('--account: every account when none is named, in their order otherwise', () => {
    assert.deepEqual(accountsOf(undefined), ['root', 'replication', 'admin', 'clone', 'backup']);
    assert.deepEqual(accountsOf(['backup', 'admin', 'root']), ['root', 'admin', 'backup']);
  });
});
