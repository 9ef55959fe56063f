// The entry of `recon8s agent`, loaded by the CLI without the rest of it: the agent runs in every
// database pod, and what it does not load (cdk8s, the client, the controller) costs no memory there.
import { Agent, log } from './agent.js';
import { AgentConfigError, agentConfig } from './config.js';
import { readCredentials } from './credential-files.js';
import { LocalSql } from './local-sql.js';

export const AGENT_USAGE = `Usage: recon8s agent

Runs beside mysqld in every MySQLCluster pod (the StatefulSet starts it; it is not meant to be run by
hand): serves the kubelet's probes on :9080 (/livez, /readyz), makes sure of the cluster's accounts on
the primary, makes a primary cut off from every other member read-only, and re-provisions a replica by
clone when it can never catch up. Its settings come from the pod's environment, the passwords from the
credentials Secret mounted at /etc/recon8s/credentials (read each time one is used). What the
controller asks (GET /credentials-revision: which rotation's passwords it reads; GET /unsafe-stops) is
served on the TLS port (AGENT_TLS_PORT, 9443) only, with the member's certificate.
`;

export async function agentCommand(args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(AGENT_USAGE);
    return 0;
  }
  let config;
  try {
    config = agentConfig(env);
  } catch (e) {
    if (e instanceof AgentConfigError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const sql = await LocalSql.open(config.socket, () => readCredentials(config.credentialsDir).root);
  const agent = new Agent(config, sql);
  const port = await agent.listen();
  log(`serving probes on :${port}; member ${config.podName}`);
  // SIGTERM: the pod is going away, and mysqld's preStop hook may still come (Agent.drain).
  process.once('SIGTERM', () => void agent.drain());
  process.once('SIGINT', () => void agent.stop());
  const code = await agent.run();
  await agent.stop();
  await sql.close();
  return code;
}
