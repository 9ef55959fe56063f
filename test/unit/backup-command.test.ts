import assert from 'node:assert/strict';
import type { V1CronJob } from '@kubernetes/client-node';
import { describeArchive, formatBackups, jobFrom } from '../../lib/cli/backup-command.js';
import { synthMySQL } from './support/mysql-synth.js';
import { runCliHere } from '../support/run.js';

/** A server UUID, as GTID sets name their servers. */
const U = '3e11fa47-71ca-11e1-9e33-c80aa9429562';

describe('recon8s backups', () => {
  it('lists the backups oldest first, and the span a point-in-time restore can reach', () => {
    const listing = [
      `backup\t{"name":"20261123T030000Z","endTime":"2026-11-23T03:00:40Z","sizeBytes":1048576,"gtidSet":"${U}:1-10"}`,
      `backup\t{"name":"20261124T030000Z","endTime":"2026-11-24T03:00:42Z","method":"physical","sizeBytes":2048,"gtidSet":"${U}:1-77"}`,
      `binlog\t{"archivedGtids":"${U}:1-90","coveredUntil":"2026-11-24T10:05:00Z"}`,
      '',
    ].join('\n');
    assert.equal(
      formatBackups(listing),
      [
        'BACKUP            ENDED                 METHOD    SIZE     GTID SET',
        `20261123T030000Z  2026-11-23T03:00:40Z  logical   1.0 MiB  ${U}:1-10`,
        `20261124T030000Z  2026-11-24T03:00:42Z  physical  2.0 KiB  ${U}:1-77`,
        '',
        'binary logs archived until 2026-11-24T10:05:00Z: spec.restore.pointInTime may be any time from 2026-11-23T03:00:40Z to 2026-11-24T10:05:00Z (whole seconds, UTC)',
        '',
      ].join('\n'),
    );
  });

  it('says no point in time is reachable yet when the archive last ran before the only backup ended', () => {
    const listing = [
      `backup\t{"name":"20261124T120250Z","endTime":"2026-11-24T12:03:12Z","sizeBytes":2048,"gtidSet":"${U}:1-77"}`,
      `binlog\t{"archivedGtids":"${U}:1-70","coveredUntil":"2026-11-24T12:03:01Z"}`,
    ].join('\n');
    const text = formatBackups(listing);
    assert.doesNotMatch(text, /may be any time/);
    assert.match(
      text,
      /binary logs archived until 2026-11-24T12:03:01Z, before the oldest backup ended: no point in time is reachable yet, only the backups themselves/,
    );
  });

  it("lists no manifest whose values are not of their grammar, says so, and prints nothing of the bucket's but printable text", () => {
    const listing = [
      `backup\t{"name":"20261123T030000Z","endTime":"2026-11-23T03:00:40Z","sizeBytes":1048576,"gtidSet":"${U}:1-10"}`,
      // A GTID set that would be SQL, a name that is a path, a size that is a shell expansion, an escape sequence.
      `backup\t{"name":"20261124T030000Z","endTime":"2026-11-24T03:00:42Z","sizeBytes":2,"gtidSet":"${U}:1', ''); DROP DATABASE x; -- "}`,
      `backup\t{"name":"../20261125T030000Z","endTime":"2026-11-25T03:00:42Z","sizeBytes":2,"gtidSet":""}`,
      `backup\t{"name":"20261126T030000Z","endTime":"2026-11-26T03:00:42Z","sizeBytes":"a[$(id)]","gtidSet":""}`,
      `backup\t{"name":"\\u001b]0;owned\\u0007","endTime":"2026-11-27T03:00:42Z","sizeBytes":2,"gtidSet":""}`,
      // A method that is neither: not listed as a backup (a restore would not know how to load it).
      `backup\t{"name":"20261128T030000Z","endTime":"2026-11-28T03:00:42Z","method":"$(id)","sizeBytes":2,"gtidSet":""}`,
      `binlog\t{"archivedGtids":"${U}:1-90","coveredUntil":"2026-11-24T10:05:00Z\\u001b[2J"}`,
    ].join('\n');
    const text = formatBackups(listing);
    assert.match(text, new RegExp(`^20261123T030000Z  2026-11-23T03:00:40Z  logical  1.0 MiB  ${U}:1-10$`, 'm'));
    assert.match(
      text,
      /^warning: 5 manifests in the store are not as recon8s writes them .* left out; a restore refuses them too: "20261124T030000Z", "\.\.\/20261125T030000Z", "20261126T030000Z", "\\u001b\]0;owned\\u0007", "20261128T030000Z"$/m,
    );
    assert.doesNotMatch(text, /DROP|binary logs archived until/);
    // eslint-disable-next-line no-control-regex -- what must not reach a terminal
    assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f]/);
  });

  it('lists dumps on a volume by file, and says when there is nothing', () => {
    assert.match(
      formatBackups('file\tshop-20261124T030000Z.sql.gz\t512\n'),
      /^shop-20261124T030000Z\.sql\.gz\s+logical\s+512 B$/m,
    );
    assert.equal(formatBackups(''), 'no backups yet\n');
    assert.equal(formatBackups('backup\tnot json\n'), 'no backups yet\n');
  });
});

