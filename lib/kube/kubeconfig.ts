import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** How the client proves who it is, as a kubeconfig `user` says (file paths already absolute). */
export interface UserConfig {
  readonly name: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly clientCertificate?: string;
  readonly clientCertificateData?: string;
  readonly clientKey?: string;
  readonly clientKeyData?: string;
  readonly username?: string;
  readonly password?: string;
  readonly exec?: ExecConfig;
}

/** A client-go credential plugin (`users[].user.exec`). */
export interface ExecConfig {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: readonly { readonly name: string; readonly value: string }[];
  readonly apiVersion: string;
  readonly installHint?: string;
}

export interface ClusterConfig {
  readonly name: string;
  /** Without a trailing slash. */
  readonly server: string;
  readonly certificateAuthority?: string;
  readonly certificateAuthorityData?: string;
  readonly insecureSkipTlsVerify: boolean;
  readonly tlsServerName?: string;
}

/** The context the client talks through: one cluster, one user. */
export interface ResolvedKubeConfig {
  readonly context: string;
  readonly cluster: ClusterConfig;
  readonly user: UserConfig;
  /** The context's namespace, if it names one. */
  readonly namespace?: string;
}

/**
 * The shape of a client-node `KubeConfig` the client accepts (tests and embedders hold one): only
 * its accessors, so that nothing here loads client-node.
 */
export interface KubeConfigLike {
  getClusters(): readonly {
    readonly name: string;
    readonly server: string;
    readonly caData?: string;
    readonly caFile?: string;
    readonly skipTLSVerify?: boolean;
    readonly tlsServerName?: string;
    readonly proxyUrl?: string;
  }[];
  getUsers(): readonly {
    readonly name: string;
    readonly certData?: string;
    readonly certFile?: string;
    readonly keyData?: string;
    readonly keyFile?: string;
    readonly token?: string;
    readonly username?: string;
    readonly password?: string;
    readonly exec?: unknown;
    readonly authProvider?: unknown;
    readonly impersonateUser?: string;
  }[];
  getContexts(): readonly {
    readonly name: string;
    readonly cluster: string;
    readonly user: string;
    readonly namespace?: string;
  }[];
  getCurrentContext(): string;
}

/** Where the configuration comes from. */
export type KubeConfigSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'in-cluster' }
  | { readonly kind: 'object'; readonly config: KubeConfigLike }
  /** `$KUBECONFIG` (a list of files), else ~/.kube/config, else in-cluster: kubectl's order. */
  | { readonly kind: 'default' };

/** What loading reads from the machine; tests pass their own. */
export interface ConfigEnvironment {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly readFile: (path: string) => string;
  readonly exists: (path: string) => boolean;
  readonly home: string;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export function machineEnvironment(): ConfigEnvironment {
  return {
    env: process.env,
    readFile: (p) => readFileSync(p, 'utf8'),
    exists: (p) => existsSync(p),
    home: homedir(),
  };
}

/** The named entries of one or more kubeconfig files, merged the way kubectl merges `$KUBECONFIG`. */
interface Entries {
  readonly clusters: Map<string, ClusterConfig>;
  readonly users: Map<string, UserConfig>;
  readonly contexts: Map<string, { cluster: string; user: string; namespace?: string }>;
  currentContext: string;
  readonly origin: string;
}

/**
 * Loads a kubeconfig and picks its context (the current one, or `context`). Throws an error that names
 * the file and the field for anything it cannot use, including what it does not support: `auth-provider`
 * (use an exec plugin such as kubelogin or gke-gcloud-auth-plugin), `proxy-url` and impersonation.
 */
export function loadKubeConfig(
  source: KubeConfigSource,
  context?: string,
  machine: ConfigEnvironment = machineEnvironment(),
): ResolvedKubeConfig {
  switch (source.kind) {
    case 'in-cluster':
      return inCluster(machine);
    case 'file':
      return select(fromFiles([source.path], machine), context);
    case 'object':
      return select(fromObject(source.config), context);
    case 'default': {
      const list = (machine.env.KUBECONFIG ?? '').split(':').filter((p) => p !== '');
      if (list.length > 0) return select(fromFiles(list, machine), context);
      const home = join(machine.home, '.kube', 'config');
      if (machine.exists(home)) return select(fromFiles([home], machine), context);
      if (machine.env.KUBERNETES_SERVICE_HOST) return inCluster(machine);
      throw new Error(
        `kube: no configuration: $KUBECONFIG is unset, ${home} does not exist and this is not a pod (KUBERNETES_SERVICE_HOST unset)`,
      );
    }
  }
}

function inCluster(machine: ConfigEnvironment): ResolvedKubeConfig {
  const host = machine.env.KUBERNETES_SERVICE_HOST;
  const port = machine.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error('kube: in-cluster configuration needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT');
  const namespaceFile = join(SERVICE_ACCOUNT_DIR, 'namespace');
  let namespace: string | undefined;
  if (machine.exists(namespaceFile)) namespace = machine.readFile(namespaceFile).trim() || undefined;
  return {
    context: 'in-cluster',
    cluster: {
      name: 'in-cluster',
      server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
      certificateAuthority: join(SERVICE_ACCOUNT_DIR, 'ca.crt'),
      insecureSkipTlsVerify: false,
    },
    // Bound service account tokens rotate: the file is read again while the client runs (see auth.ts).
    user: { name: 'in-cluster', tokenFile: join(SERVICE_ACCOUNT_DIR, 'token') },
    ...(namespace !== undefined ? { namespace } : {}),
  };
}

function fromFiles(paths: readonly string[], machine: ConfigEnvironment): Entries {
  const merged: Entries = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: '',
    origin: paths.join(':'),
  };
  let found = 0;
  for (const path of paths) {
    // kubectl skips files of $KUBECONFIG that do not exist; a single named file must exist.
    if (paths.length > 1 && !machine.exists(path)) continue;
    let text: string;
    try {
      text = machine.readFile(path);
    } catch (e) {
      throw new Error(`kube: cannot read kubeconfig ${path}: ${e instanceof Error ? e.message : String(e)}`, {
        cause: e,
      });
    }
    found++;
    mergeFile(merged, parseFile(text, path));
  }
  if (found === 0) throw new Error(`kube: none of the kubeconfig files exist: ${paths.join(', ')}`);
  return merged;
}

