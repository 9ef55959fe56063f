// `recon8s backup NAME`, `recon8s backups NAME` and `recon8s binlog archive NAME`. Each runs a Job from
// one of the cluster's CronJobs, so that it reaches the store (or volume) exactly as the scheduled runs
// do, with the credentials the pods read from their Secret: the CLI never handles a storage credential
// or a password.
import { HttpMethod } from '../kube/index.js';
import type { V1CronJob, V1EnvVar, V1Job, V1Pod, V1PodList } from '@kubernetes/client-node';
import { MYSQL_STORE_REPORTS } from '../../constructs/index.js';
import { describeStoreReport } from '../controller/mysql-cluster/backup-status.js';
import type { KubeClient } from '../kube/index.js';
import { apiError } from '../kube/index.js';
import { connect, describeApiError } from './diff-command.js';
import { formatTable } from './table.js';
import { parseDuration } from './duration.js';
import { isOf, printable, valueOf } from '../mysql/store-values.js';

export const BACKUP_USAGE = `Usage: recon8s backup NAME [-n NAMESPACE] [--kubeconfig PATH] [--timeout DURATION]

Takes a backup of MySQLCluster NAME now, as its schedule would (a Job from its CronJob NAME-backup),
and waits for it (--timeout: e.g. 90s, 15m, 1h; default 15m): prints where the backup is, its size and
its GTID set (exit 0), or why it failed (1).
`;

export const BACKUPS_USAGE = `Usage: recon8s backups NAME [-n NAMESPACE] [--kubeconfig PATH] [--timeout DURATION]

Lists the backups of MySQLCluster NAME where they are stored (a short Job from its CronJob NAME-backup
reads the store), oldest first, with when each ended, its size and GTID set, and how far the archived
binary logs reach: the points spec.restore can restore to.
`;

export const BINLOG_USAGE = `Usage: recon8s binlog archive NAME [-n NAMESPACE] [--kubeconfig PATH] [--timeout DURATION]

Archives the binary logs of MySQLCluster NAME now, as its schedule would (a Job from its CronJob
NAME-binlog; spec.backup.s3 with binlogIntervalMinutes > 0), and waits for it (default 15m): prints
until when the archive now reaches (every transaction committed before it can be restored to), exit
0, or why it failed (1). Run it before a point-in-time restore to a moment after the last scheduled
run, or right after a bad statement.
`;

export const BACKUP_COMMAND_OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  timeout: { type: 'string', default: '15m' },
  help: { type: 'boolean', short: 'h' },
} as const;

interface Options {
  readonly name: string;
  readonly namespace?: string;
  readonly kubeconfig?: string;
  readonly timeout: string;
}

const LIST_SCRIPT = '/opt/recon8s/list-backups.sh';

/**
 * A Job from the CronJob's template, owned by it (deleted with it), like `kubectl create job --from`.
 * With a command, one container runs it instead of the backup (a listing, a search: the dump
 * container, with the store's settings) or of the whole pod (`verify`: the verification container,
 * without the backup before it).
 */
export function jobFrom(
  cronJob: V1CronJob,
  name: string,
  command?: string[],
  env: readonly V1EnvVar[] = [],
  run: 'backup' | 'verify' = 'backup',
): V1Job {
  const template = cronJob.spec?.jobTemplate;
  const spec = structuredClone(template?.spec);
  if (!spec) throw new Error(`CronJob ${cronJob.metadata?.name ?? ''} has no job template`);
  const pod = spec.template.spec;
  if (command && pod) {
    // With verification on, the dump is the last init container and the verification the container.
    const all = [...(pod.initContainers ?? []), ...pod.containers];
    const container = all.find((c) => c.name === run) ?? pod.containers[0];
    if (!container) throw new Error(`CronJob ${cronJob.metadata?.name ?? ''} has no ${run} container`);
    if (run === 'backup' || container.name === run) container.command = command;
    container.env = [...(container.env ?? []), ...env];
    pod.initContainers = pod.initContainers?.filter((c) => c.name !== 'backup' && c !== container);
    pod.containers = [container];
    spec.backoffLimit = 0;
    spec.ttlSecondsAfterFinished = 600;
  }
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      labels: template?.metadata?.labels,
      annotations: { 'cronjob.kubernetes.io/instantiate': 'manual' },
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          name: cronJob.metadata?.name ?? '',
          uid: cronJob.metadata?.uid ?? '',
          controller: true,
        },
      ],
    },
    spec,
  };
}

