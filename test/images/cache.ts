/*
 * The per-user image cache: ${XDG_CACHE_HOME:-~/.cache}/recon8s/images/<name>-<key>/, outside any
 * checkout, so every clone and CI run on the machine shares it. The key is a hash of everything
 * that decides the image (its recipe files, pinned versions, the inputs it copies), so an entry is
 * built once and is valid for ever; a new recipe gets a new entry. One build per name at a time
 * across processes (flock): a second test run waits for the first instead of building again.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The root of the image cache. */
export function imagesCacheDir(): string {
  const base =
    process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== ''
      ? process.env.XDG_CACHE_HOME
      : join(homedir(), '.cache');
  return join(base, 'recon8s', 'images');
}

/** A key from named parts; each is length-prefixed, so that no two lists of parts hash alike. */
export function contentKey(parts: Readonly<Record<string, string | Buffer>>): string {
  const h = createHash('sha256');
  for (const name of Object.keys(parts).sort()) {
    const value = parts[name] ?? '';
    const bytes = typeof value === 'string' ? Buffer.from(value) : value;
    h.update(`${name}\0${bytes.length}\0`);
    h.update(bytes);
  }
  return h.digest('hex');
}

/** sha256 (hex) and size of a file, streamed. */
export async function hashFile(path: string): Promise<{ readonly sha256: string; readonly size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const b = chunk as Buffer;
    size += b.length;
    h.update(b);
  }
  return { sha256: h.digest('hex'), size };
}

/**
 * Holds an exclusive flock(1) on `lockFile` while `fn` runs. The lock is held by a child process that
 * exits when its stdin closes: when this process dies, however it dies, the kernel closes the pipe
 * and the lock is released, so a killed build never blocks the next one.
 */
export async function withLock<T>(lockFile: string, onWait: () => void, fn: () => Promise<T>): Promise<T> {
  const holder = spawn('flock', ['--exclusive', lockFile, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  holder.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<void>((resolve) => holder.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const waiting = setTimeout(onWait, 1000);
    holder.stdout.once('data', () => {
      clearTimeout(waiting);
      resolve();
    });
    holder.once('error', (e) => {
      clearTimeout(waiting);
      reject(new Error(`cannot run flock (util-linux) to lock ${lockFile}: ${e.message}`));
    });
    holder.once('exit', (code) => {
      clearTimeout(waiting);
      reject(new Error(`flock ${lockFile} exited with code ${code}: ${stderr.trim()}`));
    });
  });
  try {
    return await fn();
  } finally {
    holder.stdin.end();
    await exited;
  }
}

export interface CachedBuildOptions {
  /** The image (or intermediate) name: entries are <name>-<key>. */
  readonly name: string;
  readonly key: string;
  /** Fills `dir` (empty, created); on success it becomes the cache entry in one rename. */
  readonly build: (dir: string) => Promise<void>;
  readonly log: (line: string) => void;
  /** The cache root (default imagesCacheDir()). */
  readonly root?: string;
}

/** How many entries of one name stay in the cache: the newest by last use. */
const KEEP_PER_NAME = 3;

/** Returns the cache entry for name+key, building it first when it is not there yet. */
export async function cachedBuild(
  opts: CachedBuildOptions,
): Promise<{ readonly dir: string; readonly builtInMs: number | undefined }> {
  const root = opts.root ?? imagesCacheDir();
  const entry = `${opts.name}-${opts.key.slice(0, 24)}`;
  const dir = join(root, entry);
  if (await exists(dir)) {
    await touch(dir);
    return { dir, builtInMs: undefined };
  }
  await mkdir(root, { recursive: true });
  return withLock(
    join(root, `.${opts.name}.lock`),
    () => opts.log(`${opts.name}: another process is building it; waiting for it`),
    async () => {
      if (await exists(dir)) return { dir, builtInMs: undefined };
      // Leftovers of a build that died: nobody else builds this name while the lock is held.
      for (const e of await readdir(root))
        if (e.startsWith(`${opts.name}-`) && e.includes('.partial-')) await removeTree(join(root, e));
      const partial = join(root, `${entry}.partial-${process.pid}`);
      await mkdir(partial);
      const started = Date.now();
      try {
        await opts.build(partial);
        await rename(partial, dir);
      } catch (e) {
        await removeTree(partial);
        throw e;
      }
      await prune(root, opts.name, entry);
      return { dir, builtInMs: Date.now() - started };
    },
  );
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function touch(path: string): Promise<void> {
  const now = new Date();
  await utimes(path, now, now).catch(() => undefined);
}

/**
 * rm -rf, after detaching whatever is mounted beneath the path: a build killed while its chroot had
 * /proc mounted, or someone's data directory bind-mounted into a mysql root file system, must never
 * be deleted through the mount.
 */
async function removeTree(path: string): Promise<void> {
  const mounts = (await readFile('/proc/self/mounts', 'utf8').catch(() => ''))
    .split('\n')
    .map((l) => (l.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((m) => m === path || m.startsWith(`${path}/`));
  for (const m of mounts.reverse()) {
    await new Promise<void>((resolve) =>
      spawn('umount', ['-l', m], { stdio: 'ignore' })
        .once('close', () => resolve())
        .once('error', () => resolve()),
    );
  }
  const still = (await readFile('/proc/self/mounts', 'utf8').catch(() => ''))
    .split('\n')
    .some((l) => (l.split(' ')[1] ?? '').startsWith(`${path}/`));
  if (still) throw new Error(`${path} still has file systems mounted beneath it; not removing it`);
  await rm(path, { recursive: true, force: true, maxRetries: 2 });
}

/** Keeps the KEEP_PER_NAME most recently used complete entries of `name`, `current` among them. */
async function prune(root: string, name: string, current: string): Promise<void> {
  const pattern = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-[0-9a-f]{24}$`);
  const entries = await Promise.all(
    (await readdir(root))
      .filter((e) => pattern.test(e) && e !== current)
      .map(async (e) => ({ e, used: (await stat(join(root, e))).mtimeMs })),
  );
  entries.sort((a, b) => b.used - a.used);
  for (const { e } of entries.slice(KEEP_PER_NAME - 1)) await removeTree(join(root, e));
}
