import type { KubernetesObject as LiveObject } from '@kubernetes/client-node';
import { HttpMethod } from '../kube/index.js';
import { InvalidSpecError, formatProblem, render } from '../../constructs/index.js';
import type { KindDefinition, KubernetesObject, Recon8sResource, RenderInstall } from '../../constructs/index.js';
import { ChildApplier } from '../controller/apply-children.js';
import type { ResourceType } from '../controller/kinds.js';
import { CHILD_TYPES, OWNER_KINDS, allChildTypes } from '../controller/kinds.js';
import { prunable } from '../controller/prune.js';
import { colorizeDiff, useColor } from '../diff/color.js';
import type { ColorMode } from '../diff/color.js';
import { diffableYaml } from '../diff/noise.js';
import { unifiedDiff } from '../diff/unified.js';
import type { KubeClient } from '../kube/index.js';
import { apiError, createKubeClient, getObject, isNotFound } from '../kube/index.js';
import { APPLYSET_PART_OF_LABEL, applySetId } from '../reconcile/applyset.js';
import { childKey, stampChildren } from '../reconcile/desired.js';
import { readManifests } from '../manifest-io.js';
import { OPERATOR_POD_OPTIONS, OPERATOR_POD_USAGE } from './operator-pods.js';
import { UsageError } from './usage-error.js';

export const DIFF_USAGE = `Usage: recon8s diff -f FILE [--kubeconfig PATH] [--color auto|always|never] [--force-conflicts]
                   [--operator-namespace NS] [--operator-pod-labels K=V,...]

Shows what would change in the cluster if the App and MySQLCluster resources in FILE were applied and
reconciled: each resource itself, and every child the controller would create, change or prune, as a
unified diff of YAML ("live" is the cluster now, "recon8s" what it would be). The new state comes from
the API server (server-side dry-run apply: defaults, admission and validation included); nothing is
written. Fields the API server maintains (managedFields, resourceVersion, generation, uid,
creationTimestamp), status and recon8s's desired-hash annotation are left out.

Exit status: 0 no differences, 1 differences, 2 an error (invalid resource, unreachable or refusing
API server, missing CRDs, bad options).

Options:
  -f, --filename FILE    the resources (YAML or JSON, several documents allowed; "-" reads standard input)
  --kubeconfig PATH      kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)
  --color WHEN           auto (default: only on a terminal, and NO_COLOR unset), always or never
  --force-conflicts      show the result of taking over fields another field manager owns
                         (as "recon8s apply --force-conflicts" would); without it such a conflict is an error
${OPERATOR_POD_USAGE}`;

export const DIFF_OPTIONS = {
  filename: { type: 'string', short: 'f' },
  kubeconfig: { type: 'string' },
  color: { type: 'string', default: 'auto' },
  'force-conflicts': { type: 'boolean', default: false },
  ...OPERATOR_POD_OPTIONS,
  help: { type: 'boolean', short: 'h' },
} as const;

/** The field manager of the custom resources the CLI writes (the children stay the controller's: `recon8s`). */
export const CLI_FIELD_MANAGER = 'recon8s-cli';

export interface DiffOptions {
  readonly filename: string;
  readonly kubeconfig?: string;
  readonly color: ColorMode;
  readonly forceConflicts: boolean;
  /** What the install is (the operator's pods), as the controller that reconciles renders it. */
  readonly install: RenderInstall;
}

/** A custom resource from a file, checked by render() and placed in its namespace. */
export interface FileResource {
  readonly kind: KindDefinition;
  readonly namespace: string;
  readonly name: string;
  /** What is sent to the API server: apiVersion, kind, name, namespace, labels, annotations and spec only. */
  readonly body: Recon8sResource;
}

/** A failure with a message for the user (exit 2): connection, permission, missing CRDs, refused objects. */
export class CommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandError';
  }
}

/**
 * Reads the App and MySQLCluster resources of a file and validates each with render(); every problem
 * of every invalid resource is written to `err` before this throws. Objects of other API groups are
 * skipped with a note (a file may hold a Namespace or a Secret next to them).
 */
