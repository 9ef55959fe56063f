// The agent's HTTP port: the kubelet's probes, the mysql container's preStop hook (answered only from
// inside the pod), and what the controller asks of the member (the stops of its mysqld, the revision of
// the credentials it uses). Answers what the agent (agent.ts) says; decides nothing itself.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AGENT_HTTP_PATHS } from '../../constructs/mysql-member.js';
import type { Health } from './health.js';
import { messageOf } from './health.js';

/** What the HTTP port answers with. */
export interface AgentEndpoints {
  /** The preStop hook, asked from inside the pod: the member fenced (Agent.prepareStop). */
  preStopHook(): Promise<Health>;
  /** The stops of mysqld that could have acknowledged commits no replica had (stops.ts), the current run judged first. */
  unsafeStops(): Promise<unknown>;
  /** The revision of the passwords the agent uses now (a token, never a password); throws when unreadable. */
  credentialsRevision(): string;
  health(kind: 'live' | 'ready'): Promise<Health>;
  log(message: string): void;
}

/**
 * A connection from inside the member's pod: its loopback (the pod's containers share one network
 * namespace, and nothing outside it can open a connection from 127.0.0.0/8 or ::1 to it).
 */
export function fromInsideThePod(remoteAddress: string | undefined): boolean {
  if (remoteAddress === undefined) return false;
  const v4 = remoteAddress.startsWith('::ffff:') ? remoteAddress.slice('::ffff:'.length) : remoteAddress;
  return remoteAddress === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** Answers one request to the agent's HTTP port (AGENT_HTTP_PATHS) with what `agent` says. */
export async function serveAgentRequest(
  agent: AgentEndpoints,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.url === AGENT_HTTP_PATHS.preStop && req.method === 'GET') {
    // Fencing takes the primary's writes away: only the pod itself asks for it (its preStop hook runs
    // in the mysql container), never another pod that reaches the agent's port.
    const from = req.socket.remoteAddress;
    if (!fromInsideThePod(from)) {
      agent.log(
        `refused a request to fence this member from ${from ?? 'an unknown address'}: only the pod's own preStop hook asks for that`,
      );
      res
        .writeHead(403, { 'content-type': 'text/plain' })
        .end(
          `refused: ${AGENT_HTTP_PATHS.preStop} is answered only from inside the pod (over its loopback), not from ${from ?? 'an unknown address'}\n`,
        );
      return;
    }
    const h = await agent.preStopHook();
    res.writeHead(h.ok ? 200 : 500, { 'content-type': 'text/plain' }).end(`${h.message}\n`);
    return;
  }
  if (req.url === AGENT_HTTP_PATHS.stops && req.method === 'GET') {
    // The current run judged first: a start not looked at yet is judged now.
    const unsafe = await agent.unsafeStops();
    res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(unsafe)}\n`);
    return;
  }
  if (req.url === AGENT_HTTP_PATHS.credentials && req.method === 'GET') {
    // Which passwords the agent uses now (the rotation discards the old ones once every agent says
    // the new revision): a token, never a password.
    let revision: string;
    try {
      revision = agent.credentialsRevision();
    } catch (e) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end(`${messageOf(e)}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${revision}\n`);
    return;
  }
  const kind = req.url === AGENT_HTTP_PATHS.live ? 'live' : req.url === AGENT_HTTP_PATHS.ready ? 'ready' : undefined;
  if (!kind || req.method !== 'GET') {
    res
      .writeHead(404, { 'content-type': 'text/plain' })
      .end(`not found; try ${Object.values(AGENT_HTTP_PATHS).join(' or ')}\n`);
    return;
  }
  const h = await agent.health(kind);
  res.writeHead(h.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(`${h.message}\n`);
}
