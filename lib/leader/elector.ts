import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeClient } from '../kube/client.js';
import { realClock, sleep } from '../clock/index.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import { apiError } from '../kube/errors.js';
import type { Logger } from '../observability/logger.js';
import { silentLogger } from '../observability/logger.js';
import { kubeLeaseLock } from './lock.js';
import type { LeaderElectionRecord, LeaseLock } from './lock.js';

/** client-go's JitterFactor for the acquire loop: attempts every retryPeriod · [1, 2.2). */
const JITTER_FACTOR = 1.2;

export interface LeaderElectionHooks {
  /** Leadership of this process changed (for `leader_election_master_status{name}`). Must not throw. */
  onLeaderChange?(isLeader: boolean): void;
}

export interface LeaderElectorOptions {
  /** The lock; or give `client` + `namespace` + `name` for a coordination.k8s.io/v1 Lease. */
  readonly lock?: LeaseLock;
  readonly client?: KubeClient;
  readonly namespace?: string;
  readonly name?: string;
  /** Default `<hostname>_<uuid>`; must be unique per candidate. */
  readonly identity?: string;
  /** How long others wait, after last seeing the record change, before taking over; default 15000. */
  readonly leaseDurationMs?: number;
  /** The leader gives up if it could not renew for this long; default 10000. Must be < leaseDuration. */
  readonly renewDeadlineMs?: number;
  /** Time between attempts; default 2000. Must be < renewDeadline / 1.2. */
  readonly retryPeriodMs?: number;
  /** On stop(), hand the lease over at once (client-go ReleaseOnCancel); default true. */
  readonly releaseOnCancel?: boolean;
  /** After losing leadership, compete again (default true); false: the elector ends (client-go's Run returns). */
  readonly reacquire?: boolean;
  /**
   * Became leader. `signal` aborts when leadership ends (lost or stop()). If this returns a promise, stop()
   * waits for it to settle (at most renewDeadlineMs) before releasing the lease, so a successor never
   * overlaps with work still running here. Errors are logged.
   */
  readonly onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Leadership ended (after the signal aborted; on stop() after the release). */
  readonly onStoppedLeading?: () => void;
  /** The observed leader changed (also to this identity). */
  readonly onNewLeader?: (identity: string) => void;
  readonly hooks?: LeaderElectionHooks;
  readonly logger?: Logger;
  readonly clock?: Clock;
  readonly random?: () => number;
}

export interface LeaderElector {
  readonly identity: string;
  isLeader(): boolean;
  /** The holder this elector last observed ('' if released/none, undefined before the first read). */
  leader(): string | undefined;
  /** Starts competing (idempotent). Never rejects; errors are logged and retried. */
  start(): void;
  /**
   * Stops competing. If leading: aborts the leading signal, waits for onStartedLeading's promise (bounded),
   * releases the lease (unless `release: false` or releaseOnCancel is false), then calls onStoppedLeading.
   * `release: false` simulates a crash: the lease stays held until it expires.
   */
  stop(opts?: { readonly release?: boolean }): Promise<void>;
}

/**
 * Leader election on a Lease with client-go's semantics:
 * - acquire when the lease is absent, released (holder ''), or expired — expired by OUR clock: the record
 *   has not changed for its leaseDurationSeconds since we first saw it this way (never by comparing the
 *   holder's timestamps with our clock, so clock skew between nodes does not matter);
 * - the leader renews every retryPeriod and gives up when it could not renew for renewDeadline;
 * - every write is an optimistic update on the lock's resourceVersion (409 → try again next period);
 * - leaseTransitions is incremented when the holder changes; acquireTime kept while renewing.
 */
export function createLeaderElector(opts: LeaderElectorOptions): LeaderElector {
  return new LeaseElector(opts);
}

class LeaseElector implements LeaderElector {
  readonly identity: string;
  private readonly lock: LeaseLock;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: Logger;
  private readonly stopCtl = new AbortController();

