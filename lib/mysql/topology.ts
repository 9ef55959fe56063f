// The contract of the HA decision (decide.ts and its rules, failover.ts and scale-down.ts): the view of a
// MySQLCluster it is given, the steps and the report it returns, and the few facts every rule reads off
// a view. Types and pure one-liners only, so that the rules import it and never one another's modules.
import type { MySQLMemberStatus } from '../../constructs/index.js';
import { GtidSet } from './gtid-set.js';

export type Role = 'primary' | 'replica' | 'none';

export type ThreadState = 'ON' | 'OFF' | 'CONNECTING';

/** A replication thread's state as performance_schema reports it (SERVICE_STATE); anything else is OFF. */
export const threadState = (v: unknown): ThreadState => (v === 'ON' || v === 'CONNECTING' ? v : 'OFF');

/** The default replication channel of a member, as performance_schema reports it. */
export interface ReplicationChannel {
  /** SOURCE_HOST. */
  readonly sourceHost: string;
  readonly receiver: ThreadState;
  readonly applier: ThreadState;
  /** The last receiver or applier error, when one of them stopped on it. */
  readonly error?: string;
  /** Which thread `error` stopped (the applier's is reported first); undefined: not known. */
  readonly errorOf?: 'receiver' | 'applier';
  /**
   * How long ago, by the member's own clock, its receiver last heard from the source (an event or a
   * heartbeat), whatever the receiver's state; undefined when it has not heard from it since mysqld
   * started. What tells a primary its replicas cannot reach from one that answers nobody (failover.ts).
   */
  readonly sourceSilentMs?: number;
  /** The channel's heartbeat period (the longest a source that is heard stays silent); undefined when not known. */
  readonly heartbeatMs?: number;
  /** The receiver's last error number (MySQL's, whatever its state: it retries), when it has one. */
  readonly receiverErrno?: number;
}

/** What a member answered over SQL. */
export interface MemberSql {
  readonly serverUuid: string;
  /** read_only = OFF. */
  readonly writable: boolean;
  readonly executed: GtidSet;
  /** Transactions its receiver wrote to the relay log (empty without a channel). */
  readonly received: GtidSet;
  readonly channel?: ReplicationChannel;
  readonly semiSync: {
    readonly enabled: boolean;
    readonly waitCount: number;
    /** Semi-synchronous replicas connected now (Rpl_semi_sync_source_clients); undefined when not known. */
    readonly clients?: number;
  };
  /**
   * offline_mode: it refuses every client session but the operator's and replication's (accounts with
   * CONNECTION_ADMIN). A fencing that released stranded commits leaves it on (fencing.ts). Undefined: not known (off).
   */
  readonly offline?: boolean;
}

export interface MemberView {
  /** The pod's name, `<cluster>-<ordinal>`. */
  readonly name: string;
  readonly ordinal: number;
  /** The name other members replicate from it by (SOURCE_HOST). */
  readonly host: string;
  /** The pod's role label now; undefined when it has none. */
  readonly role?: Role;
  /** The pod's Ready condition. */
  readonly ready: boolean;
  /** Its pod runs an older template than the StatefulSet's (a rolling update is due). */
  readonly outdated: boolean;
  /** Absent when the member did not answer. */
  readonly sql?: MemberSql;
  /** Why it did not answer. */
  readonly error?: string;
  /**
   * It presented a TLS certificate the cluster's CA does not vouch for (OpenSSL's reason): refused in
   * the handshake, before any credential was sent. Decided exactly as a member that does not answer
   * (never compared, fenced or promoted: what it would say cannot be trusted), and reported.
   */
  readonly certificateRejected?: string;
  /**
   * Its pod is being deleted (evicted, drained): only the primary's terminating pod is a member (its
   * agent fenced it before mysqld stops: lib/agent/stops.ts), so that a replica takes over at once.
   */
  readonly terminating?: boolean;
  /**
   * Its pod's bootstrap init container has run for longer than one takes on a data directory that exists
   * (it exits at once then: constructs/mysql/scripts/bootstrap.sh): it is building one from nothing (it
   * waits for a primary to clone, or initializes), so it holds no data of its own. Only the choice of a
   * first primary reads it: such a member need not be waited for.
   */
  readonly buildingDataDirectory?: boolean;
}

