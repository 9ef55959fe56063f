// An App's database binding (spec.database), the App's side: the binding Secret (its generated password
// and the servicebinding.io keys), and whether the account is ready, as the MySQLCluster's status says
// (the cluster's manager makes the account on the primary: mysql-cluster/app-accounts.ts).
import type { V1Secret } from '@kubernetes/client-node';
import {
  DATABASE_BINDING_SECRET_KEYS as KEYS,
  MYSQL_CLUSTER,
  MYSQL_PORT,
  databaseBindingSecretName,
  mysqlClusterNames,
} from '../../../constructs/index.js';
import type { AppDatabase, MySQLClusterStatus } from '../../../constructs/index.js';
import type { KubeClient } from '../../kube/index.js';
import { HttpMethod, PatchStrategy, apiError, bindingSubject, isAlreadyExists, whoAmI } from '../../kube/index.js';
import { accountName } from '../../mysql/accounts.js';
import type { ConditionInput } from '../../reconcile/conditions.js';
import { GENERATED_BY_LABEL, generatePassword } from '../../reconcile/credential-keys.js';
import type { CustomResource, PrepareContext, Preparation, Problem, SecretLookup } from '../kind-controller.js';
import { readSecret } from '../mysql-cluster/credentials-secret.js';
import { controllerReference } from '../status.js';
import type { CredentialRotationStatus } from './binding-rotation.js';
import { rotateAppPassword, rotationStatusOf } from './binding-rotation.js';

/** What prepare() found of an App's database binding, for observe(). */
export interface BindingFacts {
  /** The binding Secret (status.binding). */
  readonly secretName: string;
  /** status.credentialRotation (binding-rotation.ts). */
  readonly rotation?: CredentialRotationStatus;
  /** The DatabaseReady condition. */
  readonly ready: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
}

/** The binding Secret's data other than the password: what the App's spec and name determine. */
export function bindingData(
  namespace: string,
  app: string,
  database: AppDatabase,
  caPem?: string,
): Record<string, string> {
  const names = mysqlClusterNames(database.cluster);
  return {
    ...(caPem ? { [KEYS.ca]: caPem } : {}),
    [KEYS.type]: 'mysql',
    [KEYS.provider]: 'recon8s',
    [KEYS.host]: `${names.primaryService}.${namespace}.svc`,
    [KEYS.readHost]: `${names.replicasService}.${namespace}.svc`,
    [KEYS.port]: String(MYSQL_PORT),
    [KEYS.database]: database.name,
    [KEYS.username]: accountName(namespace, app),
  };
}

/**
 * The binding Secret, created once (a generated password) and kept up to date in everything but the
 * password; a Secret of that name that is not this App's is never touched. Then what the cluster says of
 * the account. Passwords never leave this function.
 */
export async function prepareBinding({
  client,
  cr,
  install,
  secrets,
  resources,
}: PrepareContext): Promise<Preparation<BindingFacts>> {
  const database = (cr.spec as { database?: AppDatabase } | undefined)?.database;
  if (!database) return { problems: [] };
  const namespace = cr.metadata.namespace ?? '';
  const name = cr.metadata.name;
  const secretName = databaseBindingSecretName(name);
  const problems: Problem[] = [];
  const events: { reason: string; message: string }[] = [];
  // What the status said of rotations is said again until a rotation step says more (a status write
  // that left it out would forget which rotation completed).
  const carried = rotationStatusOf(cr);
  let rotationStatus: CredentialRotationStatus | undefined =
    carried.requested !== undefined || carried.completed !== undefined
      ? {
          ...(carried.requested !== undefined ? { requested: carried.requested } : {}),
          ...(carried.completed !== undefined ? { completed: carried.completed } : {}),
        }
      : undefined;
  const facts = (ready: BindingFacts['ready']): BindingFacts => ({
    secretName,
    ...(rotationStatus !== undefined ? { rotation: rotationStatus } : {}),
    ready,
  });
  const notReady = (reason: string, message: string): Preparation<BindingFacts> => ({
    problems,
    events,
    facts: facts({ status: 'False', reason, message }),
  });

  const read: SecretLookup = secrets ?? ((ns, n) => readSecret(client, ns, n));
  let secret: V1Secret | undefined;
  try {
    // The CA that verifies the cluster's members (status.tlsSecretName's ca.crt), for the App's clients.
    const tlsSecretName = (
      resources?.get(MYSQL_CLUSTER.kind, namespace, database.cluster)?.status as { tlsSecretName?: string } | undefined
    )?.tlsSecretName;
    const caData = tlsSecretName ? (await read(namespace, tlsSecretName))?.data?.['ca.crt'] : undefined;
    const caPem = caData ? Buffer.from(caData, 'base64').toString('utf8') : undefined;
    secret = await read(namespace, secretName);
    if (!secret) {
      if (await createSecret(client, cr, secretName, bindingData(namespace, name, database, caPem)))
        events.push({
          reason: 'DatabaseSecretCreated',
          message: `created Secret ${secretName} with a generated password for account ${accountName(namespace, name)}`,
        });
    } else if (!ownedBy(secret, cr)) {
      const message = `Secret ${secretName} exists and is not this App's: recon8s never changes or deletes it; rename or remove it, and the App gets its database account`;
      problems.push({ reason: 'DatabaseSecretConflict', message });
      return notReady('SecretConflict', message);
    } else {
      // Written just now: its resourceVersion is gone, so a rotation step waits for the next pass.
      if (await updateSecret(client, secret, bindingData(namespace, name, database, caPem))) secret = undefined;
    }
  } catch (e) {
    if (apiError(e).code !== 403) throw e;
    const role = install.credentialsClusterRole ?? 'recon8s-credentials';
    const message = `recon8s may not read or create Secrets in namespace ${namespace}: bind the ClusterRole ${role} there (kubectl create rolebinding ${role} -n ${namespace} --clusterrole=${role} ${bindingSubject(await whoAmI(client))})`;
    problems.push({ reason: 'CredentialsForbidden', message });
    return notReady('SecretForbidden', message);
  }

  const cluster = resources?.get(MYSQL_CLUSTER.kind, namespace, database.cluster);
  if (!cluster) {
    const message = `MySQLCluster ${database.cluster} named in spec.database.cluster does not exist in namespace ${namespace}`;
    problems.push({ reason: 'DatabaseClusterNotFound', message });
    return notReady('ClusterNotFound', message);
  }
  const account = ((cluster.status ?? {}) as Pick<MySQLClusterStatus, 'accounts'>).accounts?.find(
    (a) => a.app === name,
  );
  // A rotation's step, when it is the App's (the Secret, the pod template, the status): the Secret read
  // above, which this App owns (a new one has no rotation to take part in yet).
  let rotating: string | undefined;
  if (secret) {
    const rotation = await rotateAppPassword(client, cr, secret, account);
    rotationStatus = rotation.status;
    events.push(...rotation.events);
    rotating = rotation.status.message;
  }
  if (!account)
    return notReady(
      'AccountPending',
      `waiting for MySQLCluster ${database.cluster} to create account ${accountName(namespace, name)} on its primary`,
    );
  if (!account.ready) {
    if (account.reason === 'Conflict' || account.reason === 'Failed')
      problems.push({ reason: `DatabaseAccount${account.reason}`, message: account.message ?? '' });
    return notReady(account.reason ?? 'AccountPending', account.message ?? 'the account is not ready');
  }
  const current = (cr.status?.conditions ?? []).find((c) => c.type === 'DatabaseReady');
  const message = `account ${account.user} has ${database.access ?? 'readWrite'} access to database ${database.name} of MySQLCluster ${database.cluster}${rotating ? `; password rotation in progress: ${rotating}` : ''}`;
  if (current?.status !== 'True') events.push({ reason: 'DatabaseAccountReady', message });
  return {
    problems,
    events,
    facts: facts({ status: 'True', reason: 'AccountReady', message }),
  };
}

