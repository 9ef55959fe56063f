/*
 * Loaded by mocha before any test file (.mocharc.json "require"). Integration tests share one control
 * plane, started lazily by test/integration/cluster.ts; this global fixture stops it once, after the
 * last test of the run, whether tests passed or failed. The end-to-end tests' real node (test/e2e/cluster.ts) is stopped the same way. If only unit tests ran, there is nothing to stop.
 * (Interrupted runs and crashes are covered by test/controlplane/lifecycle.ts.)
 */
import { stopSharedNode } from './e2e/cluster.js';
import { stopSharedControlPlane } from './integration/cluster.js';

export async function mochaGlobalTeardown(): Promise<void> {
  await Promise.all([stopSharedControlPlane(), stopSharedNode()]);
}
