// `recon8s rotate-credentials app NAME`: asks for a zero-downtime rotation of an App's database password.
// The request is only recorded on the App (an annotation holding a fresh token); the controllers perform
// it (lib/mysql/rotation.ts), and --wait follows the phases the App's status reports until that token
// is completed. No password is ever read or printed here: the command never looks at the Secret.
import { randomBytes } from 'node:crypto';
import type { AppStatus } from '../../constructs/index.js';
import { APP, ROTATE_CREDENTIALS_ANNOTATION } from '../../constructs/index.js';
import type { KubeClient } from '../kube/index.js';
import { HttpMethod, apiError } from '../kube/index.js';
import { connect, describeApiError } from './diff-command.js';
import { formatDuration, parseDuration } from './duration.js';
import { UsageError } from './usage-error.js';

export const ROTATE_USAGE = `Usage: recon8s rotate-credentials app NAME [-n NAMESPACE] [--kubeconfig PATH] [--wait] [--timeout DURATION]

Rotates the database password of App NAME (its spec.database binding) without downtime, with MySQL's
dual passwords: a new password is generated into the App's Secret, set on its account with the current
one retained, the Secret switched to it, the App's pods restarted with it, and only then is the old one
discarded. No password is printed. The controller performs it; this records the request.
--wait follows the phases until the old password is refused (--timeout: e.g. 90s, 10m; default 10m):
exit 0 done, 1 not done in time (the rotation goes on). Without --wait, exit 0 once requested.
MySQLCluster accounts (root, replication, the controller's) are not rotated by this command yet.
`;

export const ROTATE_OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  wait: { type: 'boolean', default: false },
  timeout: { type: 'string', default: '10m' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Rotation = NonNullable<AppStatus['credentialRotation']>;

interface AppSubject {
  readonly spec?: { readonly database?: unknown };
  readonly status?: Pick<AppStatus, 'credentialRotation'>;
}

function path(namespace: string, name: string): string {
  return `/apis/${APP.group}/${APP.version}/namespaces/${namespace}/${APP.plural}/${encodeURIComponent(name)}`;
}

/** A token no earlier request has: the time, and random digits for two requests in one millisecond. */
export function rotationToken(now: Date, random: () => string = () => randomBytes(3).toString('hex')): string {
  return `${now.toISOString().replace(/[:.]/g, '').toLowerCase()}-${random()}`;
}

/** Why an App's password cannot be rotated, from the resource alone: undefined when it can. */
export function rotationRefusal(name: string, app: AppSubject): string | undefined {
  if (app.spec?.database === undefined)
    return `App ${name} has no database binding (spec.database): it has no password to rotate`;
  return undefined;
}

/** What --wait prints of a status it reads: the phase when it changed, done when the token completed. */
export function rotationProgress(
  token: string,
  status: Rotation | undefined,
  lastPhase: string | undefined,
): { readonly line?: string; readonly phase?: string; readonly done: boolean } {
  if (status?.completed === token)
    return { line: `Completed: the old password is refused; every pod runs with the new one`, done: true };
  // Until the controller has seen this request, the status speaks of an earlier one.
  const waiting = { done: false, ...(lastPhase !== undefined ? { phase: lastPhase } : {}) };
  if (status?.requested !== token || status.phase === undefined || status.phase === lastPhase) return waiting;
  return { line: `${status.phase}: ${status.message ?? ''}`.trimEnd(), phase: status.phase, done: false };
}

export async function rotateCredentialsCommand(
  o: { kind: string; name: string; namespace?: string; kubeconfig?: string; wait: boolean; timeout: string },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  now: () => Date = () => new Date(),
  pollMs = 1000,
): Promise<number> {
  if (o.kind !== 'app')
    throw new UsageError(
      o.kind.toLowerCase() === 'mysqlcluster'
        ? "a MySQLCluster's own accounts (root, replication, the controller's) are not rotated yet: only an App's"
        : `rotate-credentials takes "app NAME", got "${o.kind}"`,
      ROTATE_USAGE,
    );
  const timeoutMs = parseDuration(o.timeout, ROTATE_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  const name = `${namespace}/${o.name}`;
  try {
    const app = await client.requestJson<AppSubject>({ path: path(namespace, o.name) });
    const refusal = rotationRefusal(name, app);
    if (refusal) {
      err.write(`Refused: ${refusal}\n`);
      return 1;
    }
    const token = rotationToken(now());
    await client.request({
      method: HttpMethod.PATCH,
      path: path(namespace, o.name),
      body: JSON.stringify({ metadata: { annotations: { [ROTATE_CREDENTIALS_ANNOTATION]: token } } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    out.write(`requested a rotation of the database password of App ${name} (${token})\n`);
    if (!o.wait) return 0;
    const deadline = Date.now() + timeoutMs;
    let phase: string | undefined;
    while (Date.now() < deadline) {
      const status = (await client.requestJson<AppSubject>({ path: path(namespace, o.name) })).status;
      const p = rotationProgress(token, status?.credentialRotation, phase);
      if (p.line) out.write(`${p.line}\n`);
      if (p.done) return 0;
      phase = p.phase;
      await new Promise((r) => setTimeout(r, pollMs));
    }
    err.write(
      `not completed within ${formatDuration(timeoutMs)}${phase ? ` (last phase: ${phase})` : ': is the recon8s controller running?'}; the rotation goes on: kubectl get app ${o.name} -n ${namespace} -o jsonpath='{.status.credentialRotation}'\n`,
    );
    return 1;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

function failed(e: unknown, client: KubeClient, namespace: string, name: string, err: NodeJS.WritableStream): number {
  err.write(
    `error: ${apiError(e).code === 404 ? `App ${namespace}/${name} does not exist` : describeApiError(e, client, `reading App ${namespace}/${name}`)}\n`,
  );
  return 2;
}
