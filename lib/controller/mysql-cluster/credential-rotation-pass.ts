// A pass of the rotation of a MySQLCluster's own accounts (lib/mysql/credential-rotation.ts decides): it
// observes what the decision reads, takes the step, and looks again, until the step is one of waiting.
// The loop around the decision, and nothing more: the Secret, the members and the agents are reached
// through a RotationEnvironment (the MySQLCluster's manager builds it from its context, the real-mysqld
// test from a modelled Secret and kubelet). Passwords go from the Secret to MySQL and back into the
// Secret; none is ever logged, reported or put in an Event.
import type { V1Secret } from '@kubernetes/client-node';
import type { MySQLCredentialRotationStatus } from '../../../constructs/index.js';
import {
  MYSQL_CREDENTIALS_REVISION_KEY,
  MYSQL_INITIAL_CREDENTIALS_REVISION,
  MYSQL_NEXT_PASSWORD_SUFFIX,
  MYSQL_ROTATED_ACCOUNTS_ANNOTATION,
  MYSQL_SECRET_KEYS,
  PASSWORD_NEXT_REVISION_ANNOTATION,
  PASSWORD_REVISION_ANNOTATION,
} from '../../../constructs/index.js';
import type { AccountHolds } from '../../mysql/password-rotation.js';
import type { ClusterAccountActions, ObservedClusterAccount } from '../../mysql/cluster-account-sql.js';
import { clusterFingerprint } from '../../mysql/cluster-account-sql.js';
import type {
  ClusterAccount,
  ClusterRotationFacts,
  ClusterRotationRequest,
  ClusterRotationStep,
  ReplicaChannel,
} from '../../mysql/credential-rotation.js';
import {
  CLUSTER_ACCOUNTS,
  clusterRotationInFlight,
  clusterRotationPhase,
  decideClusterRotation,
  describeClusterRotationStep,
} from '../../mysql/credential-rotation.js';
import { generatePassword } from '../../reconcile/credential-keys.js';
import type { ManagedEvent, Problem } from '../kind-controller.js';

/** Steps per pass: stage, retain, switch in the first; a replica re-pointed and the discard in later ones. */
const MAX_STEPS = 8;

/** Each account's key in the credentials Secret. */
export const ACCOUNT_KEYS: Readonly<Record<ClusterAccount, string>> = {
  root: MYSQL_SECRET_KEYS.rootPassword,
  replication: MYSQL_SECRET_KEYS.replicationPassword,
  admin: MYSQL_SECRET_KEYS.adminPassword,
  clone: MYSQL_SECRET_KEYS.clonePassword,
  backup: MYSQL_SECRET_KEYS.backupPassword,
};
const nextKey = (a: ClusterAccount): string => `${ACCOUNT_KEYS[a]}${MYSQL_NEXT_PASSWORD_SUFFIX}`;

/** What the Secret says of a rotation, and its passwords (decoded; never to leave this module but to MySQL). */
export interface SecretState {
  readonly current: Readonly<Record<ClusterAccount, string | undefined>>;
  readonly next: Readonly<Partial<Record<ClusterAccount, string>>>;
  readonly revision?: string;
  readonly switched?: readonly ClusterAccount[];
  readonly staged?: ClusterRotationRequest;
}

const decode = (v: string | undefined): string | undefined =>
  v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8') || undefined;
const isAccount = (a: string): a is ClusterAccount => (CLUSTER_ACCOUNTS as readonly string[]).includes(a);

/**
 * The Secret as the decision reads it. A `-next` key staged without its token (written by hand) is
 * finished as the rotation asked for.
 */
export function secretState(secret: V1Secret, requested?: ClusterRotationRequest): SecretState {
  const data = secret.data ?? {};
  const annotations = secret.metadata?.annotations ?? {};
  const next: Partial<Record<ClusterAccount, string>> = {};
  for (const a of CLUSTER_ACCOUNTS) {
    const v = decode(data[nextKey(a)]);
    if (v !== undefined) next[a] = v;
  }
  const stagedAccounts = CLUSTER_ACCOUNTS.filter((a) => next[a] !== undefined);
  const stagedToken = annotations[PASSWORD_NEXT_REVISION_ANNOTATION] ?? requested?.token ?? '-';
  const switched = annotations[MYSQL_ROTATED_ACCOUNTS_ANNOTATION]?.split(',').filter(isAccount);
  const revision = decode(data[MYSQL_CREDENTIALS_REVISION_KEY]);
  return {
    current: Object.fromEntries(CLUSTER_ACCOUNTS.map((a) => [a, decode(data[ACCOUNT_KEYS[a]])])) as Record<
      ClusterAccount,
      string | undefined
    >,
    next,
    ...(revision !== undefined ? { revision } : {}),
    ...(switched !== undefined && switched.length > 0 ? { switched } : {}),
    ...(stagedAccounts.length > 0 ? { staged: { token: stagedToken, accounts: stagedAccounts } } : {}),
  };
}

