import type { V1Secret } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/index.js';
import { HttpMethod, PatchStrategy, apiError, getObject, isAlreadyExists, isConflict } from '../../kube/index.js';
import type { CertificateAndKey, ServerCertificate } from '../../mysql/certificates.js';
import { certificateNotAfter, certificatePlan, memberDnsNames } from '../../mysql/certificates.js';
import type { IssuerRef, LiveCertificate } from '../../mysql/cert-manager.js';
import {
  CERTIFICATE_API_VERSION,
  CERTIFICATE_PLURAL,
  certificateFor,
  certificateSpecMatches,
  issuedTls,
} from '../../mysql/cert-manager.js';
import { GENERATED_BY_LABEL } from '../../reconcile/credential-keys.js';
import { mysqlClusterNames, resolveMySQLClusterSpec } from '../../../constructs/index.js';
import type { CertificateLookup, CustomResource, SecretLookup } from '../kind-controller.js';
import { controllerReference } from '../status.js';
import { readSecret } from './credentials-secret.js';

/** The keys of a TLS Secret, as Kubernetes (kubernetes.io/tls) and cert-manager name them. */
export const TLS_KEYS = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt' } as const;

export type TlsState =
  | {
      readonly state: 'ready' | 'issued' | 'renewed';
      readonly secretName: string;
      /** The CA certificate (public) that verifies the members. */
      readonly caPem: string;
      /** When the member certificate in the Secret expires (ISO 8601): a member serving another one reloads. */
      readonly notAfter: string;
      /** Why a certificate was issued (for the Event). */
      readonly reason?: string;
      /** The Certificate was created or changed (for the Event). */
      readonly requested?: string;
    }
  | {
      /**
       * missing, foreign: the Secret named or generated; forbidden: Secrets may not be read. With
       * spec.tls.issuerRef: pending (cert-manager has not issued it yet), invalid (issued, but members
       * could not use it), noCertManager (the cert-manager CRDs are not installed), certificateForeign (a
       * Certificate of that name is someone else's), certificateForbidden (RBAC).
       */
      readonly state:
        | 'missing'
        | 'foreign'
        | 'forbidden'
        | 'pending'
        | 'invalid'
        | 'noCertManager'
        | 'certificateForeign'
        | 'certificateForbidden';
      readonly secretName: string;
      readonly message: string;
      /** The Certificate was created or changed (for the Event). */
      readonly requested?: string;
    };

/**
 * Makes sure a MySQLCluster's members have a certificate its clients can verify.
 *
 * - spec.tls.issuerRef: a cert-manager Certificate asks that issuer for it (ensureIssuedByCertManager).
 * - A Secret named in spec.tlsSecretName is the user's (e.g. cert-manager's): only read, never changed.
 *   When it is missing or lacks a key, that is reported and the pods wait for it.
 * - Otherwise `<name>-ca` (the CA and its key, never mounted) and `<name>-tls` (the member certificate,
 *   its key, and ca.crt) are generated, owned by the cluster, and the member certificate is renewed
 *   with a third of its life left or when it lacks a member's name (scaling up). Each write is a
 *   compare-and-swap on what was read; a Secret of that name that recon8s did not generate for this
 *   cluster is never touched.
 *
 * Keys never leave this function: not in logs, events, conditions or return values.
 */
export async function ensureTls(
  client: KubeClient,
  cr: CustomResource,
  now: Date,
  read: SecretLookup = (namespace, name) => readSecret(client, namespace, name),
  readCertificate: CertificateLookup = (namespace, name) => getObject(client, certificatePath(namespace, name)),
): Promise<TlsState> {
  try {
    try {
      return await ensure(client, cr, now, read, readCertificate);
    } catch (e) {
      // What the cache showed was already out of date (a Secret just written): decide again from the
      // API server's own copy, once.
      if (!(e instanceof TlsWriteRaceError)) throw e;
      return await ensure(client, cr, now, (namespace, name) => readSecret(client, namespace, name), readCertificate);
    }
  } catch (e) {
    // Secrets access is granted per namespace: the credentials check names the grant to make.
    if (apiError(e).code !== 403) throw e;
    const spec = (cr.spec ?? {}) as { tlsSecretName?: string };
    const secretName = mysqlClusterNames(cr.metadata.name, undefined, spec.tlsSecretName).tlsSecret;
    return {
      state: 'forbidden',
      secretName,
      message: `recon8s may not read or create Secrets in namespace ${cr.metadata.namespace ?? ''}, so not ${secretName}`,
    };
  }
}

