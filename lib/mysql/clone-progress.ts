// How far along a member's clone is, as its donor sees it. A recipient's own progress tables
// (performance_schema.clone_progress) are out of reach while it clones: a new member clones in its
// bootstrap container, into a temporary mysqld that listens on no address. The donor is a member the
// controller already has a session to (the primary), and MySQL reports a donor's work as stage events
// (stage/innodb/clone (file copy), (page copy), (redo copy)) with the work done and estimated, in
// MiB; my.cnf instruments those stages only (constructs/mysql/my-cnf.ts). The donor's clone session
// comes from the recipient's address (skip_name_resolve), which names the member.

/** The donor's clone stages in progress, with the address each recipient connected from. */
export const CLONE_DONATIONS_SQL =
  'SELECT s.EVENT_NAME AS stage, s.WORK_COMPLETED AS done, s.WORK_ESTIMATED AS total, t.PROCESSLIST_HOST AS host ' +
  'FROM performance_schema.events_stages_current s JOIN performance_schema.threads t USING (THREAD_ID) ' +
  "WHERE s.EVENT_NAME LIKE 'stage/innodb/clone%'";

/** One clone a donor serves: the recipient's address, the stage and its work in MiB. */
export interface CloneDonation {
  readonly recipientHost: string;
  /** `file copy`, `page copy` or `redo copy`. */
  readonly stage: string;
  readonly doneMiB: number;
  readonly totalMiB: number;
}

const STAGE = /^stage\/innodb\/clone \(([a-z ]{1,20})\)$/;
// An address as the donor's thread reports it: IPv4, IPv6, or a name (skip_name_resolve off).
const HOST = /^[0-9A-Za-z.:_-]{1,255}$/;

/** A count as mysql2 gives it (a number, or a string for a big one); NaN for anything else (NULL). */
function count(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^[0-9]{1,15}$/.test(v)) return Number(v);
  return Number.NaN;
}

/**
 * The rows of CLONE_DONATIONS_SQL as donations; a row that does not read as one (a stage, an address,
 * counts) is left out rather than trusted: it is a member's answer.
 */
export function cloneDonationsFrom(rows: readonly Record<string, unknown>[]): CloneDonation[] {
  const out: CloneDonation[] = [];
  for (const r of rows) {
    const stage = STAGE.exec(String(r.stage ?? ''))?.[1];
    const host = String(r.host ?? '');
    const done = count(r.done);
    const total = count(r.total);
    if (
      !stage ||
      !HOST.test(host) ||
      !Number.isSafeInteger(done) ||
      !Number.isSafeInteger(total) ||
      done < 0 ||
      total < 0
    )
      continue;
    out.push({ recipientHost: host, stage, doneMiB: done, totalMiB: Math.max(total, done) });
  }
  return out;
}

/** A member's clone in progress, as status.members[].cloning says it. */
export interface MemberCloning {
  /** The member it clones (the donor). */
  readonly from: string;
  readonly stage: string;
  readonly doneMiB: number;
  readonly totalMiB: number;
}

/**
 * The clone each member receives, by member name: a donation whose recipient address is one of that
 * member's pod addresses. A donation from an address no member has (a backup job, a person) is no
 * member's.
 */
export function cloningByMember(
  donor: string,
  donations: readonly CloneDonation[],
  members: readonly { readonly name: string; readonly addresses: readonly string[] }[],
): Map<string, MemberCloning> {
  const byAddress = new Map<string, string>();
  for (const m of members) for (const a of m.addresses) byAddress.set(a, m.name);
  const out = new Map<string, MemberCloning>();
  for (const d of donations) {
    const member = byAddress.get(d.recipientHost);
    if (member === undefined || member === donor) continue;
    out.set(member, { from: donor, stage: d.stage, doneMiB: d.doneMiB, totalMiB: d.totalMiB });
  }
  return out;
}
