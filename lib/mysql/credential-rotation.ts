// Rotating a MySQLCluster's own accounts (root, replication, the controller's recon8s-admin, the clone
// and backup accounts) without
// downtime, with MySQL's dual passwords: the next step, decided from what is observed now (never from
// a remembered phase), so that a rotation interrupted anywhere (the controller restarted, a write
// lost, a failover) resumes from what it finds. Pure: facts in, one step out. The model is an App's
// rotation (password-rotation.ts); what differs is who uses the old password until when:
//
// - replication: every replica's channel (its SOURCE_PASSWORD, stored in the replica's connection
//   metadata), the members' agents (their kept sessions to the peers), a member still bootstrapping (its
//   init container waits for the primary with the password of its environment) and the controller (it
//   writes the password into a channel it points);
// - clone: the agents (re-provisioning by clone) and a member still bootstrapping (it clones with the
//   password of its environment);
// - backup: the backup and binary-log jobs (the password of their environment; the verification has none);
// - root: the agents (their sessions over the socket) and the controller (the Apps' accounts);
// - admin: the controller (every look at the members).
// The agents read the passwords from the mounted credentials Secret, which the kubelet updates some time
// after the Secret changed: each reports the revision it reads.
//
// The sequence, and why each step is safe to repeat or to stop after:
// 1. stage:    the new passwords go into the Secret as `<key>-next` BEFORE MySQL is touched, so a crash
//              never loses a password an account holds.
// 2. retain:   ALTER USER ... IDENTIFIED BY <next> RETAIN CURRENT PASSWORD on the primary (it replicates,
//              semi-synchronously): both passwords log in, on every member, and after a failover.
// 3. switch:   the Secret's `<key>` := next, `-next` dropped, its credentials-revision := the token.
// 4. repoint:  each replica whose channel holds another password gets the new one (its receiver stopped
//              and started again: one replica at a time, so that the others keep acknowledging).
// 5. await:    until every user above has moved: the controller reads the switched Secret, every agent
//              reports the new revision, every replica's receiver is connected with the new password, no
//              member bootstraps and no job runs that started with the old one.
// 6. discard:  ALTER USER ... DISCARD OLD PASSWORD, for each account whose users have all moved.
// 7. complete: the token is recorded as done in the MySQLCluster's status.
import type { ThreadState } from './topology.js';
import type { AccountHolds } from './password-rotation.js';

export const CLUSTER_ACCOUNTS = ['root', 'replication', 'admin', 'clone', 'backup'] as const;
export type ClusterAccount = (typeof CLUSTER_ACCOUNTS)[number];

/** A rotation asked for: its token and the accounts it rotates. */
export interface ClusterRotationRequest {
  readonly token: string;
  readonly accounts: readonly ClusterAccount[];
}

export interface ClusterAccountFacts {
  /** Which of the Secret's passwords the account's primary password is (by its fingerprint). */
  readonly holds: AccountHolds;
  /** Whether the account has a retained (secondary) password. */
  readonly retains: boolean;
}

/** A replica's channel, as the replica answers. */
export interface ReplicaChannel {
  readonly member: string;
  /**
   * Its stored SOURCE_PASSWORD: the Secret's replication-password (`current`), another one (`other`), no
   * channel at all (`none`: nothing to move), or not known (`unknown`: the member did not answer).
   */
  readonly password: 'current' | 'other' | 'none' | 'unknown';
  readonly receiver: ThreadState;
  readonly applier: ThreadState;
}

