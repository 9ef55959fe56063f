// The rotation of a MySQLCluster's own accounts, as its manager runs it (credential-rotation-pass.ts is a pass):
// the environment of a pass built from the manager's context, and the pass run beside the HA step
// without holding it up (a member that stops answering in the middle of a pass must not delay the
// failover step of the next manage()).
//
// Contract: called on every manage() of a cluster, after the HA step and the Apps' accounts. It starts a
// pass (unless one is under way) and waits a moment for it; what a pass found is reported by the next
// manage() when it took longer. status.credentialRotation always says what was last found (a status
// without it would lose `completed`). Any failure is reported (an Event, the status' message) and tried
// again at the next poll, never thrown, but leadership lost.
import type { V1ContainerStatus, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { MySQLCredentialRotationStatus } from '../../../constructs/index.js';
import { MYSQL_PORT, ROTATE_CREDENTIALS_ANNOTATION, mysqlClusterNames } from '../../../constructs/index.js';
import { HttpMethod, PatchStrategy, apiError } from '../../kube/index.js';
import type { KubeClient } from '../../kube/index.js';
import type { ClusterAccountActions } from '../../mysql/cluster-account-sql.js';
import { ClusterAccountSession } from '../../mysql/cluster-account-sql.js';
import { parseRotationRequest } from '../../mysql/credential-rotation.js';
import { GENERATED_BY_LABEL } from '../../reconcile/credential-keys.js';
import type { ManageContext, ManagedEvent, Problem } from '../kind-controller.js';
import type { RotationEnvironment, RotationOutcome, SecretPatch } from './credential-rotation-pass.js';
import { rotateClusterCredentials } from './credential-rotation-pass.js';
import { fetchAgentRevision } from './agent-http.js';
import type { AgentTarget } from './agent-http.js';
import { readSecret } from './credentials-secret.js';
import type { MySQLClusterFacts } from './facts.js';

/** How long manage() waits for a pass before it reports what it has (the pass goes on). */
const WAIT_MS = 2_000;

export interface ClusterRotationOptions {
  /** A session as root to a member (default: ClusterAccountSession over verified TLS). */
  readonly open?: (o: {
    host: string;
    servername: string;
    password: string;
    ca: string;
  }) => Promise<ClusterAccountActions>;
  /** GET /credentials-revision of a member's agent (default: HTTP to the pod's address). */
  readonly agentRevision?: (to: AgentTarget) => Promise<string | undefined>;
}

export interface ClusterRotationReport {
  /** status.credentialRotation (undefined: say nothing, no rotation was ever asked for). */
  readonly status?: MySQLCredentialRotationStatus;
  readonly events: readonly ManagedEvent[];
  readonly problems: readonly Problem[];
  /** A rotation is under way: look again soon. */
  readonly busy: boolean;
}

/** A container of these runs (not waiting to start, not ended). */
const runs = (statuses: readonly V1ContainerStatus[] | undefined): boolean =>
  (statuses ?? []).some((c) => c.state?.running !== undefined);

/** Member pods whose bootstrap init container runs now (started with the passwords of its start). */
export function bootstrappingMembers(pods: readonly V1Pod[]): string[] {
  return pods.filter((p) => runs(p.status?.initContainerStatuses)).map((p) => p.metadata?.name ?? '');
}

/** The cluster's job pods (backup component) with a container running. */
export function runningJobs(pods: readonly V1Pod[]): string[] {
  return pods
    .filter(
      (p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'backup' && runs(p.status?.containerStatuses),
    )
    .map((p) => p.metadata?.name ?? '');
}

/** A merge patch of a Secret, with the resourceVersion it was read at: undefined when it changed since. */
async function patchSecret(client: KubeClient, secret: V1Secret, patch: SecretPatch): Promise<V1Secret | undefined> {
  try {
    return await client.requestJson<V1Secret>({
      method: HttpMethod.PATCH,
      path: `/api/v1/namespaces/${secret.metadata?.namespace ?? ''}/secrets/${encodeURIComponent(secret.metadata?.name ?? '')}`,
      body: JSON.stringify({
        ...patch,
        metadata: { ...(patch.metadata ?? {}), resourceVersion: secret.metadata?.resourceVersion },
      }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
  } catch (e) {
    if (apiError(e).code === 409) return undefined;
    throw e;
  }
}

/** The rotation of one cluster's own accounts: the pass under way, held by the cluster's runtime (cluster-runtime.ts). */
export type ClusterRotation = ReturnType<typeof createClusterRotation>;

export function createClusterRotation(opts: ClusterRotationOptions = {}) {
  const open =
    opts.open ??
    ((o: { host: string; servername: string; password: string; ca: string }) =>
      ClusterAccountSession.open({ ...o, port: MYSQL_PORT, user: 'root' }));
  const agentRevision = opts.agentRevision ?? fetchAgentRevision;
  /** The pass under way, and what finished passes found that manage() has not reported. */
  let running: Promise<void> | undefined;
  let reported: { outcome?: RotationOutcome; events: ManagedEvent[] } | undefined;

  return {
    /**
     * `database`: the member pods; `primary`: status.currentPrimary as the HA step left it;
     * `controllerBusy`: whether the Apps' accounts' pass (as root, with the Secret it read) is under way.
     */
    async sync(
      ctx: ManageContext<MySQLClusterFacts>,
      database: readonly V1Pod[],
      primary: string | undefined,
      controllerBusy: () => boolean,
    ): Promise<ClusterRotationReport> {
      const { cr, client } = ctx;
      const last = (cr.status?.credentialRotation ?? undefined) as MySQLCredentialRotationStatus | undefined;
      const ca = ctx.prepared.facts?.tls?.caPem;
      let run = running;
      // No credential goes to a member that could not be verified (the TLS Secret's problem is reported).
      if (!run && ca) {
        const namespace = cr.metadata.namespace ?? '';
        const names = mysqlClusterNames(cr.metadata.name, ctx.prepared.facts?.credentialsSecretName);
        const read = ctx.secrets ?? ((ns: string, n: string) => readSecret(client, ns, n));
        const ipOf = (name: string) => database.find((p) => p.metadata?.name === name)?.status?.podIP;
        const members = database.map((p) => {
          const ip = p.status?.podIP;
          return { name: p.metadata?.name ?? '', ...(ip ? { ip } : {}) };
        });
        const primaryIp = primary !== undefined ? ipOf(primary) : undefined;
        const env: RotationEnvironment = {
          readSecret: () => read(namespace, names.credentialsSecret),
          patchSecret: (secret, patch) => patchSecret(client, secret, patch),
          ...(primary !== undefined ? { primary: { name: primary, ...(primaryIp ? { ip: primaryIp } : {}) } } : {}),
          members,
          bootstrapping: bootstrappingMembers(database),
          jobs: runningJobs(ctx.pods),
          // The member's agent over TLS, verified by the CA and the name of the member at that address.
          agentRevision: (ip) => {
            const member = database.find((p) => p.status?.podIP === ip)?.metadata?.name ?? ip;
            return agentRevision({ ip, servername: names.memberHost(member), ca });
          },
          // Verified by the name of the member at that address (its pod's): the certificate must hold it.
          open: (ip, password) => {
            const member = database.find((p) => p.status?.podIP === ip)?.metadata?.name ?? ip;
            return open({ host: ip, servername: names.memberHost(member), password, ca });
          },
          controllerBusy,
          checkLeading: () => ctx.signal?.throwIfAborted(),
        };
        const spec = (cr.spec ?? {}) as { credentialsSecretName?: string };
        run = rotateClusterCredentials(
          {
            ...(() => {
              const requested = parseRotationRequest(cr.metadata.annotations?.[ROTATE_CREDENTIALS_ANNOTATION]);
              return requested ? { requested } : {};
            })(),
            ...(last?.completed !== undefined ? { completed: last.completed } : {}),
            secretWritable: (secret) =>
              spec.credentialsSecretName === undefined &&
              secret.metadata?.labels?.[GENERATED_BY_LABEL] === cr.metadata.name,
          },
          env,
        )
          .then((outcome) => {
            reported = { outcome, events: [...(reported?.events ?? []), ...outcome.events] };
            for (const e of outcome.events)
              if (e.type === 'Warning') ctx.log.warn('cluster accounts rotation', { error: e.message });
              else ctx.log.info('cluster accounts rotation', { did: e.message });
          })
          .catch((e: unknown) => {
            if ((e as { name?: string }).name === 'AbortError') return;
            ctx.log.warn('cluster accounts rotation', { error: `a pass failed: ${String((e as Error).message ?? e)}` });
          })
          .finally(() => (running = undefined));
        running = run;
      }
      let timer: NodeJS.Timeout | undefined;
      if (run) await Promise.race([run, new Promise<void>((resolve) => (timer = setTimeout(resolve, WAIT_MS)))]);
      clearTimeout(timer);
      const found = reported;
      reported = { ...(found?.outcome ? { outcome: found.outcome } : {}), events: [] };
      // Until a pass has reported, what the status says; after, what the last pass found (nothing, once
      // the request is gone and no rotation was ever completed).
      const status = found?.outcome ? found.outcome.status : last;
      return {
        ...(status ? { status } : {}),
        events: found?.events ?? [],
        problems: found?.outcome?.problems ?? [],
        busy: running !== undefined || found?.outcome?.busy === true,
      };
    },
  };
}
