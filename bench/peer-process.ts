import { createServer } from 'node:net';
import { ControllerProcess } from './controller-process.js';

export interface PeerProcessOptions {
  /** The built peer (bench/peer-build.ts). */
  readonly binary: string;
  readonly kubeconfigPath: string;
  readonly namespace: string;
  readonly workers: number;
  readonly startTimeoutMs?: number;
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice for port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

/** The peer's command line, as its README gives it (it has no health probes and no leader election to turn off). */
export function peerArgs(opts: Omit<PeerProcessOptions, 'binary'>, metricsPort: number): string[] {
  return [
    '--kubeconfig',
    opts.kubeconfigPath,
    '--namespace',
    opts.namespace,
    '--workers',
    String(opts.workers),
    '--metrics-bind-address',
    `127.0.0.1:${metricsPort}`,
  ];
}

/**
 * The controller-runtime peer as a child process. It prints the metrics address it was given (not the
 * one it bound), so it gets a port that was free just before; a lost race is retried with another one.
 */
export async function startPeer(opts: PeerProcessOptions): Promise<ControllerProcess> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await ControllerProcess.spawn({
        command: opts.binary,
        args: peerArgs(opts, await freePort()),
        what: 'the peer',
        ...(opts.startTimeoutMs !== undefined ? { startTimeoutMs: opts.startTimeoutMs } : {}),
      });
    } catch (e) {
      lastError = e;
      if (!(e instanceof Error) || !/address already in use/.test(e.message)) throw e;
    }
  }
  throw lastError;
}
