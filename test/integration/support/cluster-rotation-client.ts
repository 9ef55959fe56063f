// Run inside the MySQL sandbox's network (MySQLSandbox.inNetwork): a rotation of the cluster's own
// accounts against the real members and their real agents, by the controller's own passes
// (rotateClusterCredentials, lib/controller/mysql-cluster/credential-rotation-pass.ts) over its own SQL
// (ClusterAccountSession), while clients keep using the accounts. What lives in Kubernetes is modelled:
// the credentials Secret is an object here (patched compare-and-swap); the controller's cache of it
// catches up `cacheLagMs` after each write; the kubelet rewrites each member's mounted copy (which its
// agent reads) `kubeletLagMs[i]` after it. Each pass starts from observed state only. Input on stdin
// (passwords included: never on a command line), figures out (never a password).
import { readFileSync } from 'node:fs';
import type { V1Secret } from '@kubernetes/client-node';
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { createConnection } from 'mysql2/promise';
import type { ClusterAccount } from '../../../lib/mysql/credential-rotation.js';
import { ClusterAccountSession } from '../../../lib/mysql/cluster-account-sql.js';
import type {
  RotationEnvironment,
  SecretPatch,
} from '../../../lib/controller/mysql-cluster/credential-rotation-pass.js';
import {
  rotateClusterCredentials,
  secretState,
} from '../../../lib/controller/mysql-cluster/credential-rotation-pass.js';
import { fetchAgentRevision } from '../../../lib/controller/mysql-cluster/agent-http.js';
import { writeSecretVolume } from './mysql-sandbox.js';
import { sandboxMemberName } from './sandbox-member-name.js';

interface Input {
  readonly members: readonly { readonly name: string; readonly ip: string; readonly credentialsDir: string }[];
  readonly primary: string;
  readonly ca: string;
  /** The credentials Secret's data, as the members' copies have it now. */
  readonly secret: Readonly<Record<string, string>>;
  readonly token: string;
  readonly accounts: readonly ClusterAccount[];
  /** The token of the rotation the status says completed before (status.credentialRotation.completed). */
  readonly completed?: string;
  readonly cacheLagMs: number;
  readonly kubeletLagMs: readonly number[];
  readonly passMs: number;
  /** A writer on the primary (a row every `intervalMs`) and a watch of every replica's receiver. */
  readonly writes?: { readonly intervalMs: number; readonly table: string };
  /**
   * Clients that log in afresh every `intervalMs`: the controller (as admin and root, with the Secret its
   * cache has), and a backup job that took the backup account's password when it started and logs in
   * as recon8s-backup with it for `jobMs`, and
   * on until a pass has discarded some account's old passwords (a minute more at most): so that a pass
   * sees the other users moved while the job still runs, however slow the machine makes the passes and
   * the kubelets' copies (a fixed end raced the last agent's read on a loaded machine).
   */
  readonly logins?: { readonly intervalMs: number; readonly jobMs: number };
}