export async function readResources(
  filename: string,
  err: NodeJS.WritableStream,
  command: string,
): Promise<{ readonly kind: KindDefinition; readonly resource: Record<string, unknown> }[]> {
  const objects = await readManifests(filename);
  const resources: { kind: KindDefinition; resource: Record<string, unknown> }[] = [];
  let invalid = 0;
  for (const object of objects) {
    const o = isObject(object) ? object : {};
    const apiVersion = typeof o.apiVersion === 'string' ? o.apiVersion : '';
    if (apiVersion !== '' && !apiVersion.startsWith('recon8s.dev/')) {
      const meta = isObject(o.metadata) ? o.metadata : {};
      err.write(
        `note: skipping ${apiVersion} ${String(o.kind)} ${String(meta.name ?? '')}: recon8s ${command} handles only App and MySQLCluster resources\n`,
      );
      continue;
    }
    try {
      render(object as Recon8sResource);
    } catch (e) {
      if (!(e instanceof InvalidSpecError)) throw e;
      invalid++;
      err.write(`error: ${e.subject} is invalid:\n${e.problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}\n`);
      continue;
    }
    const kind = OWNER_KINDS.find((k) => k.kind === o.kind);
    if (kind) resources.push({ kind, resource: o });
  }
  if (invalid > 0)
    throw new CommandError(
      `${invalid} invalid resource${invalid > 1 ? 's' : ''} in ${filename}; nothing was sent to the cluster`,
    );
  if (resources.length === 0) throw new UsageError(`${filename} holds no App or MySQLCluster resources`);
  return resources;
}

/** Places resources in a namespace (the kubeconfig context's, else "default", when they name none). */
export function placeResources(
  resources: readonly { readonly kind: KindDefinition; readonly resource: Record<string, unknown> }[],
  defaultNamespace: string,
): FileResource[] {
  return resources.map(({ kind, resource }) => {
    const meta = isObject(resource.metadata) ? resource.metadata : {};
    const namespace = typeof meta.namespace === 'string' ? meta.namespace : defaultNamespace;
    const name = String(meta.name);
    const body = {
      apiVersion: `${kind.group}/${kind.version}`,
      kind: kind.kind,
      metadata: {
        name,
        namespace,
        ...(isObject(meta.labels) ? { labels: meta.labels } : {}),
        ...(isObject(meta.annotations) ? { annotations: meta.annotations } : {}),
      },
      ...(resource.spec !== undefined ? { spec: resource.spec } : {}),
    } as unknown as Recon8sResource;
    return { kind, namespace, name, body };
  });
}

/** The client for a CLI command, and the namespace of resources that name none. */
export function connect(kubeconfig: string | undefined): { client: KubeClient; defaultNamespace: string } {
  let client: KubeClient;
  try {
    client = createKubeClient({ kubeconfigPath: kubeconfig, userAgent: 'recon8s-cli' });
  } catch (e) {
    throw new CommandError(
      // The first line only: a parser's excerpt of the file could show a token or a key.
      `no usable kubeconfig${kubeconfig ? ` in ${kubeconfig}` : ''}: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`,
    );
  }
  return { client, defaultNamespace: client.namespace || 'default' };
}

/** Fails with a clear message when the API server does not serve App and MySQLCluster. */
export async function requireCrds(client: KubeClient): Promise<void> {
  const missing = `the recon8s CRDs (apps.recon8s.dev, mysqlclusters.recon8s.dev) are not installed in the cluster at ${client.server}; install them first, e.g. kubectl apply -f dist/crds.k8s.yaml (written by npm run synth)`;
  let served: Set<string>;
  try {
    const list = await client.requestJson<{ resources?: { name: string }[] }>({ path: '/apis/recon8s.dev/v1alpha1' });
    served = new Set((list.resources ?? []).map((r) => r.name));
  } catch (e) {
    if (isNotFound(e)) throw new CommandError(missing);
    throw e;
  }
  if (!OWNER_KINDS.every((k) => served.has(k.plural))) throw new CommandError(missing);
}

export function resourcePath(kind: KindDefinition, namespace: string, name: string): string {
  return `/apis/${kind.group}/${kind.version}/namespaces/${encodeURIComponent(namespace)}/${kind.plural}/${encodeURIComponent(name)}`;
}

