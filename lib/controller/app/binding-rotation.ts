// The App's side of a database password rotation (lib/mysql/password-rotation.ts decides): the binding Secret
// (stage a new password, switch to it), the pod template's revision (roll the pods), and the status
// (completed). The SQL side (retain, discard) is the MySQLCluster's (mysql-cluster/app-accounts.ts); this
// side sees the account only as the cluster reports it in status.accounts. Passwords never leave the
// Secret: they are generated into it, and copied within it from key to key.
import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import type { MySQLAccountStatus } from '../../../constructs/index.js';
import {
  APP,
  DATABASE_BINDING_SECRET_KEYS as KEYS,
  PASSWORD_NEXT_KEY,
  PASSWORD_NEXT_REVISION_ANNOTATION,
  PASSWORD_REVISION_ANNOTATION,
  ROTATE_CREDENTIALS_ANNOTATION,
} from '../../../constructs/index.js';
import type { KubeClient } from '../../kube/index.js';
import { HttpMethod, PatchStrategy, apiError } from '../../kube/index.js';
import { INITIAL_PASSWORD_REVISION } from '../../mysql/accounts.js';
import type { AccountHolds, RotationFacts, RotationStep } from '../../mysql/password-rotation.js';
import { decideRotation, describeRotationStep, rotationActor, rotationPhase } from '../../mysql/password-rotation.js';
import { generatePassword } from '../../reconcile/credential-keys.js';
import type { CustomResource } from '../kind-controller.js';

/** What an App's status says of its rotations (status.credentialRotation). */
export interface CredentialRotationStatus {
  readonly requested?: string;
  readonly completed?: string;
  readonly phase?: string;
  readonly message?: string;
  readonly rolledRevision?: string;
}

/**
 * The revision a pod template carries for a rotation's token: a hash of the token (which is not secret;
 * the hash only keeps the annotation short and uniform), never anything derived from a password.
 */
export function passwordRevision(token: string): string {
  return createHash('sha256').update(`recon8s password revision\0${token}`).digest('hex').slice(0, 16);
}

/** The rotation status an App last reported. */
export function rotationStatusOf(cr: CustomResource): CredentialRotationStatus {
  const s = cr.status?.credentialRotation;
  return typeof s === 'object' && s !== null ? (s as CredentialRotationStatus) : {};
}

