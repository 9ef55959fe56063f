import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { execForm, instructions, parseDockerfile } from '../test/support/package-dockerfile.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** How the controller process is started: the node arguments before `controller ...`. */
export interface ControllerEntry {
  readonly nodeArgs: readonly string[];
  readonly description: string;
  /** Removes what was built (nothing for the tsx entry). */
  dispose(): Promise<void>;
}

/** `node --import tsx lib/cli/main.ts`: the sources, transpiled in the controller process by tsx. */
export function tsxEntry(): ControllerEntry {
  return {
    nodeArgs: ['--import', 'tsx', 'lib/cli/main.ts'],
    description: 'node --import tsx lib/cli/main.ts',
    dispose: async () => undefined,
  };
}

/**
 * The controller as it ships (package.json "bin": build/lib/cli/main.js): `tsc -p tsconfig.build.json`
 * into a temporary directory (never the repository's build/), which gets a `{"type":"module"}`
 * package.json and a node_modules link so the output resolves its dependencies. No loader in the
 * controller process: its RSS and CPU are the product's, not tsx's.
 */
export async function compiledEntry(): Promise<ControllerEntry & { readonly buildSeconds: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'recon8s-bench-build-'));
  const t0 = performance.now();
  try {
    await promisify(execFile)(
      process.execPath,
      [
        join(REPO_ROOT, 'node_modules/typescript/bin/tsc'),
        '-p',
        'tsconfig.build.json',
        '--outDir',
        dir,
        '--declaration',
        'false',
        '--declarationMap',
        'false',
        '--sourceMap',
        'false',
      ],
      { cwd: REPO_ROOT, maxBuffer: 16 * 2 ** 20 },
    );
  } catch (e) {
    // tsc emits despite type errors (a colleague's half-done edit); only a missing entry point is fatal.
    const stdout = (e as { stdout?: string }).stdout ?? '';
    process.stderr.write(
      `[bench] tsc reported problems (output is still used):\n${stdout.split('\n').slice(0, 10).join('\n')}\n`,
    );
  }
  await writeFile(join(dir, 'package.json'), '{"type":"module"}\n');
  await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const entry = join(dir, 'lib/cli/main.js');
  const flags = await imageNodeFlags();
  return {
    nodeArgs: [...flags, entry],
    description: `node ${flags.map((f) => `${f} `).join('')}<tsc build of lib/ in a temp dir>/lib/cli/main.js (the image's Node flags)`,
    buildSeconds: Math.round((performance.now() - t0) / 100) / 10,
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The Node flags the image starts the controller with: what its Dockerfile's ENTRYPOINT has between `node` and the script. */
async function imageNodeFlags(): Promise<string[]> {
  const stages = parseDockerfile(await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
  const runtime = stages.at(-1);
  const entrypoint = runtime ? execForm(instructions(runtime, 'ENTRYPOINT').at(-1)?.args ?? '') : undefined;
  if (!entrypoint || entrypoint[0] !== 'node')
    throw new Error('Dockerfile: expected ENTRYPOINT ["node", ..., <script>]');
  return entrypoint.slice(1, -1);
}
