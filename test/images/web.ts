/*
 * The web image of the App tests: one static Go program (web/main.go) built with the machine's Go,
 * as uid 65532, answering "recon8s-web version=<v> host=<pod>". One archive carries two tags that
 * differ only in the version they report (WEB_VERSION), so a test can roll an App from one to the
 * other and see, request by request, which pods answer.
 */
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cachedBuild, contentKey } from './cache.js';
import type { ImageConfig } from './oci.js';
import { writeArchive, writeLayer } from './oci.js';
import type { BuildLog, BuiltImage } from './recipe.js';
import { IMAGES_DIR, SHARED_RECIPE_FILES, recipeFiles, seconds } from './recipe.js';
import { runCommand } from './run.js';

/** The two tags of the web image, and the version each reports. */
export const WEB_REFS = { v1: 'recon8s.test/web:1', v2: 'recon8s.test/web:2' } as const;
/**
 * The name the README's example App runs the v1 image as (apps/examples.ts): the project's node has
 * it under that name too, so the example runs there as written (no registry is reachable).
 */
export const EXAMPLE_WEB_REF = 'ghcr.io/recon8s/example-web:1';
export const WEB_VERSIONS = { [WEB_REFS.v1]: '1', [WEB_REFS.v2]: '2' } as const;
export const WEB_PORT = 8080;
/** Numeric (runAsNonRoot is checked against it), and nobody's on the node. */
export const WEB_UID = 65532;

/** The answer of the server for `GET /`, as a pattern: version and host name. */
export function webBody(version: string, host: string): string {
  return `recon8s-web version=${version} host=${host}\n`;
}

function webConfig(version: string): ImageConfig {
  return {
    user: `${WEB_UID}:${WEB_UID}`,
    entrypoint: ['/web'],
    env: ['PATH=/', `PORT=${WEB_PORT}`, `WEB_VERSION=${version}`],
    workingDir: '/',
    exposedPorts: [`${WEB_PORT}/tcp`],
  };
}

/** Builds the Go program in test/images/<name>/ as one static, read-only executable /<name> in `root`. */
export async function buildStaticGoProgram(name: string, root: string, log: BuildLog): Promise<void> {
  await runCommand('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', join(root, name), '.'], {
    cwd: join(IMAGES_DIR, name),
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
    onOutput: log.detail,
  });
  await chmod(join(root, name), 0o555);
}

export async function buildWebImage(log: BuildLog): Promise<BuiltImage> {
  const go = await runCommand('go', ['version']).catch((e: unknown) => {
    throw new Error(
      `the web test image is built with Go, and \`go version\` failed: ${String(e)}. Install Go >= 1.26 (it also builds the control plane).`,
    );
  });
  const key = contentKey({
    ...(await recipeFiles(['web.ts', 'web/main.go', 'web/go.mod', ...SHARED_RECIPE_FILES])),
    go,
  });
  const { dir, builtInMs } = await cachedBuild({
    name: 'web',
    key,
    log: log.info,
    build: async (d) => {
      const root = join(d, 'rootfs');
      await mkdir(join(root, 'etc'), { recursive: true });
      await buildStaticGoProgram('web', root, log);
      await writeFile(
        join(root, 'etc', 'passwd'),
        `root:x:0:0:root:/:/sbin/nologin\nweb:x:${WEB_UID}:${WEB_UID}:web:/:/sbin/nologin\n`,
      );
      await writeFile(join(root, 'etc', 'group'), `root:x:0:\nweb:x:${WEB_UID}:\n`);
      const layer = join(d, 'layer.tar');
      await writeLayer(root, layer, { keepOwners: false });
      await rm(root, { recursive: true });
      await writeArchive({
        layer,
        out: join(d, 'image.tar'),
        images: Object.entries(WEB_VERSIONS).map(([ref, version]) => ({
          refs: ref === WEB_REFS.v1 ? [ref, EXAMPLE_WEB_REF] : [ref],
          config: webConfig(version),
        })),
      });
    },
  });
  if (builtInMs !== undefined)
    log.info(`web: images ${Object.values(WEB_REFS).join(', ')} built in ${seconds(builtInMs)}`);
  return {
    name: 'web',
    ref: WEB_REFS.v1,
    refs: [...Object.values(WEB_REFS), EXAMPLE_WEB_REF],
    archive: join(dir, 'image.tar'),
  };
}
