import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { MYSQL_GAVE_UP_PREFIX } from '../../constructs/index.js';
import { generatedScriptLayout, generatedScriptSources } from '../../constructs/generated-sources.js';
import { readScriptSources } from '../../scripts/script-sources.js';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { scriptSandbox, shippedScripts } from './support/mysql-scripts.js';
import { allContainers, synthMySQL } from './support/mysql-synth.js';

// Passwords with every character that could break quoting on the way to mysql.
const ROOT_PASSWORD = `r00t'"\\#$ x`;
const REPLICATION_PASSWORD = `repl'"\\#;--`;
const ADMIN_PASSWORD = `4dmin'"\\#%s`;
const CLONE_PASSWORD = `cl0ne'"\\#;--`;
const BACKUP_PASSWORD = `b4ckup'"\\$x`;
const PASSWORDS = {
  MYSQL_ROOT_PASSWORD: ROOT_PASSWORD,
  MYSQL_REPLICATION_PASSWORD: REPLICATION_PASSWORD,
  MYSQL_ADMIN_PASSWORD: ADMIN_PASSWORD,
  MYSQL_CLONE_PASSWORD: CLONE_PASSWORD,
  MYSQL_BACKUP_PASSWORD: BACKUP_PASSWORD,
};
const MEMBER = { HEADLESS_SERVICE: 'shop-headless', PRIMARY_HOST: 'shop-primary', ...PASSWORDS };

/** The argv lines the fakes recorded (not the credentials or SQL they were handed). */
const argvLines = (calls: string) =>
  calls.split('\n').filter((l) => /^(mysql|mysqld|mysqladmin|mysqldump|mysql_tzinfo_to_sql) /.test(l));

/**
 * What every command line the scripts ran holds: no password, and each mysql client with its own
 * commands off (`\!` would run a shell, `source` read a file, from whatever SQL it is fed) and no LOAD
 * DATA LOCAL, whatever an option file says (common.sh: mysql_client).
 */
function assertCommandLines(calls: string): void {
  for (const line of argvLines(calls)) {
    for (const p of [
      ROOT_PASSWORD,
      REPLICATION_PASSWORD,
      ADMIN_PASSWORD,
      CLONE_PASSWORD,
      BACKUP_PASSWORD,
      'r00t',
      "repl'",
      '4dmin',
      'cl0ne',
      'b4ckup',
    ])
      assert.equal(line.includes(p), false, `a password is on a command line: ${line}`);
    if (line.startsWith('mysql '))
      assert.match(line, /^mysql --(defaults-extra-file=\S+|no-defaults) --commands=OFF --local-infile=0 /, line);
  }
}

