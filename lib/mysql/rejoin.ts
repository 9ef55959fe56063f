// A former primary that comes back holding transactions the new primary lacks: when those can be
// proven never acknowledged to any client, it rejoins by clone on its own; otherwise a person decides
// (the reprovision annotation), as for any member with errant transactions. Pure: the verdict is a
// function of what the members answer now and of what the controller recorded in status when it
// chose each primary and when it failed over (so that the proof survives a controller restart), and
// is tested over every condition (test/unit/mysql-rejoin.test.ts).
//
// What is recorded, and when (lib/controller/mysql-cluster/primary-terms.ts writes it):
// - status.primaryTerm, in the very patch that records a new primary (so before it can take a write;
//   or, for a primary chosen before this record existed, at the first look that finds it answering):
//   its server_uuid, its own transactions (that uuid's) at the start of the term, and the fewest
//   semi-synchronous acknowledgements its commits waited for during the term. That number is lowered
//   before the controller makes the primary writable with fewer (written before the statement), and
//   when a look finds the writable primary waiting for fewer than recorded (a person changed it).
// - status.lastFailover, in the very patch that records the promoted replica: the failed primary's
//   term as recorded, how many of its replicas the failover did not reach, and, when it answered then
//   (it had restarted), its own transactions at that moment. Later looks add why the proof no longer
//   holds (the former primary found writable without semi-synchronous replication guarding its
//   commits), and what the controller asked its agent to discard (done once).
import type { MemberSql } from './topology.js';
import { GtidSet } from './gtid-set.js';

/** A primary's term, as status.primaryTerm records it. */
export interface PrimaryTerm {
  readonly member: string;
  readonly serverUuid: string;
  /** Its own transactions (of its server_uuid) when the term began: any of that uuid beyond them came later. */
  readonly ownGtidsAtStart: GtidSet;
  /** The fewest semi-synchronous acknowledgements a commit of the term waited for (0: at some point none). */
  readonly semiSyncReplicas: number;
}

/** The last failover, as status.lastFailover records it. */
export interface FailoverRecord {
  readonly from: string;
  readonly to: string;
  /** When the failover was made (RFC 3339), for people. */
  readonly time: string;
  /**
   * Replicas of `from` that were not candidates when `to` was promoted (out of reach, errant, or
   * following another source): decide.ts's failover rule promotes only while fewer than the wait count
   * are, so that every acknowledged commit is on a candidate, and the candidate promoted holds every
   * transaction any candidate received.
   */
  readonly outOfReach: number;
  /** `from`'s term, when one was recorded. */
  readonly term?: PrimaryTerm;
  /** `from`'s own transactions when the failover was decided, when it answered then (it had restarted). */
  readonly ownGtidsAtFailover?: GtidSet;
  /** Why no surplus of `from` can be proven unacknowledged any more: what a look saw after the failover. */
  readonly unprovable?: string;
  /** What `from`'s agent was asked to discard (its reprovision annotation): asked once. */
  readonly discardRequested?: GtidSet;
}

/** What a former primary holds beyond the primary, and what happens to it. */
export type RejoinVerdict =
  /** Proven never acknowledged: its agent is to re-provision it by clone, discarding `surplus`. */
  | { readonly kind: 'discard'; readonly member: string; readonly surplus: GtidSet; readonly failover: FailoverRecord }
  /** Its agent was asked already (status.lastFailover.discardRequested). */
  | {
      readonly kind: 'requested';
      readonly member: string;
      readonly surplus: GtidSet;
      readonly failover: FailoverRecord;
    }
  /** Not proven: it stays excluded until a person re-provisions it; `why` says which condition fails. */
  | { readonly kind: 'manual'; readonly member: string; readonly surplus: GtidSet; readonly why: string };

