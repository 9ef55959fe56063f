import { writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

/** How a kubeconfig user proves who it is: a client certificate or a bearer token. */
export type KubeconfigUser =
  { readonly clientCertificatePem: string; readonly clientKeyPem: string } | { readonly token: string };

export interface KubeconfigFile {
  readonly server: string;
  readonly caPem: string;
  readonly userName: string;
  readonly user: KubeconfigUser;
  /** Context and cluster name; kubectl shows it. */
  readonly contextName?: string;
}

/**
 * Writes a self-contained kubeconfig (certificates inline, mode 0600): it can be copied, or handed to
 * kubectl or a controller process, without the PKI directory.
 */
export async function writeKubeconfig(path: string, file: KubeconfigFile): Promise<void> {
  const context = file.contextName ?? 'recon8s-test';
  const b64 = (pem: string): string => Buffer.from(pem).toString('base64');
  const user =
    'token' in file.user
      ? { token: file.user.token }
      : {
          'client-certificate-data': b64(file.user.clientCertificatePem),
          'client-key-data': b64(file.user.clientKeyPem),
        };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: context, cluster: { server: file.server, 'certificate-authority-data': b64(file.caPem) } }],
    users: [{ name: file.userName, user }],
    contexts: [{ name: context, context: { cluster: context, user: file.userName, namespace: 'default' } }],
    'current-context': context,
    preferences: {},
  };
  await writeFile(path, stringify(config), { mode: 0o600 });
}

export function loadKubeConfig(path: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}
