// The controller's own client (lib/mysql/member-sql.ts, mysql2) run inside the MySQL sandbox's network
// namespace (the members are reachable only there): reads what to do as JSON on stdin, prints what
// happened as JSON. Passwords come on stdin, never on the command line.
import { connectMember } from '../../../lib/mysql/member-sql.js';
import type { MemberCredentials } from '../../../lib/mysql/member-sql.js';
import { sandboxMemberName } from './sandbox-member-name.js';

interface Request {
  readonly host: string;
  readonly ca: string;
  readonly credentials: MemberCredentials;
  readonly reloadTls?: boolean;
  /** Fence the member as the controller does (MemberSession.fence), and say only how that went. */
  readonly fence?: boolean;
}

const chunks: Buffer[] = [];
for await (const c of process.stdin) chunks.push(c as Buffer);
const req = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Request;
try {
  const session = await connectMember({
    host: req.host,
    servername: sandboxMemberName(req.host),
    port: 3306,
    credentials: req.credentials,
    ca: req.ca,
  });
  try {
    if (req.fence) {
      await session.fence();
      console.log(JSON.stringify({ ok: true }));
      process.exit(0);
    }
    const before = await session.servedCertificateNotAfter();
    if (req.reloadTls) await session.reloadTls();
    const after = await session.servedCertificateNotAfter();
    const sql = await session.observe();
    console.log(JSON.stringify({ ok: true, serverUuid: sql.serverUuid, servedBefore: before, servedAfter: after }));
  } finally {
    await session.close();
  }
} catch (e) {
  const err = e as { name?: string; message?: string; verifyError?: string };
  console.log(JSON.stringify({ ok: false, name: err.name, message: err.message, verifyError: err.verifyError }));
}
