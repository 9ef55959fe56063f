// How the HA loop reaches a cluster's members: one session per member, kept open between looks (no TLS
// handshake and login every few seconds per member), and the members found silent, which no look waits
// on. Part of the cluster's memory (memory.ts); a pass of the loop reaches members through a
// SessionPass, opened with that pass's credentials and CA.
//
// - A kept session that ends meanwhile wakes the cluster at once (a primary whose mysqld died is looked
//   at then, not at the next poll), at most once a BUSY_POLL_MS; one whose pod, address, credentials
//   or CA changed, or that failed in a look, is closed and opened again.
// - A member that did not answer within the deadline (a partition, a node gone) is silent until one
//   answers again or its pod changes: looks do not wait on it, a probe in the background asks again,
//   one at a time, and the look after the probe got an answer connects as usual. Without this, every
//   look of a failover waited the connect timeout on the lost primary (~3 s per step).
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { MYSQL_PORT } from '../../../../constructs/index.js';
import type { MemberCredentials } from '../../../mysql/member-sql.js';
import { CONNECT_TIMEOUT_MS, MemberCertificateError } from '../../../mysql/member-sql.js';
import type { MemberSql } from '../../../mysql/topology.js';
import type { ConnectMember, MemberActions } from './ports.js';
import { BUSY_POLL_MS } from './timing.js';

/**
 * Failures that took the whole deadline to come (no answer at all: a partition, a node gone), unlike a
 * refused connection: asking again would wait as long, at every look of a failover.
 */
