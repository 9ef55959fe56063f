// MySQLCluster: what it needs beyond its children (a credentials Secret, the backup volume it names),
// how a refused StatefulSet is recovered (re-created around its pods: storage growth, pod management),
// its status, and what its members report.
// The home of everything MySQL-specific the controller does.
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import type { KubernetesObject } from '../../../constructs/index.js';
import { MYSQL_CLUSTER, MYSQL_OBJECT_STORE_SECRET_KEYS, mysqlClusterNames } from '../../../constructs/index.js';
import { getObject } from '../../kube/index.js';
import { workloadConditions, workloadFigures } from '../../reconcile/workload-conditions.js';
import type {
  ClaimLookup,
  CustomResource,
  KindController,
  LiveLookup,
  ObservedState,
  PrepareContext,
  Preparation,
  Problem,
  SecretLookup,
} from '../kind-controller.js';
import { compact, controlledBy, find, podsControlledBy, selectorString, serviceEndpoint } from '../status.js';
import { createMySQLClusterManager } from './cluster-manager.js';
import { ensureCredentials, readSecret } from './credentials-secret.js';
import { MYSQL_MEMBER_SELECTOR, memberReports } from './member-reports.js';
import { describeChange, replaceStatefulSet, withLiveImmutableFields } from './statefulset-replacement.js';
import { ensureTls } from './tls.js';
import type { MySQLClusterFacts } from './facts.js';
import { realClock } from '../../clock/index.js';

const CREDENTIALS_REASONS = {
  missing: 'CredentialsMissing',
  incomplete: 'CredentialsMissing',
  forbidden: 'CredentialsForbidden',
  invalid: 'CredentialsInvalid',
} as const;

const TLS_REASONS = {
  missing: 'TlsSecretMissing',
  foreign: 'TlsSecretForeign',
  pending: 'CertificatePending',
  invalid: 'CertificateInvalid',
  noCertManager: 'CertManagerMissing',
  certificateForeign: 'CertificateForeign',
  certificateForbidden: 'CertificateForbidden',
} as const;

async function prepare({
  client,
  cr,
  install,
  secrets,
  certificates,
  claims,
}: PrepareContext): Promise<Preparation<MySQLClusterFacts>> {
  const read = secrets ?? ((namespace: string, name: string) => readSecret(client, namespace, name));
  const credentials = await ensureCredentials(client, cr, install.credentialsClusterRole, read);
  const tls = await ensureTls(client, cr, new Date(realClock.now()), read, certificates);
  const problems: Problem[] = [];
  if ('message' in credentials)
    problems.push({ reason: CREDENTIALS_REASONS[credentials.state], message: credentials.message });
  // Forbidden Secrets are the credentials' problem already (one grant fixes both).
  if ('message' in tls && tls.state !== 'forbidden')
    problems.push({ reason: TLS_REASONS[tls.state], message: tls.message });
  const backupVolume = await backupVolumeProblem(
    claims ??
      ((namespace, name) =>
        getObject<V1PersistentVolumeClaim>(
          client,
          `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${encodeURIComponent(name)}`,
        )),
    cr,
  );
  if (backupVolume) problems.push(backupVolume);
  problems.push(...(await storeCredentialsProblems(read, cr)));
  const unusable = [
    ...('message' in credentials ? [credentials.secretName] : []),
    ...('message' in tls ? [tls.secretName] : []),
  ];
  return {
    problems,
    // Pods that read a Secret which is missing or unusable would only fail (CreateContainerConfigError,
    // or replicas that can never connect): hold them back, apply the rest. Held back is not pruned.
    holdBack: unusable.length > 0 ? (o) => unusable.some((name) => readsSecret(o, name)) : undefined,
    events: [
      ...(credentials.state === 'created'
        ? [
            {
              reason: 'CredentialsCreated',
              message: `created Secret ${credentials.secretName} with generated passwords`,
            },
          ]
        : []),
      ...(tls.requested ? [{ reason: 'CertificateRequested', message: tls.requested }] : []),
      ...(tls.state === 'issued' || tls.state === 'renewed'
        ? [
            {
              reason: tls.state === 'issued' ? 'CertificateIssued' : 'CertificateRenewed',
              message: `${tls.state} the members' certificate in Secret ${tls.secretName} (${tls.reason ?? ''})`,
            },
          ]
        : []),
    ],
    facts: {
      credentialsSecretName: credentials.secretName,
      tlsSecretName: tls.secretName,
      ...('caPem' in tls ? { tls: { caPem: tls.caPem, notAfter: tls.notAfter } } : {}),
    },
  };
}

