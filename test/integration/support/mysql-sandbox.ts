/*
 * MySQLCluster members run for real without Kubernetes: the scripts the construct ships, MySQL 9.7 of
 * the test image (its unpacked root, test/images mysqlRootfs()), each member in its own mount and PID
 * namespace (an overlay of that root, so the shared root is never written) as uid 999, all of them in
 * one private network namespace (only lo: nothing of the host's network is used or changed). A
 * member's "containers" restart when they exit, as the kubelet restarts them. The kernel removes
 * everything when the namespaces' last process dies, and they die with this process (pdeathsig), so a
 * crashed or killed test run leaves no mount and no process behind. Needs root.
 *
 * This proves what MySQL decides (replication, clone, probes, listeners) on a real server; what
 * kubelet/containerd decide is the real node's business (test/e2e).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderMyCnf } from '../../../constructs/mysql/my-cnf.js';
import { scriptFiles } from '../../../constructs/mysql/scripts.js';
import { AGENT_HTTP_PATHS, AGENT_PORT, AGENT_TLS_PORT } from '../../../constructs/mysql/layout.js';
import type { AgentPortKind } from '../../../lib/agent/http-api.js';
import { PATHS_BY_PORT } from '../../../lib/agent/http-api.js';
import { httpGetInNetns } from '../../support/http-in-netns.js';
import { REPO_ROOT } from '../../support/run.js';
import { mysqlRootfs } from '../../images/index.js';
import { issueCa, issueServerCertificate } from '../../../lib/mysql/certificate-issuer.js';
import type { CertificateAndKey } from '../../../lib/mysql/certificates.js';
import { memberDnsNames } from '../../../lib/mysql/certificates.js';
import { sandboxMemberName } from './sandbox-member-name.js';

/** The agent's port that serves `path` (http-api.ts): the controller's paths over TLS only, the rest plain. */
const portServing = (path: string): AgentPortKind => (PATHS_BY_PORT.tls.includes(path) ? 'tls' : 'http');

/** What the sandbox's members are called (a cluster "shop" in namespace "sandbox"). */
export const SANDBOX_NAMES = {
  namespace: 'sandbox',
  members: ['shop-0.shop-headless', 'shop-1.shop-headless', 'shop-2.shop-headless'],
  services: ['shop-primary', 'shop-replicas'],
} as const;

export const ROOT_PASSWORD = `r00t'"\\#$ x`;
export const REPLICATION_PASSWORD = `repl'"\\#;--`;
export const ADMIN_PASSWORD = `adm'"\\n$(x)`;
export const CLONE_PASSWORD = `cl0ne'"\\#$(x)`;
export const BACKUP_PASSWORD = `b4ckup'"\\;--`;
const PRIMARY_ADDRESS = '127.0.0.1';
/** The primary Service's name, as in a cluster: a name the certificate carries (hosts() resolves it to member 0). */
const PRIMARY_SERVICE = SANDBOX_NAMES.services[0];

/**
 * A member's address in the sandbox's network. PRIMARY_HOST (the primary Service, in a cluster) is
 * member 0's: the tests keep member 0 the primary.
 */
export const address = (ordinal: number): string => (ordinal === 0 ? PRIMARY_ADDRESS : `127.0.0.${10 + ordinal}`);

/**
 * A member's /etc/hosts: the headless Service names only the member itself; the member's own stable
 * name (as a pod's /etc/hosts has it), member 0's, which replicas use as SOURCE_HOST and verify its
 * certificate against, and the primary Service (member 0), which the scripts verify by name
 * (ssl-mode=VERIFY_IDENTITY) as in a cluster. The sandbox does not model
 * cluster DNS, and a primary here must stay writable while a test stops its replicas: self-fencing
 * (which looks up the other members there) is proven on the real node (test/e2e/mysql-ha.test.ts).
 */
const hosts = (ordinal: number): string =>
  [
    '127.0.0.1 localhost',
    `${address(ordinal)} shop-headless${ordinal === 0 ? '' : ` ${sandboxMemberName(address(ordinal))}`}`,
    `${address(0)} ${SANDBOX_NAMES.members[0]} ${PRIMARY_SERVICE}`,
  ].join('\n');

