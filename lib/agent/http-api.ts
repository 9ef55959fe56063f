// The agent's two ports, and which paths each answers. The HTTP port (9080) serves what has to be plain
// HTTP: the kubelet's probes, which come from the node, and the mysql container's preStop hook, answered
// only from inside the pod. The TLS port (9443, tls-server.ts) serves what the controller asks of the
// member (the stops of its mysqld, the revision of the credentials it uses), with the member's own
// certificate: an answer that decides a discard of transactions or the end of a rotation is never
// given in the clear, where anyone on the pod network could read it or answer in the member's place.
// Each port refuses the other's paths (404, naming the port that serves them). Answers what the agent
// (agent.ts) says; decides nothing itself.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AGENT_HTTP_PATHS, AGENT_PORT, AGENT_TLS_PORT } from '../../constructs/mysql-member.js';
import type { Health } from './health.js';
import { messageOf } from './health.js';

/** What the ports answer with. */
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

/** Which of the agent's ports a request came to. */
export type AgentPortKind = 'http' | 'tls';

/** The paths each port answers: the kubelet's and the pod's over plain HTTP, the controller's over TLS only. */
export const PATHS_BY_PORT: Readonly<Record<AgentPortKind, readonly string[]>> = {
  http: [AGENT_HTTP_PATHS.live, AGENT_HTTP_PATHS.ready, AGENT_HTTP_PATHS.preStop],
  tls: [AGENT_HTTP_PATHS.stops, AGENT_HTTP_PATHS.credentials],
};

const PORT_WORDS: Readonly<Record<AgentPortKind, string>> = {
  http: `the HTTP port (${AGENT_PORT})`,
  tls: `the TLS port (${AGENT_TLS_PORT})`,
};

/**
 * A connection from inside the member's pod: its loopback (the pod's containers share one network
 * namespace, and nothing outside it can open a connection from 127.0.0.0/8 or ::1 to it).
 */
export function fromInsideThePod(remoteAddress: string | undefined): boolean {
  if (remoteAddress === undefined) return false;
  const v4 = remoteAddress.startsWith('::ffff:') ? remoteAddress.slice('::ffff:'.length) : remoteAddress;
  return remoteAddress === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** Answers one request to the agent's port `port` (its PATHS_BY_PORT) with what `agent` says. */
export async function serveAgentRequest(
  agent: AgentEndpoints,
  port: AgentPortKind,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = req.url ?? '';
  const served = PATHS_BY_PORT[port];
  if (!served.includes(path) || req.method !== 'GET') {
    const other: AgentPortKind = port === 'http' ? 'tls' : 'http';
    const elsewhere = PATHS_BY_PORT[other].includes(path) ? `${path} is served on ${PORT_WORDS[other]} only; ` : '';
    res
      .writeHead(404, { 'content-type': 'text/plain' })
      .end(`not found: ${elsewhere}${PORT_WORDS[port]} serves GET ${served.join(', ')}\n`);
    return;
  }
  if (path === AGENT_HTTP_PATHS.preStop) {
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
  if (path === AGENT_HTTP_PATHS.stops) {
    // The current run judged first: a start not looked at yet is judged now.
    const unsafe = await agent.unsafeStops();
    res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(unsafe)}\n`);
    return;
  }
  if (path === AGENT_HTTP_PATHS.credentials) {
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
  const h = await agent.health(path === AGENT_HTTP_PATHS.live ? 'live' : 'ready');
  res.writeHead(h.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(`${h.message}\n`);
}
