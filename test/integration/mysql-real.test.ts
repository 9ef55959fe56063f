// The MySQLCluster scripts against a real MySQL 9.7 (the test image's), three members replicating in
// a sandbox (support/mysql-sandbox.ts): what MySQL decides, proven on MySQL. One cluster for every
// test, in order, as a user's cluster lives. No controller runs here: the tests do its part (make
// member 0 the primary, point the others at it) with the SQL it sends (lib/mysql/member-sql.ts), as
// the administrative account the members carry.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { LocalSql } from '../../lib/agent/local-sql.js';
import type { FencingSql } from '../../lib/mysql/fencing.js';
import { READ_ONLY_QUEUED, READ_ONLY_REQUEST, clientSessionsQuery, fence } from '../../lib/mysql/fencing.js';
import { GtidSet } from '../../lib/mysql/gtid-set.js';
import type { FailoverRecord, UnsafeStop } from '../../lib/mysql/rejoin.js';
import { discardRequest, rejoinVerdict } from '../../lib/mysql/rejoin.js';
import { findInListing } from '../../lib/cli/binlog-command.js';
import { coarseWords, parseBinlogText } from '../../lib/mysql/binlog-text.js';
import { REFUSED_LOGINS_SQL } from '../support/mysql-counters.js';
import { eventually } from './eventually.js';
import { spawn, spawnSync } from 'node:child_process';
import { MYSQL_ADMIN_USER, MYSQL_REPLICATION_USER, MYSQL_TLS_CA_PATH } from '../../constructs/index.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import { memberDnsNames } from '../../lib/mysql/certificates.js';
import type { MySQLSandbox, SandboxMember } from './support/mysql-sandbox.js';
import {
  ADMIN_PASSWORD,
  BACKUP_PASSWORD,
  CLONE_PASSWORD,
  REPLICATION_PASSWORD,
  ROOT_PASSWORD,
  SANDBOX_NAMES,
  address,
  startMySQLSandbox,
} from './support/mysql-sandbox.js';

interface SessionOutcome {
  readonly ok: boolean;
  readonly serverUuid?: string;
  readonly servedBefore?: string;
  readonly servedAfter?: string;
  readonly name?: string;
  readonly message?: string;
  readonly verifyError?: string;
}
import type { AccountRequest } from '../../lib/mysql/accounts.js';
import { accountName } from '../../lib/mysql/accounts.js';
import { accountStatements } from '../../lib/agent/accounts.js';
import { EXPORTER_CNF_KEY, exporterCnf } from '../../constructs/mysql/exporter.js';
import { synthMySQL } from '../unit/support/mysql-synth.js';
import { alive, controllerSql, follow, inline, literal, makePrimary, ready, sql } from './support/sandbox-cluster.js';

/** gtid_executed on one line (the mysql client prints the newlines MySQL wraps long sets with as \\n). */
const GTID_EXECUTED = "SELECT REPLACE(@@GLOBAL.gtid_executed, CHAR(10), '')";

/** `f`, telling `log` each call it gets and how it ended. */
function tracing(f: FencingSql, log: (line: string) => void): FencingSql {
  const traced =
    <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      log(`fencing: ${name} ${JSON.stringify(args)}`);
      try {
        const r = await fn(...args);
        log(`fencing: ${name} -> ${JSON.stringify(r)}`);
        return r;
      } catch (e) {
        log(`fencing: ${name} failed: ${String(e)}`);
        throw e;
      }
    };
  return {
    exec: traced('exec', (sql: string) => f.exec(sql)),
    clientSessions: traced('clientSessions', (spare: readonly string[]) => f.clientSessions(spare)),
    kill: traced('kill', (id: number) => f.kill(id)),
    aside: traced('aside', async (statements: readonly string[]) => {
      const r = await f.aside(statements);
      r.done.then(
        () => log(`fencing: aside ${r.id} done`),
        (e: unknown) => log(`fencing: aside ${r.id} failed: ${String(e)}`),
      );
      return r;
    }),
    sessionState: traced('sessionState', (id: number) => f.sessionState(id)),
    lock: traced('lock', (name: string, seconds: number) => f.lock(name, seconds)),
    fencingFlags: traced('fencingFlags', () => f.fencingFlags()),
  };
}