/**
 * Runs a Job from the cluster's backup CronJob: a backup (`<name>-backup-<epoch seconds>`, like the
 * CronJob's own, since it is one), or `command` instead (`<name>-list-<epoch seconds>`: a listing must
 * not pass for a backup in `kubectl get jobs`).
 */
export async function runJob(
  client: KubeClient,
  namespace: string,
  name: string,
  command: string[] | undefined,
  deadline: number,
  cronJobName = `${name}-backup`,
  extra: { readonly env?: readonly V1EnvVar[]; readonly kind?: string; readonly run?: 'backup' | 'verify' } = {},
): Promise<{ job: string; pod?: V1Pod; succeeded: boolean }> {
  const cronJob = await client.requestJson<V1CronJob>({
    path: `/apis/batch/v1/namespaces/${namespace}/cronjobs/${cronJobName}`,
  });
  // Seconds since the epoch: never the minutes the CronJob controller names its Jobs by.
  const job = `${command ? `${name}-${extra.kind ?? 'list'}` : cronJobName}-${Math.floor(Date.now() / 1000)}`;
  await client.request({
    method: HttpMethod.POST,
    path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
    body: JSON.stringify(jobFrom(cronJob, job, command, extra.env, extra.run)),
    headers: { 'Content-Type': 'application/json' },
  });
  while (Date.now() < deadline) {
    const status = (await client.requestJson<V1Job>({ path: `/apis/batch/v1/namespaces/${namespace}/jobs/${job}` }))
      .status;
    const done = status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
    if (done) {
      const pods = await client.requestJson<V1PodList>({
        path: `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`job-name=${job}`)}`,
      });
      const newest = pods.items.sort((a, b) =>
        String(b.metadata?.creationTimestamp ?? '').localeCompare(String(a.metadata?.creationTimestamp ?? '')),
      )[0];
      return { job, pod: newest, succeeded: done.type === 'Complete' };
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`Job ${job} did not finish within the timeout; it goes on: kubectl -n ${namespace} get job ${job}`);
}

/** What the Job's pod printed (its first container's log). */
export async function podLog(client: KubeClient, namespace: string, pod: V1Pod | undefined): Promise<string> {
  const container = pod?.spec?.containers[0]?.name ?? 'backup';
  if (!pod?.metadata?.name) return '';
  return (
    await client.request({
      path: `/api/v1/namespaces/${namespace}/pods/${pod.metadata.name}/log?container=${container}`,
    })
  ).body;
}

/** The termination message of the container named (the backup's may be an init container), or of the first. */
export function terminationMessage(pod: V1Pod | undefined, name?: string): string {
  const all = [...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.containerStatuses ?? [])];
  const c = (name ? all.find((s) => s.name === name) : undefined) ?? pod?.status?.containerStatuses?.[0];
  return (c?.state?.terminated?.message ?? c?.lastState?.terminated?.message ?? '').trim();
}

export function failed(
  e: unknown,
  client: KubeClient,
  namespace: string,
  name: string,
  err: NodeJS.WritableStream,
  cronJob: 'backup' | 'binlog' = 'backup',
): number {
  const missing =
    cronJob === 'backup'
      ? `no CronJob ${name}-backup in namespace ${namespace}: MySQLCluster ${name} does not exist there, or has no spec.backup`
      : `no CronJob ${name}-binlog in namespace ${namespace}: MySQLCluster ${name} does not exist there, or archives no binary logs (spec.backup.s3, with binlogIntervalMinutes > 0)`;
  err.write(
    `error: ${apiError(e).code === 404 ? missing : describeApiError(e, client, `reading MySQLCluster ${namespace}/${name}`)}\n`,
  );
  return 2;
}

/** A termination message ("Reason: text") in words. */
function report(message: string): { reason?: string; text: string } {
  const match = /^(\w+): ([^]+)$/.exec(message);
  return match
    ? { reason: match[1], text: describeStoreReport(match[1] ?? '', match[2] ?? '') }
    : { text: message || 'no report' };
}