type TlsSpec = {
  credentialsSecretName?: string;
  tlsSecretName?: string;
  tls?: { issuerRef?: IssuerRef };
};

/** The names every member and Service answers to (what the certificate must hold). */
function clusterDnsNames(cr: CustomResource): string[] {
  const spec = (cr.spec ?? {}) as TlsSpec;
  const names = mysqlClusterNames(cr.metadata.name, spec.credentialsSecretName, spec.tlsSecretName);
  return memberDnsNames({
    namespace: cr.metadata.namespace ?? 'default',
    // The defaults come from the construct (render has validated the spec before this runs).
    members: Array.from({ length: resolveMySQLClusterSpec(cr.metadata.name, spec).replicas }, (_, i) =>
      names.memberHost(`${names.statefulSet}-${i}`),
    ),
    services: [names.primaryService, names.replicasService],
  });
}

const certificatePath = (namespace: string, name: string): string =>
  `/apis/${CERTIFICATE_API_VERSION}/namespaces/${namespace}/${CERTIFICATE_PLURAL}/${encodeURIComponent(name)}`;

async function ensure(
  client: KubeClient,
  cr: CustomResource,
  now: Date,
  read: SecretLookup,
  readCertificate: CertificateLookup,
): Promise<TlsState> {
  const spec = (cr.spec ?? {}) as TlsSpec;
  const namespace = cr.metadata.namespace ?? 'default';
  const name = cr.metadata.name;
  const names = mysqlClusterNames(name, spec.credentialsSecretName, spec.tlsSecretName);
  const secretName = names.tlsSecret;
  if (spec.tls?.issuerRef)
    return ensureIssuedByCertManager(client, cr, spec.tls.issuerRef, secretName, read, readCertificate);
  const tlsSecret = await read(namespace, secretName);
  if (spec.tlsSecretName !== undefined) {
    const missing = tlsSecret ? Object.values(TLS_KEYS).filter((k) => !tlsSecret.data?.[k]) : [];
    if (!tlsSecret || missing.length > 0)
      return {
        state: 'missing',
        secretName,
        message: tlsSecret
          ? `Secret ${secretName} named in spec.tlsSecretName has no ${missing.join(' or ')} key (expected ${Object.values(TLS_KEYS).join(', ')}, as cert-manager writes them)`
          : `Secret ${secretName} named in spec.tlsSecretName does not exist in namespace ${namespace}; create it with keys ${Object.values(TLS_KEYS).join(', ')} (a cert-manager Certificate writes them)`,
      };
    return {
      state: 'ready',
      secretName,
      caPem: decode(tlsSecret, TLS_KEYS.ca),
      notAfter: certificateNotAfter(decode(tlsSecret, TLS_KEYS.cert)) ?? '',
    };
  }

  const caSecret = await read(namespace, names.caSecret);
  for (const s of [tlsSecret, caSecret])
    if (s && s.metadata?.labels?.[GENERATED_BY_LABEL] !== name)
      return {
        state: 'foreign',
        secretName,
        message: `Secret ${s.metadata?.name ?? ''} exists and was not generated by recon8s for this cluster; recon8s never changes it: name a Secret of yours in spec.tlsSecretName (keys ${Object.values(TLS_KEYS).join(', ')}) or remove it`,
      };

  const dnsNames = clusterDnsNames(cr);
  const ca: CertificateAndKey | undefined = caSecret
    ? { certPem: decode(caSecret, TLS_KEYS.cert), keyPem: decode(caSecret, TLS_KEYS.key) }
    : undefined;
  const server: ServerCertificate | undefined = tlsSecret
    ? {
        certPem: decode(tlsSecret, TLS_KEYS.cert),
        keyPem: decode(tlsSecret, TLS_KEYS.key),
        caPem: decode(tlsSecret, TLS_KEYS.ca),
      }
    : undefined;
  const plan = certificatePlan({ ...(ca ? { ca } : {}), ...(server ? { server } : {}) }, dnsNames, now);
  if (plan.action === 'keep' && ca && server)
    return { state: 'ready', secretName, caPem: ca.certPem, notAfter: certificateNotAfter(server.certPem) ?? '' };
  if (plan.action === 'keep') throw new Error('unreachable: a kept certificate has a CA');

  const { issueCa, issueServerCertificate } = await import('../../mysql/certificate-issuer.js');
  let signer = ca;
  if (plan.action === 'issueAll' || !signer) {
    signer = issueCa(`recon8s ${namespace}/${name} CA`, now);
    await write(client, cr, names.caSecret, caSecret, {
      [TLS_KEYS.cert]: signer.certPem,
      [TLS_KEYS.key]: signer.keyPem,
    });
  }
  const issued = issueServerCertificate(signer, `${name}.${namespace}`, dnsNames, now);
  await write(client, cr, secretName, tlsSecret, {
    [TLS_KEYS.cert]: issued.certPem,
    [TLS_KEYS.key]: issued.keyPem,
    [TLS_KEYS.ca]: issued.caPem,
  });
  return {
    state: tlsSecret ? 'renewed' : 'issued',
    secretName,
    caPem: issued.caPem,
    notAfter: certificateNotAfter(issued.certPem) ?? '',
    reason: plan.reason,
  };
}

