// `recon8s agent`: the long-running part of every MySQL pod, beside mysqld for the pod's life. The
// controller decides the topology over SQL; the agent does what needs the member's own socket, file
// system or a moment the controller cannot see:
// - it answers the kubelet's liveness and readiness probes over HTTP (health.ts), from a pooled session,
//   and the controller's questions (its mysqld's stops, the credentials revision) over TLS only (http-api.ts);
// - on the writable member, whenever mysqld (re)started, it makes sure of the cluster's accounts
//   (accounts.ts), and it makes the member read-only when it is cut off from every other member
//   (self-fencing: isolation.ts decides, lib/mysql/fencing.ts does it, the same fencing the controller uses);
// - on a replica that can never catch up, or whose pod asks for it, it re-provisions the member by
//   clone (reprovision.ts), reports it in its termination message and exits, so that the pod restarts.
// It has no API credentials: what it has to say goes through its termination message and its probes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ADMIN_USER,
  CLONE_USER,
  EXPORTER_USER,
  MEMBER_REPORTS,
  MYSQL_PORT,
  REPLICATION_USER,
} from '../../constructs/mysql-member.js';
import { fence } from '../mysql/fencing.js';
import type { LoginCheck } from './accounts.js';
import { ensureAccounts } from './accounts.js';
import type { AgentConfig } from './config.js';
import type { ClusterCredentials } from './credential-files.js';
import { readCredentials } from './credential-files.js';
import type { Health } from './health.js';
import { liveness, messageOf, readiness } from './health.js';
import type { AgentEndpoints, AgentPortKind } from './http-api.js';
import { serveAgentRequest } from './http-api.js';
import { AgentTlsServer } from './tls-server.js';
import type { IsolationState } from './isolation.js';
import { NOT_ISOLATED, fenced, isolationApplies, judgeIsolation } from './isolation.js';
import type { LocalSqlApi } from './local-sql.js';
import { socketLoginWorks, tcpQuery } from './logins.js';
import { Peers, isServerError, mysqlPeerProbe, resolveWithSystem } from './peers.js';
import { POD_STOPPING_WAIT_MS, PRE_STOP_FENCING_MS, PRE_STOP_WAIT_MS, sleep, waitForSwitchover } from './pre-stop.js';
import { Reprovisioner, dataPaths } from './reprovision.js';
import { STOPS_FILE, StopRecords, sameRun } from './stops.js';

export function log(message: string): void {
  process.stderr.write(`${new Date().toISOString()} recon8s agent: ${message}\n`);
}

/** What a test replaces: the clock, the peers, the login check, re-provisioning, the mounted Secret. */
export interface AgentDependencies {
  readonly now?: () => number;
  readonly log?: (message: string) => void;
  readonly peers?: Peers;
  readonly loginWorks?: LoginCheck;
  readonly reprovisioner?: Pick<Reprovisioner, 'look' | 'forgetPreviousData'>;
  readonly credentials?: () => ClusterCredentials;
  readonly stops?: StopRecords;
}

export class Agent {
  private readonly now: () => number;
  private readonly log: (message: string) => void;
  private readonly peers: Peers | undefined;
  private readonly loginWorks: LoginCheck;
  private readonly reprovisioner: Pick<Reprovisioner, 'look' | 'forgetPreviousData'>;
  /** The passwords as the mounted Secret says now (read at each use: a rotation changes them). */
  private readonly credentials: () => ClusterCredentials;
  /** This member's stops, and which could have acknowledged a commit alone (stops.ts). */
  private readonly stops: StopRecords;
  /**
   * The preStop hook's fencing of this run of mysqld, once asked (the kubelet stops mysqld after it; only
   * mysqld's container may restart, and the next run is another's to fence).
   */
  private preStop: { run?: number; settled: boolean; readonly done: Promise<Health> } | undefined;
  private isolation: IsolationState = NOT_ISOLATED;
  /** When the mysqld whose accounts were made sure of started. */
  private configuredFor: number | undefined;
  private stopping = false;
  /** SIGTERM came: the pod is going away (drain). */
  private signalled = false;
  /** The preStop hook has asked (since the agent was signalled, the drain waits for it). */
  private hookAsked = false;
  /** The last failure to record how mysqld's last run ended, said once. */
  private stopsFailure = '';
  private wake: (() => void) | undefined;
  private server: Server | undefined;
  private tlsServer: AgentTlsServer | undefined;

