import type { KeyPair } from './pki.js';
import { renderFlags } from './flags.js';
import { httpsGet } from './net.js';
import type { TlsClient } from './net.js';
import type { ProbeResult } from './readiness.js';

/**
 * What every integration test may rely on: owner references are honoured, namespaces finish deleting,
 * each namespace gets its `default` ServiceAccount and `kube-root-ca.crt`, legacy token Secrets fill.
 */
export const DEFAULT_CONTROLLERS: readonly string[] = [
  'garbagecollector',
  'namespace',
  'serviceaccount',
  'serviceaccount-token',
  'root-ca-cert-publisher',
];

/**
 * The controllers that turn workloads into Pods and PersistentVolumeClaims. Without a kubelet no Pod
 * ever runs, so these only help tests that check what the controllers create.
 */
export const WORKLOAD_CONTROLLERS: readonly string[] = [
  'deployment',
  'replicaset',
  'statefulset',
  'daemonset',
  'job',
  'cronjob',
  'disruption',
  'endpointslice',
  'horizontalpodautoscaling',
  'persistentvolume-binder',
  'pvc-protection',
];

export interface ControllerManagerInputs {
  readonly port: number;
  readonly kubeconfigPath: string;
  readonly controllers: readonly string[];
  readonly caCertPath: string;
  readonly serving: KeyPair;
  readonly serviceAccountPrivateKeyPath: string;
}

export function controllerManagerArgs(inputs: ControllerManagerInputs, extra?: readonly string[]): string[] {
  return renderFlags(
    {
      kubeconfig: inputs.kubeconfigPath,
      'bind-address': '127.0.0.1',
      'secure-port': String(inputs.port),
      'tls-cert-file': inputs.serving.certPath,
      'tls-private-key-file': inputs.serving.keyPath,
      controllers: inputs.controllers.join(','),
      // One instance: electing a leader only delays the start (and a restart by the lease duration).
      'leader-elect': 'false',
      // Each controller acts as its own ServiceAccount with its bootstrap RBAC role, as in kubeadm
      // clusters, so a test sees what e.g. the garbage collector is really allowed to do.
      'use-service-account-credentials': 'true',
      'service-account-private-key-file': inputs.serviceAccountPrivateKeyPath,
      'root-ca-file': inputs.caCertPath,
      // Tests create and delete in bursts; the default 20 QPS would make the controllers lag behind.
      'kube-api-qps': '200',
      'kube-api-burst': '400',
      profiling: 'false',
    },
    extra,
  );
}

export async function probeControllerManager(port: number, tls: TlsClient): Promise<ProbeResult> {
  const response = await httpsGet(`https://127.0.0.1:${port}/healthz`, tls);
  return response.status === 200 ? true : `/healthz answered ${response.status}: ${response.body.trim()}`;
}
