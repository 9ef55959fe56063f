import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1ResourceAttributes } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubernetesObject } from '../../../constructs/index.js';
import { runSynth } from '../../support/run.js';

/** What `cdk8s synth` writes as the operator install (dist/install.yaml): the file's name and its objects, in order. */
export interface OperatorInstall {
  readonly files: readonly string[];
  readonly objects: readonly KubernetesObject[];
  /** The file as written, its opening comment included. */
  readonly text: string;
}

/**
 * Runs `cdk8s synth` of this repository into a temporary directory, with `env` (e.g.
 * RECON8S_CREDENTIALS_NAMESPACES), and hands the install file (dist/install.yaml) to `use` before deleting it.
 */
export async function withSynthesizedOperator<T>(
  env: NodeJS.ProcessEnv,
  use: (installFile: string, install: OperatorInstall) => T | Promise<T>,
): Promise<T> {
  const outdir = mkdtempSync(join(tmpdir(), 'recon8s-operator-synth-'));
  try {
    const r = runSynth(outdir, env);
    assert.equal(r.status, 0, r.stderr);
    const file = join(outdir, 'install.yaml');
    const files = readdirSync(outdir).filter((f) => f === 'install.yaml');
    const text = readFileSync(file, 'utf8');
    const objects = parseAllDocuments(text).map((d) => d.toJS() as KubernetesObject);
    return await use(file, { files, objects, text });
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

export const toYaml = (objects: readonly unknown[]): string => objects.map((o) => stringify(o)).join('---\n');

export const kindName = (o: { kind: string; metadata: { name: string; namespace?: string } }): string =>
  `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

/**
 * The same objects with the operator namespace `from` renamed to `to`: the Namespace itself, every
 * object in it, and every binding subject that points into it.
 */
export function inNamespace(objects: readonly KubernetesObject[], from: string, to: string): KubernetesObject[] {
  return objects.map((o) => {
    const copy = structuredClone(o) as {
      kind: string;
      metadata: { name: string; namespace?: string };
      subjects?: { namespace?: string }[];
    };
    if (copy.kind === 'Namespace' && copy.metadata.name === from) copy.metadata.name = to;
    if (copy.metadata.namespace === from) copy.metadata.namespace = to;
    for (const s of copy.subjects ?? []) if (s.namespace === from) s.namespace = to;
    return copy as unknown as KubernetesObject;
  });
}

/** One question for a SelfSubjectAccessReview, written `verb group/resource[/subresource][:name] in namespace`. */
export interface Access {
  readonly verb: string;
  /** "" for the core group. */
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly name?: string;
  /** Absent: cluster-wide (all namespaces, or a cluster-scoped resource). */
  readonly namespace?: string;
}

export const describeAccess = (a: Access): string =>
  `${a.verb} ${a.group === '' ? 'core' : a.group}/${a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.name ? `:${a.name}` : ''}${a.namespace ? ` in ${a.namespace}` : ' cluster-wide'}`;

/** Whether the identity of `kc` may do each of `questions` (its own SelfSubjectAccessReview, as `kubectl auth can-i`). */
export async function canI(kc: KubeConfig, questions: readonly Access[]): Promise<Map<string, boolean>> {
  const authz = kc.makeApiClient(AuthorizationV1Api);
  const answers = await Promise.all(
    questions.map(async (q) => {
      const resourceAttributes: V1ResourceAttributes = {
        verb: q.verb,
        group: q.group,
        resource: q.resource,
        subresource: q.subresource,
        name: q.name,
        namespace: q.namespace,
      };
      const review = await authz.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes } } });
      return [describeAccess(q), review.status?.allowed === true] as const;
    }),
  );
  return new Map(answers);
}

/** The sum of `rest_client_requests_total` samples of the controller's registry whose code is `code`. */
export function restRequests(metricsText: string, code: string): number {
  return metricsText
    .split('\n')
    .filter((l) => l.startsWith('rest_client_requests_total{') && l.includes(`code="${code}"`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}
