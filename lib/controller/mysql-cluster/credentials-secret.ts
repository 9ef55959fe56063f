import type { V1Secret } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/index.js';
import {
  HttpMethod,
  PatchStrategy,
  apiError,
  bindingSubject,
  getObject,
  isAlreadyExists,
  isNotFound,
  whoAmI,
} from '../../kube/index.js';
import type { CredentialsState } from '../../reconcile/credential-keys.js';
import {
  GENERATED_BY_LABEL,
  GENERATED_KEYS,
  credentialsProblem,
  generatePassword,
  missingKeys,
  requiredKeys,
} from '../../reconcile/credential-keys.js';
import { CREDENTIALS_CLUSTER_ROLE, mysqlClusterNames } from '../../../constructs/index.js';
import type { CustomResource, SecretLookup } from '../kind-controller.js';
import { controllerReference } from '../status.js';

/**
 * Makes sure a MySQLCluster has its credentials Secret, without ever overwriting one.
 *
 * - A Secret named in the spec is the user's: it is only read (never owned, changed or deleted). When
 *   it is missing or lacks a key, that is reported; nothing is created in its place.
 * - With no name in the spec, `<name>-credentials` is created once, with random passwords, unless
 *   data volumes from an earlier cluster of that name exist: their data was initialised with other
 *   passwords, and a new Secret would lock the cluster out of its own data.
 * - The generated Secret lives as long as the data: it is owned by the MySQLCluster (and so garbage
 *   collected with it) only when the spec's retention policy deletes the volumes too.
 *
 * Passwords never leave this function: not in logs, events, conditions or return values.
 */
export async function ensureCredentials(
  client: KubeClient,
  cr: CustomResource,
  credentialsClusterRole: string = CREDENTIALS_CLUSTER_ROLE,
  secrets?: SecretLookup,
): Promise<CredentialsState> {
  try {
    return await ensure(client, cr, secrets ?? ((namespace, name) => readSecret(client, namespace, name)));
  } catch (e) {
    // Secrets access is granted per namespace (least privilege): a missing grant is a condition to fix, not a crash.
    if (apiError(e).code !== 403) throw e;
    const namespace = cr.metadata.namespace ?? 'default';
    const secretName = mysqlClusterNames(
      cr.metadata.name,
      ((cr.spec ?? {}) as { credentialsSecretName?: string }).credentialsSecretName,
    ).credentialsSecret;
    return {
      state: 'forbidden',
      secretName,
      // The subject the API server sees: the message names the exact grant to make.
      message: `recon8s may not read or create Secrets in namespace ${namespace}: bind the ClusterRole ${credentialsClusterRole} there (kubectl create rolebinding ${credentialsClusterRole} -n ${namespace} --clusterrole=${credentialsClusterRole} ${bindingSubject(await whoAmI(client))})`,
    };
  }
}

async function ensure(client: KubeClient, cr: CustomResource, read: SecretLookup): Promise<CredentialsState> {
  const spec = (cr.spec ?? {}) as {
    credentialsSecretName?: string;
    pvcRetention?: { whenDeleted?: string };
    monitoring?: { enabled?: boolean };
  };
  const required = requiredKeys(spec.monitoring?.enabled === true);
  const namespace = cr.metadata.namespace ?? 'default';
  const name = cr.metadata.name;
  const names = mysqlClusterNames(name, spec.credentialsSecretName);
  const secretName = names.credentialsSecret;
  const secret = await read(namespace, secretName);
  if (secret) {
    await followRetention(client, cr, secret);
    await completeGenerated(client, cr, secret);
    const existing = secret.data ?? {};
    const missing = missingKeys(existing, required);
    if (missing.length > 0) {
      return {
        state: 'incomplete',
        secretName,
        message: `Secret ${secretName} has no ${missing.join(' or ')} key; add ${missing.length > 1 ? 'them' : 'it'} (the data is never shown)`,
      };
    }
    const problem = credentialsProblem(secretName, existing);
    return problem ? { state: 'invalid', secretName, message: problem } : { state: 'ready', secretName };
  }
  if (spec.credentialsSecretName !== undefined) {
    return {
      state: 'missing',
      secretName,
      message: `Secret ${secretName} named in spec.credentialsSecretName does not exist; create it with keys ${required.join(' and ')}`,
    };
  }
  if (await exists(client, `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${names.dataClaim(0)}`)) {
    return {
      state: 'missing',
      secretName,
      message: `Secret ${secretName} is missing but data volume ${names.dataClaim(0)} exists from an earlier cluster; restore the Secret with that data's passwords (a new one would not match)`,
    };
  }
  const ownedWithData = spec.pvcRetention?.whenDeleted === 'Delete';
  try {
    const secret: V1Secret = {
      metadata: {
        name: secretName,
        namespace,
        labels: {
          'app.kubernetes.io/managed-by': 'recon8s',
          'app.kubernetes.io/instance': name,
          [GENERATED_BY_LABEL]: name,
        },
        ...(ownedWithData && cr.metadata.uid
          ? {
              ownerReferences: [controllerReference(cr)],
            }
          : {}),
      },
      type: 'Opaque',
      stringData: Object.fromEntries(GENERATED_KEYS.map((k) => [k, generatePassword()])),
    };
    await client.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', ...secret }),
      headers: { 'Content-Type': 'application/json' },
    });
    return { state: 'created', secretName };
  } catch (e) {
    // Another run created it first (e.g. before a restart): keep theirs, never overwrite.
    if (isAlreadyExists(e)) return { state: 'ready', secretName };
    throw e;
  }
}