export const VERIFY_USAGE = `Usage: recon8s backup verify NAME [BACKUP] [-n NAMESPACE] [--kubeconfig PATH] [--timeout DURATION]

Verifies a backup of MySQLCluster NAME (the newest, or BACKUP, e.g. 20261124T030000Z) now, as each
backup is verified after it is taken (spec.backup.verify): a Job restores it and every archived
binary log after it into a scratch mysqld of its own, compares each table's row count and checksum
with those the backup recorded, and runs CHECK TABLE. Waits for it (default 15m), prints the result
(exit 0) or what failed (1); status.backup.lastVerified records it either way.
`;

export async function verifyCommand(
  o: Options & { readonly backup?: string },
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const deadline = Date.now() + parseDuration(o.timeout, VERIFY_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  try {
    const cronJob = await client.requestJson<V1CronJob>({
      path: `/apis/batch/v1/namespaces/${namespace}/cronjobs/${o.name}-backup`,
    });
    if (!cronJob.spec?.jobTemplate.spec?.template.spec?.containers.some((c) => c.name === 'verify')) {
      err.write(
        `error: MySQLCluster ${o.name} does not verify its backups: that needs spec.backup.s3, and spec.backup.verify.enabled true (the default)\n`,
      );
      return 2;
    }
    const env = o.backup ? [{ name: 'VERIFY_BACKUP', value: o.backup }] : [];
    const run = await runJob(client, namespace, o.name, ['bash', VERIFY_SCRIPT], deadline, undefined, {
      env,
      kind: 'verify',
      run: 'verify',
    });
    const verified = report(terminationMessage(run.pod, 'verify'));
    if (run.succeeded && verified.reason !== MYSQL_STORE_REPORTS.backupVerificationFailed) {
      out.write(`${verified.text}\n`);
      return 0;
    }
    err.write(`verification Job ${run.job} failed: ${verified.text}\n`);
    return 1;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

const VERIFY_SCRIPT = '/opt/recon8s/verify-backup.sh';

export async function backupCommand(
  o: Options,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const deadline = Date.now() + parseDuration(o.timeout, BACKUP_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  try {
    const run = await runJob(client, namespace, o.name, undefined, deadline);
    const backup = report(terminationMessage(run.pod, 'backup'));
    if (backup.reason !== MYSQL_STORE_REPORTS.backupCompleted) {
      err.write(`backup Job ${run.job} failed: ${backup.text}\n`);
      return 1;
    }
    out.write(`${backup.text}\n`);
    // With spec.backup.verify, the Job went on to verify it.
    const verified = run.pod?.spec?.containers.some((c) => c.name === 'verify')
      ? report(terminationMessage(run.pod, 'verify'))
      : undefined;
    if (verified)
      (verified.reason === MYSQL_STORE_REPORTS.backupVerificationFailed ? err : out).write(`${verified.text}\n`);
    return run.succeeded ? 0 : 1;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

export async function backupsCommand(
  o: Options,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const deadline = Date.now() + parseDuration(o.timeout, BACKUPS_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  try {
    const run = await runJob(client, namespace, o.name, ['bash', LIST_SCRIPT], deadline);
    const log = await podLog(client, namespace, run.pod);
    if (!run.succeeded) {
      err.write(
        `listing Job ${run.job} failed:\n${log
          .split('\n')
          .map((l) => printable(l))
          .join('\n')}`,
      );
      return 1;
    }
    out.write(formatBackups(log));
    return 0;
  } catch (e) {
    return failed(e, client, namespace, o.name, err);
  } finally {
    await client.close();
  }
}

/**
 * list-backups.sh's lines as a table, then how far a point-in-time restore reaches. The manifests and
 * state.json are the bucket's: a manifest whose name, end time, method, size or GTID set is not of its grammar
 * is listed as not one recon8s wrote (and not as a backup to restore), and nothing of one reaches the
 * terminal but printable text.
 */
export function formatBackups(listing: string): string {
  const rows = [['BACKUP', 'ENDED', 'METHOD', 'SIZE', 'GTID SET']];
  let covered: string | undefined;
  let oldestEnd: string | undefined;
  const refused: string[] = [];
  for (const line of listing.split('\n')) {
    const [kind, first = '', second = ''] = line.split('\t');
    if (kind === 'backup' || kind === 'binlog') {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(first) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (kind === 'binlog') {
        covered = valueOf('time', o.coveredUntil);
        continue;
      }
      const name = valueOf('backup-name', o.name);
      const ended = valueOf('time', o.endTime);
      const gtids = valueOf('gtid-set', o.gtidSet);
      const bytes = typeof o.sizeBytes === 'number' ? String(o.sizeBytes) : o.sizeBytes;
      // A manifest written before there were two methods says none: a dump.
      const method = o.method === undefined ? 'logical' : valueOf('backup-method', o.method);
      if (!name || !ended || gtids === undefined || !method || !isOf('count', bytes)) {
        refused.push(printable(JSON.stringify(o.name ?? null), 80));
        continue;
      }
      oldestEnd ??= ended;
      rows.push([name, ended, method, size(Number(bytes)), gtids]);
    } else if (kind === 'file') {
      if (!isOf('count', second)) continue;
      rows.push([printable(first, 200), '', 'logical', size(Number(second)), '']);
    }
  }
  const warning = refused.length
    ? `warning: ${refused.length} manifest${refused.length === 1 ? '' : 's'} in the store ${refused.length === 1 ? 'is' : 'are'} not as recon8s writes them (a name, end time, method, size or GTID set that is not one), left out; a restore refuses ${refused.length === 1 ? 'it' : 'them'} too: ${refused.join(', ')}\n`
    : '';
  if (rows.length === 1) return `${warning}no backups yet\n`;
  const table = formatTable(rows);
  let reach = '';
  if (covered && oldestEnd) {
    // The archive's last run may have ended before the oldest backup did (a first backup, moments ago):
    // then no point in time is reachable yet, and a range would run backwards.
    reach =
      Date.parse(covered) >= Date.parse(oldestEnd)
        ? `\nbinary logs archived until ${covered}: spec.restore.pointInTime may be any time from ${oldestEnd} to ${covered} (whole seconds, UTC)\n`
        : `\nbinary logs archived until ${covered}, before the oldest backup ended: no point in time is reachable yet, only the backups themselves (spec.restore.backup) until the binary-log archive runs again\n`;
  }
  return `${table}\n${reach}${warning}`;
}

function size(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u] ?? ''}`;
}

export async function binlogArchiveCommand(
  o: Options,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const deadline = Date.now() + parseDuration(o.timeout, BINLOG_USAGE);
  const { client, defaultNamespace } = connect(o.kubeconfig);
  const namespace = o.namespace ?? defaultNamespace;
  try {
    const run = await runJob(client, namespace, o.name, undefined, deadline, `${o.name}-binlog`);
    const message = terminationMessage(run.pod);
    const match = /^(\w+): ([^]+)$/.exec(message);
    if (run.succeeded && match?.[1] === MYSQL_STORE_REPORTS.binlogsArchived) {
      out.write(`${describeArchive(match[2] ?? '')}\n`);
      return 0;
    }
    if (run.succeeded && match?.[1] === MYSQL_STORE_REPORTS.binlogArchiveGap) {
      err.write(`${describeStoreReport(match[1], match[2] ?? '')}\n`);
      return 1;
    }
    err.write(`binary-log archive Job ${run.job} failed: ${printable(match?.[2] ?? (message || 'no report'))}\n`);
    return 1;
  } catch (e) {
    return failed(e, client, namespace, o.name, err, 'binlog');
  } finally {
    await client.close();
  }
}

/** The binary-log job's report (its state.json) in words. */
export function describeArchive(report: string): string {
  let state: Record<string, unknown>;
  try {
    state = JSON.parse(report) as Record<string, unknown>;
  } catch {
    return printable(report);
  }
  const covered = valueOf('time', state.coveredUntil);
  const gtids = valueOf('gtid-set', state.archivedGtids) ?? '?';
  return covered
    ? `binary logs archived until ${covered}: every transaction committed before it can be restored to (spec.restore.pointInTime); archived GTID set '${gtids}'`
    : `binary logs archived; archived GTID set '${gtids}'`;
}
