// `recon8s rotate-credentials app|mysqlcluster NAME`: asks for a zero-downtime rotation of an App's
// database password, or of a MySQLCluster's own accounts (root, replication, the controller's, clone, backup). The
// request is only recorded on the resource (an annotation holding a fresh token); the controller performs
// it (lib/mysql/password-rotation.ts, lib/mysql/credential-rotation.ts), and --wait follows the phases the resource's
// status reports until that token is completed. No password is ever read or printed here: the command
// never looks at a Secret.
import { randomBytes } from 'node:crypto';
import type { AppStatus, KindDefinition, MySQLCredentialRotationStatus } from '../../constructs/index.js';
import { APP, MYSQL_CLUSTER, ROTATE_CREDENTIALS_ANNOTATION } from '../../constructs/index.js';
import type { ClusterAccount } from '../mysql/credential-rotation.js';
import { CLUSTER_ACCOUNTS, formatRotationRequest } from '../mysql/credential-rotation.js';
import type { KubeClient } from '../kube/index.js';
import { HttpMethod, apiError } from '../kube/index.js';
import { connect, describeApiError } from './diff-command.js';
import { formatDuration, parseDuration } from './duration.js';
import { UsageError } from './usage-error.js';

export const ROTATE_USAGE = `Usage: recon8s rotate-credentials app NAME [-n NAMESPACE] [--kubeconfig PATH] [--wait] [--timeout DURATION]
       recon8s rotate-credentials mysqlcluster NAME [--account ACCOUNT]... [-n NAMESPACE] [--kubeconfig PATH]
                                  [--wait] [--timeout DURATION]

Rotates passwords without downtime, with MySQL's dual passwords: each new password is generated into the
Secret, set on its account with the current one retained, the Secret switched to it, and the old one
discarded only once everything that used it has moved. No password is printed. The controller performs
it; this records the request.

app NAME: the App's database password (its spec.database binding). Its pods are restarted with the new
password before the old one is discarded.

mysqlcluster NAME: the cluster's own accounts: root, replication, admin (the controller's
recon8s-admin), clone (recon8s-clone, which new members clone as) and backup (recon8s-backup, the backup
and binary-log jobs'); --account picks some of them (repeat it; default: all). Replicas are re-pointed to
the new replication password one at a time, with no restart; the old passwords are discarded once the
controller, every member's agent (which reads the mounted Secret) and every replica use the new ones, no
member is still bootstrapping and no backup job started with the old backup password still runs. Only a
Secret recon8s generated is rotated: one named in spec.credentialsSecretName is yours.

--wait follows the phases until the old passwords are refused (--timeout: e.g. 90s, 10m; default 10m):
exit 0 done, 1 not done in time (the rotation goes on) or refused. Without --wait, exit 0 once requested.
`;