/**
 * The generated Secret is owned by the cluster exactly when the retention policy deletes the data with
 * it: switching `pvcRetention.whenDeleted` moves the ownerReference both ways, so that deleting the
 * cluster never keeps volumes whose passwords it deleted. Only a Secret recon8s generated for this very
 * cluster (its label says so) is ever changed; a user's Secret is only read.
 */
async function followRetention(client: KubeClient, cr: CustomResource, secret: V1Secret): Promise<void> {
  const spec = (cr.spec ?? {}) as { credentialsSecretName?: string; pvcRetention?: { whenDeleted?: string } };
  if (
    spec.credentialsSecretName !== undefined ||
    secret.metadata?.labels?.[GENERATED_BY_LABEL] !== cr.metadata.name ||
    !cr.metadata.uid
  )
    return;
  const others = (secret.metadata.ownerReferences ?? []).filter((r) => r.uid !== cr.metadata.uid);
  const owned = (secret.metadata.ownerReferences ?? []).some((r) => r.uid === cr.metadata.uid);
  const wantOwned = spec.pvcRetention?.whenDeleted === 'Delete';
  if (owned === wantOwned) return;
  const ownerReferences = wantOwned ? [...others, controllerReference(cr)] : others;
  const updated = await client.requestJson<V1Secret>({
    method: HttpMethod.PATCH,
    path: `/api/v1/namespaces/${cr.metadata.namespace ?? 'default'}/secrets/${secret.metadata.name ?? ''}`,
    // The resourceVersion makes it a compare-and-swap: a Secret changed since it was read is not overwritten.
    body: JSON.stringify({
      metadata: {
        resourceVersion: secret.metadata.resourceVersion,
        ownerReferences: ownerReferences.length ? ownerReferences : null,
      },
    }),
    headers: { 'Content-Type': 'application/merge-patch+json' },
  });
  // A second patch in the same pass (completeGenerated) compares against this version, not the one read.
  secret.metadata.resourceVersion = updated.metadata?.resourceVersion;
}

/**
 * A Secret recon8s generated before a key existed (the administrative account's password came with
 * high availability, the metrics sidecar's with monitoring) gets the missing key, with a new random password; a key that exists is never
 * touched, and a user's Secret is only read.
 */
async function completeGenerated(client: KubeClient, cr: CustomResource, secret: V1Secret): Promise<void> {
  if (secret.metadata?.labels?.[GENERATED_BY_LABEL] !== cr.metadata.name) return;
  const missing = missingKeys(secret.data ?? {}, GENERATED_KEYS);
  if (missing.length === 0) return;
  const updated = await client.requestJson<V1Secret>({
    method: HttpMethod.PATCH,
    path: `/api/v1/namespaces/${cr.metadata.namespace ?? 'default'}/secrets/${encodeURIComponent(secret.metadata.name ?? '')}`,
    body: JSON.stringify({
      metadata: { resourceVersion: secret.metadata.resourceVersion },
      stringData: Object.fromEntries(missing.map((k) => [k, generatePassword()])),
    }),
    headers: { 'Content-Type': PatchStrategy.MergePatch },
  });
  secret.data = updated.data;
}

/** A Secret, or undefined when it does not exist. */
export function readSecret(client: KubeClient, namespace: string, name: string): Promise<V1Secret | undefined> {
  return getObject<V1Secret>(client, `/api/v1/namespaces/${namespace}/secrets/${encodeURIComponent(name)}`);
}

async function exists(client: KubeClient, path: string): Promise<boolean> {
  try {
    await client.request({ path });
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}
