import assert from 'node:assert/strict';
import { main } from '../../lib/cli/cli.js';
import { formatTopology } from '../../lib/cli/mysql-command.js';
import { sink } from './support/sink.js';

describe('recon8s switchover and status (MySQLCluster)', () => {
  it('prints the topology: the primary, each member, errant transactions and the conditions not as expected', () => {
    const text = formatTopology('shop/db', {
      currentPrimary: 'db-1',
      members: [
        {
          name: 'db-0',
          role: 'none',
          reachable: true,
          writable: false,
          replicating: false,
          errantTransactions: 'aa:1',
        },
        { name: 'db-1', role: 'primary', reachable: true, writable: true },
        { name: 'db-2', role: 'none', reachable: false, message: 'connect ETIMEDOUT' },
      ],
      conditions: [
        {
          type: 'Degraded',
          status: 'True',
          reason: 'ErrantTransactions',
          message: 'member db-0 holds transactions the primary lacks',
          lastTransitionTime: '2026-11-22T00:00:00Z',
        },
      ],
    });
    assert.equal(
      text,
      [
        'MySQLCluster shop/db: primary db-1',
        'MEMBER  ROLE     ANSWERS  WRITABLE  REPLICATING  NOTE',
        'db-0    none     yes      no        no           errant: aa:1',
        'db-1    primary  yes      yes       -',
        'db-2    none     no       -         -            connect ETIMEDOUT',
        '',
        'Degraded=True ErrantTransactions: member db-0 holds transactions the primary lacks',
        '',
      ].join('\n'),
    );
    assert.match(formatTopology('shop/new', {}), /^MySQLCluster shop\/new: primary \(none yet\)\n/);
  });

  it('refuses a command line without exactly one NAME, or a --to that is not a pod name, before any request', async () => {
    for (const args of [
      ['switchover'],
      ['status', 'a', 'b'],
      ['switchover', 'db', '--to', 'Not_A_Pod'],
      ['status', 'db', '--to', 'db-1'],
    ]) {
      const out = sink();
      const err = sink();
      assert.equal(await main(args, out.stream, err.stream), 2, args.join(' '));
      assert.match(
        err.text(),
        /^error: (switchover|status) needs exactly one MySQLCluster NAME|^error: --to must be a pod name, got "Not_A_Pod"|^error: status takes no --to/,
      );
      assert.match(err.text(), /Usage: recon8s (switchover|status) NAME/);
    }
  });
});
