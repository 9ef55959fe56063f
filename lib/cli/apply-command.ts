import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import type { OperatorPods } from '../../constructs/index.js';
import { createEventRecorder } from '../controller/events.js';
import { kindController, queueKey } from '../controller/kinds.js';
import { Reconciler } from '../controller/reconciler.js';
import { watchOwnersAndChildren, watchPods } from '../controller/watches.js';
import type { CustomResource } from '../controller/kind-controller.js';
import type { Informer } from '../informer/index.js';
import type { KubeClient } from '../kube/index.js';
import { apiError, getObject } from '../kube/index.js';
import type { LogFields, Logger } from '../observability/logger.js';
import { ItemExponentialFailureRateLimiter } from '../queue/rate-limiter.js';
import { WorkQueue } from '../queue/work-queue.js';
import { runWorkers } from '../queue/worker-pool.js';
import type { FileResource } from './diff-command.js';
import {
  CommandError,
  applyResource,
  describeApiError,
  placeResources,
  readAndConnect,
  requireCrds,
  resourcePath,
} from './diff-command.js';
import { formatDuration, parseDuration } from './duration.js';
import { OPERATOR_POD_OPTIONS, OPERATOR_POD_USAGE } from './operator-pods.js';

export const APPLY_USAGE = `Usage: recon8s apply -f FILE [--kubeconfig PATH] [--timeout 5m] [--wait | --no-wait] [--force-conflicts]

Converges App and MySQLCluster resources without a running controller: server-side applies the
resources in FILE (field manager recon8s-cli), then runs the controller's own reconcile for each of
them in this process (children applied with field manager recon8s, exactly as the controller would),
printing progress as their conditions change, until every one reports the current generation as
Ready. Only the resources in FILE are reconciled. The CRDs must be installed.

Exit status: 0 all ready (or, with --no-wait, all reconciled once), 1 timed out (what is not ready,
and why, is named), 2 an error (invalid resource, missing CRDs, unreachable or refusing API server,
a child the API server refuses, bad options).

Options:
  -f, --filename FILE    the resources (YAML or JSON, several documents allowed; "-" reads standard input)
  --kubeconfig PATH      kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)
  --timeout DURATION     how long to wait, e.g. 90s, 5m, 1h30m (default: 5m; a bare number is seconds)
  --wait / --no-wait     wait until ready (default), or return after one full reconcile of each resource
  --force-conflicts      take over fields of the resources that another field manager owns
${OPERATOR_POD_USAGE}`;

export const APPLY_OPTIONS = {
  filename: { type: 'string', short: 'f' },
  kubeconfig: { type: 'string' },
  timeout: { type: 'string', default: '5m' },
  wait: { type: 'boolean', default: true },
  'force-conflicts': { type: 'boolean', default: false },
  ...OPERATOR_POD_OPTIONS,
  help: { type: 'boolean', short: 'h' },
} as const;

export interface ApplyOptions {
  readonly filename: string;
  readonly kubeconfig?: string;
  readonly timeout: string;
  readonly wait: boolean;
  readonly forceConflicts: boolean;
  /** The operator's pods, which the MySQLClusters' NetworkPolicies admit: the controller's flags of the same names. */
  readonly operator: OperatorPods;
}

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** What a resource's status says about its current generation; undefined while it reports an older one. */
function statusLine(cr: CustomResource | undefined): string | undefined {
  if (!cr) return undefined;
  const status = cr.status as { observedGeneration?: number; conditions?: readonly Condition[] } | undefined;
  if (status?.observedGeneration === undefined || status.observedGeneration !== cr.metadata.generation)
    return undefined;
  const conditions = status.conditions;
  const find = (type: string): Condition | undefined => conditions?.find((c) => c.type === type);
  const show = (label: string, c: Condition | undefined): string =>
    `${label} (${c?.reason ?? 'Unknown'}: ${c?.message ?? 'no message'})`;
  const ready = find('Ready');
  const degraded = find('Degraded');
  const progressing = find('Progressing');
  if (ready?.status === 'True') return show('Ready', ready);
  if (degraded?.status === 'True') return show('Degraded', degraded);
  if (progressing?.status === 'True') return show('Progressing', progressing);
  return show('Not ready', ready);
}

