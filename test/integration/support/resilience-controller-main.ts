/*
 * A controller process for tests that need startController() options the command line does not offer
 * (short leader-election periods, so a failover takes seconds, not a 15 s lease). Run by
 * ControllerProcesses.script(): `node --import tsx resilience-controller-main.ts '<json options>'`.
 * Like `recon8s controller` it logs JSON lines to stderr, says "started" once its informers synced, and
 * on SIGTERM stops gracefully (releasing the Lease). SIGKILL is a crash. It also exits when its stdin
 * closes: the test process that started it is gone.
 */
import { startController } from '../../../lib/controller/controller.js';
import { jsonLogger } from '../../../lib/observability/logger.js';
import type { ScriptControllerOptions } from './resilience-process.js';

const options = JSON.parse(process.argv[2] ?? '{}') as ScriptControllerOptions;
const logger = jsonLogger({ level: 'info', fields: { logger: 'recon8s' } });
process.stdin.on('end', () => process.exit(1));
process.stdin.resume();

const controller = await startController({
  kubeconfigPath: options.kubeconfigPath,
  namespaces: options.namespaces,
  leaderElection: options.leaderElection,
  metricsAddr: '127.0.0.1:0',
  healthAddr: '0',
  workers: 2,
  logger,
});
logger.info('started', { metrics: controller.health?.metricsAddress, identity: controller.elector?.identity });
await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
logger.info('shutting down', { signal: 'SIGTERM' });
await controller.stop();
logger.info('stopped');
process.stdin.destroy();
