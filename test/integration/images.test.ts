/*
 * The test images (test/images/) as the real node will use them: each archive is read back and
 * checked digest by digest, imported with `ctr images import` into a containerd of the test's own,
 * and run with runc from a read-only root file system as the image's own user. The images are built
 * once per run (support/images.ts) and once per recipe on the machine (the cache). Needs root.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import { DEFAULT_OPERATOR_IMAGE } from '../../constructs/index.js';
import { cachedBuild } from '../images/cache.js';
import type { BuiltImage, ImageName } from '../images/index.js';
import { MYSQL_REF, MYSQL_SERIES, OPERATOR_REF, WEB_REFS, ensureImages, mysqlRootfs } from '../images/index.js';
import type { InspectedArchive } from '../images/oci.js';
import { inspectArchive } from '../images/oci.js';
import { httpGetInNetns } from '../support/http-in-netns.js';
import { REPO_ROOT } from '../support/run.js';
import { synthMySQL } from '../unit/support/mysql-synth.js';
import type { CtrResult, PrivateContainerd } from './support/private-containerd.js';
import { startPrivateContainerd } from './support/private-containerd.js';
import { SHARED_IMAGES_HOOK_TIMEOUT_MS, sharedImages } from './support/images.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import { memberDnsNames } from '../../lib/mysql/certificates.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

describe('test images, built locally and cached by content', function () {
  this.timeout(120_000);
  let images: ReadonlyMap<ImageName, BuiltImage>;
  let containerd: PrivateContainerd | undefined;
  const inspected = new Map<ImageName, InspectedArchive>();
  const ctr = (args: readonly string[], timeoutMs?: number): string => {
    assert.ok(containerd);
    const r = containerd.ctr(args, { timeoutMs });
    assert.equal(r.status, 0, `ctr ${args.join(' ')}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };

  before(async function () {
    this.timeout(SHARED_IMAGES_HOOK_TIMEOUT_MS);
    images = await sharedImages();
    for (const [name, built] of images) inspected.set(name, await inspectArchive(built.archive));
    containerd = await startPrivateContainerd();
    for (const built of images.values()) ctr(['images', 'import', built.archive], 300_000);
  });
  after(async () => {
    await containerd?.stop();
  });

  describe('every archive', () => {
    it('is an OCI layout whose blobs match their descriptors, one named index entry per ref', () => {
      for (const [name, built] of images) {
        const archive = inspected.get(name);
        assert.ok(archive);
        assert.deepEqual([...archive.images.keys()].sort(), [...built.refs].sort(), name);
        assert.ok(built.refs.includes(built.ref));
        for (const { config, manifest } of archive.images.values()) {
          assert.deepEqual(
            config.rootfs.diff_ids,
            manifest.document.layers.map((l) => l.digest),
            `${name}: diff_ids are the layer digests`,
          );
          assert.equal(config.os, 'linux');
          assert.equal(config.architecture, 'amd64');
        }
      }
    });

    it('imports into containerd under exactly its refs (ctr -n k8s.io images import)', () => {
      const listed = ctr(['images', 'ls', '-q'])
        .split('\n')
        .filter((l) => l !== '');
      const expected = [...images.values()].flatMap((i) => i.refs);
      assert.deepEqual(listed.sort(), expected.sort());
    });

    it('is found again in the cache, not rebuilt, by the next ensureImages()', async function () {
      this.timeout(SHARED_IMAGES_HOOK_TIMEOUT_MS);
      const before = new Map([...images.values()].map((i) => [i.archive, statSync(i.archive).mtimeMs]));
      const again = await ensureImages({ onOutput: () => undefined });
      assert.deepEqual(again.map((i) => i.archive).sort(), [...before.keys()].sort());
      for (const [archive, mtime] of before)
        assert.equal(statSync(archive).mtimeMs, mtime, `${archive} was written again`);
    });
  });

  describe('mysql', () => {
    it(`is Debian's MySQL ${MYSQL_SERIES} with the official image's identity: mysql is 999:999 and owns /var/lib/mysql and /var/run/mysqld`, async () => {
      const root = await mysqlRootfs();
      const inRoot = (script: string): string => {
        const r = spawnSync('chroot', [root, '/bin/bash', '-c', script], { encoding: 'utf8', timeout: 30_000 });
        assert.equal(r.status, 0, `${script}\n${r.stdout}\n${r.stderr}`);
        return r.stdout;
      };
      assert.equal(inRoot('id -u mysql; id -g mysql'), '999\n999\n');
      assert.equal(inRoot('stat -L -c "%u:%g %a" /var/lib/mysql /var/run/mysqld'), '999:999 1777\n999:999 1777\n');
      assert.match(inRoot('mysqld --version'), new RegExp(`Ver ${MYSQL_SERIES.replace('.', '\\.')}\\.\\d+`));
      // What the pod templates and their scripts run (constructs/mysql), and the official image's tools.
      inRoot(
        'for p in mysqld mysql mysqladmin mysqldump mysqlbinlog mysql_tzinfo_to_sql bash sed awk gzip sync mv rm sleep; do command -v "$p" >/dev/null || { echo "$p is missing"; exit 1; }; done',
      );
      inRoot('test -f /usr/lib/mysql/plugin/mysql_clone.so && test -d /usr/share/zoneinfo/Europe');
      const config = inspected.get('mysql')?.images.get(MYSQL_REF)?.config.config;
      assert.equal(config?.User, '999:999');
      assert.deepEqual(config?.Cmd, ['mysqld']);
    });

    it('runs mysqld from a read-only root as 999: initializes a data directory, answers SQL, loads the clone plugin', function () {
      this.timeout(180_000);
      const data = mkdtempSync(join(tmpdir(), 'recon8s-images-mysql-'));
      try {
        chownSync(data, 999, 999);
        const script = [
          'set -e',
          'mysqld --no-defaults --initialize-insecure --datadir=/var/lib/mysql/data --tmpdir=/var/lib/mysql',
          'mysqld --no-defaults --datadir=/var/lib/mysql/data --socket=/var/lib/mysql/s --pid-file=/var/lib/mysql/p --tmpdir=/var/lib/mysql ' +
            '--skip-networking --mysqlx=OFF --plugin-load-add=mysql_clone.so --log-error-verbosity=1 &',
          'for i in $(seq 120); do mysqladmin --no-defaults --socket=/var/lib/mysql/s -uroot ping >/dev/null 2>&1 && break; sleep 1; done',
          'mysql --no-defaults --socket=/var/lib/mysql/s -uroot -N -e "SELECT CURRENT_USER(), VERSION(); SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = \'clone\'"',
          'id -u',
          'mysqladmin --no-defaults --socket=/var/lib/mysql/s -uroot shutdown',
          'wait',
        ].join('\n');
        const out = ctr(
          [
            'run',
            '--rm',
            '--read-only',
            '--mount',
            `type=bind,src=${data},dst=/var/lib/mysql,options=rbind:rw`,
            MYSQL_REF,
            `mysql-${process.pid}`,
            'bash',
            '-c',
            script,
          ],
          170_000,
        );
        assert.match(out, new RegExp(`root@localhost\\s+${MYSQL_SERIES.replace('.', '\\.')}\\.\\d+`));
        assert.match(out, /^ACTIVE$/m);
        assert.match(out, /^999$/m);
      } finally {
        rmSync(data, { recursive: true, force: true });
      }
    });
    it('runs the first member of a rendered MySQLCluster (spec.image) unchanged: init containers, mysqld, the agent answering liveness and readiness (read-only until made the primary), the backup script', async function () {
      this.timeout(240_000);
      assert.ok(containerd);
      const synth = synthMySQL({ version: MYSQL_SERIES, image: MYSQL_REF, replicas: 1 }, 'shop');
      const pod = synth.podSpec;
      assert.equal(
        pod.securityContext?.runAsUser,
        999,
        'the image runs as its own user, 999: the same as the pod asks for',
      );
      const work = mkdtempSync(join(tmpdir(), 'recon8s-images-pod-'));
      const id = `shop-0-${process.pid}`;
      const secrets: Record<string, string> = {
        'root-password': 'r00t-Pa$$ "quoted"',
        'replication-password': 'repl-secret',
        'admin-password': `adm'n "secret"`,
        'clone-password': `cl0ne "secret"`,
        'backup-password': `b4ckup "secret"`,
      };
      const volumes = new Map<string, string>();
      const hostsFile = join(work, 'hosts');
      writeFileSync(hostsFile, '127.0.0.1 localhost shop-0.shop-headless shop-primary\n', { mode: 0o444 });
      for (const v of [...(pod.volumes ?? []), { name: 'data', emptyDir: {} }]) {
        const dir = join(work, v.name);
        mkdirSync(dir);
        if (v.configMap) {
          for (const [file, text] of Object.entries(synth.configMap(v.configMap.name ?? '').data ?? {}))
            writeFileSync(join(dir, file), text);
        } else if (v.secret?.secretName === 'shop-tls') {
          // The members' certificate, as the controller issues it into shop-tls (mode 0440, group 999).
          const ca = issueCa('recon8s images/shop CA', new Date());
          const cert = issueServerCertificate(
            ca,
            'shop.images',
            memberDnsNames({ namespace: 'images', members: ['shop-0.shop-headless'], services: ['shop-primary'] }),
            new Date(),
          );
          for (const [file, text] of [
            ['ca.crt', cert.caPem],
            ['tls.crt', cert.certPem],
            ['tls.key', cert.keyPem],
          ] as const) {
            writeFileSync(join(dir, file), text, { mode: 0o440 });
            chownSync(join(dir, file), 0, 999);
          }
        } else if (v.secret?.secretName === 'shop-credentials') {
          // The passwords, as the kubelet mounts the Secret (the agent reads them there). Readable by all
          // here: the agent runs as the image's own uid under ctr, not the pod's group 999.
          for (const [key, value] of Object.entries(secrets)) writeFileSync(join(dir, key), value, { mode: 0o444 });
        } else {
          chownSync(dir, 999, 999); // what fsGroup 999 gives an emptyDir or a volume
        }
        volumes.set(v.name, dir);
      }
      // The agent runs the recon8s image's entrypoint with the container's args, as the kubelet does
      // (ctr replaces the entrypoint with whatever it is given).
      const entrypoint = JSON.parse(
        /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'))?.[1] ?? '[]',
      ) as string[];
      const runArgs = (c: V1Container, extra: readonly string[] = []): string[] => {
        assert.equal(c.image, c.name === 'agent' ? DEFAULT_OPERATOR_IMAGE : MYSQL_REF);
        const env = (c.env ?? []).flatMap((e) => {
          if (e.value !== undefined) return [`${e.name}=${e.value}`];
          // The cluster's history ConfigMap (optional): a first member of a new cluster starts before it exists,
          // and the kubelet then leaves the variable unset.
          if (e.valueFrom?.configMapKeyRef?.optional === true) return [];
          if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') return [`${e.name}=shop-0`];
          if (e.valueFrom?.fieldRef?.fieldPath?.startsWith('status.podIP')) return [`${e.name}=127.0.0.1`];
          const key = e.valueFrom?.secretKeyRef?.key ?? '';
          assert.ok(key in secrets, `${c.name}: unexpected env source for ${e.name}`);
          return [`${e.name}=${secrets[key]}`];
        });
        const mounts = [
          ...(c.volumeMounts ?? []).map(
            (m) =>
              `type=bind,src=${volumes.get(m.name) ?? ''},dst=${m.mountPath},options=rbind:${m.readOnly ? 'ro' : 'rw'}`,
          ),
          // The pod's /etc/hosts, as the kubelet writes it (its own stable name), with the primary Service's
          // name that cluster DNS would answer: the scripts verify a member by the name they connect to.
          `type=bind,src=${hostsFile},dst=/etc/hosts,options=rbind:ro`,
        ];
        return [
          'run',
          '--rm',
          ...extra,
          ...(c.securityContext?.readOnlyRootFilesystem ? ['--read-only'] : []),
          ...env.flatMap((e) => ['--env', e]),
          ...mounts.flatMap((m) => ['--mount', m]),
          c.image ?? '',
          `${id}-${c.name}`,
          ...(c.command ?? (c.args ? entrypoint : [])),
          ...(c.args ?? []),
        ];
      };
      let server: ReturnType<PrivateContainerd['spawnCtr']> | undefined;
      let agentTask: ReturnType<PrivateContainerd['spawnCtr']> | undefined;
      try {
        for (const init of pod.initContainers ?? []) ctr(runArgs(init), 120_000);
        const mysql = synth.container('mysql');
        server = containerd.spawnCtr(runArgs(mysql));
        // The agent joins the mysql container's network, as containers of a pod share one. (ctr has no
        // --user: it runs as the image's own uid, 65532, not the pod's 999; that is proven on the node.)
        let mysqlPid = 0;
        for (let i = 0; i < 60 && !mysqlPid; i++) {
          await new Promise((r) => setTimeout(r, 500));
          const task = /^\S+-mysql\s+(\d+)\s+RUNNING/m.exec(containerd.ctr(['task', 'ls']).stdout);
          mysqlPid = Number(task?.[1] ?? 0);
        }
        assert.ok(mysqlPid, `the mysql container never ran:\n${server.output()}`);
        const agent = synth.container('agent');
        agentTask = containerd.spawnCtr(runArgs(agent, ['--with-ns', `network:/proc/${mysqlPid}/ns/net`]));
        /** An HTTP GET of a probe, from the pod's network, as the kubelet sends it. */
        const probe = (p: V1Probe | undefined): CtrResult => {
          const url = `http://127.0.0.1:${String(p?.httpGet?.port)}${p?.httpGet?.path ?? ''}`;
          return httpGetInNetns(`/proc/${mysqlPid}/ns/net`, url);
        };
        let live: CtrResult = { status: null, stdout: '', stderr: 'never probed' };
        for (let i = 0; i < 120 && live.status !== 0; i++) {
          await new Promise((r) => setTimeout(r, 1000));
          live = probe(mysql.livenessProbe);
        }
        assert.equal(
          live.status,
          0,
          `liveness never passed: ${live.stdout}${live.stderr}\n${server.output()}\nagent:\n${agentTask.output()}`,
        );
        // Every member starts read-only, the first one too: not ready until the controller makes it the primary.
        const waiting = probe(mysql.readinessProbe);
        assert.notEqual(waiting.status, 0, 'ready while read-only and not replicating');
        assert.match(
          `${waiting.stdout}${waiting.stderr}`,
          /read-only and not replicating \(waiting for the controller\)/,
        );
        // What the controller does to make it the primary (lib/mysql/member-sql.ts enableWrites, no semi-sync
        // with one member), as the administrative account bootstrap created, over TCP with TLS. (The mysql
        // container has no MYSQL_ADMIN_PASSWORD: the controller's password is given here, base64 on the command line.)
        const adminPassword = Buffer.from(secrets['admin-password'] ?? '').toString('base64');
        const promote = containerd.ctr(
          [
            'task',
            'exec',
            '--exec-id',
            'promote',
            `${id}-mysql`,
            'bash',
            '-c',
            `. /opt/recon8s/common.sh && mysql --defaults-extra-file=<(client_cnf recon8s-admin "$(base64 -d <<<${adminPassword})") --host=shop-0.shop-headless --port=3306 --ssl-mode=VERIFY_IDENTITY --ssl-ca=/etc/mysql/tls/ca.crt --batch -e "SET GLOBAL rpl_semi_sync_source_enabled = OFF; SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF"`,
          ],
          { timeoutMs: 30_000 },
        );
        assert.equal(promote.status, 0, `${promote.stdout}${promote.stderr}`);
        let ready: CtrResult = { status: null, stdout: '', stderr: 'never probed' };
        for (let i = 0; i < 30 && ready.status !== 0; i++) {
          if (i > 0) await new Promise((r) => setTimeout(r, 1000));
          ready = probe(mysql.readinessProbe);
        }
        assert.equal(ready.status, 0, `readiness never passed: ${ready.stdout}${ready.stderr}\n${server.output()}`);
        // The backup job's script (same image, same scripts ConfigMap) dumps it with the image's mysql
        // client, mysqldump and gzip: the application's schema, never the mysql schema, from the primary
        // Service and then the member by its name (both in the pod's /etc/hosts), each verified by name.
        const backup = containerd.ctr(
          [
            'task',
            'exec',
            '--exec-id',
            'backup',
            `${id}-mysql`,
            'bash',
            '-c',
            [
              '. /opt/recon8s/common.sh && local_sql -e "CREATE DATABASE shopdb; CREATE TABLE shopdb.orders (id INT PRIMARY KEY); INSERT INTO shopdb.orders VALUES (1)"',
              // The job has the backup account's password in its environment, and no other (the mysql
              // container has none: local_sql above read root's from the mounted Secret).
              'pw=$(cat "$RECON8S_CREDENTIALS_DIR/backup-password") && MYSQL_BACKUP_PASSWORD=$pw CLUSTER_NAME=shop BACKUP_HOST=shop-primary BACKUP_RETAIN=1 BACKUP_DIR=/tmp bash /opt/recon8s/backup.sh',
              'gzip -dc /tmp/shop-*.sql.gz | grep -E "^(CREATE TABLE|CREATE DATABASE|INSERT INTO)" >/tmp/dumped',
            ].join(' && '),
          ],
          { timeoutMs: 60_000 },
        );
        assert.equal(backup.status, 0, `${backup.stdout}${backup.stderr}`);
        const dumped = readFileSync(join(volumes.get('tmp') ?? '', 'dumped'), 'utf8')
          .trim()
          .split('\n');
        assert.equal(dumped.length, 3, `the application schema only:\n${dumped.join('\n')}`);
        assert.match(dumped[0] ?? '', /^CREATE DATABASE .*`shopdb`/);
        assert.match(dumped[1] ?? '', /^CREATE TABLE `orders` \(/);
        assert.equal(dumped[2], 'INSERT INTO `orders` VALUES (1);');
        ctr(['task', 'kill', '--signal', 'SIGTERM', `${id}-mysql`]);
        assert.equal(await server.exited, 0, `mysqld did not shut down cleanly on SIGTERM:\n${server.output()}`);
      } finally {
        if (agentTask && agentTask.child.exitCode === null) {
          containerd.ctr(['task', 'kill', '--signal', 'SIGKILL', `${id}-agent`]);
          await agentTask.exited;
        }
        if (server && server.child.exitCode === null) {
          containerd.ctr(['task', 'kill', '--signal', 'SIGKILL', `${id}-mysql`]);
          await server.exited;
        }
        rmSync(work, { recursive: true, force: true });
      }
    });
  });

  describe('web', () => {
    it('carries two tags that differ only in the version they report, as 65532 with /web as entrypoint', () => {
      const archive = inspected.get('web');
      const v1 = archive?.images.get(WEB_REFS.v1);
      const v2 = archive?.images.get(WEB_REFS.v2);
      assert.ok(v1 && v2);
      assert.deepEqual(v1.manifest.document.layers, v2.manifest.document.layers);
      for (const [img, version] of [
        [v1, '1'],
        [v2, '2'],
      ] as const) {
        assert.equal(img.config.config.User, '65532:65532');
        assert.deepEqual(img.config.config.Entrypoint, ['/web']);
        assert.ok(img.config.config.Env?.includes(`WEB_VERSION=${version}`));
      }
    });

    it('answers HTTP with its version and host name as 65532 from a read-only root, and exits 0 on SIGTERM', async function () {
      this.timeout(60_000);
      assert.ok(containerd);
      const port = await freePort();
      const id = `web-${process.pid}`;
      const server = containerd.spawnCtr([
        'run',
        '--rm',
        '--net-host',
        '--read-only',
        '--env',
        `PORT=${port}`,
        WEB_REFS.v2,
        id,
      ]);
      try {
        let body = '';
        for (let i = 0; i < 400 && body === ''; i++) {
          body = await fetch(`http://127.0.0.1:${port}/`)
            .then((r) => r.text())
            .catch(() => '');
          if (body === '') await new Promise((r) => setTimeout(r, 100));
        }
        assert.match(body, /^recon8s-web version=2 host=\S+\n$/);
        assert.equal(await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.text()), 'ok\n');
        ctr(['task', 'kill', '--signal', 'SIGTERM', id]);
        assert.equal(await server.exited, 0, server.output());
        assert.match(server.output(), /uid=65532 /);
      } finally {
        server.child.kill('SIGKILL');
        containerd.ctr(['task', 'kill', '--signal', 'SIGKILL', id]);
      }
    });
  });

  describe('operator', () => {
    it("has the configuration the Dockerfile declares, under its own ref and the install manifests' default", () => {
      const archive = inspected.get('operator');
      assert.ok(archive);
      assert.ok(archive.images.has(DEFAULT_OPERATOR_IMAGE));
      const config = archive.images.get(OPERATOR_REF)?.config.config;
      assert.equal(config?.User, '65532:65532');
      assert.equal(config.WorkingDir, '/app');
      assert.deepEqual(config.Entrypoint, ['node', '--max-semi-space-size=4', 'build/lib/cli/main.js']);
      assert.deepEqual(config.Cmd, ['controller']);
      assert.deepEqual(Object.keys(config.ExposedPorts ?? {}).sort(), ['8080/tcp', '8081/tcp']);
      assert.equal(config.Labels?.['org.opencontainers.image.version'], PACKAGE_VERSION);
    });

    it('runs Node 24 and the packed package as 65532 from a read-only root: controller --help', () => {
      const out = ctr(
        [
          'run',
          '--rm',
          '--read-only',
          DEFAULT_OPERATOR_IMAGE,
          `operator-${process.pid}`,
          'node',
          '-e',
          'console.log(process.version, process.getuid(), process.cwd(), require("fs").readdirSync(".").join(","))',
        ],
        60_000,
      );
      assert.match(out, /^v24\.\d+\.\d+ 65532 \/app build,node_modules,package\.json$/m);
      const help = ctr(
        [
          'run',
          '--rm',
          '--read-only',
          OPERATOR_REF,
          `operator-help-${process.pid}`,
          'node',
          'build/lib/cli/main.js',
          'controller',
          '--help',
        ],
        60_000,
      );
      assert.match(help, /^Usage: recon8s controller/m);
    });
  });
});

describe('the test image cache', () => {
  it('never deletes through a mount: a failed build with a bind mount inside leaves the mounted data alone', async () => {
    const root = mkdtempSync(join(tmpdir(), 'recon8s-images-cache-mount-'));
    const data = mkdtempSync(join(tmpdir(), 'recon8s-images-data-'));
    try {
      writeFileSync(join(data, 'precious'), 'keep me');
      await assert.rejects(
        cachedBuild({
          name: 'thing',
          key: 'e'.repeat(64),
          root,
          log: () => undefined,
          build: async (dir) => {
            mkdirSync(join(dir, 'rootfs', 'var', 'lib', 'mysql'), { recursive: true });
            assert.equal(spawnSync('mount', ['--bind', data, join(dir, 'rootfs', 'var', 'lib', 'mysql')]).status, 0);
            throw new Error('the build died with its chroot mounts in place');
          },
        }),
        /died with its chroot mounts/,
      );
      assert.equal(readFileSync(join(data, 'precious'), 'utf8'), 'keep me');
      assert.deepEqual(
        readdirSync(root).filter((e) => !e.startsWith('.')),
        [],
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
      rmSync(data, { recursive: true, force: true });
    }
  });
});
