// Starts the real node and prints "ready", then waits to be killed: a test kills it with SIGKILL to
// prove the node's watchdog leaves the host clean when its owner dies without a word.
import { startNodeCluster } from './index.js';

await startNodeCluster({ onOutput: () => undefined });
process.stdout.write('ready\n');
setInterval(() => undefined, 60_000);
