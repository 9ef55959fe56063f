import { ApiextensionsV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { APP, MYSQL_CLUSTER, crdManifest } from '../../../constructs/index.js';
import type { Controller, ControllerOptions } from '../../../lib/controller/controller.js';
import { startController } from '../../../lib/controller/controller.js';
import { createKubeClient } from '../../../lib/kube/index.js';
import type { LogLevel } from '../../../lib/observability/logger.js';
import { LOG_LEVELS, isLogLevel, jsonLogger } from '../../../lib/observability/logger.js';
import { eventually } from '../eventually.js';

/** A cluster to talk to: a test control plane, or the real node of the end-to-end tests. */
export interface ClusterAccess {
  kubeConfig(): KubeConfig;
}

const installed = new WeakMap<ClusterAccess, Promise<void>>();

/** Installs both CRDs (as generated from the spec definitions) and waits until they serve. Once per control plane. */
export function installCrds(controlPlane: ClusterAccess): Promise<void> {
  let done = installed.get(controlPlane);
  if (!done) {
    done = (async () => {
      const kc = controlPlane.kubeConfig();
      const client = createKubeClient({ kubeConfig: kc, fieldManager: 'recon8s-tests' });
      const ext = kc.makeApiClient(ApiextensionsV1Api);
      for (const kind of [APP, MYSQL_CLUSTER]) {
        await client.apply(crdManifest(kind));
        await eventually(
          async () => {
            const crd = await ext.readCustomResourceDefinition({ name: `${kind.plural}.${kind.group}` });
            if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
              throw new Error(`${kind.plural} not Established`);
          },
          { timeoutMs: 30_000, description: `CRD ${kind.plural} to be Established` },
        );
      }
      await client.close();
    })();
    installed.set(controlPlane, done);
  }
  return done;
}

function testLogLevel(): LogLevel {
  const level = process.env.RECON8S_TEST_CONTROLLER_LOG;
  if (!isLogLevel(level))
    throw new Error(`RECON8S_TEST_CONTROLLER_LOG=${level}: expected one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/**
 * Starts the controller in this process against a control plane, watching only `namespaces` (so
 * tests in other namespaces do not see it), with metrics and probes on free loopback ports and a
 * short resync. Stop it in an `after` hook.
 */
export async function startTestController(
  controlPlane: ClusterAccess,
  options: Partial<ControllerOptions> & { readonly namespaces: readonly string[] },
): Promise<Controller> {
  await installCrds(controlPlane);
  return startController({
    kubeConfig: controlPlane.kubeConfig(),
    metricsAddr: '127.0.0.1:0',
    healthAddr: '127.0.0.1:0',
    workers: 2,
    resyncPeriodMs: 60_000,
    // For a person diagnosing a run: the controller's log on stderr (silent otherwise, as in CI).
    ...(process.env.RECON8S_TEST_CONTROLLER_LOG ? { logger: jsonLogger({ level: testLogLevel() }) } : {}),
    ...options,
  });
}
