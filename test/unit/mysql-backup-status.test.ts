import assert from 'node:assert/strict';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { backupFindings, describeStoreReport } from '../../lib/controller/mysql-cluster/backup-status.js';

const MANIFEST = {
  name: '20261124T030000Z',
  cluster: 'shop',
  source: 'shop-1.shop-headless',
  gtidSet: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77',
  startTime: '2026-11-24T03:00:00Z',
  endTime: '2026-11-24T03:00:42Z',
  durationSeconds: 42,
  sizeBytes: 1234,
  location: 's3://b/prod/shop/base/20261124T030000Z/',
};

function terminated(message: string, finishedAt: string, exitCode = 0): V1ContainerStatus['state'] {
  return { terminated: { exitCode, message, finishedAt: new Date(finishedAt), containerID: `c-${finishedAt}` } };
}

function jobPod(
  container: 'backup' | 'binlog' | 'verify',
  message: string,
  finishedAt: string,
  cluster = 'shop',
): V1Pod {
  return {
    metadata: {
      name: `${cluster}-${container}-${finishedAt}`,
      labels: { 'app.kubernetes.io/instance': cluster, 'app.kubernetes.io/component': 'backup' },
    },
    status: {
      containerStatuses: [
        {
          name: container,
          image: 'mysql',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: terminated(message, finishedAt),
        },
      ],
    },
  };
}

function member(bootstrap: Pick<V1ContainerStatus, 'state' | 'lastState'>): V1Pod {
  return {
    metadata: {
      name: 'shop-0',
      labels: { 'app.kubernetes.io/instance': 'shop', 'app.kubernetes.io/component': 'database' },
    },
    status: {
      initContainerStatuses: [
        { name: 'bootstrap', image: 'mysql', imageID: '', ready: false, restartCount: 1, ...bootstrap },
      ],
    },
  };
}