// One member ("pod"): its root, then bootstrap (init-config first), then mysqld and the agent, each
// started again when it exits. Runs as PID 1 of the member's PID namespace. The agent (Node, which the
// MySQL image does not have) runs outside the member's root, as uid 999, with the paths of the member's
// socket, volume, certificate and annotations; the volume is also mounted in the member's root at that
// same path, so that a clone directory the agent names is the one mysqld writes. No HEADLESS_SERVICE:
// the sandbox models no cluster DNS, and a primary here must stay writable while a test stops its
// replicas (self-fencing is proven on the real node, test/e2e/mysql-ha.test.ts). The agent, outside the
// member's root, has the host's name lookups, which know no shop-primary: it is given the primary's
// address, and the primary Service's name to verify certificates by (TLS_SERVER_NAME), as in a pod.
const POD_SH = String.raw`set -u
dir=$1 root=$2 address=$3 hosts=$4 node=$5 repo=$6 primary_address=$7 tls_name=$8
m=$dir/merged
mkdir -p "$dir/upper" "$dir/work" "$m"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$dir/upper,workdir=$dir/work" "$m"
# What the member's name lookups answer (see hosts()).
printf '%s\n' "$hosts" >"$m/etc/hosts"
mount -t proc proc "$m/proc"
mount --rbind /dev "$m/dev"
mkdir -p "$m/var/lib/mysql" "$m/run/mysqld" "$m/etc/mysql/recon8s" "$m/etc/mysql/recon8s.d" "$m/opt/recon8s"
mount --bind "$dir/volume" "$m/var/lib/mysql"
mkdir -p "$m$dir/volume" && mount --bind "$dir/volume" "$m$dir/volume"
# The pod's annotations, as the downward API volume shows them (written by annotate()).
mkdir -p "$m/etc/recon8s/pod"
mount --bind "$dir/pod-info" "$m/etc/recon8s/pod"
# The credentials Secret's volume, as the mysql container mounts it (local_sql reads root's password there).
mkdir -p "$m/etc/recon8s/credentials"
mount --bind "$dir/credentials" "$m/etc/recon8s/credentials"
cp "$dir/files/scripts/"* "$m/opt/recon8s/" && cp "$dir/files/my.cnf" "$m/etc/mysql/recon8s/"
# The cluster's certificate, as the tls Secret's volume shows it (read-only to the mysql group), in a
# directory of the member's that the test may update (replaceTls), as the kubelet updates the volume.
[[ -e $dir/tls/ca.crt ]] || cp "$dir/files/tls/"* "$dir/tls/"
chown root:999 "$dir/tls/"* && chmod 0440 "$dir/tls/"*
mkdir -p "$m/etc/mysql/tls" && mount --bind "$dir/tls" "$m/etc/mysql/tls"
chown 999:999 "$m/run/mysqld" "$m/etc/mysql/recon8s.d" "$m/tmp"
# The environment (the member's, passwords included) is inherited: never on a command line.
run() { chroot --userspec=999:999 "$m" bash "/opt/recon8s/$1"; }
printf '[mysqld]\nbind_address=%s\n' "$address" >"$m/etc/mysql/recon8s.d/zz-sandbox.cnf"
run bootstrap.sh >>"$dir/bootstrap.log" 2>&1 || exit 1
container() {
  local name=$1 script=$2
  export TERMINATION_LOG=/tmp/termination-log.$name
  while [[ ! -e $dir/stopping ]]; do
    rm -f "$m/tmp/termination-log.$name"
    run "$script" >>"$dir/$name.log" 2>&1
    echo "recon8s-sandbox: the $name container exited with $?: $(cat "$m/tmp/termination-log.$name" 2>/dev/null)" >>"$dir/$name.log"
    sleep 1
  done
}
agent() {
  while [[ ! -e $dir/stopping ]]; do
    rm -f "$m/tmp/termination-log.agent"
    (cd "$repo" && HEADLESS_SERVICE= MYSQL_SOCKET=$m/run/mysqld/mysqld.sock TLS_CA_FILE=$dir/tls/ca.crt CREDENTIALS_DIR=$dir/credentials \
      DATA_VOLUME=$dir/volume POD_ANNOTATIONS=$dir/pod-info/annotations TERMINATION_LOG=$m/tmp/termination-log.agent \
      AGENT_ADDRESS=$address MYSQL_LOCAL_ADDRESS=$address PRIMARY_HOST=$primary_address TLS_SERVER_NAME=$tls_name \
      AGENT_TLS_PORT=9443 TLS_CERT_FILE=$dir/tls/tls.crt TLS_KEY_FILE=$dir/tls/tls.key \
      exec setpriv --reuid=999 --regid=999 --clear-groups "$node" --import tsx lib/cli/main.ts agent) >>"$dir/agent.log" 2>&1
    echo "recon8s-sandbox: the agent container exited with $?: $(cat "$m/tmp/termination-log.agent" 2>/dev/null)" >>"$dir/agent.log"
    sleep 1
  done
}
container mysql start-mysqld.sh &
agent &
wait
`;