  private running: Promise<void> | undefined;
  private stopped = false;
  private releaseOnStop: boolean;
  private leading = false;
  private work: Promise<void> | undefined;
  // client-go's observedRecord / observedTime: the last record seen and when (our clock) it was first seen.
  private observed: LeaderElectionRecord | undefined;
  private observedTime = 0;
  private reportedLeader: string | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (!(this.retryPeriodMs > 0 && this.renewDeadlineMs > 0 && this.leaseDurationMs > 0))
      throw new Error('leader election: durations must be > 0');
    if (this.leaseDurationMs <= this.renewDeadlineMs)
      throw new Error('leader election: leaseDuration must be greater than renewDeadline');
    if (this.renewDeadlineMs <= JITTER_FACTOR * this.retryPeriodMs)
      throw new Error('leader election: renewDeadline must be greater than retryPeriod*1.2');
    if (opts.lock !== undefined) {
      this.lock = opts.lock;
    } else {
      if (opts.client === undefined || !opts.namespace || !opts.name)
        throw new Error('leader election: give a lock, or client + namespace + name');
      this.lock = kubeLeaseLock(opts.client, { namespace: opts.namespace, name: opts.name });
    }
    this.identity = opts.identity ?? `${hostname()}_${randomUUID()}`;
    if (this.identity === '') throw new Error('leader election: identity must not be empty');
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.releaseOnStop = opts.releaseOnCancel ?? true;
    this.log = (opts.logger ?? silentLogger).child({ lease: this.lock.description, identity: this.identity });
  }

  isLeader(): boolean {
    return this.leading;
  }

  leader(): string | undefined {
    return this.observed?.holderIdentity;
  }

  start(): void {
    if (this.running !== undefined || this.stopped) return;
    this.running = this.run().catch((error: unknown) =>
      this.log.error('leader election loop ended unexpectedly', { error }),
    );
  }

  async stop(opts: { readonly release?: boolean } = {}): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      if (opts.release === false) this.releaseOnStop = false;
      this.stopCtl.abort();
    }
    await this.running;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!(await this.acquire())) break;
      await this.lead();
      if (this.opts.reacquire === false) break;
    }
  }

  /** Tries until this elector holds the lease (true) or is stopped (false). */
  private async acquire(): Promise<boolean> {
    this.log.info('attempting to acquire leader lease');
    while (!this.stopped) {
      if (await this.attempt(this.renewDeadlineMs)) {
        this.log.info('acquired leader lease');
        return true;
      }
      await sleep(this.clock, this.retryPeriodMs * (1 + this.random() * JITTER_FACTOR), this.stopCtl.signal);
    }
    return false;
  }

  /** Leads until renewing fails for renewDeadline or stop(); then ends leadership. */
  private async lead(): Promise<void> {
    const leadCtl = new AbortController();
    this.setLeading(true);
    this.work = Promise.resolve()
      .then(() => this.opts.onStartedLeading(leadCtl.signal))
      .catch((error: unknown) => this.log.error('onStartedLeading failed', { error }));
    let lastRenew = this.observedTime;
    let lost = false;
    while (!this.stopped) {
      await sleep(this.clock, this.retryPeriodMs, this.stopCtl.signal);
      if (this.stopped) break;
      const remaining = lastRenew + this.renewDeadlineMs - this.clock.now();
      const startedAt = this.clock.now();
      if (remaining > 0 && (await this.attempt(remaining))) {
        lastRenew = startedAt;
        continue;
      }
      if (this.stopped) break;
      if (this.clock.now() - lastRenew >= this.renewDeadlineMs) {
        this.log.warn('failed to renew leader lease within the renew deadline; stepping down', {
          renewDeadlineMs: this.renewDeadlineMs,
        });
        lost = true;
        break;
      }
    }
    leadCtl.abort();
    this.setLeading(false);
    if (!lost && this.releaseOnStop) {
      await this.settleWork();
      await this.release();
    }
    this.work = undefined;
    this.callback('onStoppedLeading', () => this.opts.onStoppedLeading?.());
  }

  /** One tryAcquireOrRenew bounded by `budgetMs` (the request is aborted after that); never rejects. */
  private async attempt(budgetMs: number): Promise<boolean> {
    const ctl = new AbortController();
    const onStop = (): void => ctl.abort();
    this.stopCtl.signal.addEventListener('abort', onStop, { once: true });
    let timer: TimerHandle | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = this.clock.setTimeout(() => {
        ctl.abort();
        resolve(false);
      }, budgetMs);
    });
    try {
      return await Promise.race([this.tryAcquireOrRenew(ctl.signal), timedOut]);
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
      this.stopCtl.signal.removeEventListener('abort', onStop);
      ctl.abort();
    }
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = this.clock.now();
    const leaseDurationSeconds = Math.max(1, Math.ceil(this.leaseDurationMs / 1000));
    try {
      const current = await this.lock.get(signal);
      if (signal.aborted) return false;
      if (current === undefined) {
        const record: LeaderElectionRecord = {
          holderIdentity: this.identity,
          leaseDurationSeconds,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: 0,
        };
        await this.lock.create(record, signal);
        if (signal.aborted) return false;
        this.observe(record, now);
        return true;
      }
      const old = current.record;
      if (this.observed === undefined || !sameRecord(this.observed, old)) this.observe(old, now);
      const holder = old.holderIdentity;
      if (holder !== '' && holder !== this.identity) {
        const durationMs = old.leaseDurationSeconds > 0 ? old.leaseDurationSeconds * 1000 : this.leaseDurationMs;
        if (this.observedTime + durationMs > now) return false; // held by someone else and not expired
      }
      const mine = holder === this.identity;
      const record: LeaderElectionRecord = {
        holderIdentity: this.identity,
        leaseDurationSeconds,
        renewTime: now,
        acquireTime: mine && old.acquireTime !== undefined ? old.acquireTime : now,
        leaseTransitions: mine ? old.leaseTransitions : old.leaseTransitions + 1,
      };
      await this.lock.update(record, current.resourceVersion, signal);
      if (signal.aborted) return false;
      this.observe(record, now);
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      const info = apiError(error);
      if (info.code === 409) this.log.debug('lease changed under us (conflict); retrying', { message: info.message });
      else
        this.log.warn('leader lease request failed', { code: info.code, reason: info.reason, message: info.message });
      return false;
    }
  }

  /** Hands the lease over at once: holder '', duration 1 s (client-go release). Only if we still hold it. */
  private async release(): Promise<void> {
    const ctl = new AbortController();
    const timer = this.clock.setTimeout(() => ctl.abort(), this.renewDeadlineMs);
    try {
      const current = await this.lock.get(ctl.signal);
      if (current === undefined || current.record.holderIdentity !== this.identity) return;
      const now = this.clock.now();
      const record: LeaderElectionRecord = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: current.record.leaseTransitions,
      };
      await this.lock.update(record, current.resourceVersion, ctl.signal);
      this.observe(record, now);
      this.log.info('released leader lease');
    } catch (error) {
      const info = apiError(error);
      this.log.warn('failed to release leader lease', { code: info.code, message: info.message });
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  private async settleWork(): Promise<void> {
    const work = this.work;
    if (work === undefined) return;
    let timer: TimerHandle | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = this.clock.setTimeout(() => {
        this.log.warn('leader work did not stop in time; releasing anyway', { waitedMs: this.renewDeadlineMs });
        resolve();
      }, this.renewDeadlineMs);
    });
    await Promise.race([work, timeout]);
    if (timer !== undefined) this.clock.clearTimeout(timer);
  }

  private observe(record: LeaderElectionRecord, now: number): void {
    this.observed = record;
    this.observedTime = now;
    const holder = record.holderIdentity;
    if (holder !== '' && holder !== this.reportedLeader) {
      this.reportedLeader = holder;
      this.log.info('new leader observed', { leader: holder });
      this.callback('onNewLeader', () => this.opts.onNewLeader?.(holder));
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    this.callback('onLeaderChange', () => this.opts.hooks?.onLeaderChange?.(leading));
  }

  private callback(what: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.log.error(`${what} threw`, { error });
    }
  }
}

function sameRecord(a: LeaderElectionRecord, b: LeaderElectionRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.leaseTransitions === b.leaseTransitions &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime
  );
}
