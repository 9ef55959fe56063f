/*
 * A real S3-compatible object store for the tests: versitygw (built once per machine from the Go module
 * proxy by build-versitygw.sh into the per-user cache) serving a temporary directory through its posix
 * backend. Never a mock: what an S3 server accepts or refuses is decided by one.
 *
 *   const s3 = await startS3Server({ host: '127.0.0.1' });
 *   await s3.createBucket('backups');
 *   ... s3.endpoint, s3.accessKeyId, s3.secretAccessKey, s3.region, rcloneEnvironment(s3) ...
 *   await s3.stop();
 *
 * Like the control plane's processes, the server runs in its own process group, and
 * test/controlplane/lifecycle.ts ties that group to this Node process: stop(), the exit and signal
 * handlers, and a watchdog shell for SIGKILL/OOM. A directory left by a process that died even so is
 * reaped by the next start.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Ownership } from '../controlplane/lifecycle.js';
import { DEFAULT_GRACE_MS, isRunning, signalGroup, stopRecordedProcess, tailOf } from '../controlplane/process.js';

/** The pinned release (build-versitygw.sh's default; RECON8S_VERSITYGW_VERSION overrides both). */
export const VERSITYGW_VERSION = process.env.RECON8S_VERSITYGW_VERSION ?? 'v1.8.0';
export const S3_REGION = 'us-east-1';

const BUILD_SCRIPT = fileURLToPath(new URL('./build-versitygw.sh', import.meta.url));
const DIR_PREFIX = 'recon8s-s3-';
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** The path of the versitygw binary, building it first when the cache lacks it (minutes, once); throws saying why it cannot. */
export function versitygwBinary(): string {
  const r = spawnSync('bash', [BUILD_SCRIPT, VERSITYGW_VERSION], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 30 * 60_000,
  });
  const path = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || path === '')
    throw new Error(
      `versitygw could not be built (${BUILD_SCRIPT} exited ${r.status ?? r.signal}); see its output above`,
    );
  return path;
}

export interface S3ServerOptions {
  /** The address to listen on: 127.0.0.1 for the host's own clients, the node's address for pods. */
  readonly host: string;
  /** A fixed port; by default a free one (another is tried when it is taken meanwhile). */
  readonly port?: number;
  /** Milliseconds to wait for the server to answer (default 30 s). */
  readonly readyTimeoutMs?: number;
}

export interface S3Server {
  /** `http://host:port`: path-style addressing, plain HTTP. */
  readonly endpoint: string;
  readonly host: string;
  readonly port: number;
  /** The root account's credentials, random per start. */
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: typeof S3_REGION;
  /** The server's stdout and stderr (its banner and one line per request). */
  readonly logPath: string;
  /** The posix backend's root: one directory per bucket, one file per object. Read it, don't write it. */
  readonly dataDir: string;
  /** Creates a bucket through the S3 API (a SigV4-signed CreateBucket as the root account); throws on any answer but 200. */
  createBucket(name: string): Promise<void>;
  /** The last lines of the log, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM, then SIGKILL after a grace period; removes the directory (data and log) unless RECON8S_KEEP_S3=1. */
  stop(): Promise<void>;
}

/**
 * rclone's whole configuration for `server` as environment variables (no config file, nothing on a
 * command line): remote `remote` (default `store`) of type s3, provider Other, path-style, the server's
 * region and credentials, and `no_check_bucket` (without it rclone answers a missing bucket by creating
 * it, as the root account may). `RCLONE_CONFIG=notfound` keeps the configuration in memory: rclone
 * then looks for no home directory or config file. `overrides` (keys without the
 * `RCLONE_CONFIG_<REMOTE>_` prefix, e.g. `SECRET_ACCESS_KEY`, `CHUNK_SIZE`) replaces or adds settings.
 */
export function rcloneEnvironment(
  server: Pick<S3Server, 'endpoint' | 'accessKeyId' | 'secretAccessKey' | 'region'>,
  remote = 'store',
  overrides: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const prefix = `RCLONE_CONFIG_${remote.toUpperCase()}_`;
  const settings: Record<string, string> = {
    TYPE: 's3',
    PROVIDER: 'Other',
    ENDPOINT: server.endpoint,
    ACCESS_KEY_ID: server.accessKeyId,
    SECRET_ACCESS_KEY: server.secretAccessKey,
    REGION: server.region,
    FORCE_PATH_STYLE: 'true',
    NO_CHECK_BUCKET: 'true',
    ...overrides,
  };
  return {
    RCLONE_CONFIG: 'notfound',
    ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [prefix + k, v])),
  };
}