export interface SqlResult {
  readonly ok: boolean;
  readonly stdout: string;
  readonly stderr: string;
}

export interface SandboxMember {
  readonly ordinal: number;
  /** The member's data volume, as the host sees it. */
  readonly volume: string;
  /** mysqld's socket, as this process can reach it (through the member's mount namespace). */
  socket(): string;
  /** Starts the "pod": init containers, then the containers. */
  start(): void;
  /** Stops mysqld cleanly, then everything of the pod. The volume stays. */
  stop(): Promise<void>;
  /** Asks the member's agent as the kubelet's probe would: ok on HTTP 200, the body as stdout. */
  probe(kind: 'live' | 'ready'): SqlResult;
  /**
   * GETs `path` of the member's agent, as the kubelet's preStop hook (plain HTTP) or the controller (TLS,
   * the CA and the member's name verified) does: on the port that serves it unless `over` says which; ok
   * on HTTP 2xx, the body as stdout.
   */
  agentGet(path: string, over?: AgentPortKind): SqlResult;
  /** Runs a command in the member, as uid 999. */
  exec(argv: readonly string[], stdin?: string): SqlResult;
  /** SQL as root over the member's socket, rows tab-separated. */
  sql(text: string): SqlResult;
  /**
   * SQL as the controller sends it: as the administrative account (recon8s-admin, its password from
   * the Secret), over TCP with TLS to the member's address; rows tab-separated.
   */
  adminSql(text: string): SqlResult;
  /** Replaces the pod's annotations (what its downward API volume shows). */
  annotate(annotations: Readonly<Record<string, string>>): void;
  /**
   * Replaces the credentials Secret as this member's volume shows it (the agent reads it; the kubelet
   * updates each pod's copy in its own time), and as its containers' environment has it from then on
   * (the passwords `sql` and `adminSql` log in with, and the bootstrap's at the member's next start).
   */
  replaceCredentials(data: Readonly<Record<string, string>>): void;
  /** The credentials Secret as this member's volume shows it now. */
  credentials(): Readonly<Record<string, string>>;
  /** Where the member's copy of the credentials Secret is (the kubelet's volume). */
  readonly credentialsDir: string;
  /**
   * Kills the member's agent (SIGKILL, by its process id), as a crash of it does: the pod starts it again
   * a second later. (Not SIGTERM: the kubelet sends that only when the pod goes away, and the agent then
   * waits for mysqld's preStop hook.) The number of processes signalled.
   */
  restartAgent(): number;
  /** Replaces the member's certificate files, as the kubelet updates a Secret's volume. */
  replaceTls(tls: { readonly certPem: string; readonly keyPem: string; readonly caPem: string }): void;
  /** What a container or init container wrote. */
  log(name: 'mysql' | 'agent' | 'bootstrap'): string;
  /**
   * For a failure message: the member's processes (state, kernel wait channel, command line), its
   * replication channel as mysqld reports it, and the last lines of its containers' logs.
   */
  diagnose(): string;
}