export interface ClusterRotationFacts {
  /** The rotation asked for (the MySQLCluster's recon8s.dev/rotate-credentials annotation). */
  readonly requested?: ClusterRotationRequest;
  /** The token of the last rotation completed (the MySQLCluster's status). */
  readonly completed?: string;
  /** The Secret is the one recon8s generated, which it may write; a Secret the spec names is only read. */
  readonly secretWritable: boolean;
  /** The token the Secret's passwords are of (its credentials-revision key); undefined: the first ones. */
  readonly secretRevision?: string;
  /** The accounts the last switch rotated (undefined: not recorded; all of them, then). */
  readonly switched?: readonly ClusterAccount[];
  /** The staged rotation: its token and the accounts with a `-next` password. */
  readonly staged?: ClusterRotationRequest;
  readonly accounts: Readonly<Record<ClusterAccount, ClusterAccountFacts>>;
  /** Every member but the primary. */
  readonly channels: readonly ReplicaChannel[];
  /** Every member pod, with the credentials revision its agent reads now (undefined: it did not say). */
  readonly agents: readonly { readonly member: string; readonly revision?: string }[];
  /** Member pods still bootstrapping (their init container has the replication password of its start). */
  readonly bootstrapping: readonly string[];
  /** The cluster's job pods still running (backups, the binary-log archive: the backup account's password of their start). */
  readonly jobs: readonly string[];
  /** The controller reads the Secret as it is now, and no session it opened with an older one is still to log in. */
  readonly controllerRenewed: boolean;
}

export type ClusterRotationStep =
  /** Nothing to do: no rotation asked for, or the last one asked for is complete. */
  | { readonly kind: 'idle' }
  /** The Secret is the user's (spec.credentialsSecretName): recon8s does not write it. */
  | { readonly kind: 'refuse'; readonly token: string }
  | { readonly kind: 'stage'; readonly token: string; readonly accounts: readonly ClusterAccount[] }
  | { readonly kind: 'retain'; readonly token: string; readonly accounts: readonly ClusterAccount[] }
  /**
   * Accounts that hold the new password but no longer the old one (someone discarded it): the old one is
   * set again with the new one retained, after which `retain` swaps them back. Nobody is locked out.
   */
  | { readonly kind: 'restore'; readonly token: string; readonly accounts: readonly ClusterAccount[] }
  /**
   * Accounts that hold a password that is neither of the Secret's (drift): the Secret's `<key>` is set
   * again; after the switch with the present one retained (users not moved yet may hold it).
   */
  | {
      readonly kind: 'repair';
      readonly token: string;
      readonly accounts: readonly ClusterAccount[];
      readonly retain: boolean;
    }
  | { readonly kind: 'switch'; readonly token: string; readonly accounts: readonly ClusterAccount[] }
  /** A replica's channel gets the Secret's replication password (its receiver stopped and started again). */
  | { readonly kind: 'repoint'; readonly token: string; readonly member: string }
  /** Users of the old passwords that have not moved yet, in words (never a password). */
  | { readonly kind: 'await'; readonly token: string; readonly awaiting: readonly string[] }
  | { readonly kind: 'discard'; readonly token: string; readonly accounts: readonly ClusterAccount[] }
  | { readonly kind: 'complete'; readonly token: string }
  /** Accounts the primary did not report (no writable primary now): nothing moves until it does. */
  | { readonly kind: 'awaitAccount'; readonly token: string; readonly accounts: readonly ClusterAccount[] };

/** The token of the rotation under way, if one is: staged, or switched and not completed, or asked for. */
export function clusterRotationInFlight(
  f: Pick<ClusterRotationFacts, 'requested' | 'completed' | 'secretRevision' | 'staged'>,
): string | undefined {
  if (f.staged !== undefined) return f.staged.token;
  if (f.secretRevision !== undefined && f.secretRevision !== f.completed) return f.secretRevision;
  if (f.requested !== undefined && f.requested.token !== f.completed) return f.requested.token;
  return undefined;
}

/** The accounts of the rotation under way: those staged, or those the switch rotated, or those asked for. */
function rotating(f: ClusterRotationFacts): readonly ClusterAccount[] {
  if (f.staged !== undefined) return f.staged.accounts;
  if (f.secretRevision !== undefined && f.secretRevision !== f.completed) return f.switched ?? CLUSTER_ACCOUNTS;
  return f.requested?.accounts ?? [];
}

const some = (
  accounts: readonly ClusterAccount[],
  f: ClusterRotationFacts,
  test: (a: ClusterAccountFacts) => boolean,
) => accounts.filter((a) => test(f.accounts[a]));

