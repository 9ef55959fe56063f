import { spawnSync } from 'node:child_process';
import type { ControlPlane } from '../../controlplane/index.js';

export interface KubectlResult { readonly status: number | null; readonly stdout: string; readonly stderr: string }

/** Runs the control plane's own kubectl (the pinned release) as the admin, as a user would. */
export function kubectl(controlPlane: ControlPlane, args: readonly string[], input?: string): KubectlResult {
  const r = spawnSync(controlPlane.binaries.kubectl, [`--kubeconfig=${controlPlane.kubeconfigPath}`, ...args], {
    input, encoding: 'utf8', timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
