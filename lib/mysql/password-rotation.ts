// Rotating an App's database password without downtime, with MySQL's dual passwords: the next step of
// a rotation, decided from what is observed now (never from a remembered phase), so that a rotation
// interrupted anywhere (the controller restarted, a write lost, a member failed over) resumes from what
// it finds. Pure: facts in, one step out. Two controllers act on it, each doing only its own steps:
// the App's (the Secret, the pod template, the status) and the MySQLCluster's (the SQL, on the primary).
//
// The sequence, and why each step is safe to repeat or to stop after:
// 1. stage:   the new password is generated into the Secret as `password-next` BEFORE MySQL is touched,
//             so a crash never loses a password the account holds.
// 2. retain:  ALTER USER ... IDENTIFIED BY <next> RETAIN CURRENT PASSWORD: both passwords log in.
// 3. switch:  the Secret's `password` := next, `password-next` dropped. New pods get the new one; the
//             running pods' old one still logs in (it is retained).
// 4. roll:    the App's pod template gets the new revision (a hash of the rotation's token, never of a
//             password), so the Deployment replaces every pod.
// 5. await:   until every pod of the App (terminating ones too: they may still open connections) runs
//             that template.
// 6. discard: ALTER USER ... DISCARD OLD PASSWORD: only then is the old one refused.
// 7. complete: the token is recorded as done in the App's status.

/** Which of the Secret's passwords the account's primary password is (by its fingerprint). */
export type AccountHolds =
  /** The Secret's `password`. */
  | 'current'
  /** The staged `password-next`. */
  | 'next'
  /** Neither: someone changed it. */
  | 'other'
  /** Not known (the account does not exist yet, or its state was not reported). */
  | 'unknown';

export interface RotationFacts {
  /** The token of the rotation asked for (the App's recon8s.dev/rotate-credentials annotation). */
  readonly requested?: string;
  /** The token of the last rotation completed (the App's status). */
  readonly completed?: string;
  /** The token whose password the Secret's `password` holds (undefined: the first, generated one). */
  readonly secretRevision?: string;
  /** The token a staged `password-next` was generated for (undefined: nothing staged). */
  readonly staged?: string;
  readonly account: {
    readonly holds: AccountHolds;
    /** Whether the account has a retained (secondary) password. */
    readonly retains: boolean;
  };
  /** The revision the App's pod template is asked to carry (the App's recon8s.dev/password-revision). */
  readonly rollRevision?: string;
  /** The revision every pod of the App runs, when they all run the same and it is the asked one. */
  readonly rolledRevision?: string;
}

/** Whose step it is: the App's controller (Secret, template, status) or the cluster's (SQL). */
export type RotationActor = 'app' | 'cluster' | 'none';

export type RotationStep =
  /** Nothing to do: no rotation asked for, or the last one asked for is complete. */
  | { readonly kind: 'idle' }
  | { readonly kind: 'stage'; readonly token: string }
  | { readonly kind: 'retain'; readonly token: string }
  /**
   * The account holds the new password but no longer the old one (someone discarded it): the old one is
   * set again with the new one retained, after which `retain` swaps them back. No pod is locked out.
   */
  | { readonly kind: 'restore'; readonly token: string }
  | { readonly kind: 'switch'; readonly token: string }
  | { readonly kind: 'roll'; readonly token: string }
  | { readonly kind: 'awaitPods'; readonly token: string }
  | { readonly kind: 'discard'; readonly token?: string }
  | { readonly kind: 'complete'; readonly token: string }
  /**
   * The account holds a password that is neither of the Secret's (drift): the Secret's `password` is set
   * again. During a rotation after the switch, with the account's present password retained, since the
   * pods not rolled yet may be using it; otherwise plainly (a plain ALTER USER keeps a secondary password).
   */
  | { readonly kind: 'repair'; readonly retain: boolean; readonly token?: string }
  /** The cluster has not reported the account (not created yet, or failed): nothing moves until it does. */
  | { readonly kind: 'awaitAccount'; readonly token?: string };

/** The token of the rotation under way, if one is: staged, or switched and not completed, or asked for. */
export function rotationInFlight(f: Omit<RotationFacts, 'account'>): string | undefined {
  if (f.staged !== undefined) return f.staged;
  if (f.secretRevision !== undefined && f.secretRevision !== f.completed) return f.secretRevision;
  if (f.requested !== undefined && f.requested !== f.completed) return f.requested;
  return undefined;
}