  constructor(
    private readonly config: AgentConfig,
    private readonly sql: LocalSqlApi,
    deps: AgentDependencies = {},
  ) {
    this.now = deps.now ?? Date.now;
    this.log = deps.log ?? log;
    this.credentials =
      deps.credentials ?? ((): ClusterCredentials => readCredentials(config.credentialsDir, config.exporterAccount));
    const replicationPassword = (): string => this.credentials().replication;
    this.stops =
      deps.stops ??
      new StopRecords(
        join(config.dataVolume, config.dataDirName, STOPS_FILE),
        { gtidExecuted: () => sql.gtidExecuted(), recoveredFromCrash: () => sql.recoveredFromCrash() },
        this.log,
      );
    const ca = (): string => readFileSync(config.caFile, 'utf8');
    this.peers =
      deps.peers ??
      (config.headlessService
        ? new Peers(
            config.headlessService,
            config.podAddresses,
            resolveWithSystem,
            mysqlPeerProbe({
              port: MYSQL_PORT,
              user: REPLICATION_USER,
              password: replicationPassword,
              ca,
              servername: config.memberTlsName,
            }),
            this.log,
          )
        : undefined);
    this.loginWorks =
      deps.loginWorks ??
      ((user, password) =>
        user === EXPORTER_USER
          ? socketLoginWorks(config.socket, user, password)
          : tcpQuery(config, config.localAddress, user, password, 'SELECT 1').then(
              () => true,
              () => false,
            ));
    this.reprovisioner =
      deps.reprovisioner ??
      new Reprovisioner({
        sql,
        paths: dataPaths(config.dataVolume, config.dataDirName, config.podAnnotations),
        primaryHost: config.primaryHost,
        clonePassword: (): string => this.credentials().clone,
        memberName: config.podName,
        askDonor: async () => {
          const row = await tcpQuery(
            config,
            config.primaryHost,
            REPLICATION_USER,
            replicationPassword(),
            "SELECT @@GLOBAL.read_only AS ro, REPLACE(@@GLOBAL.gtid_executed, CHAR(10), '') AS executed, @@GLOBAL.server_uuid AS uuid",
          );
          return {
            writable: Number(row?.ro) === 0,
            executed: String(row?.executed ?? ''),
            serverUuid: String(row?.uuid ?? ''),
          };
        },
        report: (reason, message) => this.report(MEMBER_REPORTS[reason], message),
        unsafeStops: () => this.stops.unsafe(),
        log: this.log,
      });
  }

  /** Tells the controller what happened, as "<Reason>: <message>": the kubelet keeps it in the pod status. */
  private async report(reason: string, message: string): Promise<void> {
    await writeFile(this.config.terminationLog, `${reason}: ${message}`).catch(() =>
      this.log('could not write the termination message'),
    );
  }

  /**
   * Makes this member read-only at once (fencing.ts; no replica could acknowledge a commit in flight),
   * unless `stillNeeded` says otherwise once no other fencing runs; a failure is logged, and the next
   * look tries again. The member's flags after.
   */
  private async fenceSelf(stillNeeded?: () => Promise<boolean>): ReturnType<LocalSqlApi['flags']> {
    try {
      await this.sql.fencingSession((f) =>
        fence(f, {
          spare: [ADMIN_USER, REPLICATION_USER, CLONE_USER],
          waitForCommitsSeconds: 0,
          ...(stillNeeded ? { stillNeeded } : {}),
        }),
      );
    } catch (e) {
      this.log(`could not make this member read-only yet (${messageOf(e)}); trying again`);
    }
    return this.sql.flags();
  }