/** The next step of a rotation of the cluster's own accounts, from what is observed now. */
export function decideClusterRotation(f: ClusterRotationFacts): ClusterRotationStep {
  const token = clusterRotationInFlight(f);
  if (token === undefined) return { kind: 'idle' };
  const accounts = rotating(f);

  if (f.staged !== undefined) {
    // Before the switch every user has the Secret's `<key>`: each account must keep accepting it.
    const unknown = some(accounts, f, (a) => a.holds === 'unknown');
    if (unknown.length > 0) return { kind: 'awaitAccount', token, accounts: unknown };
    const other = some(accounts, f, (a) => a.holds === 'other');
    if (other.length > 0) return { kind: 'repair', token, accounts: other, retain: false };
    const lost = some(accounts, f, (a) => a.holds === 'next' && !a.retains);
    if (lost.length > 0) return { kind: 'restore', token, accounts: lost };
    const current = some(accounts, f, (a) => a.holds === 'current');
    if (current.length > 0) return { kind: 'retain', token, accounts: current };
    return { kind: 'switch', token, accounts };
  }

  if (f.secretRevision !== token) {
    if (!f.secretWritable) return { kind: 'refuse', token };
    return { kind: 'stage', token, accounts };
  }

  // Switched: `<key>` is the new password; users that have not moved may still use the old, retained one.
  const unknown = some(accounts, f, (a) => a.holds === 'unknown');
  if (unknown.length > 0) return { kind: 'awaitAccount', token, accounts: unknown };
  const drifted = some(accounts, f, (a) => a.holds !== 'current');
  if (drifted.length > 0) return { kind: 'repair', token, accounts: drifted, retain: true };

  // The controller first: until it reads the switched Secret, it may write the old password into a
  // channel it points, or log in with it.
  if (!f.controllerRenewed) return { kind: 'await', token, awaiting: ['the controller to read the switched Secret'] };
  if (accounts.includes('replication')) {
    const stale = f.channels.find((c) => c.password === 'other');
    // One replica at a time, while the others are connected: they keep acknowledging the primary's commits.
    const othersConnected = f.channels.every((c) => c === stale || !runs(c) || c.receiver === 'ON');
    if (stale && othersConnected) return { kind: 'repoint', token, member: stale.member };
  }

  const waits = new Map<ClusterAccount, string[]>(accounts.map((a) => [a, []]));
  const behind = f.agents.filter((a) => a.revision !== token);
  for (const a of accounts)
    (waits.get(a) ?? []).push(
      ...behind.map(
        (b) =>
          `the agent of ${b.member} to read the switched Secret (${b.revision === undefined ? 'it does not answer' : `it reads revision ${b.revision}`})`,
      ),
    );
  const bootstrapping = (account: ClusterAccount, what: string): void => {
    waits.get(account)?.push(...f.bootstrapping.map((m) => `member ${m} to finish bootstrapping (${what})`));
  };
  const replication = waits.get('replication');
  if (replication) {
    for (const c of f.channels) {
      if (c.password === 'unknown') replication.push(`replica ${c.member} to answer`);
      else if (c.password === 'other') replication.push(`replica ${c.member}'s channel to get the new password`);
      else if (c.password === 'current' && runs(c) && c.receiver !== 'ON')
        replication.push(`replica ${c.member}'s receiver to connect with the new password`);
    }
    bootstrapping('replication', 'it waits for the primary with the old password');
  }
  bootstrapping('clone', 'its clone uses the old password');
  waits.get('backup')?.push(...f.jobs.map((j) => `job pod ${j} to finish (it started with the old backup password)`));

  const moved = accounts.filter((a) => (waits.get(a) ?? []).length === 0);
  const discard = moved.filter((a) => f.accounts[a].retains);
  if (discard.length > 0) return { kind: 'discard', token, accounts: discard };
  if (moved.length === accounts.length) return { kind: 'complete', token };
  return { kind: 'await', token, awaiting: [...new Set(accounts.flatMap((a) => waits.get(a) ?? []))] };
}

