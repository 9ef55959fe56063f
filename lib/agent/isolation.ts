// Self-fencing, decided: a writable member that reaches none of the other members for a while makes
// itself read-only. Pure: the agent (agent.ts) looks, this says what to do, the agent does it.
//
// Why: a member cut off from every other member cannot have a commit acknowledged (semi-synchronous
// replication), and the controller may be promoting another member on the other side; it must be
// read-only before that one takes writes. So the delay is a quarter of the failover delay, and only
// with semi-synchronous replication on (never on a single member, never with asynchronous replication,
// where the primary taking writes alone is what was asked for).

/** What the agent remembers between looks. */
export interface IsolationState {
  /** When (ms since the epoch) the first look that reached no peer began; undefined while peers answer. */
  readonly isolatedSince?: number;
  /** A self-fencing began and is not complete yet: it is tried again at every look, whatever else. */
  readonly fencing: boolean;
}

export const NOT_ISOLATED: IsolationState = { fencing: false };

/**
 * What one look found about the other members:
 * - `reached`: one of them answered (a refusal is an answer: its server is up and reachable);
 * - `alone`: DNS answered and named no other member: nothing to be cut off from;
 * - `unreached`: members are known (now or from an earlier look, DNS being cut off too) and none answered;
 * - `unknown`: DNS does not answer and no member was ever known (promoted before its first look).
 *   With semi-synchronous replication on there are other members, and none can be shown to answer.
 */
export type PeerLook = 'reached' | 'alone' | 'unreached' | 'unknown';

export interface IsolationLook {
  /** When the look began (ms since the epoch): a look that fails takes a few seconds. */
  readonly startedAt: number;
  /** The member is writable with the semi-synchronous source side on. */
  readonly guardsWrites: boolean;
  readonly peers: PeerLook;
}

export type IsolationVerdict =
  | { readonly action: 'none'; readonly state: IsolationState }
  | { readonly action: 'fence'; readonly state: IsolationState; readonly first: boolean };

/** Whether the agent should look at its peers at all: only a member that guards writes, or one whose fencing is not done. */
export function isolationApplies(state: IsolationState, guardsWrites: boolean): boolean {
  return guardsWrites || state.fencing;
}

/**
 * What to do after a look. A `fence` verdict leaves `fencing` set: the agent clears it (fenced()) once
 * the member is read-only, and otherwise fences again at the next look, peers or not, until it is.
 */
export function judgeIsolation(state: IsolationState, look: IsolationLook, afterMs: number): IsolationVerdict {
  if (!isolationApplies(state, look.guardsWrites)) return { action: 'none', state: NOT_ISOLATED };
  if (state.fencing) return { action: 'fence', state, first: false };
  if (look.peers === 'reached' || look.peers === 'alone') return { action: 'none', state: NOT_ISOLATED };
  const since = state.isolatedSince ?? look.startedAt;
  if (look.startedAt - since >= afterMs) return { action: 'fence', state: { fencing: true }, first: true };
  return { action: 'none', state: { isolatedSince: since, fencing: false } };
}

/** The state once a fencing attempt ended: done when the member is read-only. */
export function fenced(readOnly: boolean): IsolationState {
  return readOnly ? NOT_ISOLATED : { fencing: true };
}