/** A member that answered, and the recorded primary that answered. */
export interface SurplusFacts {
  readonly member: { readonly name: string; readonly sql: Pick<MemberSql, 'serverUuid' | 'writable' | 'executed'> };
  readonly primary: { readonly name: string; readonly executed: GtidSet };
  /** status.lastFailover. */
  readonly failover?: FailoverRecord;
}

/**
 * Whether what `member` holds beyond the primary (its surplus) was never acknowledged to a client, so
 * that a clone may discard it without losing an acknowledged write; undefined when it holds nothing
 * the primary lacks.
 *
 * Proven only when every one of these holds (the first that fails is the verdict's `why`):
 * 1. The last failover recorded replaced `member` (it is the former primary; a member that was never
 *    one holds writes made on it directly, which stay a person's to judge).
 * 2. The primary is still the replica that failover promoted. At its promotion that replica held every
 *    acknowledged commit of `member`'s term (6, 7) and a primary only adds to what it holds; after
 *    another failover or a switchover that is no longer shown.
 * 3. `member`'s term was recorded (a failover made before this record existed stays manual), and
 *    `member` has the server_uuid it had as the primary (the same data, not a re-created volume).
 * 4. Every surplus transaction carries that server_uuid: it originated on `member` itself. One of
 *    another source (an earlier primary's, which no replica may have received after `member` was
 *    promoted, or another member's) was not committed in this term and may have been acknowledged.
 * 5. None of them is among its own transactions when its term began: each was committed after it was
 *    recorded as the primary (it was read-only until then), not as a write made on it while it was a
 *    replica.
 * 6. The term's commits waited for at least one semi-synchronous acknowledgement throughout
 *    (status.primaryTerm.semiSyncReplicas ≥ 1; rpl_semi_sync_source_timeout is infinite and refused in
 *    spec.mysqlConf, so the primary never falls back to acknowledging alone). So under AFTER_SYNC a
 *    commit was acknowledged to its client only once that many replicas had received it.
 * 7. Fewer of its replicas were out of the failover's reach than that number (outOfReach <
 *    semiSyncReplicas). So every acknowledged commit had reached a candidate, every candidate had
 *    stopped receiving before the promotion (no acknowledgement could follow), and the promoted one held
 *    and applied every transaction any candidate received. So the primary holds every acknowledged
 *    commit of the term, and nothing in the surplus was acknowledged.
 * 8. When `member` answered at the failover (it had restarted, read-only), the surplus is within its
 *    own transactions then: nothing was committed on it after it was replaced.
 * 9. No look since the failover found it writable without semi-synchronous replication waiting for at
 *    least that number (status.lastFailover.unprovable): it might have acknowledged a commit alone.
 * 10. It is read-only now (a writable one is fenced first).
 * 11. Its agent found no stop of its mysqld, while it held any of them, that could have acknowledged a
 *    commit alone (lib/agent/stops.ts: a graceful shutdown tells a client waiting for an acknowledgement
 *    that its commit succeeded, unless the agent fenced the member first). Asked of the agent just
 *    before the discard is requested (unsafeStopHolding); one found is recorded as `unprovable` (9).
 *
 * What this cannot see: a person who turns super_read_only off on the deposed member, writes, and
 * turns it on again between two looks (at most 5 s apart) after it came back without having answered
 * at the failover (8); or who changes the primary's semi-synchronous settings by hand and back between
 * two looks (6). Such a write would be discarded with the rest; the binary logs holding the surplus are
 * kept on the member's volume for inspection (lib/agent/reprovision.ts), and the agent discards
 * nothing beyond the set this verdict names (the annotation carries it).
 */
