// The MySQLCluster manager: what runs beside the render reconcile of every cluster of this controller
// (Manager, kind-controller.ts), one runtime per cluster (cluster-runtime.ts) holding all it remembers.
// On each manage() of a cluster, in order: the HA loop's pass on the database pods (ha/loop.ts), the
// bound Apps' accounts on the primary it left writable (app-accounts.ts), the cluster's own accounts'
// rotation (credential-rotation-loop.ts), then what the backup, binary-log and restore runs reported:
// status.backup, status.restore, their problems and metrics (backup-status.ts).
import type { MySQLBackup } from '../../../constructs/index.js';
import type { Management, Manager, ManageContext } from '../kind-controller.js';
import { primaryView } from './app-accounts.js';
import type { BackupStatus, RestoreFailure, RestoreStatus } from './backup-status.js';
import { backupFindings } from './backup-status.js';
import type { ClusterRuntime, ClusterRuntimeOptions } from './cluster-runtime.js';
import { ClusterRuntimes } from './cluster-runtime.js';
import type { MySQLClusterFacts } from './facts.js';
import { withKeptMembers } from './ha/kept-members.js';
import type { HaOptions } from './ha/kube-ports.js';
import { kubePorts } from './ha/kube-ports.js';
import { runPass } from './ha/loop.js';

export interface ClusterManagerOptions extends ClusterRuntimeOptions {
  /** The HA loop's ports that do not depend on the cluster (ha/kube-ports.ts). */
  readonly ha?: HaOptions;
}

export function createMySQLClusterManager(o: ClusterManagerOptions = {}): Manager<MySQLClusterFacts> {
  const runtimes = new ClusterRuntimes(o);
  return {
    // The StatefulSet keeps the members a scale-down has not yet made safe to remove (lib/mysql/scale-down.ts).
    amend: (cr, child, live) => withKeptMembers(cr, child, live, runtimes.find(cr.metadata.uid ?? '')?.ha.keptMembers),
    // The members' sessions end with the term of leadership (and at shutdown).
    close: () => {
      runtimes.close();
      return Promise.resolve();
    },
    forget: (uid) => runtimes.forget(uid),
    manage: (ctx) => manage(ctx, runtimes.of(ctx.cr.metadata.uid ?? ''), o.ha),
  };
}

async function manage(
  ctx: ManageContext<MySQLClusterFacts>,
  runtime: ClusterRuntime,
  ha: HaOptions | undefined,
): Promise<Management> {
  const database = ctx.pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'database');
  const managed = await runPass({ ...ctx, pods: database }, runtime.ha, kubePorts(ctx, ha));
  // The bound Apps' accounts, on the primary the HA step left writable (app-accounts.ts).
  const accounts = await runtime.accounts.sync(
    ctx,
    primaryView(managed.fields, database, managed.unavailable !== undefined),
  );
  // The cluster's own accounts (`recon8s rotate-credentials mysqlcluster`), on the primary the HA step left.
  const currentPrimary = managed.fields.currentPrimary;
  const rotated = await runtime.rotation.sync(
    ctx,
    database,
    typeof currentPrimary === 'string' ? currentPrimary : undefined,
    () => runtime.accounts.busy(),
  );
  const found = reportBackups(ctx, runtime);
  return {
    ...managed,
    events: [...managed.events, ...accounts.events, ...rotated.events],
    problems: [...managed.problems, ...rotated.problems],
    // While a rotation is under way its next step is looked for every second.
    ...(rotated.busy ? { requeueAfterMs: Math.min(managed.requeueAfterMs ?? 1000, 1000) } : {}),
    fields: {
      ...managed.fields,
      ...(accounts.accounts ? { accounts: accounts.accounts } : {}),
      ...(rotated.status ? { credentialRotation: rotated.status } : {}),
      ...(found.backup ? { backup: found.backup } : {}),
      ...(found.restore ? { restore: found.restore } : {}),
      ...(found.restoreFailure ? { restoreFailure: found.restoreFailure } : {}),
    },
    reports: found.problems,
  };
}

/** What the backup, binary-log and restore runs reported (backup-status.ts), and their series. */
function reportBackups(
  ctx: ManageContext<MySQLClusterFacts>,
  runtime: ClusterRuntime,
): ReturnType<typeof backupFindings> {
  const status = (ctx.cr.status ?? {}) as {
    backup?: BackupStatus;
    restore?: RestoreStatus;
    restoreFailure?: RestoreFailure;
  };
  const found = backupFindings(ctx.cr.metadata.name, ctx.pods, status, ctx.cr.metadata.generation ?? 0);
  const labels = { namespace: ctx.cr.metadata.namespace ?? '', cluster: ctx.cr.metadata.name };
  // What Recon8sMySQLBackupTooOld compares the last backup's age with: the schedule's longest gap.
  runtime.backupInterval.report(
    labels,
    (ctx.cr.spec as { backup?: MySQLBackup } | undefined)?.backup,
    ctx.metrics?.mysqlBackupScheduleMaxInterval,
  );
  const seconds = (time: string): number => Date.parse(time) / 1000;
  if (found.backup?.lastSuccessfulTime)
    ctx.metrics?.mysqlBackupLastSuccess.set(labels, seconds(found.backup.lastSuccessfulTime));
  if (found.backup?.binlogsArchivedUntil)
    ctx.metrics?.mysqlBinlogArchivedUntil.set(labels, seconds(found.backup.binlogsArchivedUntil));
  if (found.binlogGap !== undefined) ctx.metrics?.mysqlBinlogArchiveGap.set(labels, found.binlogGap ? 1 : 0);
  if (found.verification?.passedAt) ctx.metrics?.mysqlBackupVerified.set(labels, seconds(found.verification.passedAt));
  if (found.verification?.failed !== undefined)
    ctx.metrics?.mysqlBackupVerificationFailed.set(labels, found.verification.failed ? 1 : 0);
  for (const task of ['backup', 'binlog'] as const) {
    const failing = found.failing[task];
    if (failing !== undefined) ctx.metrics?.mysqlBackupFailing.set({ ...labels, task }, failing ? 1 : 0);
  }
  return found;
}
