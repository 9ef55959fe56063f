// The HA loop's ports as the controller runs them (ports.ts declares them): the cluster's pods and
// records on the API server, its series in the controller's metrics, the process's clocks, members
// over MySQL and their agents over HTTP. Thin on purpose: what to do is decided elsewhere.
import { MYSQL_CLUSTER, MYSQL_ROLE_LABEL } from '../../../../constructs/index.js';
import { monotonicClock, realClock } from '../../../clock/index.js';
import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy, getObject, isConflict, isNotFound } from '../../../kube/index.js';
import type { KubeClient } from '../../../kube/index.js';
import { connectMember } from '../../../mysql/member-sql.js';
import type { NodeLossNode } from '../../../mysql/node-loss.js';
import type { ControllerMetrics } from '../../../observability/controller-metrics.js';
import type { ManageContext } from '../../kind-controller.js';
import { fetchAgentUnsafeStops } from '../agent-http.js';
import { recordHistory } from '../history.js';
import type {
  AgentUnsafeStops,
  ClusterRecords,
  ConnectMember,
  HaClock,
  HaMetrics,
  HaPorts,
  NodeLossActions,
  PodActions,
  RecordedStatus,
  SwitchoverOutcome,
} from './ports.js';

/** The ports that do not depend on the cluster; each defaults to the real one. */
export interface HaOptions {
  /** Default: a MySQL session over verified TLS (connectMember). */
  readonly connect?: ConnectMember;
  /** Default: HTTP to the member's agent (agent-http.ts). */
  readonly agentUnsafeStops?: AgentUnsafeStops;
  /** Default: performance.now and the wall clock. */
  readonly clock?: HaClock;
}

const SWITCHOVER_OUTCOMES: readonly SwitchoverOutcome[] = ['done', 'failed', 'refused'];

const processClock: HaClock = { now: () => monotonicClock.now(), wallClock: () => new Date(realClock.now()) };

/** The ports of the loop for `ctx`'s cluster. */
export function kubePorts(ctx: ManageContext, o: HaOptions = {}): HaPorts {
  return {
    connect: o.connect ?? connectMember,
    agentUnsafeStops: o.agentUnsafeStops ?? fetchAgentUnsafeStops,
    pods: kubePods(ctx),
    nodeLoss: kubeNodeLoss(ctx),
    records: kubeRecords(ctx),
    metrics: clusterMetrics(ctx.metrics, { namespace: ctx.cr.metadata.namespace ?? '', cluster: ctx.cr.metadata.name }),
    clock: o.clock ?? processClock,
  };
}

