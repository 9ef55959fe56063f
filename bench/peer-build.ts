import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, readdir, rename } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

/** The files a Go build of the peer depends on: go.mod, go.sum and every .go file, by path. */
export async function peerSources(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (!e.name.startsWith('.') && e.name !== 'vendor' && e.name !== 'testdata') await walk(p);
      } else if (e.name === 'go.mod' || e.name === 'go.sum' || (e.name.endsWith('.go') && !e.name.endsWith('_test.go')))
        out.push(p);
    }
  };
  await walk(dir);
  if (!out.some((p) => relative(dir, p) === 'go.mod'))
    throw new Error(`--peer ${dir}: expected a Go module folder with a go.mod, found none`);
  return out.sort();
}

/** A hash of the sources' relative paths and contents: a new build exactly when a source changed. */
export async function sourceHash(dir: string, files: readonly string[]): Promise<string> {
  const h = createHash('sha256');
  for (const f of files) {
    h.update(relative(dir, f)).update('\0');
    h.update(await readFile(f)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/** Where the peer's binary for these sources lives: ~/.cache/recon8s/peers/<hash>/<name>, outside any checkout. */
export function peerBinaryPath(
  hash: string,
  name: string,
  cacheRoot = join(homedir(), '.cache/recon8s/peers'),
): string {
  return join(cacheRoot, hash, name);
}

/**
 * Builds the peer once per source hash (`go build`, the module proxy fetching its dependencies) and
 * returns the binary. A build goes to a temporary name and is renamed into place, so a concurrent or
 * interrupted build never leaves a half-written binary at the cached path.
 */
export async function buildPeer(
  dir: string,
  cacheRoot?: string,
): Promise<{ binary: string; hash: string; built: boolean; buildSeconds: number }> {
  const files = await peerSources(dir);
  const hash = await sourceHash(dir, files);
  const name = dir.split('/').filter(Boolean).pop() ?? 'peer';
  const binary = peerBinaryPath(hash, name, cacheRoot);
  try {
    await access(binary);
    return { binary, hash, built: false, buildSeconds: 0 };
  } catch {
    // not built yet
  }
  await mkdir(join(binary, '..'), { recursive: true });
  const tmp = `${binary}.tmp-${process.pid}`;
  const t0 = performance.now();
  try {
    await promisify(execFile)('go', ['build', '-o', tmp, '.'], { cwd: dir, maxBuffer: 16 * 2 ** 20 });
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr ?? '';
    throw new Error(
      `go build of the peer in ${dir} failed: ${stderr.trim().split('\n').slice(-10).join('\n') || (e instanceof Error ? e.message : String(e))}`,
      { cause: e },
    );
  }
  await rename(tmp, binary);
  return { binary, hash, built: true, buildSeconds: Math.round((performance.now() - t0) / 100) / 10 };
}