  /** One look at the member; returns the delay until the next, or an exit code when the pod must restart. */
  async step(): Promise<{ delayMs: number } | { exit: number }> {
    let startedAt: number;
    try {
      startedAt = await this.sql.startedAt(this.now());
    } catch (e) {
      // An error the server sent is a fault of ours or of the member, and run() logs it; silence means
      // mysqld is starting (or restarting): look again soon.
      if (isServerError(e)) throw e;
      return { delayMs: 1000 };
    }
    let delayMs = 10_000;
    // Before anything else of this run: how the last one ended (a discard request is judged by it). A
    // record that cannot be kept (a full volume) stops no other safety step, only re-provisioning.
    let stopsKnown = true;
    try {
      await this.stops.observeRun(startedAt);
      this.stopsFailure = '';
    } catch (e) {
      stopsKnown = false;
      if (messageOf(e) !== this.stopsFailure)
        this.log(`could not record how mysqld's last run ended (${messageOf(e)}): no re-provisioning until it can`);
      this.stopsFailure = messageOf(e);
    }
    const stop = this.preStop;
    if (stop?.settled && (stop.run === undefined || !sameRun(stop.run, startedAt))) this.preStop = undefined;
    let flags = await this.sql.flags();
    if (!flags.readOnly && (this.configuredFor === undefined || Math.abs(startedAt - this.configuredFor) > 2000)) {
      try {
        const done = await ensureAccounts(this.sql, this.credentials(), this.loginWorks);
        if (done.updated.length > 0) this.log(`created or updated the accounts ${done.updated.join(', ')}`);
        if (done.revoked)
          this.log(
            `revoked ${done.revoked.join(', ')} from the ${REPLICATION_USER} account: cloning has an account of its own (${CLONE_USER})`,
          );
        for (const k of done.kept)
          this.log(
            `left account ${k.user} as it is: a rotation set it to the passwords of revision ${k.revision}, and this member reads revision ${k.reads} (the kubelet has not updated the mounted Secret yet): never an older password`,
          );
        this.configuredFor = startedAt;
      } catch (e) {
        this.log(`creating the accounts failed; retrying: ${messageOf(e)}`);
      }
    }
    if (flags.offline && !flags.superReadOnly) {
      // Only a fencing turns offline_mode on, and one that ends leaves the member read-only (or, given up,
      // turns it off): this one's process went away half-way, perhaps with the source side off. Finish it.
      this.log(
        'offline and writable: a fencing of this member did not end, or is under way; making it read-only unless it ends first',
      );
      // The fencing seen may have been under way, and have ended (or given up) by now.
      flags = await this.fenceSelf(async () => {
        const now = await this.sql.flags();
        return now.offline && !now.superReadOnly;
      });
      delayMs = 1000;
    }
    const guardsWrites = !flags.readOnly && flags.semiSyncSource;
    if (this.peers && isolationApplies(this.isolation, guardsWrites)) {
      // The primary looks for a partition every second (a look takes up to a few seconds more).
      delayMs = 1000;
      const lookedAt = this.now();
      const verdict = judgeIsolation(
        this.isolation,
        { startedAt: lookedAt, guardsWrites, peers: await this.peers.look() },
        this.config.selfFenceAfterMs,
      );
      this.isolation = verdict.state;
      if (verdict.action === 'fence') {
        if (verdict.first)
          this.log(
            `reached no other member for ${this.config.selfFenceAfterMs / 1000} s: making this member read-only (cut off, its writes could not be acknowledged anyway)`,
          );
        flags = await this.fenceSelf();
        this.isolation = fenced(flags.superReadOnly);
      }
    } else if (this.peers) {
      // Every member keeps the others' addresses: one that is promoted has them already when DNS is cut off.
      await this.peers.refresh();
    }
    if (flags.readOnly && !this.preStop && stopsKnown) {
      const outcome = await this.reprovisioner.look();
      if (outcome === 'restarting') return { exit: 0 };
      if (outcome === 'failed') return { exit: 1 };
      await this.reprovisioner.forgetPreviousData();
    }
    return { delayMs };
  }

