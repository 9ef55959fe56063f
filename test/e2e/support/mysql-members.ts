// Talking to the members of a MySQLCluster on the real node: SQL run inside their pods (kubelet exec),
// logged in with the credentials the containers already have in their environment, handed to the
// client through a pipe (common.sh's client_cnf). Only SQL is on a command line, never a password.
import { Writable } from 'node:stream';
import type { KubeConfig, V1Status } from '@kubernetes/client-node';
import { Exec } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { eventually } from '../../integration/eventually.js';

export interface ExecResult {
  readonly ok: boolean;
  readonly stdout: string;
  readonly stderr: string;
}

function collector(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  return {
    stream: new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(Buffer.from(chunk));
        done();
      },
    }),
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

/** Runs a command in a container and waits for it to end. */
export async function execIn(
  kc: KubeConfig,
  namespace: string,
  pod: string,
  container: string,
  command: string[],
): Promise<ExecResult> {
  const out = collector();
  const err = collector();
  const status = await new Promise<V1Status>((resolve, reject) => {
    new Exec(kc).exec(namespace, pod, container, command, out.stream, err.stream, null, false, resolve).catch(reject);
  });
  return {
    ok: status.status === 'Success',
    stdout: out.text(),
    stderr: err.text() || (status.status === 'Success' ? '' : (status.message ?? '')),
  };
}

/** The members' own client settings: root, its password from the mounted credentials Secret (common.sh's root_password). */
const ROOT = 'mysql --defaults-extra-file=<(root_password pw && client_cnf root "$pw") --batch --skip-column-names';
const COMMON = '. /opt/recon8s/common.sh';

/** Runs SQL on a member's own mysqld (its socket); rows as tab-separated lines. */
export function localSql(kc: KubeConfig, namespace: string, pod: string, sql: string): Promise<ExecResult> {
  return execIn(kc, namespace, pod, 'mysql', [
    'bash',
    '-c',
    `${COMMON} && ${ROOT} --socket="$RECON8S_SOCKET" -e "$1"`,
    'sql',
    sql,
  ]);
}

/** Runs SQL on whatever `host` (a Service name) reaches, from inside a member's pod. */
export function remoteSql(
  kc: KubeConfig,
  namespace: string,
  fromPod: string,
  host: string,
  sql: string,
): Promise<ExecResult> {
  return execIn(kc, namespace, fromPod, 'mysql', [
    'bash',
    '-c',
    `${COMMON} && ${ROOT} --host="$2" --port=3306 --get-server-public-key -e "$1"`,
    'sql',
    sql,
    host,
  ]);
}

/** Like localSql, but fails with MySQL's error when the SQL fails. */
export async function mustSql(kc: KubeConfig, namespace: string, pod: string, sql: string): Promise<string> {
  const r = await localSql(kc, namespace, pod, sql);
  if (!r.ok) throw new Error(`SQL on ${pod} failed: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/** Whether a TCP port of `ip` accepts connections, tried from inside a member's pod (bash's /dev/tcp). */
export async function portOpen(
  kc: KubeConfig,
  namespace: string,
  fromPod: string,
  ip: string,
  port: number,
): Promise<boolean> {
  const r = await execIn(kc, namespace, fromPod, 'mysql', [
    'bash',
    '-c',
    'timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2"',
    'probe',
    ip,
    String(port),
  ]);
  return r.ok;
}

/** A MySQLCluster of the locally built image, as every e2e test on the real node starts one (extra spec fields win). */
export function mysqlClusterResource(
  image: string,
  name: string,
  replicas: number,
  extra: Record<string, unknown> = {},
): object {
  return {
    apiVersion: 'recon8s.dev/v1alpha1',
    kind: 'MySQLCluster',
    metadata: { name },
    spec: {
      version: '9.7',
      image,
      imagePullPolicy: 'Never',
      replicas,
      storage: { size: '1Gi' },
      resources: { requests: { cpu: '100m', memory: '384Mi' }, limits: { memory: '1Gi' } },
      ...extra,
    },
  };
}

/** Waits until a member holds exactly these rows (ids, comma-separated) of the test table e2e.t. */
export async function rowsOn(kc: KubeConfig, namespace: string, member: string, expected: string): Promise<void> {
  await eventually(
    async () =>
      assert.equal(await mustSql(kc, namespace, member, 'SELECT GROUP_CONCAT(id ORDER BY id) FROM e2e.t'), expected),
    { timeoutMs: 60_000, intervalMs: 500, maxIntervalMs: 2000, description: `rows ${expected} on ${member}` },
  );
}

/** "12.3 s": from one monotonic time to another (now by default). */
export const secondsSince = (from: number, to: number = performance.now()): string =>
  `${((to - from) / 1000).toFixed(1)} s`;

/** What the end-to-end files read of a member in a MySQLCluster's status. */
export interface MemberStatus {
  name: string;
  role: string;
  reachable: boolean;
  replicating?: boolean;
  errantTransactions?: string;
}

/** What the end-to-end files read of a MySQLCluster. */
export interface ClusterObject {
  status?: {
    currentPrimary?: string;
    readyReplicas?: number;
    members?: MemberStatus[];
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}
