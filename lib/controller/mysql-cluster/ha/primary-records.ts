// What the cluster manager records in status about its primaries, and writes at once (not with the
// rest of the status at the end of a look): status.currentPrimary, status.primaryTerm and
// status.lastFailover. lib/mysql/rejoin.ts says what the two records prove and why; this is their I/O.
//
// Every write is a merge patch of the status built from the resource as the API server has it (read
// live through the records port: the cache may be a write behind), on the condition that the recorded
// primary is still the one the loop judged from, with that version as a precondition (409 Conflict for
// anything written in between). A record is written before what it guards: a new primary's term in the patch
// that records it, before it can take a write; a term's lower semi-synchronous wait before the primary
// is made writable with it; a former primary's rejoin request before the Event that announces it.
import type { MySQLFailoverStatus, MySQLPrimaryTermStatus } from '../../../../constructs/index.js';
import { MYSQL_REPROVISION_ANNOTATION } from '../../../../constructs/index.js';
import type { MemberSql, MemberView, Step } from '../../../mysql/topology.js';
import { GtidSet } from '../../../mysql/gtid-set.js';
import type { FailoverRecord, PrimaryTerm, RejoinVerdict, UnsafeStop } from '../../../mysql/rejoin.js';
import {
  discardRequest,
  failoverAfterLook,
  failoverAfterUnsafeStop,
  rejoinVerdict,
  startTerm,
  termAfterLook,
  unsafeStopHolding,
} from '../../../mysql/rejoin.js';
import { PollAgainError } from '../../../reconcile/contract.js';
import type { ManagedEvent } from '../../kind-controller.js';
import type { ClusterRecords, PodActions, RecordedStatus } from './ports.js';

/** How soon a refused write is looked at again: at once, from the resource as it is now. */
const REFUSED_POLL_MS = 1_000;
/** Events are cut there by convention; a GTID set is cut well before. */
const MAX_SET_IN_MESSAGE = 400;

/** What this controller last wrote, per cluster (the cache may not have it yet). */
export interface RecordsMemory {
  term?: PrimaryTerm;
  failover?: FailoverRecord;
}

const parseSet = (text: string | undefined): GtidSet | undefined => {
  if (text === undefined) return undefined;
  try {
    return GtidSet.parse(text);
  } catch {
    return undefined;
  }
};

/** The term status records; undefined when there is none or it cannot be read (then nothing is proven). */
export function termFromStatus(s: MySQLPrimaryTermStatus | undefined): PrimaryTerm | undefined {
  const own = parseSet(s?.ownGtidsAtStart);
  if (!s || !own || !Number.isInteger(s.semiSyncReplicas)) return undefined;
  return { member: s.member, serverUuid: s.serverUuid, ownGtidsAtStart: own, semiSyncReplicas: s.semiSyncReplicas };
}

export function termToStatus(t: PrimaryTerm): MySQLPrimaryTermStatus {
  return {
    member: t.member,
    serverUuid: t.serverUuid,
    ownGtidsAtStart: t.ownGtidsAtStart.toString(),
    semiSyncReplicas: t.semiSyncReplicas,
  };
}

/**
 * The failover status records. A part that cannot be read is left out (a term: nothing is proven), or
 * makes it unprovable (what its agent was asked to discard, what the primary held at the failover).
 */
export function failoverFromStatus(s: MySQLFailoverStatus | undefined): FailoverRecord | undefined {
  if (!s) return undefined;
  const term = termFromStatus(s.term);
  const atFailover = parseSet(s.ownGtidsAtFailover);
  const requested = parseSet(s.discardRequested);
  const unreadable = [
    ...(s.ownGtidsAtFailover !== undefined && !atFailover ? ['ownGtidsAtFailover'] : []),
    ...(s.discardRequested !== undefined && !requested ? ['discardRequested'] : []),
  ];
  const unprovable =
    s.unprovable ??
    (unreadable.length > 0 ? `status.lastFailover.${unreadable.join(', ')} is not a GTID set` : undefined);
  return {
    from: s.from,
    to: s.to,
    time: s.time,
    outOfReach: s.outOfReach,
    ...(term ? { term } : {}),
    ...(atFailover ? { ownGtidsAtFailover: atFailover } : {}),
    ...(unprovable !== undefined ? { unprovable } : {}),
    ...(requested ? { discardRequested: requested } : {}),
  };
}