type Yaml = Record<string, unknown>;

const isObject = (v: unknown): v is Yaml => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseFile(text: string, path: string): Entries {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new Error(`kube: kubeconfig ${path} is not valid YAML: ${e instanceof Error ? e.message : String(e)}`, {
      cause: e,
    });
  }
  if (doc === null || doc === undefined) doc = {};
  if (!isObject(doc)) throw new Error(`kube: kubeconfig ${path}: expected a mapping at the top, got ${typeof doc}`);
  const base = dirname(resolve(path));
  const file = (v: unknown): string | undefined =>
    typeof v === 'string' && v !== '' ? (isAbsolute(v) ? v : join(base, v)) : undefined;
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const named = (key: string): { name: string; body: Yaml }[] => {
    const list = doc[key] ?? [];
    if (!Array.isArray(list)) throw new Error(`kube: kubeconfig ${path}: ${key} must be a list`);
    return list.map((entry, i) => {
      const field = key.slice(0, -1);
      if (!isObject(entry) || typeof entry.name !== 'string' || !isObject(entry[field]))
        throw new Error(`kube: kubeconfig ${path}: ${key}[${i}] needs a name and a ${field} mapping`);
      return { name: entry.name, body: entry[field] };
    });
  };
  const entries: Entries = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: str(doc['current-context']) ?? '',
    origin: path,
  };
  for (const { name, body } of named('clusters')) {
    if (str(body['proxy-url']) !== undefined)
      throw new Error(`kube: kubeconfig ${path}: clusters[${name}].proxy-url is not supported by recon8s`);
    const server = str(body.server);
    if (server === undefined) throw new Error(`kube: kubeconfig ${path}: clusters[${name}].server is missing`);
    entries.clusters.set(name, {
      name,
      server: server.replace(/\/+$/, ''),
      ...optional('certificateAuthority', file(body['certificate-authority'])),
      ...optional('certificateAuthorityData', str(body['certificate-authority-data'])),
      insecureSkipTlsVerify: body['insecure-skip-tls-verify'] === true,
      ...optional('tlsServerName', str(body['tls-server-name'])),
    });
  }
  for (const { name, body } of named('users')) {
    const where = `kubeconfig ${path}: users[${name}]`;
    for (const unsupported of ['auth-provider', 'as', 'as-groups', 'as-uid', 'as-user-extra'])
      if (body[unsupported] !== undefined && body[unsupported] !== null)
        throw new Error(
          `kube: ${where}.${unsupported} is not supported by recon8s${unsupported === 'auth-provider' ? '; use an exec credential plugin (for example kubelogin or gke-gcloud-auth-plugin)' : ''}`,
        );
    entries.users.set(name, {
      name,
      ...optional('token', str(body.token)),
      ...optional('tokenFile', file(body.tokenFile)),
      ...optional('clientCertificate', file(body['client-certificate'])),
      ...optional('clientCertificateData', str(body['client-certificate-data'])),
      ...optional('clientKey', file(body['client-key'])),
      ...optional('clientKeyData', str(body['client-key-data'])),
      ...optional('username', str(body.username)),
      ...optional('password', str(body.password)),
      ...optional('exec', body.exec === undefined || body.exec === null ? undefined : execConfig(body.exec, where)),
    });
  }
  for (const { name, body } of named('contexts')) {
    entries.contexts.set(name, {
      cluster: str(body.cluster) ?? '',
      user: str(body.user) ?? '',
      ...optional('namespace', str(body.namespace)),
    });
  }
  return entries;
}

