// Issues a MySQLCluster's CA and member certificate. node-forge builds and signs the X.509 (Node's
// crypto verifies certificates but cannot make them); Node's crypto makes the keys. Loaded only when a
// certificate is issued, so a controller that never does carries none of it.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';
import type { CertificateAndKey, ServerCertificate } from './certificates.js';
import { CA_VALIDITY_DAYS, SERVER_VALIDITY_DAYS } from './certificates.js';

const DAY_MS = 86_400_000;
/** Certificates are dated a little in the past: a member's clock may run behind the controller's. */
const BACKDATE_MS = 3_600_000;

/** A CA for one cluster. */
export function issueCa(commonName: string, now: Date): CertificateAndKey {
  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = new Date(now.getTime() + CA_VALIDITY_DAYS * DAY_MS);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

/** A member certificate for `dnsNames`, signed by `ca`. */
export function issueServerCertificate(
  ca: CertificateAndKey,
  commonName: string,
  dnsNames: readonly string[],
  now: Date,
): ServerCertificate {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = new Date(now.getTime() + SERVER_VALIDITY_DAYS * DAY_MS);
  cert.setSubject([{ name: 'commonName', value: commonName }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    // Members are servers to clients and clients of each other (replication, clone).
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem, caPem: ca.certPem };
}

function newKeyPair(): { publicKey: forge.pki.rsa.PublicKey; privateKey: forge.pki.rsa.PrivateKey; keyPem: string } {
  // Native key generation (node-forge's own RSA is pure JavaScript and ~10× slower). PKCS#1 PEM:
  // what node-forge reads, and what mysqld and every TLS library accept.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  return { privateKey: forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), keyPem };
}

/** A positive 128-bit serial (the leading byte's top bit clear: DER integers are signed). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}