  async health(kind: 'live' | 'ready'): Promise<Health> {
    if (kind === 'live') return this.sql.rows('SELECT 1').then(() => liveness(undefined), liveness);
    try {
      const flags = await this.sql.flags();
      return readiness(flags.readOnly, flags.readOnly ? await this.sql.channel() : undefined, flags.offline);
    } catch (e) {
      return { ok: false, message: `mysqld does not answer: ${messageOf(e)}` };
    }
  }

  /**
   * The mysql container's preStop hook (the kubelet stops mysqld once it answers): the member fenced
   * with lib/mysql/fencing.ts at once (no waiting for commits: the member is going away), every client
   * session ended, so that mysqld's graceful shutdown has no waiting commit to tell its client succeeded;
   * recorded (stops.ts) before and after. Tried again until PRE_STOP_FENCING_MS; a mysqld that is not
   * running has nothing to release. Asked once: the kubelet's retries share it.
   */
  prepareStop(): Promise<Health> {
    // One under way is shared (the kubelet's retries); one that ended is not: each hook fences anew (a
    // member made writable again since must be fenced again).
    if (this.preStop && !this.preStop.settled) return this.preStop.done;
    const entry: { run?: number; settled: boolean; done: Promise<Health> } = {
      settled: false,
      done: Promise.resolve({ ok: false, message: '' }),
    };
    this.preStop = entry;
    const noted = (e: unknown): void => this.log(`stopping: could not record the stop (${messageOf(e)})`);
    entry.done = (async (): Promise<Health> => {
      // Before any SQL: a mysqld that does not answer (hung, as when its liveness probe failed) is stopped
      // gracefully all the same, and its next start must not take a shutdown cut short for a crash.
      await this.stops.stopAsked().catch(noted);
      const deadline = this.now() + PRE_STOP_FENCING_MS;
      let primary: boolean | undefined;
      for (let attempt = 1; ; attempt++) {
        let startedAt: number | undefined;
        try {
          startedAt = await this.sql.startedAt(this.now());
          entry.run = startedAt;
          await this.stops.observeRun(startedAt).catch(noted);
          primary ??= !(await this.sql.flags()).readOnly;
          await this.stops.stopping(startedAt).catch(noted);
          // Read-only at once where it comes at once, as the controller fences: the slow path's offline_mode
          // would end the replicas' receivers too, and a primary whose pod is being deleted is switched over
          // from only by a replica that receives from it (it has about a second before SIGTERM). A commit
          // waiting for an acknowledgement (its replicas cut off) holds read-only up: one second, then the
          // slow path. mysqld stops next: the source side stays as it is unless commits are stranded.
          await this.sql.fencingSession((f) =>
            fence(f, {
              spare: [ADMIN_USER, REPLICATION_USER, CLONE_USER],
              waitForCommitsSeconds: 1,
              leaveSourceSide: true,
            }),
          );
          // Recorded at once, before any wait: a pod deleted with no grace period gives the hook 2 s
          // before SIGTERM, and a fencing done but not recorded would be judged unsafe at the next start.
          const fenced = { executed: await this.sql.gtidExecuted(), serverUuid: await this.sql.serverUuid() };
          await this.stops.stopping(startedAt, fenced).catch(noted);
          // The pod is going away (not only mysqld's container restarting): a primary waits for the
          // controller to switch over from it, while it answers.
          if (primary && (await this.podStopping())) await waitForSwitchover(this.sql, this.now, this.log);
          // Made writable again meanwhile (a controller that did not know the pod is stopping): fenced
          // again, and recorded again (a commit of its own after the first record counts as unsafe meanwhile).
          if (!(await this.sql.flags()).superReadOnly) throw new Error('it was made writable again');
          this.log('stopping: this member is read-only and its clients are gone; mysqld may shut down');
          return { ok: true, message: 'fenced' };
        } catch (e) {
          if (startedAt === undefined && !isServerError(e) && (await this.mysqldGone()))
            return { ok: true, message: 'mysqld is not running: nothing to fence' };
          if (this.now() >= deadline) {
            this.log(`stopping: could not fence this member (${messageOf(e)}); its stop is recorded as unsafe`);
            return { ok: false, message: `could not fence this member: ${messageOf(e)}` };
          }
          if (attempt === 1) this.log(`stopping: fencing this member failed (${messageOf(e)}); trying again`);
          await sleep(500);
        }
      }
    })().finally(() => (entry.settled = true));
    return entry.done;
  }