/** A merge patch of the Secret (its metadata.resourceVersion is added: a compare-and-swap). */
export interface SecretPatch {
  readonly metadata?: { readonly annotations?: Record<string, string | null> };
  readonly data?: Record<string, string | null>;
}

/** Stage: a new password for each account, as `<key>-next`, and the token it is for. */
export function stagePatch(
  token: string,
  accounts: readonly ClusterAccount[],
  generate = generatePassword,
): SecretPatch {
  return {
    metadata: { annotations: { [PASSWORD_NEXT_REVISION_ANNOTATION]: token } },
    data: Object.fromEntries(accounts.map((a) => [nextKey(a), Buffer.from(generate()).toString('base64')])),
  };
}

/** Switch: each `<key>` := its `-next` (copied as stored: never decoded here), the revision := the token. */
export function switchPatch(secret: V1Secret, token: string, accounts: readonly ClusterAccount[]): SecretPatch {
  const data = secret.data ?? {};
  return {
    metadata: {
      annotations: {
        [PASSWORD_REVISION_ANNOTATION]: token,
        [PASSWORD_NEXT_REVISION_ANNOTATION]: null,
        [MYSQL_ROTATED_ACCOUNTS_ANNOTATION]: accounts.join(','),
      },
    },
    data: {
      ...Object.fromEntries(accounts.flatMap((a) => [[ACCOUNT_KEYS[a], data[nextKey(a)] ?? null] as const])),
      ...Object.fromEntries(CLUSTER_ACCOUNTS.map((a) => [nextKey(a), null])),
      [MYSQL_CREDENTIALS_REVISION_KEY]: Buffer.from(token).toString('base64'),
    },
  };
}

/** What the MySQLCluster resource says. */
export interface RotationInputs {
  /** The recon8s.dev/rotate-credentials annotation, parsed. */
  readonly requested?: ClusterRotationRequest;
  /** status.credentialRotation.completed. */
  readonly completed?: string;
  /** Whether the Secret is the one recon8s generated for this cluster (not named in the spec): it may write it. */
  readonly secretWritable: (secret: V1Secret) => boolean;
}

export interface MemberPod {
  readonly name: string;
  readonly ip?: string;
}

/** Where a pass reads and writes. */
export interface RotationEnvironment {
  /** The credentials Secret as the controller's cache has it (what the manager and the Apps' accounts read). */
  readSecret(): Promise<V1Secret | undefined>;
  /** A merge patch, compare-and-swap on the resourceVersion read: the Secret after it, undefined on a conflict. */
  patchSecret(secret: V1Secret, patch: SecretPatch): Promise<V1Secret | undefined>;
  /** status.currentPrimary's pod. */
  readonly primary?: MemberPod;
  /** Every member pod, the primary's too (terminating ones: their agent may still run). */
  readonly members: readonly MemberPod[];
  /** Member pods whose bootstrap (init) container runs. */
  readonly bootstrapping: readonly string[];
  /** The cluster's job pods that run (backups, the binary-log archive, verification). */
  readonly jobs: readonly string[];
  /** The credentials revision a member's agent reads (GET /credentials-revision); undefined: no answer. */
  agentRevision(ip: string): Promise<string | undefined>;
  /** A session to a member as root, its certificate verified. */
  open(ip: string, rootPassword: string): Promise<ClusterAccountActions>;
  /** A session of the controller that read the Secret before (the Apps' accounts' pass) may still log in. */
  controllerBusy(): boolean;
  /** Throws once this process may no longer act (leadership lost). */
  checkLeading(): void;
}

export interface RotationOutcome {
  readonly step: ClusterRotationStep;
  /** status.credentialRotation (undefined: no rotation was ever asked for). */
  readonly status?: MySQLCredentialRotationStatus;
  readonly events: readonly ManagedEvent[];
  readonly problems: readonly Problem[];
  /** A rotation is under way: look again soon. */
  readonly busy: boolean;
}

const EVENT_REASONS: Partial<Record<ClusterRotationStep['kind'], string>> = {
  stage: 'CredentialsRotationStaged',
  retain: 'ClusterAccountPasswordRetained',
  restore: 'ClusterAccountPasswordRestored',
  repair: 'ClusterAccountPasswordSet',
  switch: 'CredentialsRotationSwitched',
  repoint: 'ReplicaRepointed',
  discard: 'ClusterAccountOldPasswordDiscarded',
  complete: 'CredentialsRotationCompleted',
};