/** Secret annotations, or the App's. */
function annotation(o: { metadata?: { annotations?: unknown } } | undefined, key: string): string | undefined {
  const a = o?.metadata?.annotations;
  const v = typeof a === 'object' && a !== null ? (a as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The facts of the decision but the account's, as both controllers observe them: the App's annotations
 * and status, and its Secret. Revisions on the pod template are hashes: they are turned back into the
 * token they stand for when they are that of the Secret's.
 */
export function rotationFactsOf(cr: CustomResource, secret: V1Secret): Omit<RotationFacts, 'account'> {
  const requested = annotation(cr, ROTATE_CREDENTIALS_ANNOTATION);
  const status = rotationStatusOf(cr);
  const secretRevision = annotation(secret, PASSWORD_REVISION_ANNOTATION);
  const hasNext = Boolean(secret.data?.[PASSWORD_NEXT_KEY]);
  // A password-next without its token (written by hand): it is finished as the rotation asked for.
  const staged = hasNext ? (annotation(secret, PASSWORD_NEXT_REVISION_ANNOTATION) ?? requested ?? '-') : undefined;
  const asToken = (revision: string | undefined): string | undefined =>
    revision !== undefined && secretRevision !== undefined && revision === passwordRevision(secretRevision)
      ? secretRevision
      : revision;
  const rollRevision = asToken(annotation(cr, PASSWORD_REVISION_ANNOTATION));
  const rolledRevision = asToken(status.rolledRevision);
  return {
    ...(requested !== undefined ? { requested } : {}),
    ...(status.completed !== undefined ? { completed: status.completed } : {}),
    ...(secretRevision !== undefined ? { secretRevision } : {}),
    ...(staged !== undefined ? { staged } : {}),
    ...(rollRevision !== undefined ? { rollRevision } : {}),
    ...(rolledRevision !== undefined ? { rolledRevision } : {}),
  };
}

/**
 * The facts as the App's controller observes them: the account only as the cluster reported it
 * (`account`: its entry in the cluster's status.accounts), in revisions of the Secret's passwords.
 */
export function appRotationFacts(
  cr: CustomResource,
  secret: V1Secret,
  account: MySQLAccountStatus | undefined,
): RotationFacts {
  const facts = rotationFactsOf(cr, secret);
  const reported = account?.ready ? account.passwordRevision : undefined;
  const holds: AccountHolds = !account?.ready
    ? 'unknown'
    : reported === undefined
      ? 'other'
      : facts.staged !== undefined && reported === facts.staged
        ? 'next'
        : reported === (facts.secretRevision ?? INITIAL_PASSWORD_REVISION)
          ? 'current'
          : 'other';
  return { ...facts, account: { holds, retains: account?.retainsPassword === true } };
}

/** What the App's side did and reports. */
export interface RotationOutcome {
  readonly step: RotationStep;
  /** status.credentialRotation (without rolledRevision, which observe() adds from the pods). */
  readonly status: CredentialRotationStatus;
  readonly events: readonly { readonly reason: string; readonly message: string }[];
}

/**
 * Takes the App's step of a rotation, if the next step is the App's. Writes are compare-and-swap on the
 * Secret's resourceVersion: a Secret changed since it was read is judged again next time.
 */
export async function rotateAppPassword(
  client: KubeClient,
  cr: CustomResource,
  secret: V1Secret,
  account: MySQLAccountStatus | undefined,
): Promise<RotationOutcome> {
  const facts = appRotationFacts(cr, secret, account);
  const step = decideRotation(facts);
  const before = rotationStatusOf(cr);
  let completed = facts.completed;
  const events: { reason: string; message: string }[] = [];
  const did = (reason: string, s: RotationStep = step) => events.push({ reason, message: describeRotationStep(s) });
  switch (step.kind) {
    case 'stage':
      if (
        await patchSecret(client, secret, {
          metadata: { annotations: { [PASSWORD_NEXT_REVISION_ANNOTATION]: step.token } },
          stringData: { [PASSWORD_NEXT_KEY]: generatePassword() },
        })
      )
        did('PasswordRotationStaged');
      break;
    case 'switch': {
      const next = secret.data?.[PASSWORD_NEXT_KEY];
      if (!next) break;
      // Copied as stored (base64): the password is never decoded here.
      if (
        await patchSecret(client, secret, {
          metadata: {
            annotations: { [PASSWORD_REVISION_ANNOTATION]: step.token, [PASSWORD_NEXT_REVISION_ANNOTATION]: null },
          },
          data: { [KEYS.password]: next, [PASSWORD_NEXT_KEY]: null },
        })
      )
        did('PasswordRotationSwitched');
      break;
    }
    case 'roll':
      await client.request({
        method: HttpMethod.PATCH,
        path: `/apis/${APP.group}/${APP.version}/namespaces/${cr.metadata.namespace ?? ''}/${APP.plural}/${encodeURIComponent(cr.metadata.name)}`,
        body: JSON.stringify({
          metadata: { annotations: { [PASSWORD_REVISION_ANNOTATION]: passwordRevision(step.token) } },
        }),
        headers: { 'Content-Type': PatchStrategy.MergePatch },
      });
      did('PasswordRotationRolling');
      break;
    case 'complete':
      completed = step.token;
      did('PasswordRotationCompleted');
      break;
    default:
      break;
  }
  const phase = rotationPhase(step);
  const requested = facts.requested;
  const status: CredentialRotationStatus = {
    ...(requested !== undefined ? { requested } : {}),
    ...(completed !== undefined ? { completed } : {}),
    ...(phase !== undefined && step.kind !== 'complete' ? { phase, message: describeRotationStep(step) } : {}),
  };
  // A phase newly entered on the cluster's side is said too (its own Events name the SQL); this side's
  // steps say themselves when they are taken.
  if (phase !== undefined && phase !== before.phase && rotationActor(step) === 'cluster')
    events.push({ reason: `PasswordRotation${phase}`, message: describeRotationStep(step) });
  return { step, status, events };
}

/**
 * A compare-and-swap on the Secret as it was read; false when it changed since (a cache behind our own
 * last write, or someone else's): nothing is overwritten, and the next pass judges what is there. This
 * is what keeps a staged password that the account may already hold from ever being replaced.
 */
async function patchSecret(client: KubeClient, secret: V1Secret, patch: Record<string, unknown>): Promise<boolean> {
  const metadata = (patch.metadata ?? {}) as Record<string, unknown>;
  try {
    await client.request({
      method: HttpMethod.PATCH,
      path: `/api/v1/namespaces/${secret.metadata?.namespace ?? ''}/secrets/${encodeURIComponent(secret.metadata?.name ?? '')}`,
      body: JSON.stringify({ ...patch, metadata: { ...metadata, resourceVersion: secret.metadata?.resourceVersion } }),
      headers: { 'Content-Type': PatchStrategy.MergePatch },
    });
    return true;
  } catch (e) {
    if (apiError(e).code === 409) return false;
    throw e;
  }
}

/**
 * status.credentialRotation.rolledRevision: the revision every pod of the App runs, when the Deployment's
 * template asks for the App's revision, the Deployment has seen that template, and every pod (terminating
 * ones too: they may still open connections) carries it.
 */
export function rolledRevision(
  cr: CustomResource,
  deployment: { metadata?: { generation?: number }; spec?: unknown; status?: unknown } | undefined,
  pods: readonly { metadata?: { annotations?: Record<string, string> } }[],
): string | undefined {
  const wanted = annotation(cr, PASSWORD_REVISION_ANNOTATION);
  if (wanted === undefined || deployment === undefined) return undefined;
  const template = (deployment.spec as { template?: { metadata?: { annotations?: unknown } } } | undefined)?.template;
  if (annotation(template, PASSWORD_REVISION_ANNOTATION) !== wanted) return undefined;
  const status = (deployment.status ?? {}) as {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
  };
  if (status.observedGeneration === undefined || status.observedGeneration < (deployment.metadata?.generation ?? 0))
    return undefined;
  // The Deployment counts its pods too: a pod cache that has not caught up (fewer pods than it counts)
  // must not make "every pod" true of too few.
  if ((status.updatedReplicas ?? 0) !== (status.replicas ?? 0) || pods.length < (status.replicas ?? 0))
    return undefined;
  return pods.every((p) => p.metadata?.annotations?.[PASSWORD_REVISION_ANNOTATION] === wanted) ? wanted : undefined;
}