export interface ClusterView {
  /** The members whose pods exist, any order. */
  readonly members: readonly MemberView[];
  /** spec.replicas. */
  readonly replicas: number;
  /**
   * The members the StatefulSet holds now (its spec.replicas), when more than spec.replicas: a
   * scale-down under way, whose leaving members go only once safe (scale-down.ts). Default: `replicas`.
   */
  readonly heldReplicas?: number;
  /** status.currentPrimary. */
  readonly primary?: string;
  /** The name replicas of the recorded primary use as SOURCE_HOST (its pod may be gone). */
  readonly primaryHost?: string;
  /** How long the recorded primary has been down (unreachable, or back read-only after a restart); undefined while it is up. */
  readonly primaryDownMs?: number;
  readonly failoverAfterMs: number;
  /**
   * Why the recorded primary's mysqld is known to have exited, when the caller knows it (its mysql
   * container exited or restarted: controller/mysql-cluster/ha/primary-stopped.ts): with
   * semi-synchronous replication, failover does not wait `failoverAfterMs` (failover.ts says why).
   */
  readonly primaryStopped?: string;
  /** Semi-synchronous acknowledgements the primary waits for (the spec's: what enableWrites sets). */
  readonly waitCount: number;
  /**
   * The fewest acknowledgements the recorded primary's commits waited for during its term, when recorded
   * (status.primaryTerm.semiSyncReplicas). A failover counts on this, not on `waitCount`: a spec raised
   * since may not have reached the primary before it was lost. Default: `waitCount`.
   */
  readonly termWaitCount?: number;
  /**
   * The recorded primary's term (status.primaryTerm, when it names the recorded primary): the data
   * directory it began with and what it held then. A primary that answers without them lost its data.
   */
  readonly primaryTerm?: { readonly serverUuid: string; readonly ownGtidsAtStart: GtidSet };
  /** Members found with errant transactions while the primary could be compared with (status). */
  readonly knownErrant: ReadonlySet<string>;
  /**
   * What becomes of an errant member's transactions, by member (rejoin.ts's verdict for a former
   * primary): said in its ErrantTransactions message instead of asking a person to re-provision it.
   */
  readonly errantNotes?: ReadonlyMap<string, string>;
  /**
   * A switchover request not yet handled, and how long it has waited for a healthy candidate (a
   * replica that is restarting or catching up becomes one within moments: it is refused only after
   * decide.ts's SWITCHOVER_PATIENCE_MS).
   */
  readonly switchover?: { readonly id: string; readonly to?: string; readonly waitedMs?: number };
}

