// What a member's agent reports of the stops of its mysqld (GET /unsafe-stops, lib/agent/stops.ts):
// asked only before the controller requests a discard (rejoin.ts, condition 11), never at rest.
import { request } from 'node:http';
import { MYSQL_AGENT_HTTP_PATHS, MYSQL_AGENT_PORT } from '../../../constructs/index.js';
import type { UnsafeStop } from '../../mysql/rejoin.js';

/** An agent that does not answer within this is asked again at the next look. */
const AGENT_DEADLINE_MS = 2_000;
/** The report is small: a few stops of a few hundred bytes each. */
const MAX_BODY = 64 * 1024;

function isUnsafeStop(v: unknown): v is UnsafeStop {
  const s = v as Partial<UnsafeStop> | null;
  return typeof s?.found === 'string' && typeof s.why === 'string' && typeof s.executed === 'string';
}

/** The unsafe stops the agent at `ip` reports, or undefined when it does not answer (or not as expected). */
export function fetchAgentUnsafeStops(ip: string): Promise<readonly UnsafeStop[] | undefined> {
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return new Promise((resolve) => {
    const req = request(
      `http://${host}:${MYSQL_AGENT_PORT}${MYSQL_AGENT_HTTP_PATHS.stops}`,
      { timeout: AGENT_DEADLINE_MS },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
          if (body.length > MAX_BODY) req.destroy();
        });
        res.on('end', () => {
          if (res.statusCode !== 200) return resolve(undefined);
          try {
            const parsed = JSON.parse(body) as unknown;
            resolve(Array.isArray(parsed) && parsed.every(isUnsafeStop) ? parsed : undefined);
          } catch {
            resolve(undefined);
          }
        });
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}