function isReady(cr: CustomResource | undefined): boolean {
  const status = cr?.status as { observedGeneration?: number; conditions?: readonly Condition[] } | undefined;
  if (cr === undefined || status === undefined || status.observedGeneration !== cr.metadata.generation) return false;
  return status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** Why a resource is not ready, for the timeout message. */
function notReadyReason(cr: CustomResource | undefined, lastError: string | undefined): string {
  if (!cr) return 'it no longer exists';
  const status = cr.status as { observedGeneration?: number; conditions?: readonly Condition[] } | undefined;
  const parts: string[] = [];
  if (status === undefined || status.observedGeneration !== cr.metadata.generation) {
    parts.push(`its status does not report generation ${cr.metadata.generation ?? '?'} yet`);
  } else {
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    parts.push(
      `Ready=${ready?.status ?? 'Unknown'} (${ready?.reason ?? 'no reason'}: ${ready?.message ?? 'no message'})`,
    );
    const degraded = status.conditions?.find((c) => c.type === 'Degraded' && c.status === 'True');
    // A resource that is not ready because of a problem says it in Ready already (the same reason).
    if (degraded && degraded.reason !== ready?.reason)
      parts.push(`Degraded (${degraded.reason ?? ''}: ${degraded.message ?? ''})`);
  }
  if (lastError) parts.push(`last reconcile failed: ${lastError}`);
  return parts.join('; ');
}

/** A logger that keeps the last warning or error (list/watch failures) for messages, and prints nothing. */
function capturingLogger(sink: { last?: string }): Logger {
  const keep = (msg: string, fields?: LogFields): void => {
    const error = fields?.error;
    const detail = error instanceof Error ? error.message : typeof error === 'string' ? error : undefined;
    sink.last = detail ? `${msg}: ${detail}` : msg;
  };
  const logger: Logger = { debug: () => {}, info: () => {}, warn: keep, error: keep, child: () => logger };
  return logger;
}

/** `recon8s apply`: 0 ready (or reconciled, with --no-wait), 1 timed out, 2 errors. */
export async function applyCommand(
  opts: ApplyOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const timeoutMs = parseDuration(opts.timeout, APPLY_USAGE);
  const prepared = await readAndConnect(opts, err, 'apply');
  if (typeof prepared === 'number') return prepared;
  const { resources: fileResources, client, defaultNamespace } = prepared;
  const resources = placeResources(fileResources, defaultNamespace);
  const deadline = Date.now() + timeoutMs;
  const informers: Informer<LiveObject>[] = [];
  const interrupted = new AbortController();
  const onSignal = (): void => interrupted.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await requireCrds(client);
    for (const r of resources) {
      const before = await getObject<LiveObject>(client, resourcePath(r.kind, r.namespace, r.name));
      let after: LiveObject;
      try {
        after = await applyResource(client, r, { dryRun: false, force: opts.forceConflicts });
      } catch (e) {
        const code = apiError(e).code;
        if (code === 400 || code === 409 || code === 422)
          throw new CommandError(describeApiError(e, client, `${r.kind.kind} ${r.namespace}/${r.name} was refused`));
        throw e;
      }
      const what = !before
        ? 'created'
        : before.metadata?.resourceVersion === after.metadata?.resourceVersion
          ? 'unchanged'
          : 'configured';
      out.write(`${shortName(r, resources)} ${what}\n`);
    }
    return await converge(
      client,
      resources,
      { wait: opts.wait, deadline, timeoutMs, signal: interrupted.signal, informers, operator: opts.operator },
      out,
      err,
    );
  } catch (e) {
    err.write(`error: ${e instanceof CommandError ? e.message : describeApiError(e, client, 'applying')}\n`);
    return 2;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await Promise.all(informers.map((i) => i.stop()));
    await client.close();
  }
}