/**
 * spec.tls.issuerRef: the Certificate `<name>-tls` asks that issuer for the members' certificate, written
 * by cert-manager into the cluster's TLS Secret, which the controller then uses as its own (issuedTls
 * decides). The Certificate is written only when it lacks what the controller sets (server-side apply),
 * so a steady cluster sends no write; a Certificate of that name controlled by anything else is never
 * touched. The Secret and, once it exists, the Certificate are watched by name (the controller's caches),
 * so cert-manager's word on it, the issue and each renewal wake the cluster; a steady cluster sends no
 * request. While it is not usable the reconcile also comes back every 30 s.
 */
async function ensureIssuedByCertManager(
  client: KubeClient,
  cr: CustomResource,
  issuerRef: IssuerRef,
  secretName: string,
  read: SecretLookup,
  readCertificate: CertificateLookup,
): Promise<TlsState> {
  const namespace = cr.metadata.namespace ?? 'default';
  const dnsNames = clusterDnsNames(cr);
  const desired = certificateFor({
    cluster: cr.metadata.name,
    namespace,
    secretName,
    issuerRef,
    dnsNames,
    labels: { 'app.kubernetes.io/managed-by': 'recon8s', 'app.kubernetes.io/instance': cr.metadata.name },
    ...(cr.metadata.uid ? { ownerReference: controllerReference(cr) } : {}),
  });
  const path = certificatePath(namespace, secretName);
  const certificateName = `${namespace}/${secretName}`;
  let requested: string | undefined;
  let live: LiveCertificate | undefined;
  try {
    live = (await readCertificate(namespace, secretName)) as LiveCertificate | undefined;
    const controller = live?.metadata?.ownerReferences?.find((r) => r.controller === true);
    if (live && controller?.uid !== cr.metadata.uid)
      return {
        state: 'certificateForeign',
        secretName,
        message: `Certificate ${certificateName} exists and is not this cluster's (controlled by ${controller ? `${controller.kind ?? ''} ${controller.name ?? ''}` : 'nothing'}); recon8s never changes it: remove it, or name its Secret in spec.tlsSecretName instead of spec.tls.issuerRef`,
      };
    if (!live || !certificateSpecMatches(desired.spec, live.spec)) {
      const existed = live !== undefined;
      live = await client.requestJson<LiveCertificate>({
        method: HttpMethod.PATCH,
        path,
        query: { fieldManager: client.fieldManager, force: true },
        body: JSON.stringify(desired),
        headers: { 'Content-Type': PatchStrategy.ServerSideApply },
      });
      requested = `${existed ? 'updated' : 'created'} Certificate ${certificateName} for issuer ${desired.spec.issuerRef.kind} ${desired.spec.issuerRef.name} (${dnsNames.length} DNS names)`;
    }
  } catch (e) {
    const code = apiError(e).code;
    // An apply creates what is missing: a 404 is the type itself that is not served.
    if (code === 404)
      return {
        state: 'noCertManager',
        secretName,
        message: `spec.tls.issuerRef names a cert-manager issuer, but the API server serves no ${CERTIFICATE_PLURAL}.cert-manager.io: install cert-manager (its CRDs), or remove spec.tls.issuerRef to let recon8s issue the certificate`,
      };
    if (code === 403)
      return {
        state: 'certificateForbidden',
        secretName,
        message: `recon8s may not read or write cert-manager Certificates in namespace ${namespace} (it needs get, list, watch, create and patch on certificates.cert-manager.io): grant them, as the install manifests do`,
      };
    throw e;
  }
  const secret = await read(namespace, secretName);
  const decision = issuedTls({
    certificateName,
    secretName,
    ...(live ? { certificate: live } : {}),
    ...(secret
      ? {
          secret: {
            certPem: decode(secret, TLS_KEYS.cert),
            keyPem: decode(secret, TLS_KEYS.key),
            caPem: decode(secret, TLS_KEYS.ca),
          },
        }
      : {}),
    dnsNames,
  });
  const withRequest = requested ? { requested } : {};
  if (decision.state === 'ready')
    return { state: 'ready', secretName, caPem: decision.caPem, notAfter: decision.notAfter, ...withRequest };
  return { state: decision.state, secretName, message: decision.message, ...withRequest };
}

