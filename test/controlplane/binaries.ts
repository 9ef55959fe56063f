import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Kubernetes release the test control plane runs; build-binaries.sh builds exactly this one. */
export const KUBE_VERSION = process.env.RECON8S_KUBE_VERSION ?? 'v1.36.3';

/** Absolute paths of the four programs a control plane needs, all of one release. */
export interface Binaries {
  readonly dir: string;
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  readonly kubectl: string;
}

const NAMES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'] as const;
const BUILD_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'build-binaries.sh');

function binariesIn(dir: string): Binaries {
  return {
    dir,
    etcd: join(dir, 'etcd'),
    kubeApiserver: join(dir, 'kube-apiserver'),
    kubeControllerManager: join(dir, 'kube-controller-manager'),
    kubectl: join(dir, 'kubectl'),
  };
}

function missingIn(dir: string): string[] {
  return NAMES.filter((name) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * Finds the binaries: `RECON8S_ASSETS` (like envtest's KUBEBUILDER_ASSETS) when set, otherwise the
 * per-user cache that build-binaries.sh fills (a cold build takes minutes, a warm call returns at once).
 */
export async function findBinaries(
  options: { assetsDir?: string; onBuildOutput?: (line: string) => void } = {},
): Promise<Binaries> {
  const assets = options.assetsDir ?? process.env.RECON8S_ASSETS;
  if (assets !== undefined && assets !== '') {
    const missing = missingIn(assets);
    if (missing.length > 0) {
      throw new Error(
        `RECON8S_ASSETS=${assets} lacks executable ${missing.join(', ')}. Point it at a directory holding ` +
          `etcd, kube-apiserver, kube-controller-manager and kubectl, or unset it to build ${KUBE_VERSION} ` +
          `with ${BUILD_SCRIPT}.`,
      );
    }
    return binariesIn(assets);
  }
  const dir = await runBuildScript(options.onBuildOutput);
  const missing = missingIn(dir);
  if (missing.length > 0) {
    throw new Error(`${BUILD_SCRIPT} reported ${dir}, but it lacks executable ${missing.join(', ')}.`);
  }
  return binariesIn(dir);
}

function runBuildScript(onOutput?: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'bash',
      [BUILD_SCRIPT, KUBE_VERSION],
      // A cold build compiles Kubernetes; it must not be cut short by a buffer limit.
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const why = stderr.trim().split('\n').slice(-15).join('\n');
          const exit = typeof error.code === 'number' ? `exited with code ${error.code}` : error.message.split('\n')[0];
          // The script explains the usual causes itself (no Go, proxy unreachable); add the way out if it did not.
          const hint = why.includes('RECON8S_ASSETS')
            ? ''
            : '\nEither fix the build above (it needs Go >= 1.26 and the Go module proxy), or set RECON8S_ASSETS to a ' +
              'directory holding etcd, kube-apiserver, kube-controller-manager and kubectl.';
          reject(
            new Error(`Could not get the Kubernetes ${KUBE_VERSION} binaries: ${BUILD_SCRIPT} ${exit}.\n${why}${hint}`),
          );
          return;
        }
        const lines = stdout.trim().split('\n');
        resolve(lines[lines.length - 1] ?? '');
      },
    );
    if (onOutput) {
      child.stderr?.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString().split('\n')) if (line !== '') onOutput(line);
      });
    }
  });
}