describe('MySQLCluster members on a real MySQL 9.7', function () {
  // Most tests drive mysqld synchronously (spawnSync), so mocha can only report an overrun once the test
  // has finished: the backup-and-verify test, which passed, took over 2 minutes beside five end-to-end
  // lanes and was reported as a timeout. A hang still fails, after 10 minutes.
  this.timeout(10 * 60_000);
  let sandbox: MySQLSandbox;
  let members: SandboxMember[];
  let primary: SandboxMember;

  /** Not ready, and why (the agent's /readyz message). */
  const unready = (m: SandboxMember): string => {
    const r = m.probe('ready');
    assert.equal(r.ok, false, `member ${m.ordinal} is ready`);
    return `${r.stdout}${r.stderr}`;
  };
  const rows = (m: SandboxMember, expected: string) =>
    eventually(() => assert.equal(sql(m, 'SELECT GROUP_CONCAT(id ORDER BY id) FROM t.r'), expected), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: `rows ${expected} on member ${m.ordinal}`,
    });

  /**
   * Every binary log of the primary but the current one gone, as expiry would do it. PURGE keeps a file a
   * dump thread still reads, with only a warning, and the dump thread of a replica that just stopped
   * lives on until a write to its closed connection fails: so rotate (a write) and purge again until
   * only the current file is left. (Purging once raced with that thread: the replica then still found
   * what it needed and was never refused, and the test waited 120 s for a refusal that could not come.)
   */
  const purgeBinaryLogs = () =>
    eventually(
      () => {
        sql(primary, 'FLUSH BINARY LOGS');
        const current = sql(primary, 'SHOW BINARY LOG STATUS').split('\t')[0] ?? '';
        sql(primary, `PURGE BINARY LOGS TO '${current}'`);
        assert.deepEqual(
          sql(primary, 'SHOW BINARY LOGS')
            .split('\n')
            .map((l) => l.split('\t')[0]),
          [current],
        );
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the primary to purge every binary log but the current one' },
    );

  before(async function () {
    this.timeout(20 * 60_000); // the first run builds the image's root file system
    sandbox = await startMySQLSandbox();
    members = [0, 1, 2].map((i) => sandbox.member(i));
    primary = members[0] as SandboxMember;
  });
  after(async () => {
    await sandbox?.stop();
  });

  it('starts every member read-only and unready until the controller makes one the primary and points the others at it', async function () {
    this.timeout(10 * 60_000);
    // The primary first: a replica waits for a primary that answers and clones it (the StatefulSet starts
    // them all at once, Parallel; here in order, so that each step is looked at).
    primary.start();
    await alive(primary);
    assert.equal(sql(primary, 'SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only'), '1\t1');
    assert.match(unready(primary), /read-only and not replicating \(waiting for the controller\)/);
    makePrimary(primary);
    await ready(primary);
    for (const m of members.slice(1)) {
      m.start();
      await alive(m);
      // A clone of the primary (its accounts too), read-only, and not replicating by itself (skip_replica_start).
      assert.equal(sql(m, 'SELECT @@GLOBAL.super_read_only'), '1');
      assert.match(unready(m), /read-only and not replicating \(waiting for the controller\)/);
      follow(m);
      await ready(m);
    }
    assert.equal(
      controllerSql(primary, 'SELECT @@rpl_semi_sync_source_enabled, @@rpl_semi_sync_source_wait_point'),
      '1\tAFTER_SYNC',
    );
    await eventually(
      () =>
        assert.equal(
          sql(
            primary,
            "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Rpl_semi_sync_source_clients'",
          ),
          '2',
        ),
      { timeoutMs: 30_000, description: 'both replicas acknowledging semi-synchronously' },
    );
  });

  it('replicates a row written on the primary to every replica, and the replicas refuse writes', async () => {
    sql(primary, 'CREATE DATABASE t; CREATE TABLE t.r (id INT PRIMARY KEY); INSERT INTO t.r VALUES (1)');
    for (const m of members.slice(1)) {
      await rows(m, '1');
      const w = m.sql('INSERT INTO t.r VALUES (2)');
      assert.equal(w.ok, false);
      assert.match(w.stderr, /super-read-only/);
    }
  });

  /** The privileges SHOW GRANTS lists for `user`@'%' on *.* (USAGE, which is none, left out). */
  const globalPrivileges = (m: SandboxMember, user: string): string[] =>
    sql(m, `SHOW GRANTS FOR '${user}'@'%'`)
      .split('\n')
      .flatMap((line) => /^GRANT (.*) ON \*\.\* TO /.exec(line)?.[1]?.split(', ') ?? [])
      .filter((p) => p !== 'USAGE')
      .sort();
  const OWN_PRIVILEGES: Readonly<Record<string, readonly string[]>> = {
    replication: ['REPLICATION SLAVE'],
    'recon8s-clone': ['BACKUP_ADMIN'],
    'recon8s-backup': [
      'EVENT',
      'PROCESS',
      'RELOAD',
      'REPLICATION CLIENT',
      'REPLICATION SLAVE',
      'SELECT',
      'SHOW VIEW',
      'TRIGGER',
    ],
  };

  it("gives the cluster's own accounts only their privileges (replication cannot clone; clone and backup accounts of their own, TLS required), and upgrades a cluster of an earlier version in place: the primary's agent creates them and revokes replication's BACKUP_ADMIN, replicated, without a restart of mysqld", async () => {
    for (const m of members)
      for (const [user, privileges] of Object.entries(OWN_PRIVILEGES))
        assert.deepEqual(globalPrivileges(m, user), privileges, `${user} on member ${m.ordinal}`);
    for (const user of ['recon8s-clone', 'recon8s-backup'])
      assert.equal(sql(primary, `SELECT ssl_type FROM mysql.user WHERE user = '${user}'`), 'ANY', user);
    // A cluster as an earlier version left it: replication could clone, and there were no clone or backup accounts.
    sql(
      primary,
      "GRANT BACKUP_ADMIN, REPLICATION CLIENT ON *.* TO 'replication'@'%'; DROP USER 'recon8s-clone'@'%', 'recon8s-backup'@'%'",
    );
    await eventually(() => assert.deepEqual(globalPrivileges(members[2] as SandboxMember, 'replication').length, 3), {
      timeoutMs: 30_000,
      description: 'the earlier grants on the last replica',
    });
    const started = sql(
      primary,
      "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'",
    );
    // The agent of this version starts (as after an upgrade of the operator's image): it looks at the accounts once.
    assert.ok(primary.restartAgent() > 0);
    await eventually(
      () => {
        for (const m of members)
          for (const [user, privileges] of Object.entries(OWN_PRIVILEGES))
            assert.deepEqual(globalPrivileges(m, user), privileges, `${user} on member ${m.ordinal}`);
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'the accounts of this version on every member' },
    );
    assert.match(primary.log('agent'), /revoked BACKUP_ADMIN, REPLICATION CLIENT from the replication account/);
    assert.ok(
      Number(
        sql(primary, "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'"),
      ) >= Number(started),
      'mysqld did not restart',
    );
    // Replication goes on as the account that now only receives the binary log.
    sql(primary, 'INSERT INTO t.r VALUES (3)');
    for (const m of members.slice(1)) await rows(m, '1,3');
    sql(primary, 'DELETE FROM t.r WHERE id = 3');
    for (const m of members.slice(1)) await rows(m, '1');
  });

  /** Until one commit on `m` waits for a semi-synchronous acknowledgement. */
  const commitWaitingForAcknowledgement = (m: SandboxMember) =>
    eventually(
      () =>
        assert.equal(
          sql(m, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE '%semi-sync ACK%'"),
          '1',
        ),
      {
        timeoutMs: 30_000,
        intervalMs: 50,
        description: `a commit on member ${m.ordinal} waiting for its acknowledgement`,
      },
    );

  /** nsenter's arguments that run the controller's client (connectMember, mysql2) in the members' network. */
  const controllerClient = (): string[] => [
    `--net=${sandbox.netns}`,
    process.execPath,
    '--import',
    'tsx',
    'test/integration/support/member-session-main.ts',
  ];
  /** Its request (support/member-session-main.ts) for member `m`, as recon8s-admin. */
  const controllerRequest = (m: SandboxMember, ca: string, what: { reloadTls?: boolean; fence?: boolean }): string =>
    JSON.stringify({
      host: address(m.ordinal),
      ca,
      ...what,
      credentials: {
        adminUser: MYSQL_ADMIN_USER,
        adminPassword: ADMIN_PASSWORD,
        replicationUser: MYSQL_REPLICATION_USER,
        replicationPassword: REPLICATION_PASSWORD,
      },
    });

  /** The controller's client, run in the members' network namespace. */
  const controllerSession = (m: SandboxMember, ca: string, reloadTls = false): SessionOutcome => {
    const r = spawnSync('nsenter', controllerClient(), {
      input: controllerRequest(m, ca, { reloadTls }),
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 0, `the controller's client did not run: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as SessionOutcome;
  };

  it('lets the controller in only to a member whose certificate the cluster CA signed: another CA fails the handshake before any password is sent', () => {
    const refusedBefore = Number(sql(primary, REFUSED_LOGINS_SQL) || 0);
    const trusted = controllerSession(primary, sandbox.ca.certPem);
    assert.ok(trusted.ok, `the controller could not log in to a member of its own CA: ${trusted.message}`);
    assert.equal(trusted.serverUuid, sql(primary, 'SELECT @@server_uuid'));

    const stranger = issueCa('someone else', new Date());
    const refused = controllerSession(primary, stranger.certPem);
    assert.equal(refused.ok, false, 'the controller logged in to a member whose certificate its CA did not sign');
    assert.equal(refused.name, 'MemberCertificateError', `not refused for its certificate: ${refused.message}`);
    assert.match(refused.message ?? '', /no credential was sent/);
    // The server saw no login at all (a wrong password would have counted one): TLS failed first.
    assert.equal(Number(sql(primary, REFUSED_LOGINS_SQL) || 0), refusedBefore);
  });

  it('verifies the source by name over replication: the replicas connected with SOURCE_SSL_VERIFY_SERVER_CERT to a certificate naming the primary', () => {
    for (const m of members.slice(1)) {
      const row = sql(
        m,
        "SELECT HOST, SSL_ALLOWED, SSL_CA_FILE, SSL_VERIFY_SERVER_CERTIFICATE FROM performance_schema.replication_connection_configuration WHERE CHANNEL_NAME = ''",
      );
      assert.equal(row, `${SANDBOX_NAMES.members[0]}\tYES\t${MYSQL_TLS_CA_PATH}\tYES`);
      assert.equal(
        sql(m, "SELECT SERVICE_STATE FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''"),
        'ON',
      );
    }
  });

  it("verifies a member by name from the scripts' clients (ssl-mode=VERIFY_IDENTITY): the primary Service and a member's name log in; the same member by address, or by a name its certificate lacks, is refused before any password is sent", () => {
    const replica = members[1] as SandboxMember;
    const scriptClient = (host: string) =>
      replica.exec([
        'bash',
        '-c',
        '. /opt/recon8s/common.sh && mysql_client --defaults-extra-file=<(verified_cnf root "$MYSQL_ROOT_PASSWORD") --host="$1" --port=3306 --connect-timeout=5 --batch --skip-column-names -e "SELECT @@server_uuid"',
        'script-client',
        host,
      ]);
    const primaryUuid = sql(primary, 'SELECT @@server_uuid');
    for (const host of [SANDBOX_NAMES.services[0], SANDBOX_NAMES.members[0]]) {
      const r = scriptClient(host);
      assert.ok(r.ok, `${host}: ${r.stderr}`);
      assert.equal(r.stdout.trim(), primaryUuid, host);
    }
    const refusedBefore = Number(sql(primary, REFUSED_LOGINS_SQL) || 0);
    const refusedOnReplica = Number(sql(replica, REFUSED_LOGINS_SQL) || 0);
    // 127.0.0.1 is the primary, shop-headless (in this member's lookups) the replica itself: neither is a
    // name the certificate carries.
    for (const host of ['127.0.0.1', 'shop-headless']) {
      const r = scriptClient(host);
      assert.equal(r.ok, false, `${host}: logged in without the certificate naming it`);
      assert.match(r.stderr, /SSL certificate validation failure|certificate/i, `${host}: ${r.stderr}`);
    }
    assert.equal(Number(sql(primary, REFUSED_LOGINS_SQL) || 0), refusedBefore, 'the primary saw a login attempt');
    assert.equal(Number(sql(replica, REFUSED_LOGINS_SQL) || 0), refusedOnReplica, 'the replica saw a login attempt');
  });

  it('requires TLS of every TCP login (require_secure_transport=ON): a plain TCP login is refused, TLS and the local socket log in, and the metrics sidecar reads the member over the socket', () => {
    assert.equal(sql(primary, 'SELECT @@GLOBAL.require_secure_transport'), '1');
    const replica = members[1] as SandboxMember;
    const tcpLogin = (sslOptions: string) =>
      replica.exec([
        'bash',
        '-c',
        `. /opt/recon8s/common.sh && mysql_client --defaults-extra-file=<(client_cnf root "$MYSQL_ROOT_PASSWORD"; printf '%s\\n' ${sslOptions}) --host=${SANDBOX_NAMES.services[0]} --port=3306 --connect-timeout=5 --batch --skip-column-names -e "SELECT 1"`,
      ]);
    const plain = tcpLogin('ssl-mode=DISABLED');
    assert.equal(plain.ok, false, 'a plain TCP login was let in');
    assert.match(plain.stderr, /ERROR 3159 .*insecure transport are prohibited/, plain.stderr);
    const verified = tcpLogin('ssl-mode=VERIFY_IDENTITY "ssl-ca=$RECON8S_TLS_CA"');
    assert.ok(verified.ok, verified.stderr);
    assert.equal(sql(primary, 'SELECT 1'), '1', 'the socket needs no TLS');
    // As in the mysql container, which has no password in its environment: local_sql reads root's from
    // the mounted credentials Secret.
    const mounted = primary.exec([
      'env',
      '-u',
      'MYSQL_ROOT_PASSWORD',
      'bash',
      '-c',
      '. /opt/recon8s/common.sh && local_sql -e "SELECT CURRENT_USER()"',
    ]);
    assert.equal(mounted.stdout.trim(), 'root@localhost', mounted.stderr);

    // The sidecar as the construct renders it (its arguments and option file), with the exporter's
    // account as the agent makes it, reading the primary over the socket.
    const { container, podSpec, configMap } = synthMySQL({ monitoring: { enabled: true } });
    const cnf = configMap(podSpec.volumes?.find((v) => v.name === 'config')?.configMap?.name ?? '').data?.[
      EXPORTER_CNF_KEY
    ];
    assert.equal(cnf, exporterCnf());
    const args = (container('metrics').args ?? []).map((a) =>
      a.startsWith('--web.listen-address=')
        ? '--web.listen-address=127.0.0.1:19104'
        : a.startsWith('--config.my-cnf=')
          ? '--config.my-cnf=/tmp/exporter.cnf'
          : a,
    );
    const password = 'exp0rter-pw';
    const create = accountStatements({
      replication: REPLICATION_PASSWORD,
      admin: ADMIN_PASSWORD,
      clone: CLONE_PASSWORD,
      backup: BACKUP_PASSWORD,
      exporter: password,
    })
      .filter((st) => st.sql.includes('recon8s-exporter'))
      .map((st) => st.sql.replace('?', literal(st.values[0] ?? '')))
      .join('; ');
    sql(primary, create);
    const scrape = primary.exec(
      [
        'bash',
        '-c',
        `cat >/tmp/exporter.cnf; MYSQLD_EXPORTER_PASSWORD=${password} mysqld_exporter "$@" >/tmp/exporter.log 2>&1 & pid=$!
        for ((i = 0; i < 100; i++)); do
          body=$( (exec 3<>/dev/tcp/127.0.0.1/19104 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) 2>/dev/null)
          [[ $body == *'mysql_up '* ]] && break
          sleep 0.2
        done
        kill $pid; wait $pid 2>/dev/null
        grep -E '^mysql_(up|global_status_threads_connected) ' <<<"$body"; cat /tmp/exporter.log >&2`,
        'scrape',
        ...args,
      ],
      cnf,
    );
    assert.match(scrape.stdout, /^mysql_up 1$/m, `${scrape.stdout}${scrape.stderr}`);
    assert.match(scrape.stdout, /^mysql_global_status_threads_connected \d+$/m, scrape.stdout);
    // The account exists for the socket only ('localhost' under skip_name_resolve): none for TCP.
    assert.equal(
      sql(primary, "SELECT GROUP_CONCAT(HOST) FROM mysql.user WHERE USER = 'recon8s-exporter'"),
      'localhost',
    );
  });

  it('serves a renewed certificate once told to reload it, without a restart, and replication carries on', async () => {
    const uptime = Number(
      sql(primary, "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'"),
    );
    // A year from a later second than the first one: a different expiry to tell them apart.
    await new Promise((r) => setTimeout(r, 1100));
    const renewed = issueServerCertificate(sandbox.ca, 'shop.sandbox', memberDnsNames(SANDBOX_NAMES), new Date());
    primary.replaceTls(renewed);
    const expected = new Date(new X509Certificate(renewed.certPem).validTo).toISOString();

    const reloaded = controllerSession(primary, sandbox.ca.certPem, true);
    assert.ok(reloaded.ok, reloaded.message);
    assert.notEqual(
      reloaded.servedBefore,
      expected,
      'the member served the new certificate before it was told to reload',
    );
    assert.equal(reloaded.servedAfter, expected);
    assert.ok(
      Number(
        sql(primary, "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'"),
      ) >= uptime,
      'mysqld restarted',
    );
    sql(primary, 'CREATE TABLE t.after_renewal (id INT PRIMARY KEY); INSERT INTO t.after_renewal VALUES (1)');
    for (const m of members)
      await eventually(() => assert.equal(sql(m, 'SELECT COUNT(*) FROM t.after_renewal'), '1'), {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: `member ${m.ordinal} to replicate a write made after the renewal`,
      });
  });

  it("makes a bound App's account on the primary as the controller does: exactly its grant, TLS required, replicated, refused elsewhere; dropped with its data kept", async () => {
    const user = accountName('shop', 'web');
    const password = `app'"\\#$ x-${'p'.repeat(20)}`;
    const request = (o: Partial<AccountRequest> = {}): AccountRequest => ({
      app: 'shop/web',
      user,
      database: 'shop_1',
      access: 'readWrite',
      password,
      ...o,
    });
    /**
     * In the members' network (support/account-client.ts): plans from what the primary has and runs it,
     * as root over TCP, as app-accounts.ts does; the statement kinds.
     */
    const client = (input: unknown): Record<string, unknown> => {
      const r = sandbox.inNetwork(
        [process.execPath, '--import', 'tsx', new URL('./support/account-client.ts', import.meta.url).pathname],
        JSON.stringify(input),
      );
      assert.ok(r.ok, `account-client failed: ${r.stdout} ${r.stderr}`);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    };
    const converge = async (requests: AccountRequest[]): Promise<string[]> => {
      const out = client({
        mode: 'converge',
        host: address(0),
        rootPassword: ROOT_PASSWORD,
        ca: sandbox.ca.certPem,
        requests,
      });
      assert.ok(Array.isArray(out.statements), JSON.stringify(out));
      return out.statements as string[];
    };
    /** Runs statements as the App's account on a member; the error code of the first refused one, or 'ok'. */
    const asApp = async (ordinal: number, ...statements: string[]): Promise<string> =>
      String(client({ mode: 'as', host: address(ordinal), user, password, ca: sandbox.ca.certPem, statements }).result);
    // A database whose name the unescaped grant pattern shop_1 would match.
    sql(primary, 'CREATE DATABASE shopX1; CREATE TABLE shopX1.t (id INT)');

    assert.deepEqual(await converge([request()]), ['createDatabase', 'createUser', 'grant']);
    assert.deepEqual(await converge([request()]), [], 'a second pass finds nothing to do');
    assert.equal(
      await asApp(0, 'CREATE TABLE shop_1.orders (id INT PRIMARY KEY)', 'INSERT INTO shop_1.orders VALUES (1)'),
      'ok',
    );
    assert.match(await asApp(0, 'SELECT * FROM shopX1.t'), /DENIED/);
    // REQUIRE SSL: the right password without TLS does not log in.
    const plain = client({
      mode: 'as',
      host: address(0),
      user,
      password,
      ca: '',
      statements: ['SELECT 1'],
      plain: true,
    });
    assert.equal(plain.result, 'ER_ACCESS_DENIED_ERROR', JSON.stringify(plain));
    assert.match(await asApp(0, 'CREATE DATABASE other'), /DENIED/);
    assert.match(await asApp(0, 'SELECT * FROM mysql.user'), /DENIED/);
    assert.match(await asApp(0, "GRANT SELECT ON shop_1.* TO 'root'@'%'"), /DENIED/);
    // The replicas have the account (replicated), and refuse its writes.
    for (const ordinal of [1, 2]) {
      await eventually(async () => assert.equal(await asApp(ordinal, 'SELECT id FROM shop_1.orders'), 'ok'), {
        timeoutMs: 30_000,
        description: `the account and its table on member ${ordinal}`,
      });
      assert.match(await asApp(ordinal, 'INSERT INTO shop_1.orders VALUES (2)'), /OPTION_PREVENTS/);
    }

    // Extras given by hand are revoked; the grant option too.
    sql(
      primary,
      `GRANT SELECT ON mysql.* TO '${user}'@'%'; GRANT PROCESS ON *.* TO '${user}'@'%'; GRANT EVENT ON shop_1.* TO '${user}'@'%' WITH GRANT OPTION`,
    );
    assert.equal(await asApp(0, 'SELECT COUNT(*) FROM mysql.user'), 'ok');
    assert.deepEqual(await converge([request()]), ['revoke', 'revoke', 'revoke']);
    assert.match(await asApp(0, 'SELECT COUNT(*) FROM mysql.user'), /DENIED/);
    const grants = sql(primary, `SHOW GRANTS FOR '${user}'@'%'`);
    assert.doesNotMatch(grants, /PROCESS|EVENT|GRANT OPTION|`mysql`/, grants);
    assert.equal(grants.split('\n').length, 2, grants);

    // readOnly: reads still work, writes are refused.
    assert.deepEqual(await converge([request({ access: 'readOnly' })]), ['revoke']);
    assert.equal(await asApp(0, 'SELECT id FROM shop_1.orders'), 'ok');
    assert.match(await asApp(0, 'INSERT INTO shop_1.orders VALUES (3)'), /DENIED/);

    // A new password (the App's Secret re-created) is set; the old one no longer logs in.
    const newPassword = `${password}-2`;
    assert.deepEqual(await converge([request({ access: 'readOnly', password: newPassword })]), ['setPassword']);
    assert.match(await asApp(0, 'SELECT 1'), /DENIED/);
    assert.deepEqual(await converge([request({ access: 'readOnly', password })]), ['setPassword']);

    // The App no longer binds: the account goes, everywhere; the database and its rows stay.
    assert.deepEqual(await converge([]), ['dropUser']);
    assert.match(await asApp(0, 'SELECT 1'), /DENIED/);
    await eventually(async () => assert.match(await asApp(1, 'SELECT 1'), /DENIED/), {
      timeoutMs: 30_000,
      description: 'the account dropped on member 1 too',
    });
    assert.equal(sql(primary, 'SELECT GROUP_CONCAT(id) FROM shop_1.orders'), '1');
    // An account of that name recon8s did not make is never touched.
    sql(primary, `CREATE USER '${user}'@'%' IDENTIFIED BY 'theirs'`);
    assert.deepEqual(await converge([request()]), []);
    assert.deepEqual(await converge([]), []);
    sql(primary, `DROP USER '${user}'@'%'; DROP DATABASE shopX1`);
  });

  it("rotates a bound App's password with dual passwords while its clients log in afresh every 20 ms: no failed login or query, and the old password refused after", async function () {
    this.timeout(10 * 60_000);
    // Alone (--grep): the primary only, writable without waiting for a replica's acknowledgement.
    const answers = (m: SandboxMember): boolean => {
      try {
        return m.sql('SELECT 1').ok;
      } catch {
        return false; // not started
      }
    };
    if (!answers(primary)) {
      primary.start();
      await alive(primary);
      controllerSql(
        primary,
        'SET GLOBAL rpl_semi_sync_source_enabled = OFF; SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF;',
      );
    }
    const serving = members.filter(answers);
    const user = accountName('shop', 'rotating');
    sql(primary, 'CREATE DATABASE IF NOT EXISTS rot; CREATE TABLE IF NOT EXISTS rot.rotation_probe (id INT)');
    const refused = () => serving.reduce((n, m) => n + Number(sql(m, REFUSED_LOGINS_SQL) || 0), 0);
    const refusedBefore = refused();
    // support/rotation-client.ts: the controllers' steps, chosen by their decisions, against the real
    // primary, with the Secret and the pods modelled; two rotations in a row.
    const r = sandbox.inNetwork(
      [process.execPath, '--import', 'tsx', new URL('./support/rotation-client.ts', import.meta.url).pathname],
      JSON.stringify({
        primary: address(0),
        replicas: serving.filter((m) => m !== primary).map((m) => address(m.ordinal)),
        rootPassword: ROOT_PASSWORD,
        ca: sandbox.ca.certPem,
        app: 'shop/rotating',
        user,
        database: 'rot',
        pods: 3,
        podReplaceMs: 300,
        intervalMs: 20,
        tokens: ['T1', 'T2'],
      }),
    );
    assert.ok(r.ok, `rotation-client failed: ${r.stdout} ${r.stderr}`);
    const out = JSON.parse(r.stdout) as {
      refusedBeforeTheAccountReplicated: number;
      tally: { logins: number; queries: number; failedLogins: number; failedQueries: number; errors: object };
      rotations: {
        token: string;
        completed: boolean;
        ms: number;
        phasesMs: Record<string, number>;
        steps: string[];
        oldPasswordOnEachMember: Record<string, string>;
        newPasswordOnPrimary: string;
      }[];
    };
    const refusedAfter = refused();
    console.log(
      `      rotation figures: ${JSON.stringify({ ...out, refusedLoginsOnTheMembers: refusedAfter - refusedBefore })}`,
    );
    assert.equal(out.tally.failedLogins, 0, JSON.stringify(out.tally));
    assert.equal(out.tally.failedQueries, 0, JSON.stringify(out.tally));
    assert.ok(out.tally.queries > 100, JSON.stringify(out.tally));
    for (const rotation of out.rotations) {
      assert.ok(rotation.completed, JSON.stringify(rotation));
      assert.deepEqual(
        rotation.steps.filter((s, i, all) => s !== all[i - 1]),
        ['stage', 'setPassword', 'switch', 'roll', 'awaitPods', 'discardOldPassword', 'complete'],
      );
      for (const [member, outcome] of Object.entries(rotation.oldPasswordOnEachMember))
        assert.equal(outcome, 'ER_ACCESS_DENIED_ERROR', `the old password on ${member}`);
      assert.equal(rotation.newPasswordOnPrimary, 'ok');
    }
    // The only logins the members refused are the checks of the old passwords (one per member per
    // rotation), and those of the client's wait for the new account to be applied on the replicas.
    assert.equal(
      refusedAfter - refusedBefore,
      serving.length * out.rotations.length + out.refusedBeforeTheAccountReplicated,
    );
    sql(primary, `DROP USER '${user}'@'%'; DROP DATABASE rot`);
  });

  it('answers every question the agent asks, from a real mysqld: its start, its flags, its channel, what fencing would end', async () => {
    const primarySql = await LocalSql.open(primary.socket(), () => ROOT_PASSWORD);
    const replicaSql = await LocalSql.open((members[1] as SandboxMember).socket(), () => ROOT_PASSWORD);
    const { createConnection } = await import('mysql2/promise');
    const client = await createConnection({ socketPath: primary.socket(), user: 'root', password: ROOT_PASSWORD });
    try {
      const started = await primarySql.startedAt(Date.now());
      assert.ok(started <= Date.now() && started > Date.now() - 3600_000, new Date(started).toISOString());
      await new Promise((r) => setTimeout(r, 1100));
      assert.ok(Math.abs((await primarySql.startedAt(Date.now())) - started) <= 1000, 'the same start a second later');
      assert.deepEqual(await primarySql.flags(), {
        readOnly: false,
        superReadOnly: false,
        semiSyncSource: sql(primary, 'SELECT @@GLOBAL.rpl_semi_sync_source_enabled') === '1',
        offline: false,
      });
      assert.equal(await primarySql.channel(), undefined);
      assert.deepEqual(await replicaSql.flags(), {
        readOnly: true,
        superReadOnly: true,
        semiSyncSource: false,
        offline: false,
      });
      assert.deepEqual(await replicaSql.channel(), { receiver: 'ON', applier: 'ON' });
      assert.equal(await replicaSql.stoppedReceiverError(), undefined);
      // What a stopping primary's hook waits on: both replicas receive from it, none from a replica.
      assert.equal(await primarySql.replicasReceiving(), 2);
      assert.equal(await replicaSql.replicasReceiving(), 0);
      assert.equal(await primarySql.recoveredFromCrash(), false);
      const executed = await primarySql.gtidExecuted();
      assert.equal(executed, sql(primary, "SELECT REPLACE(@@GLOBAL.gtid_executed, CHAR(10), '')"));
      assert.equal(await replicaSql.gtidSubset(await replicaSql.gtidExecuted(), executed), true);
      assert.equal(await replicaSql.gtidSubset(executed, ''), executed === '');
      assert.equal(await replicaSql.gtidSubtract(executed, executed), '');
      assert.equal(await replicaSql.gtidSubtract(executed, ''), executed);
      assert.equal(await replicaSql.cloneInProgress(), false);
      // The binary logs, and what each began with: the last one's beginning is within gtid_executed.
      const logs = await primarySql.binaryLogs();
      assert.deepEqual(
        logs.map((l) => l.name),
        sql(primary, 'SHOW BINARY LOGS')
          .split('\n')
          .map((l) => l.split('\t')[0]),
      );
      assert.ok(logs.every((l) => l.bytes > 0));
      const last = await primarySql.previousGtids(logs.at(-1)?.name ?? '');
      assert.ok(GtidSet.parse(last).isSubsetOf(GtidSet.parse(executed)), `${last} within ${executed}`);
      assert.equal(await primarySql.previousGtids(logs[0]?.name ?? ''), '', 'the first log began with nothing');
      // What fencing would end: a client's session, never the agent's own.
      const [[row]] = await client.query<RowDataPacket[]>('SELECT CONNECTION_ID() AS id');
      // Two of the agent's sessions at once (a probe beside the fencing): neither is a client.
      const [[own], sessions] = await Promise.all([
        primarySql.rows('SELECT CONNECTION_ID() AS id, SLEEP(0.5)'),
        primarySql.fencingSession((f) => f.clientSessions(['recon8s-admin', 'replication'])),
      ]);
      assert.ok(sessions.includes(Number(row?.id)), `${String(row?.id)} in ${sessions.join(',')}`);
      assert.ok(!sessions.includes(Number(own?.id)), `the agent's own ${String(own?.id)} in ${sessions.join(',')}`);
    } finally {
      client.destroy();
      await primarySql.close();
      await replicaSql.close();
    }
  });

  /** The primary's mysqld running (started first when this file runs alone, with --grep). */
  const primaryStarted = async (): Promise<void> => {
    try {
      assert.ok(primary.sql('SELECT 1').ok);
    } catch {
      primary.start();
      await alive(primary);
    }
  };

  /**
   * The primary writable with no acknowledgement asked (started first when this file runs alone, with
   * --grep), holding table `fencing.<table>`; how many replicas acknowledged its commits before.
   */
  const fencingPrimary = async (table: string): Promise<number> => {
    await primaryStarted();
    const acking = Number(
      sql(
        primary,
        "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Rpl_semi_sync_source_clients'",
      ),
    );
    makePrimary(primary, 0);
    sql(
      primary,
      `CREATE DATABASE IF NOT EXISTS fencing; CREATE TABLE IF NOT EXISTS fencing.${table} (id INT PRIMARY KEY)`,
    );
    return acking;
  };

  it("never counts as a client a session that holds or awaits the global read lock (another fencing's request: ending it would let writes through), for the agent's account and the controller's", async () => {
    await primaryStarted();
    const { createConnection } = await import('mysql2/promise');
    const connect = () => createConnection({ socketPath: primary.socket(), user: 'root', password: ROOT_PASSWORD });
    const [locking, idle] = await Promise.all([connect(), connect()]);
    const agentSql = await LocalSql.open(primary.socket(), () => ROOT_PASSWORD);
    try {
      await locking.query('FLUSH TABLES WITH READ LOCK');
      const spare = [MYSQL_ADMIN_USER, MYSQL_REPLICATION_USER];
      const asAgent = await agentSql.fencingSession((f) => f.clientSessions(spare));
      const q = clientSessionsQuery(spare);
      const asController = controllerSql(primary, inline(q.sql, q.values)).split('\n').map(Number);
      for (const ids of [asAgent, asController]) {
        assert.ok(ids.includes(Number(idle.threadId)), `the idle client ${idle.threadId} in ${ids.join(',')}`);
        assert.ok(!ids.includes(Number(locking.threadId)), `the lock's holder ${locking.threadId} in ${ids.join(',')}`);
      }
    } finally {
      await locking.query('UNLOCK TABLES').catch(() => undefined);
      locking.destroy();
      idle.destroy();
      await agentSql.close();
    }
  });

  /**
   * The controller's fencing of member `m` (MemberSession.fence: read-only tried for 5 s first), as the
   * controller runs it: its client, as recon8s-admin over TLS, in the members' network namespace. Not
   * spawnSync: the test's writers go on meanwhile.
   */
  const controllerFence = (m: SandboxMember): Promise<SessionOutcome> =>
    new Promise((resolve, reject) => {
      const child = spawn('nsenter', controllerClient(), { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as SessionOutcome)
          : reject(new Error(`the controller's client exited with ${code}: ${err}`)),
      );
      child.stdin.end(controllerRequest(m, sandbox.ca.certPem, { fence: true }));
    });

  for (const [who, fencer] of [
    ['its agent (root over the socket, at once: it reaches no replica)', 'agent'],
    ['the controller (recon8s-admin over TLS, read-only tried for 5 s first)', 'controller'],
  ] as const) {
    it(`fences, as ${who}, a primary no replica acknowledges while root clients keep logging in and writing: not one write acknowledged, then read-only`, async function () {
      this.timeout(120_000);
      const acking = await fencingPrimary('w');
      // Three rounds: the gaps are a few milliseconds wide, and root logs in again within one.
      for (let round = 1; round <= 3; round++) {
        const rowsBefore = Number(sql(primary, 'SELECT COUNT(*) FROM fencing.w'));
        // Three acknowledgements, from at most two replicas: no commit from now on can be acknowledged, as
        // on a primary cut off from its replicas. Every write a client is told succeeded would be lost.
        makePrimary(primary, 3);
        const { createConnection } = await import('mysql2/promise');
        const tally = {
          acknowledged: [] as number[],
          attempts: 0,
          logins: 0,
          loginsWhileFencing: 0,
          errors: {} as Record<string, number>,
        };
        const sessions = new Set<number>();
        // Who did what when, printed when the test fails: the writers' logins and commits, the fencing's steps.
        const trace: string[] = [];
        const t0 = Date.now();
        let fencing = false;
        let stop = false;
        let next = Number(sql(primary, 'SELECT COALESCE(MAX(id), 0) FROM fencing.w')) + 1;
        // Root (CONNECTION_ADMIN: offline_mode does not refuse it) logs in again the moment its session ends.
        const writer = async (): Promise<void> => {
          while (!stop) {
            let client: Awaited<ReturnType<typeof createConnection>> | undefined;
            try {
              client = await createConnection({ socketPath: primary.socket(), user: 'root', password: ROOT_PASSWORD });
              if (client.threadId !== null) sessions.add(client.threadId);
              trace.push(`${Date.now() - t0} session ${client.threadId} logged in`);
              tally.logins++;
              if (fencing) tally.loginsWhileFencing++;
              while (!stop) {
                const id = next++;
                tally.attempts++;
                trace.push(`${Date.now() - t0} session ${client.threadId} inserts ${id}`);
                await client.query('INSERT INTO fencing.w VALUES (?)', [id]);
                trace.push(`${Date.now() - t0} session ${client.threadId}: ${id} acknowledged`);
                tally.acknowledged.push(id);
              }
            } catch (e) {
              const code = (e as { code?: string }).code ?? 'other';
              trace.push(`${Date.now() - t0} session ${client?.threadId}: ${code}`);
              tally.errors[code] = (tally.errors[code] ?? 0) + 1;
              await new Promise((r) => setTimeout(r, 2));
            } finally {
              if (client?.threadId) sessions.delete(client.threadId);
              client?.destroy();
            }
          }
        };
        const writers = Array.from({ length: 4 }, writer);
        await eventually(
          () =>
            // One waits for the acknowledgement, the others queue behind it in the group commit.
            assert.equal(
              sql(
                primary,
                `SELECT SUM(STATE LIKE '%semi-sync ACK%'), COUNT(*) FROM information_schema.PROCESSLIST
                  WHERE INFO LIKE 'INSERT INTO fencing.w %'`,
              ),
              '1\t4',
            ),
          {
            timeoutMs: 30_000,
            intervalMs: 50,
            description: "every writer's commit waiting for an acknowledgement",
            diagnose: () =>
              `${JSON.stringify(tally)}; ${sql(primary, "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME LIKE 'Rpl_semi_sync_source%'")}; ${sql(primary, 'SELECT ID, USER, COMMAND, STATE, INFO FROM information_schema.PROCESSLIST')}`,
          },
        );
        const began = Date.now();
        fencing = true;
        if (fencer === 'agent') {
          const agentSql = await LocalSql.open(primary.socket(), () => ROOT_PASSWORD);
          try {
            await agentSql.fencingSession((f) =>
              fence(
                tracing(f, (line) => trace.push(`${Date.now() - t0} ${line}`)),
                { spare: [MYSQL_ADMIN_USER, MYSQL_REPLICATION_USER], waitForCommitsSeconds: 0 },
              ),
            );
          } finally {
            await agentSql.close();
          }
        } else {
          const outcome = await controllerFence(primary);
          assert.ok(outcome.ok, `the controller's fencing failed: ${outcome.message}`);
        }
        const fencedInMs = Date.now() - began;
        // The writers go on a while against the fenced member.
        await new Promise((r) => setTimeout(r, 1500));
        stop = true;
        // A writer whose commit is stranded behind no acknowledgement would wait for ever: end them.
        for (const id of sessions) primary.sql(`KILL ${id}`);
        await Promise.all(writers);
        const stranded = Number(sql(primary, 'SELECT COUNT(*) FROM fencing.w')) - rowsBefore;
        console.log(
          `      fencing as ${who}, round ${round}: read-only in ${fencedInMs} ms; ${JSON.stringify({ ...tally, acknowledged: tally.acknowledged.length, rowsCommittedUnacknowledged: stranded })}`,
        );
        assert.deepEqual(
          tally.acknowledged,
          [],
          `writes acknowledged though no replica could acknowledge them:\n${trace.join('\n')}`,
        );
        assert.ok(tally.loginsWhileFencing > 0, 'root logged in again while the member was being fenced');
        // No commit could be acknowledged (3 replicas asked for): every fencing released the stranded ones,
        // so clients stay out (persisted) until the controller finds the member's data in the history.
        assert.equal(
          sql(primary, 'SELECT @@GLOBAL.super_read_only, @@GLOBAL.offline_mode, @@GLOBAL.rpl_semi_sync_source_enabled'),
          '1\t1\t0',
        );
      }
      // Back as the other tests expect it: the primary, each commit acknowledged by one replica.
      makePrimary(primary, acking > 0 ? 1 : 0);
      sql(primary, 'DROP DATABASE fencing');
    });
  }

  it("makes the member read-only though the fencing's process goes away once its read-only request is queued: MySQL runs the whole request, and the agent finishes a fencing left half-way", async function () {
    this.timeout(120_000);
    const acking = await fencingPrimary('d');
    makePrimary(primary, 3); // no commit can be acknowledged
    const { createConnection } = await import('mysql2/promise');
    const connect = (multipleStatements = false) =>
      createConnection({ socketPath: primary.socket(), user: 'root', password: ROOT_PASSWORD, multipleStatements });
    const writer = await connect();
    const stranded = writer.query('INSERT INTO fencing.d VALUES (1)').catch(() => undefined);
    const request = await connect(true);
    try {
      await commitWaitingForAcknowledgement(primary);
      void request.query(READ_ONLY_REQUEST.join(';\n')).catch(() => undefined);
      await eventually(
        () =>
          assert.match(
            sql(primary, `SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = ${request.threadId}`),
            READ_ONLY_QUEUED,
          ),
        { timeoutMs: 30_000, intervalMs: 50, description: 'the read-only request queued behind the stranded commit' },
      );
      // The fencing process dies: its session's socket closes with the request still waiting.
      request.destroy();
      // Released (the agent, which finishes a fencing that left offline_mode on, keeps clients out).
      sql(primary, 'SET GLOBAL rpl_semi_sync_source_enabled = OFF');
      await stranded;
      await eventually(() => assert.equal(sql(primary, 'SELECT @@GLOBAL.super_read_only'), '1'), {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: 'read-only, set by the request of a client that went away',
      });
      // And when it did not get that far (read-only never came), the member's agent finishes the fencing,
      // keeping clients out: the fencing that did not end may have released stranded commits.
      sql(primary, 'SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF; SET GLOBAL offline_mode = ON');
      await eventually(
        () => assert.equal(sql(primary, 'SELECT @@GLOBAL.super_read_only, @@GLOBAL.offline_mode'), '1\t1'),
        {
          timeoutMs: 30_000,
          intervalMs: 200,
          description: 'the agent finishing the fencing: read-only, clients kept out',
        },
      );
      assert.match(
        primary.log('agent'),
        /offline and writable: a fencing of this member did not end, or is under way; making it read-only/,
      );
    } finally {
      writer.destroy();
      request.destroy();
      sql(primary, 'SET PERSIST offline_mode = OFF');
      makePrimary(primary, acking > 0 ? 1 : 0);
      sql(primary, 'DROP DATABASE fencing');
    }
  });

  it('probes liveness without a failed login: neither Aborted_connects nor refused logins move, where the old probe moved both', () => {
    const aborted = (m: SandboxMember) =>
      Number(
        sql(m, "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Aborted_connects'"),
      );
    const counts = (m: SandboxMember) => [aborted(m), Number(sql(m, REFUSED_LOGINS_SQL))];
    for (const m of members) {
      const before = counts(m);
      for (let i = 0; i < 3; i++) {
        const r = m.probe('live');
        assert.ok(r.ok, r.stderr);
        assert.match(r.stdout, /mysqld answers/);
      }
      assert.deepEqual(counts(m), before, `member ${m.ordinal}`);
    }
    // The check can fail: the probe this replaced is refused and counted, in both.
    const [abortedBefore = 0, refusedBefore = 0] = counts(primary);
    assert.ok(primary.exec(['mysqladmin', '--no-defaults', '--socket=/var/run/mysqld/mysqld.sock', 'ping']).ok);
    assert.deepEqual(counts(primary), [abortedBefore + 1, refusedBefore + 1]);
  });

  it('finds where a transaction starts in a real binary log: a replay stops just before it, though other writes share its second', () => {
    const last = (): string => sql(primary, 'SELECT @@global.gtid_executed').replace(/\\n|\n/g, '');
    sql(primary, 'CREATE DATABASE IF NOT EXISTS t; CREATE TABLE t.boundary (id INT PRIMARY KEY)');
    sql(primary, 'INSERT INTO t.boundary VALUES (1)');
    const beforeKeep = last();
    sql(primary, 'INSERT INTO t.boundary VALUES (2)');
    const keep = sql(primary, `SELECT GTID_SUBTRACT('${last()}', '${beforeKeep}')`);
    const beforeBad = last();
    sql(primary, 'DELETE FROM t.boundary');
    const bad = sql(primary, `SELECT GTID_SUBTRACT('${last()}', '${beforeBad}')`);
    sql(primary, 'INSERT INTO t.boundary VALUES (3)');
    assert.match(bad, /^[0-9a-f-]{36}:\d+$/);
    const basename = sql(primary, 'SELECT @@global.log_bin_basename');
    const log = `${basename.slice(0, basename.lastIndexOf('/'))}/${sql(primary, 'SHOW BINARY LOG STATUS').split('\t')[0] ?? ''}`;
    const position = (gtid: string) =>
      primary.exec([
        'bash',
        '-c',
        '. /opt/recon8s/common.sh && . /opt/recon8s/restore.sh && gtid_event_position "$@"',
        'find',
        log,
        gtid,
      ]);
    const found = position(bad);
    assert.ok(found.ok && /^\d+$/.test(found.stdout), `${found.stdout}${found.stderr}`);
    const replay = primary.exec(['mysqlbinlog', `--stop-position=${found.stdout}`, log]);
    assert.ok(replay.ok, replay.stderr);
    assert.ok(replay.stdout.includes(`GTID_NEXT= '${keep}'`), `the insert before it (${keep}) is replayed`);
    assert.ok(!replay.stdout.includes(`GTID_NEXT= '${bad}'`), `the transaction itself (${bad}) is not`);
    // One that is not in the log: no position.
    const [uuid] = bad.split(':');
    assert.equal(position(`${uuid}:999999`).ok, false);
  });

  it("finds a DROP in a real binary log through the search Job's filter: its GTID and commit time, though a write shares its second", async () => {
    const last = (): string => sql(primary, 'SELECT @@global.gtid_executed').replace(/\\n|\n/g, '');
    sql(primary, 'CREATE TABLE t.orders (id INT PRIMARY KEY, note VARCHAR(16)); INSERT INTO t.orders VALUES (1, NULL)');
    // Early in a second, so that the write and the DROP right after it share it.
    while (Date.now() % 1000 > 300) await new Promise((r) => setTimeout(r, 20));
    const before = last();
    sql(primary, 'INSERT INTO t.boundary VALUES (10); DELETE FROM t.orders WHERE note IS NULL; DROP TABLE t.orders');
    // Three transactions: the insert, the delete, the drop.
    const range = /^([0-9a-f-]{36}):(\d+)-(\d+)$/.exec(sql(primary, `SELECT GTID_SUBTRACT('${last()}', '${before}')`));
    assert.ok(range && Number(range[3]) === Number(range[2]) + 2, range?.[0]);
    const insert = `${range[1] ?? ''}:${range[2] ?? ''}`;
    const drop = `${range[1] ?? ''}:${range[3] ?? ''}`;
    const basename = sql(primary, 'SELECT @@global.log_bin_basename');
    const log = `${basename.slice(0, basename.lastIndexOf('/'))}/${sql(primary, 'SHOW BINARY LOG STATUS').split('\t')[0] ?? ''}`;
    const SEGMENT = '20261125T183500Z-00000000-0000-0000-0000-000000000000-binlog.000001';
    const search = (statement: string) => {
      const r = primary.exec([
        'bash',
        '-c',
        '. /opt/recon8s/common.sh && . /opt/recon8s/binlog-filter.sh && FIND_WORDS=$2 binlog_find_filter "$1"',
        'find',
        log,
        coarseWords(statement).join(' '),
      ]);
      assert.ok(r.ok, r.stderr);
      return {
        text: r.stdout,
        // Under a segment's name as the archive stores it (the search reads nothing else).
        found: findInListing(`log\t${SEGMENT}\n${r.stdout}`, { statement }).transactions,
      };
    };
    const dropped = search('DROP TABLE orders');
    assert.deepEqual(
      dropped.found.map((t) => [t.gtid, t.statements]),
      [[drop, ['DROP TABLE `t`.`orders` /* generated by server */']]],
    );
    // The filter passed that transaction alone (the earlier CREATE TABLE t.orders holds no DROP).
    assert.equal(parseBinlogText(dropped.text).length, 1);
    const written = search('INSERT INTO t.boundary').found.find((t) => t.gtid === insert);
    assert.ok(written, `the insert ${insert ?? ''} is found too`);
    assert.equal(written.committedAt.slice(0, 19), dropped.found[0]?.committedAt.slice(0, 19), 'in the same second');
    assert.ok(written.committedAt < (dropped.found[0]?.committedAt ?? ''), 'and before it, to the microsecond');
    // The row change between them, as mysqlbinlog shows row events.
    assert.deepEqual(
      search('DELETE FROM orders').found.map((t) => t.statements),
      [['DELETE FROM `t`.`orders`']],
    );
  });

  /**
   * Runs the backup jobs' scripts on the primary with a store of rclone's local backend in place of S3
   * (the same rclone, the same commands), at STORE, as a backup CronJob's pod would (BACKUP_HOST the
   * primary Service), with the environment given beside.
   */
  function storeJobs(store: string, verifyScratch: string, terminationLog: string, env: string) {
    const exports = [
      `export PATH=/tmp/fakebin:$PATH CLUSTER_NAME=shop BACKUP_HOST=shop-primary BACKUP_RETAIN=3 ${env}`,
      `STORE_BUCKET=${store} STORE_PREFIX=shop RCLONE_CONFIG_STORE_ACCESS_KEY_ID=k RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY=s`,
      `VERIFY_SCRATCH=${verifyScratch} VERIFY_SCRATCH_BYTES=10000000000 TERMINATION_LOG=${terminationLog}`,
    ].join(' ');
    const run = (script: string) => primary.exec(['bash', '-c', `${exports}; ${script}`]);
    const setup = run(
      `mkdir -p /tmp/fakebin ${store} && printf '%s\\n' '#!/bin/bash' 'export RCLONE_CONFIG_STORE_TYPE=local' 'exec /usr/bin/rclone "$@"' >/tmp/fakebin/rclone && chmod +x /tmp/fakebin/rclone`,
    );
    assert.ok(setup.ok, setup.stderr);
    return run;
  }

  it("backs up with each table's row count and checksum taken in the dump's own snapshot while a writer writes, and a restore into a scratch mysqld verifies it; a flipped byte fails the verification, naming the object", () => {
    const store = '/tmp/store';
    const run = storeJobs(store, '/tmp/verify', '/tmp/termination-log.job', '');
    sql(primary, "CREATE TABLE t.w (id INT PRIMARY KEY, note VARCHAR(32)); INSERT INTO t.w VALUES (0, 'before')");
    const backup = run(
      '. /opt/recon8s/common.sh; ( for ((i = 1; i <= 400; i++)); do local_sql -e "INSERT INTO t.w VALUES ($i, \'during\')" || exit 1; done ) & writer=$!; sleep 0.3; env -u MYSQL_ROOT_PASSWORD bash /opt/recon8s/backup.sh; rc=$?; kill $writer 2>/dev/null; wait $writer; echo "rc=$rc"; cat /tmp/termination-log.job',
    );
    assert.match(backup.stdout, /rc=0\nBackupCompleted: /, `${backup.stdout}${backup.stderr}`);
    const name = /"name":"(\d{8}T\d{6}Z)"/.exec(backup.stdout)?.[1] ?? '';
    const manifest = JSON.parse(run(`cat ${store}/shop/base/${name}/manifest.json`).stdout) as {
      tables?: [string, number, number][];
      checksumsSkipped?: string;
      gtidSet: string;
    };
    assert.equal(manifest.checksumsSkipped, undefined, manifest.checksumsSkipped);
    const w = manifest.tables?.find(([t]) => t === 't.w');
    assert.ok(w, JSON.stringify(manifest.tables));
    // Taken while the writer wrote, at the dump's GTID point: the rows of every transaction it holds.
    assert.ok(w[1] > 1 && w[1] < 401, `t.w had ${w[1]} rows at the backup (the writer was writing)`);

    const verify = () => run('bash /opt/recon8s/verify-backup.sh; echo "rc=$?"; cat /tmp/termination-log.job');
    const passed = verify();
    assert.match(passed.stdout, /rc=0\nBackupVerified: \{"backup":"\d{8}T\d{6}Z"/, `${passed.stdout}${passed.stderr}`);
    const report = JSON.parse(passed.stdout.slice(passed.stdout.indexOf('{'))) as {
      tables: number;
      checksums: boolean;
      peakMemoryBytes?: number;
      cpuMilliseconds?: number;
    };
    assert.equal(report.tables, manifest.tables?.length);
    // Without a cgroup of its own (this sandbox), the scratch mysqld's own peak memory and CPU.
    assert.ok((report.peakMemoryBytes ?? 0) > 50 * 1024 * 1024, JSON.stringify(report));
    assert.ok((report.cpuMilliseconds ?? 0) > 0, JSON.stringify(report));
    assert.equal(report.checksums, true);

    // One byte flipped in the middle of the dump.
    const dump = `${store}/shop/base/${name}/dump.sql.gz`;
    const flip = run(
      `size=$(stat -c %s ${dump}); at=$((size / 2)); b=$(od -An -tu1 -j$at -N1 ${dump} | tr -d ' '); cp ${dump} /tmp/whole.gz; printf "\\\\$(printf %o $((b ^ 255)))" | dd of=${dump} bs=1 seek=$at conv=notrunc status=none`,
    );
    assert.ok(flip.ok, flip.stderr);
    const failed = verify();
    assert.match(failed.stdout, /rc=1\nBackupVerificationFailed: /, `${failed.stdout}${failed.stderr}`);
    // gzip's own words, not the SQL mysql choked on first.
    assert.ok(
      failed.stdout.includes(`the object s3://${store}/shop/base/${name}/dump.sql.gz is corrupt (gzip: stdin: `),
      failed.stdout,
    );

    // A different table content under the same name fails by its checksum, naming the table.
    assert.ok(run(`cp /tmp/whole.gz ${dump}`).ok);
    const edited = run(
      `gunzip -c ${dump} | sed "s/(0,'before')/(0,'edited')/" | gzip -c >/tmp/edited.gz && cp /tmp/edited.gz ${dump}`,
    );
    assert.ok(edited.ok, edited.stderr);
    const differs = verify();
    assert.match(
      differs.stdout,
      /rc=1\nBackupVerificationFailed: .*restores different data than it recorded: t\.w: \d+ rows, checksum \d+ \(the backup recorded \d+ rows, checksum \d+\)/,
      differs.stdout,
    );
    assert.ok(run(`cp /tmp/whole.gz ${dump}`).ok);

    // A scratch volume too small for its tables: skipped, saying why, nothing restored.
    const small = run(
      'VERIFY_SCRATCH_BYTES=1000 bash /opt/recon8s/verify-backup.sh; echo "rc=$?"; cat /tmp/termination-log.job',
    );
    assert.match(
      small.stdout,
      /rc=0\nBackupVerificationSkipped: .*holds \d+ bytes of tables \(data and indexes\); the scratch volume allows 1000.*raise spec\.backup\.verify\.scratchSize/,
      small.stdout,
    );
  });

  it("encrypts what a backup writes with the key from the Secret (real rclone's crypt): the store holds no readable row, a verification with the key restores it, and another key is refused, naming the object", () => {
    // The store: rclone's local backend in place of S3, through the crypt remote store.sh configures.
    const store = '/tmp/store-encrypted';
    const run = storeJobs(
      store,
      '/tmp/verify-encrypted',
      '/tmp/termination-log.job',
      'STORE_ENCRYPTION_KEY_FILE=/tmp/store.key',
    );
    const keys = run(
      'head -c 36 /dev/urandom | base64 -w0 >/tmp/store.key && head -c 36 /dev/urandom | base64 -w0 >/tmp/other.key',
    );
    assert.ok(keys.ok, keys.stderr);
    const marker = 'a-row-nobody-may-read-7f3a';
    sql(
      primary,
      `CREATE TABLE t.secret (id INT PRIMARY KEY, note VARCHAR(64)); INSERT INTO t.secret VALUES (1, '${marker}')`,
    );
    try {
      const backup = run(
        'env -u MYSQL_ROOT_PASSWORD bash /opt/recon8s/backup.sh; echo "rc=$?"; cat /tmp/termination-log.job',
      );
      assert.match(backup.stdout, /rc=0\nBackupCompleted: /, `${backup.stdout}${backup.stderr}`);
      const name = /"name":"(\d{8}T\d{6}Z)"/.exec(backup.stdout)?.[1] ?? '';
      // Every object is rclone crypt's (its magic first), the row is nowhere in the store, and the dump is
      // no gzip stream anyone could read without the key.
      const objects = run(`find ${store} -type f | sort`).stdout.trim().split('\n');
      assert.ok(
        objects.some((o) => o.endsWith(`/base/${name}/dump.sql.gz`)),
        objects.join('\n'),
      );
      for (const o of objects) assert.equal(run(`head -c 8 '${o}'`).stdout, 'RCLONE\0\0', o);
      assert.equal(run(`grep -rl '${marker}' ${store}`).stdout, '');
      assert.equal(run(`gzip -t ${store}/shop/base/${name}/dump.sql.gz`).ok, false);

      const verify = (key: string) =>
        run(
          `STORE_ENCRYPTION_KEY_FILE=${key} bash /opt/recon8s/verify-backup.sh; echo "rc=$?"; cat /tmp/termination-log.job`,
        );
      const passed = verify('/tmp/store.key');
      assert.match(
        passed.stdout,
        /rc=0\nBackupVerified: \{"backup":"\d{8}T\d{6}Z"/,
        `${passed.stdout}${passed.stderr}`,
      );
      const refused = verify('/tmp/other.key');
      assert.match(refused.stdout, /rc=1\n\w+: /, `${refused.stdout}${refused.stderr}`);
      assert.ok(
        refused.stdout.includes('it was not written with this encryption key'),
        `${refused.stdout}${refused.stderr}`,
      );
    } finally {
      sql(primary, 'DROP TABLE t.secret');
    }
  });

  it("encrypts a backup to a volume with the key from the Secret (spec.backup.encryption, real rclone's crypt over the volume's directory): the file holds no readable row, the restore by hand that docs/backup-restore.md gives loads it with the key, and another key is refused", () => {
    const volume = '/tmp/volume-backups';
    const exports = `export CLUSTER_NAME=shop BACKUP_HOST=shop-primary BACKUP_RETAIN=3 BACKUP_DIR=${volume} BACKUP_ENCRYPTION_KEY_FILE=/tmp/volume.key TERMINATION_LOG=/tmp/termination-log.volume`;
    const run = (script: string) => primary.exec(['bash', '-c', `${exports}; ${script}`]);
    const keys = run(
      `mkdir -p ${volume} && head -c 36 /dev/urandom | base64 -w0 >/tmp/volume.key && head -c 36 /dev/urandom | base64 -w0 >/tmp/volume-other.key`,
    );
    assert.ok(keys.ok, keys.stderr);
    const marker = 'a-volume-row-nobody-may-read-5c1e';
    sql(
      primary,
      `CREATE TABLE t.vault (id INT PRIMARY KEY, note VARCHAR(64)); INSERT INTO t.vault VALUES (1, '${marker}')`,
    );
    try {
      const backup = run(
        'env -u MYSQL_ROOT_PASSWORD bash /opt/recon8s/backup.sh; echo "rc=$?"; cat /tmp/termination-log.volume',
      );
      assert.match(backup.stdout, /rc=0\nBackupCompleted: /, `${backup.stdout}${backup.stderr}`);
      const files = run(`ls -A ${volume}`).stdout.trim().split('\n');
      assert.equal(files.length, 1, files.join(' '));
      const file = files[0] ?? '';
      assert.match(file, /^shop-\d{8}T\d{6}Z\.sql\.gz\.crypt$/);
      assert.ok(backup.stdout.includes(`"location":"${volume}/${file}"`), backup.stdout);
      // rclone crypt's file (its magic first), the row nowhere on the volume, and no gzip stream.
      assert.equal(run(`head -c 8 '${volume}/${file}'`).stdout, 'RCLONE\0\0');
      assert.equal(run(`grep -rl '${marker}' ${volume}`).stdout, '');
      assert.equal(run(`gzip -t '${volume}/${file}'`).ok, false);

      // The restore by hand (docs/backup-restore.md, "From a volume"), here into the same primary with
      // the table gone: any rclone, a crypt remote over the volume's directory, the passphrase obscured
      // into rclone's environment only.
      sql(primary, 'DROP TABLE t.vault');
      const restore = (key: string) =>
        run(
          [
            'set -o pipefail',
            `export RCLONE_CONFIG_VAULT_TYPE=crypt RCLONE_CONFIG_VAULT_REMOTE=${volume} RCLONE_CONFIG_VAULT_FILENAME_ENCRYPTION=off RCLONE_CONFIG_VAULT_DIRECTORY_NAME_ENCRYPTION=false RCLONE_CONFIG_VAULT_SUFFIX=none`,
            `RCLONE_CONFIG_VAULT_PASSWORD=$(printf '%s' "$(cat ${key})" | rclone obscure -) rclone cat 'vault:${file}' | gunzip -c | { . /opt/recon8s/common.sh && local_sql; }`,
          ].join('\n'),
        );
      const refused = restore('/tmp/volume-other.key');
      assert.equal(refused.ok, false);
      assert.match(refused.stderr, /bad password/, refused.stderr);
      assert.equal(
        sql(
          primary,
          "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 't' AND TABLE_NAME = 'vault'",
        ),
        '0',
      );
      const restored = restore('/tmp/volume.key');
      assert.ok(restored.ok, restored.stderr);
      assert.equal(sql(primary, 'SELECT note FROM t.vault WHERE id = 1'), marker);
    } finally {
      sql(primary, 'DROP TABLE IF EXISTS t.vault');
      run(`rm -rf ${volume} /tmp/volume.key /tmp/volume-other.key`);
    }
  });

  it("backs up physically (a clone by the job's own throwaway mysqld, spec.backup.method physical) while a writer writes, at the clone's GTID set, and a restore into a scratch mysqld verifies it; an archive holding a link, or another GTID set, fails the verification, naming the object", () => {
    const store = '/tmp/store-physical';
    const run = storeJobs(
      store,
      '/tmp/verify-physical',
      '/tmp/termination-log.physical',
      'BACKUP_METHOD=physical BACKUP_CLONE_SCRATCH=/tmp/clone-scratch',
    );
    assert.ok(run('mkdir -p /tmp/clone-scratch').ok);
    sql(
      primary,
      "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE t.p (id INT PRIMARY KEY, note VARCHAR(32)); INSERT INTO t.p VALUES (0, 'before')",
    );
    const backup = run(
      '. /opt/recon8s/common.sh; ( for ((i = 1; i <= 2000; i++)); do local_sql -e "INSERT INTO t.p VALUES ($i, \'during\')" || exit 1; done ) & writer=$!; sleep 0.3; bash /opt/recon8s/backup.sh; rc=$?; kill $writer 2>/dev/null; wait $writer; echo "rc=$rc"; cat /tmp/termination-log.physical',
    );
    assert.match(backup.stdout, /rc=0\nBackupCompleted: /, `${backup.stdout}${backup.stderr}`);
    const name = /"name":"(\d{8}T\d{6}Z)"/.exec(backup.stdout)?.[1] ?? '';
    const dir = `${store}/shop/base/${name}`;
    const manifest = JSON.parse(run(`cat ${dir}/manifest.json`).stdout) as {
      method: string;
      gtidSet: string;
      dataBytes: number;
      cloneSeconds: number;
    };
    assert.equal(manifest.method, 'physical');
    assert.match(manifest.gtidSet, /^[0-9a-f-]{36}:1-\d+$/);
    assert.ok(manifest.dataBytes > 10 * 1024 * 1024, JSON.stringify(manifest));
    const listing = run(`tar -tzf ${dir}/datadir.tar.gz`).stdout.split('\n');
    assert.ok(listing.includes('./mysql.ibd'), 'a data directory');
    assert.ok(!listing.includes('./auto.cnf'), "without the donor's server identity");
    assert.equal(run('ls -A /tmp/clone-scratch').stdout, '', 'the scratch volume is emptied');

    const verify = () => run('bash /opt/recon8s/verify-backup.sh; echo "rc=$?"; cat /tmp/termination-log.physical');
    const passed = verify();
    assert.match(passed.stdout, /rc=0\nBackupVerified: \{"backup":"\d{8}T\d{6}Z"/, `${passed.stdout}${passed.stderr}`);
    // The copy's rows are those of its GTID set: the writer's rows up to some point, then none.
    assert.match(passed.stderr, /the physical copy holds the GTID set its manifest records/, passed.stderr);

    // A copy with a link in it (which a later file could be written through): refused, naming the object.
    const linked = run(
      `cp ${dir}/datadir.tar.gz /tmp/whole-physical.tgz && rm -rf /tmp/evil && mkdir /tmp/evil && tar -C /tmp/evil -xzf ${dir}/datadir.tar.gz && ln -s /etc /tmp/evil/escape && tar -C /tmp/evil -czf ${dir}/datadir.tar.gz . && rm -rf /tmp/evil`,
    );
    assert.ok(linked.ok, linked.stderr);
    const refused = verify();
    assert.match(
      refused.stdout,
      /rc=1\nBackupVerificationFailed: .*holds something that is neither a file nor a directory: 'escape'/,
      refused.stdout,
    );
    // A manifest naming another GTID set than the copy holds: refused.
    assert.ok(run(`cp /tmp/whole-physical.tgz ${dir}/datadir.tar.gz`).ok);
    const other = run(
      `sed -i 's/"gtidSet":"\\([0-9a-f-]*\\):1-[0-9]*"/"gtidSet":"\\1:1-3"/' ${dir}/manifest.json && bash /opt/recon8s/verify-backup.sh; echo "rc=$?"; cat /tmp/termination-log.physical`,
    );
    assert.match(
      other.stdout,
      /rc=1\nBackupVerificationFailed: .*holds the GTID set '[^']+', not the one its manifest records/,
      other.stdout,
    );
  });

  it('listens on 3306 only: no X Protocol', () => {
    for (const m of members) {
      const host = m.ordinal === 0 ? '127.0.0.1' : `127.0.0.${10 + m.ordinal}`;
      const tcp = (port: number) => m.exec(['bash', '-c', `exec 3<>/dev/tcp/${host}/${port}`]).ok;
      assert.equal(tcp(3306), true, `member ${m.ordinal}: 3306`);
      assert.equal(tcp(33060), false, `member ${m.ordinal}: 33060`);
      assert.equal(
        sql(
          m,
          "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'mysqlx' AND PLUGIN_STATUS = 'ACTIVE'",
        ),
        '0',
      );
    }
  });

  it('re-provisions by clone a replica whose primary purged the binary logs it needs, keeping its data until the clone replicates', async () => {
    const replica = members[2] as SandboxMember;
    const uuid = sql(replica, 'SELECT @@server_uuid');
    await replica.stop();
    // While it is away, the primary writes and its binary logs "expire".
    sql(primary, 'INSERT INTO t.r VALUES (2); FLUSH BINARY LOGS; INSERT INTO t.r VALUES (3)');
    await purgeBinaryLogs();
    const primaryUuid = sql(primary, 'SELECT @@server_uuid');

    replica.start();
    await alive(replica);
    // The controller points it at the primary again (skip_replica_start); the primary lacks what it needs.
    follow(replica);
    await eventually(
      () =>
        assert.match(
          replica.log('mysql'),
          /the data directory is now a clone of the primary; the previous one is kept in \/var\/lib\/mysql\/data\.previous/,
        ),
      { timeoutMs: 90_000, intervalMs: 250, description: 'the clone adopted', diagnose: () => replica.diagnose() },
    );
    const agentLog = replica.log('agent');
    assert.match(
      agentLog,
      /the primary no longer has the binary logs this replica needs \(Got fatal error 1236 from source .*purged required binary logs/,
    );
    assert.match(
      agentLog,
      /the agent container exited with 0: ReprovisionedByClone: shop-2 was re-provisioned by clone from 127\.0\.0\.1: the primary no longer has the binary logs this replica needs \(Got fatal error 1236[^]*?\)\. Its previous data directory is kept until the clone replicates\./,
    );
    // Restarted on the clone: read-only and not replicating until the controller points it again.
    await alive(replica);
    follow(replica);
    await ready(replica);
    await rows(replica, '1,2,3');
    await eventually(
      () => assert.match(replica.log('agent'), /the clone replicates; removed the previous data directory/),
      { timeoutMs: 30_000, description: 'the previous data removed', diagnose: () => replica.diagnose() },
    );
    assert.deepEqual(readdirSync(replica.volume), ['data']);
    // A replica of its own (not the donor's identity), read-only, replicating new writes.
    assert.notEqual(sql(replica, 'SELECT @@server_uuid'), primaryUuid);
    assert.notEqual(sql(replica, 'SELECT @@server_uuid'), uuid);
    assert.equal(sql(replica, 'SELECT @@GLOBAL.super_read_only'), '1');
    sql(primary, 'INSERT INTO t.r VALUES (4)');
    await rows(replica, '1,2,3,4');
    // Nothing happened to the primary or the other replica.
    assert.equal(sql(primary, 'SELECT @@server_uuid'), primaryUuid);
    assert.equal(sql(primary, 'SELECT @@GLOBAL.read_only'), '0');
    await rows(members[1] as SandboxMember, '1,2,3,4');
  });

  it('never re-provisions a replica holding transactions the primary lacks', async function () {
    this.timeout(240_000);
    const replica = members[1] as SandboxMember;
    // An errant transaction (written on the replica by hand, outside replication) ...
    sql(replica, 'SET GLOBAL super_read_only = 0; CREATE DATABASE errant; SET GLOBAL super_read_only = 1');
    await replica.stop();
    sql(primary, 'INSERT INTO t.r VALUES (5)');
    await purgeBinaryLogs();
    replica.start();
    await alive(replica);
    // The controller leaves a member with errant transactions alone: its channel stays stopped
    // (skip_replica_start), and it serves nothing ...
    assert.match(unready(replica), /replication is not applying \(applier: OFF\)/);
    // ... and even pointed at the primary (by hand), whose binary logs it no longer finds, the errant
    // transaction keeps it out of re-provisioning: it stays as it is, unready, and says why.
    follow(replica);
    await eventually(
      () =>
        assert.match(
          replica.log('agent'),
          /not re-provisioning: this member has transactions the primary does not have/,
        ),
      {
        // The agent looks every 10 s, once the receiver has given up on the purged logs (slow on a loaded machine).
        timeoutMs: 120_000,
        intervalMs: 250,
        description: 'the refusal',
        diagnose: () => replica.diagnose(),
      },
    );
    assert.equal(replica.probe('ready').ok, false);
    assert.deepEqual(readdirSync(replica.volume), ['data']);
    assert.equal(sql(replica, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'errant'"), '1');
    assert.doesNotMatch(replica.log('agent'), /ReprovisionedByClone/);
  });

  it('re-provisions on request (a new recon8s.dev/reprovision pod annotation) a member holding errant transactions, discarding them, once', async () => {
    const replica = members[1] as SandboxMember;
    const uuid = sql(replica, 'SELECT @@server_uuid');
    const errant = sql(
      replica,
      `SELECT REPLACE(GTID_SUBTRACT(@@GLOBAL.gtid_executed, ${literal(sql(primary, GTID_EXECUTED))}), CHAR(10), '')`,
    );
    assert.match(errant, new RegExp(`^${uuid}:\\d+$`));
    // A person decided to discard the errant transactions: the controller's annotation, seen in the downward API volume.
    replica.annotate({ 'recon8s.dev/reprovision': '2026-11-22T21:00:00Z' });
    await eventually(
      () =>
        assert.match(
          replica.log('mysql'),
          /the data directory is now a clone of the primary; the previous one is kept in \/var\/lib\/mysql\/data\.previous/,
        ),
      { timeoutMs: 90_000, intervalMs: 250, description: 'the clone adopted', diagnose: () => replica.diagnose() },
    );
    assert.match(
      replica.log('agent'),
      /re-provisioning this member by clone from 127\.0\.0\.1: the pod's recon8s\.dev\/reprovision annotation asks for it \(2026-11-22T21:00:00Z\)/,
    );
    assert.match(replica.log('agent'), /ReprovisionedByClone: shop-1 was re-provisioned by clone from 127\.0\.0\.1/);
    await alive(replica);
    follow(replica);
    await ready(replica);
    sql(primary, 'INSERT INTO t.r VALUES (6)');
    await rows(replica, '1,2,3,4,5,6');
    assert.equal(sql(replica, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'errant'"), '0');
    assert.notEqual(sql(replica, 'SELECT @@server_uuid'), uuid);
    assert.equal(sql(replica, 'SELECT @@GLOBAL.super_read_only'), '1');
    await eventually(
      () =>
        assert.deepEqual(
          readdirSync(replica.volume)
            .sort()
            .map((e) => e.replace(/^discarded-.*/, 'discarded-<time>')),
          ['data', 'discarded-<time>', 'reprovision-request.done'],
          'the previous data removed, what was discarded kept',
        ),
      { timeoutMs: 30_000, description: 'the previous data removed', diagnose: () => replica.diagnose() },
    );
    // What it discarded, and the binary log holding it, kept on the volume: mysqlbinlog reads it there.
    const [record] = readdirSync(replica.volume).filter((e) => e.startsWith('discarded-'));
    assert.equal(readFileSync(join(replica.volume, record ?? '', 'gtids'), 'utf8'), `${errant}\n`);
    const kept = readFileSync(join(replica.volume, record ?? '', 'kept'), 'utf8')
      .trim()
      .split('\n');
    assert.equal(kept.length, 1, kept.join(','));
    const shown = replica.exec([
      'mysqlbinlog',
      '--verbose',
      `--include-gtids=${errant}`,
      `/var/lib/mysql/${record ?? ''}/${kept[0] ?? ''}`,
    ]);
    assert.ok(shown.ok, shown.stderr);
    assert.match(shown.stdout, /CREATE DATABASE errant/);
    // The request is done once: the member restarts and keeps its data.
    await replica.stop();
    replica.start();
    await alive(replica);
    follow(replica);
    await ready(replica);
    const restartedUuid = sql(replica, 'SELECT @@server_uuid');
    await new Promise((r) => setTimeout(r, 12_000)); // longer than the agent's 10 s period
    assert.equal(sql(replica, 'SELECT @@server_uuid'), restartedUuid);
    assert.equal((replica.log('agent').match(/ReprovisionedByClone: shop-1/g) ?? []).length, 1);
  });
  it('discards a real unacknowledged commit of a former primary (AFTER_SYNC wrote it to the binary log, then mysqld was killed): the verdict, the bounded request, its binary log kept', async function () {
    this.timeout(300_000);
    // Member 2 plays a primary whose replicas do not receive: it leaves replication, waits for one
    // semi-synchronous acknowledgement (as the controller's enableWrites), and takes a write. The commit is
    // in its binary log and waits for an acknowledgement no replica can send; then mysqld is killed.
    const former = members[2] as SandboxMember;
    const ownUuid = sql(former, 'SELECT @@server_uuid');
    const ownAtStart = GtidSet.parse(sql(former, GTID_EXECUTED)).ofServer(ownUuid);
    controllerSql(former, 'STOP REPLICA');
    makePrimary(former);
    const { createConnection } = await import('mysql2/promise');
    const client = await createConnection({ socketPath: former.socket(), user: 'root', password: ROOT_PASSWORD });
    const commit = client.query('INSERT INTO t.r VALUES (100)').then(
      () => 'acknowledged',
      () => 'never acknowledged',
    );
    await commitWaitingForAcknowledgement(former);
    const killed = former.exec(['bash', '-c', 'kill -KILL "$(cat /var/run/mysqld/mysqld.pid)"']);
    assert.ok(killed.ok, killed.stderr);
    assert.equal(await commit, 'never acknowledged');
    client.destroy();
    // Back (the container restarts it), read-only, holding the commit no replica received.
    await alive(former);
    await eventually(() => assert.equal(sql(former, 'SELECT @@GLOBAL.super_read_only'), '1'), {
      timeoutMs: 60_000,
      description: 'the restarted member read-only',
    });
    const primaryExecuted = GtidSet.parse(sql(primary, GTID_EXECUTED));
    const executed = GtidSet.parse(sql(former, GTID_EXECUTED));
    const surplus = executed.subtract(primaryExecuted);
    assert.equal(surplus.count(), 1, surplus.toString());
    assert.ok(surplus.isSubsetOf(executed.ofServer(ownUuid)), 'its own commit');
    assert.equal(sql(former, 'SELECT COUNT(*) FROM t.r WHERE id = 100'), '1');
    assert.equal(sql(primary, 'SELECT COUNT(*) FROM t.r WHERE id = 100'), '0');

    // The records the controller keeps for such a term and failover (member 0 took over, every replica
    // in reach), and the verdict on what the members answer: it may be discarded, exactly that.
    const failover: FailoverRecord = {
      from: 'shop-2',
      to: 'shop-0',
      time: new Date().toISOString(),
      outOfReach: 0,
      term: { member: 'shop-2', serverUuid: ownUuid, ownGtidsAtStart: ownAtStart, semiSyncReplicas: 1 },
    };
    const verdict = rejoinVerdict({
      member: { name: 'shop-2', sql: { serverUuid: ownUuid, writable: false, executed } },
      primary: { name: 'shop-0', executed: primaryExecuted },
      failover,
    });
    assert.equal(verdict?.kind, 'discard');
    assert.equal(verdict.surplus.toString(), surplus.toString());

    // The controller's request: the agent clones member 0, discarding exactly that, and keeps its binary log.
    former.annotate({ 'recon8s.dev/reprovision': discardRequest(verdict.surplus) });
    await eventually(
      () =>
        assert.match(
          former.log('agent'),
          /ReprovisionedByClone: shop-2 was re-provisioned by clone from 127\.0\.0\.1: the controller asks for it/,
        ),
      { timeoutMs: 120_000, intervalMs: 250, description: 'the clone', diagnose: () => former.diagnose() },
    );
    assert.match(
      former.log('agent'),
      new RegExp(`It discarded ${surplus.toString()}; the binary logs holding them \\(binlog\\.\\d+\\) are kept in`),
    );
    await alive(former);
    follow(former);
    await ready(former);
    await rows(former, '1,2,3,4,5,6');
    // The agent writes `kept`, then removes the previous data directory: both, in that order.
    await eventually(
      () => {
        assert.ok(
          readdirSync(former.volume)
            .filter((e) => e.startsWith('discarded-'))
            .some((e) => readdirSync(join(former.volume, e)).includes('kept')),
        );
        assert.ok(!readdirSync(former.volume).includes('data.previous'));
      },
      {
        timeoutMs: 30_000,
        description: 'the discarded binary log kept, the previous data directory removed',
        diagnose: () => former.diagnose(),
      },
    );
    const record = readdirSync(former.volume)
      .filter((e) => e.startsWith('discarded-'))
      .find((e) => readFileSync(join(former.volume, e, 'gtids'), 'utf8').trim() === surplus.toString());
    const [log] = readFileSync(join(former.volume, record ?? '', 'kept'), 'utf8')
      .trim()
      .split('\n');
    const shown = former.exec([
      'mysqlbinlog',
      '--verbose',
      `--include-gtids=${surplus.toString()}`,
      `/var/lib/mysql/${record ?? ''}/${log ?? ''}`,
    ]);
    assert.ok(shown.ok, shown.stderr);
    assert.match(shown.stdout, /INSERT INTO `t`\.`r`/);
    assert.match(shown.stdout, /@1=100/);
  });
  it("fences a member before mysqld's graceful shutdown (the preStop hook): a commit waiting for a replica is never acknowledged, where a shutdown alone acknowledges it; such a stop is recorded, and the agent refuses to discard what it held", async function () {
    this.timeout(300_000);
    // Member 2 plays a primary cut off from its replicas (it leaves replication, waits for one
    // acknowledgement, and none comes), as in the test before.
    const former = members[2] as SandboxMember;
    const { createConnection } = await import('mysql2/promise');
    const waitingCommit = async (id: number): Promise<{ end: () => void; commit: Promise<string> }> => {
      controllerSql(former, 'STOP REPLICA');
      makePrimary(former);
      const client = await createConnection({ socketPath: former.socket(), user: 'root', password: ROOT_PASSWORD });
      client.on('error', () => undefined);
      const commit = client.query(`INSERT INTO t.r VALUES (${id})`).then(
        () => 'acknowledged',
        () => 'never acknowledged',
      );
      await commitWaitingForAcknowledgement(former);
      return { end: () => client.destroy(), commit };
    };
    const exits = (): number => (former.log('mysql').match(/the mysql container exited/g) ?? []).length;
    /** SHUTDOWN, as the kubelet's SIGTERM stops mysqld; the container starts it again. */
    const shutdownAndRestart = async (): Promise<void> => {
      const before = exits();
      sql(former, 'SHUTDOWN');
      await eventually(() => assert.ok(exits() > before), { timeoutMs: 60_000, description: 'mysqld to shut down' });
      await alive(former);
    };
    const unsafeStops = (): UnsafeStop[] => {
      // Over TLS, as the controller asks; the plain HTTP port refuses it.
      const plain = former.agentGet('/unsafe-stops', 'http');
      assert.ok(
        !plain.ok && /served on the TLS port \(9443\) only/.test(plain.stdout),
        `${plain.stdout}${plain.stderr}`,
      );
      const r = former.agentGet('/unsafe-stops');
      assert.ok(r.ok, r.stderr);
      return JSON.parse(r.stdout) as UnsafeStop[];
    };

    // The hook, then the shutdown: the client waiting is told nothing succeeded, and the stop is safe.
    const fenced = await waitingCommit(200);
    // The hook as the kubelet runs it: the script, in the mysql container, over the pod's loopback.
    const hook = former.exec(['env', `AGENT_ADDRESS=${address(former.ordinal)}`, 'bash', '/opt/recon8s/pre-stop.sh']);
    assert.ok(hook.ok, `${hook.stdout}${hook.stderr}`);
    assert.equal(hook.stdout.trim(), 'fenced');
    assert.equal(await fenced.commit, 'never acknowledged');
    fenced.end();
    assert.equal(sql(former, 'SELECT @@GLOBAL.super_read_only'), '1');
    await shutdownAndRestart();
    assert.deepEqual(unsafeStops(), []);

    // The shutdown alone: MySQL acknowledges the waiting commit, by no replica (MY-011145).
    const released = await waitingCommit(201);
    const logBefore = former.log('mysql').length;
    await shutdownAndRestart();
    assert.equal(await released.commit, 'acknowledged');
    released.end();
    assert.match(former.log('mysql').slice(logBefore), /\[MY-011145\] \[Repl\] SEMISYNC: Forced shutdown/);
    const stops = unsafeStops();
    assert.equal(stops.length, 1, JSON.stringify(stops));
    assert.match(stops[0]?.why ?? '', /shut down cleanly without its agent fencing it first/);
    const surplus = GtidSet.parse(sql(former, GTID_EXECUTED)).subtract(GtidSet.parse(sql(primary, GTID_EXECUTED)));
    assert.equal(surplus.count(), 2, surplus.toString());
    assert.ok(surplus.isSubsetOf(GtidSet.parse(stops[0]?.executed ?? '')));

    // A crash releases nothing: not recorded.
    const killed = former.exec(['bash', '-c', 'kill -KILL "$(cat /var/run/mysqld/mysqld.pid)"']);
    assert.ok(killed.ok, killed.stderr);
    await alive(former);
    assert.equal(unsafeStops().length, 1);

    // The controller's request to discard them (were it made): its agent refuses, and both rows stay.
    former.annotate({ 'recon8s.dev/reprovision': discardRequest(surplus) });
    await eventually(
      () =>
        assert.match(
          former.log('agent'),
          /not re-provisioning: this member held \S+ when a stop of its mysqld was found unsafe at \S+ \(it was shut down cleanly without its agent fencing it first/,
        ),
      { timeoutMs: 60_000, intervalMs: 250, description: 'the refusal', diagnose: () => former.diagnose() },
    );
    assert.equal(sql(former, 'SELECT COUNT(*) FROM t.r WHERE id IN (200, 201)'), '2');
  });
});
