// Everything the HA loop remembers of one cluster between its passes: its fields are all the loop
// knows beyond what it observes again at every look (the MOCO pattern). Held by the cluster's runtime
// (../cluster-runtime.ts), created with it and dropped with it. Only this process's memory: a new term
// of leadership starts with none (the API server's record is all that is trusted then).
import type { V1Pod } from '@kubernetes/client-node';
import type { MySQLClusterStatus } from '../../../../constructs/index.js';
import type { Problem } from '../../kind-controller.js';
import { MemberSessions } from './member-sessions.js';
import type { AnsweringPod } from './primary-stopped.js';
import type { RecordsMemory } from './primary-records.js';
import type { Unsettled } from './timing.js';

export type SwitchoverStatus = NonNullable<MySQLClusterStatus['switchover']>;

export class HaMemory {
  /**
   * Since when (monotonic ms) the recorded primary has been down: from the last look that found it
   * answering, not the first that did not (a poll is up to STEADY_POLL_MS late), but never more than a
   * poll before that first failed look began (a pass delayed by a backlog must not turn one failed look into
   * a failover).
   */
  down?: { readonly primary: string; readonly since: number };
  /** When the recorded primary last answered, and every member's pod then. */
  answered?: {
    readonly primary: string;
    readonly at: number;
    readonly pods: ReadonlyMap<string, AnsweringPod>;
    readonly primaryPod?: V1Pod;
  };
  /**
   * The primary this process chose last and the switchover request it handled last. The cache may
   * still hold the status from before that choice (the status write has not come back through the
   * watch yet): acting on it would fence the new primary and give the writes back to the old one. What
   * this process wrote itself is never older than what its cache says.
   */
  decided: { readonly primary?: string; readonly switchover?: SwitchoverStatus } = {};
  /** The primary's term and the last failover as this process recorded them (primary-records.ts), for the same reason. */
  readonly records: RecordsMemory = {};
  /** The switchover request waiting for a healthy candidate, and since when (monotonic ms). */
  waiting?: { readonly id: string; readonly since: number };
  /** What the last look found while something was unsettled, and the poll that followed (timing.ts). */
  unsettled?: Unsettled;
  /**
   * The StatefulSet size the last look allowed (decide.ts's `kept`), the spec.replicas it was judged
   * for and the StatefulSet's size that look saw. A judgement of another spec.replicas, or of fewer
   * members than the StatefulSet has now, is not used: until a look judges them, a scale-down keeps
   * every member the StatefulSet has.
   */
  keptMembers?: { readonly replicas: number; readonly keep: number; readonly of: number };
  /**
   * The members' pods as the last node-loss read saw them (node-loss.ts), when it found no member's node
   * other than Ready, or was refused (403), and the problems it reported: while the pods stay so, nothing
   * is read again (a pod that cannot start costs no request per look), and those problems stand. A Node that goes NotReady, or is deleted, changes its pods (their Ready
   * condition, their eviction or deletion), which ends it; for a pod that was not Ready already, that
   * is its eviction: at once under the out-of-service taint, else after its toleration of
   * `unreachable` (300 s by default).
   */
  nodeLossQuiet?: {
    readonly seen: string;
    readonly problems: readonly Problem[];
    /** Monotonic ms after which it is read again all the same (a refusal: the grant may come meanwhile). */
    readonly until?: number;
  };
  /** The members' sessions, kept between looks, and the members found silent. */
  readonly sessions = new MemberSessions();

  /** The cluster is forgotten, or the term of leadership ends: every session ends. */
  close(): void {
    this.sessions.close();
  }
}
