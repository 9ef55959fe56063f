import assert from 'node:assert/strict';
import type { V1Container, V1CronJob } from '@kubernetes/client-node';
import { quantityBytes } from '../../constructs/common/resources.js';
import { selects, synthMySQL } from './support/mysql-synth.js';

const BACKUP = { schedule: '0 3 * * *', persistentVolumeClaimName: 'shop-backups' };

const env = (c: V1Container, name: string) => c.env?.find((e) => e.name === name);
const mountAt = (c: V1Container, path: string) => c.volumeMounts?.find((m) => m.mountPath === path);

describe('MySQLCluster backup', () => {
  it('renders no CronJob without spec.backup', () => {
    assert.equal(synthMySQL().cronJob, undefined);
  });

  it('schedules shop-backup in UTC, never twice at once, running by default', () => {
    const s = synthMySQL({ backup: BACKUP });
    const spec = s.cronJob?.spec;
    assert.equal(s.cronJob?.metadata?.name, 'shop-backup');
    assert.equal(s.cluster.backup?.name, 'shop-backup');
    assert.equal(spec?.schedule, '0 3 * * *');
    assert.equal(spec?.timeZone, 'Etc/UTC');
    assert.equal(spec?.concurrencyPolicy, 'Forbid');
    assert.equal(spec?.suspend, false);
    assert.equal(spec?.successfulJobsHistoryLimit, 3);
    assert.equal(spec?.failedJobsHistoryLimit, 3);
    assert.equal(spec?.jobTemplate.spec?.backoffLimit, 2);
  });

  it('can be suspended', () => {
    assert.equal(synthMySQL({ backup: { ...BACKUP, suspend: true } }).cronJob?.spec?.suspend, true);
  });

  it('writes to the PVC given, mounted at /backup, and keeps 7 backups by default', () => {
    const pod = synthMySQL({ backup: BACKUP }).cronJob?.spec?.jobTemplate.spec?.template.spec;
    const [container] = pod?.containers ?? [];
    assert.ok(container);
    const m = mountAt(container, '/backup');
    assert.deepEqual(pod?.volumes?.find((v) => v.name === m?.name)?.persistentVolumeClaim, {
      claimName: 'shop-backups',
    });
    assert.deepEqual(container.command, ['bash', '/opt/recon8s/backup.sh']);
    assert.equal(env(container, 'BACKUP_RETAIN')?.value, '7');
    assert.equal(env(container, 'CLUSTER_NAME')?.value, 'shop');
    assert.equal(pod?.restartPolicy, 'Never');
  });

  it('keeps spec.backup.retain backups', () => {
    const [container] =
      synthMySQL({ backup: { ...BACKUP, retain: 30 } }).cronJob?.spec?.jobTemplate.spec?.template.spec?.containers ??
      [];
    assert.ok(container);
    assert.equal(env(container, 'BACKUP_RETAIN')?.value, '30');
  });

  it('dumps from the replicas Service when there are replicas, from the primary otherwise', () => {
    const host = (replicas: number) => {
      const [c] =
        synthMySQL({ replicas, backup: BACKUP }).cronJob?.spec?.jobTemplate.spec?.template.spec?.containers ?? [];
      assert.ok(c);
      return env(c, 'BACKUP_HOST')?.value;
    };
    assert.equal(host(3), 'shop-replicas');
    assert.equal(host(1), 'shop-primary');
  });

  it('runs as uid 999 under the restricted profile', () => {
    const pod = synthMySQL({ backup: BACKUP }).cronJob?.spec?.jobTemplate.spec?.template.spec;
    assert.equal(pod?.securityContext?.runAsUser, 999);
    assert.equal(pod?.securityContext?.fsGroup, 999);
    assert.equal(pod?.securityContext?.runAsNonRoot, true);
    assert.deepEqual(pod?.containers[0]?.securityContext?.capabilities, { drop: ['ALL'] });
    assert.equal(pod?.containers[0]?.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(pod?.automountServiceAccountToken, false);
  });

  it('labels backup pods so that no database selector matches them', () => {
    const s = synthMySQL({ backup: BACKUP });
    const labels = s.cronJob?.spec?.jobTemplate.spec?.template.metadata?.labels;
    assert.equal(labels?.['app.kubernetes.io/component'], 'backup');
    assert.equal(selects(s.statefulSet.spec?.selector.matchLabels, labels), false);
    for (const name of ['shop-headless', 'shop-primary', 'shop-replicas'])
      assert.equal(selects(s.service(name).spec?.selector, labels), false, name);
    assert.equal(selects(s.disruptionBudget.spec?.selector?.matchLabels, labels), false);
  });
});

describe('MySQLCluster backups to an object store, and restores', () => {
  const S3 = {
    bucket: 'shop-backups',
    prefix: 'prod/shop',
    endpoint: 'https://minio.storage:9000',
    credentialsSecretName: 'store-keys',
  };
  const cronJob = (props: Parameters<typeof synthMySQL>[0], name: string) =>
    synthMySQL(props).objects.find((o) => o.kind === 'CronJob' && o.metadata?.name === name) as V1CronJob | undefined;

  it("gives the backup and binary-log jobs the backup account's password and no other of the cluster's: never root's, in env or mounts", () => {
    for (const name of ['shop-backup', 'shop-binlog']) {
      const pod = cronJob({ backup: { schedule: '@daily', s3: S3 } }, name)?.spec?.jobTemplate.spec?.template.spec;
      assert.ok(pod, name);
      const containers = [...(pod.initContainers ?? []), ...pod.containers];
      const credentialRefs = containers.flatMap((c) =>
        (c.env ?? []).flatMap((e) =>
          e.valueFrom?.secretKeyRef?.name === 'shop-credentials'
            ? [`${c.name}:${e.name}=${e.valueFrom.secretKeyRef.key}`]
            : [],
        ),
      );
      const job = name === 'shop-backup' ? 'backup' : 'binlog';
      assert.deepEqual(credentialRefs, [`${job}:MYSQL_BACKUP_PASSWORD=backup-password`], name);
      // No volume of the credentials Secret either (only the CA of the TLS Secret, and the store's keys).
      assert.deepEqual(
        (pod.volumes ?? []).filter((v) => v.secret?.secretName === 'shop-credentials'),
        [],
        name,
      );
      for (const c of containers)
        assert.ok(!(c.env ?? []).some((e) => e.name === 'MYSQL_ROOT_PASSWORD'), `${name}/${c.name}`);
    }
  });

  it('streams the backup to the bucket with rclone copied from its image, credentials only by Secret reference', () => {
    const pod = cronJob({ backup: { schedule: '@daily', s3: S3 } }, 'shop-backup')?.spec?.jobTemplate.spec?.template
      .spec;
    const [container] = pod?.containers ?? [];
    assert.ok(container);
    assert.equal(env(container, 'STORE_BUCKET')?.value, 'shop-backups');
    assert.equal(env(container, 'STORE_PREFIX')?.value, 'prod/shop');
    assert.equal(env(container, 'RCLONE_CONFIG_STORE_ENDPOINT')?.value, 'https://minio.storage:9000');
    assert.equal(env(container, 'RCLONE_CONFIG_STORE_REGION')?.value, 'us-east-1');
    assert.equal(env(container, 'RCLONE_CONFIG_STORE_FORCE_PATH_STYLE')?.value, 'true');
    for (const [name, key] of [
      ['RCLONE_CONFIG_STORE_ACCESS_KEY_ID', 'access-key-id'],
      ['RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY', 'secret-access-key'],
    ] as const) {
      assert.equal(env(container, name)?.value, undefined, `${name} is never a value`);
      assert.deepEqual(env(container, name)?.valueFrom?.secretKeyRef, { name: 'store-keys', key });
    }
    assert.equal(mountAt(container, '/backup'), undefined, 'no volume destination');
    const [copy] = pod?.initContainers ?? [];
    assert.equal(copy?.image, 'docker.io/rclone/rclone:1.75.2');
    assert.deepEqual(copy?.securityContext?.capabilities, { drop: ['ALL'] });
    assert.equal(mountAt(container, '/opt/recon8s-tools')?.readOnly, true);
  });

  it("verifies each backup after it in the same Job: the dump as the last init container, then a verification with its own resources and a bounded scratch volume, without the cluster's credentials", () => {
    const pod = cronJob({ backup: { schedule: '@daily', s3: S3 } }, 'shop-backup')?.spec?.jobTemplate.spec?.template
      .spec;
    assert.deepEqual(
      (pod?.initContainers ?? []).map((c) => c.name),
      ['rclone', 'backup'],
    );
    const [verify, ...others] = pod?.containers ?? [];
    assert.equal(others.length, 0);
    assert.ok(verify);
    assert.equal(verify.name, 'verify');
    assert.deepEqual(verify.command, ['bash', '/opt/recon8s/verify-backup.sh']);
    assert.equal(env(verify, 'VERIFY_SCRATCH_BYTES')?.value, String(10 * 1024 ** 3));
    assert.equal(env(verify, 'STORE_BUCKET')?.value, 'shop-backups');
    assert.equal(env(verify, 'MYSQL_ROOT_PASSWORD'), undefined, 'nothing of the cluster: not even its Secret');
    assert.deepEqual(JSON.parse(JSON.stringify(verify.resources)), {
      requests: { cpu: '250m', memory: '512Mi' },
      limits: { memory: '1Gi' },
    });
    assert.equal(verify.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(verify.securityContext?.allowPrivilegeEscalation, false);
    const scratch = mountAt(verify, '/var/lib/recon8s-verify');
    const volume = pod?.volumes?.find((v) => v.name === scratch?.name);
    assert.equal(String(volume?.emptyDir?.sizeLimit), '10Gi');

    const sized = cronJob(
      {
        backup: {
          schedule: '@daily',
          s3: S3,
          verify: {
            scratchSize: '500M',
            resources: { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } },
          },
        },
      },
      'shop-backup',
    )?.spec?.jobTemplate.spec?.template.spec;
    const sizedVerify = sized?.containers[0];
    assert.ok(sizedVerify);
    assert.equal(env(sizedVerify, 'VERIFY_SCRATCH_BYTES')?.value, '500000000');
    assert.equal(String(sizedVerify.resources?.limits?.memory), '2Gi');

    // Off: the backup alone, as before; and never for a volume destination.
    const off = cronJob({ backup: { schedule: '@daily', s3: S3, verify: { enabled: false } } }, 'shop-backup')?.spec
      ?.jobTemplate.spec?.template.spec;
    assert.deepEqual(
      off?.containers.map((c) => c.name),
      ['backup'],
    );
    const volumeOnly = cronJob({ backup: { schedule: '@daily', persistentVolumeClaimName: 'dumps' } }, 'shop-backup')
      ?.spec?.jobTemplate.spec?.template.spec;
    assert.deepEqual(
      volumeOnly?.containers.map((c) => c.name),
      ['backup'],
    );
  });

  it('takes logical backups by default; a physical one clones into a bounded scratch volume of its own, with the memory of its recipient mysqld, and is still verified after it', () => {
    const pod = (backup: Record<string, unknown>) =>
      cronJob({ backup: { schedule: '@daily', s3: S3, ...backup } }, 'shop-backup')?.spec?.jobTemplate.spec?.template
        .spec;
    const backupOf = (p: ReturnType<typeof pod>) => p?.initContainers?.find((c) => c.name === 'backup');
    const logical = pod({});
    const dump = backupOf(logical);
    assert.ok(dump);
    assert.equal(env(dump, 'BACKUP_METHOD')?.value, 'logical');
    assert.equal(mountAt(dump, '/var/lib/recon8s-backup'), undefined, 'a dump streams: no scratch volume');
    assert.equal(String(dump.resources?.limits?.memory), '512Mi');
    assert.equal(env(dump, 'MYSQL_CLONE_PASSWORD'), undefined, 'a dump cannot clone');

    for (const [scratchSize, limit] of [
      [undefined, '10Gi'],
      ['200Gi', '200Gi'],
    ] as const) {
      const physical = pod({ method: 'physical', ...(scratchSize ? { scratchSize } : {}) });
      const clone = backupOf(physical);
      assert.ok(clone);
      assert.equal(env(clone, 'BACKUP_METHOD')?.value, 'physical');
      const scratch = mountAt(clone, '/var/lib/recon8s-backup');
      assert.ok(scratch, 'the clone has a scratch volume');
      assert.equal(String(physical?.volumes?.find((v) => v.name === scratch.name)?.emptyDir?.sizeLimit), limit);
      assert.equal(String(clone.resources?.limits?.memory), '1Gi');
      assert.equal(clone.securityContext?.readOnlyRootFilesystem, true);
      // The dump's login and TLS material, the clone account's password beside (BACKUP_ADMIN), and the
      // same verification.
      assert.equal(env(clone, 'MYSQL_BACKUP_PASSWORD')?.valueFrom?.secretKeyRef?.key, 'backup-password');
      assert.equal(env(clone, 'MYSQL_CLONE_PASSWORD')?.valueFrom?.secretKeyRef?.key, 'clone-password');
      assert.equal(env(clone, 'MYSQL_ROOT_PASSWORD'), undefined);
      assert.equal(mountAt(clone, '/etc/mysql/tls')?.readOnly, true);
      assert.deepEqual(
        physical?.containers.map((c) => c.name),
        ['verify'],
      );
      assert.equal(
        physical?.containers[0]?.volumeMounts?.some((m) => m.mountPath === '/var/lib/recon8s-backup'),
        false,
        'the verification has its own scratch volume',
      );
    }
  });

  it('reads a quantity as bytes', () => {
    for (const [q, bytes] of [
      ['10Gi', 10 * 1024 ** 3],
      ['500M', 500_000_000],
      ['1.5Ki', 1536],
      ['1e3', 1000],
      ['42', 42],
      ['2000m', 2],
    ] as const)
      assert.equal(quantityBytes(q), bytes, q);
    assert.throws(() => quantityBytes('ten'), /not a quantity: "ten"/);
  });

  it('archives the binary logs every 5 minutes by default, every binlogIntervalMinutes, and not at all with 0', () => {
    const binlog = (binlogIntervalMinutes?: number) =>
      cronJob({ backup: { schedule: '@daily', s3: S3, binlogIntervalMinutes } }, 'shop-binlog');
    const job = binlog();
    assert.equal(job?.spec?.schedule, '*/5 * * * *');
    assert.equal(job?.spec?.concurrencyPolicy, 'Forbid');
    assert.equal(job?.spec?.jobTemplate.spec?.backoffLimit, 0);
    const [container] = job?.spec?.jobTemplate.spec?.template.spec?.containers ?? [];
    assert.deepEqual(container?.command, ['bash', '/opt/recon8s/binlog.sh']);
    assert.equal(container && env(container, 'PRIMARY_HOST')?.value, 'shop-primary');
    assert.equal(job?.spec?.jobTemplate.spec?.template.metadata?.labels?.['app.kubernetes.io/component'], 'backup');
    assert.equal(binlog(15)?.spec?.schedule, '*/15 * * * *');
    assert.equal(binlog(60)?.spec?.schedule, '0 * * * *');
    assert.equal(binlog(0), undefined);
    assert.equal(cronJob({ backup: BACKUP }, 'shop-binlog'), undefined, 'a volume destination archives no logs');
  });

  it("restores in the first member's bootstrap: the store, the backup and the point, with rclone beside it", () => {
    const s = synthMySQL({ restore: { s3: S3, pointInTime: '2026-11-24T10:15:00Z' } });
    const bootstrap = s.container('bootstrap');
    assert.equal(env(bootstrap, 'RESTORE_BACKUP')?.value, 'latest');
    assert.equal(env(bootstrap, 'RESTORE_POINT_IN_TIME')?.value, '2026-11-24T10:15:00Z');
    assert.equal(env(bootstrap, 'RESTORE_GTID_SET'), undefined);
    assert.equal(env(bootstrap, 'STORE_PREFIX')?.value, 'prod/shop');
    assert.equal(env(bootstrap, 'RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef?.name, 'store-keys');
    const names = (s.statefulSet.spec?.template.spec?.initContainers ?? []).map((c) => c.name);
    assert.deepEqual(names, ['rclone', 'bootstrap']);
    assert.deepEqual(
      (synthMySQL().statefulSet.spec?.template.spec?.initContainers ?? []).map((c) => c.name),
      ['bootstrap'],
      'no restore, no rclone',
    );
  });

  it('with s3.encryption, every container that uses the store (dump, verification, restore) gets the key as a file of its Secret, never by value or in the environment', () => {
    const encrypted = { ...S3, encryption: { secretRef: { name: 'backup-key' } } };
    const pod = cronJob({ backup: { schedule: '@daily', s3: encrypted } }, 'shop-backup')?.spec?.jobTemplate.spec
      ?.template.spec;
    const restored = synthMySQL({
      restore: { s3: { ...S3, encryption: { secretRef: { name: 'old-key', key: 'k' } } } },
    });
    const cases = [
      {
        pod,
        containers: [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].filter((c) => c.name !== 'rclone'),
      },
      { pod: restored.statefulSet.spec?.template.spec, containers: [restored.container('bootstrap')] },
    ];
    for (const [i, { pod: spec, containers }] of cases.entries()) {
      const volume = spec?.volumes?.find((v) => v.name === 'store-key');
      assert.deepEqual(volume?.secret, {
        secretName: i === 0 ? 'backup-key' : 'old-key',
        items: [{ key: i === 0 ? 'encryption-key' : 'k', path: 'key' }],
        defaultMode: 0o440,
      });
      assert.ok(containers.length >= 1);
      for (const c of containers) {
        assert.equal(env(c, 'STORE_ENCRYPTION_KEY_FILE')?.value, '/etc/recon8s/store-key/key', c.name);
        assert.ok(
          c.volumeMounts?.some((m) => m.name === 'store-key' && m.readOnly),
          c.name,
        );
        assert.equal(
          (c.env ?? []).some((e) => e.valueFrom?.secretKeyRef?.name === (i === 0 ? 'backup-key' : 'old-key')),
          false,
          `${c.name}: the key is not an environment variable`,
        );
      }
    }
    assert.deepEqual(
      cases[0]?.containers.map((c) => c.name),
      ['backup', 'verify'],
    );
    const plain = cronJob({ backup: { schedule: '@daily', s3: S3 } }, 'shop-backup')?.spec?.jobTemplate.spec?.template
      .spec;
    assert.equal(
      plain?.volumes?.some((v) => v.name === 'store-key'),
      false,
      'no encryption, no key',
    );
  });
});
