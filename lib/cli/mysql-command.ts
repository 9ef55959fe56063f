// `recon8s switchover NAME` and `recon8s status NAME`: the two MySQLCluster commands. A switchover is
// only recorded on the resource (an annotation); the controller performs it, so that one authority
// moves the primary, and the command waits for the outcome it reports in status.
import { HttpMethod } from '../kube/index.js';
import type { MySQLClusterStatus } from '../../constructs/index.js';
import { MYSQL_CLUSTER, MYSQL_SWITCHOVER_ANNOTATION } from '../../constructs/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError } from '../kube/index.js';
import { connect } from './diff-command.js';
import { formatTable } from './table.js';
import { UsageError } from './usage-error.js';

export const SWITCHOVER_USAGE = `Usage: recon8s switchover NAME [--to POD] [-n NAMESPACE] [--kubeconfig PATH] [--timeout SECONDS]

Asks the controller to move the primary of MySQLCluster NAME to POD (default: the healthiest
replica): the primary stops taking writes, POD applies everything it had, POD becomes the primary and
the others follow it. Waits for the outcome (exit 0 done, 1 refused, failed or timed out).
`;

export const STATUS_USAGE = `Usage: recon8s status NAME [-n NAMESPACE] [--kubeconfig PATH]

Prints the topology of MySQLCluster NAME as the controller last saw it: the primary, each member's
role, whether it answers and replicates, errant transactions, and the conditions.
`;

export const MYSQL_COMMAND_OPTIONS = {
  to: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  timeout: { type: 'string', default: '120' },
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
  const timeoutS = Number(o.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    throw new UsageError(`--timeout must be a positive number of seconds, got "${o.timeout}"`, SWITCHOVER_USAGE);
  if (o.to !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(o.to))
    throw new UsageError(`--to must be a pod name, got "${o.to}"`, SWITCHOVER_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  const requestId = `${o.to ? `${o.to}@` : ''}${now().toISOString()}`;
  try {
    await client.request({
      method: HttpMethod.PATCH,
      path: path(namespace, o.name),
      body: JSON.stringify({ metadata: { annotations: { [MYSQL_SWITCHOVER_ANNOTATION]: requestId } } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    out.write(
      `requested a switchover of MySQLCluster ${namespace}/${o.name}${o.to ? ` to ${o.to}` : ''} (${requestId})\n`,
    );
    const deadline = Date.now() + timeoutS * 1000;
    while (Date.now() < deadline) {
      const status = await readStatus(client, namespace, o.name);
      if (status.switchover?.requestId === requestId) {
        const ok = status.switchover.outcome === 'Done';
        (ok ? out : err).write(`${status.switchover.outcome}: ${status.switchover.message}\n`);
        return ok ? 0 : 1;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    err.write(`no outcome within ${timeoutS} s: is the recon8s controller running?\n`);
    return 1;
  } catch (e) {
    return failed(e, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

/** An API error as the commands report it (exit code 2). */
function failed(e: unknown, namespace: string, name: string, err: NodeJS.WritableStream): number {
  const info = apiError(e);
  err.write(`error: ${info.code === 404 ? `MySQLCluster ${namespace}/${name} does not exist` : info.message}\n`);
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
    return failed(e, namespace, o.name, err);
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