/** A mysql2 or API error in its own words (never a statement's text, which would hold a password). */
function describe(e: unknown): string {
  const err = e as { code?: string; sqlMessage?: string; message?: string };
  return `${err.code ? `${err.code}: ` : ''}${err.sqlMessage ?? err.message ?? String(e)}`.slice(0, 300);
}

/** One pass: observe, decide, act, until the decision waits (or MAX_STEPS). Never throws but for leadership. */
export async function rotateClusterCredentials(
  inputs: RotationInputs,
  env: RotationEnvironment,
): Promise<RotationOutcome> {
  const events: ManagedEvent[] = [];
  const problems: Problem[] = [];
  let completed = inputs.completed;
  let secret = await env.readSecret();
  const statusOf = (step: ClusterRotationStep): MySQLCredentialRotationStatus | undefined => {
    const phase = step.kind === 'complete' ? undefined : clusterRotationPhase(step);
    if (inputs.requested === undefined && completed === undefined && phase === undefined) return undefined;
    return {
      ...(inputs.requested ? { requested: inputs.requested.token, accounts: [...inputs.requested.accounts] } : {}),
      ...(completed !== undefined ? { completed } : {}),
      ...(phase !== undefined ? { phase, message: describeClusterRotationStep(step) } : {}),
    };
  };
  const idle: ClusterRotationStep = { kind: 'idle' };
  if (!secret) return { step: idle, status: statusOf(idle), events, problems, busy: false };
  const first = secretState(secret, inputs.requested);
  if (clusterRotationInFlight({ ...inputs, secretRevision: first.revision, staged: first.staged }) === undefined)
    return { step: idle, status: statusOf(idle), events, problems, busy: false };

  const sessions = new Map<string, Promise<ClusterAccountActions>>();
  const session = (ip: string, rootPassword: string): Promise<ClusterAccountActions> => {
    let s = sessions.get(ip);
    if (!s) {
      s = env.open(ip, rootPassword);
      sessions.set(ip, s);
      s.catch(() => sessions.delete(ip));
    }
    return s;
  };
  /** The Secret this pass decides from was read from the cache (not written by this pass). */
  let fromCache = true;
  let step: ClusterRotationStep = idle;
  try {
    for (let i = 0; i < MAX_STEPS; i++) {
      const state = secretState(secret, inputs.requested);
      const facts = await observe(inputs, completed, secret, fromCache, env, session);
      step = decideClusterRotation(facts);
      const said = describeClusterRotationStep(step);
      if (['idle', 'await', 'awaitAccount'].includes(step.kind)) break;
      if (step.kind === 'refuse') {
        problems.push({ reason: 'CredentialsRotationRefused', message: said });
        events.push({
          type: 'Warning',
          reason: 'CredentialsRotationRefused',
          message: said,
          once: `rotation/${step.token}`,
        });
        break;
      }
      env.checkLeading();
      const primarySession = async () =>
        env.primary?.ip ? session(env.primary.ip, state.current.root ?? '') : Promise.reject(new Error('no primary'));
      switch (step.kind) {
        case 'stage':
        case 'switch': {
          const patched = await env.patchSecret(
            secret,
            step.kind === 'stage'
              ? stagePatch(step.token, step.accounts)
              : switchPatch(secret, step.token, step.accounts),
          );
          // Changed since it was read (our cache behind our own write, or someone else's): judged again next pass.
          if (!patched) return outcome(step);
          secret = patched;
          fromCache = false;
          break;
        }
        case 'retain':
        case 'restore':
        case 'repair': {
          const s = await primarySession();
          for (const account of step.accounts) {
            const retained = step.kind === 'retain';
            const password = retained ? state.next[account] : state.current[account];
            if (password === undefined) throw new Error(`the credentials Secret has no password for ${account}`);
            await s.setPassword({
              account,
              password,
              revision: retained ? step.token : (state.revision ?? MYSQL_INITIAL_CREDENTIALS_REVISION),
              retain: step.kind !== 'repair' || step.retain,
            });
          }
          break;
        }
        case 'repoint': {
          const member = step.member;
          const pod = env.members.find((m) => m.name === member);
          if (!pod?.ip) throw new Error(`member ${member} has no address`);
          await (await session(pod.ip, state.current.root ?? '')).repoint(state.current.replication ?? '');
          break;
        }
        case 'discard':
          await (await primarySession()).discardOldPasswords(step.accounts);
          break;
        case 'complete':
          completed = step.token;
          break;
      }
      events.push({
        type: 'Normal',
        reason: EVENT_REASONS[step.kind] ?? 'CredentialsRotation',
        message: said,
        // Said once, however many passes find it complete before the status says so.
        ...(step.kind === 'complete' ? { once: `rotation-completed/${step.token}` } : {}),
      });
      if (step.kind === 'complete') break;
    }
    return outcome(step);
  } catch (e) {
    if ((e as { name?: string }).name === 'AbortError') throw e;
    const message = `${describeClusterRotationStep(step).replace(/^\w+/, (w) => `could not finish ${w}`)}: ${describe(e)}`;
    events.push({ type: 'Warning', reason: 'CredentialsRotationFailed', message });
    return outcome(step, message);
  } finally {
    await Promise.all([...sessions.values()].map((s) => s.then((x) => x.close()).catch(() => undefined)));
  }

  function outcome(last: ClusterRotationStep, failure?: string): RotationOutcome {
    const status = statusOf(last);
    return {
      step: last,
      status: failure && status ? { ...status, message: failure } : status,
      events,
      problems,
      busy: last.kind !== 'idle' && last.kind !== 'complete' && last.kind !== 'refuse',
    };
  }
}