interface Tally {
  attempts: number;
  failed: number;
  errors: Record<string, number>;
}
const tally = (): Tally => ({ attempts: 0, failed: 0, errors: {} });
const fail = (t: Tally, e: unknown) => {
  t.failed++;
  const code = (e as { code?: string }).code ?? String(e).slice(0, 80);
  t.errors[code] = (t.errors[code] ?? 0) + 1;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const b64 = (v: string) => Buffer.from(v).toString('base64');
const decoded = (s: V1Secret): Record<string, string> =>
  Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

async function main(input: Input): Promise<unknown> {
  const started = performance.now();
  const at = () => Math.round(performance.now() - started);
  let secret: V1Secret = {
    metadata: {
      name: 'shop-credentials',
      namespace: 'sandbox',
      resourceVersion: '1',
      labels: { 'recon8s.dev/generated-for': 'shop' },
    },
    data: Object.fromEntries(Object.entries(input.secret).map(([k, v]) => [k, b64(v)])),
  };
  let cache = structuredClone(secret);
  const timers: NodeJS.Timeout[] = [];
  /** What a write does beyond the API server: the informer's cache, then each kubelet, in their own time. */
  const propagate = () => {
    const now = structuredClone(secret);
    timers.push(setTimeout(() => (cache = now), input.cacheLagMs));
    input.members.forEach((m, i) =>
      timers.push(setTimeout(() => writeSecretVolume(m.credentialsDir, decoded(now)), input.kubeletLagMs[i] ?? 0)),
    );
  };
  const patch = (read: V1Secret, p: SecretPatch): V1Secret | undefined => {
    if (read.metadata?.resourceVersion !== secret.metadata?.resourceVersion) return undefined;
    const merge = (base: Record<string, string> | undefined, change: Record<string, string | null> | undefined) =>
      Object.fromEntries(Object.entries({ ...base, ...change }).filter((e): e is [string, string] => e[1] !== null));
    secret = {
      ...secret,
      metadata: {
        ...secret.metadata,
        annotations: merge(secret.metadata?.annotations, p.metadata?.annotations),
        resourceVersion: String(Number(secret.metadata?.resourceVersion) + 1),
      },
      data: merge(secret.data, p.data),
    };
    propagate();
    return structuredClone(secret);
  };
  const ipOf = (name: string) => input.members.find((m) => m.name === name)?.ip ?? '';
  const tls = { ca: input.ca, rejectUnauthorized: true };
  const connect = (host: string, user: string, password: string) =>
    createConnection({ host, port: 3306, user, password, ssl: tls, connectTimeout: 10_000 });

  let running = true;
  const loops: Promise<void>[] = [];
  const every = (ms: number, fn: () => Promise<void>) =>
    loops.push(
      (async () => {
        while (running) {
          const t0 = Date.now();
          await fn();
          await sleep(Math.max(0, ms - (Date.now() - t0)));
        }
      })(),
    );
  const figures: Record<string, unknown> = {};

  // Writes on the primary, and how long each replica's receiver was not connected.
  const writer = tally();
  let written = 0;
  let slowestWriteMs = 0;
  const receivers: Record<string, { samples: number; off: number; longestOffMs: number; offSince?: number }> = {};
  const sessions: Connection[] = [];
  if (input.writes) {
    const w = input.writes;
    const root = () => decoded(cache)['root-password'] ?? '';
    const primary = await connect(ipOf(input.primary), 'root', root());
    sessions.push(primary);
    await primary.query(`CREATE TABLE IF NOT EXISTS ${w.table} (id INT PRIMARY KEY)`);
    every(w.intervalMs, async () => {
      writer.attempts++;
      const t0 = performance.now();
      try {
        await primary.query(`INSERT INTO ${w.table} VALUES (?)`, [written + 1]);
        written++;
        slowestWriteMs = Math.max(slowestWriteMs, performance.now() - t0);
      } catch (e) {
        fail(writer, e);
      }
    });
    for (const m of input.members.filter((x) => x.name !== input.primary)) {
      const c = await connect(m.ip, 'root', root());
      sessions.push(c);
      const r = (receivers[m.name] = { samples: 0, off: 0, longestOffMs: 0 } as (typeof receivers)[string]);
      every(20, async () => {
        const [[row]] = await c.query<RowDataPacket[]>(
          "SELECT SERVICE_STATE AS s FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''",
        );
        r.samples++;
        if (row?.s === 'ON') {
          if (r.offSince !== undefined) r.longestOffMs = Math.max(r.longestOffMs, performance.now() - r.offSince);
          delete r.offSince;
        } else {
          r.off++;
          r.offSince ??= performance.now();
        }
      });
    }
  }

  // The controller's logins (the Secret its cache has), a job's (the backup account's password of its start), the agents' probes.
  const controller = { admin: tally(), root: tally() };
  const job = tally();
  const probes = tally();
  let turn = 0;
  /** A pass has discarded an account's old passwords: the job may end (see Input.logins). */
  let discarded = false;
  /** When the job ended (performance.now()); until then it runs, with the backup password of its start (the rotation sees its pod run). */
  let jobEnded: number | undefined;
  let jobRunning = () => false;
  /**
   * A login of the job is under way: its pod still runs (a job does not end in the middle of a login;
   * without this, a login begun just before the job "ended" reached mysqld after the rotation, seeing
   * no job, discarded the backup account's old password, and was refused).
   */
  let jobLoggingIn = false;
  if (input.logins) {
    const l = input.logins;
    const jobPassword = decoded(secret)['backup-password'] ?? '';
    const jobStarted = Date.now();
    jobRunning = () => {
      if (jobEnded !== undefined) return false;
      const ranMs = Date.now() - jobStarted;
      if (ranMs < l.jobMs || (!discarded && ranMs < l.jobMs + 60_000)) return true;
      jobEnded = performance.now();
      return false;
    };
    const login = async (t: Tally, user: string, password: string, host: string) => {
      t.attempts++;
      try {
        const c = await connect(host, user, password);
        await c.query('SELECT 1');
        c.destroy();
      } catch (e) {
        fail(t, e);
      }
    };
    every(l.intervalMs, async () => {
      const host = input.members[turn++ % input.members.length]?.ip ?? '';
      const s = decoded(cache);
      await Promise.all([
        login(controller.admin, 'recon8s-admin', s['admin-password'] ?? '', host),
        login(controller.root, 'root', s['root-password'] ?? '', host),
      ]);
    });
    every(l.intervalMs, async () => {
      if (!jobRunning()) return;
      jobLoggingIn = true;
      try {
        await login(job, 'recon8s-backup', jobPassword, ipOf(input.primary));
      } finally {
        jobLoggingIn = false;
      }
    });
    every(100, async () => {
      await Promise.all(
        input.members.map(async (m) => {
          probes.attempts++;
          const ok = await new Promise<boolean>((resolve) => {
            fetch(`http://${m.ip}:9080/readyz`, { signal: AbortSignal.timeout(5000) }).then(
              (r) => resolve(r.ok),
              () => resolve(false),
            );
          });
          if (!ok) fail(probes, new Error(`${m.name} not ready`));
        }),
      );
    });
  }

  await sleep(500);
  const before = decoded(secret);
  const rotationStarted = performance.now();
  const env: RotationEnvironment = {
    readSecret: () => Promise.resolve(structuredClone(cache)),
    patchSecret: (read, p) => Promise.resolve(patch(read, p)),
    primary: { name: input.primary, ip: ipOf(input.primary) },
    members: input.members.map((m) => ({ name: m.name, ip: m.ip })),
    bootstrapping: [],
    get jobs() {
      return jobRunning() || jobLoggingIn ? ['shop-backup-1'] : [];
    },
    agentRevision: fetchAgentRevision,
    open: (ip, password) =>
      ClusterAccountSession.open({
        host: ip,
        servername: sandboxMemberName(ip),
        port: 3306,
        user: 'root',
        password,
        ca: input.ca,
      }),
    controllerBusy: () => false,
    checkLeading: () => undefined,
  };
  const steps: string[] = [];
  const phases: { phase: string; atMs: number }[] = [];
  /** What the status said, each time it said something new. */
  const messages: { message: string; atMs: number }[] = [];
  let completed = input.completed;
  let passes = 0;
  for (; passes < 600 && completed !== input.token; passes++) {
    const o = await rotateClusterCredentials(
      {
        requested: { token: input.token, accounts: input.accounts },
        ...(completed ? { completed } : {}),
        secretWritable: () => true,
      },
      env,
    );
    for (const e of o.events) steps.push(e.reason);
    if (o.events.some((e) => e.reason === 'ClusterAccountOldPasswordDiscarded')) discarded = true;
    completed = o.status?.completed;
    const phase = o.status?.phase ?? (completed === input.token ? 'Completed' : undefined);
    const atMs = Math.round(performance.now() - rotationStarted);
    if (phase && phases.at(-1)?.phase !== phase) phases.push({ phase, atMs });
    for (const e of o.events) messages.push({ message: e.message, atMs });
    const said = o.status?.message;
    if (said && messages.at(-1)?.message !== said) messages.push({ message: said, atMs });
    if (o.events.some((e) => e.type === 'Warning')) figures.warnings = o.events.map((e) => e.message);
    if (completed !== input.token) await sleep(input.passMs);
  }
  const rotationMs = Math.round(performance.now() - rotationStarted);
  if (jobEnded !== undefined) figures.jobEndedAtMs = Math.round(jobEnded - rotationStarted);
  await sleep(500);
  running = false;
  await Promise.all(loops);
  for (const t of timers) clearTimeout(t);
  // The kubelet's last update, now: the members' copies are the Secret's.
  for (const m of input.members) writeSecretVolume(m.credentialsDir, decoded(secret));
  for (const c of sessions) c.destroy();

  const after = decoded(secret);
  /** 'ok' or the error code; a replica that lets it in may not have applied the discard yet: look again. */
  const tryLogin = async (host: string, user: string, password: string, settle: boolean): Promise<string> => {
    for (let attempt = 0; ; attempt++) {
      try {
        const c = await connect(host, user, password);
        c.destroy();
        if (settle && attempt < 50) {
          await sleep(100);
          continue;
        }
        return 'ok';
      } catch (e) {
        return (e as { code?: string }).code ?? String(e);
      }
    }
  };
  const users: Record<ClusterAccount, [string, string]> = {
    root: ['root', 'root-password'],
    replication: ['replication', 'replication-password'],
    admin: ['recon8s-admin', 'admin-password'],
    clone: ['recon8s-clone', 'clone-password'],
    backup: ['recon8s-backup', 'backup-password'],
  };
  const oldPasswords: Record<string, string> = {};
  const newPasswords: Record<string, string> = {};
  for (const a of input.accounts) {
    const [user, key] = users[a];
    for (const m of input.members) {
      oldPasswords[`${a}@${m.name}`] = await tryLogin(m.ip, user, before[key] ?? '', m.name !== input.primary);
      newPasswords[`${a}@${m.name}`] = await tryLogin(m.ip, user, after[key] ?? '', false);
    }
  }
  const state = secretState(secret);
  return {
    completed: completed === input.token,
    passes,
    rotationMs,
    phases,
    messages,
    steps,
    oldPasswords,
    newPasswords,
    secret: { revision: state.revision, staged: state.staged ?? null, switched: state.switched ?? null },
    writes: input.writes ? { ...writer, written, slowestWriteMs: Math.round(slowestWriteMs) } : undefined,
    receivers: Object.fromEntries(
      Object.entries(receivers).map(([k, r]) => [
        k,
        {
          samples: r.samples,
          off: r.off,
          longestOffMs: Math.round(r.longestOffMs),
          offAtEnd: r.offSince !== undefined,
        },
      ]),
    ),
    logins: input.logins ? { controller, job, probes } : undefined,
    ...figures,
    tookMs: at(),
  };
}

main(JSON.parse(readFileSync(0, 'utf8')) as Input).then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (e: unknown) => {
    process.stdout.write(JSON.stringify({ error: String(e), stack: (e as Error).stack }));
    process.exitCode = 1;
  },
);
