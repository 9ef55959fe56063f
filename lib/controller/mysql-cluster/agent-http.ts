// What the controller asks of a member's agent over HTTP (lib/agent/agent.ts serves it): which
// credentials revision it reads (a rotation), and the stops of its mysqld that could have acknowledged
// a commit alone (rejoin.ts, condition 11). Never at rest: only while a rotation or a discard is under way.
import { request } from 'node:http';
import { MYSQL_AGENT_HTTP_PATHS, MYSQL_AGENT_PORT } from '../../../constructs/index.js';
import type { UnsafeStop } from '../../mysql/rejoin.js';

/** An agent that does not answer within this is asked again at the next look. */
const AGENT_DEADLINE_MS = 2_000;
/** The answers are small: a token, or a few stops of a few hundred bytes each. */
const MAX_BODY = 64 * 1024;

/** GET `path` of the agent at `ip`: the body of a 200, or undefined (another status, no answer, too long). */
function agentGet(ip: string, path: string): Promise<string | undefined> {
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return new Promise((resolve) => {
    const req = request(`http://${host}:${MYSQL_AGENT_PORT}${path}`, { timeout: AGENT_DEADLINE_MS }, (res) => {
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
export async function fetchAgentRevision(ip: string): Promise<string | undefined> {
  return (await agentGet(ip, MYSQL_AGENT_HTTP_PATHS.credentials))?.trim() || undefined;
}

function isUnsafeStop(v: unknown): v is UnsafeStop {
  const s = v as Partial<UnsafeStop> | null;
  return typeof s?.found === 'string' && typeof s.why === 'string' && typeof s.executed === 'string';
}

/** The unsafe stops the agent at `ip` reports, or undefined when it does not answer (or not as expected). */
export async function fetchAgentUnsafeStops(ip: string): Promise<readonly UnsafeStop[] | undefined> {
  const body = await agentGet(ip, MYSQL_AGENT_HTTP_PATHS.stops);
  if (body === undefined) return undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    return Array.isArray(parsed) && parsed.every(isUnsafeStop) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