/** Starts versitygw on `host` with a fresh, empty posix root and random root credentials; resolves once it answers. */
export async function startS3Server(options: S3ServerOptions): Promise<S3Server> {
  const binary = versitygwBinary();
  await reapStaleDirs();
  const keep = process.env.RECON8S_KEEP_S3 === '1';
  const dir = mkdtempSync(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const ownership = new Ownership(dir, keep);
  try {
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const logPath = join(dir, 'versitygw.log');
    const accessKeyId = `RECON8S${randomBytes(8).toString('hex').toUpperCase()}`;
    const secretAccessKey = randomBytes(24).toString('base64url');
    const attempts = options.port === undefined ? 5 : 1;
    for (let attempt = 1; ; attempt++) {
      const port = options.port ?? (await freePort(options.host));
      const started = await startOnce({
        binary,
        dir,
        dataDir,
        logPath,
        host: options.host,
        port,
        accessKeyId,
        secretAccessKey,
        ownership,
        readyTimeoutMs: options.readyTimeoutMs ?? 30_000,
      });
      if (started.ok) return started.server;
      if (!started.portTaken || attempt >= attempts) throw new Error(started.message);
    }
  } catch (error) {
    ownership.killNow();
    await ownership.release();
    throw error;
  }
}

interface StartOnce {
  readonly binary: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly logPath: string;
  readonly host: string;
  readonly port: number;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly ownership: Ownership;
  readonly readyTimeoutMs: number;
}

type Started =
  | { readonly ok: true; readonly server: S3Server }
  | { readonly ok: false; readonly portTaken: boolean; readonly message: string };

async function startOnce(o: StartOnce): Promise<Started> {
  const address = `${o.host}:${o.port}`;
  const hostPort = o.host.includes(':') ? `[${o.host}]:${o.port}` : address;
  const endpoint = `http://${hostPort}`;
  const log = openSync(o.logPath, 'a');
  let child: ChildProcess;
  try {
    // The credentials travel in the environment only; nothing from ours (VGW_* would change the server).
    child = spawn(o.binary, ['--port', hostPort, '--region', S3_REGION, 'posix', o.dataDir], {
      detached: true,
      stdio: ['ignore', log, log],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ROOT_ACCESS_KEY_ID: o.accessKeyId,
        ROOT_SECRET_ACCESS_KEY: o.secretAccessKey,
      },
    });
  } finally {
    closeSync(log);
  }
  const pid = child.pid;
  if (pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve));
    throw new Error(`Could not start versitygw (${o.binary}): ${error.message}`, { cause: error });
  }
  o.ownership.add(pid);
  writeFileSync(join(o.dir, 'versitygw.pid'), `${pid}\n`);
  let exitStatus: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitStatus = signal ? `on ${signal}` : `with code ${String(code)}`;
      resolve();
    }),
  );
  // Whoever started it stops it; the lifecycle handlers do when they forget.
  child.unref();

  const deadline = Date.now() + o.readyTimeoutMs;
  for (;;) {
    if (exitStatus !== undefined) {
      o.ownership.remove(pid);
      const tail = tailOf(o.logPath, 20);
      return {
        ok: false,
        portTaken: /address already in use/i.test(tail),
        message: `versitygw on ${address} exited ${exitStatus} before answering; its log (${o.logPath}):\n${tail}`,
      };
    }
    // Ours, not merely a server: a signed ListBuckets with this start's random key (another server on
    // the port, which our process then failed to bind, would refuse it).
    if (await answersAsOurs(endpoint, o)) break;
    if (Date.now() > deadline) {
      await stopChild(child, pid, exited, () => exitStatus !== undefined);
      o.ownership.remove(pid);
      return {
        ok: false,
        portTaken: false,
        message: `versitygw on ${address} did not answer a signed ListBuckets within ${o.readyTimeoutMs} ms; its log (${o.logPath}):\n${tailOf(o.logPath, 20)}`,
      };
    }
    await sleep(50);
  }

  let stopped: Promise<void> | undefined;
  const server: S3Server = {
    endpoint,
    host: o.host,
    port: o.port,
    accessKeyId: o.accessKeyId,
    secretAccessKey: o.secretAccessKey,
    region: S3_REGION,
    logPath: o.logPath,
    dataDir: o.dataDir,
    createBucket: (name) => createBucket(server, name),
    tail: (lines = 40) => tailOf(o.logPath, lines),
    stop: () =>
      (stopped ??= (async () => {
        await stopChild(child, pid, exited, () => exitStatus !== undefined);
        o.ownership.remove(pid);
        // The watchdog is told goodbye; it removes the directory (unless kept).
        await o.ownership.release();
        if (process.env.RECON8S_KEEP_S3 !== '1') rmSync(o.dir, { recursive: true, force: true });
      })()),
  };
  return { ok: true, server };
}