describe('MySQLCluster backup status', () => {
  it('says where the last completed backup is, how big, at which GTID set, and until when binary logs are archived', () => {
    const found = backupFindings(
      'shop',
      [
        jobPod('backup', `BackupCompleted: ${JSON.stringify(MANIFEST)}`, '2026-11-24T03:00:43Z'),
        jobPod(
          'binlog',
          'BinlogsArchived: {"archivedGtids":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-80","coveredUntil":"2026-11-24T03:05:00Z"}',
          '2026-11-24T03:05:02Z',
        ),
      ],
      {},
    );
    assert.deepEqual(found.backup, {
      lastSuccessfulTime: '2026-11-24T03:00:42Z',
      name: '20261124T030000Z',
      // A manifest that names no method is a dump's (written before there were two).
      method: 'logical',
      location: 's3://b/prod/shop/base/20261124T030000Z/',
      sizeBytes: 1234,
      gtidSet: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77',
      durationSeconds: 42,
      source: 'shop-1.shop-headless',
      binlogsArchivedUntil: '2026-11-24T03:05:00Z',
    });
    assert.deepEqual(found.problems, []);
    assert.deepEqual(found.failing, { backup: false, binlog: false });
  });

  it('reports binary logs that expired unarchived (BinlogArchiveGap) as a problem naming the lost transactions, until a run finds none', () => {
    const gapRun = jobPod(
      'binlog',
      'BinlogArchiveGap: {"archivedGtids":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-80","coveredUntil":"2026-11-24T05:05:00Z","member":"shop-0.shop-headless","server":"3e11fa47-71ca-11e1-9e33-c80aa9429562","gap":"3e11fa47-71ca-11e1-9e33-c80aa9429562:81-95","newestBackup":"20261124T030000Z"}',
      '2026-11-24T05:05:02Z',
    );
    const found = backupFindings('shop', [gapRun], {});
    assert.equal(found.binlogGap, true);
    assert.equal(found.failing.binlog, false, 'the run itself worked');
    assert.equal(found.backup?.binlogsArchivedUntil, '2026-11-24T05:05:00Z', 'what it archived counts');
    assert.equal(found.problems.length, 1);
    assert.equal(found.problems[0]?.reason, 'BinlogArchiveGap');
    assert.match(
      found.problems[0]?.message ?? '',
      /^binary logs of shop-0\.shop-headless expired before they were archived: transactions '3e11fa47-71ca-11e1-9e33-c80aa9429562:81-95' are in no archived log and not in the newest backup \(20261124T030000Z\), so no point-in-time restore reaches past them; take a backup/,
    );
    const closed = jobPod(
      'binlog',
      'BinlogsArchived: {"archivedGtids":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-80,3e11fa47-71ca-11e1-9e33-c80aa9429562:96-120","coveredUntil":"2026-11-24T05:10:00Z"}',
      '2026-11-24T05:10:02Z',
    );
    const later = backupFindings('shop', [gapRun, closed], {});
    assert.equal(later.binlogGap, false);
    assert.deepEqual(later.problems, []);
    assert.equal(backupFindings('shop', [], {}).binlogGap, undefined, 'no run seen: no figure');
  });

  it('reports the last run failing as a problem until a later run succeeds, and keeps the last good backup meanwhile', () => {
    const good = jobPod('backup', `BackupCompleted: ${JSON.stringify(MANIFEST)}`, '2026-11-24T03:00:43Z');
    const bad = jobPod('backup', 'BackupFailed: backup 20261125T030000Z failed: NoSuchBucket', '2026-11-25T03:00:05Z');
    const failing = backupFindings('shop', [good, bad], {});
    assert.deepEqual(failing.problems, [
      { reason: 'BackupFailed', message: 'backup 20261125T030000Z failed: NoSuchBucket' },
    ]);
    assert.equal(failing.backup?.name, '20261124T030000Z');
    assert.equal(failing.failing.backup, true);
    const later = jobPod(
      'backup',
      `BackupCompleted: ${JSON.stringify({ ...MANIFEST, name: '20261125T040000Z', endTime: '2026-11-25T04:00:30Z' })}`,
      '2026-11-25T04:00:31Z',
    );
    const recovered = backupFindings('shop', [good, bad, later], {});
    assert.deepEqual(recovered.problems, []);
    assert.equal(recovered.backup?.name, '20261125T040000Z');
  });

  it('carries forward what the pods no longer show (job history is short), and never goes back to an older backup', () => {
    const previous = { backup: { lastSuccessfulTime: '2026-11-26T03:00:00Z', name: '20261126T030000Z' } };
    assert.deepEqual(backupFindings('shop', [], previous).backup, previous.backup);
    const old = jobPod('backup', `BackupCompleted: ${JSON.stringify(MANIFEST)}`, '2026-11-24T03:00:43Z');
    assert.equal(backupFindings('shop', [old], previous).backup?.name, '20261126T030000Z');
  });

  it('ignores other clusters, unknown reasons and messages that are not JSON where JSON is expected', () => {
    const found = backupFindings(
      'shop',
      [
        jobPod('backup', `BackupCompleted: ${JSON.stringify(MANIFEST)}`, '2026-11-24T03:00:43Z', 'other'),
        jobPod('backup', 'Segmentation fault', '2026-11-24T04:00:00Z'),
        jobPod('backup', 'BackupCompleted: not json', '2026-11-24T05:00:00Z'),
      ],
      {},
    );
    assert.equal(found.backup, undefined);
    assert.deepEqual(found.problems, []);
  });

  it('takes from a report only values of their grammar: a GTID set, host or time that is not one never reaches status or an Event, nor does a control character', () => {
    const poisoned = {
      ...MANIFEST,
      gtidSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77', ''); DROP DATABASE shop; -- ",
      source: 'shop-1\u001b]8;;https://evil\u0007',
      location: 's3://b/p/\u001b[2J',
    };
    const found = backupFindings(
      'shop',
      [jobPod('backup', `BackupCompleted: ${JSON.stringify(poisoned)}`, '2026-11-24T03:00:43Z')],
      {},
    );
    assert.equal(found.backup?.name, '20261124T030000Z');
    assert.equal(found.backup?.gtidSet, '');
    assert.equal(found.backup?.source, undefined);
    assert.equal(found.backup?.location, 's3://b/p/?[2J');
    const method = (m: unknown) =>
      backupFindings(
        'shop',
        [jobPod('backup', `BackupCompleted: ${JSON.stringify({ ...MANIFEST, method: m })}`, '2026-11-24T03:00:43Z')],
        {},
      ).backup?.method;
    assert.equal(method('physical'), 'physical');
    assert.equal(method('physical\u001b[2J'), undefined);
    const words = describeStoreReport('BackupCompleted', JSON.stringify(poisoned));
    assert.doesNotMatch(words, /DROP/);
    assert.equal(words.includes('\u001b'), false);
    // A completion whose name or end time is not as backup.sh writes them is no completion.
    for (const bad of [{ name: '../20261124T030000Z' }, { endTime: '9999-99-99T99:99:99Z' }]) {
      const ignored = backupFindings(
        'shop',
        [jobPod('backup', `BackupCompleted: ${JSON.stringify({ ...MANIFEST, ...bad })}`, '2026-11-24T03:00:43Z')],
        {},
      );
      assert.equal(ignored.backup, undefined, JSON.stringify(bad));
    }
    const failed = backupFindings(
      'shop',
      [jobPod('backup', 'BackupFailed: gtidSet in s3://b/p/x is not a GTID set: \u001b[31m', '2026-11-24T03:00:43Z')],
      {},
    );
    assert.equal(failed.problems[0]?.message, 'gtidSet in s3://b/p/x is not a GTID set: ?[31m');
  });

  it('records a completed restore once, and a failed one as a problem while it keeps failing', () => {
    const restored = member({
      state: terminated(
        'Restored: {"backup":"20261124T030000Z","location":"s3://b/p/base/20261124T030000Z/","pointInTime":"2026-11-24T10:15:00Z","gtidSet":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-90","replayedLogs":2}',
        '2026-11-24T11:00:00Z',
      ),
    });
    assert.deepEqual(backupFindings('shop', [restored], {}).restore, {
      backup: '20261124T030000Z',
      location: 's3://b/p/base/20261124T030000Z/',
      pointInTime: '2026-11-24T10:15:00Z',
      gtidSet: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-90',
      replayedLogs: 2,
      completedAt: '2026-11-24T11:00:00.000Z',
    });
    const failed = member({
      lastState: terminated(
        'RestoreFailed: the archived binary logs reach 2026-11-24T10:00:00Z, before the point in time asked for (2099-01-01T00:00:00Z)',
        '2026-11-24T11:00:00Z',
        1,
      ),
    });
    const found = backupFindings('shop', [failed], {});
    assert.equal(found.restore, undefined);
    assert.equal(found.problems[0]?.reason, 'RestoreFailed');
    assert.match(found.problems[0]?.message ?? '', /before the point in time asked for/);
    // Once restored (status says so), an old failure of the same pod is history, not a problem.
    assert.deepEqual(backupFindings('shop', [failed], { restore: { backup: '20261124T030000Z' } }).problems, []);
  });

  it('keeps a failed restore failed through every phase of its crash loop, until it succeeds or the resource changes', () => {
    const why = 'backup 20200101T000000Z is not in s3://b/p/base/; the newest there: 20261124T030000Z';
    const failure = terminated(`RestoreFailed: ${why}`, '2026-11-24T11:00:00Z', 1);
    // What a sampler sees of the first member, one phase of the back-off after another: the failure
    // reported, the retry running, a retry that ends without a restore report, a pod re-created.
    const phases: V1Pod[] = [
      member({ state: failure }),
      member({ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: failure }),
      member({ state: { running: { startedAt: new Date('2026-11-24T11:00:20Z') } }, lastState: failure }),
      member({
        state: terminated('MemberFailed: mysqld did not start', '2026-11-24T11:00:40Z', 1),
        lastState: failure,
      }),
      member({
        state: { waiting: { reason: 'CrashLoopBackOff' } },
        lastState: terminated('', '2026-11-24T11:00:40Z', 1),
      }),
      member({ state: { waiting: { reason: 'PodInitializing' } } }),
    ];
    let status: Parameters<typeof backupFindings>[2] = {};
    for (const [i, pod] of phases.entries()) {
      const found = backupFindings('shop', [pod], status, 3);
      assert.deepEqual(
        found.problems.map((p) => `${p.reason}: ${p.message}`),
        [`RestoreFailed: ${why}`],
        `phase ${i}`,
      );
      status = { restoreFailure: found.restoreFailure };
    }
    // The resource changed (a new generation): what failed before is no longer known to fail.
    assert.deepEqual(backupFindings('shop', [phases[5] as V1Pod], status, 4).problems, []);
    // A restore that succeeds clears it.
    const restored = member({
      state: terminated(
        'Restored: {"backup":"20261124T030000Z","gtidSet":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3"}',
        '2026-11-24T11:05:00Z',
      ),
    });
    const done = backupFindings('shop', [restored], status, 3);
    assert.deepEqual(done.problems, []);
    assert.equal(done.restoreFailure, undefined);
  });

  it('puts a backup report in words for its Event', () => {
    assert.equal(
      describeStoreReport('BackupCompleted', JSON.stringify(MANIFEST)),
      "backup 20261124T030000Z of shop-1.shop-headless completed: 1234 bytes in 42 s, GTID set '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77', at s3://b/prod/shop/base/20261124T030000Z/",
    );
    assert.equal(describeStoreReport('BackupFailed', 'why'), 'why');
  });

  describe('verification of a backup by a restore', () => {
    const passed = (at: string, backup = MANIFEST.name) =>
      jobPod(
        'verify',
        `BackupVerified: {"backup":"${backup}","durationSeconds":31,"peakMemoryBytes":412000000,"cpuMilliseconds":9000,"tables":2,"replayedLogs":3,"checksums":true}`,
        at,
      );
    const failed = (at: string) =>
      jobPod(
        'verify',
        `BackupVerificationFailed: {"backup":"${MANIFEST.name}","durationSeconds":4,"message":"backup ${MANIFEST.name} cannot be restored: the object s3://b/prod/shop/base/${MANIFEST.name}/dump.sql.gz does not load (gzip: stdin: invalid compressed data--crc error)"}`,
        at,
      );

    it('records the last verification in status.backup.lastVerified', () => {
      const found = backupFindings('shop', [passed('2026-11-24T03:01:20Z')], {});
      assert.deepEqual(found.backup?.lastVerified, {
        backup: MANIFEST.name,
        time: '2026-11-24T03:01:20.000Z',
        result: 'Passed',
        durationSeconds: 31,
        tables: 2,
        replayedLogs: 3,
      });
      assert.deepEqual(found.problems, []);
      assert.deepEqual(found.verification, { failed: false, passedAt: '2026-11-24T03:01:20.000Z' });
    });

    it('is Degraded (BackupVerificationFailed), naming the object, until a later verification passes', () => {
      const broken = backupFindings('shop', [failed('2026-11-24T03:01:20Z')], {});
      assert.equal(broken.backup?.lastVerified?.result, 'Failed');
      assert.deepEqual(broken.problems, [
        {
          reason: 'BackupVerificationFailed',
          message: `backup ${MANIFEST.name} cannot be restored: the object s3://b/prod/shop/base/${MANIFEST.name}/dump.sql.gz does not load (gzip: stdin: invalid compressed data--crc error)`,
        },
      ]);
      assert.equal(broken.verification?.failed, true);
      // The job pod is gone (history limits): the failure stands from status.
      const later = backupFindings('shop', [], { backup: broken.backup });
      assert.equal(later.problems[0]?.reason, 'BackupVerificationFailed');
      // A newer pass clears it; an older report does not replace a newer one.
      const healed = backupFindings('shop', [passed('2026-11-25T03:01:20Z'), failed('2026-11-24T03:01:20Z')], {
        backup: broken.backup,
      });
      assert.equal(healed.backup?.lastVerified?.result, 'Passed');
      assert.deepEqual(healed.problems, []);
      const stale = backupFindings('shop', [failed('2026-11-24T03:01:20Z')], { backup: healed.backup });
      assert.equal(stale.backup?.lastVerified?.result, 'Passed');
    });

    it('says why a verification was skipped, without calling the cluster degraded', () => {
      const found = backupFindings(
        'shop',
        [
          jobPod(
            'verify',
            'BackupVerificationSkipped: {"backup":"20261124T030000Z","durationSeconds":1,"message":"backup 20261124T030000Z holds 9000000000 bytes of tables"}',
            '2026-11-24T03:01:20Z',
          ),
        ],
        {},
      );
      assert.equal(found.backup?.lastVerified?.result, 'Skipped');
      assert.match(found.backup?.lastVerified?.message ?? '', /holds 9000000000 bytes/);
      assert.deepEqual(found.problems, []);
      assert.equal(found.verification?.failed, undefined);
    });

    it('reads the backup from its init container when a verification follows it', () => {
      const pod = jobPod('verify', 'BackupVerified: {"backup":"x"}', '2026-11-24T03:01:20Z');
      pod.status = {
        ...pod.status,
        initContainerStatuses: [
          {
            name: 'backup',
            image: 'mysql',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: terminated(`BackupCompleted: ${JSON.stringify(MANIFEST)}`, '2026-11-24T03:00:42Z'),
          },
        ],
      };
      assert.equal(backupFindings('shop', [pod], {}).backup?.name, MANIFEST.name);
    });

    it('puts the verification in words for its Event', () => {
      assert.equal(
        describeStoreReport(
          'BackupVerified',
          passed('2026-11-24T03:01:20Z').status?.containerStatuses?.[0]?.state?.terminated?.message?.replace(
            /^\w+: /,
            '',
          ) ?? '',
        ),
        `backup ${MANIFEST.name} verified by a restore in 31 s: 2 tables match the row counts and checksums recorded in its snapshot, 3 archived binary logs replayed after it, CHECK TABLE found nothing wrong (peak memory 393 MiB, CPU 9.0 s)`,
      );
      assert.match(
        describeStoreReport('BackupVerificationFailed', '{"message":"the object x does not load"}'),
        /^the object x does not load$/,
      );
    });
  });
});
