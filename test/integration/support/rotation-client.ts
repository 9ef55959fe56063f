// Run inside the MySQL sandbox's network (MySQLSandbox.inNetwork): an App's password rotation against the
// real primary, while clients log in and query without a pause. The steps are the ones the controllers
// take, chosen the way they choose them: the cluster's by planAccounts over what the primary has (the SQL
// app-accounts.ts runs, through AccountSession), the App's by decideRotation over what the cluster reports
// of the account (as database-binding.ts reads the cluster's status.accounts). What lives in Kubernetes
// is modelled: the Secret is an object here, and a "pod" is a client that took the Secret's password when
// it started and keeps it until the Deployment replaces it. Each pass starts from observed state only
// (a fresh session, no memory of the previous pass): an interruption between any two passes changes
// nothing. Input on stdin (passwords included: never on a command line), figures out (never a password).
import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';
import type { AccountRequest } from '../../../lib/mysql/accounts.js';
import { INITIAL_PASSWORD_REVISION, planAccounts } from '../../../lib/mysql/accounts.js';
import { AccountSession } from '../../../lib/mysql/account-sql.js';
import type { AccountHolds, RotationFacts, RotationPhase } from '../../../lib/mysql/password-rotation.js';
import { decideRotation, rotationActor, rotationPhase } from '../../../lib/mysql/password-rotation.js';
import { generatePassword } from '../../../lib/reconcile/credential-keys.js';
import { sandboxMemberName } from './sandbox-member-name.js';

interface Input {
  readonly primary: string;
  /** Members the App reads from (DB_READ_HOST): replicas. */
  readonly replicas: readonly string[];
  readonly rootPassword: string;
  readonly ca: string;
  readonly app: string;
  readonly user: string;
  readonly database: string;
  readonly pods: number;
  /** How long the Deployment takes per pod it replaces (the new one started, then the old one stopped). */
  readonly podReplaceMs: number;
  readonly intervalMs: number;
  readonly tokens: readonly string[];
}

/** The App's Secret and the App resource, as the App's controller sees them. */
interface Kube {
  password: string;
  next?: string;
  secretRevision?: string;
  staged?: string;
  requested?: string;
  completed?: string;
  rollRevision?: string;
}

interface Pod {
  readonly revision?: string;
  readonly password: string;
  stopped: boolean;
}