/**
 * A backup volume named in the spec that does not exist: backups would never run. `claims`: the
 * controller's watch of it by name (no request at a reconcile once it has its first list), or a live read.
 */
async function backupVolumeProblem(claims: ClaimLookup, cr: CustomResource): Promise<Problem | undefined> {
  const claim = (cr.spec as { backup?: { persistentVolumeClaimName?: string } } | undefined)?.backup
    ?.persistentVolumeClaimName;
  if (claim === undefined) return undefined;
  const namespace = cr.metadata.namespace ?? '';
  if (await claims(namespace, claim)) return undefined;
  return {
    reason: 'BackupVolumeMissing',
    message: `PersistentVolumeClaim ${claim} named in spec.backup.persistentVolumeClaimName does not exist in namespace ${namespace}: backups cannot run until it is created (recon8s never creates it)`,
  };
}

type StoreSpec = { readonly credentialsSecretName?: string } | undefined;

/**
 * An object store's credentials Secret (spec.backup.s3, spec.restore.s3) that is missing or lacks a key:
 * the jobs, or the restoring member, cannot start until it is there.
 */
async function storeCredentialsProblems(read: SecretLookup, cr: CustomResource): Promise<Problem[]> {
  const spec = cr.spec as { backup?: { s3?: StoreSpec }; restore?: { s3?: StoreSpec } } | undefined;
  const namespace = cr.metadata.namespace ?? '';
  const problems: Problem[] = [];
  const checked = new Set<string>();
  for (const [field, store] of [
    ['spec.backup.s3.credentialsSecretName', spec?.backup?.s3],
    ['spec.restore.s3.credentialsSecretName', spec?.restore?.s3],
  ] as const) {
    const name = store?.credentialsSecretName;
    if (!name || checked.has(name)) continue;
    checked.add(name);
    const secret = await read(namespace, name);
    const data = secret && (secret.data ?? {});
    const missing = Object.values(MYSQL_OBJECT_STORE_SECRET_KEYS).filter((k) => !data?.[k]);
    if (data && missing.length === 0) continue;
    problems.push({
      reason: 'BackupStoreCredentialsMissing',
      message: data
        ? `Secret ${name} named in ${field} lacks the key(s) ${missing.join(', ')}`
        : `Secret ${name} named in ${field} does not exist in namespace ${namespace}: create it with the keys ${Object.values(MYSQL_OBJECT_STORE_SECRET_KEYS).join(' and ')} (recon8s only reads it)`,
    });
  }
  return problems;
}

/** What a MySQLCluster's StatefulSet and Services report. */
export function observeMySQL(
  cr: CustomResource,
  rendered: readonly KubernetesObject[],
  live: LiveLookup,
  credentialsSecretName: string,
  pods: readonly V1Pod[] = [],
  tlsSecretName?: string,
): ObservedState {
  const namespace = cr.metadata.namespace ?? '';
  const names = mysqlClusterNames(cr.metadata.name, credentialsSecretName);
  const sts = find(rendered, 'StatefulSet');
  const liveSts = sts && live('apps/v1', 'StatefulSet', sts.metadata.name);
  const desired = (sts?.spec as { replicas?: number } | undefined)?.replicas ?? 1;
  const figures = workloadFigures(liveSts, desired);
  return {
    fields: compact({
      replicas: figures?.replicas ?? 0,
      readyReplicas: figures?.ready ?? 0,
      selector: selectorString(sts),
      primaryEndpoint: serviceEndpoint(find(rendered, 'Service', names.primaryService), namespace),
      replicasEndpoint: serviceEndpoint(find(rendered, 'Service', names.replicasService), namespace),
      credentialsSecretName: names.credentialsSecret,
      tlsSecretName,
    }),
    conditions: workloadConditions('StatefulSet', figures),
    pods: clusterPods(cr, rendered, live, pods),
  };
}

/**
 * The members (the StatefulSet's pods) and the backup and binary-log job pods (of Jobs named after a
 * CronJob, `<cronjob>-<n>`), of workloads this cluster controls.
 */