export function failoverToStatus(f: FailoverRecord): MySQLFailoverStatus {
  return {
    from: f.from,
    to: f.to,
    time: f.time,
    outOfReach: f.outOfReach,
    ...(f.term ? { term: termToStatus(f.term) } : {}),
    ...(f.ownGtidsAtFailover ? { ownGtidsAtFailover: f.ownGtidsAtFailover.toString() } : {}),
    ...(f.unprovable !== undefined ? { unprovable: f.unprovable } : {}),
    ...(f.discardRequested ? { discardRequested: f.discardRequested.toString() } : {}),
  };
}

/** A record that replaces another whole: the keys it lacks are removed (a merge patch keeps what it does not name). */
function replacing(record: MySQLFailoverStatus): Record<string, unknown> {
  return { term: null, ownGtidsAtFailover: null, unprovable: null, discardRequested: null, ...record };
}

const short = (set: GtidSet): string => {
  const text = set.toString();
  return text.length <= MAX_SET_IN_MESSAGE ? text : `${text.slice(0, MAX_SET_IN_MESSAGE)}… (${set.count()} in all)`;
};

/**
 * Merges `build(live status)` into the status, on the condition that the recorded primary is still
 * `judgedFrom`; throws a PollAgainError (looked at again at once) when it is not, or when the resource
 * changed in between. `what` names the record in that error. Returns what was written.
 */
async function patchStatusIf<T extends Record<string, unknown>>(
  records: ClusterRecords,
  target: { readonly namespace: string; readonly name: string },
  judgedFrom: string | undefined,
  what: string,
  build: (live: RecordedStatus) => T,
): Promise<T> {
  const refused = (why: string): PollAgainError =>
    new PollAgainError(REFUSED_POLL_MS, new Error(`MySQLCluster ${target.namespace}/${target.name} ${why}: ${what}`));
  const live = await records.read();
  if (live.status.currentPrimary !== judgedFrom)
    throw refused(
      `records ${live.status.currentPrimary ?? 'no'} primary now, not ${judgedFrom ?? 'none'} as judged (another controller acted)`,
    );
  const fields = build(live.status);
  if (!(await records.patch(live.version, fields)))
    throw refused('changed while it was being written (another controller may have acted)');
  return fields;
}

export interface PrimaryRecordsOptions {
  /** Where they are written, and the pods a rejoin request annotates. */
  readonly records: ClusterRecords;
  readonly pods: Pick<PodActions, 'annotate'>;
  /** The cluster, as refusals name it. */
  readonly namespace: string;
  readonly name: string;
  /** status, as the cache has it. */
  readonly status: RecordedStatus;
  /** This controller's memory of the cluster (it is updated): preferred to the cache, which may be behind. */
  readonly memory: RecordsMemory;
  /** Throws once this controller no longer leads: checked before every write. */
  readonly leading: () => void;
  /** Wall-clock time, for the records' times. */
  readonly now: () => Date;
  /**
   * What `member`'s agent reports of the stops of its mysqld (rejoin.ts, condition 11); undefined when
   * it does not answer. Default: none reported.
   */
  readonly unsafeStops?: (member: string) => Promise<readonly UnsafeStop[] | undefined>;
}

/** The records of one cluster, for one pass of its loop. */
export class PrimaryRecords {
  private readonly now: () => Date;

  constructor(private readonly o: PrimaryRecordsOptions) {
    this.now = o.now;
    o.memory.term ??= termFromStatus(o.status.primaryTerm);
    o.memory.failover ??= failoverFromStatus(o.status.lastFailover);
  }

  get term(): PrimaryTerm | undefined {
    return this.o.memory.term;
  }

  get failover(): FailoverRecord | undefined {
    return this.o.memory.failover;
  }

  /** The status fields, as recorded (the status written at the end of a look repeats them). */
  fields(): { primaryTerm?: MySQLPrimaryTermStatus; lastFailover?: MySQLFailoverStatus } {
    return {
      ...(this.term ? { primaryTerm: termToStatus(this.term) } : {}),
      ...(this.failover ? { lastFailover: failoverToStatus(this.failover) } : {}),
    };
  }

