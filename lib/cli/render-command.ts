import { InvalidSpecError, formatProblem, render } from '../../constructs/index.js';
import type { KubernetesObject, Recon8sResource, RenderInstall } from '../../constructs/index.js';
import { readManifests, toYaml } from '../manifest-io.js';
import { OPERATOR_POD_USAGE } from './operator-pods.js';
import { UsageError } from './usage-error.js';

export const RENDER_USAGE = `Usage: recon8s render -f FILE [-o yaml|json] [--operator-namespace NS] [--operator-pod-labels K=V,...]

Prints the Kubernetes objects that App and MySQLCluster resources in FILE (YAML or JSON, several
documents allowed; "-" reads standard input) render to. Offline: no cluster is contacted.

Options:
  -f, --filename FILE   the resources to render (required)
  -o, --output FORMAT   yaml (default: multi-document YAML) or json (a List)
${OPERATOR_POD_USAGE}`;

export interface RenderOptions {
  readonly filename: string;
  readonly output: 'yaml' | 'json';
  /** What the install is (the operator's pods): the controller's flags of the same names. */
  readonly install: RenderInstall;
}

/** Renders every resource in the file; reports the problems of every invalid one before failing. */
export async function renderCommand(
  opts: RenderOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const resources = await readManifests(opts.filename);
  if (resources.length === 0) throw new UsageError(`${opts.filename} holds no resources`);
  const rendered: KubernetesObject[] = [];
  let failed = false;
  for (const resource of resources) {
    try {
      // render() validates whatever it is given.
      rendered.push(...render(resource as Recon8sResource, opts.install));
    } catch (e) {
      if (!(e instanceof InvalidSpecError)) throw e;
      failed = true;
      err.write(`error: ${e.subject} is invalid:\n${e.problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}\n`);
    }
  }
  if (failed) return 1;
  out.write(
    opts.output === 'json'
      ? `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rendered }, null, 2)}\n`
      : toYaml(rendered),
  );
  return 0;
}
