// helm for the tests: built once per machine from the Go module proxy (build-helm.sh) into the per-user cache.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BUILD_SCRIPT = fileURLToPath(new URL('./build-helm.sh', import.meta.url));

/** The path of the helm binary, building it first when the cache lacks it (minutes, once); throws saying why it cannot. */
export function helmBinary(): string {
  const r = spawnSync('bash', [BUILD_SCRIPT], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 30 * 60_000,
  });
  const path = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || path === '')
    throw new Error(`helm could not be built (${BUILD_SCRIPT} exited ${r.status ?? r.signal}); see its output above`);
  return path;
}