describe('MySQLCluster scripts', () => {
  let box: ScriptSandbox;
  beforeEach(() => {
    box = scriptSandbox();
  });
  afterEach(() => box.cleanup());

  it('ships scripts that bash parses', () => {
    const scripts = shippedScripts();
    assert.deepEqual(Object.keys(scripts).sort(), [
      'backup.sh',
      'binlog-filter.sh',
      'binlog.sh',
      'bootstrap.sh',
      'common.sh',
      'encryption.sh',
      'find-binlog.sh',
      'init-config.sh',
      'layout.sh',
      'list-backups.sh',
      'physical.sh',
      'pre-stop.sh',
      'reprovision.sh',
      'restore.sh',
      'start-mysqld.sh',
      'store.sh',
      'verify-backup.sh',
    ]);
    for (const [name, text] of Object.entries(scripts)) {
      const r = spawnSync('bash', ['-n'], { input: text, encoding: 'utf8' });
      assert.equal(r.status, 0, `${name}: ${r.stderr}`);
    }
  });

  describe('their source, constructs/mysql/scripts/ (run npm run codegen after changing a script)', () => {
    for (const { path, text } of [generatedScriptLayout(), generatedScriptSources(readScriptSources())]) {
      it(`${path} is up to date`, () => {
        assert.equal(
          readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'),
          text,
          `${path} is stale: run npm run codegen`,
        );
      });
    }

    it('is what the ConfigMap ships, byte for byte', () => {
      const shipped = shippedScripts();
      const sources = readScriptSources();
      assert.deepEqual(Object.keys(sources).sort(), Object.keys(shipped).sort());
      for (const [name, text] of Object.entries(sources)) assert.equal(shipped[name], text, name);
    });
  });

  it('never enables xtrace and contains nothing that looks like a literal password', () => {
    for (const [name, text] of Object.entries(shippedScripts())) {
      assert.doesNotMatch(text, /set\s+-[a-z]*x|set -o xtrace/, name);
      assert.doesNotMatch(text, /password\s*[:=]\s*["']?[^\s"'$]/i, name);
    }
  });

  it('gives every container the environment its script requires', () => {
    const s = synthMySQL({ backup: { schedule: '@daily', persistentVolumeClaimName: 'b' } });
    const scripts = shippedScripts();
    const required = (script: string) =>
      [...(scripts[script] ?? '').matchAll(/^require_env (.+)$/gm)].flatMap((m) => (m[1] ?? '').split(' '));
    const backup = s.cronJob?.spec?.jobTemplate.spec?.template.spec?.containers ?? [];
    const byScript: [string, string][] = [
      // bootstrap.sh runs init-config.sh first.
      ['bootstrap', 'init-config.sh'],
      ['bootstrap', 'bootstrap.sh'],
      ['backup', 'backup.sh'],
    ];
    for (const [container, script] of byScript) {
      const c = [...allContainers(s.podSpec), ...backup].find((x) => x.name === container);
      assert.ok(c, container);
      const names = new Set((c.env ?? []).map((e) => e.name));
      const needed = required(script);
      assert.ok(needed.length > 0, script);
      for (const n of needed) assert.ok(names.has(n), `${container} lacks ${n}, which ${script} requires`);
    }
  });

  describe('common.sh', () => {
    const call = (fn: string, ...args: string[]) =>
      spawnSync('bash', ['-c', `. "${box.scripts}/common.sh"; ${fn} "$@"`, 'test', ...args], { encoding: 'utf8' });

    it('quotes option-file values the way mysqld reads them back', () => {
      assert.equal(call('cnf_quote', 'a"b\\c#d\ne\tf').stdout, '"a\\"b\\\\c#d\\ne\\tf"');
    });

    it('quotes SQL strings with backslash escapes', () => {
      assert.equal(call('sql_quote', `it's \\ here`).stdout, `'it\\'s \\\\ here'`);
    });

    it('writes client credentials as an option file', () => {
      assert.equal(call('client_cnf', 'root', 'se"cret').stdout, '[client]\nuser=root\npassword="se\\"cret"\n');
    });

    it('derives the ordinal from the pod name, and fails on a name without one', () => {
      const ordinal = (pod: string) =>
        spawnSync('bash', ['-c', `. "${box.scripts}/common.sh"; member_ordinal`], {
          env: { PATH: process.env.PATH, POD_NAME: pod },
          encoding: 'utf8',
        });
      assert.equal(ordinal('my-db-12').stdout, '12');
      assert.equal(ordinal('my-db-08').stdout, '8');
      const bad = ordinal('mydb');
      assert.equal(bad.status, 1);
      assert.match(bad.stderr, /cannot derive a StatefulSet ordinal from the pod name 'mydb'/);
    });
  });

  describe('init-config.sh', () => {
    const member = (pod: string) => {
      const dir = box.path('member');
      mkdirSync(dir, { recursive: true });
      const r = box.run('init-config.sh', { POD_NAME: pod, HEADLESS_SERVICE: 'shop-headless', MEMBER_CONFIG_DIR: dir });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(dir), ['member.cnf']);
      return readFileSync(`${dir}/member.cnf`, 'utf8');
    };

    it('makes every member, ordinal 0 included, read-only with server_id 100 + ordinal', () => {
      for (const ordinal of [0, 1, 2]) {
        const cnf = member(`shop-${ordinal}`);
        assert.match(cnf, /^\[mysqld\]$/m);
        assert.match(cnf, new RegExp(`^server_id=${100 + ordinal}$`, 'm'));
        assert.match(cnf, /^read_only=ON$/m);
        assert.match(cnf, /^super_read_only=ON$/m);
        assert.match(cnf, new RegExp(`^report_host=shop-${ordinal}\\.shop-headless$`, 'm'));
        // Only the controller makes a member writable, over SQL: nothing here ever does.
        assert.doesNotMatch(cnf, /=OFF$/m);
      }
    });

    it('says the member waits for the controller to make it writable', () => {
      const dir = box.path('member');
      mkdirSync(dir);
      const r = box.run('init-config.sh', {
        POD_NAME: 'shop-0',
        HEADLESS_SERVICE: 'shop-headless',
        MEMBER_CONFIG_DIR: dir,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /member 0 of shop: server_id=100, read-only until the controller says otherwise/);
    });

    it('gives the same result when run again', () => {
      assert.equal(member('shop-1'), member('shop-1'));
    });
  });

  describe('bootstrap.sh', () => {
    const bootstrap = (pod: string, fake: Record<string, string> = {}) =>
      box.run('bootstrap.sh', { POD_NAME: pod, DATA_VOLUME: box.path('volume'), ...MEMBER, ...fake });
    /** The mysql calls that asked the primary Service whether it answers. */
    const primaryChecks = (calls: string) =>
      argvLines(calls).filter(
        (l) => l.startsWith('mysql ') && l.includes(' --host=shop-primary ') && l.endsWith('-e SELECT\\ 1'),
      );
    const volume = (...p: string[]) => box.path('volume', ...p);
    beforeEach(() => mkdirSync(volume()));

    it("writes the member's settings first (init-config.sh), then leaves an existing data directory alone", () => {
      mkdirSync(volume('data'));
      writeFileSync(volume('data', 'mysql.ibd'), 'x');
      const r = bootstrap('shop-2');
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /nothing to do/);
      assert.equal(argvLines(box.calls()).length, 0);
      assert.match(readFileSync(box.path('member-config', 'member.cnf'), 'utf8'), /^server_id=\d+$/m);
    });

    it('refuses a non-empty data directory without a data dictionary, and says why in its termination message', () => {
      mkdirSync(volume('data'));
      writeFileSync(volume('data', 'stray-file'), 'x');
      const r = bootstrap('shop-1', { TERMINATION_LOG: box.path('termination-log') });
      assert.equal(r.status, 1);
      assert.match(r.stderr, /not empty but holds no MySQL data dictionary/);
      assert.deepEqual(readdirSync(volume('data')), ['stray-file']);
      // What the controller shows in the member's condition (lib/reconcile/pod-problems.ts).
      assert.equal(
        readFileSync(box.path('termination-log'), 'utf8'),
        `${MYSQL_GAVE_UP_PREFIX}${volume('data')} is not empty but holds no MySQL data dictionary (mysql.ibd); refusing to overwrite it`,
      );
    });

    it('keeps a report already in the termination message when it then gives up', () => {
      writeFileSync(box.path('termination-log'), 'RestoreFailed: no backup named x');
      const r = spawnSync('bash', ['-c', `. "${box.scripts}/common.sh"; die "it went wrong"`], {
        encoding: 'utf8',
        env: { ...process.env, TERMINATION_LOG: box.path('termination-log') },
      });
      assert.equal(r.status, 1);
      assert.equal(readFileSync(box.path('termination-log'), 'utf8'), 'RestoreFailed: no backup named x');
    });

    it('initializes ordinal 0 of a new cluster, sets the passwords and creates the accounts without binary-logging them', () => {
      mkdirSync(volume('data'));
      writeFileSync(volume('data.bootstrap'), 'left over by an interrupted attempt');
      // No primary answers on the primary Service: the cluster is new.
      const r = bootstrap('shop-0', { FAKE_PRIMARY_STATUS: '1' });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(volume()).sort(), ['data']);
      assert.ok(existsSync(volume('data', 'mysql.ibd')));
      const calls = box.calls();
      assert.match(
        calls,
        /^mysqld --defaults-file=\/etc\/mysql\/recon8s\/my\.cnf --read-only=OFF --super-read-only=OFF --initialize-insecure --datadir=\S+\/data\.bootstrap$/m,
      );
      assert.match(calls, /^mysqld .* --skip-networking --mysqlx=OFF$/m);
      assert.ok(
        calls.includes(
          "SET SESSION sql_log_bin = 0;\nALTER USER 'root'@'localhost' IDENTIFIED BY 'r00t\\'\"\\\\#$ x';",
        ),
        calls,
      );
      assert.ok(
        calls.includes(
          [
            "CREATE USER IF NOT EXISTS 'replication'@'%' IDENTIFIED BY 'repl\\'\"\\\\#;--';",
            "ALTER USER 'replication'@'%' IDENTIFIED BY 'repl\\'\"\\\\#;--';",
            // Receiving the binary log only: cloning and the backup jobs have accounts of their own, over TLS.
            "GRANT REPLICATION SLAVE ON *.* TO 'replication'@'%';",
            "CREATE USER IF NOT EXISTS 'recon8s-clone'@'%' IDENTIFIED BY 'cl0ne\\'\"\\\\#;--' REQUIRE SSL;",
            "ALTER USER 'recon8s-clone'@'%' IDENTIFIED BY 'cl0ne\\'\"\\\\#;--' REQUIRE SSL;",
            "GRANT BACKUP_ADMIN ON *.* TO 'recon8s-clone'@'%';",
            "CREATE USER IF NOT EXISTS 'recon8s-backup'@'%' IDENTIFIED BY 'b4ckup\\'\"\\\\$x' REQUIRE SSL;",
            "ALTER USER 'recon8s-backup'@'%' IDENTIFIED BY 'b4ckup\\'\"\\\\$x' REQUIRE SSL;",
            "GRANT SELECT, SHOW VIEW, TRIGGER, EVENT, RELOAD, PROCESS, REPLICATION CLIENT, REPLICATION SLAVE ON *.* TO 'recon8s-backup'@'%';",
          ].join('\n'),
        ),
        calls,
      );
      assert.ok(
        calls.includes(
          [
            "CREATE USER IF NOT EXISTS 'recon8s-admin'@'%' IDENTIFIED BY '4dmin\\'\"\\\\#%s' REQUIRE SSL;",
            "ALTER USER 'recon8s-admin'@'%' IDENTIFIED BY '4dmin\\'\"\\\\#%s' REQUIRE SSL;",
            "GRANT SYSTEM_VARIABLES_ADMIN, REPLICATION_SLAVE_ADMIN, REPLICATION CLIENT, RELOAD, PROCESS, CONNECTION_ADMIN, SYSTEM_USER ON *.* TO 'recon8s-admin'@'%';",
            "GRANT SELECT ON performance_schema.* TO 'recon8s-admin'@'%';",
            // The metrics sidecar's former loopback account, which a restored history may hold.
            "DROP USER IF EXISTS 'recon8s-exporter'@'127.0.0.1';",
            'SHUTDOWN;',
          ].join('\n'),
        ),
        calls,
      );
      // One attempt to reach a primary, then no clone.
      assert.equal(primaryChecks(calls).length, 1, calls);
      assert.equal(calls.includes('CLONE INSTANCE'), false);
      assert.ok(calls.includes('FCTY'), 'the time zone tables are loaded, patched as the official image does');
      assert.ok(calls.includes('SHUTDOWN;'));
      assertCommandLines(calls);
    });

    it('clones a replica from the primary Service into a fresh data directory with its own identity', () => {
      const r = bootstrap('shop-2');
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(volume()).sort(), ['data']);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['mysql.ibd']);
      const calls = box.calls();
      assert.match(
        calls,
        /^mysql --defaults-extra-file=\S+ --commands=OFF --local-infile=0 --host=shop-primary --port=3306 /m,
      );
      assert.ok(calls.includes("SET GLOBAL clone_valid_donor_list = 'shop-primary:3306';"), calls);
      assert.ok(
        calls.includes(
          `CLONE INSTANCE FROM 'recon8s-clone'@'shop-primary':3306 IDENTIFIED BY 'cl0ne\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.bootstrap')}' REQUIRE SSL;`,
        ),
        calls,
      );
      assert.equal(calls.includes("ALTER USER 'root'"), false);
      assertCommandLines(calls);
    });

    it("upgrading: a pod of an earlier version's template (no clone password, these scripts already this version's) clones as replication, as it did; a new cluster refuses to start without the new accounts' passwords", () => {
      const r = bootstrap('shop-2', { MYSQL_CLONE_PASSWORD: '', MYSQL_BACKUP_PASSWORD: '' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /no MYSQL_CLONE_PASSWORD \(an earlier version's\): cloning as replication/);
      assert.ok(
        box
          .calls()
          .includes(
            `CLONE INSTANCE FROM 'replication'@'shop-primary':3306 IDENTIFIED BY 'repl\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.bootstrap')}' REQUIRE SSL;`,
          ),
        box.calls(),
      );
      rmSync(volume(), { recursive: true, force: true });
      mkdirSync(volume());
      const first = bootstrap('shop-0', { FAKE_PRIMARY_STATUS: '1', MYSQL_BACKUP_PASSWORD: '' });
      assert.notEqual(first.status, 0);
      assert.match(first.stderr, /the environment variable MYSQL_BACKUP_PASSWORD is not set/);
      assert.deepEqual(readdirSync(volume()), [], 'nothing initialized');
    });

    it('clones ordinal 0 too when a primary answers (its volume was lost), creating no account', () => {
      const r = bootstrap('shop-0');
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(volume()).sort(), ['data']);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['mysql.ibd']);
      const calls = box.calls();
      assert.ok(
        calls.includes(
          `CLONE INSTANCE FROM 'recon8s-clone'@'shop-primary':3306 IDENTIFIED BY 'cl0ne\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.bootstrap')}' REQUIRE SSL;`,
        ),
        calls,
      );
      // It asked the primary Service once to decide, and once more before cloning.
      assert.equal(primaryChecks(calls).length, 2, calls);
      // Only the throwaway recipient is initialized, never the data directory itself.
      assert.doesNotMatch(calls, /--initialize-insecure --datadir=\S+\/data\.bootstrap$/m);
      assert.equal(/CREATE USER|ALTER USER/.test(calls), false, calls);
      assertCommandLines(calls);
    });

    it('always clones a member other than ordinal 0, asking the primary only to wait for it', () => {
      assert.equal(bootstrap('shop-1').status, 0);
      // Only the wait for the primary asks it (once, as it answers); no check decides anything.
      assert.equal(primaryChecks(box.calls()).length, 1, box.calls());
    });

    it('never initializes ordinal 0 once the cluster has a recorded history: it clones a primary holding it, even with an empty volume', () => {
      const r = bootstrap('shop-0', { RECON8S_RECORDED_HISTORY: 'shop-0' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /has a recorded history \(its first primary was shop-0\)/);
      const calls = box.calls();
      assert.ok(calls.includes('CLONE INSTANCE FROM'), calls);
      // Only the throwaway recipient is initialized; no account is created; the primary asked only to wait for it.
      assert.doesNotMatch(calls, /--initialize-insecure --datadir=\S+\/data\.bootstrap$/m);
      assert.equal(/CREATE USER|ALTER USER/.test(calls), false, calls);
      assert.equal(primaryChecks(calls).length, 1, calls);
    });

    it("queues for a donor busy with another member's clone (ERROR 3634, members started together), then clones", () => {
      const r = bootstrap('shop-2', { FAKE_CLONE_BUSY: '2', CLONE_RETRY_SECONDS: '0' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr.match(/serves another member's clone; trying again/g)?.length, 2, r.stderr);
      assert.equal(box.calls().match(/CLONE INSTANCE FROM/g)?.length, 3);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['mysql.ibd']);
    });

    it('fails the attempt on any other clone error, saying it, and leaves nothing half-made', () => {
      const r = bootstrap('shop-2', { FAKE_CLONE_ERROR: 'ERROR 1045 (28000): Access denied for user' });
      assert.equal(r.status, 1);
      assert.match(r.stderr, /the clone of shop-primary:3306 failed: ERROR 1045 \(28000\): Access denied/);
      assert.equal(existsSync(volume('data')), false);
      assert.equal(existsSync(volume('bootstrap-recipient')), false);
    });

    it('leaves nothing half-made when the clone fails', () => {
      const r = box.run('bootstrap.sh', { POD_NAME: 'shop-1', DATA_VOLUME: volume(), ...MEMBER, FAKE_SQL_STATUS: '1' });
      assert.equal(r.status, 1);
      // No data directory that mysqld would start from, and the throwaway server's files are gone;
      // the next attempt removes the staging directory before it starts again.
      assert.equal(existsSync(volume('data')), false);
      assert.equal(existsSync(volume('bootstrap-recipient')), false);
    });
  });

  describe('backup.sh', () => {
    const dir = () => box.path('backup');
    const OLD = ['20200101T000000Z', '20200102T000000Z', '20200103T000000Z', '20200104T000000Z'].map(
      (t) => `shop-${t}.sql.gz`,
    );
    const FOREIGN = ['shop-eu-20200101T000000Z.sql.gz', 'shop-notes.txt'];
    const backup = (fake: Record<string, string> = {}) =>
      box.run('backup.sh', {
        CLUSTER_NAME: 'shop',
        BACKUP_HOST: 'shop-replicas',
        BACKUP_RETAIN: '3',
        BACKUP_DIR: dir(),
        // The job's only password: backup.sh must not need root's (the pod has none).
        MYSQL_BACKUP_PASSWORD: PASSWORDS.MYSQL_BACKUP_PASSWORD,
        ...fake,
      });
    beforeEach(() => {
      mkdirSync(dir());
      for (const f of [...OLD, ...FOREIGN]) writeFileSync(`${dir()}/${f}`, 'x');
    });

    it('writes a gzipped dump and keeps only the newest BACKUP_RETAIN backups of this cluster', () => {
      const r = backup();
      assert.equal(r.status, 0, r.stderr);
      const files = readdirSync(dir()).sort();
      const fresh = files.filter((f) => /^shop-\d{8}T\d{6}Z\.sql\.gz$/.test(f) && !OLD.includes(f));
      assert.equal(fresh.length, 1, files.join(' '));
      assert.deepEqual(files, [...FOREIGN, ...OLD.slice(-2), ...fresh].sort());
      assert.match(gunzipSync(readFileSync(`${dir()}/${fresh[0]}`)).toString(), /^-- the dump\n/);
    });

    const newestDump = () => {
      const fresh = readdirSync(dir()).filter((f) => /^shop-\d{8}T\d{6}Z\.sql\.gz$/.test(f) && !OLD.includes(f));
      return gunzipSync(readFileSync(`${dir()}/${fresh[0]}`)).toString();
    };

    it('dumps the application schemas of one member consistently, never the mysql schema, restorable into a new primary', () => {
      assert.equal(backup().status, 0);
      const argv = argvLines(box.calls()).find((l) => l.startsWith('mysqldump '));
      assert.ok(argv, box.calls());
      const args = argv.split(' ');
      // The member the replicas Service picked (its report_host: shop-1.shop-headless), by its own name.
      for (const flag of [
        '--host=shop-1.shop-headless',
        '--single-transaction',
        '--routines',
        '--events',
        '--triggers',
        '--set-gtid-purged=COMMENTED',
        '--hex-blob',
      ]) {
        assert.ok(args.includes(flag), `${flag} in ${argv}`);
      }
      assert.deepEqual(args.slice(args.indexOf('--databases') + 1), ['orders', 'shop']);
      assert.ok(!args.includes('--all-databases'), argv);
      // Binary logging stays on while a restore runs, so the restored rows reach the new cluster's replicas.
      assert.doesNotMatch(newestDump(), /SQL_LOG_BIN= 0/);
      assertCommandLines(box.calls());
    });

    it('appends the application accounts as listed, with their password hashes, then their grants', () => {
      assert.equal(backup().status, 0);
      const accounts = newestDump().split('-- recon8s: the application accounts\n')[1] ?? '';
      assert.equal(
        accounts,
        [
          'CREATE USER IF NOT EXISTS `reader` IDENTIFIED WITH caching_sha2_password AS 0x2441;',
          'CREATE USER IF NOT EXISTS `app` IDENTIFIED WITH caching_sha2_password AS 0x2441;',
          'GRANT SELECT ON `orders`.* TO `reader`;',
          'GRANT SELECT ON `orders`.* TO `app`;',
          '',
        ].join('\n'),
      );
    });

    it('writes an empty but valid backup when there are no schemas and no accounts', () => {
      const r = backup({ FAKE_SCHEMAS: '', FAKE_ACCOUNTS: '' });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(!box.calls().includes('mysqldump'), 'no mysqldump without a schema to dump');
      assert.equal(newestDump(), '');
    });

    it("goes through the Service when the member's name is not a host name it can use", () => {
      const r = backup({ FAKE_REPORT_HOST: 'evil; rm -rf /' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(
        r.stderr,
        /cannot reach the member behind shop-replicas by its name 'evil; rm -rf \/'; every query goes through shop-replicas/,
      );
      const argv = argvLines(box.calls()).find((l) => l.startsWith('mysqldump ')) ?? '';
      assert.ok(argv.split(' ').includes('--host=shop-replicas'), argv);
    });

    it('keeps every existing backup and leaves no partial file when the dump fails', () => {
      const r = backup({ FAKE_DUMP_FAIL: '1' });
      assert.notEqual(r.status, 0);
      assert.deepEqual(readdirSync(dir()).sort(), [...OLD, ...FOREIGN].sort());
    });
  });
});