  /**
   * Whether the pod is going away: the kubelet signals this container at the moment it runs mysqld's
   * hook; a liveness restart of mysqld's container alone signals nothing (then there is no switchover
   * to wait for: the controller sees no pod stopping).
   */
  private async podStopping(): Promise<boolean> {
    for (let waited = 0; !this.signalled && waited < POD_STOPPING_WAIT_MS; waited += 100) await sleep(100);
    return this.signalled;
  }

  /** mysqld's socket refuses or is not there: no mysqld runs. */
  private async mysqldGone(): Promise<boolean> {
    return this.sql.rows('SELECT 1').then(
      () => false,
      (e: unknown) => ['ENOENT', 'ECONNREFUSED'].includes(String((e as { code?: unknown }).code)),
    );
  }

  /** What the agent's ports answer with (http-api.ts). */
  private endpoints(): AgentEndpoints {
    return {
      preStopHook: () => {
        this.hookAsked = true;
        return this.prepareStop();
      },
      unsafeStops: () =>
        this.sql
          .startedAt(this.now())
          .then((startedAt) => this.stops.observeRun(startedAt))
          .then(() => this.stops.unsafe()),
      credentialsRevision: () => this.credentials().revision,
      health: (kind) => this.health(kind),
      log: (message) => this.log(message),
    };
  }

  async listen(): Promise<number> {
    const handle =
      (port: AgentPortKind) =>
      (req: IncomingMessage, res: ServerResponse): void => {
        serveAgentRequest(this.endpoints(), port, req, res).catch((e: unknown) =>
          res.writeHead(500).end(`${messageOf(e)}\n`),
        );
      };
    const server = createServer(handle('http'));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.config.listen.port, this.config.listen.host, resolve);
    });
    const tls = this.config.tlsListen;
    if (tls) {
      this.tlsServer = new AgentTlsServer(
        { ...tls, ...(this.config.listen.host ? { host: this.config.listen.host } : {}) },
        handle('tls'),
        (m) => this.log(m),
      );
      await this.tlsServer.start();
    }
    const address = server.address();
    return typeof address === 'object' && address ? address.port : this.config.listen.port;
  }

  /** The TLS port, once it listens (it waits for the member's certificate). */
  tlsPort(): number | undefined {
    return this.tlsServer?.port();
  }

  /** Runs until stop() or until the pod must restart; resolves with the exit code. */
  async run(): Promise<number> {
    while (!this.stopping) {
      let next: { delayMs: number } | { exit: number };
      try {
        next = await this.step();
      } catch (e) {
        // mysqld went away in the middle of a look: the next one says what it is now.
        this.log(`a look at the member failed: ${messageOf(e)}`);
        next = { delayMs: 1000 };
      }
      if ('exit' in next) return next.exit;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, next.delayMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return 0;
  }

  /**
   * Told to stop (the pod is going away): the kubelet sends this container SIGTERM and runs mysqld's
   * preStop hook, which this agent answers, at the same moment. The agent fences its member at once,
   * without waiting for the hook: a pod deleted with no grace period gives the hook one second before
   * mysqld's SIGTERM, and the hook's own start (a process in the mysql container) takes part of it. Then
   * it serves on until the hook has been answered, or mysqld is gone, or PRE_STOP_WAIT_MS pass without a
   * hook (the agent alone was stopped: its member stays fenced, and the controller makes a primary
   * writable again).
   */
  async drain(): Promise<void> {
    this.signalled = true;
    const deadline = this.now() + PRE_STOP_WAIT_MS;
    await this.stops.signalled().catch((e: unknown) => this.log(`could not record the stop: ${messageOf(e)}`));
    const fencing = this.prepareStop();
    while (!this.hookAsked && this.now() < deadline && !(await this.mysqldGone())) await sleep(250);
    await fencing;
    await this.preStop?.done;
    await this.stop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.peers?.close();
    await this.tlsServer?.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