function shortName(r: FileResource, all: readonly FileResource[]): string {
  const base = `${r.kind.kind.toLowerCase()}/${r.name}`;
  return new Set(all.map((x) => x.namespace)).size > 1 ? `${base} (${r.namespace})` : base;
}

interface ConvergeOptions {
  readonly wait: boolean;
  readonly deadline: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** Filled with the informers started, for the caller to stop. */
  readonly informers: Informer<LiveObject>[];
  readonly operator: OperatorPods;
}

/**
 * Runs the controller's Reconciler on exactly these resources, fed by informers like the controller's
 * (the resources' kinds and their child kinds, in their namespaces): a resource is reconciled again
 * whenever it or one of its children changes, and after a failure (with backoff), until all are ready.
 */
async function converge(
  client: KubeClient,
  resources: readonly FileResource[],
  o: ConvergeOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const sink: { last?: string } = {};
  const logger = capturingLogger(sink);
  const namespaces = [...new Set(resources.map((r) => r.namespace))];
  const byKey = new Map(resources.map((r) => [queueKey(r.kind.kind, r.namespace, r.name), r]));
  // The controller's queue and worker contract (lib/reconcile/contract.ts): a key is never run twice
  // at once, a failure is retried with per-key backoff (here capped at 10 s), a requeue after a delay
  // is honoured. The watches add a key whenever its resource or one of its children changes.
  const queue = new WorkQueue({ rateLimiter: new ItemExponentialFailureRateLimiter(5, 10_000) });
  let wake: () => void = () => {};
  const touch = (key: string): void => {
    if (!byKey.has(key)) return;
    queue.add(key);
  };

  const kinds = [...new Map(resources.map((r) => [r.kind.kind, r.kind])).values()];
  // The same watches as the controller's: a change of a resource or its child queues it, the echo of
  // our own write does not, and what is remembered of a deleted object is forgotten.
  const late: { reconciler?: Reconciler } = {};
  const { owners, children, childNames, informers } = watchOwnersAndChildren({
    client,
    kinds,
    namespaces,
    logger,
    onKey: touch,
    isEcho: (child) => late.reconciler?.isOwnEcho(child) ?? false,
    onDeleted: (uid) => late.reconciler?.forget(uid),
  });
  o.informers.push(...informers);
  // The pods, for what the status says about them (an image that cannot be pulled, a pod that cannot be
  // scheduled): the same status the controller would write. Not waited for: a user who may not list
  // pods still converges the resources, with a status that cannot name its pods' problems.
  const pods = watchPods({
    client,
    kinds: kinds.flatMap((k) => kindController(k.kind) ?? []),
    namespaces,
    logger,
    onPod: (_kind, _pod, key) => {
      if (key) touch(key);
    },
  });
  o.informers.push(...pods.informers);
  for (const informer of pods.informers) void informer.start().catch(() => undefined);

  const sleepUntil = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        o.signal.removeEventListener('abort', done);
        wake = () => {};
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      o.signal.addEventListener('abort', done, { once: true });
      wake = done;
    });

  // The first list of every informer (a missing permission shows here: the informer retries forever).
  const synced = Promise.all(informers.map((i) => i.start()));
  let allSynced = false;
  void synced.then(() => {
    allSynced = true;
    wake();
  });
  while (!allSynced && !o.signal.aborted && Date.now() < o.deadline) await sleepUntil(o.deadline - Date.now());
  if (o.signal.aborted) return interruptedExit(err);
  if (!allSynced) {
    err.write(
      `error: timed out after ${formatDuration(o.timeoutMs)} listing the resources and their children${sink.last ? `: ${sink.last}` : ''}\n`,
    );
    return 1;
  }

  const reconciler = new Reconciler({
    client,
    owners,
    children,
    childNames,
    events: createEventRecorder(client, logger),
    logger,
    pods: (kind, namespace) => (pods.byKind.get(kind) ?? []).flatMap((i) => i.list(namespace)),
    // Who is the MySQL primary is the controller's to decide (it must be one authority).
    manage: false,
    install: { operatorPods: o.operator },
  });
  late.reconciler = reconciler;
  const label = (key: string): string => {
    const r = byKey.get(key);
    return r ? shortName(r, resources) : key;
  };
  const current = (key: string): CustomResource | undefined => {
    const r = byKey.get(key);
    return r ? owners.get(r.kind.kind)?.informer.get(r.namespace, r.name) : undefined;
  };
  const reconciled = new Set<string>();
  const lastError = new Map<string, string>();
  const printed = new Map<string, string>();
  /** Why apply must stop before the resources are done: an exit code and what to say. */
  let fatal: { readonly code: number; readonly message: string; readonly cause?: unknown } | undefined;

  const pool = runWorkers({
    name: 'recon8s-apply',
    queue,
    workers: Math.min(4, byKey.size),
    logger,
    reconcile: async (key) => {
      if (!current(key)) {
        fatal ??= { code: 2, message: `${label(key)} was deleted while recon8s apply was converging it` };
        wake();
        return undefined;
      }
      const result = await reconciler.reconcile(key);
      reconciled.add(key);
      lastError.delete(key);
      wake();
      return result;
    },
    onError: (key, e, terminal) => {
      // Only a change of the spec can help (a child the API server refuses): waiting is pointless.
      if (terminal) fatal ??= { code: 2, message: `${label(key)}: ${e instanceof Error ? e.message : String(e)}` };
      else if ([401, 403].includes(apiError(e).code)) fatal ??= { code: 2, message: '', cause: e };
      else {
        const message = describeApiError(e, client, 'reconciling');
        if (lastError.get(key) !== message) out.write(`${label(key)}: reconcile failed, retrying: ${message}\n`);
        lastError.set(key, message);
      }
      wake();
    },
  });
  for (const key of byKey.keys()) queue.add(key);

  try {
    for (;;) {
      if (fatal?.cause !== undefined) throw fatal.cause;
      if (fatal) {
        err.write(`error: ${fatal.message}\n`);
        return fatal.code;
      }
      for (const key of byKey.keys()) {
        const line = statusLine(current(key));
        if (line !== undefined && printed.get(key) !== line) {
          out.write(`${label(key)}: ${line}\n`);
          printed.set(key, line);
        }
      }
      if (o.signal.aborted) return interruptedExit(err);
      const keys = [...byKey.keys()];
      if (!o.wait && keys.every((k) => reconciled.has(k))) {
        out.write(
          `reconciled ${keys.length} resource${keys.length > 1 ? 's' : ''} once; not waiting for ${keys.length > 1 ? 'them' : 'it'} to be ready (--no-wait)\n`,
        );
        return 0;
      }
      if (o.wait && keys.every((k) => isReady(current(k)))) return 0;
      if (Date.now() >= o.deadline) {
        const waiting = keys.filter((k) => (o.wait ? !isReady(current(k)) : !reconciled.has(k)));
        err.write(
          `error: timed out after ${formatDuration(o.timeoutMs)} waiting for ${waiting.length} of ${keys.length} resource${keys.length > 1 ? 's' : ''} to ${o.wait ? 'be ready' : 'be reconciled'}:\n`,
        );
        for (const k of waiting)
          err.write(
            `  ${label(k)}: ${o.wait ? notReadyReason(current(k), lastError.get(k)) : (lastError.get(k) ?? 'not reconciled yet')}\n`,
          );
        return 1;
      }
      await sleepUntil(Math.min(o.deadline - Date.now(), 1_000));
    }
  } finally {
    await pool.stop();
  }
}

function interruptedExit(err: NodeJS.WritableStream): number {
  err.write(
    'error: interrupted; the resources were applied, their children may be partly converged (the controller, or another recon8s apply, finishes the job)\n',
  );
  return 130;
}
