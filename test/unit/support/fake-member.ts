// A fake member on loopback for mysql2 itself: it greets as MySQL does, offering TLS, and serves a
// certificate over a real TLS handshake; then, as told, it takes the login and answers statements, or
// falls silent as a member whose node powered off (what a real mysqld does is in
// test/integration/mysql-real.test.ts).
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { ServerCertificate } from '../../../lib/mysql/certificates.js';

/** The SSLRequest packet: a 4-byte header and 32 bytes of capabilities, packet size and character set. */
const SSL_REQUEST_BYTES = 36;

/**
 * What the member does once the client asked for TLS (its SSLRequest packet): a TLS handshake, after
 * which it keeps the handshake response and hangs up (`tls`), or lets the client in and answers its first
 * `answer` statements with OK, then never answers nor closes anything again (`silentAfter`); or it hangs
 * up, or answers in plaintext.
 */
export type Behaviour =
  { readonly tls: ServerCertificate; readonly silentAfter?: { readonly answer: number } } | 'hangUp' | 'plaintext';

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

/** An OK packet: no rows affected, no insert id, autocommit, no warnings. */
const ok = (sequence: number): Buffer => packet(sequence, Buffer.from([0, 0, 0, 2, 0, 0, 0]));

export interface FakeMember {
  readonly server: Server;
  readonly port: number;
  /** Everything it received from the client once TLS was up (decrypted). */
  readonly received: Buffer[];
}

export async function fakeMember(behaviour: Behaviour): Promise<FakeMember> {
  const received: Buffer[] = [];
  // A silent member never closes its side of a connection: the client's FIN is acknowledged by the
  // kernel (as a stopped mysqld's host does) or not at all (a powered-off one); nothing comes back.
  const server = createServer({ allowHalfOpen: true }, (socket: Socket) => {
    socket.on('error', () => undefined);
    socket.write(greeting());
    // The client's SSLRequest: its capabilities, nothing else (no user, no password); its TLS hello may
    // come in the same chunk, so TLS reads from a stream that starts with what followed the request.
    socket.once('data', (first: Buffer) => {
      if (behaviour === 'hangUp') return void socket.destroy();
      if (behaviour === 'plaintext') return void socket.write('HTTP/1.1 400 Bad Request\r\n\r\n');
      const silent = behaviour.silentAfter;
      let answers = silent?.answer ?? 0;
      const stream = new Duplex({
        allowHalfOpen: true,
        read: () => undefined,
        write: (chunk: Buffer, _encoding, done) => void socket.write(chunk, done),
        final: (done) => (silent ? done() : void socket.end(done)),
      });
      stream.push(first.subarray(SSL_REQUEST_BYTES));
      socket.on('data', (chunk: Buffer) => stream.push(chunk));
      if (!silent) socket.on('close', () => stream.destroy());
      const tls = new TLSSocket(stream, {
        isServer: true,
        key: behaviour.tls.keyPem,
        cert: behaviour.tls.certPem,
        allowHalfOpen: true,
      } as ConstructorParameters<typeof TLSSocket>[1] & { allowHalfOpen: boolean });
      tls.on('error', () => undefined);
      let loggedIn = false;
      tls.on('data', (chunk: Buffer) => {
        received.push(chunk);
        if (!silent) {
          // The handshake response came (the user and the password's proof): that is all this needs.
          tls.destroy();
          socket.destroy();
          return;
        }
        // The handshake response (sequence 2), then one statement per chunk (sequence 0): OK to each of
        // the first `answer` statements, then nothing.
        if (!loggedIn) {
          loggedIn = true;
          tls.write(ok(3));
        } else if (answers > 0) {
          answers--;
          tls.write(ok(1));
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, received };
}