  /**
   * Records `member` as the primary, `judgedFrom` being the recorded one, before it takes a single
   * write: with its term (from what it answered), and for a failover with the record of it, the lost
   * primary's term as the API server has it. Refused (nothing promoted) when another controller acted.
   */
  async elect(
    member: string,
    judgedFrom: string | undefined,
    o: {
      readonly sql: MemberSql | undefined;
      readonly waitCount: number;
      readonly promote?: Step & { type: 'promote' };
    },
  ): Promise<void> {
    this.o.leading();
    const term = o.sql ? startTerm(member, o.sql, o.waitCount) : undefined;
    let failover: FailoverRecord | undefined;
    await patchStatusIf(
      this.o.records,
      this.o,
      judgedFrom,
      `${member} was not recorded as the primary, and is not promoted`,
      (live) => {
        const promote = o.promote;
        if (promote) {
          const lost = termFromStatus(live.primaryTerm);
          const lostTerm = lost?.member === promote.from ? lost : undefined;
          failover = {
            from: promote.from,
            to: member,
            time: this.now().toISOString(),
            outOfReach: promote.outOfReach,
            ...(lostTerm ? { term: lostTerm } : {}),
            ...(promote.fromExecuted
              ? {
                  ownGtidsAtFailover: lostTerm
                    ? promote.fromExecuted.ofServer(lostTerm.serverUuid)
                    : promote.fromExecuted,
                }
              : {}),
          };
        }
        return {
          currentPrimary: member,
          primaryTerm: term ? termToStatus(term) : null,
          ...(failover ? { lastFailover: replacing(failoverToStatus(failover)) } : {}),
        };
      },
    );
    this.o.leading();
    this.o.memory.term = term;
    if (failover) this.o.memory.failover = failover;
  }

  /**
   * After a look: the primary's term begun (a primary chosen before terms were recorded) or its wait
   * lowered (found writable waiting for fewer acknowledgements), and the last failover's proof given
   * up when its former primary was found writable without semi-synchronous replication guarding it.
   * Written before any step is taken on what the look found (a fence would hide what it saw).
   */
  async afterLook(observed: readonly MemberView[], primary: string | undefined, waitCount: number): Promise<void> {
    if (primary === undefined) return;
    const current = observed.find((m) => m.name === primary);
    const sql = current?.sql;
    if (sql && termAfterLook(this.term, { name: primary, sql }, waitCount) !== this.term) {
      this.o.leading();
      const written = await patchStatusIf(this.o.records, this.o, primary, 'its term was not recorded', (live) => ({
        primaryTerm: termToStatus(termAfterLook(termFromStatus(live.primaryTerm), { name: primary, sql }, waitCount)),
      }));
      this.o.memory.term = termFromStatus(written.primaryTerm);
    }
    const failover = this.failover;
    if (failover?.to !== primary) return;
    const former = observed.find((m) => m.name === failover.from);
    const time = this.now().toISOString();
    if (failoverAfterLook(failover, former, time) === failover) return;
    this.o.leading();
    const written = await patchStatusIf(
      this.o.records,
      this.o,
      primary,
      `what was seen of ${failover.from} was not recorded`,
      (live) => {
        const recorded = failoverFromStatus(live.lastFailover);
        const next = recorded && failoverAfterLook(recorded, former, time);
        return next ? { lastFailover: failoverToStatus(next) } : {};
      },
    );
    this.o.memory.failover = failoverFromStatus(written.lastFailover) ?? failoverAfterLook(failover, former, time);
  }

  /** Before `member`, the primary, is made writable waiting for `waitCount` acknowledgements: a lower wait is recorded first. */
  async beforeEnableWrites(member: string, waitCount: number): Promise<void> {
    const term = this.term;
    if (term?.member !== member || waitCount >= term.semiSyncReplicas) return;
    this.o.leading();
    const written = await patchStatusIf(
      this.o.records,
      this.o,
      member,
      `its lower semi-synchronous wait (${waitCount}) was not recorded, and it is not made writable`,
      (live) => {
        const recorded = termFromStatus(live.primaryTerm);
        const lowered =
          recorded?.member === member
            ? { ...recorded, semiSyncReplicas: Math.min(recorded.semiSyncReplicas, waitCount) }
            : { ...term, semiSyncReplicas: waitCount };
        return { primaryTerm: termToStatus(lowered) };
      },
    );
    this.o.memory.term = termFromStatus(written.primaryTerm);
  }

