// Run inside the MySQL sandbox's network (MySQLSandbox.inNetwork), where the members answer over TCP:
// the controller's account SQL as the cluster manager runs it (lib/mysql/account-sql.ts), and an App's
// own session. Input on stdin (passwords included: never on a command line), JSON out.
import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';
import type { AccountRequest } from '../../../lib/mysql/accounts.js';
import { planAccounts } from '../../../lib/mysql/accounts.js';
import { AccountSession } from '../../../lib/mysql/account-sql.js';
import { sandboxMemberName } from './sandbox-member-name.js';

type Input =
  | { mode: 'converge'; host: string; rootPassword: string; ca: string; requests: AccountRequest[] }
  | {
      mode: 'as';
      host: string;
      user: string;
      password: string;
      ca: string;
      statements: string[];
      /** Log in without TLS (what a client that skips it would send). */
      plain?: boolean;
    };

async function main(input: Input): Promise<unknown> {
  if (input.mode === 'converge') {
    const session = await AccountSession.open({
      host: input.host,
      servername: sandboxMemberName(input.host),
      port: 3306,
      user: 'root',
      password: input.rootPassword,
      ca: input.ca,
    });
    try {
      if (!(await session.writable())) return { error: 'not writable' };
      const plan = planAccounts(input.requests, await session.observe(input.requests.map((r) => r.user)));
      for (const st of plan.statements) await session.run(st);
      return { statements: plan.statements.map((st) => st.type) };
    } finally {
      await session.close();
    }
  }
  let c;
  try {
    c = await createConnection({
      host: input.host,
      port: 3306,
      user: input.user,
      password: input.password,
      // As an App verifies the server: with the CA its binding Secret carries.
      ...(input.plain ? {} : { ssl: { ca: input.ca, rejectUnauthorized: true } }),
      connectTimeout: 3000,
    });
    for (const st of input.statements) await c.query(st);
    return { result: 'ok' };
  } catch (e) {
    return { result: (e as { code?: string }).code ?? String(e) };
  } finally {
    c?.destroy();
  }
}

main(JSON.parse(readFileSync(0, 'utf8')) as Input).then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (e: unknown) => {
    process.stdout.write(JSON.stringify({ error: String(e) }));
    process.exitCode = 1;
  },
);