/** Everything the decision reads, as this pass sees it now. */
async function observe(
  inputs: RotationInputs,
  completed: string | undefined,
  secret: V1Secret,
  fromCache: boolean,
  env: RotationEnvironment,
  session: (ip: string, rootPassword: string) => Promise<ClusterAccountActions>,
): Promise<ClusterRotationFacts> {
  const state = secretState(secret, inputs.requested);
  const root = state.current.root ?? '';
  const token = clusterRotationInFlight({ ...inputs, completed, secretRevision: state.revision, staged: state.staged });
  const switched = token !== undefined && state.staged === undefined && state.revision === token;
  const unknown = { holds: 'unknown' as AccountHolds, retains: false };
  let observed: Record<ClusterAccount, ObservedClusterAccount> | undefined;
  if (env.primary?.ip && (state.staged !== undefined || switched)) {
    try {
      const s = await session(env.primary.ip, root);
      // Only a primary that takes writes is changed: its changes replicate (semi-synchronously).
      if (await s.takesWrites()) observed = await s.observe();
    } catch {
      // Not reported: no step is taken on an account the primary did not report (awaitAccount says so).
    }
  }
  const holds = (a: ClusterAccount): AccountHolds => {
    const o = observed?.[a];
    if (!o?.exists) return 'unknown';
    // No rotation ever set it: the bootstrap and the agents keep it at the Secret's password.
    if (o.fingerprint === undefined) return 'current';
    const current = state.current[a];
    if (current !== undefined && o.fingerprint === clusterFingerprint(a, current)) return 'current';
    const next = state.next[a];
    if (next !== undefined && o.fingerprint === clusterFingerprint(a, next)) return 'next';
    return 'other';
  };
  const accounts = Object.fromEntries(
    CLUSTER_ACCOUNTS.map((a) => [a, observed ? { holds: holds(a), retains: observed[a].retains } : unknown]),
  ) as Record<ClusterAccount, { holds: AccountHolds; retains: boolean }>;

  // Who still uses the old passwords matters only once the Secret is switched; the replicas' channels
  // only when the replication account is rotated.
  const replicas = env.members.filter((m) => m.name !== env.primary?.name);
  const channels: ReplicaChannel[] =
    switched && (state.switched ?? CLUSTER_ACCOUNTS).includes('replication')
      ? await Promise.all(
          replicas.map(async (m): Promise<ReplicaChannel> => {
            if (!m.ip) return { member: m.name, password: 'unknown', receiver: 'OFF', applier: 'OFF' };
            try {
              return {
                member: m.name,
                ...(await (await session(m.ip, root)).channel(state.current.replication ?? '')),
              };
            } catch {
              return { member: m.name, password: 'unknown', receiver: 'OFF', applier: 'OFF' };
            }
          }),
        )
      : [];
  const agents = switched
    ? await Promise.all(
        env.members.map(async (m) => {
          const revision = m.ip ? await env.agentRevision(m.ip).catch(() => undefined) : undefined;
          return { member: m.name, ...(revision !== undefined ? { revision } : {}) };
        }),
      )
    : [];
  return {
    ...(inputs.requested ? { requested: inputs.requested } : {}),
    ...(completed !== undefined ? { completed } : {}),
    secretWritable: inputs.secretWritable(secret),
    ...(state.revision !== undefined ? { secretRevision: state.revision } : {}),
    ...(state.switched ? { switched: state.switched } : {}),
    ...(state.staged ? { staged: state.staged } : {}),
    accounts,
    channels,
    agents,
    bootstrapping: env.bootstrapping,
    jobs: env.jobs,
    controllerRenewed: fromCache && !env.controllerBusy(),
  };
}
