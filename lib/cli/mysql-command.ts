// `recon8s switchover NAME` and `recon8s status NAME`: the two MySQLCluster commands. A switchover is
// only recorded on the resource (an annotation); the controller performs it, so that one authority
// moves the primary, and the command waits for the outcome it reports in status.
import { HttpMethod } from '../kube/index.js';
import type { MySQLClusterStatus } from '../../constructs/index.js';
import { MYSQL_CLUSTER, MYSQL_SWITCHOVER_ANNOTATION } from '../../constructs/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError } from '../kube/index.js';
import { connect, describeApiError } from './diff-command.js';
import { formatTable } from './table.js';
import { formatDuration, parseDuration } from './duration.js';
import { UsageError } from './usage-error.js';

export const SWITCHOVER_USAGE = `Usage: recon8s switchover NAME [--to POD] [-n NAMESPACE] [--kubeconfig PATH] [--timeout DURATION]

Asks the controller to move the primary of MySQLCluster NAME to POD (default: the healthiest
replica): the primary stops taking writes, POD applies everything it had, POD becomes the primary and
the others follow it. Waits for the outcome (--timeout: e.g. 90s, 5m; default 2m): exit 0 done, 1
refused (at once when the cluster has no other member, or POD is not one of its replicas), failed or
timed out (the request is then withdrawn).
`;

export const STATUS_USAGE = `Usage: recon8s status NAME [-n NAMESPACE] [--kubeconfig PATH]

Prints the topology of MySQLCluster NAME as the controller last saw it: the primary, each member's
role, whether it answers and replicates, errant transactions, and the conditions.
`;