function childPath(type: ResourceType, namespace: string, name?: string): string {
  const base = type.apiVersion.includes('/') ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  return `${base}/namespaces/${encodeURIComponent(namespace)}/${type.plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** Server-side apply of a custom resource as `recon8s-cli` (never the controller's field manager). */
export function applyResource(
  client: KubeClient,
  r: FileResource,
  opts: { readonly dryRun: boolean; readonly force: boolean },
): Promise<LiveObject> {
  return client.requestJson<LiveObject>({
    method: HttpMethod.PATCH,
    path: resourcePath(r.kind, r.namespace, r.name),
    query: { fieldManager: CLI_FIELD_MANAGER, force: opts.force, ...(opts.dryRun ? { dryRun: 'All' } : {}) },
    body: JSON.stringify(r.body),
    headers: { 'Content-Type': 'application/apply-patch+yaml' },
  });
}

/** What a failed API call means for a CLI user. */
export function describeApiError(e: unknown, client: KubeClient, what: string): string {
  const info = apiError(e);
  if (info.code === 0) return `cannot reach the API server at ${client.server} (${what}): ${info.message}`;
  if (info.code === 401)
    return `the API server at ${client.server} did not accept the credentials of the kubeconfig (401 Unauthorized) while ${what}`;
  if (info.code === 403) return `forbidden while ${what}: ${info.message}`;
  if (info.code === 409 && /conflict/i.test(info.message)) {
    return `${what}: ${info.message}\n(another field manager owns these fields with other values; rerun with --force-conflicts to take them over)`;
  }
  return `${what}: ${info.message || info.reason || `HTTP ${info.code}`}`;
}

/** One object's entry in the diff: absent on one side when it is created or deleted. */
interface Change {
  readonly id: string;
  readonly live: unknown;
  readonly next: unknown;
  /** The owner does not exist yet: owner reference uids would be made up. */
  readonly newOwner?: boolean;
}

function objectId(o: { apiVersion?: string; kind?: string; metadata?: { namespace?: string; name?: string } }): string {
  return `${o.apiVersion ?? ''}/${o.kind ?? ''}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/** Everything the controller would change for one resource of the file. */
async function changesFor(
  client: KubeClient,
  r: FileResource,
  opts: Pick<DiffOptions, 'forceConflicts' | 'install'>,
  refused: string[],
): Promise<Change[]> {
  const label = `${r.kind.kind} ${r.namespace}/${r.name}`;
  const live = await getObject<LiveObject>(client, resourcePath(r.kind, r.namespace, r.name));
  let next: LiveObject;
  try {
    next = await applyResource(client, r, { dryRun: true, force: opts.forceConflicts });
  } catch (e) {
    const info = apiError(e);
    if (info.code === 400 || info.code === 422 || info.code === 409)
      throw new CommandError(describeApiError(e, client, `${label} was refused`));
    throw e;
  }
  const changes: Change[] = [
    { id: objectId({ ...next, metadata: { namespace: r.namespace, name: r.name } }), live, next },
  ];

  // The children as the controller renders them from the resource the API server would store.
  let rendered: KubernetesObject[];
  try {
    rendered = render(next as unknown as Recon8sResource, opts.install);
  } catch (e) {
    if (!(e instanceof InvalidSpecError)) throw e;
    throw new CommandError(
      `${label} as the API server would store it is invalid: ${e.problems.map(formatProblem).join('; ')}`,
    );
  }
  // A new resource has no uid yet; the dry-run's (or a stand-in) only makes the owner reference valid.
  const uid = live?.metadata?.uid ?? next.metadata?.uid ?? '00000000-0000-0000-0000-000000000000';
  const owner = {
    apiVersion: r.body.apiVersion,
    kind: r.kind.kind,
    group: r.kind.group,
    namespace: r.namespace,
    name: r.name,
    uid,
  };
  const desired = stampChildren(rendered, owner);
  const applier = new ChildApplier(client);
  const types = new Map(allChildTypes().map((t) => [`${t.apiVersion}/${t.kind}`, t]));
  for (const child of desired) {
    const type = types.get(`${child.object.apiVersion}/${child.object.kind}`);
    if (!type)
      throw new Error(
        `render() produced ${child.object.apiVersion} ${child.object.kind}, which recon8s does not manage`,
      );
    const liveChild = await getObject<LiveObject>(client, childPath(type, r.namespace, child.object.metadata.name));
    // Exactly the controller's decision: an unchanged child is not sent, so it cannot differ.
    if (!applier.decide(child, liveChild).send) continue;
    try {
      const result = await client.apply<LiveObject>(child.object as LiveObject, { dryRun: true });
      changes.push({ id: objectId(result), live: liveChild, next: result, newOwner: !live });
    } catch (e) {
      const info = apiError(e);
      if (info.code !== 400 && info.code !== 422) throw e;
      refused.push(
        `${child.object.kind} ${r.namespace}/${child.object.metadata.name} would be refused by the API server: ${info.message}`,
      );
    }
  }

  // What the controller would prune: only a resource that exists can own children.
  if (live) {
    const setId = applySetId(owner);
    const keys = new Set(desired.map((d) => childKey(d.object)));
    for (const type of CHILD_TYPES[r.kind.kind] ?? []) {
      const list = await client.requestJson<{ items?: LiveObject[] }>({
        path: childPath(type, r.namespace),
        query: { labelSelector: `${APPLYSET_PART_OF_LABEL}=${setId}` },
      });
      const items = (list.items ?? []).map((o) => ({ ...o, apiVersion: type.apiVersion, kind: type.kind }));
      for (const orphan of prunable(items, keys, setId, uid))
        changes.push({ id: objectId(orphan), live: orphan, next: undefined });
    }
  }
  return changes;
}

/** The unified diff of one change ('' when nothing differs once the noise is gone). */
function renderChange(c: Change): string {
  return unifiedDiff({
    oldName: c.live === undefined ? '/dev/null' : `live/${c.id}`,
    newName: c.next === undefined ? '/dev/null' : `recon8s/${c.id}`,
    oldText: diffableYaml(c.live),
    newText: diffableYaml(c.next, { ownerUids: c.newOwner === true }),
  });
}

/** `recon8s diff`: 0 when nothing would change, 1 when something would, 2 on errors. */
export async function diffCommand(
  opts: DiffOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const prepared = await readAndConnect(opts, err, 'diff');
  if (typeof prepared === 'number') return prepared;
  const { resources, client, defaultNamespace } = prepared;
  const refused: string[] = [];
  let text = '';
  try {
    await requireCrds(client);
    for (const r of placeResources(resources, defaultNamespace)) {
      for (const change of await changesFor(client, r, opts, refused)) text += renderChange(change);
    }
  } catch (e) {
    err.write(`error: ${e instanceof CommandError ? e.message : describeApiError(e, client, 'computing the diff')}\n`);
    return 2;
  } finally {
    await client.close();
  }
  if (text !== '') out.write(useColor(opts.color, out as { isTTY?: boolean }) ? colorizeDiff(text) : text);
  for (const message of refused) err.write(`error: ${message}\n`);
  if (refused.length > 0) return 2;
  return text === '' ? 0 : 1;
}

/** The valid resources of the file and a client, or exit code 2 after saying what is wrong. */
export async function readAndConnect(
  opts: { readonly filename: string; readonly kubeconfig?: string },
  err: NodeJS.WritableStream,
  command: string,
): Promise<{ resources: Awaited<ReturnType<typeof readResources>>; client: KubeClient; defaultNamespace: string } | 2> {
  let resources: Awaited<ReturnType<typeof readResources>>;
  try {
    resources = await readResources(opts.filename, err, command);
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    err.write(`error: ${e.message}\n`);
    return 2;
  }
  const connected = connectOrReport(opts.kubeconfig, err);
  return connected ? { resources, ...connected } : 2;
}

export function connectOrReport(
  kubeconfig: string | undefined,
  err: NodeJS.WritableStream,
): { client: KubeClient; defaultNamespace: string } | undefined {
  try {
    return connect(kubeconfig);
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    err.write(`error: ${e.message}\n`);
    return undefined;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
