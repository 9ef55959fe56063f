// What the controller asks of a member's agent (lib/agent/agent.ts serves it): which credentials
// revision it reads (a rotation), and the stops of its mysqld that could have acknowledged a commit
// alone (rejoin.ts, condition 11). Never at rest: only while a rotation or a discard is under way.
// Over the agent's TLS port, verified as the controller's SQL sessions are: the certificate must be
// signed by the cluster's CA and name the member. What it answers decides a discard of transactions
// and the end of a rotation; an answer from anyone else on the pod network is no answer.
import { checkServerIdentity } from 'node:tls';
import { request } from 'node:https';
import { MYSQL_AGENT_HTTP_PATHS, MYSQL_AGENT_TLS_PORT } from '../../../constructs/index.js';
import type { UnsafeStop } from '../../mysql/rejoin.js';

/** A member's agent: where it answers, the name its certificate must hold, and the cluster's CA (PEM). */
export interface AgentTarget {
  readonly ip: string;
  readonly servername: string;
  readonly ca: string;
  /** @default MYSQL_AGENT_TLS_PORT */
  readonly port?: number;
}

/** An agent that does not answer within this is asked again at the next look. */
const AGENT_DEADLINE_MS = 2_000;
/** The answers are small: a token, or a few stops of a few hundred bytes each. */
const MAX_BODY = 64 * 1024;

/**
 * GET `path` of the agent `to`: the body of a 200, or undefined (another status, no answer, too long, a
 * certificate that is not the member's).
 */
function agentGet(to: AgentTarget, path: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const options = {
      host: to.ip,
      port: to.port ?? MYSQL_AGENT_TLS_PORT,
      path,
      method: 'GET',
      timeout: AGENT_DEADLINE_MS,
      ca: to.ca,
      servername: to.servername,
      rejectUnauthorized: true,
      // The name, not the address dialled: the certificate names the member.
      checkServerIdentity: (_host: string, cert: Parameters<typeof checkServerIdentity>[1]) =>
        checkServerIdentity(to.servername, cert),
      agent: false as const,
    };
    const req = request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        if (body.length > MAX_BODY) req.destroy();
      });
      res.on('end', () => resolve(res.statusCode === 200 ? body : undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** The revision a member's agent reads (its /credentials-revision), or undefined when it does not say. */
export async function fetchAgentRevision(to: AgentTarget): Promise<string | undefined> {
  return (await agentGet(to, MYSQL_AGENT_HTTP_PATHS.credentials))?.trim() || undefined;
}

function isUnsafeStop(v: unknown): v is UnsafeStop {
  const s = v as Partial<UnsafeStop> | null;
  return typeof s?.found === 'string' && typeof s.why === 'string' && typeof s.executed === 'string';
}

/** The unsafe stops the agent `to` reports, or undefined when it does not answer (or not as expected). */
export async function fetchAgentUnsafeStops(to: AgentTarget): Promise<readonly UnsafeStop[] | undefined> {
  const body = await agentGet(to, MYSQL_AGENT_HTTP_PATHS.stops);
  if (body === undefined) return undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    return Array.isArray(parsed) && parsed.every(isUnsafeStop) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