export const MYSQL_COMMAND_OPTIONS = {
  to: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  timeout: { type: 'string', default: '2m' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ClusterStatus = Pick<MySQLClusterStatus, 'currentPrimary' | 'members' | 'switchover' | 'conditions'>;

function path(namespace: string, name: string): string {
  return `/apis/${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}/namespaces/${namespace}/${MYSQL_CLUSTER.plural}/${name}`;
}

async function readStatus(client: KubeClient, namespace: string, name: string): Promise<ClusterStatus> {
  const cluster = await client.requestJson<{ status?: ClusterStatus }>({ path: path(namespace, name) });
  return cluster.status ?? {};
}

export async function switchoverCommand(
  o: { name: string; to?: string; namespace?: string; kubeconfig?: string; timeout: string },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  now: () => Date = () => new Date(),
): Promise<number> {
  const timeoutMs = parseDuration(o.timeout, SWITCHOVER_USAGE);
  if (o.to !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(o.to))
    throw new UsageError(`--to must be a pod name, got "${o.to}"`, SWITCHOVER_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  const requestId = `${o.to ? `${o.to}@` : ''}${now().toISOString()}`;
  try {
    const cluster = await client.requestJson<SwitchoverSubject>({ path: path(namespace, o.name) });
    const refusal = switchoverRefusal(`${namespace}/${o.name}`, cluster, o.to);
    if (refusal) {
      err.write(`Refused: ${refusal}\n`);
      return 1;
    }
    await client.request({
      method: HttpMethod.PATCH,
      path: path(namespace, o.name),
      body: JSON.stringify({ metadata: { annotations: { [MYSQL_SWITCHOVER_ANNOTATION]: requestId } } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    out.write(
      `requested a switchover of MySQLCluster ${namespace}/${o.name}${o.to ? ` to ${o.to}` : ''} (${requestId})\n`,
    );
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const status = await readStatus(client, namespace, o.name);
      if (status.switchover?.requestId === requestId) {
        const ok = status.switchover.outcome === 'Done';
        (ok ? out : err).write(`${status.switchover.outcome}: ${status.switchover.message}\n`);
        return ok ? 0 : 1;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const withdrawn = await withdraw(client, namespace, o.name, requestId);
    err.write(
      `no outcome within ${formatDuration(timeoutMs)}: is the recon8s controller running?${withdrawn ? ' The request was withdrawn.' : ''}\n`,
    );
    return 1;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

/** What a switchover request is judged by before it is made. */
interface SwitchoverSubject {
  readonly metadata?: { readonly resourceVersion?: string; readonly annotations?: Record<string, string> };
  readonly spec?: { readonly replicas?: number };
  readonly status?: ClusterStatus;
}

/**
 * Why a switchover cannot happen, judged from the resource alone (the controller judges the rest:
 * a candidate with errant transactions, one that does not answer): undefined when it may.
 */
export function switchoverRefusal(
  name: string,
  cluster: SwitchoverSubject,
  to: string | undefined,
): string | undefined {
  // The API server fills spec.replicas in from the CRD schema's default.
  const replicas = cluster.spec?.replicas;
  if (replicas !== undefined && replicas < 2)
    return `MySQLCluster ${name} has ${replicas} member${replicas === 1 ? '' : 's'}: there is no replica to switch over to`;
  if (to === undefined) return undefined;
  const members = (cluster.status?.members ?? []).map((m) => m.name);
  if (to === cluster.status?.currentPrimary) return `${to} is the primary of MySQLCluster ${name} already`;
  if (members.length > 0 && !members.includes(to))
    return `${to} is not a member of MySQLCluster ${name} (its members: ${members.join(', ')})`;
  return undefined;
}

/** Removes the request if it is still this one (never someone else's newer one); whether it did. */
async function withdraw(client: KubeClient, namespace: string, name: string, requestId: string): Promise<boolean> {
  const cluster = await client.requestJson<SwitchoverSubject>({ path: path(namespace, name) });
  if (cluster.metadata?.annotations?.[MYSQL_SWITCHOVER_ANNOTATION] !== requestId) return false;
  await client.request({
    method: HttpMethod.PATCH,
    path: path(namespace, name),
    // The resourceVersion makes it conditional: a request made meanwhile is never removed.
    body: JSON.stringify({
      metadata: {
        resourceVersion: cluster.metadata.resourceVersion,
        annotations: { [MYSQL_SWITCHOVER_ANNOTATION]: null },
      },
    }),
    headers: { 'Content-Type': 'application/merge-patch+json' },
  });
  return true;
}

/** An API error as the commands report it (exit code 2). */
function failed(e: unknown, client: KubeClient, namespace: string, name: string, err: NodeJS.WritableStream): number {
  err.write(
    `error: ${apiError(e).code === 404 ? `MySQLCluster ${namespace}/${name} does not exist` : describeApiError(e, client, `reading MySQLCluster ${namespace}/${name}`)}\n`,
  );
  return 2;
}

export async function statusCommand(
  o: { name: string; namespace?: string; kubeconfig?: string },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  try {
    out.write(formatTopology(`${namespace}/${o.name}`, await readStatus(client, namespace, o.name)));
    return 0;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

/** The topology as a table, then the conditions that are not as expected. */
export function formatTopology(name: string, status: ClusterStatus): string {
  const rows = [['MEMBER', 'ROLE', 'ANSWERS', 'WRITABLE', 'REPLICATING', 'NOTE']];
  for (const m of status.members ?? [])
    rows.push([
      m.name,
      m.role,
      m.reachable ? 'yes' : 'no',
      m.writable === undefined ? '-' : m.writable ? 'yes' : 'no',
      m.replicating === undefined ? '-' : m.replicating ? 'yes' : 'no',
      m.errantTransactions ? `errant: ${m.errantTransactions}` : (m.message ?? ''),
    ]);
  const table = formatTable(rows);
  const conditions = (status.conditions ?? [])
    .map((c) => `${c.type}=${c.status} ${c.reason}${c.message ? `: ${c.message}` : ''}`)
    .join('\n');
  return `MySQLCluster ${name}: primary ${status.currentPrimary ?? '(none yet)'}\n${table}\n${conditions ? `\n${conditions}\n` : ''}`;
}
