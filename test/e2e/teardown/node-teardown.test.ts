// The real node's own teardown. It stops the shared node, so the test runner (test/run.ts) runs this
// file alone, after every other end-to-end lane has finished with the node.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../../integration/eventually.js';
import { nodeLeftovers, nodeSysctls, sysctlsBeforeNode } from '../../node/host-state.js';
import { NODE_HOOK_TIMEOUT_MS, stopTheNode, useSharedNode } from '../cluster.js';

describe('the real node, taken down', function () {
  useSharedNode();

  it('leaves the host as it was when the process that started it is killed (SIGKILL), and on stop', async function () {
    this.timeout(NODE_HOOK_TIMEOUT_MS);
    // The shared node, stopped the ordinary way.
    const before = sysctlsBeforeNode();
    await stopTheNode();
    assert.deepEqual(nodeLeftovers(), []);
    const after = nodeSysctls();
    for (const [name, value] of Object.entries(before))
      if (value !== '') assert.equal(after[name], value, `sysctl ${name} restored`);

    // A node whose owner dies without a word: its watchdog takes it down.
    const script = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node', 'start-and-wait.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await eventually(() => assert.match(output, /ready/), {
      timeoutMs: 300_000,
      maxIntervalMs: 1000,
      description: 'the child to start a node',
    });
    assert.ok(nodeLeftovers().length > 0, "the child's node is running");
    child.kill('SIGKILL');
    await once(child, 'exit');
    await eventually(() => assert.deepEqual(nodeLeftovers(), []), {
      timeoutMs: 60_000,
      maxIntervalMs: 1000,
      description: 'the watchdog to take the node down',
    });
  });
});
