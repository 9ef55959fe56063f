// A session to a member that let it in and then fell silent (its node powered off, its mysqld stopped)
// ends when its owner says so, or when a statement passes its deadline: the close does not wait on the
// member, and the socket is gone, not half-closed (mysql2's own end() and destroy() leave it open until
// the member closes its side, which a powered-off one never does: the controller then held it ~15 min,
// and its process could not exit). Through mysql2 itself, against a fake member on loopback
// (support/fake-member.ts) that answers the login and its first statements and then nothing.
import assert from 'node:assert/strict';
import type { Server } from 'node:net';
import { AccountSession } from '../../lib/mysql/account-sql.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey, ServerCertificate } from '../../lib/mysql/certificates.js';
import { connectMember } from '../../lib/mysql/member-sql.js';
import { QUIT_WAIT_MS } from '../../lib/mysql/session-end.js';
import { fakeMember } from './support/fake-member.js';

const SERVERNAME = 'db-0.db-headless';

/** The TCP sockets this process holds open (the fake member's side of each connection among them). */
const openSockets = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

/** Waits (at most `ms`) until the process holds `n` TCP sockets; what it holds then. */
async function socketsSettle(n: number, ms = 2_000): Promise<number> {
  const until = Date.now() + ms;
  while (openSockets() !== n && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return openSockets();
}

describe('a session to a member that fell silent', function () {
  this.timeout(30_000);
  const T0 = new Date();
  let ca: CertificateAndKey;
  let member: ServerCertificate;
  const servers: Server[] = [];
  before(() => {
    ca = issueCa('recon8s shop/db CA', T0);
    member = issueServerCertificate(ca, 'db.shop', [SERVERNAME], T0);
  });
  after(() => {
    for (const s of servers) s.close();
  });

  /** A fake member that answers `answer` statements after the login, then nothing; the sockets held before. */
  const silentMember = async (answer: number): Promise<{ port: number; before: number }> => {
    const before = openSockets();
    const fake = await fakeMember({ tls: member, silentAfter: { answer } });
    servers.push(fake.server);
    return { port: fake.port, before };
  };

  const connect = (port: number) =>
    connectMember({
      host: '127.0.0.1',
      servername: SERVERNAME,
      port,
      ca: ca.certPem,
      credentials: {
        adminUser: 'recon8s-admin',
        adminPassword: 'pw-0f3c',
        replicationUser: 'r',
        replicationPassword: 'r',
      },
    });

  it("the controller's close() gives up on the member's answer and leaves no socket open", async () => {
    // sql_mode and wait_timeout are answered: the session is up.
    const { port, before } = await silentMember(2);
    const session = await connect(port);
    assert.equal(openSockets(), before + 2, 'the client and the member side of one connection');
    const started = Date.now();
    await session.close();
    const took = Date.now() - started;
    assert.ok(took < QUIT_WAIT_MS + 1_000, `close() waited ${took} ms on a member that never answers`);
    // The member's side stays (it never closes it); the controller's is gone.
    assert.equal(await socketsSettle(before + 1), before + 1, "the controller's socket is still open");
  });

  it('a statement past its deadline drops the session and its socket', async () => {
    const { port, before } = await silentMember(2);
    const session = await connect(port);
    await assert.rejects(session.observe(300), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' });
    assert.equal(await socketsSettle(before + 1), before + 1, "the controller's socket is still open");
  });

  it('a login whose first statement gets no answer leaves no socket open', async () => {
    const { port, before } = await silentMember(1); // sql_mode answered, wait_timeout not
    // The deadline of a statement is QUERY_TIMEOUT_MS (10 s).
    await assert.rejects(connect(port), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' });
    assert.equal(await socketsSettle(before + 1), before + 1, "the controller's socket is still open");
  });

  it("the Apps' accounts session closes without the member's answer and leaves no socket open", async () => {
    const { port, before } = await silentMember(1); // sql_mode
    const session = await AccountSession.open({
      host: '127.0.0.1',
      servername: SERVERNAME,
      port,
      user: 'root',
      password: 'pw-root',
      ca: ca.certPem,
    });
    const started = Date.now();
    await session.close();
    assert.ok(Date.now() - started < QUIT_WAIT_MS + 1_000, 'close() waited on a member that never answers');
    assert.equal(await socketsSettle(before + 1), before + 1, "the controller's socket is still open");
  });
});