export interface MySQLSandbox {
  member(ordinal: number): SandboxMember;
  /** Runs a host program in the members' network (so it reaches them over TCP at address(i)); 60 s at most by default. */
  inNetwork(argv: readonly string[], stdin?: string, timeoutMs?: number): SqlResult;
  stop(): Promise<void>;
  /** The sandbox cluster's CA (the members' certificate is signed by it). */
  readonly ca: CertificateAndKey;
  /** The members' network namespace (nsenter --net=...), to reach them from a process of the test's. */
  readonly netns: string;
}

/** The credentials Secret every member starts with. */
export const INITIAL_CREDENTIALS: Readonly<Record<string, string>> = {
  'root-password': ROOT_PASSWORD,
  'replication-password': REPLICATION_PASSWORD,
  'admin-password': ADMIN_PASSWORD,
  'clone-password': CLONE_PASSWORD,
  'backup-password': BACKUP_PASSWORD,
};

/** A member's environment, as its pod template gives it (passwords from the Secret). */
const ENV = (ordinal: number, secret: Readonly<Record<string, string>>): Record<string, string> => ({
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  POD_NAME: `shop-${ordinal}`,
  POD_IP: address(ordinal),
  HEADLESS_SERVICE: 'shop-headless',
  PRIMARY_HOST: PRIMARY_SERVICE,
  MYSQL_ROOT_PASSWORD: secret['root-password'] ?? '',
  MYSQL_REPLICATION_PASSWORD: secret['replication-password'] ?? '',
  MYSQL_ADMIN_PASSWORD: secret['admin-password'] ?? '',
  MYSQL_CLONE_PASSWORD: secret['clone-password'] ?? '',
  MYSQL_BACKUP_PASSWORD: secret['backup-password'] ?? '',
});

/**
 * Writes a Secret's volume as the kubelet does: the data in a new version directory, `..data` swapped to
 * it at once (a rename), a link per key through it (and none for a key it no longer has); the previous
 * version removed after.
 */
