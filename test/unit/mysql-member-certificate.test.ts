// The controller's session to a member refuses a certificate its cluster's CA did not sign before it
// sends a credential, and says so (MemberCertificateError); a TLS handshake that fails for any other
// reason (the member restarting mid-handshake, a peer that does not speak TLS) is not reported as a
// certificate. Through mysql2 itself, against a fake member on loopback: it greets as MySQL does,
// offering TLS, and serves a certificate over a real TLS handshake (what a real mysqld does is in
// test/integration/mysql-real.test.ts).
import assert from 'node:assert/strict';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { issueCa, issueServerCertificate } from '../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey, ServerCertificate } from '../../lib/mysql/certificates.js';
import { MemberCertificateError, certificateRejection, connectMember } from '../../lib/mysql/member-sql.js';

const USER = 'recon8s-admin';
const PASSWORD = 'the-admin-password-0f3c';

/** The SSLRequest packet: a 4-byte header and 32 bytes of capabilities, packet size and character set. */
const SSL_REQUEST_BYTES = 36;

/** What the member does once the client asked for TLS (its SSLRequest packet). */
type Behaviour = { readonly tls: ServerCertificate } | 'hangUp' | 'plaintext';

/** A MySQL protocol packet: 3-byte length, sequence id, payload. */
function packet(sequence: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUIntLE(payload.length, 0, 3);
  header[3] = sequence;
  return Buffer.concat([header, payload]);
}

/** The server's greeting (protocol 10), offering TLS (CLIENT_SSL) as a member with require_secure_transport would. */
function greeting(): Buffer {
  // LONG_PASSWORD, CONNECT_WITH_DB, PROTOCOL_41, SSL, TRANSACTIONS, SECURE_CONNECTION, PLUGIN_AUTH.
  const capabilities = 0x1 | 0x8 | 0x200 | 0x800 | 0x2000 | 0x8000 | 0x80000;
  const fixed = Buffer.alloc(4 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10);
  let o = fixed.writeUInt32LE(7, 0); // connection id
  o += Buffer.from('12345678').copy(fixed, o); // auth data, part 1
  o = fixed.writeUInt8(0, o);
  o = fixed.writeUInt16LE(capabilities & 0xffff, o);
  o = fixed.writeUInt8(255, o); // utf8mb4_0900_ai_ci
  o = fixed.writeUInt16LE(0x0002, o); // SERVER_STATUS_AUTOCOMMIT
  o = fixed.writeUInt16LE(capabilities >>> 16, o);
  fixed.writeUInt8(21, o); // auth data length; then 10 reserved zero bytes
  return packet(
    0,
    Buffer.concat([
      Buffer.from([10]),
      Buffer.from('9.7.0-fake\0'),
      fixed,
      Buffer.from('abcdefghijkl\0'),
      Buffer.from('caching_sha2_password\0'),
    ]),
  );
}

/** A fake member, and everything it received from the client once TLS was up (decrypted). */
async function fakeMember(behaviour: Behaviour): Promise<{ server: Server; port: number; received: Buffer[] }> {
  const received: Buffer[] = [];
  const server = createServer((socket: Socket) => {
    socket.on('error', () => undefined);
    socket.write(greeting());
    // The client's SSLRequest: its capabilities, nothing else (no user, no password); its TLS hello may
    // come in the same chunk, so TLS reads from a stream that starts with what followed the request.
    socket.once('data', (first: Buffer) => {
      if (behaviour === 'hangUp') return void socket.destroy();
      if (behaviour === 'plaintext') return void socket.write('HTTP/1.1 400 Bad Request\r\n\r\n');
      const stream = new Duplex({
        read: () => undefined,
        write: (chunk: Buffer, _encoding, done) => void socket.write(chunk, done),
        final: (done) => void socket.end(done),
      });
      stream.push(first.subarray(SSL_REQUEST_BYTES));
      socket.on('data', (chunk: Buffer) => stream.push(chunk));
      socket.on('close', () => stream.destroy());
      const tls = new TLSSocket(stream, { isServer: true, key: behaviour.tls.keyPem, cert: behaviour.tls.certPem });
      tls.on('error', () => undefined);
      tls.on('data', (chunk: Buffer) => {
        received.push(chunk);
        // The handshake response came (the user and the password's proof): that is all this test needs.
        tls.destroy();
        socket.destroy();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, received };
}

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