  /** rejoin.ts's verdict on every answering member that holds what the answering primary lacks. */
  verdicts(observed: readonly MemberView[], primary: string | undefined): RejoinVerdict[] {
    const reference = observed.find((m) => m.name === primary);
    if (!reference?.sql) return [];
    const out: RejoinVerdict[] = [];
    for (const m of observed) {
      if (m.name === reference.name || !m.sql) continue;
      const v = rejoinVerdict({
        member: { name: m.name, sql: m.sql },
        primary: { name: reference.name, executed: reference.sql.executed },
        ...(this.failover ? { failover: this.failover } : {}),
      });
      if (v) out.push(v);
    }
    return out;
  }

  /**
   * For a former primary whose surplus is proven never acknowledged, and only for an errant one (the
   * look's decision): its pod's reprovision annotation, carrying the set its agent may discard (so a
   * clone that would discard more is refused), then that request in status, then the Event. Once:
   * the annotation's value is the request, and a request recorded is not made again. Just before, its
   * agent is asked for the stops of its mysqld (condition 11): one that could have acknowledged some of
   * the surplus is recorded as what makes it unprovable, and nothing is requested; an agent that does
   * not answer is asked again at the next look.
   */
  async rejoin(verdicts: readonly RejoinVerdict[], errant: ReadonlySet<string>): Promise<ManagedEvent[]> {
    const events: ManagedEvent[] = [];
    for (const v of verdicts) {
      if (v.kind !== 'discard' || !errant.has(v.member)) continue;
      const { failover } = v;
      const stops = this.o.unsafeStops ? await this.o.unsafeStops(v.member) : [];
      if (stops === undefined) continue;
      const found = unsafeStopHolding(v.surplus, stops);
      if (found) {
        this.o.leading();
        const written = await patchStatusIf(
          this.o.records,
          this.o,
          failover.to,
          `what ${v.member}'s agent reported of its stops was not recorded`,
          (live) => {
            const recorded = failoverFromStatus(live.lastFailover);
            const same = recorded?.from === failover.from && recorded.time === failover.time;
            return same ? { lastFailover: failoverToStatus(failoverAfterUnsafeStop(recorded, found)) } : {};
          },
        );
        this.o.memory.failover = failoverFromStatus(written.lastFailover) ?? failoverAfterUnsafeStop(failover, found);
        events.push({
          type: 'Warning',
          reason: 'UnacknowledgedNotProven',
          message: `${v.member}, the primary until the failover to ${failover.to} at ${failover.time}, came back holding ${v.surplus.count()} transaction(s) the primary lacks (${short(v.surplus)}), and they are not discarded automatically: its agent found a stop of its mysqld at ${found.stop.found} that could have acknowledged commits no replica had (${found.stop.why}). Inspect them, then re-provision it by clone (kubectl annotate pod ${v.member} recon8s.dev/reprovision=<any new value>) to discard them.`,
          once: `unacknowledged-not-proven/${failover.term?.serverUuid ?? v.member}/${v.surplus.toString()}`,
        });
        continue;
      }
      this.o.leading();
      await this.o.pods.annotate(v.member, MYSQL_REPROVISION_ANNOTATION, discardRequest(v.surplus));
      this.o.leading();
      const written = await patchStatusIf(
        this.o.records,
        this.o,
        failover.to,
        `the request to discard ${v.member}'s transactions was not recorded`,
        (live) => {
          const recorded = failoverFromStatus(live.lastFailover);
          const same = recorded?.from === failover.from && recorded.time === failover.time;
          return same && !recorded.discardRequested
            ? { lastFailover: failoverToStatus({ ...recorded, discardRequested: v.surplus }) }
            : {};
        },
      );
      // Asked: not again from this process, whatever the API server had (a record another hand changed).
      this.o.memory.failover = failoverFromStatus(written.lastFailover) ?? { ...failover, discardRequested: v.surplus };
      const term = failover.term;
      events.push({
        type: 'Warning',
        reason: 'DiscardingUnacknowledged',
        message: `${v.member}, the primary until the failover to ${failover.to} at ${failover.time}, came back holding ${v.surplus.count()} transaction(s) no client was told committed (${short(v.surplus)}): its commits waited for ${term?.semiSyncReplicas ?? 0} semi-synchronous acknowledgement(s) and ${failover.outOfReach} of its replicas were out of the failover's reach. Its agent re-provisions it by clone of the primary, discarding them; the binary logs holding them are kept on its volume (discarded-*).`,
        once: `discard-unacknowledged/${term?.serverUuid ?? v.member}/${v.surplus.toString()}`,
      });
    }
    return events;
  }
}