export type Step =
  | { readonly type: 'steady' }
  /** Nothing safe to do: reported (a Degraded reason), looked at again later. */
  | { readonly type: 'wait'; readonly reason: string; readonly message: string }
  /** The first primary of the cluster: recorded in status. */
  | { readonly type: 'bootstrap'; readonly member: string }
  /**
   * super_read_only, client sessions ended, semi-synchronous source side off, on a member that is not
   * the primary: `writable` when it took writes, else it was only still waiting for acknowledgements
   * as a former primary (its applier would wait for them for ever). On the primary itself only when
   * `cutOffMs` says why: the first step of failing over from a primary its replicas do not hear.
   */
  | {
      readonly type: 'fence';
      readonly member: string;
      readonly writable: boolean;
      /** The member is the recorded primary, heard by none of its replicas for this long: fenced to fail over. */
      readonly cutOffMs?: number;
    }
  | { readonly type: 'label'; readonly member: string; readonly role: Role }
  /** Semi-synchronous replication with this wait count, then writable. */
  | { readonly type: 'enableWrites'; readonly member: string; readonly waitCount: number }
  /** Point the member at the primary (GTID auto-positioning) and start replicating. */
  | { readonly type: 'replicate'; readonly member: string; readonly source: string; readonly sourceHost: string }
  /**
   * offline_mode off: a member kept offline since a fencing (it might have served commits a failover
   * discards) replicates from the primary, which holds everything it has: its reads are the primary's history.
   */
  | { readonly type: 'admitClients'; readonly member: string }
  /** STOP REPLICA: an errant member must not acknowledge the primary's writes. */
  | { readonly type: 'stopReplication'; readonly member: string }
  /** Failover, first half: the candidates stop receiving from the lost primary. */
  | { readonly type: 'stopReceivers'; readonly members: readonly string[] }
  /**
   * Failover, second half: `to` applies `mustApply`, leaves replication and becomes the recorded primary.
   * `outOfReach`: replicas of `from` that were not candidates; `fromExecuted`: what `from` held, when it
   * answered (it had restarted). Both are recorded (status.lastFailover, rejoin.ts).
   */
  | {
      readonly type: 'promote';
      readonly from: string;
      readonly to: string;
      readonly mustApply: GtidSet;
      readonly outOfReach: number;
      readonly fromExecuted?: GtidSet;
      /** `from` answered, but none of its replicas had heard from it for this long (failover.ts). */
      readonly cutOffMs?: number;
      /** Promoted before `failoverAfterMs` because `from` was known not to run, and why (ClusterView.primaryStopped). */
      readonly stopped?: string;
    }
  | {
      readonly type: 'switchover';
      readonly from: string;
      readonly to: string;
      readonly requestId?: string;
      /** `from`'s pod is stopping: should `to` not catch up, `from` stays fenced (never writable again). */
      readonly stopping?: boolean;
    }
  /** A switchover request that cannot be done: recorded as handled, with why. `retryable`: it may be possible soon. */
  | {
      readonly type: 'refuseSwitchover';
      readonly requestId: string;
      readonly message: string;
      readonly retryable?: boolean;
    }
  /** Delete the pod so that the StatefulSet re-creates it from the new template (rolling update). */
  | { readonly type: 'restart'; readonly member: string };

/** A member as status.members reports it, and how far behind the primary it is (for metrics only:
 * in status it would change with every write). */
export interface MemberStatus extends MySQLMemberStatus {
  /** Transactions of the primary it has not applied yet. */
  readonly behind?: number;
}

export interface Decision {
  readonly step: Step;
  /** Degraded reasons that hold whatever the step (errant members, a lost primary). */
  readonly problems: readonly { readonly reason: string; readonly message: string }[];
  readonly members: readonly MemberStatus[];
  /** Members with errant transactions, as compared with the primary now (or as known, when it is down). */
  readonly errant: ReadonlySet<string>;
  /**
   * Degraded reasons for members whose certificate was refused (MemberCertificateRejected), one per
   * distinct reason. They go after `problems` and the step's own wait reason: what the cluster waits on
   * (NoQuorum, which has an alert of its own that reads the first reason) is not hidden behind them.
   */
  readonly rejected: readonly { readonly reason: string; readonly message: string }[];
  /**
   * Why commits on the primary block (it waits for more semi-synchronous acknowledgements than there
   * are replicas to send them: a new cluster before its first replica joins, or one that lost them).
   */
  readonly writesWait?: string;
  /** The members the StatefulSet must keep: spec.replicas, or more while a scale-down is not yet safe (scale-down.ts). */
  readonly kept: MembersKept;
}

/** The StatefulSet's size the members allow now, and why a larger one than spec.replicas. */
export interface MembersKept {
  /** ≥ spec.replicas; ≤ the StatefulSet's size now. */
  readonly keep: number;
  /** Why the highest member kept cannot go yet; absent when `keep` is spec.replicas. */
  readonly why?: string;
}

/** The transactions a member has or will have applied: executed plus received. */
export const history = (m: MemberView): GtidSet => (m.sql ? m.sql.executed.union(m.sql.received) : GtidSet.EMPTY);

/** What the recorded primary's commits were acknowledged with: its term's, never more than the spec's. */
export const termAcknowledgements = (view: ClusterView): number =>
  Math.min(view.waitCount, view.termWaitCount ?? view.waitCount);

/** A member above spec.replicas that the StatefulSet still holds (scale-down.ts). */
export function isLeaving(view: ClusterView, m: MemberView): boolean {
  return m.ordinal >= view.replicas && m.ordinal < (view.heldReplicas ?? view.replicas);
}