function execConfig(v: unknown, where: string): ExecConfig {
  if (!isObject(v) || typeof v.command !== 'string' || v.command === '')
    throw new Error(`kube: ${where}.exec.command is missing`);
  const args = v.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
    throw new Error(`kube: ${where}.exec.args must be a list of strings`);
  const env = v.env ?? [];
  if (
    !Array.isArray(env) ||
    !env.every((e) => isObject(e) && typeof e.name === 'string' && typeof e.value === 'string')
  )
    throw new Error(`kube: ${where}.exec.env must be a list of {name, value}`);
  const apiVersion = typeof v.apiVersion === 'string' ? v.apiVersion : '';
  if (apiVersion !== 'client.authentication.k8s.io/v1' && apiVersion !== 'client.authentication.k8s.io/v1beta1')
    throw new Error(
      `kube: ${where}.exec.apiVersion is "${apiVersion}"; expected client.authentication.k8s.io/v1 or v1beta1`,
    );
  return {
    command: v.command,
    args: args as string[],
    env: env as { name: string; value: string }[],
    apiVersion,
    ...optional('installHint', typeof v.installHint === 'string' ? v.installHint : undefined),
  };
}

function mergeFile(into: Entries, file: Entries): void {
  // The first file that names an entry (or sets current-context) wins, as in kubectl.
  for (const [k, v] of file.clusters) if (!into.clusters.has(k)) into.clusters.set(k, v);
  for (const [k, v] of file.users) if (!into.users.has(k)) into.users.set(k, v);
  for (const [k, v] of file.contexts) if (!into.contexts.has(k)) into.contexts.set(k, v);
  if (into.currentContext === '') into.currentContext = file.currentContext;
}

function fromObject(kc: KubeConfigLike): Entries {
  const entries: Entries = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: kc.getCurrentContext(),
    origin: 'the given KubeConfig',
  };
  for (const c of kc.getClusters()) {
    if (c.proxyUrl) throw new Error(`kube: cluster ${c.name}: proxyUrl is not supported by recon8s`);
    entries.clusters.set(c.name, {
      name: c.name,
      server: c.server.replace(/\/+$/, ''),
      ...optional('certificateAuthority', c.caFile),
      ...optional('certificateAuthorityData', c.caData),
      insecureSkipTlsVerify: c.skipTLSVerify === true,
      ...optional('tlsServerName', c.tlsServerName),
    });
  }
  for (const u of kc.getUsers()) {
    if (u.authProvider !== undefined || u.impersonateUser !== undefined)
      throw new Error(`kube: user ${u.name}: auth providers and impersonation are not supported by recon8s`);
    entries.users.set(u.name, {
      name: u.name,
      ...optional('token', u.token),
      ...optional('clientCertificate', u.certFile),
      ...optional('clientCertificateData', u.certData),
      ...optional('clientKey', u.keyFile),
      ...optional('clientKeyData', u.keyData),
      ...optional('username', u.username),
      ...optional('password', u.password),
      ...optional('exec', u.exec === undefined ? undefined : execConfig(u.exec, `user ${u.name}`)),
    });
  }
  for (const c of kc.getContexts())
    entries.contexts.set(c.name, { cluster: c.cluster, user: c.user, ...optional('namespace', c.namespace) });
  return entries;
}

function select(entries: Entries, wanted?: string): ResolvedKubeConfig {
  const name = wanted ?? entries.currentContext;
  if (name === '') throw new Error(`kube: ${entries.origin} sets no current-context; name one with --context`);
  const context = entries.contexts.get(name);
  if (context === undefined)
    throw new Error(
      `kube: ${entries.origin} has no context "${name}" (it has: ${[...entries.contexts.keys()].join(', ') || 'none'})`,
    );
  const cluster = entries.clusters.get(context.cluster);
  if (cluster === undefined)
    throw new Error(`kube: context "${name}" names cluster "${context.cluster}", which ${entries.origin} lacks`);
  // A context without a user (or naming a missing one) talks anonymously, as kubectl does.
  const user = entries.users.get(context.user) ?? { name: context.user || 'anonymous' };
  return {
    context: name,
    cluster,
    user,
    ...optional('namespace', context.namespace),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
