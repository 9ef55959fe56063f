// The cert-manager path of a MySQLCluster's certificates (spec.tls.issuerRef): the Certificate the
// controller asks cert-manager for, and what it makes of the Secret cert-manager writes. Both pure: the
// controller's I/O around them is lib/controller/mysql-cluster/tls.ts.
import { X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { SERVER_VALIDITY_DAYS, certificateNotAfter, keyMatches, subjectAltNames } from './certificates.js';

/** cert-manager's Certificate, as the controller writes and reads it. */
export const CERTIFICATE_API_VERSION = 'cert-manager.io/v1';
export const CERTIFICATE_PLURAL = 'certificates';

export interface IssuerRef {
  readonly name: string;
  /** @default 'Issuer' */
  readonly kind?: string;
  /** @default 'cert-manager.io' */
  readonly group?: string;
}

/** The fields of a Certificate's spec the controller sets (and so compares with the live one). */
export interface CertificateSpec {
  readonly secretName: string;
  readonly commonName?: string;
  readonly dnsNames: readonly string[];
  readonly duration: string;
  readonly usages: readonly string[];
  readonly privateKey: {
    readonly algorithm: string;
    readonly size: number;
    readonly encoding: string;
    readonly rotationPolicy: string;
  };
  readonly issuerRef: { readonly name: string; readonly kind: string; readonly group: string };
}

export interface CertificateObject {
  readonly apiVersion: typeof CERTIFICATE_API_VERSION;
  readonly kind: 'Certificate';
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly ownerReferences?: readonly unknown[];
  };
  readonly spec: CertificateSpec;
}

/** A Certificate as read from the API server (what the decision needs of it). */
export interface LiveCertificate {
  readonly metadata?: {
    readonly ownerReferences?: readonly {
      readonly uid?: string;
      readonly controller?: boolean;
      readonly kind?: string;
      readonly name?: string;
    }[];
  };
  readonly spec?: Record<string, unknown>;
  readonly status?: {
    readonly conditions?: readonly {
      readonly type?: string;
      readonly status?: string;
      readonly reason?: string;
      readonly message?: string;
    }[];
    readonly notAfter?: string;
  };
}

/** OpenSSL accepts a subject common name of at most 64 characters; the DNS names are what clients check. */
const MAX_COMMON_NAME = 64;

/**
 * The Certificate that asks the issuer for the members' certificate: the same DNS names (memberDnsNames),
 * key usages (server and client auth: members are clients of each other) and validity (a year, renewed
 * by cert-manager with a third left, its default) as the certificate the controller issues itself, a
 * PKCS#1 RSA 2048 key (what mysqld and every client read), a new key at every renewal, written to the
 * cluster's TLS Secret.
 */
export function certificateFor(o: {
  readonly cluster: string;
  readonly namespace: string;
  readonly secretName: string;
  readonly issuerRef: IssuerRef;
  readonly dnsNames: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly ownerReference?: unknown;
}): CertificateObject {
  const commonName = `${o.cluster}.${o.namespace}`;
  return {
    apiVersion: CERTIFICATE_API_VERSION,
    kind: 'Certificate',
    metadata: {
      name: o.secretName,
      namespace: o.namespace,
      labels: o.labels,
      ...(o.ownerReference ? { ownerReferences: [o.ownerReference] } : {}),
    },
    spec: {
      secretName: o.secretName,
      ...(commonName.length <= MAX_COMMON_NAME ? { commonName } : {}),
      dnsNames: o.dnsNames,
      duration: `${SERVER_VALIDITY_DAYS * 24}h`,
      usages: ['digital signature', 'key encipherment', 'server auth', 'client auth'],
      privateKey: { algorithm: 'RSA', size: 2048, encoding: 'PKCS1', rotationPolicy: 'Always' },
      issuerRef: {
        name: o.issuerRef.name,
        kind: o.issuerRef.kind ?? 'Issuer',
        group: o.issuerRef.group ?? 'cert-manager.io',
      },
    },
  };
}

/**
 * Whether the live Certificate's spec holds every field the controller sets, with its value (whatever
 * the order of an object's keys: the API server sorts them).
 */
export function certificateSpecMatches(desired: CertificateSpec, live: Record<string, unknown> | undefined): boolean {
  if (!live) return false;
  return Object.entries(desired).every(([k, v]) => isDeepStrictEqual(live[k], v));
}

/** The Secret's keys, decoded (absent keys are empty). */
export interface IssuedSecret {
  readonly certPem: string;
  readonly keyPem: string;
  readonly caPem: string;
}

