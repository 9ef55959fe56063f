// How far along a member's clone is, from its donor's stage events (lib/mysql/clone-progress.ts): what
// status.members[].cloning says, and that a donor's answer is read against its grammar.
import assert from 'node:assert/strict';
import { cloneDonationsFrom, cloningByMember } from '../../lib/mysql/clone-progress.js';

describe('clone progress from the donor (status.members[].cloning)', () => {
  const row = (o: Record<string, unknown> = {}) => ({
    stage: 'stage/innodb/clone (file copy)',
    done: 140,
    total: 377,
    host: '10.244.1.7',
    ...o,
  });

  it('reads each stage in progress with its recipient address and MiB done of estimated', () => {
    assert.deepEqual(cloneDonationsFrom([row(), row({ stage: 'stage/innodb/clone (redo copy)', done: 2, total: 1 })]), [
      { recipientHost: '10.244.1.7', stage: 'file copy', doneMiB: 140, totalMiB: 377 },
      // An estimate below the work done (MySQL estimates the redo as it goes) never reads as less than done.
      { recipientHost: '10.244.1.7', stage: 'redo copy', doneMiB: 2, totalMiB: 2 },
    ]);
  });

  it('leaves out a row that does not read as a clone stage: another stage, a host or counts off the grammar', () => {
    assert.deepEqual(
      cloneDonationsFrom([
        row({ stage: 'stage/sql/altering table' }),
        row({ stage: "stage/innodb/clone (file copy'); DROP TABLE x; --)" }),
        row({ host: "10.0.0.1'; --" }),
        row({ host: null }),
        row({ done: -1 }),
        row({ total: 'many' }),
        row({ done: null }),
      ]),
      [],
    );
  });

  it('names the recipient by its pod address, never the donor itself nor an address no member has (a backup job)', () => {
    const members = [
      { name: 'ha-0', addresses: ['10.244.0.5'] },
      { name: 'ha-1', addresses: ['10.244.1.7', 'fd00::7'] },
      { name: 'ha-2', addresses: [] },
    ];
    const donations = cloneDonationsFrom([
      row({ host: 'fd00::7', done: 10, total: 20 }),
      row({ host: '10.244.0.5' }),
      row({ host: '10.244.9.9' }),
    ]);
    assert.deepEqual(
      [...cloningByMember('ha-0', donations, members)],
      [['ha-1', { from: 'ha-0', stage: 'file copy', doneMiB: 10, totalMiB: 20 }]],
    );
  });
});
