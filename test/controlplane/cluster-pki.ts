import { API_SERVER_DNS_NAMES, KUBERNETES_SERVICE_IP } from './apiserver.js';
import { CertificateAuthority, createServiceAccountKeys } from './pki.js';
import type { KeyPair } from './pki.js';

/** The certificates and keys of one control plane, all in its `pki/` directory. */
export interface ClusterPki {
  readonly ca: CertificateAuthority;
  readonly apiServer: KeyPair;
  readonly admin: KeyPair;
  readonly controllerManagerClient: KeyPair;
  readonly controllerManagerServing: KeyPair;
  readonly serviceAccount: { readonly privateKeyPath: string; readonly publicKeyPath: string };
}

/**
 * Identities: the admin is in system:masters (all-powerful, as kubeadm's admin.conf); kube-controller-
 * manager is system:kube-controller-manager with its bootstrap RBAC role, as in a real cluster.
 */
export async function createClusterPki(dir: string, validityDays: number): Promise<ClusterPki> {
  const ca = await CertificateAuthority.create(dir, { validityDays });
  const [apiServer, admin, controllerManagerClient, controllerManagerServing, serviceAccount] = await Promise.all([
    ca.issue({
      name: 'kube-apiserver',
      commonName: 'kube-apiserver',
      usage: 'server',
      ipAddresses: ['127.0.0.1', KUBERNETES_SERVICE_IP],
      dnsNames: API_SERVER_DNS_NAMES,
    }),
    ca.issue({ name: 'admin', commonName: 'recon8s-admin', organizations: ['system:masters'], usage: 'client' }),
    ca.issue({ name: 'kube-controller-manager', commonName: 'system:kube-controller-manager', usage: 'client' }),
    ca.issue({
      name: 'kube-controller-manager-serving',
      commonName: 'kube-controller-manager',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
      dnsNames: ['localhost'],
    }),
    createServiceAccountKeys(dir),
  ]);
  return { ca, apiServer, admin, controllerManagerClient, controllerManagerServing, serviceAccount };
}
