// The agent's loop and probes (lib/agent/agent.ts), with a fake member session, fake peers and a clock
// the test moves: what it does on a primary, on one cut off, on a replica, and what the kubelet is told.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { checkServerIdentity } from 'node:tls';
import { Agent } from '../../lib/agent/agent.js';
import { fetchAgentRevision, fetchAgentUnsafeStops } from '../../lib/controller/mysql-cluster/agent-http.js';
import type { AgentTarget } from '../../lib/controller/mysql-cluster/agent-http.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import { fromInsideThePod } from '../../lib/agent/http-api.js';
import {
  FORMER_REPLICATION_GRANTS_SQL,
  ROTATED_REVISIONS_SQL,
  accountStatements,
  ensureAccounts,
} from '../../lib/agent/accounts.js';
import type { ClusterCredentials } from '../../lib/agent/credential-files.js';
import type { AgentConfig } from '../../lib/agent/config.js';
import { agentConfig } from '../../lib/agent/config.js';
import { liveness, readiness } from '../../lib/agent/health.js';
import type { ChannelThreads, LocalSqlApi } from '../../lib/agent/local-sql.js';
import type { PeerLook } from '../../lib/agent/isolation.js';
import type { FencingSql } from '../../lib/mysql/fencing.js';
import { Peers } from '../../lib/agent/peers.js';
import { StopRecords } from '../../lib/agent/stops.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';

const ENV = {
  POD_NAME: 'shop-0',
  POD_IP: '10.1.0.10',
  HEADLESS_SERVICE: 'shop-headless',
  PRIMARY_HOST: 'shop-primary',
  SELF_FENCE_AFTER_SECONDS: '7',
  AGENT_PORT: '0',
  AGENT_ADDRESS: '127.0.0.1',
};

/** The mounted credentials Secret, as the agent reads it (credentials.ts). */
const SECRET: ClusterCredentials = {
  revision: '0',
  root: `r00t'"\\#$ x`,
  replication: `repl'"\\#;--`,
  admin: `4dmin'"\\#%s`,
  clone: `cl0ne'"\\#%s`,
  backup: `b4ckup'"\\#%s`,
};

const PASSWORDS = { replication: 'r', admin: 'a', clone: 'c', backup: 'b' };

/** A member: writable or not, semi-sync on or not, answering or not; records every statement. */
class FakeMember implements LocalSqlApi {
  readOnly = false;
  superReadOnly = false;
  semiSync = true;
  offline = false;
  answers = true;
  startedAtMs = 1_000_000;
  channelThreads: ChannelThreads | undefined;
  readonly statements: string[] = [];
  /** What information_schema.USER_ATTRIBUTES says a rotation set (user, host, revision). */
  rotated: { user: string; host: string; revision: string }[] = [];
  /** What the replication account holds beyond REPLICATION SLAVE (as a cluster of an earlier version has it). */
  formerReplicationGrants: string[] = [];
  private down(): Promise<never> {
    return Promise.reject(Object.assign(new Error('connect ENOENT /var/run/mysqld/mysqld.sock'), { code: 'ENOENT' }));
  }
  rows(sql: string) {
    if (!this.answers) return this.down();
    if (sql === FORMER_REPLICATION_GRANTS_SQL)
      return Promise.resolve(this.formerReplicationGrants.map((privilege) => ({ privilege })) as never[]);
    return Promise.resolve((sql === ROTATED_REVISIONS_SQL ? this.rotated : []) as never[]);
  }
  exec(sql: string) {
    if (!this.answers) return this.down();
    this.statements.push(sql);
    if (sql === 'SET GLOBAL super_read_only = ON') [this.readOnly, this.superReadOnly] = [true, true];
    if (sql === 'SET GLOBAL rpl_semi_sync_source_enabled = OFF') this.semiSync = false;
    if (/^SET (GLOBAL|PERSIST) offline_mode = /.test(sql)) this.offline = sql.endsWith('ON');
    return Promise.resolve();
  }
  startedAt() {
    return this.answers ? Promise.resolve(this.startedAtMs) : this.down();
  }
  flags() {
    return this.answers
      ? Promise.resolve({
          readOnly: this.readOnly,
          superReadOnly: this.superReadOnly,
          semiSyncSource: this.semiSync,
          offline: this.offline,
        })
      : this.down();
  }
  channel() {
    return Promise.resolve(this.channelThreads);
  }
  stoppedReceiverError() {
    return Promise.resolve(undefined);
  }
  gtidExecuted() {
    return this.answers ? Promise.resolve(this.executed) : this.down();
  }
  gtidSubset() {
    return Promise.resolve(true);
  }
  gtidSubtract() {
    return Promise.resolve('');
  }
  binaryLogs() {
    return Promise.resolve([]);
  }
  previousGtids() {
    return Promise.resolve('');
  }
  cloneInProgress() {
    return Promise.resolve(false);
  }
  serverUuid() {
    return this.answers ? Promise.resolve('aaaaaaaa-0000-0000-0000-000000000001') : this.down();
  }
  /** Replicas receiving from it (binary-log dump threads). */
  receiving = 0;
  replicasReceiving() {
    return this.answers ? Promise.resolve(this.receiving) : this.down();
  }
  executed = 'aaaaaaaa-0000-0000-0000-000000000001:1-10';
  crashed = false;
  recoveredFromCrash() {
    return this.answers ? Promise.resolve(this.crashed) : this.down();
  }
  /** What happens on the member while the agent waits for the fencing lock (another fencing ending). */
  meanwhile: (() => void) | undefined;
  fencingSession<T>(fn: (sql: FencingSql) => Promise<T>): Promise<T> {
    this.meanwhile?.();
    return fn({
      exec: (sql: string) => this.exec(sql),
      clientSessions: () => Promise.resolve([42]),
      kill: (id: number) => this.exec(`KILL CONNECTION ${id}`),
      // Nothing holds read-only up here: the request is done at once.
      aside: async (statements: readonly string[]) => {
        for (const sql of statements) await this.exec(sql);
        return { id: 7, done: Promise.resolve() };
      },
      sessionState: () => Promise.resolve(undefined),
      lock: () => Promise.resolve(true),
      fencingFlags: () => Promise.resolve({ semiSyncSource: this.semiSync, offline: this.offline }),
    });
  }
}