/** The next step of an App's password rotation, from what is observed now. */
export function decideRotation(f: RotationFacts): RotationStep {
  const token = rotationInFlight(f);
  const { holds, retains } = f.account;
  if (token === undefined) {
    if (holds === 'unknown') return { kind: 'awaitAccount' };
    if (holds !== 'current') return { kind: 'repair', retain: false };
    // A secondary password recon8s did not leave (its rotations discard before they complete): like an
    // extra grant, it goes.
    if (retains) return { kind: 'discard' };
    return { kind: 'idle' };
  }

  if (f.staged !== undefined) {
    // Before the switch the pods use `password`: the account must keep accepting it.
    switch (holds) {
      case 'unknown':
        return { kind: 'awaitAccount', token };
      case 'other':
        return { kind: 'repair', retain: false, token };
      case 'current':
        return { kind: 'retain', token };
      case 'next':
        return retains ? { kind: 'switch', token } : { kind: 'restore', token };
    }
  }

  if (f.secretRevision !== token) return { kind: 'stage', token };

  // Switched: `password` is the new one; pods not rolled yet may still use the old, retained one.
  if (holds === 'unknown') return { kind: 'awaitAccount', token };
  if (holds !== 'current') return { kind: 'repair', retain: true, token };
  if (f.rollRevision !== token) return { kind: 'roll', token };
  if (f.rolledRevision !== token) return { kind: 'awaitPods', token };
  if (retains) return { kind: 'discard', token };
  return { kind: 'complete', token };
}

/** Who takes a step. */
export function rotationActor(step: RotationStep): RotationActor {
  switch (step.kind) {
    case 'stage':
    case 'switch':
    case 'roll':
    case 'complete':
      return 'app';
    case 'retain':
    case 'restore':
    case 'discard':
    case 'repair':
      return 'cluster';
    case 'idle':
    case 'awaitPods':
    case 'awaitAccount':
      return 'none';
  }
}

/** The phase a step belongs to, as status and the CLI show it (undefined: no rotation under way). */
export type RotationPhase =
  | 'Staging'
  | 'Retaining'
  | 'Switching'
  | 'RollingPods'
  | 'Discarding'
  | 'Completing'
  | 'Repairing'
  | 'WaitingForAccount';

export function rotationPhase(step: RotationStep): RotationPhase | undefined {
  if (!('token' in step) || step.token === undefined) return undefined;
  switch (step.kind) {
    case 'stage':
      return 'Staging';
    case 'retain':
    case 'restore':
      return 'Retaining';
    case 'switch':
      return 'Switching';
    case 'roll':
    case 'awaitPods':
      return 'RollingPods';
    case 'discard':
      return 'Discarding';
    case 'complete':
      return 'Completing';
    case 'repair':
      return 'Repairing';
    case 'awaitAccount':
      return 'WaitingForAccount';
  }
}

/** What a step does, in words that never hold a password (status, Events, logs, the CLI). */
export function describeRotationStep(step: RotationStep): string {
  const of = 'token' in step && step.token !== undefined ? ` (rotation ${step.token})` : '';
  switch (step.kind) {
    case 'idle':
      return 'no password rotation under way';
    case 'stage':
      return `generating the new password into the Secret as password-next${of}`;
    case 'retain':
      return `setting the new password on the account, the current one retained${of}`;
    case 'restore':
      return `the account lost its retained password: setting the current one again, the new one retained${of}`;
    case 'switch':
      return `the account accepts both passwords: switching the Secret to the new one${of}`;
    case 'roll':
      return `restarting the App's pods with the new password${of}`;
    case 'awaitPods':
      return `waiting for every pod of the App to run with the new password${of}`;
    case 'discard':
      return step.token === undefined
        ? 'discarding a retained password recon8s did not leave'
        : `every pod runs with the new password: discarding the old one${of}`;
    case 'complete':
      return `the old password is refused: rotation complete${of}`;
    case 'repair':
      return `the account's password is not the Secret's: setting it again${step.retain ? ', the present one retained' : ''}${of}`;
    case 'awaitAccount':
      return `waiting for the MySQLCluster to report the account${of}`;
  }
}
