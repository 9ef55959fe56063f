import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ExecConfig, UserConfig } from './kubeconfig.js';

/** What one request carries to prove who it is. */
export interface Credentials {
  /** The `Authorization` header, if any. */
  readonly authorization?: string;
  /** PEM client certificate and key, if the identity is a certificate. */
  readonly certPem?: string;
  readonly keyPem?: string;
}

export interface Authenticator {
  credentials(): Promise<Credentials>;
  /** The API server said 401: whatever was cached (an exec plugin's token) is fetched again next time. */
  unauthorized(): void;
}

/** How often a token file is read again (client-go reloads bound service account tokens each minute). */
export const TOKEN_FILE_REFRESH_MS = 60_000;
/** An exec credential is fetched again this long before it expires. */
const EXEC_EXPIRY_MARGIN_MS = 10_000;
const EXEC_TIMEOUT_MS = 60_000;

export interface AuthEnvironment {
  readonly now: () => number;
  readonly readFile: (path: string) => string;
  readonly runPlugin: (exec: ExecConfig, input: string) => Promise<string>;
}

const machine: AuthEnvironment = {
  now: Date.now,
  readFile: (p) => readFileSync(p, 'utf8'),
  runPlugin: runExecPlugin,
};

/** The authenticator a kubeconfig user describes. Static material is read once; tokens and plugins as needed. */
export function authenticatorFor(user: UserConfig, environment: AuthEnvironment = machine): Authenticator {
  const certPem = pem(user.clientCertificateData, user.clientCertificate, environment);
  const keyPem = pem(user.clientKeyData, user.clientKey, environment);
  if ((certPem === undefined) !== (keyPem === undefined))
    throw new Error(`kube: user ${user.name} has a client certificate without a key, or a key without a certificate`);
  const tls = certPem !== undefined && keyPem !== undefined ? { certPem, keyPem } : {};

  if (user.exec !== undefined) return execAuthenticator(user.exec, tls, environment);
  if (user.token !== undefined) {
    const fixed: Credentials = { authorization: `Bearer ${user.token}`, ...tls };
    return { credentials: () => Promise.resolve(fixed), unauthorized: () => undefined };
  }
  if (user.tokenFile !== undefined) return tokenFileAuthenticator(user.tokenFile, tls, environment);
  if (user.username !== undefined && user.password !== undefined) {
    const basic = Buffer.from(`${user.username}:${user.password}`).toString('base64');
    const fixed: Credentials = { authorization: `Basic ${basic}`, ...tls };
    return { credentials: () => Promise.resolve(fixed), unauthorized: () => undefined };
  }
  return { credentials: () => Promise.resolve(tls), unauthorized: () => undefined };
}

function pem(data: string | undefined, path: string | undefined, environment: AuthEnvironment): string | undefined {
  if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
  if (path !== undefined) return environment.readFile(path);
  return undefined;
}

function tokenFileAuthenticator(path: string, tls: Credentials, environment: AuthEnvironment): Authenticator {
  let cached: { authorization: string; readAt: number } | undefined;
  return {
    credentials() {
      const now = environment.now();
      if (cached === undefined || now - cached.readAt >= TOKEN_FILE_REFRESH_MS) {
        const token = environment.readFile(path).trim();
        if (token === '') throw new Error(`kube: token file ${path} is empty`);
        cached = { authorization: `Bearer ${token}`, readAt: now };
      }
      return Promise.resolve({ ...tls, authorization: cached.authorization });
    },
    unauthorized() {
      cached = undefined;
    },
  };
}

/** The `status` of an ExecCredential a plugin printed. */
interface ExecStatus {
  readonly token?: string;
  readonly clientCertificateData?: string;
  readonly clientKeyData?: string;
  readonly expirationTimestamp?: string;
}

function execAuthenticator(exec: ExecConfig, tls: Credentials, environment: AuthEnvironment): Authenticator {
  let cached: { credentials: Credentials; expiresAt: number } | undefined;
  let running: Promise<Credentials> | undefined;
  const input = JSON.stringify({
    apiVersion: exec.apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false },
  });
  const fetchCredentials = async (): Promise<Credentials> => {
    const out = await environment.runPlugin(exec, input);
    const status = parseExecCredential(out, exec);
    const credentials: Credentials = {
      ...tls,
      ...(status.token !== undefined ? { authorization: `Bearer ${status.token}` } : {}),
      ...(status.clientCertificateData !== undefined && status.clientKeyData !== undefined
        ? { certPem: status.clientCertificateData, keyPem: status.clientKeyData }
        : {}),
    };
    const expiry = status.expirationTimestamp !== undefined ? Date.parse(status.expirationTimestamp) : NaN;
    cached = {
      credentials,
      expiresAt: Number.isFinite(expiry) ? expiry - EXEC_EXPIRY_MARGIN_MS : Number.POSITIVE_INFINITY,
    };
    return credentials;
  };
  return {
    credentials() {
      if (cached !== undefined && environment.now() < cached.expiresAt) return Promise.resolve(cached.credentials);
      // Concurrent requests share one run of the plugin.
      running ??= fetchCredentials().finally(() => {
        running = undefined;
      });
      return running;
    },
    unauthorized() {
      cached = undefined;
    },
  };
}

/** Parses what an exec plugin printed; the error names the plugin, never the output (it holds secrets). */
export function parseExecCredential(stdout: string, exec: ExecConfig): ExecStatus {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    throw new Error(`kube: exec plugin ${exec.command} printed no JSON ExecCredential`);
  }
  const status = (parsed as { status?: unknown } | null)?.status;
  if (typeof status !== 'object' || status === null)
    throw new Error(`kube: exec plugin ${exec.command} printed an ExecCredential without status`);
  const s = status as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof s[k] === 'string' && s[k] !== '' ? s[k] : undefined);
  const result: ExecStatus = {
    ...(str('token') !== undefined ? { token: str('token') } : {}),
    ...(str('clientCertificateData') !== undefined ? { clientCertificateData: str('clientCertificateData') } : {}),
    ...(str('clientKeyData') !== undefined ? { clientKeyData: str('clientKeyData') } : {}),
    ...(str('expirationTimestamp') !== undefined ? { expirationTimestamp: str('expirationTimestamp') } : {}),
  };
  if (result.token === undefined && (result.clientCertificateData === undefined || result.clientKeyData === undefined))
    throw new Error(`kube: exec plugin ${exec.command} returned neither a token nor a client certificate and key`);
  return result;
}

function runExecPlugin(exec: ExecConfig, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: input };
    for (const e of exec.env) env[e.name] = e.value;
    execFile(
      exec.command,
      [...exec.args],
      { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 4 * 2 ** 20, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) {
          const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
          const hint = missing && exec.installHint ? `: ${exec.installHint.trim()}` : '';
          // stderr is the plugin's own diagnostics; stdout may hold a credential and is never shown.
          const said = stderr.trim().split('\n').slice(-3).join(' ');
          reject(
            new Error(
              `kube: exec plugin ${exec.command} ${missing ? 'was not found' : `failed (${error.message.split('\n')[0] ?? ''})`}${hint}${said && !missing ? `: ${said}` : ''}`,
            ),
          );
          return;
        }
        resolve(stdout);
      },
    );
  });
}