function kubePods({ client, cr }: ManageContext): PodActions {
  const path = (pod: string): string =>
    `/api/v1/namespaces/${cr.metadata.namespace ?? ''}/pods/${encodeURIComponent(pod)}`;
  const patch = (pod: string, metadata: object): Promise<unknown> =>
    client.request({
      method: HttpMethod.PATCH,
      path: path(pod),
      body: JSON.stringify({ metadata }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
  return {
    async label(pod, role) {
      await patch(pod, { labels: { [MYSQL_ROLE_LABEL]: role } }).catch((e: unknown) => {
        // A pod that no longer exists carries no label: taking one off it is done (a primary's pod deleted
        // with no grace period is gone while its mysqld still answers, and the switchover from it goes on).
        if (role === 'none' && isNotFound(e)) return;
        throw e;
      });
    },
    async restart(pod) {
      await client.request({ method: HttpMethod.DELETE, path: path(pod) });
    },
    async annotate(pod, annotation, value) {
      await patch(pod, { annotations: { [annotation]: value } });
    },
    async forceDelete(pod, uid) {
      await deleteIfStill(client, path(pod), uid, { gracePeriodSeconds: 0 });
    },
  };
}

/**
 * DELETE with a precondition on the uid: one gone (404), or replaced by another of that name (409: the
 * precondition failed), is not deleted, and the next look judges what there is now.
 */
async function deleteIfStill(client: KubeClient, path: string, uid: string, options: object = {}): Promise<void> {
  const body = { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid }, ...options };
  try {
    await client.request({
      method: HttpMethod.DELETE,
      path,
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
    });
  } catch (e) {
    if (isNotFound(e) || isConflict(e)) return;
    throw e;
  }
}

const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/**
 * The one node a PersistentVolume's required node affinity pins it to on kubernetes.io/hostname (local
 * storage): every term names hostnames with In, and all of them together one. Undefined otherwise.
 */
export function volumeNode(pv: V1PersistentVolume | undefined): string | undefined {
  const terms = pv?.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  if (terms.length === 0) return undefined;
  const hosts = new Set<string>();
  for (const term of terms) {
    const named = (term.matchExpressions ?? []).filter((e) => e.key === HOSTNAME_LABEL && e.operator === 'In');
    if (named.length === 0) return undefined;
    for (const e of named) for (const v of e.values ?? []) hosts.add(v);
  }
  return hosts.size === 1 ? [...hosts][0] : undefined;
}

/** A Node as lib/mysql/node-loss.ts takes it: Ready's status and since when, and its taints' keys. */
export function nodeLossNode(node: V1Node, name: string): NodeLossNode {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const status = ready?.status === 'True' || ready?.status === 'False' ? ready.status : 'Unknown';
  const since = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : Number.NaN;
  return {
    name,
    ready: status,
    // A Ready condition with no time (or none at all): NotReady since now, never long enough by itself.
    readySince: Number.isFinite(since) ? since : realClock.now(),
    taintKeys: (node.spec?.taints ?? []).map((t) => t.key),
  };
}

function kubeNodeLoss({ client, cr }: ManageContext): NodeLossActions {
  const claimPath = (name: string): string =>
    `/api/v1/namespaces/${cr.metadata.namespace ?? ''}/persistentvolumeclaims/${encodeURIComponent(name)}`;
  return {
    async nodes(names) {
      const found = await Promise.all(
        names.map(async (name) => {
          const node = await getObject<V1Node>(client, `/api/v1/nodes/${encodeURIComponent(name)}`);
          return node ? nodeLossNode(node, name) : undefined;
        }),
      );
      return found.filter((n): n is NodeLossNode => n !== undefined);
    },
    async claim(name) {
      const pvc = await getObject<V1PersistentVolumeClaim>(client, claimPath(name));
      if (!pvc?.metadata?.uid) return undefined;
      const bound = pvc.status?.phase === 'Bound' ? pvc.spec?.volumeName : undefined;
      const pv = bound
        ? await getObject<V1PersistentVolume>(client, `/api/v1/persistentvolumes/${encodeURIComponent(bound)}`)
        : undefined;
      const node = volumeNode(pv);
      return {
        name,
        uid: pvc.metadata.uid,
        deleting: pvc.metadata.deletionTimestamp !== undefined,
        ...(node !== undefined ? { volumeNode: node } : {}),
      };
    },
    async deleteClaim(name, uid) {
      await deleteIfStill(client, claimPath(name), uid);
    },
  };
}

function kubeRecords({ client, cr, live }: ManageContext): ClusterRecords {
  const path = `/apis/${MYSQL_CLUSTER.group}/${MYSQL_CLUSTER.version}/namespaces/${cr.metadata.namespace ?? ''}/${MYSQL_CLUSTER.plural}/${encodeURIComponent(cr.metadata.name)}`;
  return {
    async read() {
      const found = await client.requestJson<{ metadata?: { resourceVersion?: string }; status?: RecordedStatus }>({
        path,
      });
      const version = found.metadata?.resourceVersion;
      return { ...(version !== undefined ? { version } : {}), status: found.status ?? {} };
    },
    async patch(version, fields) {
      try {
        await client.request({
          method: HttpMethod.PATCH,
          path: `${path}/status`,
          body: JSON.stringify({ metadata: { resourceVersion: version }, status: fields }),
          headers: { 'Content-Type': PatchStrategy.MergePatch },
        });
        return true;
      } catch (e) {
        if (isConflict(e)) return false;
        throw e;
      }
    },
    async ensureHistory(firstPrimary, beforeWrite) {
      await recordHistory(client, cr, live, firstPrimary, beforeWrite);
    },
  };
}

/** The cluster's recon8s_mysql_* series; nothing when the controller exports no metrics. */
export function clusterMetrics(
  metrics: ControllerMetrics | undefined,
  labels: { readonly namespace: string; readonly cluster: string },
): HaMetrics {
  return {
    member(member, o) {
      const of = { ...labels, member };
      metrics?.mysqlMemberReachable.set(of, o.reachable ? 1 : 0);
      if (o.behind !== undefined) metrics?.mysqlReplicaBehind.set(of, o.behind);
      // All three, so that a role the member left reads 0 rather than its last 1.
      if (o.role !== undefined)
        for (const role of ['primary', 'replica', 'none'] as const)
          metrics?.mysqlMemberRole.set({ ...of, role }, o.role === role ? 1 : 0);
    },
    cluster(o) {
      // The counters from 0, before anything happened: Prometheus's increase() sees no increase in a
      // series whose first sample is already 1, so the first failover after the controller started
      // would raise no Recon8sMySQLFailedOver.
      metrics?.mysqlFailovers.inc(labels, 0);
      for (const outcome of SWITCHOVER_OUTCOMES) metrics?.mysqlSwitchovers.inc({ ...labels, outcome }, 0);
      if (o.primaryReachable !== undefined) metrics?.mysqlPrimaryReachable.set(labels, o.primaryReachable ? 1 : 0);
      metrics?.mysqlErrantMembers.set(labels, o.errantMembers);
    },
    count(metric) {
      if (metric.kind === 'failover') metrics?.mysqlFailovers.inc(labels);
      else metrics?.mysqlSwitchovers.inc({ ...labels, outcome: metric.outcome });
    },
  };
}
