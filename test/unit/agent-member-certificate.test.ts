// The agent's own sessions to members (its peers, which self-fencing asks; the primary, which a
// re-provisioning clones; its own mysqld over TCP) send the replication or root password only to a
// member whose certificate the cluster's CA signed for the cluster's name (the primary Service's, which
// the one certificate of all members carries): a certificate the same CA (a shared ClusterIssuer) signed
// for another workload is refused before the user is sent. Through mysql2, against a fake member on
// loopback serving a real TLS handshake (test/unit/support/fake-member.ts).
import assert from 'node:assert/strict';
import type { Server } from 'node:net';
import { connectVerified } from '../../lib/agent/local-sql.js';
import { mysqlPeerProbe } from '../../lib/agent/peers.js';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey, ServerCertificate } from '../../lib/mysql/certificates.js';
import { MemberCertificateError } from '../../lib/mysql/member-sql.js';
import type { Behaviour } from './support/fake-member.js';
import { fakeMember } from './support/fake-member.js';

const USER = 'repl';
const PASSWORD = 'the-replication-password-7d2e';
const CLUSTER_NAME = 'db-primary';

describe("the agent's sessions to members: the certificate's name", function () {
  this.timeout(30_000);
  const T0 = new Date();
  let ca: CertificateAndKey;
  let member: ServerCertificate;
  let neighbour: ServerCertificate;
  const servers: Server[] = [];
  before(() => {
    ca = issueCa('recon8s shop/db CA', T0);
    member = issueServerCertificate(ca, 'db.shop', ['db-0.db-headless', CLUSTER_NAME, 'db-replicas'], T0);
    // Signed by the same CA (a shared ClusterIssuer), for another cluster's members.
    neighbour = issueServerCertificate(ca, 'other.shop', ['other-0.other-headless', 'other-primary'], T0);
  });
  after(() => {
    for (const s of servers) s.close();
  });

  const member0 = async (behaviour: Behaviour) => {
    const fake = await fakeMember(behaviour);
    servers.push(fake.server);
    return fake;
  };

  const attempt = async (behaviour: Behaviour): Promise<{ error: unknown; received: Buffer[] }> => {
    const fake = await member0(behaviour);
    const error = await connectVerified({
      host: '127.0.0.1',
      servername: CLUSTER_NAME,
      port: fake.port,
      user: USER,
      password: PASSWORD,
      ca: ca.certPem,
      timeoutMs: 5000,
    }).then(
      () => assert.fail('the fake member never lets anyone in'),
      (e: unknown) => e,
    );
    return { error, received: fake.received };
  };

  it('refuses a member whose certificate the CA signed for another name, naming the name it expected, before the user is sent', async () => {
    const { error, received } = await attempt({ tls: neighbour });
    assert.ok(error instanceof MemberCertificateError, `not refused for its certificate: ${String(error)}`);
    assert.match(error.message, /db-primary/);
    assert.ok(!error.message.includes(PASSWORD));
    assert.deepEqual(received, [], 'the impostor received something over TLS');
  });

  it('sends the user over TLS to a member whose certificate carries the name (the fake is a fair member)', async () => {
    const { error, received } = await attempt({ tls: member });
    assert.ok(!(error instanceof MemberCertificateError), String(error));
    assert.ok(Buffer.concat(received).includes(USER), 'the handshake response never came');
  });

  it("self-fencing's peer probe does not count an impostor as a peer that answers, and sends it nothing", async () => {
    const fake = await member0({ tls: neighbour });
    const probe = mysqlPeerProbe({
      port: fake.port,
      user: USER,
      password: () => PASSWORD,
      ca: () => ca.certPem,
      servername: CLUSTER_NAME,
      deadlineMs: 3000,
    });
    try {
      assert.equal(await probe.answers('127.0.0.1'), false);
      assert.deepEqual(fake.received, []);
    } finally {
      await probe.close();
    }
  });

  it('self-fencing counts a member with the cluster’s certificate as a peer that answers', async () => {
    const fake = await member0({ tls: member });
    const probe = mysqlPeerProbe({
      port: fake.port,
      user: USER,
      password: () => PASSWORD,
      ca: () => ca.certPem,
      servername: CLUSTER_NAME,
      deadlineMs: 3000,
    });
    try {
      // The fake closes once it has the login: the probe still saw a server of the cluster answer TLS,
      // but no MySQL answer, so it says false; what matters is that the login went to it.
      await probe.answers('127.0.0.1');
      assert.ok(Buffer.concat(fake.received).includes(USER), 'the probe never logged in to the fair member');
    } finally {
      await probe.close();
    }
  });
});
