// The other members, as the agent's self-fencing sees them: their addresses from the headless Service
// (kept for when DNS is cut off too), and whether any of them answers.
import { lookup } from 'node:dns/promises';
import type { Connection } from 'mysql2/promise';
import type { PeerLook } from './isolation.js';
import { connectVerified } from './local-sql.js';
import { dropSession } from '../mysql/session-end.js';

/** A MySQL error the server sent (1xxx): the peer is up and reachable, whatever it refused. Client errors are 2xxx, or a code without a number. */
export function isServerError(e: unknown): boolean {
  const errno = (e as { errno?: unknown }).errno;
  return typeof errno === 'number' && errno >= 1000 && errno < 2000;
}

/**
 * The addresses a lookup of the headless Service gave, without this pod's own (a dual-stack pod has
 * one per family, and its own other address answering is no peer answering), duplicates dropped.
 * IPv4 and IPv6 alike: an IPv6-only cluster has no IPv4 address to find.
 */
export function peerAddresses(found: readonly string[], own: readonly string[]): string[] {
  const mine = new Set(own.filter(Boolean));
  return [...new Set(found)].filter((a) => !mine.has(a));
}

/** Parses the downward API's status.podIPs as the kubelet writes it into the environment ("a,b"). */
export function podAddresses(podIp: string | undefined, podIps: string | undefined): string[] {
  return [podIp ?? '', ...(podIps ?? '').split(',')].map((a) => a.trim()).filter(Boolean);
}

export interface PeerProbe {
  /** Resolves true once the peer's mysqld answered anything; false when it did not within the deadline. */
  answers(address: string): Promise<boolean>;
  /** Forgets a peer's kept session (it left the Service). */
  forget(address: string): void;
  close(): Promise<void>;
}

export type Resolve = (host: string) => Promise<string[]>;

const DNS_DEADLINE_MS = 2000;

/** getaddrinfo, as getent ahosts: the pod's resolv.conf search list applies (the Service name is short). */
export const resolveWithSystem: Resolve = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Peers found by DNS, remembered across looks; a look asks every known peer at once. */
export class Peers {
  private known: string[] = [];
  private everResolved = false;
  /** A lookup that has not returned: getaddrinfo runs on libuv's small thread pool, so never two at once. */
  private pending: Promise<string[]> | undefined;
  dnsFailing = false;

  constructor(
    private readonly service: string,
    private readonly own: readonly string[],
    private readonly resolve: Resolve,
    private readonly probe: PeerProbe,
    private readonly log: (message: string) => void,
  ) {}

  get addresses(): readonly string[] {
    return this.known;
  }

  /** Ends the sessions kept to the peers. */
  close(): Promise<void> {
    return this.probe.close();
  }

  /** Looks the members up again; false (the last known kept) when DNS did not answer. */
  async refresh(): Promise<boolean> {
    this.pending ??= this.resolve(this.service).finally(() => {
      this.pending = undefined;
    });
    let found: string[];
    try {
      found = await within(DNS_DEADLINE_MS, this.pending);
    } catch {
      if (!this.dnsFailing)
        this.log(
          `cannot look up the members' addresses (${this.service}); keeping the last known: ${this.known.join(' ') || 'none'}`,
        );
      this.dnsFailing = true;
      return false;
    }
    if (this.dnsFailing) this.log("the members' addresses can be looked up again");
    this.dnsFailing = false;
    const next = peerAddresses(found, this.own);
    for (const gone of this.known.filter((a) => !next.includes(a))) this.probe.forget(gone);
    this.known = next;
    this.everResolved = true;
    return true;
  }

  /** One look: see PeerLook. Every peer at once, so that a look takes a few seconds however many are cut off. */
  async look(): Promise<PeerLook> {
    const resolved = await this.refresh();
    if (!resolved && !this.everResolved) return 'unknown';
    if (this.known.length === 0) return resolved ? 'alone' : 'unknown';
    const answers = this.known.map((a) => this.probe.answers(a));
    return (await firstTrue(answers)) ? 'reached' : 'unreached';
  }
}

/** True as soon as one resolves true; false once all resolved false (a rejection counts as false). */
export function firstTrue(ps: readonly Promise<boolean>[]): Promise<boolean> {
  return new Promise((resolve) => {
    let left = ps.length;
    if (left === 0) resolve(false);
    for (const p of ps)
      p.then(
        (v) => (v ? resolve(true) : --left === 0 && resolve(false)),
        () => --left === 0 && resolve(false),
      );
  });
}

export interface MysqlPeerProbeOptions {
  readonly port: number;
  readonly user: string;
  /** Read each time a session is opened (the mounted Secret: a rotation changes it). */
  readonly password: () => string;
  /** The cluster's CA (PEM): a peer must present a certificate it signed before the password is sent. */
  readonly ca: () => string;
  /** The name a peer's certificate must carry (AgentConfig.memberTlsName). */
  readonly servername: string;
  /** @default 2000 */
  readonly deadlineMs?: number;
}

/**
 * A peer answers when its mysqld says anything. Each peer's session is kept open between looks and
 * asked `SELECT 1`: a look costs a round trip, not a process, a TLS handshake and a login every second
 * (and a failed bare TCP connection would count an aborted connect on the peer, up to
 * max_connect_errors). Members are reached by address, which no certificate names: a peer's must carry
 * the cluster's name (`servername`) and chain to its CA, or it is not asked (and does not count as a
 * peer that answers).
 */
export function mysqlPeerProbe(o: MysqlPeerProbeOptions): PeerProbe {
  const sessions = new Map<string, Promise<Connection>>();
  const deadline = o.deadlineMs ?? 2000;
  const drop = (address: string): void => {
    const s = sessions.get(address);
    sessions.delete(address);
    void s?.then(dropSession).catch(() => undefined);
  };
  const open = (address: string): Promise<Connection> =>
    connectVerified({
      host: address,
      servername: o.servername,
      port: o.port,
      user: o.user,
      password: o.password(),
      ca: o.ca(),
      timeoutMs: deadline,
    });
  return {
    async answers(address) {
      let session = sessions.get(address);
      const fresh = !session;
      if (!session) {
        session = open(address);
        sessions.set(address, session);
      }
      try {
        const c = await within(deadline, session);
        await c.query({ sql: 'SELECT 1', timeout: deadline });
        return true;
      } catch (e) {
        drop(address);
        if (isServerError(e)) return true;
        // A kept session that broke (the peer restarted): one fresh try before saying it does not answer.
        return fresh ? false : this.answers(address);
      }
    },
    forget: drop,
    async close() {
      for (const a of [...sessions.keys()]) drop(a);
    },
  };
}