async function stopChild(child: ChildProcess, pid: number, exited: Promise<void>, gone: () => boolean): Promise<void> {
  if (gone()) return;
  // Unreferenced, the child would let Node exit before its exit event arrives.
  child.ref();
  signalGroup(pid, 'SIGTERM');
  const cancel = new AbortController();
  const timeout = sleep(DEFAULT_GRACE_MS, 'timeout' as const, { signal: cancel.signal }).catch(
    () => 'cancelled' as const,
  );
  const first = await Promise.race([exited.then(() => 'exited' as const), timeout]);
  cancel.abort();
  if (first === 'timeout') {
    signalGroup(pid, 'SIGKILL');
    await exited;
  }
  signalGroup(pid, 'SIGKILL');
}

async function answersAsOurs(
  endpoint: string,
  credentials: Pick<S3Server, 'accessKeyId' | 'secretAccessKey'>,
): Promise<boolean> {
  try {
    const response = await s3Request({ ...credentials, region: S3_REGION, endpoint }, 'GET', '/', 1_000);
    return response.status === 200;
  } catch {
    return false;
  }
}

/** A TCP port free on `host` a moment ago. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error) =>
      reject(
        new Error(`Cannot listen on ${host} (${error.message}): is it an address of this machine?`, { cause: error }),
      ),
    );
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error(`Expected a TCP address from a listener on ${host}, got ${String(address)}.`));
      });
    });
  });
}

/** Directories of earlier runs whose Node process is gone (killed before its watchdog could act): their server, then them. */
async function reapStaleDirs(): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(tmpdir()).filter((n) => n.startsWith(DIR_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const owner = Number(/^recon8s-s3-(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(owner) || owner === process.pid || isRunning(owner)) continue;
    const dir = join(tmpdir(), name);
    let pid = NaN;
    try {
      pid = Number(readFileSync(join(dir, 'versitygw.pid'), 'utf8').trim());
    } catch {
      // Never got as far as starting the server.
    }
    // Only a process whose command line names this directory is ours to stop.
    if (Number.isInteger(pid) && pid > 0) await stopRecordedProcess(pid, dir, 0).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CreateBucket as the root account, through the S3 API (so the server decides, not the file system). */
async function createBucket(server: S3Server, name: string): Promise<void> {
  const response = await s3Request(server, 'PUT', `/${encodeURIComponent(name)}`, 10_000);
  if (response.status !== 200)
    throw new Error(`CreateBucket ${name} on ${server.endpoint} answered ${response.status}: ${response.body.trim()}`);
}

/** A request without a body or query string, signed with AWS Signature Version 4. */
async function s3Request(
  server: Pick<S3Server, 'endpoint' | 'accessKeyId' | 'secretAccessKey' | 'region'>,
  method: string,
  path: string,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  const url = new URL(path, server.endpoint);
  // fetch sends the host header itself (the same one that was signed).
  const { host: _host, ...headers } = signV4({ server, method, url, payloadSha256: EMPTY_SHA256 });
  const response = await fetch(url, { method, headers, signal: AbortSignal.timeout(timeoutMs) });
  return { status: response.status, body: await response.text() };
}

/** The headers of a SigV4-signed request without a query string (host, x-amz-date, x-amz-content-sha256, authorization). */
function signV4(r: {
  readonly server: Pick<S3Server, 'accessKeyId' | 'secretAccessKey' | 'region'>;
  readonly method: string;
  readonly url: URL;
  readonly payloadSha256: string;
}): Record<string, string> {
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    host: r.url.host,
    'x-amz-content-sha256': r.payloadSha256,
    'x-amz-date': amzDate,
  };
  const signedHeaders = Object.keys(headers).sort();
  const canonicalRequest = [
    r.method,
    r.url.pathname,
    '',
    ...signedHeaders.map((h) => `${h}:${headers[h]}`),
    '',
    signedHeaders.join(';'),
    r.payloadSha256,
  ].join('\n');
  const scope = `${day}/${r.server.region}/s3/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();
  let key = hmac(`AWS4${r.server.secretAccessKey}`, day);
  for (const part of [r.server.region, 's3', 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
  return {
    ...headers,
    authorization: `AWS4-HMAC-SHA256 Credential=${r.server.accessKeyId}/${scope}, SignedHeaders=${signedHeaders.join(';')}, Signature=${signature}`,
  };
}