/** status.binding and the DatabaseReady condition, from what prepare found. */
export function observeBinding(facts: BindingFacts | undefined): {
  fields: Record<string, unknown>;
  conditions: ConditionInput[];
} {
  if (!facts) return { fields: {}, conditions: [] };
  const rotation = facts.rotation;
  // Nothing to say before the first rotation is asked for: no empty object in every App's status.
  const said = rotation !== undefined && Object.keys(rotation).length > 0;
  return {
    fields: {
      binding: { name: facts.secretName },
      ...(said ? { credentialRotation: rotation } : {}),
    },
    conditions: [{ type: 'DatabaseReady', ...facts.ready }],
  };
}

function ownedBy(secret: V1Secret, cr: CustomResource): boolean {
  return (
    secret.metadata?.labels?.[GENERATED_BY_LABEL] === cr.metadata.name &&
    (secret.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === cr.metadata.uid)
  );
}

/** Creates the Secret, owned by the App (deleted with it); false when someone created it first. */
async function createSecret(
  client: KubeClient,
  cr: CustomResource,
  name: string,
  data: Record<string, string>,
): Promise<boolean> {
  const namespace = cr.metadata.namespace ?? '';
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      labels: {
        'app.kubernetes.io/managed-by': 'recon8s',
        'app.kubernetes.io/instance': cr.metadata.name,
        [GENERATED_BY_LABEL]: cr.metadata.name,
      },
      ownerReferences: [controllerReference(cr)],
    },
    // servicebinding.io: the Secret's type says what it binds.
    type: 'servicebinding.io/mysql',
    stringData: { ...data, [KEYS.password]: generatePassword() },
  };
  try {
    await client.request({
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${namespace}/secrets`,
      body: JSON.stringify(secret),
      headers: { 'Content-Type': 'application/json' },
    });
    return true;
  } catch (e) {
    // Another reconcile created it first: theirs is kept, and judged next time.
    if (isAlreadyExists(e)) return false;
    throw e;
  }
}

/** The keys the spec determines, when they differ (the database or cluster changed); the password stays. */
async function updateSecret(client: KubeClient, secret: V1Secret, data: Record<string, string>): Promise<boolean> {
  const current = secret.data ?? {};
  const changed = Object.entries(data).filter(
    ([k, v]) => Buffer.from(current[k] ?? '', 'base64').toString('utf8') !== v,
  );
  const noPassword = !current[KEYS.password];
  if (changed.length === 0 && !noPassword) return false;
  await client.request({
    method: HttpMethod.PATCH,
    path: `/api/v1/namespaces/${secret.metadata?.namespace ?? ''}/secrets/${encodeURIComponent(secret.metadata?.name ?? '')}`,
    body: JSON.stringify({
      // A compare-and-swap: a Secret changed since it was read is not overwritten.
      metadata: { resourceVersion: secret.metadata?.resourceVersion },
      stringData: { ...Object.fromEntries(changed), ...(noPassword ? { [KEYS.password]: generatePassword() } : {}) },
    }),
    headers: { 'Content-Type': PatchStrategy.MergePatch },
  });
  return true;
}
