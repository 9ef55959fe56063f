// The certificates a MySQLCluster's members present, and the CA that signs them, so that every client
// (the controller, replicas, clones, backup jobs, applications) can verify a member before it sends a
// password. What to issue and when to renew is a pure decision (certificatePlan) of the certificates
// found and the clock; issuing them is certificate-issuer.ts.
import { X509Certificate, createPrivateKey } from 'node:crypto';

/** How long the cluster CA is valid. Renewing a CA means every client trusting it must be given the
 * new one, which recon8s does not do yet; ten years keeps that out of a cluster's ordinary life. */
export const CA_VALIDITY_DAYS = 3650;
/** How long a member certificate is valid; renewed with a third of that left, with no restart. */
export const SERVER_VALIDITY_DAYS = 365;

export interface CertificateAndKey {
  readonly certPem: string;
  readonly keyPem: string;
}

/** What a cluster's TLS Secret holds: the member certificate, its key, and the CA that signed it. */
export interface ServerCertificate extends CertificateAndKey {
  readonly caPem: string;
}

/**
 * The DNS names a cluster's members answer to, as clients name them: each member by its stable name
 * (`<pod>.<headless>`, which replicas use as SOURCE_HOST), the Services, each in every form (short, with
 * the namespace, .svc, fully qualified). Members are named one by one, not by a wildcard: OpenSSL,
 * which MySQL verifies with, accepts a wildcard only with two dots after it, and `*.<headless>` has one.
 * A new member (scaling up) is a name the certificate lacks, so certificatePlan renews it.
 */
export function memberDnsNames(o: {
  readonly namespace: string;
  readonly members: readonly string[];
  readonly services: readonly string[];
  /** @default 'cluster.local' */
  readonly clusterDomain?: string;
}): string[] {
  const domain = o.clusterDomain ?? 'cluster.local';
  const forms = (host: string) => [
    host,
    `${host}.${o.namespace}`,
    `${host}.${o.namespace}.svc`,
    `${host}.${o.namespace}.svc.${domain}`,
  ];
  return [...o.members.flatMap(forms), ...o.services.flatMap(forms)];
}

export type CertificatePlan =
  | { readonly action: 'keep' }
  | { readonly action: 'issueServer'; readonly reason: string }
  | { readonly action: 'issueAll'; readonly reason: string };

/**
 * What to do with a cluster's certificates, given what the Secrets hold now:
 * - no CA, or one that no longer verifies (expired, unreadable): a new CA and a new member certificate;
 * - no member certificate, one the CA did not sign, one whose key does not match, one lacking a name
 *   clients use, or one with less than a third of its life left: a new member certificate;
 * - otherwise nothing.
 */
export function certificatePlan(
  found: { readonly ca?: CertificateAndKey; readonly server?: ServerCertificate },
  dnsNames: readonly string[],
  now: Date,
): CertificatePlan {
  const ca = parse(found.ca?.certPem);
  if (!found.ca || !ca) return { action: 'issueAll', reason: 'no CA yet' };
  if (!keyMatches(ca, found.ca.keyPem))
    return { action: 'issueAll', reason: 'the CA key does not match its certificate' };
  if (Date.parse(ca.validTo) <= now.getTime())
    return { action: 'issueAll', reason: `the CA expired at ${iso(ca.validTo)}` };
  const server = parse(found.server?.certPem);
  if (!found.server || !server) return { action: 'issueServer', reason: 'no member certificate yet' };
  if (found.server.caPem.trim() !== found.ca.certPem.trim() || !server.verify(ca.publicKey))
    return { action: 'issueServer', reason: 'the member certificate is not signed by the cluster CA' };
  if (!keyMatches(server, found.server.keyPem))
    return { action: 'issueServer', reason: 'the member key does not match its certificate' };
  const names = new Set(subjectAltNames(server));
  const missing = dnsNames.filter((n) => !names.has(n));
  if (missing.length > 0)
    return { action: 'issueServer', reason: `the member certificate lacks ${missing.join(', ')}` };
  const from = Date.parse(server.validFrom);
  const to = Date.parse(server.validTo);
  if (now.getTime() >= to - (to - from) / 3)
    return { action: 'issueServer', reason: `the member certificate expires at ${iso(server.validTo)}` };
  return { action: 'keep' };
}

/** The time a certificate stops being valid (ISO 8601), or undefined when it does not parse. */
export function certificateNotAfter(certPem: string | undefined): string | undefined {
  const c = parse(certPem);
  return c ? new Date(c.validTo).toISOString() : undefined;
}

function parse(pem: string | undefined): X509Certificate | undefined {
  if (!pem) return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

/** Whether `keyPem` is the private key of `cert` (false for a key that cannot be read). */
export function keyMatches(cert: X509Certificate, keyPem: string): boolean {
  try {
    return cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

/** The DNS names a certificate is for. */
export function subjectAltNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
}

const iso = (openssl: string): string => new Date(openssl).toISOString();