/** Creates the Secret, or replaces the certificate in the one read (compare-and-swap: a Secret changed since is left alone). */
async function write(
  client: KubeClient,
  cr: CustomResource,
  name: string,
  read: V1Secret | undefined,
  data: Record<string, string>,
): Promise<void> {
  const namespace = cr.metadata.namespace ?? 'default';
  const body: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      ...(read?.metadata?.resourceVersion ? { resourceVersion: read.metadata.resourceVersion } : {}),
      labels: {
        'app.kubernetes.io/managed-by': 'recon8s',
        'app.kubernetes.io/instance': cr.metadata.name,
        [GENERATED_BY_LABEL]: cr.metadata.name,
      },
      // Certificates hold no data: they go with the cluster.
      ...(cr.metadata.uid
        ? {
            ownerReferences: [controllerReference(cr)],
          }
        : {}),
    },
    type: 'kubernetes.io/tls',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
  try {
    // A merge patch carrying the resourceVersion read (the operator may get, create and patch Secrets,
    // not update them): refused with 409 if anyone wrote the Secret since.
    await client.request(
      read
        ? {
            method: HttpMethod.PATCH,
            path: `/api/v1/namespaces/${namespace}/secrets/${encodeURIComponent(name)}`,
            body: JSON.stringify({ metadata: body.metadata, data: body.data }),
            headers: { 'Content-Type': PatchStrategy.MergePatch },
          }
        : {
            method: HttpMethod.POST,
            path: `/api/v1/namespaces/${namespace}/secrets`,
            body: JSON.stringify(body),
            headers: { 'Content-Type': 'application/json' },
          },
    );
  } catch (e) {
    // Another run wrote it first: the next reconcile reads theirs.
    if (isAlreadyExists(e) || isConflict(e)) throw new TlsWriteRaceError(name);
    throw e;
  }
}

/** Another writer changed the Secret between read and write: nothing is overwritten, the reconcile retries. */
export class TlsWriteRaceError extends Error {
  constructor(secret: string) {
    super(`Secret ${secret} changed while recon8s issued a certificate; it is read again`);
  }
}

function decode(secret: V1Secret, key: string): string {
  const v = secret.data?.[key];
  return v ? Buffer.from(v, 'base64').toString('utf8') : '';
}