export function rejoinVerdict(f: SurplusFacts): RejoinVerdict | undefined {
  const { member, primary, failover } = f;
  const surplus = member.sql.executed.subtract(primary.executed);
  if (surplus.isEmpty()) return undefined;
  const manual = (why: string): RejoinVerdict => ({ kind: 'manual', member: member.name, surplus, why });
  if (failover?.from !== member.name)
    return manual(
      failover
        ? `it is not the primary the last failover replaced (${failover.from} was): what it holds was not committed as the primary, so it may have been acknowledged`
        : 'no failover from it is recorded: what it holds was not committed as the primary, so it may have been acknowledged',
    );
  if (failover.to !== primary.name)
    return manual(
      `the primary is ${primary.name}, not ${failover.to}, which the failover from it promoted: that the primary holds every acknowledged commit of its term is no longer shown`,
    );
  const term = failover.term;
  if (!term)
    return manual('its term as the primary was not recorded (it was replaced by a controller without that record)');
  if (term.serverUuid !== member.sql.serverUuid)
    return manual(
      `its server_uuid is ${member.sql.serverUuid}, not ${term.serverUuid} as when it was the primary: its data is not what it was then`,
    );
  const foreign = surplus.subtract(surplus.ofServer(term.serverUuid));
  if (!foreign.isEmpty())
    return manual(
      `some of them (${foreign.toString()}) did not originate on it (server_uuid ${term.serverUuid}), so they were not its commits as the primary`,
    );
  const before = surplus.intersect(term.ownGtidsAtStart);
  if (!before.isEmpty())
    return manual(
      `some of them (${before.toString()}) were committed on it before its term as the primary began: a write made on it as a replica`,
    );
  if (term.semiSyncReplicas < 1)
    return manual(
      'semi-synchronous replication was off during its term (semiSyncReplicas 0): a commit was acknowledged before any replica had it',
    );
  if (failover.outOfReach >= term.semiSyncReplicas)
    return manual(
      `when it was replaced, ${failover.outOfReach} of its replicas were out of reach, not fewer than the ${term.semiSyncReplicas} acknowledgement(s) its commits waited for: an acknowledged commit may be only there`,
    );
  const after = failover.ownGtidsAtFailover && surplus.subtract(failover.ownGtidsAtFailover);
  if (after && !after.isEmpty())
    return manual(
      `some of them (${after.toString()}) were committed on it after it was replaced (it answered at the failover without them)`,
    );
  if (failover.unprovable !== undefined) return manual(failover.unprovable);
  if (member.sql.writable) return manual('it is writable (it is made read-only first)');
  if (failover.discardRequested) {
    if (surplus.isSubsetOf(failover.discardRequested))
      return { kind: 'requested', member: member.name, surplus, failover };
    return manual(
      `it holds more (${surplus.subtract(failover.discardRequested).toString()}) than its agent was asked to discard (${failover.discardRequested.toString()})`,
    );
  }
  return { kind: 'discard', member: member.name, surplus, failover };
}

/** What the ErrantTransactions condition says after "is excluded … never promoted; ". */
export function rejoinNote(v: RejoinVerdict): string {
  if (v.kind === 'manual')
    return `not discarded automatically: ${v.why}; re-provision it by clone (kubectl annotate pod ${v.member} recon8s.dev/reprovision=<any new value>) to discard them`;
  return `they were never acknowledged (it was the primary until the failover to ${v.failover.to} at ${v.failover.time}): its agent ${v.kind === 'discard' ? 'is asked to re-provision' : 'was asked to re-provision'} it by clone, discarding them; the binary logs holding them are kept on its volume (discarded-*)`;
}

/** The term of a primary just chosen (it is read-only until the controller makes it writable with `waitCount`). */
export function startTerm(
  member: string,
  sql: Pick<MemberSql, 'serverUuid' | 'executed'>,
  waitCount: number,
): PrimaryTerm {
  return {
    member,
    serverUuid: sql.serverUuid,
    ownGtidsAtStart: sql.executed.ofServer(sql.serverUuid),
    semiSyncReplicas: waitCount,
  };
}

/** Acknowledgements a writable member's commits wait for now (0 with the source side off). */
export const acknowledgements = (sql: Pick<MemberSql, 'semiSync'>): number =>
  sql.semiSync.enabled ? sql.semiSync.waitCount : 0;