describe('recon8s binlog archive', () => {
  it("puts the archive job's report in words: until when a restore can reach", () => {
    assert.equal(
      describeArchive(`{"archivedGtids":"${U}:1-90","coveredUntil":"2026-11-24T10:05:00Z"}`),
      `binary logs archived until 2026-11-24T10:05:00Z: every transaction committed before it can be restored to (spec.restore.pointInTime); archived GTID set '${U}:1-90'`,
    );
    assert.equal(describeArchive('not json'), 'not json');
    assert.equal(
      describeArchive(`{"archivedGtids":"${U}:1'; x","coveredUntil":"2026-11-24T10:05:00Z; rm"}`),
      "binary logs archived; archived GTID set '?'",
    );
  });

  it('needs an action and one cluster name, and says so', async () => {
    for (const args of [
      ['binlog'],
      ['binlog', 'erase', 'db'],
      ['binlog', 'archive'],
      ['binlog', 'archive', 'a', 'b'],
    ]) {
      const r = await runCliHere(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(
        r.err,
        /^error: binlog (needs an action: archive or find|archive needs exactly one MySQLCluster NAME)/,
      );
    }
  });
});

describe('recon8s backup verify', () => {
  it('takes a cluster and at most one backup name, and says what it expected', async () => {
    const bad = await runCliHere(['backup', 'verify', 'shop', 'yesterday']);
    assert.equal(bad.code, 2);
    assert.match(
      bad.err,
      /BACKUP must be a backup's name, the UTC time it started \(e\.g\. 20261124T030000Z\), got "yesterday"/,
    );
    const extra = await runCliHere(['backup', 'verify', 'shop', '20261124T030000Z', 'more']);
    assert.equal(extra.code, 2);
    assert.match(extra.err, /backup verify needs a MySQLCluster NAME, and at most one BACKUP/);
    const help = await runCliHere(['help', 'backup']);
    assert.match(help.out, /recon8s backup verify NAME \[BACKUP\]/);
  });
});

describe('Jobs from the backup CronJob', () => {
  const cronJob = (verify: boolean) =>
    synthMySQL({
      backup: {
        schedule: '@daily',
        s3: { bucket: 'shop-backups', prefix: 'p', endpoint: 'https://s3:9000', credentialsSecretName: 'keys' },
        verify: { enabled: verify },
      },
    }).objects.find((o) => o.kind === 'CronJob' && o.metadata?.name === 'shop-backup') as V1CronJob;

  it('runs a listing or a search in the dump container alone, never the backup or its verification', () => {
    for (const verify of [true, false]) {
      const pod = jobFrom(cronJob(verify), 'shop-list-1', ['bash', '/opt/recon8s/list-backups.sh']).spec?.template.spec;
      assert.deepEqual(
        pod?.initContainers?.map((c) => c.name),
        ['rclone'],
      );
      assert.deepEqual(
        pod?.containers.map((c) => [c.name, c.command]),
        [['backup', ['bash', '/opt/recon8s/list-backups.sh']]],
      );
    }
  });

  it('runs a verification alone, with the backup named', () => {
    const job = jobFrom(
      cronJob(true),
      'shop-verify-1',
      ['bash', '/opt/recon8s/verify-backup.sh'],
      [{ name: 'VERIFY_BACKUP', value: '20261124T030000Z' }],
      'verify',
    );
    const pod = job.spec?.template.spec;
    assert.deepEqual(
      pod?.initContainers?.map((c) => c.name),
      ['rclone'],
    );
    assert.deepEqual(
      pod?.containers.map((c) => c.name),
      ['verify'],
    );
    assert.equal(pod?.containers[0]?.env?.find((e) => e.name === 'VERIFY_BACKUP')?.value, '20261124T030000Z');
    assert.equal(job.spec?.backoffLimit, 0);
  });
});