/** Peers whose look the test sets. */
function peers(look: () => PeerLook): Peers {
  const p = new Peers(
    'shop-headless',
    [],
    () => Promise.resolve([]),
    {
      answers: () => Promise.resolve(false),
      forget: () => undefined,
      close: () => Promise.resolve(),
    },
    () => undefined,
  );
  p.look = () => Promise.resolve(look());
  p.refresh = () => Promise.resolve(true);
  return p;
}

describe('agent', () => {
  let now: number;
  let member: FakeMember;
  let peerLook: PeerLook;
  let logins: string[];
  let loginOk: boolean;
  let reprovisionLooks: number;
  let logged: string[];
  let secret: ClusterCredentials;
  let stopsDir: string;
  const stopsFile = () => join(stopsDir, 'recon8s-stops.json');
  const config = (): AgentConfig => agentConfig(ENV);
  const agent = (c: AgentConfig = config()) =>
    new Agent(c, member, {
      now: () => now,
      log: (m) => void logged.push(m),
      peers: peers(() => peerLook),
      credentials: () => secret,
      loginWorks: (user) => (logins.push(user), Promise.resolve(loginOk)),
      stops: new StopRecords(
        stopsFile(),
        member,
        (m) => void logged.push(m),
        () => new Date(now),
      ),
      reprovisioner: {
        look: () => (reprovisionLooks++, Promise.resolve('nothing' as const)),
        forgetPreviousData: () => Promise.resolve(),
      },
    });

  beforeEach(() => {
    now = 2_000_000;
    member = new FakeMember();
    peerLook = 'reached';
    logins = [];
    loginOk = true;
    reprovisionLooks = 0;
    logged = [];
    secret = SECRET;
    stopsDir = mkdtempSync(join(tmpdir(), 'recon8s-agent-stops-'));
  });
  afterEach(() => rmSync(stopsDir, { recursive: true, force: true }));

  /** GET `path` of the agent's TLS port `to`, verified as the controller verifies it. */
  const tlsGet = (to: AgentTarget, path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      httpsRequest(
        {
          host: to.ip,
          port: to.port,
          path,
          ca: to.ca,
          servername: to.servername,
          checkServerIdentity: (_host, cert) => checkServerIdentity(to.servername, cert),
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      )
        .on('error', reject)
        .end();
    });

  /** GET `path` of the agent listening on `port`. */
  const httpGet = (port: number, path: string, host = '127.0.0.1') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      request({ host, port, path }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
        .on('error', reject)
        .end();
    });

  it('looks again every second while mysqld does not answer, and does nothing else', async () => {
    member.answers = false;
    assert.deepEqual(await agent().step(), { delayMs: 1000 });
    assert.deepEqual(member.statements, []);
  });

  it('on the primary: checks the accounts once per mysqld start, writes nothing when they log in, and looks for a partition every second', async () => {
    const a = agent();
    assert.deepEqual(await a.step(), { delayMs: 1000 });
    assert.deepEqual(logins, ['recon8s-clone', 'recon8s-backup', 'replication', 'recon8s-admin']);
    await a.step();
    assert.equal(logins.length, 4, 'not again for the same mysqld');
    member.startedAtMs += 60_000; // restarted
    await a.step();
    assert.equal(logins.length, 8);
    assert.deepEqual(member.statements, []);
  });

  it('creates or re-keys the accounts when one cannot log in, the passwords as values only', async () => {
    loginOk = false;
    const a = agent();
    await a.step();
    assert.ok(member.statements.some((s) => s.startsWith("CREATE USER IF NOT EXISTS 'replication'@'%'")));
    for (const s of member.statements)
      for (const password of [SECRET.replication, SECRET.admin, SECRET.clone, SECRET.backup])
        assert.ok(!s.includes(password), s);
    const writes: { sql: string; values?: unknown[] }[] = [];
    await ensureAccounts(
      {
        exec: (sql: string, values?: unknown[]) => (writes.push({ sql, values }), Promise.resolve()),
        rows: () => Promise.resolve([]),
      },
      PASSWORDS,
      () => Promise.resolve(false),
    );
    assert.deepEqual(writes, accountStatements(PASSWORDS));
    for (const p of ['a', 'c', 'b'])
      assert.ok(writes.some((w) => w.sql.includes('REQUIRE SSL') && w.values?.[0] === p));
  });

  it('grants each cluster account only its own privileges: replication receives the binary log and cannot clone, cloning is a TLS account of its own, the backup account reads and cannot write', () => {
    const grants = (user: string) =>
      accountStatements(PASSWORDS)
        .map((s) => s.sql)
        .filter((sql) => sql.startsWith('GRANT ') && sql.endsWith(` TO '${user}'@'%'`));
    assert.deepEqual(grants('replication'), ["GRANT REPLICATION SLAVE ON *.* TO 'replication'@'%'"]);
    assert.deepEqual(grants('recon8s-clone'), ["GRANT BACKUP_ADMIN ON *.* TO 'recon8s-clone'@'%'"]);
    assert.deepEqual(grants('recon8s-backup'), [
      "GRANT SELECT, SHOW VIEW, TRIGGER, EVENT, RELOAD, PROCESS, REPLICATION CLIENT, REPLICATION SLAVE ON *.* TO 'recon8s-backup'@'%'",
    ]);
    const created = accountStatements(PASSWORDS).map((s) => s.sql);
    for (const user of ['recon8s-clone', 'recon8s-backup'])
      assert.ok(created.includes(`CREATE USER IF NOT EXISTS '${user}'@'%' IDENTIFIED BY ? REQUIRE SSL`), user);
  });

  it('upgrades a cluster of an earlier version in place on its primary: creates the clone and backup accounts, then revokes BACKUP_ADMIN and REPLICATION CLIENT from replication; silent once done', async () => {
    member.formerReplicationGrants = ['BACKUP_ADMIN', 'REPLICATION CLIENT'];
    // The accounts of before log in; the new ones do not exist yet.
    const missing = new Set(['recon8s-clone', 'recon8s-backup']);
    const done = await ensureAccounts(member, PASSWORDS, (user) => Promise.resolve(!missing.has(user)));
    assert.deepEqual(done.updated, ['recon8s-clone', 'recon8s-backup']);
    assert.deepEqual(done.revoked, ['BACKUP_ADMIN', 'REPLICATION CLIENT']);
    const revoke = member.statements.indexOf("REVOKE BACKUP_ADMIN, REPLICATION CLIENT ON *.* FROM 'replication'@'%'");
    const clone = member.statements.indexOf("GRANT BACKUP_ADMIN ON *.* TO 'recon8s-clone'@'%'");
    assert.ok(clone >= 0 && revoke > clone, member.statements.join('\n'));
    // Every account logs in, and replication holds only its own: nothing is written.
    member.statements.length = 0;
    member.formerReplicationGrants = [];
    assert.deepEqual(await ensureAccounts(member, PASSWORDS, () => Promise.resolve(true)), { updated: [], kept: [] });
    assert.deepEqual(member.statements, []);
    // Accounts that all log in, and a replication account of before: only the revoke.
    member.formerReplicationGrants = ['BACKUP_ADMIN'];
    const later = await ensureAccounts(member, PASSWORDS, () => Promise.resolve(true));
    assert.deepEqual(later.revoked, ['BACKUP_ADMIN']);
    assert.deepEqual(member.statements, ["REVOKE BACKUP_ADMIN ON *.* FROM 'replication'@'%'"]);
  });

  it('re-keys only the account that cannot log in', async () => {
    const writes: string[] = [];
    const done = await ensureAccounts(
      { exec: (sql: string) => (writes.push(sql), Promise.resolve()), rows: () => Promise.resolve([]) },
      PASSWORDS,
      (user) => Promise.resolve(user !== 'recon8s-admin'),
    );
    assert.deepEqual(done, { updated: ['recon8s-admin'], kept: [] });
    assert.ok(writes.length > 0 && writes.every((w) => w.includes("'recon8s-admin'@'%'")), writes.join('\n'));
  });

  it('never sets a password older than the Secret’s: an account a rotation set to another revision than the mounted Secret says is left as it is, and said so', async () => {
    loginOk = false;
    // A rotation set both accounts to the passwords of T2; the kubelet has not updated this member's files yet.
    member.rotated = ['recon8s-clone', 'recon8s-backup', 'replication', 'recon8s-admin'].map((user) => ({
      user,
      host: '%',
      revision: 'T2',
    }));
    secret = { ...SECRET, revision: 'T1' };
    await agent().step();
    assert.equal(member.statements.length, 0, member.statements.join('\n'));
    assert.deepEqual(
      logged.map((l) => l.replace(/ \(.*/, '')),
      [
        'left account recon8s-clone as it is: a rotation set it to the passwords of revision T2, and this member reads revision T1',
        'left account recon8s-backup as it is: a rotation set it to the passwords of revision T2, and this member reads revision T1',
        'left account replication as it is: a rotation set it to the passwords of revision T2, and this member reads revision T1',
        'left account recon8s-admin as it is: a rotation set it to the passwords of revision T2, and this member reads revision T1',
      ],
    );
    // The same revision (the Secret changed by hand since): its password is the Secret's, re-keyed.
    const a = agent();
    secret = { ...SECRET, revision: 'T2' };
    await a.step();
    assert.ok(member.statements.some((s) => s.startsWith("ALTER USER 'replication'@'%'")));
  });

  it('reads the passwords from the mounted Secret at each use: a rotated one is the one it checks next', async () => {
    const checked: string[] = [];
    const a = new Agent(config(), member, {
      now: () => now,
      log: () => undefined,
      peers: peers(() => 'reached'),
      credentials: () => secret,
      loginWorks: (user, password) => (checked.push(`${user}:${password}`), Promise.resolve(true)),
      reprovisioner: { look: () => Promise.resolve('nothing'), forgetPreviousData: () => Promise.resolve() },
      stops: new StopRecords(stopsFile(), member, () => undefined),
    });
    await a.step();
    secret = { ...SECRET, revision: 'T1', replication: 'repl-T1', admin: 'admin-T1', backup: 'backup-T1' };
    member.startedAtMs += 60_000;
    await a.step();
    assert.deepEqual(checked, [
      `recon8s-clone:${SECRET.clone}`,
      `recon8s-backup:${SECRET.backup}`,
      `replication:${SECRET.replication}`,
      `recon8s-admin:${SECRET.admin}`,
      `recon8s-clone:${SECRET.clone}`,
      'recon8s-backup:backup-T1',
      'replication:repl-T1',
      'recon8s-admin:admin-T1',
    ]);
  });

  it('makes a primary cut off from every member read-only after SELF_FENCE_AFTER_SECONDS, timed from the first look that found none', async () => {
    const a = agent();
    await a.step();
    peerLook = 'unreached';
    for (let t = 0; t < 7; t++) {
      now += 1000;
      await a.step();
      assert.equal(member.readOnly, false, `still writable ${t + 1} s after the first failed look`);
    }
    now += 1000; // 7 s after the first look that reached nobody
    await a.step();
    assert.equal(member.superReadOnly, true);
    assert.deepEqual(logged, [
      'reached no other member for 7 s: making this member read-only (cut off, its writes could not be acknowledged anyway)',
    ]);
    assert.deepEqual(member.statements, [
      'SET GLOBAL offline_mode = ON',
      'KILL CONNECTION 42',
      'SET SESSION lock_wait_timeout = 31536000',
      'FLUSH TABLES WITH READ LOCK',
      'SET GLOBAL super_read_only = ON',
      'UNLOCK TABLES',
      'KILL CONNECTION 42',
      'SET GLOBAL rpl_semi_sync_source_enabled = OFF',
      'SET GLOBAL offline_mode = OFF',
      "DO RELEASE_LOCK('recon8s.fencing')",
    ]);
    // Read-only now: no further fencing, re-provisioning is looked at instead (it is a member like the others).
    const before = member.statements.length;
    await a.step();
    assert.equal(member.statements.length, before);
    assert.ok(reprovisionLooks > 0);
  });

  it('finishes a fencing that did not end (its process went away with the member offline and writable): read-only, said so, whether or not it reaches its peers', async () => {
    const a = agent();
    peerLook = 'reached';
    member.offline = true;
    member.semiSync = false; // the fencing turned the source side off before it went away
    await a.step();
    // It may have released stranded commits a failover discards: clients stay out (persisted), until
    // the controller finds the member's data in the cluster's history and admits them.
    assert.deepEqual([member.superReadOnly, member.offline], [true, true]);
    assert.ok(member.statements.includes('SET PERSIST offline_mode = ON'), member.statements.join('\n'));
    assert.deepEqual(logged, [
      'offline and writable: a fencing of this member did not end, or is under way; making it read-only unless it ends first',
    ]);
    // Once read-only, nothing more.
    const before = member.statements.length;
    await a.step();
    assert.equal(member.statements.length, before);
  });

  it('leaves alone a fencing that ends while it waits for the fencing lock (the controller gave up, or finished)', async () => {
    const a = agent();
    peerLook = 'reached';
    member.offline = true;
    member.meanwhile = () => {
      member.offline = false; // the controller's fencing gave up: clients let in again, still writable
    };
    await a.step();
    assert.deepEqual([member.superReadOnly, member.offline], [false, false]);
    assert.deepEqual(member.statements, ["DO RELEASE_LOCK('recon8s.fencing')"]);
  });

  it('never fences a primary whose peers answer, nor one without semi-synchronous replication, cut off or not', async () => {
    const a = agent();
    peerLook = 'reached';
    for (let t = 0; t < 20; t++, now += 1000) await a.step();
    member.semiSync = false;
    peerLook = 'unknown';
    for (let t = 0; t < 20; t++, now += 1000) assert.deepEqual(await a.step(), { delayMs: 10_000 });
    assert.equal(member.readOnly, false);
    assert.deepEqual(member.statements, []);
  });

  it('on a replica: no accounts, no fencing, a look at re-provisioning every 10 s', async () => {
    member.readOnly = member.superReadOnly = true;
    member.semiSync = false;
    peerLook = 'unknown';
    assert.deepEqual(await agent().step(), { delayMs: 10_000 });
    assert.deepEqual(logins, []);
    assert.deepEqual(member.statements, []);
    assert.equal(reprovisionLooks, 1);
  });

  /** The member's certificate files (shop-0's, signed by the cluster's CA), as the kubelet mounts them. */
  const MEMBER0 = 'shop-0.shop-headless.sandbox.svc';
  let tls: { dir: string; ca: string; otherCa: string };
  before(() => {
    const issued = new Date();
    const ca = issueCa('shop CA', issued);
    const cert = issueServerCertificate(ca, 'shop.sandbox', [MEMBER0], issued);
    const dir = mkdtempSync(join(tmpdir(), 'agent-tls-'));
    writeFileSync(join(dir, 'tls.crt'), cert.certPem);
    writeFileSync(join(dir, 'tls.key'), cert.keyPem);
    tls = { dir, ca: ca.certPem, otherCa: issueCa('another CA', issued).certPem };
  });
  after(() => rmSync(tls.dir, { recursive: true, force: true }));
  /** The agent's configuration with its TLS port (any free one) and the member's certificate. */
  const tlsConfig = (env: Record<string, string> = {}): AgentConfig =>
    agentConfig({
      ...ENV,
      ...env,
      AGENT_TLS_PORT: '0',
      TLS_CERT_FILE: join(tls.dir, 'tls.crt'),
      TLS_KEY_FILE: join(tls.dir, 'tls.key'),
    });

  /**
   * An agent serving both its ports while `fn` runs, stopped after: `port` is the HTTP one, `to` the
   * TLS one as the controller reaches it (agent-http.ts: the cluster's CA, the member's name).
   */
  const serving = async (
    fn: (a: Agent, port: number, to: AgentTarget) => Promise<void>,
    c = tlsConfig(),
  ): Promise<void> => {
    const a = agent(c);
    const port = await a.listen();
    try {
      const tlsPort = a.tlsPort();
      assert.ok(tlsPort, 'the TLS port listens');
      await fn(a, port, { ip: '127.0.0.1', servername: MEMBER0, ca: tls.ca, port: tlsPort });
    } finally {
      await a.stop();
    }
  };

  it("answers the controller over TLS with the member's certificate: verified by the cluster's CA and the member's name, refused for another name or another CA", async () => {
    await serving(async (_a, _port, to) => {
      assert.equal(await fetchAgentRevision(to), '0');
      secret = { ...SECRET, revision: 'T1' };
      assert.equal(await fetchAgentRevision(to), 'T1');
      assert.deepEqual(await fetchAgentUnsafeStops(to), []);
      // A certificate of the same CA for another member, or a CA the cluster does not have: no answer.
      assert.equal(await fetchAgentRevision({ ...to, servername: 'shop-1.shop-headless.sandbox.svc' }), undefined);
      assert.equal(await fetchAgentRevision({ ...to, ca: tls.otherCa }), undefined);
    });
  });

  it('answers the controller\u2019s questions over TLS only: the HTTP port refuses them (404, naming the TLS port), and the TLS port refuses the probes and the preStop hook', async () => {
    await serving(async (_a, port, to) => {
      for (const path of ['/credentials-revision', '/unsafe-stops']) {
        const plain = await httpGet(port, path);
        assert.equal(plain.status, 404, `${path} over plain HTTP: ${plain.body}`);
        assert.match(plain.body, new RegExp(`${path} is served on the TLS port \\(9443\\) only`));
        assert.doesNotMatch(plain.body, /^0$|\[\]/m, 'nothing of the answer');
      }
      // The TLS port answers what the controller asks, and nothing else.
      assert.equal((await tlsGet(to, '/credentials-revision')).status, 200);
      assert.deepEqual(await tlsGet(to, '/unsafe-stops'), { status: 200, body: '[]\n' });
      for (const path of ['/livez', '/readyz', '/pre-stop']) {
        const other = await tlsGet(to, path);
        assert.equal(other.status, 404, `${path} over TLS: ${other.body}`);
        assert.match(other.body, new RegExp(`${path} is served on the HTTP port \\(9080\\) only`));
      }
      assert.equal((await tlsGet(to, '/nothing')).status, 404);
      // Nothing was fenced by the refused /pre-stop.
      assert.ok(!member.superReadOnly);
    });
  });

  it('answers the kubelet over HTTP: /livez while mysqld answers, /readyz as the member does its job', async () => {
    const a = agent();
    const port = await a.listen();
    const get = (path: string) => httpGet(port, path);
    try {
      assert.deepEqual(await get('/livez'), { status: 200, body: 'mysqld answers\n' });
      assert.deepEqual(await get('/readyz'), { status: 200, body: 'writable\n' });
      member.readOnly = true;
      assert.deepEqual(await get('/readyz'), {
        status: 503,
        body: 'read-only and not replicating (waiting for the controller)\n',
      });
      member.answers = false;
      assert.equal((await get('/livez')).status, 503);
      assert.equal((await get('/nothing')).status, 404);
    } finally {
      await a.stop();
    }
  });

  describe("stopping (the preStop hook of mysqld's container)", () => {
    it('fences its member before the kubelet stops mysqld: read-only, every client session ended, the source side left on (no commit waited for an acknowledgement; turning it off holds the member up for a second); the next start finds that stop safe', async () => {
      await serving(async (a, port, to) => {
        await a.step();
        assert.deepEqual(await httpGet(port, '/pre-stop'), { status: 200, body: 'fenced\n' });
        assert.ok(member.superReadOnly);
        assert.ok(member.statements.includes('KILL CONNECTION 42'), member.statements.join('\n'));
        assert.ok(
          !member.statements.includes('SET GLOBAL rpl_semi_sync_source_enabled = OFF'),
          member.statements.join('\n'),
        );
        const record = JSON.parse(readFileSync(stopsFile(), 'utf8')) as { run: { stop: unknown } };
        assert.deepEqual(record.run.stop, {
          state: 'fenced',
          at: new Date(now).toISOString(),
          executed: member.executed,
          serverUuid: 'aaaaaaaa-0000-0000-0000-000000000001',
        });
        // Asked again (the kubelet's retry, or a later stop): fenced anew, as a member made writable since must be.
        const killsBefore = member.statements.length;
        assert.equal((await httpGet(port, '/pre-stop')).status, 200);
        assert.ok(member.statements.length > killsBefore);
        // mysqld shut down and started again, holding what it held.
        member.startedAtMs += 60_000;
        await a.step();
        assert.deepEqual(await fetchAgentUnsafeStops(to), []);
        assert.ok(!logged.some((l) => l.includes('could have acknowledged')), logged.join('\n'));
        assert.ok(
          logged.includes(
            `mysqld's last run was fenced by this agent before it stopped (at ${new Date(now).toISOString()}): it acknowledged nothing alone`,
          ),
          logged.join('\n'),
        );
        // Only mysqld's container restarted (a liveness restart): its next stop is fenced again.
        const before = member.statements.length;
        assert.equal((await httpGet(port, '/pre-stop')).status, 200);
        assert.ok(member.statements.length > before, 'fenced again for the new run');
      });
    });

    it('fences at once when signalled (the pod is going away), without waiting for the hook, which it still answers', async () => {
      await serving(async (a, port) => {
        await a.step();
        // A replica's stop: fenced as soon as the agent is signalled (no hook yet).
        member.readOnly = true;
        member.superReadOnly = false;
        const draining = a.drain();
        const record = () =>
          (JSON.parse(readFileSync(stopsFile(), 'utf8')) as { run: { stop?: { state: string } } }).run.stop?.state;
        for (let i = 0; i < 40 && record() !== 'fenced'; i++) await new Promise((r) => setTimeout(r, 50));
        assert.equal(record(), 'fenced');
        assert.ok(member.superReadOnly);
        // The hook comes later (its process started in the mysql container): still answered, fenced anew.
        assert.deepEqual(await httpGet(port, '/pre-stop'), { status: 200, body: 'fenced\n' });
        await draining;
      });
    });

    it('fences only at the request of the pod itself (its loopback): another pod reaching the port is refused, and the member stays writable', async () => {
      // This machine's own non-loopback address: a connection to it comes from it, as another pod's would.
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((i) => i !== undefined && !i.internal && i.family === 'IPv4')?.address;
      assert.ok(outside, 'this test needs a network interface other than loopback (an IPv4 address)');
      await serving(
        async (a, port) => {
          await a.step();
          const refused = await httpGet(port, '/pre-stop', outside);
          assert.equal(refused.status, 403);
          assert.match(
            refused.body,
            new RegExp(`only from inside the pod .*not from (::ffff:)?${outside.replaceAll('.', '\\.')}`),
          );
          assert.ok(!member.superReadOnly, 'not fenced');
          assert.ok(!member.statements.some((st) => st.startsWith('KILL')), member.statements.join('\n'));
          assert.ok(
            logged.some((l) => l.startsWith(`refused a request to fence this member from`)),
            logged.join('\n'),
          );
          assert.equal((await httpGet(port, '/pre-stop')).status, 200);
          assert.ok(member.superReadOnly);
        },
        tlsConfig({ AGENT_ADDRESS: '' }),
      ); // every address, as in a pod
    });

    it('takes a connection from loopback, IPv4 or IPv6 (mapped or not), as from inside the pod, and nothing else', () => {
      for (const inside of ['127.0.0.1', '127.0.0.11', '::1', '::ffff:127.0.0.1'])
        assert.equal(fromInsideThePod(inside), true, inside);
      for (const outside of [
        undefined,
        '',
        '10.244.0.7',
        '::ffff:10.244.0.7',
        'fd00::7',
        '::',
        '0.0.0.0',
        '127.0.0.1.nip.io',
      ])
        assert.equal(fromInsideThePod(outside), false, String(outside));
    });

    it('waits, once a primary is fenced, until its replicas have left it for good (the controller switches over from a primary whose pod is stopping), so that mysqld does not stop before the controller sees it', async function () {
      this.timeout(10_000);
      await serving(async (a, port) => {
        await a.step();
        member.receiving = 2;
        let answered = false;
        // The pod is going away: the kubelet signals the agent as it runs the hook.
        const draining = a.drain();
        const hook = httpGet(port, '/pre-stop').then((r) => ((answered = true), r));
        await new Promise((r) => setTimeout(r, 600));
        assert.ok(!answered, 'the hook waits while replicas receive from it');
        assert.ok(member.superReadOnly, 'fenced meanwhile');
        // Recorded as fenced already: a pod deleted with no grace period is killed 2 s into its hook.
        const during = JSON.parse(readFileSync(stopsFile(), 'utf8')) as { run: { stop: { state: string } } };
        assert.equal(during.run.stop.state, 'fenced');
        // Its receivers cut off for a moment (the fencing), then back within a second: not a switchover.
        member.receiving = 0;
        await new Promise((r) => setTimeout(r, 700));
        member.receiving = 2;
        await new Promise((r) => setTimeout(r, 600));
        assert.ok(!answered, 'a moment without replicas is not a switchover');
        member.receiving = 0;
        assert.deepEqual(await hook, { status: 200, body: 'fenced\n' });
        await draining;
        assert.ok(
          logged.some((l) =>
            l.includes('2 replica(s) still receive from this member; waiting for the controller to switch over'),
          ),
        );
      });
      // A primary whose container alone restarts (a liveness restart: the agent is not signalled) does
      // not wait for a switchover that no controller will make.
      member.startedAtMs += 60_000;
      member.readOnly = false;
      member.superReadOnly = false;
      member.receiving = 2;
      await serving(async (a, port) => {
        await a.step();
        assert.deepEqual(await httpGet(port, '/pre-stop'), { status: 200, body: 'fenced\n' });
      });
      // A replica's stop (read-only when asked) does not wait.
      member.startedAtMs += 60_000;
      member.readOnly = true;
      member.superReadOnly = true;
      member.receiving = 2;
      await serving(async (a, port) => {
        await a.step();
        assert.equal((await httpGet(port, '/pre-stop')).status, 200);
      });
    });

    it('records as unsafe, with what mysqld held at the next start, a clean shutdown it did not fence and a commit after its fencing; never a crash', async () => {
      await serving(async (a, port, to) => {
        await a.step();
        // A person's SHUTDOWN (or a hook that did not reach the agent): a clean stop, not fenced.
        member.startedAtMs += 60_000;
        member.executed = 'aaaaaaaa-0000-0000-0000-000000000001:1-11';
        await a.step();
        await a.step();
        const first = (await fetchAgentUnsafeStops(to)) ?? [];
        assert.equal(first.length, 1, 'once per stop, however many looks');
        assert.match(first[0]?.why ?? '', /shut down cleanly without its agent fencing it first/);
        assert.equal(first[0]?.executed, 'aaaaaaaa-0000-0000-0000-000000000001:1-11');
        assert.equal(logged.filter((l) => l.includes('could have acknowledged commits no replica had')).length, 1);
        // A crash: InnoDB recovered at the next start. Nothing more.
        member.startedAtMs += 60_000;
        member.crashed = true;
        await a.step();
        assert.equal((await fetchAgentUnsafeStops(to))?.length, 1);
        assert.ok(
          logged.includes("mysqld's last run crashed (this start recovered from it): it acknowledged nothing alone"),
        );
        // Fenced for a stop, then made writable and written to before the shutdown (the stop's record is stale).
        member.crashed = false;
        assert.equal((await httpGet(port, '/pre-stop')).status, 200);
        member.executed = 'aaaaaaaa-0000-0000-0000-000000000001:1-12';
        member.startedAtMs += 60_000;
        await a.step();
        const last = (await fetchAgentUnsafeStops(to)) ?? [];
        assert.equal(last.length, 2);
        assert.match(last[1]?.why ?? '', /committed after its agent fenced it for the stop/);
      });
    });

    it('judges nothing at the first start it knows of (new data, or a clone), and answers the hook at once when mysqld is not running', async () => {
      await serving(async (a, port, to) => {
        await a.step();
        assert.deepEqual(await fetchAgentUnsafeStops(to), []);
        member.answers = false;
        assert.deepEqual(await httpGet(port, '/pre-stop'), {
          status: 200,
          body: 'mysqld is not running: nothing to fence\n',
        });
      });
    });

    it('told to stop, serves until the hook has been answered (the kubelet signals the agent and runs the hook at once), or mysqld is gone', async () => {
      const a = agent();
      const port = await a.listen();
      let drained = false;
      const draining = a.drain().then(() => (drained = true));
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(!drained, 'still serving: the hook has not come');
      assert.equal((await httpGet(port, '/pre-stop')).status, 200);
      await draining;
      // Without a hook: it stops once mysqld is gone, and that stop is unsafe at the next start, crash or not.
      member.startedAtMs += 60_000;
      const b = agent();
      await b.step();
      await b.listen();
      member.answers = false;
      await b.drain();
      member.answers = true;
      member.crashed = true;
      member.startedAtMs += 60_000;
      await agent().step();
      assert.ok(
        logged.some((l) => l.includes('and no preStop hook asked its agent to fence it first')),
        logged.join('\n'),
      );
    });
  });

  it('ends its kept sessions to the peers when it stops (a session left open kept the process alive, not serving, after a clone)', async () => {
    let closed = 0;
    const p = new Peers(
      'shop-headless',
      [],
      () => Promise.resolve([]),
      { answers: () => Promise.resolve(true), forget: () => undefined, close: () => (closed++, Promise.resolve()) },
      () => undefined,
    );
    const a = new Agent(config(), member, { now: () => now, peers: p, log: () => undefined });
    await a.listen();
    await a.stop();
    assert.equal(closed, 1);
  });

  describe('health', () => {
    it('is ready on a writable member, without looking at replication', () => {
      assert.deepEqual(readiness(false, undefined), { ok: true, message: 'writable' });
    });
    it('is ready on a read-only member that applies and receives, or reconnects to, the primary', () => {
      assert.equal(readiness(true, { receiver: 'ON', applier: 'ON' }).ok, true);
      assert.equal(readiness(true, { receiver: 'CONNECTING', applier: 'ON' }).ok, true);
    });
    it('is not ready on a read-only member that does not replicate, or stopped applying or receiving', () => {
      assert.match(readiness(true, undefined).message, /not replicating/);
      // Kept offline since a fencing released commits: it refuses clients, so no Service may send it any.
      for (const writable of [true, false])
        assert.deepEqual(readiness(!writable, { receiver: 'ON', applier: 'ON' }, true), {
          ok: false,
          message: 'offline since it was fenced: it serves no client until the controller admits it',
        });
      assert.match(readiness(true, { receiver: 'ON', applier: 'OFF' }).message, /not applying \(applier: OFF\)/);
      assert.match(readiness(true, { receiver: 'OFF', applier: 'ON' }).message, /not receiving \(receiver: OFF\)/);
    });
    it('counts a refused login as alive (a changed password never gets a healthy server killed), silence as dead', () => {
      assert.equal(liveness(Object.assign(new Error('Access denied'), { errno: 1045 })).ok, true);
      assert.equal(liveness(Object.assign(new Error('connect ENOENT'), { code: 'ENOENT' })).ok, false);
      assert.equal(liveness(undefined).ok, true);
    });
  });

  describe('settings', () => {
    it('names every variable that is missing or wrong, never a password', () => {
      assert.throws(
        () => agentConfig({ SELF_FENCE_AFTER_SECONDS: 'soon', AGENT_PORT: '99999' }),
        (e: Error) =>
          /PRIMARY_HOST is not set/.test(e.message) &&
          /AGENT_PORT is "99999"/.test(e.message) &&
          /SELF_FENCE_AFTER_SECONDS is "soon", expected a whole number of seconds/.test(e.message),
      );
    });
    it('takes no self-fencing without the headless Service (a single member), and the pod paths by default', () => {
      const c = agentConfig({ ...ENV, HEADLESS_SERVICE: '' });
      assert.equal(c.headlessService, undefined);
      assert.equal(c.socket, '/var/run/mysqld/mysqld.sock');
      assert.equal(c.caFile, '/etc/mysql/tls/ca.crt');
      assert.equal(c.selfFenceAfterMs, 7000);
      assert.equal(c.credentialsDir, '/etc/recon8s/credentials');
      assert.equal(c.exporterAccount, false);
    });
  });
});