/** A channel that is meant to replicate: its applier runs, or its receiver was not stopped. */
function runs(c: ReplicaChannel): boolean {
  return c.applier === 'ON' || c.receiver !== 'OFF';
}

/** The phase a step belongs to, as status and the CLI show it (undefined: no rotation under way). */
export type ClusterRotationPhase =
  | 'Refused'
  | 'Staging'
  | 'Retaining'
  | 'Switching'
  | 'Repointing'
  | 'WaitingForClients'
  | 'Discarding'
  | 'Completing'
  | 'Repairing'
  | 'WaitingForAccount';

const PHASES: Readonly<Record<Exclude<ClusterRotationStep['kind'], 'idle'>, ClusterRotationPhase>> = {
  refuse: 'Refused',
  stage: 'Staging',
  retain: 'Retaining',
  restore: 'Retaining',
  switch: 'Switching',
  repoint: 'Repointing',
  await: 'WaitingForClients',
  discard: 'Discarding',
  complete: 'Completing',
  repair: 'Repairing',
  awaitAccount: 'WaitingForAccount',
};

export function clusterRotationPhase(step: ClusterRotationStep): ClusterRotationPhase | undefined {
  return step.kind === 'idle' ? undefined : PHASES[step.kind];
}

const list = (accounts: readonly ClusterAccount[]): string => accounts.join(', ');

/** What a step does, in words that never hold a password (status, Events, logs, the CLI). */
export function describeClusterRotationStep(step: ClusterRotationStep): string {
  const of = step.kind === 'idle' ? '' : ` (rotation ${step.token})`;
  switch (step.kind) {
    case 'idle':
      return 'no rotation of the cluster accounts under way';
    case 'refuse':
      return `the credentials Secret is named in spec.credentialsSecretName: recon8s only reads it, so it cannot rotate its passwords; change them where that Secret comes from${of}`;
    case 'stage':
      return `generating new passwords for ${list(step.accounts)} into the credentials Secret as <key>-next${of}`;
    case 'retain':
      return `setting the new passwords of ${list(step.accounts)} on the primary, the current ones retained${of}`;
    case 'restore':
      return `${list(step.accounts)} lost the retained password: setting the current one again, the new one retained${of}`;
    case 'switch':
      return `${list(step.accounts)} accept both passwords: switching the credentials Secret to the new ones${of}`;
    case 'repoint':
      return `giving replica ${step.member}'s channel the new replication password${of}`;
    case 'await':
      return `waiting for ${step.awaiting.join('; ')}${of}`;
    case 'discard':
      return `every user of the old passwords of ${list(step.accounts)} has moved: discarding them${of}`;
    case 'complete':
      return `the old passwords are refused: rotation complete${of}`;
    case 'repair':
      return `the password of ${list(step.accounts)} is not the credentials Secret's: setting it again${step.retain ? ', the present one retained' : ''}${of}`;
    case 'awaitAccount':
      return `waiting for a writable primary to report ${list(step.accounts)}${of}`;
  }
}

/**
 * The annotation's value: "[<account>,...@]<token>" (as the switchover annotation names its pod). No
 * accounts: all of them. Undefined for a value that names an account that is not one of them.
 */
export function parseRotationRequest(value: string | undefined): ClusterRotationRequest | undefined {
  if (!value) return undefined;
  const at = value.lastIndexOf('@');
  if (at < 0) return { token: value, accounts: CLUSTER_ACCOUNTS };
  const named = value
    .slice(0, at)
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const token = value.slice(at + 1);
  if (
    !token ||
    named.length === 0 ||
    !named.every((a): a is ClusterAccount => (CLUSTER_ACCOUNTS as readonly string[]).includes(a))
  )
    return undefined;
  return { token, accounts: CLUSTER_ACCOUNTS.filter((a) => named.includes(a)) };
}

/** The annotation's value for a request. */
export function formatRotationRequest(r: ClusterRotationRequest): string {
  return r.accounts.length === CLUSTER_ACCOUNTS.length ? r.token : `${r.accounts.join(',')}@${r.token}`;
}