/**
 * The primary's term after a look at it: begun now when none is recorded for it (a primary chosen
 * before the record existed: what it holds so far counts as from before the term), the fewest
 * acknowledgements lowered when it is writable waiting for fewer. The same object when nothing changed.
 * A primary that answers with another server_uuid than its term's does not begin a new term: it lost its
 * data (decide.ts's PrimaryDataLost), and the term still says what the data was.
 */
export function termAfterLook(
  term: PrimaryTerm | undefined,
  primary: { readonly name: string; readonly sql: MemberSql },
  waitCount: number,
): PrimaryTerm {
  const sql = primary.sql;
  if (term?.member !== primary.name)
    return startTerm(primary.name, sql, sql.writable ? acknowledgements(sql) : waitCount);
  if (term.serverUuid !== sql.serverUuid) return term;
  if (sql.writable && acknowledgements(sql) < term.semiSyncReplicas)
    return { ...term, semiSyncReplicas: acknowledgements(sql) };
  return term;
}

/**
 * The last failover after a look at its former primary: unprovable from now on when it is writable
 * without semi-synchronous replication waiting for as many acknowledgements as its term did (it could
 * acknowledge a commit no replica has). Commits of a deposed primary that still waits for them (a
 * partition healed before it fenced itself) cannot be acknowledged: fewer than that many replicas
 * were out of the failover's reach (condition 7), and the others follow the new primary. The same
 * object when nothing changed.
 */
export function failoverAfterLook(
  failover: FailoverRecord | undefined,
  former: { readonly name: string; readonly sql?: MemberSql } | undefined,
  time: string,
): FailoverRecord | undefined {
  if (!failover || failover.unprovable !== undefined || former?.name !== failover.from || !former.sql?.writable)
    return failover;
  const wanted = failover.term?.semiSyncReplicas ?? 0;
  if (wanted >= 1 && acknowledgements(former.sql) >= wanted) return failover;
  return {
    ...failover,
    unprovable: `it was found writable at ${time}, after it was replaced, with its commits waiting for ${acknowledgements(former.sql)} acknowledgement(s): a commit of it may have been acknowledged alone`,
  };
}

/** A stop of a member's mysqld that could have acknowledged a commit alone, as its agent reports it (GET /unsafe-stops). */
export interface UnsafeStop {
  /** When the start after it found it (RFC 3339). */
  readonly found: string;
  readonly why: string;
  /** gtid_executed at that start: any transaction in it may have been acknowledged by that stop. */
  readonly executed: string;
}

/** The first of `stops` after which the member held some of `surplus` (condition 11), and which. */
export function unsafeStopHolding(
  surplus: GtidSet,
  stops: readonly UnsafeStop[],
): { readonly stop: UnsafeStop; readonly held: GtidSet } | undefined {
  for (const stop of stops) {
    const held = surplus.intersect(GtidSet.parse(stop.executed));
    if (!held.isEmpty()) return { stop, held };
  }
  return undefined;
}

/** The last failover once the former primary's agent reported `found`: its surplus is no longer provable. */
export function failoverAfterUnsafeStop(
  failover: FailoverRecord,
  found: { readonly stop: UnsafeStop; readonly held: GtidSet },
): FailoverRecord {
  if (failover.unprovable !== undefined) return failover;
  return {
    ...failover,
    unprovable: `its agent found a stop of its mysqld at ${found.stop.found} that could have acknowledged commits alone (${found.stop.why}), when it held ${found.held.toString()}`,
  };
}

/** The annotation value that asks a member's agent to re-provision it, discarding at most `surplus`. */
export const DISCARD_REQUEST_PREFIX = 'discard-unacknowledged:';
export const discardRequest = (surplus: GtidSet): string => `${DISCARD_REQUEST_PREFIX}${surplus.toString()}`;
