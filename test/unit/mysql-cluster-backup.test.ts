import assert from 'node:assert/strict';
import type { V1Container } from '@kubernetes/client-node';
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