interface Tally {
  logins: number;
  queries: number;
  failedLogins: number;
  failedQueries: number;
  errors: Record<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(input: Input): Promise<unknown> {
  const kube: Kube = { password: generatePassword() };
  // The Deployment's pods: each keeps the password it started with until it is replaced.
  const pods: Pod[] = [];
  const live = () => pods.filter((p) => !p.stopped);
  const rolled = () => kube.rollRevision !== undefined && live().every((p) => p.revision === kube.rollRevision);
  const request = (): AccountRequest => ({
    app: input.app,
    user: input.user,
    database: input.database,
    access: 'readWrite',
    password: kube.password,
    ...(kube.next !== undefined ? { nextPassword: kube.next } : {}),
    rotation: rotationFacts(),
  });
  const rotationFacts = (): Omit<RotationFacts, 'account'> => ({
    ...(kube.requested ? { requested: kube.requested } : {}),
    ...(kube.completed ? { completed: kube.completed } : {}),
    ...(kube.secretRevision ? { secretRevision: kube.secretRevision } : {}),
    ...(kube.next !== undefined && kube.staged ? { staged: kube.staged } : {}),
    ...(kube.rollRevision ? { rollRevision: kube.rollRevision } : {}),
    ...(rolled() ? { rolledRevision: kube.rollRevision } : {}),
  });
  const admin = () =>
    AccountSession.open({
      host: input.primary,
      servername: sandboxMemberName(input.primary),
      port: 3306,
      user: 'root',
      password: input.rootPassword,
      ca: input.ca,
    });
  /** One pass of the cluster's account loop: plan from what the primary has, run it; what it reports. */
  const clusterPass = async () => {
    const session = await admin();
    try {
      const plan = planAccounts([request()], await session.observe([input.user]));
      for (const s of plan.statements) await session.run(s);
      return { statements: plan.statements.map((s) => s.type), reported: plan.outcomes[0]?.password };
    } finally {
      await session.close();
    }
  };

  // The account, as the cluster makes it for a new binding, and on the replicas by replication.
  await clusterPass();
  // A replica that has received the account but not applied it yet refuses the login: counted, so that
  // the test can tell these refusals from any other.
  let refusedBeforeTheAccountReplicated = 0;
  for (const host of input.replicas)
    for (let i = 0; (await tryLogin(host, kube.password, false)) !== 'ok'; i++) {
      refusedBeforeTheAccountReplicated++;
      if (i > 100) throw new Error(`the account never reached ${host}`);
      await sleep(100);
    }

  // The App's clients: connect afresh and query, every intervalMs, each on its own.
  const tally: Tally = { logins: 0, queries: 0, failedLogins: 0, failedQueries: 0, errors: {} };
  let running = true;
  const loops: Promise<void>[] = [];
  const client = (host: () => string, password: () => string | undefined) =>
    loops.push(
      (async () => {
        while (running) {
          const pw = password();
          if (pw === undefined) return;
          const started = Date.now();
          let c;
          try {
            tally.logins++;
            c = await createConnection({
              host: host(),
              port: 3306,
              user: input.user,
              password: pw,
              database: input.database,
              ssl: { ca: input.ca, rejectUnauthorized: true },
              connectTimeout: 10_000,
            });
          } catch (e) {
            tally.failedLogins++;
            const code = (e as { code?: string }).code ?? 'unknown';
            tally.errors[code] = (tally.errors[code] ?? 0) + 1;
          }
          if (c) {
            try {
              tally.queries++;
              await c.query('SELECT COUNT(*) FROM rotation_probe');
            } catch (e) {
              tally.failedQueries++;
              const code = (e as { code?: string }).code ?? 'unknown';
              tally.errors[code] = (tally.errors[code] ?? 0) + 1;
            } finally {
              c.destroy();
            }
          }
          await sleep(Math.max(0, input.intervalMs - (Date.now() - started)));
        }
      })(),
    );
  const hosts = [input.primary, ...input.replicas];
  let turn = 0;
  const anyMember = () => hosts[turn++ % hosts.length] ?? input.primary;
  // A process that reads the Secret each time it connects (as a pod that restarts, or reads the mounted file).
  client(anyMember, () => kube.password);
  const startPod = () => {
    const pod: Pod = {
      ...(kube.rollRevision ? { revision: kube.rollRevision } : {}),
      password: kube.password,
      stopped: false,
    };
    pods.push(pod);
    client(anyMember, () => (pod.stopped ? undefined : pod.password));
  };
  for (let i = 0; i < input.pods; i++) startPod();

  /** The Deployment's rolling update: one more pod of the new template, then one old one stopped. */
  const replaceOne = async () => {
    const old = live().find((p) => p.revision !== kube.rollRevision);
    if (!old) return;
    startPod();
    await sleep(input.podReplaceMs);
    old.stopped = true;
  };

  await sleep(500);
  const rotations = [];
  for (const token of input.tokens) {
    const before = kube.password;
    kube.requested = token;
    const phases: Partial<Record<RotationPhase, number>> = {};
    const steps: string[] = [];
    const started = performance.now();
    for (let pass = 0; pass < 200; pass++) {
      const t0 = performance.now();
      const cluster = await clusterPass();
      steps.push(...cluster.statements);
      // The cluster's SQL steps, timed as their own phases.
      const sqlPhase: RotationPhase | undefined = cluster.statements.includes('discardOldPassword')
        ? 'Discarding'
        : cluster.statements.includes('setPassword')
          ? 'Retaining'
          : undefined;
      const t1 = performance.now();
      if (sqlPhase) phases[sqlPhase] = (phases[sqlPhase] ?? 0) + (t1 - t0);
      // The App's controller: what the cluster reported of the account, against the Secret it sees now.
      const reported = cluster.reported;
      const holds: AccountHolds = !reported
        ? 'unknown'
        : kube.next !== undefined && reported.revision === kube.staged
          ? 'next'
          : reported.revision === (kube.secretRevision ?? INITIAL_PASSWORD_REVISION)
            ? 'current'
            : 'other';
      const step = decideRotation({ ...rotationFacts(), account: { holds, retains: reported?.retains ?? false } });
      const phase = rotationPhase(step);
      if (step.kind === 'idle') break;
      if (rotationActor(step) === 'app' || step.kind === 'awaitPods') steps.push(step.kind);
      switch (step.kind) {
        case 'stage':
          kube.next = generatePassword();
          kube.staged = step.token;
          break;
        case 'switch':
          kube.password = kube.next ?? kube.password;
          delete kube.next;
          delete kube.staged;
          kube.secretRevision = step.token;
          break;
        case 'roll':
          kube.rollRevision = step.token;
          break;
        case 'awaitPods':
          await replaceOne();
          break;
        case 'complete':
          kube.completed = step.token;
          break;
        default:
          break;
      }
      if (phase) phases[phase] = (phases[phase] ?? 0) + (performance.now() - (sqlPhase ? t1 : t0));
    }
    const ms = performance.now() - started;
    // The old password: refused everywhere once the rotation is complete; the new one works.
    const refused: Record<string, string> = {};
    for (const host of hosts) refused[host] = await tryLogin(host, before);
    rotations.push({
      token,
      completed: kube.completed === token,
      ms: Math.round(ms),
      phasesMs: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Math.round(v)])),
      steps,
      oldPasswordOnEachMember: refused,
      newPasswordOnPrimary: await tryLogin(input.primary, kube.password),
    });
  }
  await sleep(500);
  running = false;
  await Promise.all(loops);
  return { tally, rotations, pods: pods.length, refusedBeforeTheAccountReplicated };

  /** 'ok' or the error code; `settle`: a replica that lets it in may not have applied a change yet, look again. */
  async function tryLogin(host: string, password: string, settle = true): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        const c = await createConnection({
          host,
          port: 3306,
          user: input.user,
          password,
          ssl: { ca: input.ca, rejectUnauthorized: true },
          connectTimeout: 10_000,
        });
        c.destroy();
        // A replica may not have applied the DISCARD yet: look again a moment later.
        if (settle && host !== input.primary && attempt < 50) {
          await sleep(100);
          continue;
        }
        return 'ok';
      } catch (e) {
        return (e as { code?: string }).code ?? String(e);
      }
    }
  }
}

main(JSON.parse(readFileSync(0, 'utf8')) as Input).then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (e: unknown) => {
    process.stdout.write(JSON.stringify({ error: String(e) }));
    process.exitCode = 1;
  },
);
