import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { ScriptSandbox } from './support/mysql-scripts.js';
import { SCRIPT_WAIT_MS, eventually, scriptSandbox, shippedScripts } from './support/mysql-scripts.js';
import { allContainers, synthMySQL } from './support/mysql-synth.js';

// Passwords with every character that could break quoting on the way to mysql.
const ROOT_PASSWORD = `r00t'"\\#$ x`;
const REPLICATION_PASSWORD = `repl'"\\#;--`;
const ADMIN_PASSWORD = `4dmin'"\\#%s`;
const PASSWORDS = {
  MYSQL_ROOT_PASSWORD: ROOT_PASSWORD,
  MYSQL_REPLICATION_PASSWORD: REPLICATION_PASSWORD,
  MYSQL_ADMIN_PASSWORD: ADMIN_PASSWORD,
};
const MEMBER = { HEADLESS_SERVICE: 'shop-headless', PRIMARY_HOST: 'shop-primary', ...PASSWORDS };

/** The argv lines the fakes recorded (not the credentials or SQL they were handed). */
const argvLines = (calls: string) =>
  calls.split('\n').filter((l) => /^(mysql|mysqld|mysqladmin|mysqldump|mysql_tzinfo_to_sql) /.test(l));

function assertPasswordsOnlyInCredentials(calls: string): void {
  for (const line of argvLines(calls)) {
    for (const p of [ROOT_PASSWORD, REPLICATION_PASSWORD, ADMIN_PASSWORD, 'r00t', "repl'", '4dmin'])
      assert.equal(line.includes(p), false, `a password is on a command line: ${line}`);
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
      'alive.sh',
      'backup.sh',
      'binlog-find.sh',
      'binlog.sh',
      'bootstrap.sh',
      'common.sh',
      'find-binlog.sh',
      'init-config.sh',
      'list-backups.sh',
      'ready.sh',
      'replication.sh',
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
      ['init-config', 'init-config.sh'],
      ['bootstrap', 'bootstrap.sh'],
      ['replication', 'replication.sh'],
      ['mysql', 'ready.sh'],
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

  describe('ready.sh', () => {
    const ready = (pod: string, fake: Record<string, string>) =>
      box.run('ready.sh', { POD_NAME: pod, ...PASSWORDS, ...fake });

    it('is ready on a writable member, whatever its ordinal, without looking at replication', () => {
      for (const pod of ['shop-0', 'shop-2']) {
        const r = ready(pod, { FAKE_READ_ONLY: '0', FAKE_STATES: '' });
        assert.equal(r.status, 0, r.stderr);
      }
      assert.equal(box.calls().includes('replication_applier_status'), false);
    });

    it('is ready on a read-only member that applies and receives, or reconnects to, the primary', () => {
      for (const pod of ['shop-0', 'shop-1']) {
        assert.equal(ready(pod, { FAKE_READ_ONLY: '1', FAKE_STATES: 'ON\tON' }).status, 0, pod);
        assert.equal(ready(pod, { FAKE_READ_ONLY: '1', FAKE_STATES: 'CONNECTING\tON' }).status, 0, pod);
      }
    });

    it('is not ready on a read-only member that does not replicate, whatever its ordinal', () => {
      for (const pod of ['shop-0', 'shop-1']) {
        const r = ready(pod, { FAKE_READ_ONLY: '1', FAKE_STATES: '' });
        assert.equal(r.status, 1, pod);
        assert.match(r.stderr, /read-only and not replicating \(waiting for the controller\)/);
      }
    });

    it('is not ready on a read-only member that stopped applying or receiving', () => {
      const applier = ready('shop-1', { FAKE_READ_ONLY: '1', FAKE_STATES: 'ON\tOFF' });
      assert.equal(applier.status, 1);
      assert.match(applier.stderr, /not applying \(applier: OFF\)/);
      const receiver = ready('shop-1', { FAKE_READ_ONLY: '1', FAKE_STATES: 'OFF\tON' });
      assert.equal(receiver.status, 1);
      assert.match(receiver.stderr, /not receiving \(receiver: OFF\)/);
    });

    it('hands the root password to mysql through an option file only', () => {
      ready('shop-0', {});
      const calls = box.calls();
      assert.ok(calls.includes(`password="r00t'\\"\\\\#$ x"`), calls);
      assertPasswordsOnlyInCredentials(calls);
    });
  });

  describe('alive.sh', () => {
    it('pings mysqld on its socket with the root password from a pipe, so that the login succeeds', () => {
      const r = box.run('alive.sh', PASSWORDS);
      assert.equal(r.status, 0, r.stderr);
      const calls = box.calls();
      assert.match(
        calls,
        /^mysqladmin --defaults-extra-file=\S+ --socket=\/var\/run\/mysqld\/mysqld\.sock --connect-timeout=4 ping$/m,
      );
      assert.ok(calls.includes(`[client]\nuser=root\npassword="r00t'\\"\\\\#$ x"`), calls);
      assertPasswordsOnlyInCredentials(calls);
    });
  });

  describe('replication.sh', function () {
    // Each test waits (up to SCRIPT_WAIT_MS, a few times at most) for the sidecar: generous for a busy machine.
    this.timeout(4 * SCRIPT_WAIT_MS);
    async function runSidecar(
      pod: string,
      fake: Record<string, string>,
      until: (calls: string) => boolean,
    ): Promise<string> {
      const child = box.start('replication.sh', { POD_NAME: pod, ...MEMBER, ...fake });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      try {
        await eventually(() => until(box.calls()), 'the sidecar to act');
      } finally {
        child.kill('SIGTERM');
      }
      // It exits cleanly on SIGTERM, well before the pod's 30 s grace period would have killed it.
      const code = await Promise.race([
        exited,
        new Promise<string>((r) => setTimeout(() => r('still running'), 10_000)),
      ]);
      assert.equal(code, 0);
      return box.calls();
    }

    /** The SQL the fakes read from stdin, statement lines only. */
    const sqlWritten = (calls: string) =>
      calls
        .split(/^STDIN$/m)
        .slice(1)
        .map((chunk) => chunk.split(/^(?:mysql|mysqld|mysqladmin) /m)[0] ?? '')
        .join('');
    /** How many times the sidecar asked whether the member is writable. */
    const writableChecks = (calls: string) => calls.split('-e SELECT\\ @@GLOBAL.read_only\n').length - 1;

    for (const [what, fails] of [
      ['the replication account', 'replication'],
      ['the admin account', 'recon8s-admin'],
    ]) {
      it(`creates or updates both accounts on a writable member when ${what} cannot log in`, async () => {
        const calls = await runSidecar('shop-2', { FAKE_READ_ONLY: '0', FAKE_LOGIN_FAILS: fails }, (c) =>
          c.includes('GRANT SELECT ON performance_schema.*'),
        );
        assert.ok(
          sqlWritten(calls).includes(
            [
              "SET SESSION sql_mode = '';",
              "CREATE USER IF NOT EXISTS 'replication'@'%' IDENTIFIED BY 'repl\\'\"\\\\#;--';",
              "ALTER USER 'replication'@'%' IDENTIFIED BY 'repl\\'\"\\\\#;--';",
              "GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO 'replication'@'%';",
              "CREATE USER IF NOT EXISTS 'recon8s-admin'@'%' IDENTIFIED BY '4dmin\\'\"\\\\#%s' REQUIRE SSL;",
              "ALTER USER 'recon8s-admin'@'%' IDENTIFIED BY '4dmin\\'\"\\\\#%s' REQUIRE SSL;",
              "GRANT SYSTEM_VARIABLES_ADMIN, REPLICATION_SLAVE_ADMIN, REPLICATION CLIENT, RELOAD, PROCESS, CONNECTION_ADMIN ON *.* TO 'recon8s-admin'@'%';",
              "GRANT SELECT ON performance_schema.* TO 'recon8s-admin'@'%';",
            ].join('\n'),
          ),
          calls,
        );
        // The accounts are written as root over the socket.
        assert.match(
          calls,
          /^mysql --defaults-extra-file=\S+ --socket=\/var\/run\/mysqld\/mysqld\.sock --batch --skip-column-names\nDEFAULTS\n\[client\]\nuser=root\n/m,
        );
        assertPasswordsOnlyInCredentials(calls);
      });
    }

    it('checks both logins over TCP, and writes nothing on a writable member when both work', async () => {
      // Once the logins were checked, the sidecar asks again whether the member is writable.
      const calls = await runSidecar('shop-0', { FAKE_READ_ONLY: '0' }, (c) => writableChecks(c) >= 2);
      const logins = calls.split('\n').filter((l) => l.startsWith('mysql ') && l.includes(' --host=127.0.0.1 '));
      assert.equal(logins.length, 2, calls);
      for (const login of logins) assert.match(login, / --port=3306 --get-server-public-key .* -e SELECT\\ 1$/);
      assert.ok(calls.includes(`[client]\nuser=replication\npassword="repl'\\"\\\\#;--"`), calls);
      assert.ok(calls.includes(`[client]\nuser=recon8s-admin\npassword="4dmin'\\"\\\\#%s"`), calls);
      assert.equal(calls.includes('STDIN'), false, calls);
      assertPasswordsOnlyInCredentials(calls);
    });

    it('checks the accounts as soon as a writable mysqld answers, not a polling period later', async () => {
      writeFileSync(`${box.fakeDir}/down`, '');
      const child = box.start('replication.sh', { POD_NAME: 'shop-1', ...MEMBER, FAKE_READ_ONLY: '0' });
      try {
        // mysqld is starting: the sidecar keeps asking, and does nothing else yet.
        await eventually(() => box.calls().split('Uptime').length > 2, 'the sidecar to ask mysqld twice');
        assert.equal(box.calls().includes('--host=127.0.0.1'), false);
        rmSync(`${box.fakeDir}/down`);
        await eventually(() => box.calls().includes('--host=127.0.0.1'), 'the accounts to be checked', 8000); // sooner than its 10 s polling period
      } finally {
        child.kill('SIGTERM');
      }
    });

    describe('self-fencing', () => {
      /** The fakes' records without the shell quoting of their argv. */
      const unquoted = (calls: string) => calls.replace(/\\/g, '');
      const fenced = (calls: string) => unquoted(calls).includes('SET GLOBAL offline_mode = OFF');
      // A writable semi-synchronous source, this pod 10.0.0.1, fencing at the first look that fails.
      const primary = {
        FAKE_READ_ONLY: '0',
        FAKE_SEMI: '1',
        POD_IP: '10.0.0.1',
        SELF_FENCE_AFTER_SECONDS: '0',
        FAKE_SESSIONS: '41 42',
      };

      it('makes a writable member read-only when no other member answers: clients refused and disconnected, semi-synchronous replication off, read-only, then open again, in that order', async () => {
        const calls = unquoted(
          await runSidecar('shop-0', { ...primary, FAKE_DNS: '10.0.0.1 10.0.0.2', FAKE_PRIMARY_STATUS: '1' }, fenced),
        );
        // It asked the other member, not itself.
        assert.match(calls, /--host=10\.0\.0\.2 /);
        assert.doesNotMatch(calls, /--host=10\.0\.0\.1 /);
        const steps = [
          'SET GLOBAL offline_mode = ON',
          'KILL CONNECTION 41',
          'SET GLOBAL rpl_semi_sync_source_enabled = OFF; SET GLOBAL super_read_only = ON',
          'SET GLOBAL offline_mode = OFF',
        ].map((step) => calls.indexOf(step));
        assert.ok(
          steps.every((at, i) => at >= 0 && (i === 0 || at > (steps[i - 1] ?? 0))),
          calls,
        );
      });

      it('makes itself read-only when it knows no other member and DNS does not answer (promoted before it ever looked them up)', async () => {
        const calls = await runSidecar('shop-0', primary, fenced);
        assert.ok(fenced(calls), calls);
      });

      it('stays writable when a member answers, even with a refusal, or when DNS names no other member', async () => {
        const cases: Record<string, string>[] = [
          { FAKE_DNS: '10.0.0.1 10.0.0.2' },
          {
            FAKE_DNS: '10.0.0.1 10.0.0.2',
            FAKE_PEER_ERROR: "ERROR 1045 (28000): Access denied for user 'replication'",
          },
          { FAKE_DNS: '10.0.0.1' },
        ];
        for (const env of cases) {
          box.cleanup();
          box = scriptSandbox();
          const calls = await runSidecar('shop-0', { ...primary, ...env }, (c) => writableChecks(c) >= 4);
          assert.equal(unquoted(calls).includes('offline_mode'), false, calls);
        }
      });

      it('finds its peers by IPv6 as well, and never counts an address of its own as a peer (dual-stack)', async () => {
        // IPv6 only: a peer that answers keeps it writable.
        const v6 = { ...primary, POD_IP: 'fd00::1', POD_IPS: 'fd00::1', FAKE_DNS: 'fd00::1 fd00::2' };
        const calls = unquoted(await runSidecar('shop-0', v6, (c) => writableChecks(c) >= 4));
        assert.match(calls, /--host=fd00::2 /);
        assert.equal(calls.includes('offline_mode'), false, calls);
        // Dual-stack and cut off: its own IPv6 address answering is no peer answering.
        box.cleanup();
        box = scriptSandbox();
        const dual = {
          ...primary,
          POD_IPS: '10.0.0.1,fd00::1',
          FAKE_DNS: '10.0.0.1 fd00::1 10.0.0.2 fd00::2',
          FAKE_PRIMARY_STATUS: '1',
        };
        const cut = unquoted(await runSidecar('shop-0', dual, fenced));
        assert.doesNotMatch(cut, /--host=(10\.0\.0\.1|fd00::1) /);
        assert.match(cut, /--host=fd00::2 /);
      });

      it('leaves a member without semi-synchronous replication alone, cut off or not', async () => {
        // "sleep 10": a whole round ended, and the next is 10 s away (a fencing member looks every second).
        const calls = await runSidecar('shop-0', { ...primary, FAKE_SEMI: '0' }, (c) => c.includes('sleep 10'));
        assert.equal(unquoted(calls).includes('offline_mode'), false, calls);
      });
    });

    it('leaves replication on a read-only member to the controller: no account, no CHANGE REPLICATION SOURCE, no START REPLICA', async () => {
      const calls = await runSidecar(
        'shop-1',
        { FAKE_READ_ONLY: '1', FAKE_STATES: 'ON\tON', POD_ANNOTATIONS: box.path('annotations') },
        (c) => c.includes('LAST_ERROR_NUMBER'),
      );
      assert.equal(calls.includes('--host=127.0.0.1'), false, calls);
      assert.equal(calls.includes('STDIN'), false, calls);
      assert.equal(/CHANGE\\? REPLICATION|START\\? REPLICA/.test(calls), false, calls);
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

    it('leaves an existing data directory alone', () => {
      mkdirSync(volume('data'));
      writeFileSync(volume('data', 'mysql.ibd'), 'x');
      const r = bootstrap('shop-0');
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /nothing to do/);
      assert.equal(argvLines(box.calls()).length, 0);
    });

    it('refuses a non-empty data directory without a data dictionary', () => {
      mkdirSync(volume('data'));
      writeFileSync(volume('data', 'stray-file'), 'x');
      const r = bootstrap('shop-1');
      assert.equal(r.status, 1);
      assert.match(r.stderr, /not empty but holds no MySQL data dictionary/);
      assert.deepEqual(readdirSync(volume('data')), ['stray-file']);
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
          ].join('\n'),
        ),
        calls,
      );
      assert.ok(
        calls.includes(
          [
            "CREATE USER IF NOT EXISTS 'recon8s-admin'@'%' IDENTIFIED BY '4dmin\\'\"\\\\#%s' REQUIRE SSL;",
            "ALTER USER 'recon8s-admin'@'%' IDENTIFIED BY '4dmin\\'\"\\\\#%s' REQUIRE SSL;",
            "GRANT SYSTEM_VARIABLES_ADMIN, REPLICATION_SLAVE_ADMIN, REPLICATION CLIENT, RELOAD, PROCESS, CONNECTION_ADMIN ON *.* TO 'recon8s-admin'@'%';",
            "GRANT SELECT ON performance_schema.* TO 'recon8s-admin'@'%';",
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
      assertPasswordsOnlyInCredentials(calls);
    });

    it('clones a replica from the primary Service into a fresh data directory with its own identity', () => {
      const r = bootstrap('shop-2');
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(volume()).sort(), ['data']);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['mysql.ibd']);
      const calls = box.calls();
      assert.match(calls, /^mysql --defaults-extra-file=\S+ --host=shop-primary --port=3306 /m);
      assert.ok(calls.includes("SET GLOBAL clone_valid_donor_list = 'shop-primary:3306';"), calls);
      assert.ok(
        calls.includes(
          `CLONE INSTANCE FROM 'replication'@'shop-primary':3306 IDENTIFIED BY 'repl\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.bootstrap')}';`,
        ),
        calls,
      );
      assert.equal(calls.includes("ALTER USER 'root'"), false);
      assertPasswordsOnlyInCredentials(calls);
    });

    it('clones ordinal 0 too when a primary answers (its volume was lost), creating no account', () => {
      const r = bootstrap('shop-0');
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(volume()).sort(), ['data']);
      assert.deepEqual(readdirSync(volume('data')).sort(), ['mysql.ibd']);
      const calls = box.calls();
      assert.ok(
        calls.includes(
          `CLONE INSTANCE FROM 'replication'@'shop-primary':3306 IDENTIFIED BY 'repl\\'"\\\\#;--' DATA DIRECTORY = '${volume('data.bootstrap')}';`,
        ),
        calls,
      );
      // It asked the primary Service once to decide, and once more before cloning.
      assert.equal(primaryChecks(calls).length, 2, calls);
      // Only the throwaway recipient is initialized, never the data directory itself.
      assert.doesNotMatch(calls, /--initialize-insecure --datadir=\S+\/data\.bootstrap$/m);
      assert.equal(/CREATE USER|ALTER USER/.test(calls), false, calls);
      assertPasswordsOnlyInCredentials(calls);
    });

    it('always clones a member other than ordinal 0, asking the primary only to wait for it', () => {
      assert.equal(bootstrap('shop-1').status, 0);
      // Only the wait for the primary asks it (once, as it answers); no check decides anything.
      assert.equal(primaryChecks(box.calls()).length, 1, box.calls());
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
        ...PASSWORDS,
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
      assertPasswordsOnlyInCredentials(box.calls());
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
