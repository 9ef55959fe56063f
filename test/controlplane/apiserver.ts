import type { KeyPair } from './pki.js';
import { renderFlags } from './flags.js';
import { httpsGet } from './net.js';
import type { TlsClient } from './net.js';
import type { ProbeResult } from './readiness.js';

/** The Service CIDR: small, and its first address (the `kubernetes` Service) is in the serving cert. */
export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';
export const KUBERNETES_SERVICE_IP = '10.0.0.1';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
/** Names the serving certificate answers to, besides 127.0.0.1. */
export const API_SERVER_DNS_NAMES = [
  'localhost',
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
];

export interface ApiServerInputs {
  readonly port: number;
  readonly etcdUrl: string;
  readonly caCertPath: string;
  readonly serving: KeyPair;
  readonly serviceAccountPublicKeyPath: string;
  readonly serviceAccountPrivateKeyPath: string;
  readonly certDir: string;
}

export function apiServerArgs(inputs: ApiServerInputs, extra?: readonly string[]): string[] {
  return renderFlags(
    {
      'bind-address': '127.0.0.1',
      'advertise-address': '127.0.0.1',
      'secure-port': String(inputs.port),
      'tls-cert-file': inputs.serving.certPath,
      'tls-private-key-file': inputs.serving.keyPath,
      // Otherwise it writes self-signed certificates into /var/run/kubernetes.
      'cert-dir': inputs.certDir,
      'client-ca-file': inputs.caCertPath,
      'etcd-servers': inputs.etcdUrl,
      'service-cluster-ip-range': SERVICE_CLUSTER_IP_RANGE,
      'service-account-issuer': SERVICE_ACCOUNT_ISSUER,
      'service-account-key-file': inputs.serviceAccountPublicKeyPath,
      'service-account-signing-key-file': inputs.serviceAccountPrivateKeyPath,
      // Tests must see the same authorization as a real cluster: RBAC, with nothing allowed by default.
      'authorization-mode': 'RBAC',
      // The default admission chain (PodSecurity, ServiceAccount, ...) stays on; privileged pods are a
      // policy decision of the namespace (Pod Security labels), as in most clusters.
      'allow-privileged': 'true',
      // The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints validation rejects as a
      // loopback address (every 10 s, in the log); nothing without a kubelet could use them anyway.
      'endpoint-reconciler-type': 'none',
      profiling: 'false',
    },
    extra,
  );
}

/** /readyz is 200 once every post-start hook (RBAC bootstrap roles, system namespaces, ...) has run. */
export async function probeApiServer(server: string, tls: TlsClient): Promise<ProbeResult> {
  const response = await httpsGet(`${server}/readyz`, tls);
  if (response.status === 200) return true;
  const failing = response.body.split('\n').filter((line) => line.startsWith('[-]'));
  return `/readyz answered ${response.status}${failing.length > 0 ? `: ${failing.join(', ')}` : ''}`;
}