export const ROTATE_OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  account: { type: 'string', multiple: true },
  wait: { type: 'boolean', default: false },
  timeout: { type: 'string', default: '10m' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Rotation = NonNullable<AppStatus['credentialRotation']> | MySQLCredentialRotationStatus;

interface Subject {
  readonly spec?: { readonly database?: unknown; readonly credentialsSecretName?: unknown };
  readonly status?: { readonly credentialRotation?: Rotation };
}

/** What differs between rotating an App's password and a MySQLCluster's accounts. */
interface Kind {
  readonly definition: KindDefinition;
  /** Why it cannot be rotated, from the resource alone; undefined when it can. */
  readonly refusal: (name: string, resource: Subject) => string | undefined;
  readonly what: string;
  readonly done: string;
}

const KINDS: Readonly<Record<'app' | 'mysqlcluster', Kind>> = {
  app: {
    definition: APP,
    refusal: (name, app) =>
      app.spec?.database === undefined
        ? `App ${name} has no database binding (spec.database): it has no password to rotate`
        : undefined,
    what: 'the database password of App',
    done: 'Completed: the old password is refused; every pod runs with the new one',
  },
  mysqlcluster: {
    definition: MYSQL_CLUSTER,
    refusal: (name, cluster) =>
      typeof cluster.spec?.credentialsSecretName === 'string'
        ? `MySQLCluster ${name} takes its passwords from Secret ${cluster.spec.credentialsSecretName} (spec.credentialsSecretName), which recon8s only reads: change them where that Secret comes from`
        : undefined,
    what: 'the accounts of MySQLCluster',
    done: 'Completed: the old passwords are refused; the controller, every agent and every replica use the new ones',
  },
};

function path(definition: KindDefinition, namespace: string, name: string): string {
  return `/apis/${definition.group}/${definition.version}/namespaces/${namespace}/${definition.plural}/${encodeURIComponent(name)}`;
}

/** The accounts --account names (all three when none): a usage error for one that is not a cluster account. */
export function accountsOf(named: readonly string[] | undefined): readonly ClusterAccount[] {
  if (named === undefined || named.length === 0) return CLUSTER_ACCOUNTS;
  const wrong = named.filter((a) => !(CLUSTER_ACCOUNTS as readonly string[]).includes(a));
  if (wrong.length > 0)
    throw new UsageError(
      `--account takes ${CLUSTER_ACCOUNTS.join(', ')}; got ${wrong.map((w) => JSON.stringify(w)).join(', ')}`,
      ROTATE_USAGE,
    );
  return CLUSTER_ACCOUNTS.filter((a) => named.includes(a));
}

/** A token no earlier request has: the time, and random digits for two requests in one millisecond. */
export function rotationToken(now: Date, random: () => string = () => randomBytes(3).toString('hex')): string {
  return `${now.toISOString().replace(/[:.]/g, '').toLowerCase()}-${random()}`;
}

/** Why an App's password cannot be rotated, from the resource alone: undefined when it can. */
export function rotationRefusal(name: string, app: Subject): string | undefined {
  return KINDS.app.refusal(name, app);
}

/** What --wait prints of a status it reads: the phase when it changed, done when the token completed. */
export function rotationProgress(
  token: string,
  status: Rotation | undefined,
  lastPhase: string | undefined,
  doneLine = KINDS.app.done,
): { readonly line?: string; readonly phase?: string; readonly done: boolean; readonly refused?: boolean } {
  if (status?.completed === token) return { line: doneLine, done: true };
  // Until the controller has seen this request, the status speaks of an earlier one.
  const waiting = { done: false, ...(lastPhase !== undefined ? { phase: lastPhase } : {}) };
  if (status?.requested !== token || status.phase === undefined || status.phase === lastPhase) return waiting;
  return {
    line: `${status.phase}: ${status.message ?? ''}`.trimEnd(),
    phase: status.phase,
    done: false,
    ...(status.phase === 'Refused' ? { refused: true } : {}),
  };
}

export async function rotateCredentialsCommand(
  o: {
    kind: string;
    name: string;
    namespace?: string;
    kubeconfig?: string;
    account?: string[];
    wait: boolean;
    timeout: string;
  },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  now: () => Date = () => new Date(),
  pollMs = 1000,
): Promise<number> {
  const kindName = o.kind.toLowerCase();
  if (kindName !== 'app' && kindName !== 'mysqlcluster')
    throw new UsageError(`rotate-credentials takes "app NAME" or "mysqlcluster NAME", got "${o.kind}"`, ROTATE_USAGE);
  if (kindName === 'app' && o.account !== undefined)
    throw new UsageError("--account is for a MySQLCluster's accounts: an App has one", ROTATE_USAGE);
  const accounts = kindName === 'mysqlcluster' ? accountsOf(o.account) : undefined;
  const kind = KINDS[kindName];
  const timeoutMs = parseDuration(o.timeout, ROTATE_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  const name = `${namespace}/${o.name}`;
  const at = path(kind.definition, namespace, o.name);
  try {
    const resource = await client.requestJson<Subject>({ path: at });
    const refusal = kind.refusal(name, resource);
    if (refusal) {
      err.write(`Refused: ${refusal}\n`);
      return 1;
    }
    const token = rotationToken(now());
    const value = accounts ? formatRotationRequest({ token, accounts }) : token;
    await client.request({
      method: HttpMethod.PATCH,
      path: at,
      body: JSON.stringify({ metadata: { annotations: { [ROTATE_CREDENTIALS_ANNOTATION]: value } } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    out.write(
      `requested a rotation of ${kind.what} ${name}${accounts ? ` (${accounts.join(', ')})` : ''} (${token})\n`,
    );
    if (!o.wait) return 0;
    const deadline = Date.now() + timeoutMs;
    let phase: string | undefined;
    while (Date.now() < deadline) {
      const status = (await client.requestJson<Subject>({ path: at })).status;
      const p = rotationProgress(token, status?.credentialRotation, phase, kind.done);
      if (p.line) out.write(`${p.line}\n`);
      if (p.done) return 0;
      if (p.refused) return 1;
      phase = p.phase;
      await new Promise((r) => setTimeout(r, pollMs));
    }
    err.write(
      `not completed within ${formatDuration(timeoutMs)}${phase ? ` (last phase: ${phase})` : ': is the recon8s controller running?'}; the rotation goes on: kubectl get ${kindName} ${o.name} -n ${namespace} -o jsonpath='{.status.credentialRotation}'\n`,
    );
    return 1;
  } catch (e) {
    return failed(e, client, kind.definition.kind, `${namespace}/${o.name}`, err);
  } finally {
    await client.close();
  }
}

function failed(e: unknown, client: KubeClient, kind: string, name: string, err: NodeJS.WritableStream): number {
  err.write(
    `error: ${apiError(e).code === 404 ? `${kind} ${name} does not exist` : describeApiError(e, client, `reading ${kind} ${name}`)}\n`,
  );
  return 2;
}
