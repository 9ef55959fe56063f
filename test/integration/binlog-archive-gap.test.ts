// The binary-log archive job's gap detection (constructs/mysql/scripts/binlog.sh), on a real MySQL 9.7
// (the test image's root file system) and a real S3 server (versitygw), with the shipped binlog.sh run
// as the job runs it. Everything lives in fresh mount, PID and network namespaces (unshare): an
// overlay over the shared root, mysqld and versitygw on that namespace's own loopback, gone with it
// however the test ends. Needs root.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKUP_GRANTS, BACKUP_USER } from '../../constructs/mysql-member.js';
import { scriptFiles } from '../../constructs/mysql/scripts.js';
import { mysqlRootfs } from '../images/index.js';
import { S3_REGION, versitygwBinary } from '../s3/index.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import { memberDnsNames } from '../../lib/mysql/certificates.js';

const PASSWORD = `r00t'"\\#$ x`;

// Runs inside the namespaces. Prints "STEP <name>" and "REPORT <termination message>" lines.
const SANDBOX_SH = String.raw`set -euo pipefail
root=$1 dir=$2 versitygw=$3
m=$dir/merged
mkdir -p "$dir/upper" "$dir/work" "$m" "$dir/s3/backups"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$dir/upper,workdir=$dir/work" "$m"
mount -t proc proc "$m/proc"
mount --rbind /dev "$m/dev"
# The names the job connects to and verifies (ssl-mode=VERIFY_IDENTITY), as cluster DNS answers them: the
# primary Service and the member's own name (its report_host).
printf '127.0.0.1 localhost shop-primary shop-0.shop-headless\n' >"$m/etc/hosts"
ip link set lo up
mkdir -p "$m/opt/recon8s" "$m/srv/mysql" "$m/etc/mysql/tls"
cp "$dir/scripts/"* "$m/opt/recon8s/"
# The cluster's certificate, as the tls Secret's volume gives it: the job verifies the primary with ca.crt.
cp "$dir/tls/"* "$m/etc/mysql/tls/" && chown root:999 "$m/etc/mysql/tls/"* && chmod 0440 "$m/etc/mysql/tls/"*
chown 999:999 "$m/srv/mysql" "$m/tmp"
"$versitygw" --port 127.0.0.1:9000 --region "$S3_REGION" posix "$dir/s3" >"$dir/versitygw.log" 2>&1 &
as_mysql() { chroot --userspec=999:999 "$m" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
as_mysql mysqld --no-defaults --initialize-insecure --datadir=/srv/mysql/data >"$dir/init.log" 2>&1
as_mysql mysqld --no-defaults --datadir=/srv/mysql/data --socket=/tmp/mysqld.sock --port=3306 --bind-address=127.0.0.1 \
  --mysqlx=OFF --pid-file=/tmp/mysqld.pid --gtid-mode=ON --enforce-gtid-consistency=ON --log-bin=binlog --server-id=1 \
  --report-host=shop-0.shop-headless --skip-name-resolve --ssl-ca=/etc/mysql/tls/ca.crt --ssl-cert=/etc/mysql/tls/tls.crt \
  --ssl-key=/etc/mysql/tls/tls.key >"$dir/mysqld.log" 2>&1 &
for ((i = 0; i < 120; i++)); do as_mysql mysqladmin --no-defaults --socket=/tmp/mysqld.sock -uroot ping >/dev/null 2>&1 && break; sleep 0.5; done
sql() { as_mysql mysql --no-defaults --socket=/tmp/mysqld.sock -uroot --batch --skip-column-names -e "$1"; }
pw=$(printf '%s' "$MYSQL_BACKUP_PASSWORD" | sed "s/\\\\/\\\\\\\\/g; s/'/\\\\'/g")
# The job's account exactly as the cluster has it (the constructs' user and grants): no root over TCP at all.
sql "CREATE USER '$BACKUP_USER'@'%' IDENTIFIED BY '$pw' REQUIRE SSL; GRANT $BACKUP_GRANTS ON *.* TO '$BACKUP_USER'@'%'; CREATE DATABASE t; CREATE TABLE t.r (id INT PRIMARY KEY)"
store() { # rclone as the job has it, for what the test plays the backup job's part in
  chroot "$m" env -i PATH=/usr/bin:/bin RCLONE_CONFIG= RCLONE_CONFIG_S_TYPE=s3 RCLONE_CONFIG_S_PROVIDER=Other \
    RCLONE_CONFIG_S_ENDPOINT=http://127.0.0.1:9000 RCLONE_CONFIG_S_ACCESS_KEY_ID="$ROOT_ACCESS_KEY_ID" \
    RCLONE_CONFIG_S_SECRET_ACCESS_KEY="$ROOT_SECRET_ACCESS_KEY" RCLONE_CONFIG_S_REGION="$S3_REGION" \
    RCLONE_CONFIG_S_FORCE_PATH_STYLE=true RCLONE_CONFIG_S_NO_CHECK_BUCKET=true rclone "$@"
}
# A completed backup as backup.sh leaves it: its manifest, written last, names its GTID set.
backup() { printf '{"name":"%s","gtidSet":"%s"}' "$1" "$(sql 'SELECT REPLACE(@@GLOBAL.gtid_executed, "\n", "")')" | store rcat "s:backups/shop/base/$1/manifest.json"; }
# The binary-log job, as its pod runs it (environment from the construct, passwords included).
job() {
  echo "STEP $1"
  rm -f "$m/tmp/termination-log"
  chroot --userspec=999:999 "$m" env -i PATH=/usr/local/bin:/usr/bin:/bin CLUSTER_NAME=shop PRIMARY_HOST=shop-primary \
    MYSQL_BACKUP_PASSWORD="$MYSQL_BACKUP_PASSWORD" STORE_BUCKET=backups STORE_PREFIX=shop \
    RCLONE_CONFIG_STORE_ENDPOINT=http://127.0.0.1:9000 RCLONE_CONFIG_STORE_ACCESS_KEY_ID="$ROOT_ACCESS_KEY_ID" \
    RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY="$ROOT_SECRET_ACCESS_KEY" RCLONE_CONFIG_STORE_REGION="$S3_REGION" \
    RCLONE_CONFIG_STORE_FORCE_PATH_STYLE=true TERMINATION_LOG=/tmp/termination-log \
    bash /opt/recon8s/binlog.sh >>"$dir/job.log" 2>&1 || echo "EXIT $?"
  echo "REPORT $(cat "$m/tmp/termination-log" 2>/dev/null)"
}
# Every closed binary log gone, as binlog_expire_logs_seconds would remove them.
expire() { sql "FLUSH BINARY LOGS"; sql "PURGE BINARY LOGS TO '$(sql 'SHOW BINARY LOG STATUS' | cut -f1)'"; }

sql "INSERT INTO t.r VALUES (1)"
job no-backup-yet
backup 20261124T030000Z
sql "INSERT INTO t.r VALUES (2)"
job archived
expire
job archived-then-expired
sql "INSERT INTO t.r VALUES (3)"
sql "INSERT INTO t.r VALUES (4)"
expire
echo "PURGED $(sql 'SELECT REPLACE(@@GLOBAL.gtid_purged, "\n", "")')"
job expired-unarchived
backup 20261124T040000Z
job newer-backup
`;

