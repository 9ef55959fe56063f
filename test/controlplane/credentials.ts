import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig, writeKubeconfig } from './kubeconfig.js';
import type { CertificateAuthority } from './pki.js';

/** An identity with a kubeconfig file of its own. */
export interface Credentials {
  /** The user name the API server sees, e.g. `jane` or `system:serviceaccount:ns:name`. */
  readonly user: string;
  readonly groups: readonly string[];
  readonly kubeconfigPath: string;
  /** A new client-node KubeConfig loaded from kubeconfigPath. */
  kubeConfig(): KubeConfig;
}

export interface Identity {
  readonly user: string;
  /** Certificate organizations, which Kubernetes reads as groups; `system:authenticated` is implied. */
  readonly groups?: readonly string[];
}

interface Cluster {
  readonly server: string;
  readonly caPem: string;
  /** Where kubeconfig files of minted identities go. */
  readonly usersDir: string;
}

let serial = 0;

function fileStem(user: string): string {
  serial += 1;
  return `${String(serial).padStart(3, '0')}-${user.replace(/[^A-Za-z0-9_.-]+/g, '_')}`;
}

function credentials(user: string, groups: readonly string[], kubeconfigPath: string): Credentials {
  return { user, groups, kubeconfigPath, kubeConfig: () => loadKubeConfig(kubeconfigPath) };
}

/** A client certificate signed by the cluster CA: the API server authenticates it, RBAC decides the rest. */
export async function mintClientCredentials(
  cluster: Cluster,
  ca: CertificateAuthority,
  identity: Identity,
): Promise<Credentials> {
  if (identity.user === '') throw new Error('mintCredentials: expected a non-empty user name.');
  const groups = identity.groups ?? [];
  const stem = fileStem(identity.user);
  await mkdir(cluster.usersDir, { recursive: true, mode: 0o700 });
  const pair = await ca.issue({ name: stem, commonName: identity.user, organizations: groups, usage: 'client' });
  const kubeconfigPath = join(cluster.usersDir, `${stem}.kubeconfig`);
  await writeKubeconfig(kubeconfigPath, {
    server: cluster.server,
    caPem: cluster.caPem,
    userName: identity.user,
    user: { clientCertificatePem: pair.certPem, clientKeyPem: pair.keyPem },
  });
  return credentials(identity.user, groups, kubeconfigPath);
}

/** A bound token of an existing ServiceAccount, from the TokenRequest API (as a kubelet would get it). */
export async function serviceAccountCredentials(
  cluster: Cluster,
  admin: KubeConfig,
  namespace: string,
  name: string,
  expirationSeconds: number,
): Promise<Credentials> {
  const core = admin.makeApiClient(CoreV1Api);
  let token: string | undefined;
  try {
    const review = await core.createNamespacedServiceAccountToken({
      namespace,
      name,
      // No audiences: the API server's own, so the token authenticates to it.
      body: { spec: { audiences: [], expirationSeconds } },
    });
    token = review.status?.token;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) {
      throw new Error(
        `serviceAccountKubeConfig: ServiceAccount ${namespace}/${name} does not exist; create it first.`,
        { cause: error },
      );
    }
    throw error;
  }
  if (token === undefined || token === '') {
    throw new Error(`serviceAccountKubeConfig: the TokenRequest for ${namespace}/${name} returned no token.`);
  }
  const user = `system:serviceaccount:${namespace}:${name}`;
  const kubeconfigPath = join(cluster.usersDir, `${fileStem(user)}.kubeconfig`);
  await mkdir(cluster.usersDir, { recursive: true, mode: 0o700 });
  await writeKubeconfig(kubeconfigPath, {
    server: cluster.server,
    caPem: cluster.caPem,
    userName: user,
    user: { token },
  });
  return credentials(user, ['system:serviceaccounts', `system:serviceaccounts:${namespace}`], kubeconfigPath);
}
