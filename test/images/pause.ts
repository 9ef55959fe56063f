/*
 * The pod sandbox image of the test node (containerd's `sandbox_image`): a static Go program
 * (pause/main.go) that sleeps until it is told to stop. Nothing can be pulled on the node, so it is
 * built here like the web image.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cachedBuild, contentKey } from './cache.js';
import { writeArchive, writeLayer } from './oci.js';
import type { BuildLog, BuiltImage } from './recipe.js';
import { SHARED_RECIPE_FILES, recipeFiles, seconds } from './recipe.js';
import { runCommand } from './run.js';
import { buildStaticGoProgram } from './web.js';

export const PAUSE_REF = 'recon8s.test/pause:1';

export async function buildPauseImage(log: BuildLog): Promise<BuiltImage> {
  const go = await runCommand('go', ['version']);
  const key = contentKey({
    ...(await recipeFiles(['pause.ts', 'web.ts', 'pause/main.go', 'pause/go.mod', ...SHARED_RECIPE_FILES])),
    go,
  });
  const { dir, builtInMs } = await cachedBuild({
    name: 'pause',
    key,
    log: log.info,
    build: async (d) => {
      const root = join(d, 'rootfs');
      await mkdir(root, { recursive: true });
      await buildStaticGoProgram('pause', root, log);
      const layer = join(d, 'layer.tar');
      await writeLayer(root, layer, { keepOwners: false });
      await rm(root, { recursive: true });
      await writeArchive({
        layer,
        out: join(d, 'image.tar'),
        images: [
          {
            refs: [PAUSE_REF],
            config: { user: '65535:65535', entrypoint: ['/pause'], env: ['PATH=/'], workingDir: '/' },
          },
        ],
      });
    },
  });
  if (builtInMs !== undefined) log.info(`pause: image ${PAUSE_REF} built in ${seconds(builtInMs)}`);
  return { name: 'pause', ref: PAUSE_REF, refs: [PAUSE_REF], archive: join(dir, 'image.tar') };
}
