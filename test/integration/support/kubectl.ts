import { spawnSync } from 'node:child_process';

export interface KubectlResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the control plane's own kubectl (the pinned release) as the admin, as a user would. */
export function kubectl(
  controlPlane: { readonly binaries: { readonly kubectl: string }; readonly kubeconfigPath: string },
  args: readonly string[],
  input?: string,
): KubectlResult {
  const r = spawnSync(controlPlane.binaries.kubectl, [`--kubeconfig=${controlPlane.kubeconfigPath}`, ...args], {
    input,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