function clusterPods(
  cr: CustomResource,
  rendered: readonly KubernetesObject[],
  live: LiveLookup,
  pods: readonly V1Pod[],
): V1Pod[] {
  const ours = (kind: string, name: string): boolean =>
    controlledBy(live(kind === 'StatefulSet' ? 'apps/v1' : 'batch/v1', kind, name), cr.metadata.uid);
  const statefulSets = rendered.filter((o) => o.kind === 'StatefulSet' && ours(o.kind, o.metadata.name));
  const cronJobs = rendered.filter((o) => o.kind === 'CronJob' && ours(o.kind, o.metadata.name));
  return podsControlledBy(
    pods,
    (ref) =>
      (ref.kind === 'StatefulSet' && statefulSets.some((o) => o.metadata.name === ref.name)) ||
      (ref.kind === 'Job' &&
        (cronJobs.some(
          (o) => ref.name.startsWith(`${o.metadata.name}-`) && /^\d+$/.test(ref.name.slice(o.metadata.name.length + 1)),
        ) ||
          // recon8s backup verify: a Job from the backup CronJob, named for what it does.
          (cronJobs.some((o) => o.metadata.name === `${cr.metadata.name}-backup`) &&
            new RegExp(`^${cr.metadata.name}-verify-\\d+$`).test(ref.name)))),
  );
}

export const MYSQL_CLUSTER_CONTROLLER: KindController<MySQLClusterFacts> = {
  definition: MYSQL_CLUSTER,
  prepare,
  async recoverRefusedApply(client, child, live) {
    // A StatefulSet's immutable fields that recon8s may still change (claim sizes that grew, the pod
    // management policy of one an older recon8s made): re-create it around its running pods (growing the
    // claims first); the next reconcile applies it again.
    if (child.kind !== 'StatefulSet') return { outcome: 'none' };
    const replacement = await replaceStatefulSet(client, child, live);
    if (replacement.outcome === 'replaced')
      return {
        outcome: 'recovering',
        reason: 'StatefulSetRecreated',
        message: `re-creating StatefulSet ${child.metadata.name} around its pods, which keep running: ${replacement.changes.map(describeChange).join('; ')}`,
      };
    if (replacement.outcome === 'refused') {
      // Everything but the immutable fields still converges; the growth is tried again (with backoff)
      // until the claim can grow (its StorageClass allows expansion, it is bound).
      const waiting = replacement.changes.filter((c) => c.field !== 'volumeClaimTemplates').map(describeChange);
      const also = waiting.length > 0 ? ` (and with it ${waiting.join('; ')})` : '';
      const message = `${replacement.message}. The StatefulSet keeps its current volume size${also} until the claims can grow (allow expansion on the StorageClass); every other change is applied`;
      return {
        outcome: 'partial',
        apply: withLiveImmutableFields(child, live),
        reason: 'StorageResizeRefused',
        message,
      };
    }
    return { outcome: 'none' };
  },
  observe: (cr, rendered, live, prepared, pods) =>
    observeMySQL(
      cr,
      rendered,
      live,
      prepared.facts?.credentialsSecretName ?? mysqlClusterNames(cr.metadata.name).credentialsSecret,
      pods,
      prepared.facts?.tlsSecretName,
    ),
  createManager: () => createMySQLClusterManager(),
  pods: {
    selector: MYSQL_MEMBER_SELECTOR,
    reports: (pod) =>
      memberReports(pod).map((r) => ({
        namespace: r.namespace,
        owner: r.cluster,
        type: r.type,
        reason: r.reason,
        message: r.message,
        key: r.key,
      })),
  },
};

/** Whether a child's pods read this Secret (an env secretKeyRef, envFrom or a secret volume). */
export function readsSecret(object: unknown, secretName: string): boolean {
  if (Array.isArray(object)) return object.some((o) => readsSecret(o, secretName));
  if (typeof object !== 'object' || object === null) return false;
  const o = object as Record<string, unknown>;
  for (const key of ['secretKeyRef', 'secretRef'] as const) {
    if ((o[key] as { name?: string } | undefined)?.name === secretName) return true;
  }
  if ((o.secret as { secretName?: string } | undefined)?.secretName === secretName) return true;
  return Object.values(o).some((v) => readsSecret(v, secretName));
}
