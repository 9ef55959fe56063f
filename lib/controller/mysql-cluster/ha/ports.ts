// The ports of a MySQLCluster's HA loop: everything the loop reads or changes outside its own memory
// (memory.ts) goes through one of these, so that unit tests drive whole step sequences with fakes in
// milliseconds (test/unit/mysql-ha-loop.test.ts), and the real ones stay thin: kube-ports.ts (the API
// server, the metrics registry, the clock), lib/mysql/member-sql.ts (MySQL), ../agent-http.ts (the
// members' agents).
//
// A contract module (types only): the loop and its helpers import it, never the other way round.
import type { MySQLFailoverStatus, MySQLPrimaryTermStatus } from '../../../../constructs/index.js';
import type { MemberConnectOptions, MemberSession } from '../../../mysql/member-sql.js';
import type { NodeLossClaim, NodeLossNode } from '../../../mysql/node-loss.js';
import type { UnsafeStop } from '../../../mysql/rejoin.js';
import type { Role } from '../../../mysql/topology.js';

/** What the loop does on a member over SQL: a MemberSession (or a fake). */
export type MemberActions = Pick<MemberSession, keyof MemberSession>;

/** How the loop reaches a member: a session over verified TLS, as the admin account. */
export type ConnectMember = (o: MemberConnectOptions) => Promise<MemberActions>;

/** GET /unsafe-stops of the agent at a pod's address: undefined when it does not answer. */
export type AgentUnsafeStops = (ip: string) => Promise<readonly UnsafeStop[] | undefined>;

/** What the loop changes on the cluster's pods. */
export interface PodActions {
  /** Sets the pod's role label (which the Services select on); taking one off a pod that is gone is done. */
  label(pod: string, role: Role): Promise<void>;
  /** Deletes the pod, which its StatefulSet re-creates from the current template (a rolling update). */
  restart(pod: string): Promise<void>;
  /** Sets an annotation of the pod (the request that its agent re-provision it). */
  annotate(pod: string, annotation: string, value: string): Promise<void>;
  /**
   * Deletes the pod at once (gracePeriodSeconds 0) if it still has `uid`: a member lost with its node,
   * whose kubelet will never confirm a graceful deletion. One already gone is done.
   */
  forceDelete(pod: string, uid: string): Promise<void>;
}

/**
 * What the loop reads and removes for a member lost with its node (node-loss.ts), only while a member
 * is unwell: a steady cluster sends none of these requests. A read the controller is not allowed
 * (403) throws, and the loop then judges nothing about node loss.
 */
export interface NodeLossActions {
  /** The Nodes named, as lib/mysql/node-loss.ts takes them; one the API does not have (deleted) is left out. */
  nodes(names: readonly string[]): Promise<readonly NodeLossNode[]>;
  /**
   * The member's data claim, with the one node its bound PersistentVolume's required node affinity pins
   * it to on kubernetes.io/hostname; undefined when there is no such claim.
   */
  claim(name: string): Promise<NodeLossClaim | undefined>;
  /** Deletes the claim if it still has `uid`; one already gone is done. */
  deleteClaim(name: string, uid: string): Promise<void>;
}

/** The status fields the primary's records live in (primary-records.ts), as the API server has them. */
export interface RecordedStatus {
  readonly currentPrimary?: string;
  readonly primaryTerm?: MySQLPrimaryTermStatus;
  readonly lastFailover?: MySQLFailoverStatus;
}

/**
 * What the loop records about the cluster on the API server, which decides whether it may: the
 * status fields written at once (primary-records.ts: the primary, its term, the last failover), each
 * write conditional on the version it was judged from, and the history ConfigMap (../history.ts).
 */
export interface ClusterRecords {
  /** The status as the API server has it now (not the cache, which may be a write behind), and its version. */
  read(): Promise<{ readonly version?: string; readonly status: RecordedStatus }>;
  /**
   * Merges `fields` into the status (a JSON merge patch: null removes a field) if the resource is still
   * at `version`; false when it changed since (409 Conflict).
   */
  patch(version: string | undefined, fields: Readonly<Record<string, unknown>>): Promise<boolean>;
  /**
   * Makes sure the history ConfigMap exists, naming `firstPrimary`; `beforeWrite` is called (and may
   * throw) before it is created, never when it exists already.
   */
  ensureHistory(firstPrimary: string, beforeWrite: () => void): Promise<void>;
}

/** A switchover's outcome, as recon8s_mysql_switchovers_total{outcome} counts it. */
export type SwitchoverOutcome = 'done' | 'failed' | 'refused';

/** A count a step adds to the cluster's metrics. */
export type StepMetric =
  { readonly kind: 'failover' } | { readonly kind: 'switchover'; readonly outcome: SwitchoverOutcome };

/** The cluster's HA series (recon8s_mysql_*), labelled with its namespace and name by the port. */
export interface HaMetrics {
  /** What a look found of one member: whether it answered, how far behind the primary, its role. */
  member(member: string, o: { readonly reachable: boolean; readonly behind?: number; readonly role?: Role }): void;
  /** What a look found of the cluster: whether the recorded primary answered (when there is one), errant members. */
  cluster(o: { readonly primaryReachable?: boolean; readonly errantMembers: number }): void;
  /** What a step did. */
  count(metric: StepMetric): void;
}

/** Time, as the loop reads it. */
export interface HaClock {
  /** Monotonic milliseconds: how long a primary has been down, how long a request waited. */
  now(): number;
  /** Wall-clock time: the times status records, how long a pod's container has run. */
  wallClock(): Date;
}

/** Every port of the loop, for one cluster. */
export interface HaPorts {
  readonly connect: ConnectMember;
  readonly agentUnsafeStops: AgentUnsafeStops;
  readonly pods: PodActions;
  readonly nodeLoss: NodeLossActions;
  readonly records: ClusterRecords;
  readonly metrics: HaMetrics;
  readonly clock: HaClock;
}
