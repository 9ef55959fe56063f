import assert from 'node:assert/strict';
import type { V1Container } from '@kubernetes/client-node';
import { allContainers, selects, synthMySQL } from './support/mysql-synth.js';
import { DEFAULT_OPERATOR_IMAGE } from '../../constructs/index.js';

const SELECTOR = {
  'app.kubernetes.io/name': 'mysql',
  'app.kubernetes.io/instance': 'shop',
  'app.kubernetes.io/component': 'database',
};
const BACKUP = { schedule: '0 3 * * *', persistentVolumeClaimName: 'shop-backups' };

const env = (c: V1Container, name: string) => c.env?.find((e) => e.name === name);
const mountAt = (c: V1Container, path: string) => c.volumeMounts?.find((m) => m.mountPath === path);

describe('MySQLCluster', () => {
  describe('objects and names', () => {
    it('renders the StatefulSet, three Services, two ConfigMaps, a PodDisruptionBudget and a NetworkPolicy named after the cluster', () => {
      const { objects } = synthMySQL();
      assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata?.name}`).sort(), [
        'ConfigMap/shop-config',
        'ConfigMap/shop-scripts',
        'NetworkPolicy/shop-mysql',
        'PodDisruptionBudget/shop-mysql',
        'Service/shop-headless',
        'Service/shop-primary',
        'Service/shop-replicas',
        'StatefulSet/shop',
      ]);
    });

    it('sets no namespace itself, so the chart namespace applies to every object', () => {
      const { objects } = synthMySQL();
      for (const o of objects) assert.equal(o.metadata?.namespace, 'db', `${o.kind}/${o.metadata?.name}`);
    });

    it('never renders a Secret: the credentials Secret is created outside the construct', () => {
      const { objects, cluster } = synthMySQL();
      assert.equal(objects.filter((o) => o.kind === 'Secret').length, 0);
      assert.equal(cluster.credentialsSecretName, 'shop-credentials');
    });

    it('exposes the resolved spec, endpoints and pod selector', () => {
      const { cluster } = synthMySQL({ replicas: 2 });
      assert.equal(cluster.spec.replicas, 2);
      assert.equal(cluster.spec.version, '9.7');
      assert.equal(cluster.spec.imagePullPolicy, 'IfNotPresent');
      assert.equal(cluster.primaryEndpoint, 'shop-primary:3306');
      assert.equal(cluster.replicasEndpoint, 'shop-replicas:3306');
      assert.deepEqual(cluster.podSelector, SELECTOR);
      assert.equal(cluster.backup, undefined);
    });
  });

  describe('StatefulSet', () => {
    it('has 3 members by default, the headless Service, every member started at once, and updates left to the controller', () => {
      const { statefulSet } = synthMySQL();
      assert.equal(statefulSet.spec?.replicas, 3);
      assert.equal(statefulSet.spec?.serviceName, 'shop-headless');
      // A member that cannot be Ready (no primary answers after every pod was deleted) must not keep
      // the others from being created: the controller needs them to find the one holding the data.
      assert.equal(statefulSet.spec?.podManagementPolicy, 'Parallel');
      // The StatefulSet controller does not know which member is the primary: recon8s re-creates pods.
      assert.deepEqual(statefulSet.spec?.updateStrategy, { type: 'OnDelete' });
      assert.deepEqual(statefulSet.spec?.selector, { matchLabels: SELECTOR });
    });

    it('takes spec.replicas', () => {
      assert.equal(synthMySQL({ replicas: 5 }).statefulSet.spec?.replicas, 5);
    });

    it('claims a 10Gi ReadWriteOnce volume named data per member by default, the size as a string', () => {
      const [claim, ...more] = synthMySQL().statefulSet.spec?.volumeClaimTemplates ?? [];
      assert.equal(more.length, 0);
      assert.equal(claim?.metadata?.name, 'data');
      assert.deepEqual(claim?.spec?.accessModes, ['ReadWriteOnce']);
      assert.equal(claim?.spec?.resources?.requests?.storage, '10Gi');
      assert.equal(claim?.spec?.storageClassName, undefined);
    });

    it('takes storage size, class and access modes', () => {
      const [claim] =
        synthMySQL({ storage: { size: '50Gi', storageClassName: 'fast-ssd', accessModes: ['ReadWriteOncePod'] } })
          .statefulSet.spec?.volumeClaimTemplates ?? [];
      assert.equal(claim?.spec?.resources?.requests?.storage, '50Gi');
      assert.equal(claim?.spec?.storageClassName, 'fast-ssd');
      assert.deepEqual(claim?.spec?.accessModes, ['ReadWriteOncePod']);
    });

    it('keeps user labels out of the immutable claim template', () => {
      const [claim] = synthMySQL({ labels: { team: 'payments' } }).statefulSet.spec?.volumeClaimTemplates ?? [];
      assert.equal(claim?.metadata?.labels?.team, undefined);
      assert.ok(selects(SELECTOR, claim?.metadata?.labels));
    });

    it('retains the volumes when deleted or scaled down by default', () => {
      assert.deepEqual(synthMySQL().statefulSet.spec?.persistentVolumeClaimRetentionPolicy, {
        whenDeleted: 'Retain',
        whenScaled: 'Retain',
      });
    });

    it('deletes the volumes when asked', () => {
      const { statefulSet } = synthMySQL({ pvcRetention: { whenDeleted: 'Delete', whenScaled: 'Delete' } });
      assert.deepEqual(statefulSet.spec?.persistentVolumeClaimRetentionPolicy, {
        whenDeleted: 'Delete',
        whenScaled: 'Delete',
      });
    });

    it('mounts the data volume at /var/lib/mysql in the bootstrap, mysql and agent containers', () => {
      const s = synthMySQL();
      for (const name of ['bootstrap', 'mysql', 'agent']) {
        const m = mountAt(s.container(name), '/var/lib/mysql');
        assert.equal(m?.name, 'data', name);
        assert.notEqual(m?.readOnly, true, name);
      }
    });

    it('runs bootstrap (init-config first, in the same container) before mysql, with the agent beside it', () => {
      const { podSpec } = synthMySQL();
      assert.deepEqual(
        podSpec.initContainers?.map((c) => c.name),
        ['bootstrap'],
      );
      assert.deepEqual(
        podSpec.containers.map((c) => c.name),
        ['mysql', 'agent'],
      );
      assert.deepEqual(
        podSpec.initContainers?.map((c) => c.command),
        [['bash', '/opt/recon8s/bootstrap.sh']],
      );
      assert.deepEqual(podSpec.containers[0]?.command, ['bash', '/opt/recon8s/start-mysqld.sh']);
      // The agent: the recon8s image of the release, whose entrypoint is the CLI.
      assert.equal(podSpec.containers[1]?.image, DEFAULT_OPERATOR_IMAGE);
      assert.equal(podSpec.containers[1]?.command, undefined);
      assert.deepEqual(podSpec.containers[1]?.args, ['agent']);
    });

    it("tells bootstrap whether the cluster has a recorded history: the controller's <name>-history ConfigMap, optional (a new cluster has none), and starts every member at once (Parallel)", () => {
      const s = synthMySQL();
      assert.deepEqual(env(s.container('bootstrap'), 'RECON8S_RECORDED_HISTORY')?.valueFrom, {
        configMapKeyRef: { name: 'shop-history', key: 'first-primary', optional: true },
      });
      // Never rendered: only the controller knows that the cluster has had a primary.
      assert.ok(!s.objects.some((m) => m.kind === 'ConfigMap' && m.metadata?.name === 'shop-history'));
      assert.equal(s.statefulSet.spec?.podManagementPolicy, 'Parallel');
    });

    it('exposes port 3306 named mysql', () => {
      assert.deepEqual(synthMySQL().container('mysql').ports, [{ name: 'mysql', containerPort: 3306 }]);
    });

    it('gives MySQL two minutes to shut down', () => {
      assert.equal(synthMySQL().podSpec.terminationGracePeriodSeconds, 120);
    });

    it('asks the agent for liveness and readiness over HTTP (no process per probe), and allows a long start-up', () => {
      const s = synthMySQL();
      const mysql = s.container('mysql');
      assert.deepEqual(s.container('agent').ports, [{ name: 'agent', containerPort: 9080 }]);
      const ping = { path: '/livez', port: 9080 };
      assert.deepEqual(mysql.livenessProbe?.httpGet, ping);
      assert.deepEqual(mysql.startupProbe?.httpGet, ping);
      assert.deepEqual(mysql.readinessProbe?.httpGet, { path: '/readyz', port: 9080 });
      for (const p of [mysql.livenessProbe, mysql.startupProbe, mysql.readinessProbe]) assert.equal(p?.exec, undefined);
      const startupSeconds = (mysql.startupProbe?.periodSeconds ?? 0) * (mysql.startupProbe?.failureThreshold ?? 0);
      assert.ok(startupSeconds >= 3600, `start-up allowed ${startupSeconds}s`);
      // Liveness and start-up wait a whole period for an answer (a busy node is slow, not dead).
      for (const p of [mysql.livenessProbe, mysql.startupProbe]) assert.equal(p?.timeoutSeconds, 10);
      assert.equal(mysql.readinessProbe?.timeoutSeconds, 5);
    });

    it('checks start-up and readiness every 2 seconds, so that a new primary serves writes soon', () => {
      const mysql = synthMySQL().container('mysql');
      assert.equal(mysql.startupProbe?.periodSeconds, 2);
      assert.equal(mysql.readinessProbe?.periodSeconds, 2);
      assert.equal(mysql.readinessProbe?.failureThreshold, 5);
    });

    it("gives the agent, read-only, the pod's annotations through a downward API volume", () => {
      const s = synthMySQL();
      const volume = s.podSpec.volumes?.find((v) => v.name === 'pod-info');
      assert.deepEqual(volume?.downwardAPI, {
        items: [{ path: 'annotations', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.annotations' } }],
      });
      assert.deepEqual(mountAt(s.container('agent'), '/etc/recon8s/pod'), {
        name: 'pod-info',
        mountPath: '/etc/recon8s/pod',
        readOnly: true,
      });
      for (const c of allContainers(s.podSpec).filter((x) => x.name !== 'agent'))
        assert.equal(mountAt(c, '/etc/recon8s/pod'), undefined, c.name);
    });

    it('never puts the role label on the pod template: every member starts without a role', () => {
      const { statefulSet } = synthMySQL();
      assert.equal(statefulSet.spec?.template.metadata?.labels?.['recon8s.dev/role'], undefined);
      assert.equal(statefulSet.spec?.selector.matchLabels?.['recon8s.dev/role'], undefined);
    });

    it('uses the default resources, without a CPU limit, for mysql and bootstrap', () => {
      const s = synthMySQL();
      for (const name of ['mysql', 'bootstrap']) {
        assert.deepEqual(
          s.container(name).resources,
          { requests: { cpu: '250m', memory: '1Gi' }, limits: { memory: '1Gi' } },
          name,
        );
      }
    });

    it('uses exactly the resources given', () => {
      assert.deepEqual(synthMySQL({ resources: { requests: { cpu: 2 } } }).container('mysql').resources, {
        requests: { cpu: 2 },
      });
    });

    it('passes nodeSelector and tolerations to the pods', () => {
      const toleration = { key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' };
      const { podSpec } = synthMySQL({ nodeSelector: { disk: 'ssd' }, tolerations: [toleration] });
      assert.deepEqual(podSpec.nodeSelector, { disk: 'ssd' });
      assert.deepEqual(podSpec.tolerations, [toleration]);
    });

    it('emits no nodeSelector or tolerations when none are given', () => {
      const { podSpec } = synthMySQL();
      assert.equal('nodeSelector' in podSpec, false);
      assert.equal('tolerations' in podSpec, false);
    });
  });

  describe('image', () => {
    it('runs the official mysql:9.7 image by default (the LTS release the suite proves), pulled if not present, in every container', () => {
      for (const c of allContainers(synthMySQL().podSpec).filter((x) => x.name !== 'agent')) {
        assert.equal(c.image, 'mysql:9.7', c.name);
        assert.equal(c.imagePullPolicy, 'IfNotPresent', c.name);
      }
    });

    it('runs the agent from spec.agentImage, pulled as spec.imagePullPolicy says', () => {
      const agent = synthMySQL({
        agentImage: 'registry.example.com/recon8s:0.1.0',
        imagePullPolicy: 'Always',
      }).container('agent');
      assert.equal(agent.image, 'registry.example.com/recon8s:0.1.0');
      assert.equal(agent.imagePullPolicy, 'Always');
    });

    it('follows spec.version', () => {
      assert.equal(synthMySQL({ version: '8.4' }).container('mysql').image, 'mysql:8.4');
    });

    it('takes spec.image and spec.imagePullPolicy everywhere, the backup job included', () => {
      const s = synthMySQL({ image: 'registry.example.com/mysql:8.4.7', imagePullPolicy: 'Always', backup: BACKUP });
      const backup = s.cronJob?.spec?.jobTemplate.spec?.template.spec?.containers ?? [];
      for (const c of [...allContainers(s.podSpec).filter((x) => x.name !== 'agent'), ...backup]) {
        assert.equal(c.image, 'registry.example.com/mysql:8.4.7', c.name);
        assert.equal(c.imagePullPolicy, 'Always', c.name);
      }
    });
  });

  describe('security', () => {
    it('runs the pods as the mysql user 999 with the restricted pod security context', () => {
      assert.deepEqual(synthMySQL().podSpec.securityContext, {
        runAsUser: 999,
        runAsGroup: 999,
        fsGroup: 999,
        fsGroupChangePolicy: 'OnRootMismatch',
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
    });

    it('runs every container without privileges and with a read-only root file system', () => {
      for (const c of allContainers(synthMySQL().podSpec)) {
        assert.deepEqual(
          c.securityContext,
          {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          c.name,
        );
      }
    });

    it('gives mysqld writable emptyDirs for its socket, temporary files and member config', () => {
      const s = synthMySQL();
      const volumes = new Map(s.podSpec.volumes?.map((v) => [v.name, v]));
      const mysql = s.container('mysql');
      for (const path of ['/var/run/mysqld', '/tmp']) {
        const m = mountAt(mysql, path);
        assert.ok(m, `mysql mounts ${path}`);
        assert.notEqual(m.readOnly, true, path);
        assert.deepEqual(volumes.get(m.name)?.emptyDir, {}, path);
      }
      const member = mountAt(s.container('bootstrap'), '/etc/mysql/recon8s.d');
      assert.ok(member);
      assert.notEqual(member.readOnly, true);
      assert.deepEqual(volumes.get(member.name)?.emptyDir, {});
      assert.equal(mountAt(mysql, '/etc/mysql/recon8s.d')?.name, member.name);
    });

    it('mounts configuration and scripts read-only', () => {
      for (const c of allContainers(synthMySQL().podSpec)) {
        for (const path of ['/etc/mysql/recon8s', '/opt/recon8s']) {
          const m = mountAt(c, path);
          if (m) assert.equal(m.readOnly, true, `${c.name} ${path}`);
        }
      }
    });

    it('mounts no service account token and injects no Service variables', () => {
      const { podSpec } = synthMySQL();
      assert.equal(podSpec.automountServiceAccountToken, false);
      assert.equal(podSpec.enableServiceLinks, false);
    });
  });

  describe('credentials', () => {
    it('reads every password from the credentials Secret, never from a literal', () => {
      const s = synthMySQL({ backup: BACKUP });
      const backup = s.cronJob?.spec?.jobTemplate.spec?.template.spec?.containers ?? [];
      let seen = 0;
      for (const c of [...allContainers(s.podSpec), ...backup]) {
        for (const e of c.env ?? []) {
          if (!/PASSWORD/.test(e.name)) continue;
          seen++;
          assert.equal(e.value, undefined, `${c.name} ${e.name}`);
          assert.equal(e.valueFrom?.secretKeyRef?.name, 'shop-credentials', `${c.name} ${e.name}`);
        }
      }
      // The bootstrap's three and the backup's root password (mysqld's container has none).
      assert.ok(seen >= 4, `password variables seen: ${seen}`);
    });

    it('maps the root, replication and admin passwords to the root-password, replication-password and admin-password keys', () => {
      const s = synthMySQL();
      for (const name of ['bootstrap']) {
        const c = s.container(name);
        assert.deepEqual(env(c, 'MYSQL_ROOT_PASSWORD')?.valueFrom, {
          secretKeyRef: { name: 'shop-credentials', key: 'root-password' },
        });
        assert.deepEqual(env(c, 'MYSQL_REPLICATION_PASSWORD')?.valueFrom, {
          secretKeyRef: { name: 'shop-credentials', key: 'replication-password' },
        });
        assert.deepEqual(env(c, 'MYSQL_ADMIN_PASSWORD')?.valueFrom, {
          secretKeyRef: { name: 'shop-credentials', key: 'admin-password' },
        });
      }
    });

    it('gives the agent and mysqld no password in their environment but the credentials Secret as files, which the kubelet keeps up to date (a rotation reaches them without a restart)', () => {
      const s = synthMySQL({ credentialsSecretName: 'vault-synced', monitoring: { enabled: true } });
      const agent = s.container('agent');
      for (const name of ['agent', 'mysql'])
        assert.deepEqual(
          (s.container(name).env ?? []).filter((e) => /PASSWORD/.test(e.name) || e.valueFrom?.secretKeyRef),
          [],
          `the ${name} container reads no password from its environment`,
        );
      const mount = mountAt(agent, '/etc/recon8s/credentials');
      assert.equal(mount?.readOnly, true);
      const volume = s.podSpec.volumes?.find((v) => v.name === mount?.name);
      // The whole Secret, as files (not subPaths, which the kubelet never updates).
      assert.deepEqual(volume?.secret, { secretName: 'vault-synced', defaultMode: 0o440 });
      assert.equal(mountAt(agent, '/etc/recon8s/credentials')?.subPath, undefined);
      // Also beside mysqld, where local_sql (a person's kubectl exec) reads root's password as it is now.
      assert.equal(mountAt(s.container('mysql'), '/etc/recon8s/credentials')?.readOnly, true);
    });

    it('uses spec.credentialsSecretName', () => {
      const s = synthMySQL({ credentialsSecretName: 'vault-synced' });
      assert.equal(s.cluster.credentialsSecretName, 'vault-synced');
      assert.equal(env(s.container('bootstrap'), 'MYSQL_ROOT_PASSWORD')?.valueFrom?.secretKeyRef?.name, 'vault-synced');
      assert.equal(s.json.includes('shop-credentials'), false);
    });

    it('keeps passwords off the command lines of every container', () => {
      for (const c of allContainers(synthMySQL().podSpec)) {
        assert.equal(JSON.stringify([c.command, c.args]).includes('PASSWORD'), false, c.name);
      }
    });
  });

  describe('my.cnf', () => {
    const myCnf = (props?: Parameters<typeof synthMySQL>[0]) =>
      synthMySQL(props).configMap('shop-config').data?.['my.cnf'] ?? '';

    it('configures GTID replication, crash-safe replicas, the clone plugin and no X Protocol listener', () => {
      const lines = myCnf().split('\n');
      for (const line of [
        '[mysqld]',
        'gtid_mode=ON',
        'enforce_gtid_consistency=ON',
        'log_bin=binlog',
        'relay_log_recovery=ON',
        'skip_replica_start=ON',
        'plugin_load_add=mysql_clone.so',
        'bind_address=*',
        'port=3306',
        'mysqlx=OFF',
        'datadir=/var/lib/mysql/data',
        'socket=/var/run/mysqld/mysqld.sock',
        'pid_file=/var/run/mysqld/mysqld.pid',
      ]) {
        assert.ok(lines.includes(line), `my.cnf has ${line}`);
      }
    });

    it('loads semi-synchronous replication on every member, never falling back to asynchronous', () => {
      const lines = myCnf().split('\n');
      for (const line of [
        'plugin_load_add=semisync_source.so',
        'plugin_load_add=semisync_replica.so',
        'loose_rpl_semi_sync_replica_enabled=ON',
        'loose_rpl_semi_sync_source_timeout=4294967295',
        'loose_rpl_semi_sync_source_wait_point=AFTER_SYNC',
      ]) {
        assert.ok(lines.includes(line), `my.cnf has ${line}`);
      }
      // The controller enables the source side on the primary only.
      assert.equal(/rpl_semi_sync_source_enabled/.test(myCnf()), false);
    });

    it('requires TLS of every TCP login (require_secure_transport=ON), unless spec.mysqlConf turns it off', () => {
      const lines = myCnf().split('\n');
      assert.ok(lines.includes('require_secure_transport=ON'), myCnf());
      // The user's options come after recon8s' own: the last one read wins.
      const off = myCnf({ mysqlConf: { require_secure_transport: 'OFF' } }).split('\n');
      assert.ok(off.lastIndexOf('require_secure_transport=OFF') > off.indexOf('require_secure_transport=ON'));
    });

    it('includes the per-member directory last', () => {
      assert.match(myCnf(), /\n!includedir \/etc\/mysql\/recon8s\.d\n$/);
    });

    it('emits no option removed or deprecated in 8.4, nor the per-member ones', () => {
      const text = myCnf();
      for (const option of [
        'binlog_format',
        'log_slave_updates',
        'master_info_repository',
        'relay_log_info_repository',
        'default_authentication_plugin',
        'server_id',
        'read_only',
        'report_host',
      ]) {
        assert.equal(new RegExp(`^${option}=`, 'm').test(text), false, option);
      }
    });

    it('adds spec.mysqlConf after recon8s options, sorted by key', () => {
      const text = myCnf({ mysqlConf: { max_connections: '500', innodb_buffer_pool_size: '512M' } });
      const a = text.indexOf('innodb_buffer_pool_size=512M');
      const b = text.indexOf('max_connections=500');
      assert.ok(text.indexOf('plugin_load_add=') < a && a < b && b < text.indexOf('!includedir'), text);
    });

    it('quotes values the option-file reader would otherwise cut at a comment', () => {
      assert.ok(myCnf({ mysqlConf: { init_connect: "SET @tag='#1'" } }).includes(`init_connect="SET @tag='#1'"`));
    });
  });

  describe('Services', () => {
    it('has a headless Service that publishes members before they are ready', () => {
      const spec = synthMySQL().service('shop-headless').spec;
      assert.equal(spec?.clusterIP, 'None');
      assert.equal(spec?.publishNotReadyAddresses, true);
      assert.deepEqual(spec?.selector, SELECTOR);
    });

    it('routes the primary Service to the ready member the controller labelled primary, whatever its ordinal', () => {
      const spec = synthMySQL().service('shop-primary').spec;
      assert.deepEqual(spec?.selector, { ...SELECTOR, 'recon8s.dev/role': 'primary' });
      assert.equal(spec?.clusterIP, undefined);
      assert.equal(spec?.publishNotReadyAddresses, undefined);
    });

    it('routes the replicas Service to the ready members the controller labelled replica', () => {
      const spec = synthMySQL().service('shop-replicas').spec;
      assert.deepEqual(spec?.selector, { ...SELECTOR, 'recon8s.dev/role': 'replica' });
      assert.equal(spec?.publishNotReadyAddresses, undefined);
    });

    it('selects a member by its role label alone: primary, replica, or neither', () => {
      const s = synthMySQL();
      const primary = s.service('shop-primary').spec?.selector;
      const replicas = s.service('shop-replicas').spec?.selector;
      const pod = (role?: string) => ({
        ...s.statefulSet.spec?.template.metadata?.labels,
        ...(role ? { 'recon8s.dev/role': role } : {}),
      });
      assert.deepEqual(
        [primary, replicas].map((sel) => selects(sel, pod('primary'))),
        [true, false],
      );
      assert.deepEqual(
        [primary, replicas].map((sel) => selects(sel, pod('replica'))),
        [false, true],
      );
      for (const p of [pod('none'), pod()]) {
        assert.deepEqual(
          [primary, replicas].map((sel) => selects(sel, p)),
          [false, false],
        );
        assert.ok(selects(s.service('shop-headless').spec?.selector, p));
      }
    });

    it('serves port 3306 named mysql on every Service', () => {
      const s = synthMySQL();
      for (const name of ['shop-headless', 'shop-primary', 'shop-replicas']) {
        assert.deepEqual(s.service(name).spec?.ports, [{ name: 'mysql', port: 3306, targetPort: 'mysql' }], name);
      }
    });

    it('tells bootstrap and the agent the primary by its Service, which follows the role label', () => {
      const s = synthMySQL();
      for (const name of ['bootstrap', 'agent'])
        assert.equal(env(s.container(name), 'PRIMARY_HOST')?.value, 'shop-primary');
    });
  });

  describe('placement', () => {
    const hostnameTerm = { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: SELECTOR } };
    const preferred = {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: hostnameTerm }],
      },
    };
    const nodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['db'] }] }],
      },
    };

    it('prefers spreading the members over nodes by default, with no zone spread', () => {
      const { podSpec, cluster } = synthMySQL();
      assert.deepEqual(cluster.spec.placement, { spreadMembers: 'Preferred', zoneSpread: 'None' });
      assert.deepEqual(podSpec.affinity, preferred);
      assert.ok(!('topologySpreadConstraints' in podSpec));
    });

    it('never puts two members on one node with spreadMembers Required', () => {
      assert.deepEqual(synthMySQL({ placement: { spreadMembers: 'Required' } }).podSpec.affinity, {
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [hostnameTerm] },
      });
    });

    it('keeps the members spread beside a nodeAffinity given in spec.affinity', () => {
      assert.deepEqual(synthMySQL({ affinity: { nodeAffinity } }).podSpec.affinity, { ...preferred, nodeAffinity });
      assert.deepEqual(
        synthMySQL({ affinity: { nodeAffinity }, placement: { spreadMembers: 'Required' } }).podSpec.affinity
          ?.podAntiAffinity,
        { requiredDuringSchedulingIgnoredDuringExecution: [hostnameTerm] },
      );
    });

    it("replaces the spread by spec.affinity's own podAntiAffinity (an empty one opts out)", () => {
      const own = {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 50, podAffinityTerm: { ...hostnameTerm, topologyKey: 'example.com/rack' } },
        ],
      };
      assert.deepEqual(synthMySQL({ affinity: { podAntiAffinity: own } }).podSpec.affinity, { podAntiAffinity: own });
      assert.deepEqual(
        synthMySQL({ affinity: { podAntiAffinity: {} }, placement: { spreadMembers: 'Required' } }).podSpec.affinity,
        { podAntiAffinity: {} },
      );
    });

    for (const [zoneSpread, whenUnsatisfiable] of [
      ['Preferred', 'ScheduleAnyway'],
      ['Required', 'DoNotSchedule'],
    ] as const) {
      it(`spreads the members over zones with zoneSpread ${zoneSpread} (${whenUnsatisfiable}), beside the node spread`, () => {
        const { podSpec } = synthMySQL({ placement: { zoneSpread } });
        assert.deepEqual(podSpec.topologySpreadConstraints, [
          {
            topologyKey: 'topology.kubernetes.io/zone',
            maxSkew: 1,
            whenUnsatisfiable,
            labelSelector: { matchLabels: SELECTOR },
            nodeTaintsPolicy: 'Honor',
          },
        ]);
        assert.deepEqual(podSpec.affinity, preferred);
      });
    }
  });

  describe('PodDisruptionBudget', () => {
    it('lets one member at a time be evicted, and unhealthy ones always', () => {
      const pdb = synthMySQL().disruptionBudget;
      assert.equal(pdb.apiVersion, 'policy/v1');
      assert.equal(pdb.spec?.maxUnavailable, 1);
      assert.deepEqual(pdb.spec?.selector, { matchLabels: SELECTOR });
      assert.equal(pdb.spec?.unhealthyPodEvictionPolicy, 'AlwaysAllow');
    });

    it('is rendered for a single member too', () => {
      assert.equal(synthMySQL({ replicas: 1 }).disruptionBudget.spec?.maxUnavailable, 1);
    });
  });

  describe('labels and annotations', () => {
    const props = { labels: { team: 'payments' }, annotations: { 'example.com/owner': 'alice' }, backup: BACKUP };

    it('puts spec.labels and spec.annotations on every object, with our labels', () => {
      for (const o of synthMySQL(props).objects) {
        const what = `${o.kind}/${o.metadata?.name}`;
        assert.equal(o.metadata?.labels?.team, 'payments', what);
        assert.equal(o.metadata?.labels?.['app.kubernetes.io/managed-by'], 'recon8s', what);
        assert.equal(o.metadata?.labels?.['app.kubernetes.io/instance'], 'shop', what);
        assert.deepEqual(o.metadata?.annotations, { 'example.com/owner': 'alice' }, what);
      }
    });

    it('puts them on the pod templates too', () => {
      const s = synthMySQL(props);
      const templates = [s.statefulSet.spec?.template.metadata, s.cronJob?.spec?.jobTemplate.spec?.template.metadata];
      for (const meta of templates) {
        assert.equal(meta?.labels?.team, 'payments');
        assert.equal(meta?.annotations?.['example.com/owner'], 'alice');
      }
    });

    it('keeps them out of every selector', () => {
      const s = synthMySQL(props);
      const selectors = [
        s.statefulSet.spec?.selector.matchLabels,
        s.disruptionBudget.spec?.selector?.matchLabels,
        s.podSpec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm
          .labelSelector?.matchLabels,
        ...['shop-headless', 'shop-primary', 'shop-replicas'].map((n) => s.service(n).spec?.selector),
      ];
      for (const sel of selectors) assert.equal(sel?.team, undefined);
    });

    it('emits no annotations map when there are none', () => {
      for (const o of synthMySQL().objects)
        assert.equal(o.metadata?.annotations, undefined, `${o.kind}/${o.metadata?.name}`);
    });
  });

  describe('rolling on configuration changes', () => {
    const hash = (props?: Parameters<typeof synthMySQL>[0]) =>
      synthMySQL(props).statefulSet.spec?.template.metadata?.annotations?.['recon8s.dev/config-hash'];

    it('annotates the pod template with a hash of my.cnf and the scripts', () => {
      assert.match(hash() ?? '', /^[0-9a-f]{8}$/);
    });

    it('changes the hash when spec.mysqlConf changes', () => {
      assert.notEqual(hash({ mysqlConf: { max_connections: '500' } }), hash({ mysqlConf: { max_connections: '501' } }));
    });

    it('keeps the hash when only the backup changes: a backup setting never restarts the database', () => {
      assert.equal(hash(), hash({ backup: BACKUP }));
      assert.equal(hash({ backup: BACKUP }), hash({ backup: { ...BACKUP, retain: 3, schedule: '@daily' } }));
    });
  });

  describe('determinism', () => {
    it('synthesizes byte-identical output twice', () => {
      const props = { replicas: 2, mysqlConf: { b: '2', a: '1' }, labels: { team: 'x' }, backup: BACKUP };
      assert.equal(synthMySQL(props).json, synthMySQL(props).json);
    });

    it('does not depend on the order of spec.mysqlConf keys', () => {
      const cnf = (conf: Record<string, string>) =>
        synthMySQL({ mysqlConf: conf }).configMap('shop-config').data?.['my.cnf'];
      assert.equal(cnf({ b: '2', a: '1' }), cnf({ a: '1', b: '2' }));
    });
  });
});