export function writeSecretVolume(dir: string, data: Readonly<Record<string, string>>): void {
  const previous = existsSync(join(dir, '..data')) ? readlinkSync(join(dir, '..data')) : undefined;
  const version = `..${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  mkdirSync(join(dir, version));
  for (const [key, value] of Object.entries(data)) writeFileSync(join(dir, version, key), value, { mode: 0o440 });
  spawnSync('chown', ['-R', '0:999', join(dir, version)]);
  symlinkSync(version, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const key of Object.keys(data)) if (!existsSync(join(dir, key))) symlinkSync(`..data/${key}`, join(dir, key));
  // A key the Secret no longer has loses its link, as the kubelet removes it.
  for (const entry of readdirSync(dir))
    if (!entry.startsWith('..') && !(entry in data)) rmSync(join(dir, entry), { force: true });
  if (previous) rmSync(join(dir, previous), { recursive: true, force: true });
}

/** The PID (as the host sees it) of the first child of `pid`: what unshare --fork started. */
function childOf(pid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    return children.length > 0 ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

/** The processes (as the host numbers them) in the PID namespace of `pid`. */
function pidsInPidNamespaceOf(pid: number): string[] {
  const namespace = (p: string): string | undefined => {
    try {
      return readlinkSync(`/proc/${p}/ns/pid`);
    } catch {
      return undefined;
    }
  };
  const wanted = namespace(String(pid));
  return readdirSync('/proc').filter((e) => /^\d+$/.test(e) && namespace(e) === wanted);
}

/** Every process in the PID namespace of `pid`: pid, state, kernel wait channel, age and command line. */
function processesInPidNamespaceOf(pid: number): string {
  const ticks = 100; // USER_HZ
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  const lines: string[] = [];
  for (const p of pidsInPidNamespaceOf(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const age = uptime - Number(fields[19]) / ticks;
      const wchan = readFileSync(`/proc/${p}/wchan`, 'utf8') || '-';
      const args = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').trim();
      lines.push(`  ${p} ${fields[0]} ${wchan} ${age.toFixed(0)}s ${args}`);
    } catch {
      // It ended meanwhile.
    }
  }
  return lines.join('\n') || '  (none)';
}

async function waitFor<T>(what: string, get: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startMySQLSandbox(): Promise<MySQLSandbox> {
  if (process.getuid?.() !== 0)
    throw new Error('the MySQL sandbox needs root (namespaces, overlay mounts, chroot): run the tests as root');
  const root = await mysqlRootfs();
  const dir = mkdtempSync(join(tmpdir(), 'recon8s-mysql-sandbox-'));
  // The agent runs as uid 999 outside the members' roots: it must reach their directories.
  chmodSync(dir, 0o755);
  const files = join(dir, 'files');
  mkdirSync(join(files, 'scripts'), { recursive: true });
  for (const [name, text] of Object.entries(scriptFiles())) writeFileSync(join(files, 'scripts', name), text);
  writeFileSync(join(files, 'my.cnf'), renderMyCnf('shop'));
  // A CA of the sandbox's own and the members' certificate, as the controller issues them.
  const ca = issueCa('recon8s sandbox/shop CA', new Date());
  const tls = issueServerCertificate(ca, 'shop.sandbox', memberDnsNames(SANDBOX_NAMES), new Date());
  mkdirSync(join(files, 'tls'));
  writeFileSync(join(files, 'tls', 'ca.crt'), tls.caPem);
  writeFileSync(join(files, 'tls', 'tls.crt'), tls.certPem);
  writeFileSync(join(files, 'tls', 'tls.key'), tls.keyPem);

  // The network every member joins: a namespace with lo only, held open by a sleeping process. lo also
  // gets a documentation address (192.0.2.1): getent ahosts (getaddrinfo with AI_ADDRCONFIG) answers
  // IPv4 names only when an IPv4 address other than 127.0.0.1 is configured, and the sidecar looks
  // the members up that way (hosts()).
  const net = spawn(
    'setpriv',
    [
      '--pdeathsig',
      'KILL',
      'unshare',
      '--net',
      '--kill-child',
      'bash',
      '-c',
      'ip link set lo up && ip addr add 192.0.2.1/32 dev lo && exec sleep infinity',
    ],
    { stdio: 'ignore' },
  );
  const netPid = await waitFor('the network namespace', () => {
    const child = net.pid === undefined ? undefined : childOf(net.pid);
    return child !== undefined && readFileSync(`/proc/${child}/cmdline`, 'utf8').startsWith('sleep')
      ? child
      : undefined;
  });

  const pods = new Map<number, ChildProcess>();
  const member = (ordinal: number): SandboxMember => {
    const home = join(dir, `member-${ordinal}`);
    const volume = join(home, 'volume');
    if (!existsSync(volume)) {
      mkdirSync(volume, { recursive: true });
      spawnSync('chown', ['999:999', volume]);
      spawnSync('ln', ['-s', files, join(home, 'files')]);
      mkdirSync(join(home, 'pod-info'));
      mkdirSync(join(home, 'tls'));
      mkdirSync(join(home, 'credentials'));
      writeSecretVolume(join(home, 'credentials'), INITIAL_CREDENTIALS);
    }
    const secret = (): Record<string, string> => {
      const dir = join(home, 'credentials');
      return Object.fromEntries(
        readdirSync(dir)
          .filter((k) => !k.startsWith('..'))
          .map((k) => [k, readFileSync(join(dir, k), 'utf8')]),
      );
    };
    const podPid = (): number => {
      const pod = pods.get(ordinal);
      const pid = pod?.pid === undefined ? undefined : childOf(pod.pid);
      if (pid === undefined) throw new Error(`member ${ordinal} is not running`);
      return pid;
    };
    const logOf = (name: string): string => {
      const file = join(home, `${name}.log`);
      return existsSync(file) ? readFileSync(file, 'utf8') : '';
    };
    const exec = (argv: readonly string[], stdin?: string): SqlResult => {
      const r = spawnSync(
        'nsenter',
        [
          '--target',
          String(podPid()),
          '--mount',
          '--pid',
          '--net',
          'chroot',
          '--userspec=999:999',
          join(home, 'merged'),
          ...argv,
        ],
        {
          input: stdin,
          encoding: 'utf8',
          // Generous: a busy two-core machine runs the scripts' many short mysql clients slowly.
          timeout: 300_000,
          env: ENV(ordinal, secret()),
        },
      );
      return { ok: r.status === 0, stdout: r.stdout, stderr: r.stderr };
    };
    const sql = (text: string): SqlResult => exec(['bash', '-c', '. /opt/recon8s/common.sh && local_sql'], text);
    const agentGet = (path: string, over: AgentPortKind = portServing(path)): SqlResult => {
      if (over === 'http') {
        const r = httpGetInNetns(`/proc/${netPid}/ns/net`, `http://${address(ordinal)}:${AGENT_PORT}${path}`, 90);
        return { ok: r.status === 0, stdout: r.stdout, stderr: r.stderr };
      }
      // As the controller asks (agent-http.ts): over TLS, the certificate verified by the cluster's CA
      // and the member's name (curl checks the name it dials, which --resolve points at the address).
      const name = sandboxMemberName(address(ordinal));
      const r = spawnSync(
        'nsenter',
        [
          `--net=/proc/${netPid}/ns/net`,
          '--',
          'curl',
          '--silent',
          '--show-error',
          '--max-time',
          '90',
          '--cacert',
          join(home, 'tls', 'ca.crt'),
          '--resolve',
          `${name}:${AGENT_TLS_PORT}:${address(ordinal)}`,
          '--write-out',
          '\n%{http_code}',
          `https://${name}:${AGENT_TLS_PORT}${path}`,
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      const status = /\n(\d{3})$/.exec(r.stdout)?.[1] ?? '000';
      const body = r.stdout.replace(/\n\d{3}$/, '');
      return {
        ok: r.status === 0 && status.startsWith('2'),
        stdout: body,
        stderr: `${r.stderr}${status === '000' ? '' : ` (HTTP ${status})`}`,
      };
    };
    const adminSql = (text: string): SqlResult =>
      exec(
        [
          'bash',
          '-c',
          '. /opt/recon8s/common.sh && mysql --defaults-extra-file=<(verified_cnf recon8s-admin "$MYSQL_ADMIN_PASSWORD") --host="$1" --port=3306 --connect-timeout=5 --batch --skip-column-names',
          'admin-sql',
          sandboxMemberName(address(ordinal)),
        ],
        text,
      );
    return {
      ordinal,
      volume,
      // The member's root is mounted in its own mount namespace only: reached through its PID 1's.
      socket: () => `/proc/${podPid()}/root${join(home, 'merged', 'run', 'mysqld', 'mysqld.sock')}`,
      start: () => {
        if (pods.has(ordinal)) throw new Error(`member ${ordinal} is already running`);
        rmSync(join(home, 'stopping'), { force: true });
        rmSync(join(home, 'merged'), { recursive: true, force: true });
        rmSync(join(home, 'upper'), { recursive: true, force: true });
        rmSync(join(home, 'work'), { recursive: true, force: true });
        pods.set(
          ordinal,
          spawn(
            'setpriv',
            [
              '--pdeathsig',
              'KILL',
              'nsenter',
              `--net=/proc/${netPid}/ns/net`,
              'unshare',
              '--mount',
              '--pid',
              '--kill-child',
              '--propagation',
              'private',
              'bash',
              '-c',
              POD_SH,
              'pod',
              home,
              root,
              address(ordinal),
              hosts(ordinal),
              process.execPath,
              REPO_ROOT,
              PRIMARY_ADDRESS,
              PRIMARY_SERVICE,
            ],
            { stdio: 'ignore', env: ENV(ordinal, secret()) },
          ),
        );
      },
      stop: async () => {
        const pod = pods.get(ordinal);
        if (!pod) return;
        // As the kubelet stops a pod: the containers are not started again, mysqld shuts down cleanly.
        writeFileSync(join(home, 'stopping'), '');
        const exits = () =>
          (readFileSync(join(home, 'mysql.log'), 'utf8').match(/the mysql container exited/g) ?? []).length;
        const before = exits();
        sql('SHUTDOWN');
        await waitFor('mysqld to shut down', () => (exits() > before ? true : undefined), 60_000);
        const exited = new Promise((resolve) => pod.once('exit', resolve));
        // unshare ignores SIGTERM; killed, it kills the member's PID 1, and the kernel every process of the member.
        pod.kill('SIGKILL');
        await exited;
        pods.delete(ordinal);
      },
      probe: (kind) => agentGet(kind === 'live' ? AGENT_HTTP_PATHS.live : AGENT_HTTP_PATHS.ready),
      agentGet: (path, over) => agentGet(path, over),
      exec,
      sql,
      adminSql,
      annotate: (annotations) => {
        // As the kubelet updates a downward API volume: the new file replaces the old one at once.
        const text = Object.entries(annotations)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}\n`)
          .join('');
        writeFileSync(join(home, 'pod-info', 'annotations.tmp'), text);
        renameSync(join(home, 'pod-info', 'annotations.tmp'), join(home, 'pod-info', 'annotations'));
      },
      credentialsDir: join(home, 'credentials'),
      replaceCredentials: (data) => writeSecretVolume(join(home, 'credentials'), data),
      restartAgent: () => {
        const agents = pidsInPidNamespaceOf(podPid()).filter((p) => {
          try {
            const args = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
            return args.includes('lib/cli/main.ts') && args.includes('agent');
          } catch {
            return false;
          }
        });
        for (const p of agents) process.kill(Number(p), 'SIGKILL');
        return agents.length;
      },
      credentials: secret,
      replaceTls: (next) => {
        for (const [file, text] of [
          ['ca.crt', next.caPem],
          ['tls.crt', next.certPem],
          ['tls.key', next.keyPem],
        ] as const) {
          const staged = join(home, 'tls', `.${file}.next`);
          writeFileSync(staged, text, { mode: 0o440 });
          spawnSync('chown', ['0:999', staged]);
          renameSync(staged, join(home, 'tls', file));
        }
      },
      log: (name) => logOf(name),
      diagnose: () => {
        const pid = pods.get(ordinal)?.pid;
        const member = pid === undefined ? undefined : childOf(pid);
        const channel =
          member === undefined
            ? undefined
            : sql(
                'SELECT c.SERVICE_STATE, c.LAST_ERROR_NUMBER, c.LAST_ERROR_MESSAGE, a.SERVICE_STATE FROM performance_schema.replication_connection_status c JOIN performance_schema.replication_applier_status a USING (CHANNEL_NAME)',
              );
        const tail = (name: 'mysql' | 'agent'): string => logOf(name).split('\n').slice(-15).join('\n');
        return [
          `member ${ordinal}'s processes:`,
          member === undefined ? '(not running)' : processesInPidNamespaceOf(member),
          `its replication channel (receiver state, error, applier state): ${channel === undefined ? '(not running)' : channel.ok ? channel.stdout.trim() || '(none)' : channel.stderr.trim()}`,
          `the last lines of its agent's log:\n${tail('agent')}`,
          `the last lines of its mysql log:\n${tail('mysql')}`,
        ].join('\n');
      },
    };
  };

  return {
    member,
    ca,
    netns: `/proc/${netPid}/ns/net`,
    inNetwork: (argv, stdin, timeoutMs = 60_000) => {
      const r = spawnSync('nsenter', [`--net=/proc/${netPid}/ns/net`, '--', ...argv], {
        input: stdin,
        encoding: 'utf8',
        timeout: timeoutMs,
      });
      return { ok: r.status === 0, stdout: r.stdout, stderr: r.stderr };
    },
    stop: async () => {
      for (const pod of pods.values()) pod.kill('SIGKILL');
      net.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
      // The namespaces are gone with their processes; so are the mounts in them.
      for (const m of readdirSync(dir).filter((d) => d.startsWith('member-')))
        rmSync(join(dir, m), { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