const SILENT_CODES = new Set(['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'PROTOCOL_SEQUENCE_TIMEOUT']);

/** A session kept open between looks, and what it was opened for (pod, credentials, CA). */
interface KeptSession {
  readonly key: string;
  readonly session: MemberActions;
}

/** A member judged silent: its pod then (uid and IP), why, and whether a probe of it is under way. */
interface Silent {
  readonly pod: string;
  error: string;
  probing: boolean;
}

/** What a member answered when asked, or why it did not. */
export type Answer =
  | { readonly sql: MemberSql; readonly session: MemberActions }
  /** `silent`: judged silent before, not asked again by this look. */
  | { readonly error: string; readonly silent?: true; readonly certificateRejected?: string };

/** What a pass reaches the members with. */
export interface SessionSetting {
  readonly connect: ConnectMember;
  readonly credentials: MemberCredentials;
  readonly ca: string;
  /** A member's name in its certificate (`<pod>.<headless>`): verified with the chain before a password is sent. */
  readonly memberHost: (member: string) => string;
  /** Monotonic milliseconds. */
  readonly now: () => number;
  /** Queues the cluster to be looked at again at once. */
  readonly wake?: () => void;
}

/** Ends a session without waiting for it (nor for its failure: it is no longer used). */
const endSession = (session: MemberActions): void => {
  void session.close().catch(() => undefined);
};

/** A mysql2 error, without anything but its own words (they never hold a password). */
export function describe(e: unknown): string {
  const err = e as { code?: string; message?: string };
  return `${err.code ? `${err.code}: ` : ''}${err.message ?? String(e)}`.slice(0, 300);
}

const podIdentity = (pod: V1Pod | undefined): string => `${pod?.metadata?.uid ?? ''}/${pod?.status?.podIP ?? ''}`;

/** What a cluster remembers of its members' sessions between the passes of its loop. */
interface SessionState {
  readonly kept: Map<string, KeptSession>;
  readonly silent: Map<string, Silent>;
  /** When a lost session last woke the cluster (monotonic ms). */
  woken?: number;
  /** Counts close(): a pass that began before one keeps none of the sessions it opened. */
  closes: number;
}

/** The members' sessions as one pass of the loop uses them. */
export interface SessionPass {
  /** Whether the session kept for `name` was opened for this pod, these credentials and this CA. */
  keptFor(name: string, pod: V1Pod | undefined): boolean;
  /** Ends the member's kept session, without waiting (a session to a member cut off ends only at its deadline). */
  drop(name: string): void;
  /**
   * Asks the member at `ip` (pod `pod`) what decide() needs, on its kept session or a new one, unless
   * it was judged silent on this pod (then a probe asks again in the background). `former`: the pod is
   * the recorded primary's as it last answered (its pod gone from the API): asked on its kept session only.
   */
  ask(name: string, pod: V1Pod | undefined, ip: string, former: boolean): Promise<Answer>;
  /** Whether `name` was judged silent (a look does not wait on it). */
  isSilent(name: string): boolean;
  /**
   * Fencing a lost primary is its own job (it fences itself when it reaches no replica); this is one
   * more try, in the background, in case it answers again (a failover never waits on it). `stillLost`
   * is asked once it answers: the fence is sent only while it holds.
   */
  fenceInBackground(name: string, ip: string, stillLost: () => boolean, failed: (error: string) => void): void;
  /**
   * At the end of a pass: the sessions of members not in `asked` (name to pod), or kept for another
   * pod, end; every one does when the cluster was closed during the pass.
   */
  settle(asked: ReadonlyMap<string, V1Pod | undefined>): void;
}

/** A cluster's sessions and silent members, kept between the passes of its loop. */
export class MemberSessions {
  readonly #state: SessionState = { kept: new Map(), silent: new Map(), closes: 0 };

  /** The sessions one pass uses, opened with `setting`. */
  pass(setting: SessionSetting): SessionPass {
    return new PassSessions(this.#state, setting);
  }

  /** Ends every kept session, without waiting. */
  endAll(): void {
    for (const k of this.#state.kept.values()) endSession(k.session);
    this.#state.kept.clear();
  }

  /** The cluster is forgotten, or the term of leadership ends: every session ends, and a pass under way keeps none. */
  close(): void {
    this.endAll();
    this.#state.closes++;
  }
}

class PassSessions implements SessionPass {
  readonly #closesAtStart: number;
  /** What a kept session was opened with: a digest, so that no password is kept beside the sessions. */
  readonly #opened: string;

  constructor(
    private readonly state: SessionState,
    private readonly setting: SessionSetting,
  ) {
    this.#closesAtStart = state.closes;
    const { credentials, ca } = setting;
    this.#opened = createHash('sha256')
      .update([credentials.adminPassword, credentials.replicationPassword, ca].join('\0'))
      .digest('hex');
  }

  /** What a session kept for `pod` was opened for: the pod (uid and address), the credentials and the CA. */
  private key(pod: V1Pod | undefined): string {
    return `${podIdentity(pod)}/${this.#opened}`;
  }

  keptFor(name: string, pod: V1Pod | undefined): boolean {
    return this.state.kept.get(name)?.key === this.key(pod);
  }

  drop(name: string): void {
    const k = this.state.kept.get(name);
    this.state.kept.delete(name);
    if (k) endSession(k.session);
  }

  async ask(name: string, pod: V1Pod | undefined, ip: string, former: boolean): Promise<Answer> {
    const known = this.state.silent.get(name);
    if (known?.pod === podIdentity(pod)) {
      this.probe(name, known, ip);
      return { error: known.error, silent: true };
    }
    this.state.silent.delete(name);
    try {
      const reused = this.state.kept.get(name)?.session;
      let session = await this.open(name, pod, ip);
      let sql: MemberSql;
      try {
        // A kept session answers within a connection's deadline, or the member is as silent as one
        // that does not let a connection in.
        sql = await session.observe(session === reused ? CONNECT_TIMEOUT_MS : undefined);
      } catch (e) {
        this.drop(name);
        // A kept session may have ended unnoticed (a member restarted between looks): the member is
        // asked once more, on a session of its own, before it counts as not answering.
        if (session !== reused || former || SILENT_CODES.has((e as { code?: string }).code ?? '')) throw e;
        session = await this.open(name, pod, ip);
        sql = await session.observe();
      }
      return { sql, session };
    } catch (e) {
      // A member that did not answer keeps no session.
      this.drop(name);
      if (e instanceof MemberCertificateError) return { error: describe(e), certificateRejected: e.verifyError };
      if (SILENT_CODES.has((e as { code?: string }).code ?? ''))
        this.state.silent.set(name, { pod: podIdentity(pod), error: describe(e), probing: false });
      return { error: describe(e) };
    }
  }

  fenceInBackground(name: string, ip: string, stillLost: () => boolean, failed: (error: string) => void): void {
    void (async () => {
      const session = await this.connect(name, ip);
      try {
        if (stillLost()) await session.fence();
      } finally {
        await session.close();
      }
    })().catch((e: unknown) => failed(describe(e)));
  }

  isSilent(name: string): boolean {
    return this.state.silent.has(name);
  }

  settle(asked: ReadonlyMap<string, V1Pod | undefined>): void {
    const closed = this.state.closes !== this.#closesAtStart;
    for (const [name, { key }] of [...this.state.kept])
      if (closed || !asked.has(name) || key !== this.key(asked.get(name))) this.drop(name);
  }

  /** A session to the member `name` at `ip`, its certificate verified by the cluster CA and that name. */
  private connect(name: string, ip: string, onLost?: () => void): Promise<MemberActions> {
    const { credentials, ca } = this.setting;
    const servername = this.setting.memberHost(name);
    return this.setting.connect({
      host: ip,
      servername,
      port: MYSQL_PORT,
      credentials,
      ca,
      ...(onLost ? { onLost } : {}),
    });
  }

  /** The member's kept session if it was opened for this pod, these credentials and this CA; else a new one, kept. */
  private async open(name: string, pod: V1Pod | undefined, ip: string): Promise<MemberActions> {
    const key = this.key(pod);
    const k = this.state.kept.get(name);
    if (k?.key === key) return k.session;
    if (k) this.drop(name);
    const opening: { session?: MemberActions } = {};
    const session = await this.connect(name, ip, () => {
      // Ended under it (its mysqld died, it closed the session): dropped, and the cluster looked at now,
      // but never in a loop (a member that keeps ending new sessions).
      const lost = opening.session;
      if (lost === undefined || this.state.kept.get(name)?.session !== lost) return;
      this.state.kept.delete(name);
      endSession(lost);
      const now = this.setting.now();
      if (this.state.woken !== undefined && now - this.state.woken < BUSY_POLL_MS) return;
      this.state.woken = now;
      this.setting.wake?.();
    });
    opening.session = session;
    this.state.kept.set(name, { key, session });
    return session;
  }

  /** Asks a silent member again, in the background: the look that started it does not wait. */
  private probe(name: string, entry: Silent, ip: string): void {
    if (entry.probing) return;
    entry.probing = true;
    void (async () => {
      try {
        const session = await this.connect(name, ip);
        try {
          await session.observe();
        } finally {
          await session.close();
        }
        if (this.state.silent.get(name) === entry) this.state.silent.delete(name);
      } catch (e) {
        entry.error = describe(e);
        // It answers, with a certificate that is refused: no longer silent, the next look reports it.
        if (e instanceof MemberCertificateError && this.state.silent.get(name) === entry)
          this.state.silent.delete(name);
      } finally {
        entry.probing = false;
      }
    })();
  }
}