interface Step {
  readonly name: string;
  readonly reason: string;
  readonly report: Record<string, string>;
  readonly exit?: string;
}

describe('the binary-log archive job finds logs that expired unarchived (real MySQL 9.7 and S3)', function () {
  this.timeout(20 * 60_000);
  const steps = new Map<string, Step>();
  let purged = '';
  let dir = '';

  before(async function () {
    this.timeout(20 * 60_000);
    if (process.getuid?.() !== 0)
      throw new Error('needs root (namespaces, overlay mounts, chroot): run the tests as root');
    const root = await mysqlRootfs();
    dir = mkdtempSync(join(tmpdir(), 'recon8s-binlog-gap-'));
    mkdirSync(join(dir, 'scripts'));
    // A CA of the test's own and the member's certificate, as the controller issues them.
    mkdirSync(join(dir, 'tls'));
    const ca = issueCa('recon8s binlog-gap/shop CA', new Date());
    const cert = issueServerCertificate(
      ca,
      'shop.binlog-gap',
      memberDnsNames({ namespace: 'binlog-gap', members: ['shop-0.shop-headless'], services: ['shop-primary'] }),
      new Date(),
    );
    writeFileSync(join(dir, 'tls', 'ca.crt'), cert.caPem);
    writeFileSync(join(dir, 'tls', 'tls.crt'), cert.certPem);
    writeFileSync(join(dir, 'tls', 'tls.key'), cert.keyPem);
    for (const [name, text] of Object.entries(scriptFiles())) {
      // The namespace's mysqld listens where the job looks for the primary: nothing to change.
      writeFileSync(join(dir, 'scripts', name), text);
    }
    const r = spawnSync(
      'unshare',
      [
        '--mount',
        '--pid',
        '--net',
        '--fork',
        '--kill-child',
        'bash',
        '-c',
        SANDBOX_SH,
        'sandbox',
        root,
        dir,
        versitygwBinary(),
      ],
      {
        encoding: 'utf8',
        timeout: 10 * 60_000,
        killSignal: 'SIGKILL',
        // Credentials in the environment only, never on a command line.
        env: {
          PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
          MYSQL_BACKUP_PASSWORD: PASSWORD,
          BACKUP_USER,
          BACKUP_GRANTS,
          S3_REGION,
          ROOT_ACCESS_KEY_ID: `RECON8S${randomBytes(6).toString('hex').toUpperCase()}`,
          ROOT_SECRET_ACCESS_KEY: randomBytes(18).toString('base64url'),
        },
      },
    );
    let current: { name: string; exit?: string } | undefined;
    for (const line of r.stdout.split('\n')) {
      const [word = '', ...rest] = line.split(' ');
      const value = rest.join(' ');
      if (word === 'STEP') current = { name: value };
      else if (word === 'EXIT' && current) current.exit = value;
      else if (word === 'PURGED') purged = value;
      else if (word === 'REPORT' && current) {
        const match = /^(\w+): (.*)$/.exec(value);
        steps.set(current.name, {
          name: current.name,
          reason: match?.[1] ?? '',
          report: match ? (JSON.parse(match[2] ?? '{}') as Record<string, string>) : {},
          ...(current.exit ? { exit: current.exit } : {}),
        });
      }
    }
    assert.equal(r.status, 0, `the sandbox failed (${r.status ?? r.signal}): ${r.stdout}${r.stderr}`);
    assert.equal(steps.size, 5, r.stdout);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const step = (name: string): Step => {
    const s = steps.get(name);
    assert.ok(s, `no step ${name}`);
    assert.equal(s.exit, undefined, `${name}: the job failed`);
    return s;
  };

  it('finds no gap before the first backup (nothing could be restored anyway), nor while every log is archived', () => {
    for (const name of ['no-backup-yet', 'archived']) assert.equal(step(name).reason, 'BinlogsArchived', name);
  });

  it('finds no gap when logs expire after they were archived', () => {
    assert.equal(step('archived-then-expired').reason, 'BinlogsArchived');
  });

  it('reports BinlogArchiveGap naming exactly the transactions that expired unarchived, and still archives the rest', () => {
    const s = step('expired-unarchived');
    assert.equal(s.reason, 'BinlogArchiveGap');
    const archived = step('archived-then-expired').report.archivedGtids ?? '';
    // The setup and the first two rows, all archived (1-N); rows 3 and 4 (N+1, N+2) expired unarchived.
    const [, uuid = '', last = '0'] = /^([0-9a-f-]+):1-(\d+)$/.exec(archived) ?? [];
    const n = Number(last);
    assert.ok(uuid && n > 0, `archived ${archived}`);
    assert.equal(purged, `${uuid}:1-${n + 2}`);
    assert.equal(s.report.gap, `${uuid}:${n + 1}-${n + 2}`);
    assert.equal(s.report.newestBackup, '20261124T030000Z');
    assert.equal(s.report.archivedGtids, archived);
    assert.ok(s.report.coveredUntil, 'what it archived still counts');
  });

  it('finds the gap closed once a newer backup holds those transactions', () => {
    assert.equal(step('newer-backup').reason, 'BinlogsArchived');
  });
});
