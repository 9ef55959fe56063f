// The controller's session to a member refuses a certificate its cluster's CA did not sign before it
// sends a credential, and says so (MemberCertificateError); a TLS handshake that fails for any other
// reason (the member restarting mid-handshake, a peer that does not speak TLS) is not reported as a
// certificate. Through mysql2 itself, against a fake member on loopback (support/fake-member.ts).
import assert from 'node:assert/strict';
import type { Server } from 'node:net';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey, ServerCertificate } from '../../lib/mysql/certificates.js';
import { MemberCertificateError, certificateRejection, connectMember } from '../../lib/mysql/member-sql.js';
import type { Behaviour } from './support/fake-member.js';
import { fakeMember } from './support/fake-member.js';

const USER = 'recon8s-admin';
const PASSWORD = 'the-admin-password-0f3c';

describe("the controller's session to a member: its certificate", function () {
  this.timeout(30_000);
  const T0 = new Date();
  let ca: CertificateAndKey;
  let member: ServerCertificate;
  let impostor: ServerCertificate;
  let neighbour: ServerCertificate;
  const servers: Server[] = [];
  before(() => {
    ca = issueCa('recon8s shop/db CA', T0);
    member = issueServerCertificate(ca, 'db.shop', ['db-0.db-headless'], T0);
    impostor = issueServerCertificate(issueCa('someone else', T0), 'db.shop', ['db-0.db-headless'], T0);
    // Signed by the same CA (a shared ClusterIssuer), for another cluster's member.
    neighbour = issueServerCertificate(ca, 'other.shop', ['other-0.other-headless', 'other-primary'], T0);
  });
  after(() => {
    for (const s of servers) s.close();
  });

  const attempt = async (behaviour: Behaviour): Promise<{ error: unknown; received: Buffer[] }> => {
    const fake = await fakeMember(behaviour);
    servers.push(fake.server);
    const error = await connectMember({
      host: '127.0.0.1',
      servername: 'db-0.db-headless',
      port: fake.port,
      ca: ca.certPem,
      credentials: { adminUser: USER, adminPassword: PASSWORD, replicationUser: 'r', replicationPassword: 'r' },
    }).then(
      () => assert.fail('the fake member never lets anyone in'),
      (e: unknown) => e,
    );
    return { error, received: fake.received };
  };

  it("refuses one its cluster CA did not sign during the handshake, with OpenSSL's reason, before the user or password is sent", async () => {
    const { error, received } = await attempt({ tls: impostor });
    assert.ok(error instanceof MemberCertificateError, `not refused for its certificate: ${String(error)}`);
    // OpenSSL's words, without the advice Node adds about system CAs (which does not apply).
    assert.match(error.verifyError, /^unable to (verify the first|get local issuer) certificate$/);
    assert.match(error.message, /no credential was sent/);
    assert.ok(!error.message.includes(PASSWORD));
    assert.deepEqual(received, [], 'the member received something over TLS');
  });

  it('refuses one the cluster CA signed for another name (a shared issuer’s other workload) before the user is sent', async () => {
    const { error, received } = await attempt({ tls: neighbour });
    assert.ok(error instanceof MemberCertificateError, `not refused for its certificate: ${String(error)}`);
    assert.match(error.verifyError, /db-0\.db-headless/);
    assert.ok(!error.message.includes(PASSWORD));
    assert.deepEqual(received, [], 'the member received something over TLS');
  });

  it('sends the user only over TLS to one the cluster CA signed for its name (the fake is a fair member)', async () => {
    const { error, received } = await attempt({ tls: member });
    assert.ok(!(error instanceof MemberCertificateError), String(error));
    assert.ok(Buffer.concat(received).includes(USER), 'the handshake response never came');
  });

  it('does not call a handshake the member cut short (a restart) a certificate rejection', async () => {
    const { error } = await attempt('hangUp');
    assert.ok(!(error instanceof MemberCertificateError), String(error));
    assert.equal((error as { code?: string }).code, 'HANDSHAKE_SSL_ERROR');
    assert.equal(certificateRejection(error), undefined);
  });

  it('does not call a peer that does not speak TLS a certificate rejection', async () => {
    const { error } = await attempt('plaintext');
    assert.ok(!(error instanceof MemberCertificateError), String(error));
    assert.equal((error as { code?: string }).code, 'HANDSHAKE_SSL_ERROR');
  });

  it('finds no certificate in other errors', () => {
    assert.equal(
      certificateRejection(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
      undefined,
    );
    assert.equal(certificateRejection('HANDSHAKE_SSL_ERROR'), undefined);
    assert.equal(certificateRejection(undefined), undefined);
  });
});
