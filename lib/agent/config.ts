// The agent's settings: the pod's environment, as the StatefulSet (constructs/mysql/statefulset.ts)
// gives it (no password: those are files, read when used: credential-files.ts). Paths default to where the pod mounts things; the environment overrides them only where a
// test runs the agent outside a pod (test/integration/support/mysql-sandbox.ts).
import { AGENT_PORT, DATA_DIR_NAME, MYSQL_PATHS } from '../../constructs/mysql-member.js';
import { podAddresses } from './peers.js';

export interface AgentConfig {
  readonly podName: string;
  /** Every address of this pod (none of them is a peer). */
  readonly podAddresses: readonly string[];
  /** The headless Service that names every member; without it there is no self-fencing (a single member). */
  readonly headlessService?: string;
  readonly primaryHost: string;
  /**
   * The name a member's certificate must carry before the agent sends a password to it (its peers, the
   * primary, its own mysqld over TCP): the primary Service's (PRIMARY_HOST), which the one certificate of
   * all the cluster's members carries (memberDnsNames) and another workload's certificate from a shared
   * issuer does not. Peers are reached by address, which no certificate names. TLS_SERVER_NAME overrides
   * it only where a test dials the primary by address.
   */
  readonly memberTlsName: string;
  /** The credentials Secret, mounted as files: read each time a password is used (credential-files.ts). */
  readonly credentialsDir: string;
  /** The metrics sidecar's account is made sure of too (spec.monitoring). */
  readonly exporterAccount: boolean;
  readonly selfFenceAfterMs: number;
  readonly socket: string;
  readonly caFile: string;
  readonly dataVolume: string;
  readonly dataDirName: string;
  readonly podAnnotations: string;
  readonly terminationLog: string;
  /** Where this member's mysqld listens for TCP, as seen from the agent (the accounts' login check). */
  readonly localAddress: string;
  readonly listen: { readonly host?: string; readonly port: number };
  /**
   * The TLS port the controller asks on (AGENT_TLS_PORT), with the member's certificate and key (the
   * files the kubelet keeps current: read again when they change); absent when AGENT_TLS_PORT is unset.
   */
  readonly tlsListen?: { readonly port: number; readonly certFile: string; readonly keyFile: string };
}

export class AgentConfigError extends Error {}

/** Reads and checks the environment; the error names every variable that is missing or wrong. */
export function agentConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const problems: string[] = [];
  const required = (name: string): string => {
    const v = env[name];
    if (!v) problems.push(`${name} is not set`);
    return v ?? '';
  };
  const seconds = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1)
      problems.push(`${name} is "${raw}", expected a whole number of seconds of 1 or more`);
    return n;
  };
  const port = Number(env.AGENT_PORT ?? AGENT_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    problems.push(`AGENT_PORT is "${env.AGENT_PORT ?? ''}", expected a TCP port (0-65535)`);
  const primaryHost = required('PRIMARY_HOST');
  const tlsPort =
    env.AGENT_TLS_PORT === undefined || env.AGENT_TLS_PORT === '' ? undefined : Number(env.AGENT_TLS_PORT);
  if (tlsPort !== undefined && (!Number.isInteger(tlsPort) || tlsPort < 0 || tlsPort > 65535))
    problems.push(`AGENT_TLS_PORT is "${env.AGENT_TLS_PORT ?? ''}", expected a TCP port (0-65535)`);
  const config: AgentConfig = {
    podName: env.POD_NAME || env.HOSTNAME || '',
    podAddresses: podAddresses(env.POD_IP, env.POD_IPS),
    ...(env.HEADLESS_SERVICE ? { headlessService: env.HEADLESS_SERVICE } : {}),
    primaryHost,
    memberTlsName: env.TLS_SERVER_NAME || primaryHost,
    credentialsDir: env.CREDENTIALS_DIR || MYSQL_PATHS.credentials,
    exporterAccount: env.EXPORTER_ACCOUNT === 'true',
    selfFenceAfterMs: seconds('SELF_FENCE_AFTER_SECONDS', 7) * 1000,
    socket: env.MYSQL_SOCKET || MYSQL_PATHS.socket,
    caFile: env.TLS_CA_FILE || MYSQL_PATHS.tlsCa,
    dataVolume: env.DATA_VOLUME || MYSQL_PATHS.dataVolume,
    dataDirName: DATA_DIR_NAME,
    podAnnotations: env.POD_ANNOTATIONS || `${MYSQL_PATHS.podInfo}/annotations`,
    terminationLog: env.TERMINATION_LOG || '/dev/termination-log',
    localAddress: env.MYSQL_LOCAL_ADDRESS || '127.0.0.1',
    listen: { ...(env.AGENT_ADDRESS ? { host: env.AGENT_ADDRESS } : {}), port },
    ...(tlsPort !== undefined
      ? {
          tlsListen: {
            port: tlsPort,
            certFile: env.TLS_CERT_FILE || MYSQL_PATHS.tlsCert,
            keyFile: env.TLS_KEY_FILE || MYSQL_PATHS.tlsKey,
          },
        }
      : {}),
  };
  if (problems.length > 0) throw new AgentConfigError(`recon8s agent: ${problems.join('; ')}`);
  return config;
}
