// cert-manager for the tests: its controllers (main.go beside this file) and its CRDs, both from the
// cert-manager module of the Go module proxy (build-cert-manager.sh), built once per machine into the
// per-user cache; installed into and run against a test control plane, on the host.
import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { KubeClient, KubeObject } from '../../lib/kube/index.js';
import { HttpMethod, getObject } from '../../lib/kube/index.js';

const BUILD_SCRIPT = fileURLToPath(new URL('./build-cert-manager.sh', import.meta.url));
/** The cert-manager release the tests run (RECON8S_CERT_MANAGER_VERSION overrides it, as for the build). */
export const CERT_MANAGER_VERSION = process.env.RECON8S_CERT_MANAGER_VERSION ?? 'v1.21.2';

export interface CertManagerBuild {
  readonly binary: string;
  /** cert-manager's own CRDs (deploy/crds of the same module): the cert-manager.io group. */
  readonly crdFiles: readonly string[];
}

/** Builds (first time only, minutes) or finds cert-manager; throws saying why it cannot. */
export function certManagerBuild(): CertManagerBuild {
  const r = spawnSync('bash', [BUILD_SCRIPT, CERT_MANAGER_VERSION], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 30 * 60_000,
  });
  const dir = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || dir === '')
    throw new Error(
      `cert-manager could not be built (${BUILD_SCRIPT} exited ${r.status ?? r.signal}); see its output above`,
    );
  const crds = join(dir, 'crds');
  return {
    binary: join(dir, 'cert-manager-controllers'),
    crdFiles: readdirSync(crds)
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .map((f) => join(crds, f)),
  };
}

const crdsOf = (files: readonly string[]): KubeObject[] =>
  files.flatMap((f) => parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJS() as KubeObject)).filter(Boolean);

/** Applies cert-manager's CRDs and waits until every one is Established. */
export async function installCertManagerCrds(client: KubeClient, files: readonly string[]): Promise<void> {
  const crds = crdsOf(files);
  for (const crd of crds) await client.apply(crd);
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    for (;;) {
      const live = await getObject<{ status?: { conditions?: { type: string; status: string }[] } }>(
        client,
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata?.name ?? ''}`,
      );
      if (live?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata?.name ?? ''} not Established within 60 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Deletes cert-manager's CRDs (and so every object of them): the control plane as it was found. */
export async function removeCertManagerCrds(client: KubeClient, files: readonly string[]): Promise<void> {
  for (const crd of crdsOf(files)) {
    try {
      await client.request({
        method: HttpMethod.DELETE,
        path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata?.name ?? ''}`,
      });
    } catch {
      // already gone
    }
  }
}

export interface RunningCertManager {
  /** What it logged (klog), for a test's diagnosis. */
  readonly logPath: string;
  stop(): Promise<void>;
}

/** Runs cert-manager's controllers on the host against the API server of `kubeconfigPath`. */
export function startCertManager(binary: string, kubeconfigPath: string, logPath: string): RunningCertManager {
  const log = createWriteStream(logPath);
  // stdin stays open while this process lives: the program stops when it closes (main.go), so it never
  // outlives a test process that was killed.
  const child: ChildProcess = spawn(
    binary,
    ['--kubeconfig', kubeconfigPath, '--cluster-resource-namespace', 'default'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    logPath,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      log.end();
    },
  };
}