export type IssuedTls =
  | { readonly state: 'ready'; readonly caPem: string; readonly notAfter: string }
  /** Not issued yet (or not yet for every member): wait, with cert-manager's own word on why. */
  | { readonly state: 'pending'; readonly message: string }
  /** Issued, but the members could not use it (no ca.crt, a CA that did not sign it, a key that does not match). */
  | { readonly state: 'invalid'; readonly message: string };

/**
 * What the controller makes of what cert-manager wrote:
 * - no Secret, or no tls.crt/tls.key yet: pending, with the Certificate's Ready condition (cert-manager's
 *   own reason and message) or the fact that cert-manager has not reported on it;
 * - a certificate lacking a member's or a Service's name (a member just added: the Certificate names it,
 *   cert-manager has not reissued yet): pending;
 * - no ca.crt, a ca.crt that did not sign tls.crt (through the chain tls.crt carries), or a key that does
 *   not match: invalid (members and the controller would refuse each other);
 * - otherwise ready: the members present it and every client verifies them with its ca.crt. A renewal is
 *   a new notAfter, which the members are made to reload (tls-reload.ts) as with the controller's own.
 */
export function issuedTls(o: {
  readonly certificateName: string;
  readonly secretName: string;
  readonly certificate?: LiveCertificate;
  readonly secret?: IssuedSecret;
  readonly dnsNames: readonly string[];
}): IssuedTls {
  const who = `Certificate ${o.certificateName}`;
  if (!o.secret || !o.secret.certPem || !o.secret.keyPem)
    return {
      state: 'pending',
      message: `${who} has not been issued into Secret ${o.secretName} yet: ${readiness(o.certificate)}`,
    };
  const chain = parseChain(o.secret.certPem);
  const leaf = chain[0];
  if (!leaf) return { state: 'invalid', message: `Secret ${o.secretName} holds a tls.crt that does not parse` };
  if (!keyMatches(leaf, o.secret.keyPem))
    return { state: 'invalid', message: `Secret ${o.secretName}: tls.key does not match tls.crt` };
  const names = new Set(subjectAltNames(leaf));
  const missing = o.dnsNames.filter((n) => !names.has(n));
  if (missing.length > 0)
    return {
      state: 'pending',
      message: `${who} has not been reissued with ${missing.join(', ')} yet: ${readiness(o.certificate)}`,
    };
  const ca = parseChain(o.secret.caPem);
  if (ca.length === 0)
    return {
      state: 'invalid',
      message: `Secret ${o.secretName} has no ca.crt: the issuer must write the CA that signs the members' certificate (a CA or SelfSigned issuer does; ACME does not), since members and the controller verify each other with it`,
    };
  if (!signedBy(chain, ca))
    return {
      state: 'invalid',
      message: `Secret ${o.secretName}: its ca.crt (${ca.map((c) => c.subject.replaceAll('\n', ', ')).join('; ')}) did not sign tls.crt (issued by ${leaf.issuer.replaceAll('\n', ', ')}): members would refuse each other`,
    };
  return { state: 'ready', caPem: o.secret.caPem, notAfter: certificateNotAfter(o.secret.certPem) ?? '' };
}

/** cert-manager's own word on a Certificate: its Ready condition. */
function readiness(certificate: LiveCertificate | undefined): string {
  if (!certificate) return 'it does not exist yet';
  const ready = certificate.status?.conditions?.find((c) => c.type === 'Ready');
  if (!ready) return 'cert-manager has not reported on it (is cert-manager running?)';
  return `cert-manager says Ready=${ready.status ?? ''}${ready.reason ? ` (${ready.reason})` : ''}${ready.message ? `: ${ready.message}` : ''}`;
}

/** The certificates of a PEM bundle, in order (those that do not parse are left out). */
function parseChain(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const out: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      out.push(new X509Certificate(b));
    } catch {
      // not a certificate: not part of the chain
    }
  }
  return out;
}

/** The leaf, through the intermediates the chain carries, leads to a certificate in ca. */
function signedBy(chain: readonly X509Certificate[], ca: readonly X509Certificate[]): boolean {
  for (let i = 0; i < chain.length; i++) {
    const cert = chain[i] as X509Certificate;
    if (ca.some((root) => root.raw.equals(cert.raw) || (cert.checkIssued(root) && cert.verify(root.publicKey))))
      return true;
    const next = chain[i + 1];
    if (!next || !cert.checkIssued(next) || !cert.verify(next.publicKey)) return false;
  }
  return false;
}
